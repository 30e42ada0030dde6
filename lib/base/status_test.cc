#include "base/status.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, ContextIsPrependedAndCodeKept) {
  Status s = Status::Conflict("shard 3 leased").WithContext("claim run r-1");
  EXPECT_EQ(s.code(), Status::Code::kConflict);
  EXPECT_EQ(s.message(), "claim run r-1: shard 3 leased");
}

TEST(ResultTest, HoldsValueOrError) {
  Result<int> good(7);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad(Status::NotFound("no such job"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kNotFound);
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInternal);
}

}  // namespace
}  // namespace jobctl
