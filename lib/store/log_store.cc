#include "store/log_store.h"

#include "store/pg_log_store.h"
#include "store/sqlite_log_store.h"

namespace jobctl::store {

Result<std::unique_ptr<LogStore>> OpenLogStore(const LogStoreOptions& options) {
  if (!options.url.empty()) {
    Result<std::unique_ptr<PgLogStore>> store =
        PgLogStore::Open(options.url, options.run_cap_bytes, options.standby);
    if (!store.ok()) return store.status();
    return std::unique_ptr<LogStore>(std::move(*store));
  }
  Result<std::unique_ptr<SqliteLogStore>> store =
      SqliteLogStore::Open(options.path, options.run_cap_bytes);
  if (!store.ok()) return store.status();
  return std::unique_ptr<LogStore>(std::move(*store));
}

}  // namespace jobctl::store
