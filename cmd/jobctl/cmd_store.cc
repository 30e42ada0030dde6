// jobctl store: the coordinator's store.
//
// store stats asks the running coordinator (GET /v1/store/stats) how large its store is and
// what fills it.
//
// store copy moves an embedded store (a data directory's jobctl.db and logs.db) into a
// PostgreSQL database, for a site that outgrows one host: the whole history keeps its ids,
// and `jobctl serve --store URL` then carries on from where the embedded store stopped. It
// is taken with the coordinator stopped: it holds serve's lock on the data directory
// (DATA/serve.lock) for its whole run, so it refuses to start while `jobctl serve` runs
// there and no serve starts on it meanwhile. The copy itself is all or nothing
// (store/store_copy.h).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/lock_file.h"
#include "cli.h"
#include "client.h"
#include "config/coordinator_config.h"
#include "exit_codes.h"
#include "output.h"
#include "store/store_copy.h"

namespace jobctl::cli {
namespace {

struct CopyOptions {
  std::string to;
  std::string config;
  std::string data;
  bool no_logs = false;
};

// What each failure means to a script: no store in the data directory (66), the target
// already holds jobctl data or cannot be written (73), serve runs on the data directory
// (75), the PostgreSQL server cannot be reached (69), the store is damaged or newer (65).
int CopyExitCode(const Status& s) {
  switch (s.code()) {
    case Status::Code::kNotFound: return kExitNoInput;
    case Status::Code::kConflict:
    case Status::Code::kIo:
    case Status::Code::kResourceExhausted: return kExitCantCreate;
    default: return ExitCodeFor(s);
  }
}

std::string FromEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// The data directory and the target as `jobctl serve` would take them with the same
// settings: a flag, else its environment variable, else the key in the config file (read
// only when needed).
Status Resolve(const CopyOptions& opt, std::string* data, std::string* to) {
  *data = !opt.data.empty() ? opt.data : FromEnv("JOBCTL_DATA_DIR");
  *to = !opt.to.empty() ? opt.to : FromEnv("JOBCTL_STORE");
  if (!data->empty() && !to->empty()) return Status::Ok();
  bool explicit_config = !opt.config.empty();
  Result<CoordinatorConfig> config = LoadCoordinatorConfig(
      explicit_config ? opt.config : "/etc/jobctl/coordinator.toml", explicit_config);
  if (!config.ok()) return config.status();
  if (data->empty()) *data = config->data_dir;
  if (to->empty()) *to = config->store;
  return Status::Ok();
}

// "jobctl: store copy: log_chunks: 120000 rows, 812 MiB" on stderr: a line per table, and
// while a large table is copied, a line every few thousand rows on a terminal.
void ShowProgress(const store::CopyProgress& p) {
  bool terminal = IsTerminal(STDERR_FILENO);
  if (!p.done && !terminal) return;
  // On a terminal each line replaces the table's last progress line.
  std::cerr << (terminal ? "\r" : "") << "jobctl: store copy: " << p.table << ": " << p.rows
            << " rows";
  if (p.bytes > 0) std::cerr << ", " << (p.bytes >> 20) << " MiB";
  std::cerr << (p.done ? "\n" : "") << std::flush;
}

int RunCopy(const CopyOptions& opt, const GlobalOptions& g) {
  std::string data;
  std::string to;
  if (Status s = Resolve(opt, &data, &to); !s.ok()) {
    return Fail("store copy", "--config", s, kExitConfig);
  }
  if (to.empty()) {
    return Fail("store copy", "",
                Status::InvalidArgument("no PostgreSQL database to copy to: name it with --to "
                                        "'postgresql://...' (or key store in --config)"),
                kExitUsage);
  }
  if (Status s = CheckStoreUrl(to); !s.ok()) return Fail("store copy", "--to", s, kExitConfig);
  std::string db = data + "/jobctl.db";
  if (::access(db.c_str(), R_OK) != 0) {
    if (errno == ENOENT) {
      return Fail("store copy", data,
                  Status::NotFound("no jobctl.db here: is it the coordinator's data directory?"),
                  kExitNoInput);
    }
    return Fail("store copy", db,
                Status::PermissionDenied(std::string(std::strerror(errno)) +
                                         "; run jobctl store copy as the coordinator's user"),
                kExitNoPerm);
  }
  // Held to the end: serve refuses to start on the data directory while the copy runs.
  Result<LockFile> lock = LockFile::Acquire(data + "/serve.lock");
  if (!lock.ok()) {
    if (lock.status().code() != Status::Code::kConflict) {
      return Fail("store copy", data, lock.status(), kExitNoPerm);
    }
    std::optional<int64_t> pid = LockFile::ReadHolder(data + "/serve.lock");
    return Fail("store copy", data,
                Status::Conflict("jobctl serve" +
                                 (pid ? " (pid " + std::to_string(*pid) + ")" : std::string()) +
                                 " is running on this data directory; stop it first: the copy "
                                 "is taken with the coordinator stopped"),
                kExitTempFail);
  }
  Result<store::CopyStats> stats =
      store::CopyToPostgres({.path = db,
                             .logs_path = opt.no_logs ? "" : data + "/logs.db",
                             .url = to,
                             .on_progress = ShowProgress});
  if (!stats.ok()) {
    return Fail("store copy", RedactStoreUrl(to), stats.status(), CopyExitCode(stats.status()));
  }
  if (g.format() == OutputFormat::kJson) {
    nlohmann::json tables = nlohmann::json::array();
    for (const store::CopyTableStats& t : stats->tables) {
      tables.push_back({{"table", t.table}, {"rows", t.rows}});
    }
    PrintJson({{"data_dir", data},
               {"store", RedactStoreUrl(to)},
               {"logs", !opt.no_logs},
               {"tables", tables},
               {"output_bytes", stats->output_bytes}});
    return kExitOk;
  }
  Table table({"TABLE", "ROWS"});
  for (const store::CopyTableStats& t : stats->tables) {
    table.Add({t.table, std::to_string(t.rows)});
  }
  table.Print(std::cout);
  std::cout << "Copied " << data << " to " << RedactStoreUrl(to)
            << (opt.no_logs ? " without the output of runs" : "")
            << "; serve it with jobctl serve --store (or key store), admin.token kept.\n";
  return kExitOk;
}

void RegisterCopy(CLI::App& store, GlobalOptions& g, int* rc) {
  auto opt = std::make_shared<CopyOptions>();
  auto* sub = store.add_subcommand(
      "copy", "Copy the embedded store of a stopped coordinator into a PostgreSQL database");
  sub->add_option("--to", opt->to,
                  "The PostgreSQL database, as a postgresql:// URL (env JOBCTL_STORE, else key "
                  "store in --config)");
  sub->add_option("--data", opt->data,
                  "The coordinator's data directory (env JOBCTL_DATA_DIR, else data_dir in "
                  "--config, default /var/lib/jobctl)");
  sub->add_option("--config", opt->config,
                  "The coordinator's config file, for data_dir and store (default "
                  "/etc/jobctl/coordinator.toml, if it exists)");
  sub->add_flag("--no-logs", opt->no_logs, "Leave the output of runs (logs.db) behind");
  sub->footer(
      "Copies every table of DATA/jobctl.db (jobs, revisions, runs and shards, misses, leases,\n"
      "agents, tokens, the audit trail, the fencing counter) and DATA/logs.db (the output of\n"
      "runs; not with --no-logs) into the database, ids included, in one transaction: a\n"
      "failed copy leaves the database as it was, and can be run again. The database must\n"
      "hold no jobctl data yet. Stop jobctl serve first: the copy holds DATA/serve.lock.\n"
      "Examples:\n"
      "  systemctl stop jobctl-coordinator\n"
      "  sudo -u jobctl jobctl store copy --to 'postgresql://jobctl@db1/jobctl'\n"
      "  jobctl store copy --data /tmp/jc --to postgresql://127.0.0.1/jc -o json\n"
      "Exit status: 0 copied, 64 no --to, 66 no store in the data directory, 69 the server\n"
      "cannot be reached, 73 the database already holds jobctl data, a coordinator holds it,\n"
      "or it cannot be written, 75 jobctl serve runs on the data directory, 77 the store\n"
      "cannot be read by this user, 78 a bad URL or config file.");
  sub->callback([opt, &g, rc] { *rc = RunCopy(*opt, g); });
}

// "1.5 GiB", "12 KiB", "900 B".
std::string Bytes(int64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

int RunStoreStats(int top, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("store stats", "", client.status(), kExitConfig);
  Result<nlohmann::json> reply = (*client)->Get("/v1/store/stats?top=" + std::to_string(top));
  if (!reply.ok()) return Fail("store stats", "", reply.status());
  Result<wire::StoreStatsView> st = ReplyAs<wire::StoreStatsView>(*reply);
  if (!st.ok()) return Fail("store stats", "", st.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*reply);
    return kExitOk;
  }
  if (st->backend.value_or("sqlite") == "postgresql") {
    // Tables in a database: their size on disk; space freed by pruning is reused once
    // autovacuum has been through them, and no free space is reported.
    std::cout << "store tables  " << Bytes(st->store_bytes) << "\n"
              << "log tables    " << Bytes(st->logs_bytes) << "\n"
              << "gives space back  no: reused after autovacuum (PostgreSQL)\n";
  } else {
    std::cout << "jobctl.db     " << Bytes(st->store_bytes) << " (" << Bytes(st->store_free_bytes)
              << " free)\n"
              << "logs.db       " << Bytes(st->logs_bytes) << " (" << Bytes(st->logs_free_bytes)
              << " free)\n"
              << "gives space back  "
              << (st->reclaims_space ? "yes" : "no (see jobctl-coordinator.toml(5))") << "\n";
  }
  std::cout << "runs          " << st->runs << "\n"
            << "oldest run    " << (st->oldest_run.empty() ? "-" : LocalTime(st->oldest_run))
            << "\n"
            << "output kept   " << Bytes(st->output_bytes) << "\n";
  if (st->top_jobs.empty()) return kExitOk;
  std::cout << "\n";
  Table t({"JOB", "OUTPUT", "RUNS WITH OUTPUT"});
  for (const wire::JobBytesView& j : st->top_jobs) {
    t.Add({j.job.empty() ? "(unknown)" : j.job, Bytes(j.bytes), std::to_string(j.runs)});
  }
  t.Print(std::cout);
  return kExitOk;
}

void RegisterStats(CLI::App& store, GlobalOptions& g, int* rc) {
  auto top = std::make_shared<int>(10);
  auto* stats = store.add_subcommand(
      "stats", "Size of the store files, runs, oldest run and the jobs with the most output");
  stats->add_option("--top", *top, "How many jobs to list by output kept (1-100)")
      ->check(CLI::Range(1, 100));
  stats->callback([top, &g, rc] { *rc = RunStoreStats(*top, g); });
}

}  // namespace

void RegisterStore(CLI::App& app, GlobalOptions& g, int* rc) {
  auto* store = app.add_subcommand("store", "Inspect the coordinator's store, or copy it");
  store->require_subcommand(1);
  RegisterStats(*store, g, rc);
  RegisterCopy(*store, g, rc);
}

}  // namespace jobctl::cli
