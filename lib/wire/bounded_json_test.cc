#include "wire/bounded_json.h"

#include <gtest/gtest.h>

#include <string>

namespace jobctl::wire {
namespace {

std::string Nested(int levels, char open, char close) {
  return std::string(static_cast<size_t>(levels), open) +
         std::string(static_cast<size_t>(levels), close);
}

TEST(BoundedJsonTest, ParsesJsonAtTheDepthLimit) {
  nlohmann::json j = ParseJson(Nested(kMaxJsonDepth, '[', ']'));
  EXPECT_FALSE(j.is_discarded());
  EXPECT_TRUE(ParseJsonOr(R"({"a":[{"b":1}]})").ok());
}

TEST(BoundedJsonTest, RefusesJsonOneLevelDeeperThanTheLimit) {
  EXPECT_TRUE(ParseJson(Nested(kMaxJsonDepth + 1, '[', ']')).is_discarded());
  Result<nlohmann::json> r = ParseJsonOr(Nested(kMaxJsonDepth + 1, '[', ']'));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper than 64"), std::string::npos);
}

// 100,000 levels is what overflowed the coordinator's stack; refusing it must not build it.
TEST(BoundedJsonTest, RefusesAHundredThousandNestedArraysAndObjects) {
  EXPECT_TRUE(ParseJson(Nested(100'000, '[', ']')).is_discarded());
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100'000, '}');
  EXPECT_TRUE(ParseJson(objects).is_discarded());
}

TEST(BoundedJsonTest, BracketsInsideStringsDoNotCount) {
  std::string text = "{\"a\":\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  nlohmann::json j = ParseJson(text);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["a"].get<std::string>().size(), 2001u);
}

TEST(BoundedJsonTest, NotJsonIsDiscarded) {
  EXPECT_TRUE(ParseJson("{").is_discarded());
  EXPECT_TRUE(ParseJson("]]]]").is_discarded());
  EXPECT_FALSE(ParseJsonOr("nope").ok());
}

}  // namespace
}  // namespace jobctl::wire
