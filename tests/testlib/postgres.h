// PostgresServer runs a real PostgreSQL server for a test: initdb into a fresh temporary
// directory (as the unprivileged user `nobody` when the test runs as root, since the server
// refuses to run as root), `postgres` listening on a free 127.0.0.1 port only, and stopped
// by its pid when the object goes away (fast shutdown, then SIGKILL), its directory removed.
// The server also dies with the test process (PR_SET_PDEATHSIG, when the thread that
// started it ends), so a crashed test leaves no server running (its directory in /tmp stays).
//
// A server can also be a streaming-replication standby of another (StartStandby), promoted
// to a primary by Promote(), and a primary can be killed with SIGKILL (Kill) as a crash:
// that is how tests fail a database over.
//
// The server binaries come from Debian's postgresql package (packaging/install-deps). Where
// they are missing, Start() says so: tests skip with that message, except under CI=true,
// where a missing server is a failure (SkipOrFail).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/status.h"

namespace jobctl::testing {

class PostgresServer {
 public:
  struct Options {
    // Off by default: tests that do not crash the server need no flush to disk, and the
    // machines are shared. A test that kills the server with SIGKILL and checks what
    // survived turns it on.
    bool fsync = false;
    // The application_name of a standby (StartStandby) that every commit waits for
    // (synchronous_standby_names, synchronous_commit = on): nothing is acknowledged before
    // that standby has it. Until it streams, commits wait: start it before the first write
    // (CreateDatabase included). Empty: commits wait for no standby.
    std::string synchronous_standby;
    // Extra lines for postgresql.conf.
    std::string extra_conf;
    // Extra lines for pg_hba.conf (clients from other addresses than 127.0.0.1).
    std::string extra_hba;
  };

  // kNotFound when the server binaries are not installed (the message says what to do).
  static Result<std::unique_ptr<PostgresServer>> Start(const Options& options);
  static Result<std::unique_ptr<PostgresServer>> Start() { return Start(Options{}); }

  struct StandbyOptions {
    // How the standby names itself to the primary (its primary_conninfo).
    std::string application_name = "standby";
  };
  // A standby of `primary` (running): pg_basebackup -R into a fresh temporary directory, as
  // the same user, served on another free port, read-only and streaming from the primary.
  // Returns once the primary's pg_stat_replication shows it streaming, and `sync` when it is
  // the primary's synchronous_standby. Its own configuration names no synchronous standby,
  // so that once promoted it commits alone.
  static Result<std::unique_ptr<PostgresServer>> StartStandby(const PostgresServer& primary,
                                                              const StandbyOptions& options);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // A connection URL for database `db` as the superuser `jobctl`.
  std::string Url(const std::string& db = "postgres") const;
  // Creates an empty database (kConflict when it exists).
  Status CreateDatabase(const std::string& name);
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  // Stops the server (fast shutdown); idempotent.
  void Stop();
  // Kills the server with SIGKILL, as a crash of the server (its backends end as they notice,
  // closing their clients' connections); idempotent.
  void Kill();
  // Promotes a standby (pg_promote) and returns once it accepts writes (pg_is_in_recovery()
  // false).
  Status Promote();
  // Starts it again on the same port and data, after Stop (a database restart as clients
  // see it: every session ends, the data stays).
  Status Restart();
  // The server's own log (for failure messages).
  std::string Log() const;

 private:
  PostgresServer() = default;
  Status Launch(const Options& options);
  // Makes the temporary directory (dir_), owned by the server's user.
  Status MakeDir();
  // Copies `primary` into dir_/data with pg_basebackup -R, configured as its standby.
  Status CloneFrom(const PostgresServer& primary, const StandbyOptions& options);
  // Serves on free ports until one is had (another process may take one first).
  Status ServeOnFreePort();
  // Starts postgres on port_ and waits until it accepts connections.
  Status Serve();

  std::string bin_;  // the directory of initdb and postgres
  std::string dir_;  // the temporary directory; data/ and the socket live in it
  int port_ = 0;
  pid_t pid_ = -1;
  std::string synchronous_standby_;  // Options::synchronous_standby
};

// The directory of the newest installed PostgreSQL server binaries (initdb, postgres), or
// "" when none is installed. $JOBCTL_PG_BIN overrides the search.
std::string FindPostgresBin();

// A TCP port of 127.0.0.1 that was free a moment ago (0 when none could be had).
int FreeLoopbackPort();

// For a test that cannot run without a server: the message to skip with, or to fail with
// when CI=true (CI always installs the server, so a missing one is a broken CI machine).
bool RunningInCi();

}  // namespace jobctl::testing
