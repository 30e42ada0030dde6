#include "store/store.h"

#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace jobctl::store {

Status Store::InsertEvent(int64_t at_ms, std::string_view kind, std::string_view actor,
                          std::string_view subject, std::string_view detail) {
  return InsertEvent(EventRow{0, at_ms, std::string(kind), std::string(actor), std::nullopt,
                              std::string(subject), std::string(detail)});
}

Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options) {
  if (!options.url.empty()) {
    Result<std::unique_ptr<PgStore>> store =
        PgStore::Open(options.url, options.holder, options.hold_ttl_ms, options.standby);
    if (!store.ok()) return store.status();
    return std::unique_ptr<Store>(std::move(*store));
  }
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(options.path);
  if (!store.ok()) return store.status();
  return std::unique_ptr<Store>(std::move(*store));
}

}  // namespace jobctl::store
