#include "backoff.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/fake_random.h"

namespace jobctl::agentd {
namespace {

TEST(BackoffTest, CeilingDoublesUpToTheCap) {
  FakeRandom random;
  Backoff b(500, 4'000, &random);
  std::vector<int64_t> ceilings;
  for (int i = 0; i < 6; ++i) {
    ceilings.push_back(b.Ceiling());
    b.Next();
  }
  EXPECT_EQ(ceilings, (std::vector<int64_t>{500, 1'000, 2'000, 4'000, 4'000, 4'000}));
  EXPECT_EQ(b.failures(), 6);
  b.Reset();
  EXPECT_EQ(b.Ceiling(), 500);
}

TEST(BackoffTest, EachDelayIsTheInjectedDrawWithinTheCeiling) {
  // A delay is the draw modulo (ceiling + 1): uniform in [0, ceiling].
  FakeRandom random({500, 1'001, 2'100});
  Backoff b(500, 30'000, &random);
  EXPECT_EQ(b.Next(), 500);  // ceiling 500
  EXPECT_EQ(b.Next(), 0);    // ceiling 1000
  EXPECT_EQ(b.Next(), 99);   // ceiling 2000
  EXPECT_EQ(random.calls(), 3u);
}

// What the coordinator asked for (Retry-After) is a floor under the draw, not a replacement.
TEST(BackoffTest, ADelayIsAtLeastWhatTheCoordinatorAskedFor) {
  FakeRandom random({100, 1'000});
  Backoff b(500, 30'000, &random);
  EXPECT_EQ(b.Next(2'000), 2'000);  // drew 100
  EXPECT_EQ(b.Next(300), 1'000);    // drew 1000 (ceiling 1000)
  EXPECT_EQ(b.failures(), 2);
}

TEST(BackoffTest, FullJitterStaysWithinTheCeiling) {
  Backoff b(500, 30'000);
  for (int i = 0; i < 100; ++i) {
    int64_t ceiling = b.Ceiling();
    int64_t d = b.Next();
    EXPECT_GE(d, 0);
    EXPECT_LE(d, ceiling);
  }
  EXPECT_EQ(b.Ceiling(), 30'000);
}

TEST(BackoffTest, BackoffsGivenOneRandomTakeTurnsDrawingFromIt) {
  // The Agent hands its one Random to every part that backs off: their draws come from one
  // sequence, so a test that injects a FakeRandom controls all of them.
  FakeRandom random({100, 200, 300});
  Backoff enroll(1'000, 60'000, &random);
  Backoff ship(500, 30'000, &random);
  EXPECT_EQ(enroll.Next(), 100);
  EXPECT_EQ(ship.Next(), 200);
  EXPECT_EQ(enroll.Next(), 300);
  EXPECT_EQ(random.calls(), 3u);
}

}  // namespace
}  // namespace jobctl::agentd
