#include "store/pg.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <vector>

#include "base/log.h"

namespace jobctl::store::pg {
namespace {

// Every session's settings: text is UTF-8 and bytea is read as hex; no statement waits on
// a lock for long; notices stay out of the coordinator's log; and the server notices within
// about 10 s that this side is gone (keepalives, and unacknowledged data), which ends the
// session and its hold on the database.
constexpr const char* kSessionSettings =
    "SET client_encoding = 'UTF8'; SET bytea_output = 'hex'; SET lock_timeout = '10s'; "
    "SET client_min_messages = warning; SET tcp_keepalives_idle = 5; "
    "SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3; "
    "SET tcp_user_timeout = 10000";

// The client side of the same: connecting gives up after 10 s, and a server gone silent is
// noticed within about 10 s. Settings in the URL win over these.
constexpr const char* kDefaultKeys[] = {"connect_timeout",  "keepalives",
                                        "keepalives_idle",  "keepalives_interval",
                                        "keepalives_count", "tcp_user_timeout"};
constexpr const char* kDefaultValues[] = {"10", "1", "5", "2", "3", "10000"};

// Text as PostgreSQL takes it: valid UTF-8 without NUL. Anything else (bytes a client sent
// in a path, say) becomes U+FFFD rather than failing the whole transaction.
std::string ValidText(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  size_t i = 0;
  while (i < v.size()) {
    auto c = static_cast<unsigned char>(v[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && c != 0 && i + n <= v.size();
    for (size_t k = 1; ok && k < n; ++k) {
      ok = (static_cast<unsigned char>(v[i + k]) & 0xC0) == 0x80;
    }
    if (ok && n > 1) {
      // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
      uint32_t cp = c & (0x7F >> n);
      for (size_t k = 1; k < n; ++k) cp = cp << 6 | (static_cast<unsigned char>(v[i + k]) & 0x3F);
      static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[n] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok) {
      out.append(v.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Status ResultStatus(const PGresult* result, PGconn* conn, std::string_view what) {
  std::string msg = result != nullptr ? PQresultErrorMessage(result) : "";
  if (msg.empty() && conn != nullptr) msg = PQerrorMessage(conn);
  msg = std::string(what) + ": " + Trimmed(msg);
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  if (state == nullptr) {
    // No SQLSTATE: the connection is gone, or the result could not be made.
    if (conn == nullptr || PQstatus(conn) == CONNECTION_BAD) return Status::Unavailable(msg);
    return Status::Io(msg);
  }
  std::string_view code(state);
  std::string_view cls = code.substr(0, 2);
  // A uniqueness or exclusion violation is a conflict the caller expects (an instant fired
  // twice); other integrity violations are errors (and abort the transaction, as all do).
  if (code == "23505" || code == "23P01") return Status::Conflict(msg);
  if (cls == "40" || cls == "08" || cls == "57" || code == "55P03" || code == "25006") {
    // Serialization failure, deadlock, connection exception, operator intervention (server
    // shutting down), lock not available, read-only transaction (a standby).
    return Status::Unavailable(msg);
  }
  if (cls == "53") return Status::ResourceExhausted(msg);
  if (code == "XX001" || code == "XX002") return Status::Corrupt(msg);
  return Status::Io(msg);
}

void ArrayLiteral::Separate() {
  if (!empty_) body_ += ',';
  empty_ = false;
}

ArrayLiteral& ArrayLiteral::Add(int64_t v) {
  Separate();
  body_ += std::to_string(v);
  return *this;
}

ArrayLiteral& ArrayLiteral::Add(std::string_view v) {
  Separate();
  body_ += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') body_ += '\\';
    body_ += c;
  }
  body_ += '"';
  return *this;
}

ArrayLiteral& ArrayLiteral::Add(std::nullopt_t) {
  Separate();
  body_ += "NULL";
  return *this;
}

ArrayLiteral& ArrayLiteral::Add(const std::optional<int64_t>& v) {
  return v ? Add(*v) : Add(std::nullopt);
}

Params& Params::Push(std::string value, bool null, int format) {
  lengths_.push_back(static_cast<int>(value.size()));
  values_.push_back(std::move(value));
  null_.push_back(null);
  formats_.push_back(format);
  return *this;
}

Params& Params::Add(int64_t v) { return Push(std::to_string(v), false, 0); }
Params& Params::Add(bool v) { return Push(v ? "true" : "false", false, 0); }
Params& Params::Add(std::string_view v) { return Push(ValidText(v), false, 0); }
Params& Params::Add(std::nullopt_t) { return Push("", true, 0); }
Params& Params::Add(const std::optional<int64_t>& v) { return v ? Add(*v) : Add(std::nullopt); }
Params& Params::Add(const std::optional<std::string>& v) {
  return v ? Add(std::string_view(*v)) : Add(std::nullopt);
}
Params& Params::AddBytes(std::string_view bytes) { return Push(std::string(bytes), false, 1); }

const char* const* Params::values() const {
  pointers_.clear();
  for (size_t i = 0; i < values_.size(); ++i) {
    pointers_.push_back(null_[i] ? nullptr : values_[i].c_str());
  }
  return pointers_.data();
}

int64_t Rows::Int(int row, int col) const {
  std::string_view v = View(row, col);
  int64_t out = 0;
  std::from_chars(v.data(), v.data() + v.size(), out);
  return out;
}

std::optional<int64_t> Rows::OptInt(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int(row, col);
}

std::string_view Rows::View(int row, int col) const {
  return {PQgetvalue(result_.get(), row, col),
          static_cast<size_t>(PQgetlength(result_.get(), row, col))};
}

std::string Rows::Bytes(int row, int col) const {
  // Text format of a bytea: "\x" then two hex digits a byte.
  std::string_view v = View(row, col);
  if (v.size() < 2 || v[0] != '\\' || v[1] != 'x') return std::string(v);
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  out.reserve((v.size() - 2) / 2);
  for (size_t i = 2; i + 1 < v.size(); i += 2) {
    out.push_back(static_cast<char>(nibble(v[i]) << 4 | nibble(v[i + 1])));
  }
  return out;
}

int64_t Rows::affected() const {
  const char* n = PQcmdTuples(result_.get());
  return n == nullptr || *n == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& url) {
  std::unique_ptr<Connection> c(new Connection());
  c->url_ = url;
  // The URL is expanded last, so that what it says wins over the defaults.
  std::vector<const char*> keys(std::begin(kDefaultKeys), std::end(kDefaultKeys));
  std::vector<const char*> values(std::begin(kDefaultValues), std::end(kDefaultValues));
  keys.push_back("dbname");
  values.push_back(url.c_str());
  keys.push_back(nullptr);
  values.push_back(nullptr);
  c->conn_ = PQconnectdbParams(keys.data(), values.data(), 1);
  if (c->conn_ == nullptr) return Status::ResourceExhausted("PostgreSQL: out of memory");
  if (PQstatus(c->conn_) != CONNECTION_OK) {
    return Status::Unavailable("cannot connect to PostgreSQL: " +
                               Trimmed(PQerrorMessage(c->conn_)));
  }
  if (Status s = c->Script(kSessionSettings); !s.ok()) return s;
  return c;
}

Connection::~Connection() {
  if (conn_ != nullptr) PQfinish(conn_);
}

Status Connection::EnsureConnected() {
  if (PQstatus(conn_) == CONNECTION_OK && !reset_pending_) return Status::Ok();
  if (!reset_pending_) {
    log::Warn("PostgreSQL connection lost; reconnecting");
    // Until on_reconnect succeeded on the new session, nothing runs on it.
    reset_pending_ = true;
    prepared_.clear();
    PQreset(conn_);
  } else if (PQstatus(conn_) != CONNECTION_OK) {
    prepared_.clear();
    PQreset(conn_);
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::Unavailable("cannot reconnect to PostgreSQL: " + Trimmed(PQerrorMessage(conn_)));
  }
  if (Status s = Script(kSessionSettings); !s.ok()) return s;
  reset_pending_ = false;
  if (on_reconnect) {
    in_reconnect_ = true;
    Status s = on_reconnect();
    in_reconnect_ = false;
    if (!s.ok()) {
      reset_pending_ = true;
      return s;
    }
  }
  return Status::Ok();
}

Result<Rows> Connection::Exec(const Sql& sql, const Params& params) {
  Result<Rows> rows = ExecOnce(sql, params);
  // Outside a transaction (reads, and idempotent writes) a statement on a connection found
  // lost is tried once more on a new one.
  if (!rows.ok() && !in_transaction_ && PQstatus(conn_) == CONNECTION_BAD) {
    rows = ExecOnce(sql, params);
  }
  return rows;
}

Result<std::string> Connection::Prepared(const Sql& sql) {
  auto it = prepared_.find(&sql);
  if (it != prepared_.end()) return it->second;
  std::string name = "s" + std::to_string(prepared_.size() + 1);
  Rows prep(PQprepare(conn_, name.c_str(), sql.text.c_str(), 0, nullptr));
  // A failed prepare inside a transaction aborts it, as a failed statement would.
  if (PQresultStatus(prep.result()) != PGRES_COMMAND_OK) {
    return ResultStatus(prep.result(), conn_, sql.text);
  }
  prepared_.emplace(&sql, name);
  return name;
}

Status Connection::BeforeWait() {
  if (!before_wait || !in_transaction_ || in_before_wait_) return Status::Ok();
  in_before_wait_ = true;
  Status s = before_wait();
  in_before_wait_ = false;
  return s;
}

Result<Rows> Connection::ExecOnce(const Sql& sql, const Params& params) {
  if (Status s = BeforeWait(); !s.ok()) return s;
  if (Status s = Drain(); !s.ok()) return s;
  if (!in_transaction_ && !in_reconnect_) {
    if (Status s = EnsureConnected(); !s.ok()) return s;
  }
  Result<std::string> name = Prepared(sql);
  if (!name.ok()) return name.status();
  Rows rows(PQexecPrepared(conn_, name->c_str(), params.size(), params.values(), params.lengths(),
                           params.formats(), 0));
  ExecStatusType st = PQresultStatus(rows.result());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return ResultStatus(rows.result(), conn_, sql.text);
  }
  return rows;
}

Status Connection::ExecExpectingChanges(const Sql& sql, const Params& params, int64_t n) {
  Result<Rows> rows = Exec(sql, params);
  if (!rows.ok()) return rows.status();
  if (rows->affected() != n) {
    return Status::NotFound("expected " + std::to_string(n) + " row(s) to change, " +
                            std::to_string(rows->affected()) + " did");
  }
  return Status::Ok();
}

Status Connection::Send(const Sql& sql, const Params& params, int64_t changes,
                        std::function<Status()> on_mismatch) {
  if (!in_transaction_) {
    return changes >= 0 ? ExecExpectingChanges(sql, params, changes) : Exec(sql, params).status();
  }
  if (prepared_.find(&sql) == prepared_.end()) {
    // Prepared the first time outside pipeline mode, where PQprepare waits for its answer.
    if (Status s = Drain(); !s.ok()) return s;
  }
  Result<std::string> name = Prepared(sql);
  if (!name.ok()) return name.status();
  if (PQpipelineStatus(conn_) == PQ_PIPELINE_OFF && PQenterPipelineMode(conn_) != 1) {
    return ResultStatus(nullptr, conn_, "entering pipeline mode");
  }
  if (PQsendQueryPrepared(conn_, name->c_str(), params.size(), params.values(), params.lengths(),
                          params.formats(), 0) != 1) {
    Status s = ResultStatus(nullptr, conn_, sql.text);
    static_cast<void>(Drain());
    return s;
  }
  sent_.push_back({&sql, changes, std::move(on_mismatch)});
  // Bounded, so that the server's answers never fill the socket while this side still sends.
  if (sent_.size() >= 512) return Drain();
  return Status::Ok();
}

Status Connection::Drain() {
  if (PQpipelineStatus(conn_) == PQ_PIPELINE_OFF) return Status::Ok();
  Status first;
  auto fail = [&first](Status s) {
    if (first.ok()) first = std::move(s);
  };
  if (PQpipelineSync(conn_) != 1) fail(ResultStatus(nullptr, conn_, "pipeline sync"));
  for (const Sent& sent : sent_) {
    if (!first.ok() && PQstatus(conn_) == CONNECTION_BAD) break;
    // Each statement's result, then a null that ends it.
    Rows rows(PQgetResult(conn_));
    if (rows.result() == nullptr) {
      fail(ResultStatus(nullptr, conn_, sent.sql->text));
      continue;
    }
    while (PGresult* more = PQgetResult(conn_)) PQclear(more);
    ExecStatusType st = PQresultStatus(rows.result());
    if (st == PGRES_PIPELINE_ABORTED) {
      fail(Status::Io("PostgreSQL: " + sent.sql->text + ": not run after an earlier failure"));
    } else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      fail(ResultStatus(rows.result(), conn_, sent.sql->text));
    } else if (sent.changes >= 0 && rows.affected() != sent.changes && sent.on_mismatch) {
      fail(sent.on_mismatch());
    } else if (sent.changes >= 0 && rows.affected() != sent.changes) {
      fail(Status::NotFound("expected " + std::to_string(sent.changes) + " row(s) to change, " +
                            std::to_string(rows.affected()) + " did: " + sent.sql->text));
    }
  }
  sent_.clear();
  if (PQstatus(conn_) != CONNECTION_BAD) {
    Rows sync(PQgetResult(conn_));
    if (PQresultStatus(sync.result()) != PGRES_PIPELINE_SYNC) {
      fail(Status::Io("PostgreSQL: the pipeline did not end where it was synced"));
    }
  }
  if (PQexitPipelineMode(conn_) != 1) {
    fail(Status::Io("PostgreSQL: cannot leave pipeline mode: " + Trimmed(PQerrorMessage(conn_))));
  }
  return first;
}

Status Connection::Script(std::string_view sql) {
  if (Status s = BeforeWait(); !s.ok()) return s;
  if (Status s = Drain(); !s.ok()) return s;
  Rows r(PQexec(conn_, std::string(sql).c_str()));
  ExecStatusType st = PQresultStatus(r.result());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return ResultStatus(r.result(), conn_, sql.substr(0, 60));
  }
  return Status::Ok();
}

Status Connection::Begin() {
  if (in_transaction_) return Status::Internal("PostgreSQL: a transaction is already open");
  if (Status s = EnsureConnected(); !s.ok()) return s;
  Status begun = Script("BEGIN");
  if (!begun.ok() && PQstatus(conn_) == CONNECTION_BAD) {
    // The server was lost since the last statement (a restart, a failover): a new
    // connection, and the hold taken again, before the transaction starts.
    if (Status s = EnsureConnected(); !s.ok()) return s;
    begun = Script("BEGIN");
  }
  if (!begun.ok()) return begun;
  in_transaction_ = true;
  return Status::Ok();
}

Status Connection::Commit() {
  if (!in_transaction_) return Status::Internal("PostgreSQL: no transaction to commit");
  Status sent = BeforeWait();
  if (Status drained = Drain(); sent.ok()) sent = drained;
  in_transaction_ = false;
  if (!sent.ok()) {
    if (PQstatus(conn_) == CONNECTION_OK) static_cast<void>(Script("ROLLBACK"));
    return sent;
  }
  if (PQtransactionStatus(conn_) == PQTRANS_INERROR) {
    static_cast<void>(Script("ROLLBACK"));
    return Status::Io("PostgreSQL: a statement of the transaction failed; it was rolled back");
  }
  Rows r(PQexec(conn_, "COMMIT"));
  if (PQresultStatus(r.result()) != PGRES_COMMAND_OK) {
    // With the connection lost, whether the commit happened is unknown: the caller reloads.
    return ResultStatus(r.result(), conn_, "COMMIT");
  }
  if (std::string_view(PQcmdStatus(const_cast<PGresult*>(r.result()))) != "COMMIT") {
    return Status::Io("PostgreSQL: the transaction was rolled back at commit");
  }
  return Status::Ok();
}

void Connection::Rollback() {
  if (!in_transaction_) return;
  static_cast<void>(Drain());
  in_transaction_ = false;
  if (PQstatus(conn_) == CONNECTION_OK) static_cast<void>(Script("ROLLBACK"));
}

Status Connection::Migrate(std::string_view schema, const std::vector<Migration>& migrations) {
  static const Sql kVersion{"SELECT version FROM jobctl_schema WHERE name = $1"};
  static const Sql kSetVersion{
      "INSERT INTO jobctl_schema(name, version) VALUES($1, $2) "
      "ON CONFLICT(name) DO UPDATE SET version = excluded.version"};
  if (Status s = Begin(); !s.ok()) return s;
  auto fail = [this](Status s) {
    Rollback();
    return s.WithContext("migrating the PostgreSQL schema");
  };
  // One lock for every jobctl schema of this database: coordinators that start together
  // wait for each other here, and the second finds the work done.
  if (Status s = Script("SELECT pg_advisory_xact_lock(7462019283); "
                        "CREATE TABLE IF NOT EXISTS jobctl_schema("
                        "name TEXT PRIMARY KEY, version INTEGER NOT NULL)");
      !s.ok()) {
    return fail(s);
  }
  Result<Rows> rows = Exec(kVersion, Params().Add(schema));
  if (!rows.ok()) return fail(rows.status());
  int64_t version = rows->size() > 0 ? rows->Int(0, 0) : 0;
  int newest = migrations.empty() ? 0 : migrations.back().version;
  if (version > newest) {
    return fail(Status::Corrupt("the " + std::string(schema) + " schema is at version " +
                                std::to_string(version) + ", newer than this jobctl (" +
                                std::to_string(newest) + "); upgrade jobctl"));
  }
  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    if (Status s = Script(m.sql); !s.ok()) return fail(s);
    version = m.version;
  }
  if (Result<Rows> r = Exec(kSetVersion, Params().Add(schema).Add(version)); !r.ok()) {
    return fail(r.status());
  }
  return Commit();
}

}  // namespace jobctl::store::pg
