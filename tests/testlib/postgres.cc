#include "testlib/postgres.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

namespace jobctl::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The unprivileged account the server runs as when the test runs as root.
struct RunAs {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

Result<RunAs> Unprivileged() {
  if (geteuid() != 0) return RunAs{};
  const passwd* pw = getpwnam("nobody");
  if (pw == nullptr) return Status::NotFound("no user `nobody` to run PostgreSQL as");
  return RunAs{true, pw->pw_uid, pw->pw_gid};
}

// Forks and execs argv with stdout and stderr appended to `log`, as `as`, dying with this
// process. The child's pid, or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, const RunAs& as) {
  // Everything the child needs is made before fork: a child of a threaded process may not
  // allocate.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
  }
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) dup2(null, 0);
  if (as.drop && (setgroups(0, nullptr) != 0 || setgid(as.gid) != 0 || setuid(as.uid) != 0)) {
    _exit(126);
  }
  // After the credential change, which clears it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(125);
  execv(args[0], args.data());
  _exit(127);
}

// The exit status of `pid` once it ended within `wait`; nullopt while it still runs.
std::optional<int> WaitFor(pid_t pid, std::chrono::milliseconds wait) {
  auto deadline = Clock::now() + wait;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    if (r < 0) return -1;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

namespace {

std::string Tail(const std::string& text, size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

// The first column of the first row of `sql` on a new session to `url` ("" for no row).
Result<std::string> QueryValue(const std::string& url, const std::string& sql) {
  std::string conninfo = url + "?connect_timeout=10";
  PGconn* conn = PQconnectdb(conninfo.c_str());
  Result<std::string> out = std::string();
  if (PQstatus(conn) != CONNECTION_OK) {
    out = Status::Unavailable(PQerrorMessage(conn));
  } else {
    PGresult* r = PQexec(conn, sql.c_str());
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
      out = Status::Io(PQresultErrorMessage(r));
    } else if (PQntuples(r) > 0) {
      out = std::string(PQgetvalue(r, 0, 0));
    }
    PQclear(r);
  }
  PQfinish(conn);
  return out;
}

// Polls `sql` on `url` until its value satisfies `done`, for up to 60 s.
Status WaitForValue(const std::string& url, const std::string& sql,
                    const std::function<bool(const std::string&)>& done) {
  auto deadline = Clock::now() + std::chrono::seconds(60);
  Result<std::string> last = std::string();
  for (;;) {
    last = QueryValue(url, sql);
    if (last.ok() && done(*last)) return Status::Ok();
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Unavailable("within 60 s, " + sql + " gave " +
                             (last.ok() ? "'" + *last + "'" : last.status().ToString()));
}

}  // namespace

std::string FindPostgresBin() {
  if (const char* env = std::getenv("JOBCTL_PG_BIN"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    fs::path bin = e.path() / "bin";
    if (fs::exists(bin / "initdb", ec) && fs::exists(bin / "postgres", ec)) found.push_back(bin);
  }
  if (found.empty()) return "";
  // Version directories are numbers: the longest, then the greatest, is the newest.
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return found.back();
}

bool RunningInCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

Result<std::unique_ptr<PostgresServer>> PostgresServer::Start(const Options& options) {
  std::string bin = FindPostgresBin();
  if (bin.empty()) {
    return Status::NotFound(
        "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin "
        "(packaging/install-deps installs Debian's postgresql package)");
  }
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->bin_ = bin;
  if (Status s = server->Launch(options); !s.ok()) return s;
  return server;
}

Status PostgresServer::MakeDir() {
  Result<RunAs> as = Unprivileged();
  if (!as.ok()) return as.status();
  char tmpl[] = "/tmp/jobctl-pg.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::Io("mkdtemp failed");
  dir_ = tmpl;
  if (as->drop && chown(dir_.c_str(), as->uid, as->gid) != 0) {
    return Status::Io("cannot give " + dir_ + " to nobody");
  }
  return Status::Ok();
}

Status PostgresServer::Launch(const Options& options) {
  Result<RunAs> as = Unprivileged();
  if (!as.ok()) return as.status();
  if (Status s = MakeDir(); !s.ok()) return s;
  std::string data = dir_ + "/data";
  std::string log = dir_ + "/server.log";
  pid_t init = Spawn({bin_ + "/initdb", "-D", data, "-U", "jobctl", "--auth=trust", "-E", "UTF8",
                      "--locale=C", "--no-sync", "--no-instructions"},
                     log, *as);
  std::optional<int> rc = init < 0 ? -1 : WaitFor(init, std::chrono::seconds(120));
  if (!rc || *rc != 0) {
    if (!rc) {
      kill(init, SIGKILL);
      WaitFor(init, std::chrono::seconds(5));
    }
    return Status::Io("initdb failed: " + Tail(Log(), 2000));
  }
  {
    std::ofstream conf(data + "/postgresql.conf", std::ios::app);
    conf << "listen_addresses = '127.0.0.1'\n"
         << "unix_socket_directories = '" << dir_ << "'\n"
         << "fsync = " << (options.fsync ? "on" : "off") << "\n"
         << "full_page_writes = " << (options.fsync ? "on" : "off") << "\n"
         << "max_connections = 200\nshared_buffers = 32MB\n"
         << "log_min_messages = warning\n";
    if (!options.synchronous_standby.empty()) {
      // Standbys connect for replication as `jobctl` from 127.0.0.1, which the pg_hba.conf
      // of initdb --auth=trust lets in ("host replication all 127.0.0.1/32 trust").
      conf << "wal_level = replica\n"
           << "synchronous_standby_names = '\"" << options.synchronous_standby << "\"'\n"
           << "synchronous_commit = on\n";
      synchronous_standby_ = options.synchronous_standby;
    }
    conf << options.extra_conf << "\n";
  }
  if (!options.extra_hba.empty()) {
    std::ofstream(data + "/pg_hba.conf", std::ios::app) << options.extra_hba << "\n";
  }
  return ServeOnFreePort();
}

Status PostgresServer::ServeOnFreePort() {
  // The port was free a moment ago; another process may take it first: try a few.
  Status last = Status::Ok();
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreeLoopbackPort();
    last = Serve();
    if (last.ok() || last.code() != Status::Code::kIo) return last;
  }
  return last;
}

Result<std::unique_ptr<PostgresServer>> PostgresServer::StartStandby(
    const PostgresServer& primary, const StandbyOptions& options) {
  const std::string& name = options.application_name;
  if (name.empty() ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    return Status::InvalidArgument("a standby's application_name is [a-z0-9_]+, not " + name);
  }
  if (primary.pid_ <= 0) return Status::InvalidArgument("the primary does not run");
  // On failure the server goes away with this pointer: stopped by its pid, directory removed.
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->bin_ = primary.bin_;
  if (Status s = server->MakeDir(); !s.ok()) return s;
  if (Status s = server->CloneFrom(primary, options); !s.ok()) return s;
  if (Status s = server->ServeOnFreePort(); !s.ok()) return s;
  // Streaming from the primary, and counted by it as synchronous when it is the one every
  // commit waits for.
  bool sync = primary.synchronous_standby_ == name;
  Status streams =
      WaitForValue(primary.Url(),
                   "SELECT sync_state FROM pg_stat_replication WHERE application_name = '" + name +
                       "' AND state = 'streaming'",
                   [sync](const std::string& v) { return sync ? v == "sync" : !v.empty(); });
  if (!streams.ok()) {
    return Status::Unavailable("standby " + name + " does not stream from the primary: " +
                               streams.ToString() + "\n" + Tail(server->Log(), 2000));
  }
  return server;
}

Status PostgresServer::CloneFrom(const PostgresServer& primary, const StandbyOptions& options) {
  Result<RunAs> as = Unprivileged();
  if (!as.ok()) return as.status();
  std::string data = dir_ + "/data";
  // -R writes standby.signal and a primary_conninfo with these settings, application_name
  // included; -X stream brings the WAL the copy needs along with it.
  std::string conninfo = "host=127.0.0.1 port=" + std::to_string(primary.port_) +
                         " user=jobctl application_name=" + options.application_name;
  pid_t copy = Spawn({bin_ + "/pg_basebackup", "-D", data, "-R", "-X", "stream", "-c", "fast",
                      "--no-sync", "-d", conninfo},
                     dir_ + "/server.log", *as);
  std::optional<int> rc = copy < 0 ? -1 : WaitFor(copy, std::chrono::seconds(120));
  if (!rc || *rc != 0) {
    if (!rc) {
      kill(copy, SIGKILL);
      WaitFor(copy, std::chrono::seconds(5));
    }
    return Status::Io("pg_basebackup failed: " + Tail(Log(), 2000));
  }
  // The copy of the primary's postgresql.conf names the primary's socket directory and its
  // synchronous standby (this one): later lines win.
  std::ofstream conf(data + "/postgresql.conf", std::ios::app);
  conf << "unix_socket_directories = '" << dir_ << "'\n"
       << "synchronous_standby_names = ''\n"
       << "hot_standby = on\n";
  return conf ? Status::Ok() : Status::Io("cannot write the standby's postgresql.conf");
}

Status PostgresServer::Serve() {
  Result<RunAs> as = Unprivileged();
  if (!as.ok()) return as.status();
  pid_ = Spawn({bin_ + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_)},
               dir_ + "/server.log", *as);
  if (pid_ < 0) return Status::Unavailable("cannot fork postgres");
  std::string conninfo = Url();
  auto deadline = Clock::now() + std::chrono::seconds(60);
  bool exited = false;
  while (!exited && Clock::now() < deadline) {
    // Answering is not enough: another server may have taken the port first. This one is
    // up once its postmaster.pid names it (and it still runs).
    if (PQping(conninfo.c_str()) == PQPING_OK) {
      std::ifstream pidfile(dir_ + "/data/postmaster.pid");
      pid_t written = 0;
      pidfile >> written;
      if (written == pid_ && !WaitFor(pid_, std::chrono::milliseconds(0))) return Status::Ok();
    }
    exited = WaitFor(pid_, std::chrono::milliseconds(0)).has_value();
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (exited) {
    pid_ = -1;
    // Most often the port was taken in the meantime: kIo lets Launch try another.
    return Status::Io("postgres exited at start: " + Tail(Log(), 2000));
  }
  kill(pid_, SIGKILL);
  WaitFor(pid_, std::chrono::seconds(5));
  pid_ = -1;
  return Status::Unavailable("postgres did not accept connections within 60 s: " +
                             Tail(Log(), 2000));
}

Status PostgresServer::Restart() {
  Stop();
  return Serve();
}

PostgresServer::~PostgresServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

void PostgresServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGINT);  // fast shutdown: ends sessions, writes a checkpoint
  if (!WaitFor(pid_, std::chrono::seconds(30))) {
    kill(pid_, SIGKILL);
    WaitFor(pid_, std::chrono::seconds(10));
  }
  pid_ = -1;
}

void PostgresServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  WaitFor(pid_, std::chrono::seconds(10));
  pid_ = -1;
}

Status PostgresServer::Promote() {
  // pg_promote waits (up to 60 s) for the end of recovery; then the server takes writes.
  Result<std::string> promoted = QueryValue(Url(), "SELECT pg_promote(true, 60)");
  if (!promoted.ok()) return promoted.status().WithContext("pg_promote");
  if (*promoted != "t") {
    return Status::Unavailable("pg_promote did not finish within 60 s: " + Tail(Log(), 2000));
  }
  return WaitForValue(Url(), "SELECT pg_is_in_recovery()",
                      [](const std::string& v) { return v == "f"; });
}

std::string PostgresServer::Url(const std::string& db) const {
  return "postgresql://jobctl@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

Status PostgresServer::CreateDatabase(const std::string& name) {
  PGconn* conn = PQconnectdb(Url().c_str());
  Status out = Status::Ok();
  if (PQstatus(conn) != CONNECTION_OK) {
    out = Status::Unavailable(PQerrorMessage(conn));
  } else {
    std::string sql = "CREATE DATABASE \"" + name + "\"";
    PGresult* r = PQexec(conn, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      std::string msg = PQresultErrorMessage(r);
      out = state != nullptr && std::string(state) == "42P04" ? Status::Conflict(msg)
                                                              : Status::Io(msg);
    }
    PQclear(r);
  }
  PQfinish(conn);
  return out;
}

std::string PostgresServer::Log() const {
  std::ifstream in(dir_ + "/server.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace jobctl::testing
