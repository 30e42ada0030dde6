// libFuzzer target: any text as agentd's result journal (agentd/result_journal.h), as a
// restart reads it. None may crash; every result it keeps reads back as a result of that key,
// and the journal written from what it keeps reads back to the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agentd/result_journal.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  jobctl::agentd::JournalText read = jobctl::agentd::ReadJournal(text);
  std::string rewritten;
  for (const auto& [key, json] : read.live) {
    jobctl::Result<jobctl::agentd::ShardResult> r = jobctl::agentd::ResultFromJson(json);
    Check(r.ok() && r->key == key);
    Check(json.find('\n') == std::string::npos);
    rewritten += "+" + json + "\n";
  }
  jobctl::agentd::JournalText again = jobctl::agentd::ReadJournal(rewritten);
  Check(again.live == read.live && again.skipped == 0 && again.torn_bytes == 0);
  return 0;
}
