#include "coordinator/leases.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "base/fake_clock.h"
#include "coordinator/metrics.h"

namespace jobctl::coordinator {
namespace {

// Leases over a fresh store in a temporary directory, on a fake clock: the loop runs only
// when the test turns it, and the clock moves only when the test advances it.
class LeasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/leases-test.XXXXXX";
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
    ctx_.loop = &loop_;
    ctx_.clock = &clock_;
    ctx_.store = store_.get();
    ctx_.logs = logs_.get();
    ctx_.batch = batch_.get();
    ctx_.metrics = &metrics_;
    ctx_.events = &events_;
    leases_ = std::make_unique<Leases>(&ctx_);
    leases_->set_on_expired([this](const Lease& l) { expired_.push_back(l); });
    leases_->Start();
  }
  void TearDown() override {
    leases_->Close();
    batch_->Close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
    std::filesystem::remove_all(dir_);
  }
  // Lets the loop run what is due now (timers armed with no delay).
  void Turn() {
    uv_update_time(&loop_);
    uv_run(&loop_, UV_RUN_NOWAIT);
  }
  FencingToken Grant(ShardKey key, const std::string& agent) {
    FencingToken t = leases_->Grant(key, agent, ctx_.NowMs());
    batch_->Flush();
    return t;
  }

  std::string dir_;
  uv_loop_t loop_;
  FakeClock clock_{FromUnixMs(1'700'000'000'000), 1'000'000};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::LogStore> logs_;
  std::unique_ptr<WriteBatch> batch_;
  Metrics metrics_;
  EventLog events_;
  Context ctx_;
  std::unique_ptr<Leases> leases_;
  std::vector<Lease> expired_;
};

TEST_F(LeasesTest, TokensOnlyGrowAndTheCounterIsSaved) {
  leases_->SetLastToken(41);
  EXPECT_EQ(Grant({1, 0}, "a"), 42);
  EXPECT_EQ(Grant({1, 1}, "b"), 43);
  // A shard granted again gets a newer token; the old one no longer holds it.
  EXPECT_EQ(Grant({1, 0}, "b"), 44);
  EXPECT_FALSE(leases_->Holds({1, 0}, 42));
  EXPECT_TRUE(leases_->HeldBy({1, 0}, 44, "b"));
  leases_->SaveTokenCounter();
  batch_->Flush();
  EXPECT_EQ(*store_->GetCounter("token"), 44);
}

TEST_F(LeasesTest, ARenewalIsTakenOnlyFromTheHolderUnderItsToken) {
  FencingToken t = Grant({7, 2}, "a");
  EXPECT_EQ(leases_->Renew({7, 2}, t, "a", clock_.MonotonicMs()), Leases::Renewal::kRenewed);
  EXPECT_EQ(leases_->Renew({7, 2}, t, "b", clock_.MonotonicMs()), Leases::Renewal::kNotHeld);
  EXPECT_EQ(leases_->Renew({7, 2}, t + 1, "a", clock_.MonotonicMs()), Leases::Renewal::kNotHeld);
  EXPECT_EQ(leases_->Renew({7, 3}, t, "a", clock_.MonotonicMs()), Leases::Renewal::kNotHeld);
  leases_->MarkCanceled({7, 2});
  EXPECT_EQ(leases_->Renew({7, 2}, t, "a", clock_.MonotonicMs()), Leases::Renewal::kCanceled);
}

TEST_F(LeasesTest, AStaleTokenIsRefusedWithoutTellingTheCurrentOne) {
  FencingToken old_token = Grant({3, 0}, "a");
  FencingToken current = Grant({3, 0}, "b");
  EXPECT_TRUE(leases_->CheckToken({3, 0}, "b", current).ok());
  Status s = leases_->CheckToken({3, 0}, "a", old_token);
  EXPECT_EQ(s.code(), Status::Code::kConflict);
  EXPECT_EQ(s.message().find(std::to_string(current)), std::string::npos) << s.message();
  EXPECT_EQ(metrics_.stale_token_total, 1u);
}

TEST_F(LeasesTest, ALeaseNotRenewedWithinItsTtlExpiresAndItsShardIsTold) {
  FencingToken t = Grant({5, 1}, "a");
  clock_.Advance(ctx_.config.lease_ttl - Millis(1));
  leases_->Arm();
  Turn();
  EXPECT_TRUE(expired_.empty());
  clock_.Advance(Millis(2));
  leases_->Arm();
  Turn();
  ASSERT_EQ(expired_.size(), 1u);
  EXPECT_EQ(expired_[0].key, (ShardKey{5, 1}));
  EXPECT_EQ(expired_[0].agent, "a");
  EXPECT_EQ(expired_[0].token, t);
  EXPECT_EQ(leases_->size(), 0u);
  EXPECT_EQ(metrics_.leases_expired_total, 1u);
}

TEST_F(LeasesTest, ARenewalPushesTheExpiryOneTtlFromTheHeartbeat) {
  FencingToken t = Grant({5, 1}, "a");
  clock_.Advance(ctx_.config.lease_ttl / 2);
  ASSERT_EQ(leases_->Renew({5, 1}, t, "a", clock_.MonotonicMs()), Leases::Renewal::kRenewed);
  clock_.Advance(ctx_.config.lease_ttl / 2 + Millis(100));
  leases_->Arm();
  Turn();
  EXPECT_TRUE(expired_.empty());
  clock_.Advance(ctx_.config.lease_ttl / 2);
  leases_->Arm();
  Turn();
  EXPECT_EQ(expired_.size(), 1u);
}

TEST_F(LeasesTest, AfterALoopStallEveryLeaseGetsAFreshTtlBeforeExpiryIsJudged) {
  ctx_.config.lease_ttl = Millis(300);  // the check comes every 100 ms of the loop's time
  Grant({9, 0}, "a");
  leases_->Arm();
  // Between two checks the clock moved five seconds (the process was stopped): nobody could
  // renew meanwhile, so the lease is renewed rather than judged expired.
  clock_.Advance(std::chrono::seconds(5));
  uv_run(&loop_, UV_RUN_ONCE);  // waits for the check, then runs it
  EXPECT_TRUE(expired_.empty());
  EXPECT_EQ(leases_->size(), 1u);
  // Without a stall, the same lease expires once its TTL passes.
  clock_.Advance(Millis(301));
  leases_->Arm();
  Turn();
  EXPECT_EQ(expired_.size(), 1u);
}

TEST_F(LeasesTest, AfterARestartEveryLoadedLeaseGetsAWholeTtl) {
  leases_->Load({2, 0}, "a", 17);
  clock_.Advance(ctx_.config.lease_ttl - Millis(1));
  leases_->Arm();
  Turn();
  EXPECT_TRUE(expired_.empty());
  EXPECT_TRUE(leases_->HeldBy({2, 0}, 17, "a"));
  std::vector<Lease> held = leases_->HeldByAgent("a");
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].token, 17);
}

TEST_F(LeasesTest, ALeaseReplacedByANewerGrantDoesNotExpireTheNewOne) {
  Grant({1, 0}, "a");
  clock_.Advance(ctx_.config.lease_ttl / 2);
  FencingToken newer = Grant({1, 0}, "b");
  clock_.Advance(ctx_.config.lease_ttl / 2 + Millis(1));  // the first lease's expiry passed
  leases_->Arm();
  Turn();
  EXPECT_TRUE(expired_.empty());
  EXPECT_TRUE(leases_->HeldBy({1, 0}, newer, "b"));
  clock_.Advance(ctx_.config.lease_ttl / 2);
  leases_->Arm();
  Turn();
  ASSERT_EQ(expired_.size(), 1u);
  EXPECT_EQ(expired_[0].token, newer);
}

TEST_F(LeasesTest, AReleasedLeaseNeverExpires) {
  FencingToken t = Grant({4, 0}, "a");
  std::optional<Lease> ended = leases_->Release({4, 0}, "result");
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->token, t);
  EXPECT_FALSE(leases_->Release({4, 0}, "result"));
  batch_->Flush();
  clock_.Advance(ctx_.config.lease_ttl * 2);
  leases_->Arm();
  Turn();
  EXPECT_TRUE(expired_.empty());
}

}  // namespace
}  // namespace jobctl::coordinator
