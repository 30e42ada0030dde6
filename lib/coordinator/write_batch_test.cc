#include "coordinator/write_batch.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>

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

// A batch over a fresh store in a temporary directory, for the tests of Write and Stage.
class WriteBatchWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/write-batch-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    auto store = store::OpenStore({.path = dir_ + "/jobctl.db"});
    auto logs = store::OpenLogStore({.path = dir_ + "/logs.db", .run_cap_bytes = 1 << 20});
    ASSERT_TRUE(store.ok() && logs.ok());
    store_ = std::move(*store);
    logs_ = std::move(*logs);
    batch_ = std::make_unique<WriteBatch>(&loop_, store_.get(), logs_.get());
    batch_->Start();
    batch_->on_failure = [this](const Status&) { ++reloads_; };
  }
  void TearDown() override {
    batch_->Close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    batch_.reset();
    store_.reset();
    logs_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
    std::filesystem::remove_all(dir_);
  }
  // Commits the turn; the status its replies get.
  Status Commit() {
    Status seen;
    batch_->OnCommit([&](const Status& s) { seen = s; });
    batch_->Flush();
    return seen;
  }

  std::string dir_;
  uv_loop_t loop_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::LogStore> logs_;
  std::unique_ptr<WriteBatch> batch_;
  int reloads_ = 0;
};

// A write that fails takes the whole turn with it: what was written before it in the same turn
// is not kept, the caller gets the failure, and so does every reply of the turn.
TEST_F(WriteBatchWriteTest, AFailedWriteRollsBackTheWholeTurnAndIsReturned) {
  ASSERT_TRUE(batch_->Write([&] { return store_->SetCounter("token", 5); }).ok());
  Status failed = batch_->Write([&] {
    Status s = store_->SetCounter("other", 6);
    return s.ok() ? Status::ResourceExhausted("database or disk is full") : s;
  });
  EXPECT_EQ(failed.code(), Status::Code::kResourceExhausted);
  batch_->Stage([&] { return store_->SetCounter("later", 7); });
  EXPECT_EQ(Commit().code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(reloads_, 1);
  EXPECT_EQ(*store_->GetCounter("token"), 0);
  EXPECT_EQ(*store_->GetCounter("other"), 0);
  EXPECT_EQ(*store_->GetCounter("later"), 0);
}

// A Result-returning write gives its value back, and the turn commits.
TEST_F(WriteBatchWriteTest, AWriteThatSucceedsGivesItsValueAndCommits) {
  Result<int64_t> value = batch_->Write([&]() -> Result<int64_t> {
    if (Status s = store_->SetCounter("token", 9); !s.ok()) return s;
    return store_->GetCounter("token");
  });
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 9);
  EXPECT_TRUE(Commit().ok());
  EXPECT_EQ(reloads_, 0);
  EXPECT_EQ(*store_->GetCounter("token"), 9);
}

// The failure a caller expects (a row already there) is returned, and only that write is
// undone: the rest of the turn commits.
TEST_F(WriteBatchWriteTest, AnExpectedFailureUndoesOnlyThatWrite) {
  batch_->Stage([&] { return store_->SetCounter("token", 3); });
  Status conflict =
      batch_->Write([] { return Status::Conflict("already fired"); }, Status::Code::kConflict);
  EXPECT_EQ(conflict.code(), Status::Code::kConflict);
  EXPECT_TRUE(Commit().ok());
  EXPECT_EQ(reloads_, 0);
  EXPECT_EQ(*store_->GetCounter("token"), 3);
}

// The log database's writes are in the same turn: a failed log write rolls back the
// scheduler database's writes too.
TEST_F(WriteBatchWriteTest, AFailedLogWriteRollsBackTheSchedulerWritesOfTheTurn) {
  batch_->Stage([&] { return store_->SetCounter("token", 4); });
  Status failed = batch_->WriteLogs([] { return Status::Io("disk I/O error"); });
  EXPECT_EQ(failed.code(), Status::Code::kIo);
  EXPECT_EQ(Commit().code(), Status::Code::kIo);
  EXPECT_EQ(*store_->GetCounter("token"), 0);
}

// Retention's deletes of output go in a log transaction of their own kind (its commit does not
// wait for the disk). A durable log write later in the same turn commits them first and both
// are kept; a turn that fails keeps neither.
class WriteBatchRedoableTest : public WriteBatchWriteTest {
 protected:
  void SetUp() override {
    WriteBatchWriteTest::SetUp();
    ASSERT_TRUE(batch_->WriteLogs([&] { return Append(1); }).ok());
    ASSERT_TRUE(Commit().ok());
  }
  Result<store::LogStore::AppendResult> Append(int64_t run) {
    return logs_->Append(
        {.run_id = run, .shard = 0, .attempt = 1, .seq = 1, .at_ms = 1, .data = "out\n"});
  }
  Result<store::LogStore::Pruned> Prune(int64_t run) {
    return batch_->WriteRedoableLogs([&] { return logs_->PruneOutput(run, 2, "", 10); });
  }
  int64_t Bytes(int64_t run) { return *logs_->RunBytes(run); }
};

TEST_F(WriteBatchRedoableTest, ATurnOfRedoableWritesAloneCommitsThem) {
  ASSERT_TRUE(Prune(1).ok());
  EXPECT_TRUE(Commit().ok());
  EXPECT_EQ(Bytes(1), 0);
}

TEST_F(WriteBatchRedoableTest, ADurableWriteAfterRedoableOnesInTheTurnKeepsBoth) {
  ASSERT_TRUE(Prune(1).ok());
  ASSERT_TRUE(batch_->WriteLogs([&] { return Append(2); }).ok());
  ASSERT_TRUE(Prune(3).ok());  // joins the durable transaction
  EXPECT_TRUE(Commit().ok());
  EXPECT_EQ(reloads_, 0);
  EXPECT_EQ(Bytes(1), 0);
  EXPECT_EQ(Bytes(2), 4);
}

TEST_F(WriteBatchRedoableTest, AFailedTurnKeepsNoneOfItsRedoableWrites) {
  ASSERT_TRUE(Prune(1).ok());
  batch_->Fail(Status::Io("disk I/O error"));
  // A durable write after them in the failed turn gets the failure: they are not committed
  // ahead of it.
  EXPECT_EQ(batch_->WriteLogs([&] { return Append(2); }).status().code(), Status::Code::kIo);
  EXPECT_EQ(Commit().code(), Status::Code::kIo);
  EXPECT_EQ(Bytes(1), 4);
  EXPECT_EQ(Bytes(2), 0);
}

}  // namespace
}  // namespace jobctl::coordinator
