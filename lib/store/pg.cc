#include "store/pg.h"

#include <charconv>
#include <cstdlib>

#include "base/log.h"

namespace jobctl::store::pg {
namespace {

// Every session's settings: text is UTF-8, no statement waits on a lock for long, and
// notices stay out of the coordinator's log.
constexpr const char* kSessionSettings =
    "SET client_encoding = 'UTF8'; SET lock_timeout = '10s'; SET client_min_messages = warning";

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
  if (cls == "23") return Status::Conflict(msg);
  if (cls == "40" || cls == "08" || cls == "57" || code == "55P03" || code == "25006") {
    // Serialization failure, deadlock, connection exception, operator intervention (server
    // shutting down), lock not available, read-only transaction (a standby).
    return Status::Unavailable(msg);
  }
  if (cls == "53") return Status::ResourceExhausted(msg);
  if (code == "XX001" || code == "XX002") return Status::Corrupt(msg);
  return Status::Io(msg);
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
Params& Params::Add(std::string_view v) { return Push(std::string(v), false, 0); }
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
  c->conn_ = PQconnectdb(url.c_str());
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
  if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
  log::Warn("PostgreSQL connection lost; reconnecting");
  prepared_.clear();
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::Unavailable("cannot reconnect to PostgreSQL: " + Trimmed(PQerrorMessage(conn_)));
  }
  if (Status s = Script(kSessionSettings); !s.ok()) return s;
  return on_reconnect ? on_reconnect() : Status::Ok();
}

Result<Rows> Connection::Exec(const Sql& sql, const Params& params) {
  Result<Rows> rows = ExecOnce(sql, params);
  // Outside a transaction a statement on a connection found lost is tried once more on a
  // new one: nothing was done on the old.
  if (!rows.ok() && !in_transaction_ && PQstatus(conn_) == CONNECTION_BAD) {
    rows = ExecOnce(sql, params);
  }
  return rows;
}

Result<Rows> Connection::ExecOnce(const Sql& sql, const Params& params) {
  if (!in_transaction_) {
    if (Status s = EnsureConnected(); !s.ok()) return s;
  }
  auto it = prepared_.find(&sql);
  if (it == prepared_.end()) {
    std::string name = "s" + std::to_string(prepared_.size() + 1);
    Rows prep(PQprepare(conn_, name.c_str(), sql.text.c_str(), 0, nullptr));
    // A failed prepare inside a transaction aborts it, as a failed statement would.
    if (PQresultStatus(prep.result()) != PGRES_COMMAND_OK) {
      return ResultStatus(prep.result(), conn_, sql.text);
    }
    it = prepared_.emplace(&sql, std::move(name)).first;
  }
  Rows rows(PQexecPrepared(conn_, it->second.c_str(), params.size(), params.values(),
                           params.lengths(), params.formats(), 0));
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

Status Connection::Script(std::string_view sql) {
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
  in_transaction_ = false;
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
