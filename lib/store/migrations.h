// The schemas of the scheduler database (jobctl.db) and of the log database (logs.db).
#pragma once

#include <vector>

#include "store/statement.h"

namespace jobctl::store {

const std::vector<Database::Migration>& SchedulerMigrations();
const std::vector<Database::Migration>& LogMigrations();

}  // namespace jobctl::store
