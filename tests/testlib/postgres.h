// PostgresServer runs a real PostgreSQL server for a test: initdb into a fresh temporary
// directory (as the unprivileged user `nobody` when the test runs as root, since the server
// refuses to run as root), `postgres` listening on a free 127.0.0.1 port only, and stopped
// by its pid when the object goes away (fast shutdown, then SIGKILL), its directory removed.
// The server also dies with the test process (PR_SET_PDEATHSIG, when the thread that
// started it ends), so a crashed test leaves no server running (its directory in /tmp stays).
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
    // Extra lines for postgresql.conf.
    std::string extra_conf;
    // Extra lines for pg_hba.conf (clients from other addresses than 127.0.0.1).
    std::string extra_hba;
  };

  // kNotFound when the server binaries are not installed (the message says what to do).
  static Result<std::unique_ptr<PostgresServer>> Start(const Options& options);
  static Result<std::unique_ptr<PostgresServer>> Start() { return Start(Options{}); }
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
  // Starts it again on the same port and data, after Stop (a database restart as clients
  // see it: every session ends, the data stays).
  Status Restart();
  // The server's own log (for failure messages).
  std::string Log() const;

 private:
  PostgresServer() = default;
  Status Launch(const Options& options);
  // Starts postgres on port_ and waits until it accepts connections.
  Status Serve();

  std::string bin_;  // the directory of initdb and postgres
  std::string dir_;  // the temporary directory; data/ and the socket live in it
  int port_ = 0;
  pid_t pid_ = -1;
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
