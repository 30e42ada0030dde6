// agent_bench's spawn-cost phase (spawn_cost.cc): children started per second and the
// spawner's CPU per child, with the spawning process grown by each ballast in turn.
#pragma once

#include <vector>

namespace jobctl::bench {

void SpawnCostPhase(int spawns, const std::vector<int>& ballast_mib);

}  // namespace jobctl::bench
