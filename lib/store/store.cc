#include "store/store.h"

#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace jobctl::store {

Status Store::InsertEvent(int64_t at_ms, std::string_view kind, std::string_view actor,
                          std::string_view subject, std::string_view detail) {
  return InsertEvent(EventRow{0, at_ms, std::string(kind), std::string(actor), std::nullopt,
                              std::string(subject), std::string(detail)});
}

Status Store::GetJobs(const std::vector<int64_t>& ids, const std::function<void(JobRow&&)>& fn) {
  for (int64_t id : ids) {
    Result<JobRow> row = GetJob(id);
    if (!row.ok() && row.status().code() == Status::Code::kNotFound) continue;
    if (!row.ok()) return row.status();
    fn(std::move(*row));
  }
  return Status::Ok();
}

Status Store::SetNextFires(const std::vector<std::pair<int64_t, std::optional<int64_t>>>& next) {
  for (const auto& [id, at] : next) {
    if (Status s = SetNextFire(id, at); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Store::InsertRuns(std::vector<RunRecord>& runs, std::vector<bool>& inserted) {
  inserted.assign(runs.size(), false);
  for (size_t i = 0; i < runs.size(); ++i) {
    Status s = InsertRun(runs[i]);
    if (s.code() == Status::Code::kConflict) continue;
    if (!s.ok()) return s;
    inserted[i] = true;
  }
  return Status::Ok();
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
