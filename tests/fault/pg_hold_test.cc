// A coordinator stopped (SIGSTOP, a long pause) in the middle of a log write on PostgreSQL,
// and replaced by a standby: what it left open in the database must not hold up the
// coordinator that replaced it. The store-level form of what the fault suite's SIGSTOP test
// of the serving coordinator runs into: the agent resends the chunk the stopped one never
// acknowledged, the new holder's insert waits on the stopped one's open transaction (its log
// session is not the one whose session a standby ends), its loop with it, it misses its own
// renewals and is replaced in turn.
#include <gtest/gtest.h>

#include <chrono>

#include "store/log_store.h"
#include "store/store.h"
#include "testlib/postgres.h"

namespace jobctl::fault {
namespace {

using std::chrono::steady_clock;

TEST(PgHoldTest, AReplacedHoldersOpenLogTransactionDoesNotHoldUpTheNewHolder) {
  Result<std::unique_ptr<testing::PostgresServer>> pg = testing::PostgresServer::Start();
  if (!pg.ok()) {
    if (testing::RunningInCi()) FAIL() << pg.status().ToString();
    GTEST_SKIP() << "PostgreSQL not available: " << pg.status().ToString();
  }
  ASSERT_TRUE((*pg)->CreateDatabase("jobctl").ok());
  const std::string url = (*pg)->Url("jobctl");
  Result<std::unique_ptr<store::Store>> a =
      store::OpenStore({.url = url, .holder = "a", .hold_ttl_ms = 3000});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<std::unique_ptr<store::LogStore>> a_logs =
      store::OpenLogStore({.url = url, .run_cap_bytes = 1 << 20});
  ASSERT_TRUE(a_logs.ok()) << a_logs.status().ToString();
  store::LogChunk chunk;
  chunk.run_id = 1;
  chunk.seq = 1;
  chunk.data = "line\n";
  ASSERT_TRUE((*a_logs)->Begin().ok());
  ASSERT_TRUE((*a_logs)->Append(chunk).ok());
  // `a` stops here, its log transaction open: it neither renews its hold nor commits. `b`
  // ends its session after hold_ttl and holds the database.
  Result<std::unique_ptr<store::Store>> b =
      store::OpenStore({.url = url, .holder = "b", .hold_ttl_ms = 3000});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE((*b)->held());
  EXPECT_GT((*b)->epoch(), (*a)->epoch());
  Result<std::unique_ptr<store::LogStore>> b_logs =
      store::OpenLogStore({.url = url, .run_cap_bytes = 1 << 20});
  ASSERT_TRUE(b_logs.ok()) << b_logs.status().ToString();
  // The agent sends the chunk again, to `b`.
  ASSERT_TRUE((*b_logs)->Begin().ok());
  auto start = steady_clock::now();
  Result<store::LogStore::AppendResult> again = (*b_logs)->Append(chunk);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - start);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_LT(waited.count(), 1000) << "the new holder's log write waited " << waited.count()
                                  << " ms on the replaced holder's open transaction";
  if (again.ok()) {
    EXPECT_TRUE((*b_logs)->Commit().ok());
  }
  (*a_logs)->Rollback();
}

}  // namespace
}  // namespace jobctl::fault
