// fault_check: the checker of the fault suite on the command line, for event logs and a data
// directory kept from a test run (FAULT_KEEP=1) or from any coordinator started with
// --event-log. Prints the report; exits 0 when no invariant is violated, 1 when one is,
// 2 on bad usage or unreadable input. Several coordinators' event logs (on one PostgreSQL
// database, --store URL, opened once none of them holds it) are merged by monotonic time.
//
//   fault_check (--data DIR | --store URL) [--killed AGENT@MONO_NS]... EVENT_LOG...
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "fault/checker.h"

constexpr const char* kUsage =
    "usage: fault_check (--data DIR | --store URL) [--killed AGENT@MONO_NS]... EVENT_LOG...\n";

int main(int argc, char** argv) {
  using namespace jobctl::fault;
  std::string data, url;
  std::vector<std::string> logs;
  CheckOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--data" && i + 1 < argc) {
      data = argv[++i];
    } else if (arg == "--store" && i + 1 < argc) {
      url = argv[++i];
    } else if (arg == "--killed" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t at = v.rfind('@');
      if (at == std::string::npos) {
        std::cerr << "fault_check: --killed expects AGENT@MONO_NS\n";
        return 2;
      }
      options.kills.push_back({v.substr(0, at), std::strtoll(v.c_str() + at + 1, nullptr, 10)});
    } else if (arg == "-h" || arg == "--help" || arg.rfind("--", 0) == 0) {
      std::cerr << kUsage;
      return arg == "-h" || arg == "--help" ? 0 : 2;
    } else {
      logs.push_back(arg);
    }
  }
  if (data.empty() == url.empty() || logs.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  jobctl::Result<History> history = ReadHistory(logs);
  if (!history.ok()) {
    std::cerr << "fault_check: " << history.status().message() << "\n";
    return 2;
  }
  jobctl::Result<StoreView> store = url.empty() ? ReadStores(data) : ReadStoreAt(url);
  if (!store.ok()) {
    std::cerr << "fault_check: " << (url.empty() ? data : std::string("--store")) << ": "
              << store.status().message() << "\n";
    return 2;
  }
  Report report = Check(*history, *store, options);
  std::cout << report.ToString();
  return report.ok() ? 0 : 1;
}
