// agentd's names for the agent routes' messages (wire/agent_messages.h): an Assignment is one
// shard handed to this agent by a claim (what to run, under which lease); a ShardResult is how
// one attempt of it ended, as reported back and as kept in the state dir until the
// coordinator took it. Pure, any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "model/ids.h"
#include "wire/agent_messages.h"

namespace jobctl::agentd {

using Assignment = wire::Grant;
using ShardResult = wire::ShardResult;

// A result's body as sent and as persisted, naming `agent`; and back from a persisted file
// (kCorrupt when it does not decode).
std::string ResultToJson(const ShardResult& r, std::string_view agent);
Result<ShardResult> ResultFromJson(std::string_view text);

}  // namespace jobctl::agentd
