// fault_check: the checker of the fault suite on the command line, for event logs and a data
// directory kept from a test run (FAULT_KEEP=1) or from any coordinator started with
// --event-log. Prints the report; exits 0 when no invariant is violated, 1 when one is,
// 2 on bad usage or unreadable input.
//
//   fault_check --data DIR [--killed AGENT@MONO_NS]... EVENT_LOG...
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "fault/checker.h"

int main(int argc, char** argv) {
  using namespace jobctl::fault;
  std::string data;
  std::vector<std::string> logs;
  CheckOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--data" && i + 1 < argc) {
      data = argv[++i];
    } else if (arg == "--killed" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t at = v.rfind('@');
      if (at == std::string::npos) {
        std::cerr << "fault_check: --killed expects AGENT@MONO_NS\n";
        return 2;
      }
      options.kills.push_back({v.substr(0, at), std::strtoll(v.c_str() + at + 1, nullptr, 10)});
    } else if (arg == "-h" || arg == "--help" || arg.rfind("--", 0) == 0) {
      std::cerr << "usage: fault_check --data DIR [--killed AGENT@MONO_NS]... EVENT_LOG...\n";
      return arg == "-h" || arg == "--help" ? 0 : 2;
    } else {
      logs.push_back(arg);
    }
  }
  if (data.empty() || logs.empty()) {
    std::cerr << "usage: fault_check --data DIR [--killed AGENT@MONO_NS]... EVENT_LOG...\n";
    return 2;
  }
  jobctl::Result<History> history = ReadHistory(logs);
  if (!history.ok()) {
    std::cerr << "fault_check: " << history.status().message() << "\n";
    return 2;
  }
  jobctl::Result<StoreView> store = ReadStores(data);
  if (!store.ok()) {
    std::cerr << "fault_check: " << data << ": " << store.status().message() << "\n";
    return 2;
  }
  Report report = Check(*history, *store, options);
  std::cout << report.ToString();
  return report.ok() ? 0 : 1;
}
