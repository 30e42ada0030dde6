// The PostgreSQL schema of the scheduler's store and of the log store, as ordered lists of
// migrations (version numbers of their own, apart from the SQLite files'). Never edit a
// migration that has shipped; add the next one.
#pragma once

#include <vector>

#include "store/pg.h"

namespace jobctl::store {

const std::vector<pg::Connection::Migration>& PgSchedulerMigrations();
const std::vector<pg::Connection::Migration>& PgLogMigrations();

}  // namespace jobctl::store
