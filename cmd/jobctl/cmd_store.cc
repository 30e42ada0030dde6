// jobctl store stats: how large the coordinator's store is, and what fills it.
#include <iostream>
#include <memory>

#include "cli.h"
#include "client.h"
#include "exit_codes.h"
#include "output.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

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
  Result<json> reply = (*client)->Get("/v1/store/stats?top=" + std::to_string(top));
  if (!reply.ok()) return Fail("store stats", "", reply.status());
  Result<wire::StoreStatsView> st = ReplyAs<wire::StoreStatsView>(*reply);
  if (!st.ok()) return Fail("store stats", "", st.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*reply);
    return kExitOk;
  }
  std::cout << "jobctl.db     " << Bytes(st->store_bytes) << " (" << Bytes(st->store_free_bytes)
            << " free)\n"
            << "logs.db       " << Bytes(st->logs_bytes) << " (" << Bytes(st->logs_free_bytes)
            << " free)\n"
            << "gives space back  "
            << (st->reclaims_space ? "yes" : "no (see jobctl-coordinator.toml(5))") << "\n"
            << "runs          " << st->runs << "\n"
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

}  // namespace

void RegisterStore(CLI::App& app, GlobalOptions& g, int* rc) {
  auto* store = app.add_subcommand("store", "Inspect the coordinator's store");
  store->require_subcommand(1);
  auto top = std::make_shared<int>(10);
  auto* stats = store->add_subcommand(
      "stats", "Size of the store files, runs, oldest run and the jobs with the most output");
  stats->add_option("--top", *top, "How many jobs to list by output kept (1-100)")
      ->check(CLI::Range(1, 100));
  stats->callback([top, &g, rc] { *rc = RunStoreStats(*top, g); });
}

}  // namespace jobctl::cli
