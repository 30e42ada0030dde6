#include "coordinator/write_batch.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

namespace jobctl::coordinator {
namespace {

TEST(WriteBatchTest, BackoffGrowsFromATenthOfASecondToTwoSeconds) {
  EXPECT_EQ(WriteBatch::BackoffMs(0), 0);
  EXPECT_EQ(WriteBatch::BackoffMs(1), 100);
  EXPECT_EQ(WriteBatch::BackoffMs(2), 200);
  EXPECT_EQ(WriteBatch::BackoffMs(5), 1600);
  EXPECT_EQ(WriteBatch::BackoffMs(6), 2000);
  EXPECT_EQ(WriteBatch::BackoffMs(1'000'000), 2000);
}

// Issue 7 (full disk): every failed commit reloaded the state and the fire loop fired the same
// due instant again at once, a hot loop of about 250 failed commits a second. Failed commits
// now hold writers back, and the first commit that succeeds lifts the hold.
TEST(WriteBatchTest, FailedCommitsHoldWritersBackUntilOneSucceeds) {
  char tmpl[] = "/tmp/write-batch-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    auto store = store::OpenStore({.path = dir + "/jobctl.db"});
    auto logs = store::OpenLogStore({.path = dir + "/logs.db", .run_cap_bytes = 1 << 20});
    ASSERT_TRUE(store.ok() && logs.ok());
    WriteBatch batch(&loop, store->get(), logs->get());
    batch.Start();
    int reloads = 0;
    batch.on_failure = [&](const Status&) { ++reloads; };
    EXPECT_EQ(batch.RetryDelayMs(), 0);

    for (int64_t want : {100, 200, 400}) {
      ASSERT_TRUE(batch.Open().ok());
      ASSERT_TRUE((*store)->SetCounter("token", want).ok());
      batch.Fail(Status::ResourceExhausted("database or disk is full"));
      Status seen;
      batch.OnCommit([&](const Status& s) { seen = s; });
      batch.Flush();
      EXPECT_EQ(seen.code(), Status::Code::kResourceExhausted);
      EXPECT_EQ(batch.RetryDelayMs(), want);  // uv_now stands still within the test
    }
    EXPECT_EQ(reloads, 3);

    ASSERT_TRUE(batch.Open().ok());
    ASSERT_TRUE((*store)->SetCounter("token", 7).ok());
    batch.Flush();
    EXPECT_EQ(batch.RetryDelayMs(), 0);
    EXPECT_EQ(*(*store)->GetCounter("token"), 7);
    batch.Close();
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jobctl::coordinator
