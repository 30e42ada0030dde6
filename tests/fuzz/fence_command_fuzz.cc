// libFuzzer target: any text through the fence's command parser (agentd/fence_command.h), as
// the fence reads it line by line. None may crash; a line that parses is formatted back to
// itself (with its newline), so there is one way to write each command.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/fence_command.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    std::optional<jobctl::agentd::FenceCommand> c = jobctl::agentd::ParseFenceCommand(line);
    if (c) {
      Check(c->pgid >= 2);
      Check(jobctl::agentd::FormatFenceCommand(*c) == std::string(line) + "\n");
    }
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}
