// libFuzzer target: any text through ParseCoordinatorConfig. An accepted file's notification
// channels must be complete and their addresses safe to put in a mail header, and its
// mailto_channel must name an email channel; a refused one says why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/coordinator_config.h"
#include "model/notify.h"

namespace {
bool SafeAddress(const std::string& a) {
  return jobctl::NotifyTargetProblem("mailto:" + a).empty();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  jobctl::Result<jobctl::CoordinatorConfig> c =
      jobctl::ParseCoordinatorConfig(text, "coordinator.toml");
  if (!c.ok()) {
    if (c.status().message().empty()) std::abort();
    return 0;
  }
  if (c->notify_channels.size() > jobctl::kMaxNotifyChannels) std::abort();
  for (const jobctl::NotifyChannelConfig& ch : c->notify_channels) {
    if (!jobctl::IsValidChannelName(ch.name) || ch.url.empty()) std::abort();
    if (ch.type != "email" && ch.type != "webhook") std::abort();
    if (ch.type == "email" && !SafeAddress(ch.from)) std::abort();
    for (const std::string& to : ch.to) {
      if (!SafeAddress(to)) std::abort();
    }
  }
  if (!c->mailto_channel.empty()) {
    const jobctl::NotifyChannelConfig* m = jobctl::FindChannel(*c, c->mailto_channel);
    if (m == nullptr || m->type != "email") std::abort();
  }
  return 0;
}
