// A thin layer over one libpq connection, for the PostgreSQL backend (pg_store.cc,
// pg_log_store.cc): statements prepared on first use and kept for the connection's life,
// parameters and results as text (bytea parameters binary), errors mapped to the store's
// Status codes by SQLSTATE, and a connection that is reset before the next transaction once
// the server was lost. It brings in libpq-fe.h, so only the PostgreSQL backend's files in
// lib/store include it. Loop thread only.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace jobctl::store::pg {

// Maps a failed result (or a lost connection) to a Status code: unique and exclusion
// violations -> kConflict; serialization failures, deadlocks, lost connections and a server
// shutting down -> kUnavailable; disk full or out of memory -> kResourceExhausted; data
// corruption -> kCorrupt; else kIo. `what` names the statement.
Status ResultStatus(const PGresult* result, PGconn* conn, std::string_view what);

// The text of one SQL statement with $1..$n parameters. Declare it `static const` in the
// method that binds it: its address names its prepared statement (Connection::Exec).
struct Sql {
  std::string text;
};

// A PostgreSQL array literal built element by element ({1,NULL,"a\"b"}), for a statement
// that takes a batch of rows as arrays (unnest). Text elements are quoted and escaped;
// Params::Add replaces what text cannot hold, as for any text.
class ArrayLiteral {
 public:
  ArrayLiteral& Add(int64_t v);
  ArrayLiteral& Add(int v) { return Add(static_cast<int64_t>(v)); }
  ArrayLiteral& Add(std::string_view v);
  ArrayLiteral& Add(std::nullopt_t);
  ArrayLiteral& Add(const std::optional<int64_t>& v);
  std::string text() const { return "{" + body_ + "}"; }

 private:
  void Separate();
  std::string body_;
  bool empty_ = true;
};

class Params {
 public:
  Params& Add(int64_t v);
  Params& Add(int v) { return Add(static_cast<int64_t>(v)); }
  Params& Add(bool v);
  // Text: invalid UTF-8 and NUL bytes become U+FFFD (PostgreSQL's text takes neither).
  Params& Add(std::string_view v);
  Params& Add(const char* v) { return Add(std::string_view(v)); }
  Params& Add(const std::string& v) { return Add(std::string_view(v)); }
  Params& Add(std::nullopt_t);
  Params& Add(const std::optional<int64_t>& v);
  Params& Add(const std::optional<std::string>& v);
  Params& AddBytes(std::string_view bytes);  // a bytea, sent as binary
  Params& Add(const ArrayLiteral& v) { return Add(std::string_view(v.text())); }

  int size() const { return static_cast<int>(values_.size()); }
  // Valid until the next Add.
  const char* const* values() const;
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }

 private:
  Params& Push(std::string value, bool null, int format);
  std::vector<std::string> values_;
  mutable std::vector<const char*> pointers_;
  std::vector<bool> null_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
};

// The rows of one statement's result (text format). Owns the PGresult.
class Rows {
 public:
  Rows() = default;
  explicit Rows(PGresult* r) : result_(r, PQclear) {}
  int size() const { return result_ ? PQntuples(result_.get()) : 0; }
  bool IsNull(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
  int64_t Int(int row, int col) const;
  std::optional<int64_t> OptInt(int row, int col) const;
  bool Bool(int row, int col) const { return View(row, col) == "t"; }
  std::string Text(int row, int col) const { return std::string(View(row, col)); }
  // The value's text in place: valid as long as this Rows.
  std::string_view View(int row, int col) const;
  std::string Bytes(int row, int col) const;  // a bytea column, decoded
  // The rows a write changed (INSERT, UPDATE, DELETE).
  int64_t affected() const;
  const PGresult* result() const { return result_.get(); }

 private:
  std::unique_ptr<PGresult, void (*)(PGresult*)> result_{nullptr, PQclear};
};

class Connection {
 public:
  // Connects to `url` (a postgresql:// URL; libpq's multi-host forms and
  // target_session_attrs apply), with a connect timeout and keepalives unless the URL sets
  // its own. kUnavailable when the server cannot be reached.
  static Result<std::unique_ptr<Connection>> Open(const std::string& url);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One execution of `sql` (which must outlive this connection: declare it static),
  // prepared on first use.
  Result<Rows> Exec(const Sql& sql, const Params& params = {});
  // A write that must change exactly `n` rows; kNotFound otherwise.
  Status ExecExpectingChanges(const Sql& sql, const Params& params, int64_t n);
  // A write of the open transaction sent without waiting for its outcome (libpq's pipeline
  // mode), so that the writes of a transaction cost one round trip together, not one each.
  // Its outcome (and, with `changes` >= 0, that it changed exactly that many rows: kNotFound
  // otherwise) is read by the next Exec, Script or Commit, which returns the first failure
  // among the writes sent before it; the transaction is then failed as by a failed Exec.
  // Outside a transaction it is Exec (ExecExpectingChanges). A row count other than
  // `changes` fails with what `on_mismatch` returns instead of kNotFound, when given. (For a
  // SELECT the count is of the rows it returned.)
  Status Send(const Sql& sql, const Params& params, int64_t changes = -1,
              std::function<Status()> on_mismatch = nullptr);
  // Unprepared, unparameterised statements, several at once (schema, transaction control).
  Status Script(std::string_view sql);

  // A lost connection is reset here, never inside a transaction.
  Status Begin();
  // A transaction in which a statement failed is rolled back, and Commit says so.
  Status Commit();
  void Rollback();  // a no-op outside a transaction
  bool in_transaction() const { return in_transaction_; }

  struct Migration {
    int version;
    const char* sql;
  };
  // Applies the migrations of `schema` (a name: "scheduler", "logs") newer than its version
  // in jobctl_schema, all in one transaction under an advisory lock, so coordinators starting
  // together migrate once. A schema newer than the newest migration is refused (kCorrupt).
  Status Migrate(std::string_view schema, const std::vector<Migration>& migrations);

  PGconn* handle() const { return conn_; }
  // Runs after the connection was reset (the server was lost and reached again), before
  // anything else runs on the new session; its error fails the statement or transaction
  // that found the connection lost, and it runs again at the next one.
  std::function<Status()> on_reconnect;
  // Runs inside a transaction before a statement that waits for its answer, and before
  // COMMIT: writes the caller held back to send together go out first (PgStore's coalesced
  // updates), so that every statement sees them. Its error fails that statement.
  std::function<Status()> before_wait;

 private:
  Connection() = default;
  Status EnsureConnected();
  Result<Rows> ExecOnce(const Sql& sql, const Params& params);
  // The name `sql` is prepared under on this connection, preparing it first if needed.
  Result<std::string> Prepared(const Sql& sql);
  // Reads the outcomes of what Send sent and leaves pipeline mode: the first failure.
  Status Drain();
  Status BeforeWait();  // before_wait, once at a time, in a transaction

  PGconn* conn_ = nullptr;
  std::string url_;
  bool in_transaction_ = false;
  // The connection was reset and on_reconnect has not yet succeeded on the new session.
  bool reset_pending_ = false;
  bool in_reconnect_ = false;
  bool in_before_wait_ = false;  // on_reconnect runs: its statements use the new session as is
  // The writes Send sent whose outcomes Drain has not read yet, with the rows each must
  // change (-1: any number).
  struct Sent {
    const Sql* sql;
    int64_t changes;
    std::function<Status()> on_mismatch;
  };
  std::vector<Sent> sent_;
  // Keyed by the address of each statement's Sql: its prepared name on this connection.
  std::unordered_map<const Sql*, std::string> prepared_;
};

}  // namespace jobctl::store::pg
