#include "config/key_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace jobctl {
namespace {

// A table of three keys, as a config file declares one.
struct Target {
  std::string colour;
  int64_t size = 0;
  std::string region;
};

using Spec = KeySpec<Target, KeyProblems>;
using Node = toml::node;

constexpr Spec kKeys[] = {
    {"colour",
     [](const Node& n, std::string_view k, KeyProblems& p, Target& t) {
       if (auto v = n.value<std::string>())
         t.colour = *v;
       else
         p.Expected(n, k, "a string");
     }},
    {"size",
     [](const Node& n, std::string_view k, KeyProblems& p, Target& t) {
       auto v = n.value<int64_t>();
       if (!v) return p.Expected(n, k, "an integer");
       if (*v > 10) return p.Fail(n, k, "at most 10, got " + std::to_string(*v));
       t.size = *v;
     }},
    {"region",
     [](const Node& n, std::string_view, KeyProblems&, Target& t) {
       if (auto v = n.value<std::string>()) t.region = *v;
     },
     KeyPlace::kNotInDefaults},
};

Status Read(std::string_view text, Target& t, KeyScope scope = {}) {
  Result<toml::table> root = ParseTomlFile(text, "t.toml");
  if (!root.ok()) return root.status();
  KeyProblems problems("t.toml");
  ReadKeys(*root, kKeys, problems, t, scope);
  return problems.ToStatus();
}

std::string Message(std::string_view text, KeyScope scope = {}) {
  Target t;
  return Read(text, t, scope).message();
}

TEST(KeyTableTest, ReadsEveryKeyOfTheTable) {
  Target t;
  Status s = Read("colour = \"red\"\nsize = 3\nregion = \"eu\"\n", t);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(t.colour, "red");
  EXPECT_EQ(t.size, 3);
  EXPECT_EQ(t.region, "eu");
}

TEST(KeyTableTest, UnknownKeyListsTheKeysOfTheTableAtTheKey) {
  EXPECT_EQ(Message("  flavour = 1\n"),
            "t.toml:1:3: unknown key \"flavour\" (expected colour, size or region)");
}

TEST(KeyTableTest, UnknownKeyCloseToAKnownOneSuggestsIt) {
  EXPECT_EQ(Message("colur = \"red\"\n"),
            "t.toml:1:1: unknown key \"colur\" (did you mean \"colour\"?)");
}

TEST(KeyTableTest, WrongTypeNamesTheKeyAndWhatWasExpectedWithItsPlace) {
  EXPECT_EQ(Message("\ncolour = 7\n"), "t.toml:2:10: colour: expected a string");
  EXPECT_EQ(Message("size = \"big\"\n"), "t.toml:1:8: size: expected an integer");
}

TEST(KeyTableTest, ARejectedValueIsPrefixedWithItsPlaceAndKey) {
  EXPECT_EQ(Message("size = 11\n"), "t.toml:1:8: size: at most 10, got 11");
}

TEST(KeyTableTest, EveryProblemIsReportedInTheOrderOfTheFile) {
  // toml++ keeps keys sorted by name: "size" < "zz" but the file has zz first.
  EXPECT_EQ(Message("zz = 1\nsize = 11\ncolour = 1\n"),
            "t.toml:1:1: unknown key \"zz\" (expected colour, size or region)\n"
            "t.toml:2:8: size: at most 10, got 11\n"
            "t.toml:3:10: colour: expected a string");
}

TEST(KeyTableTest, KeysBelowAParentAreNamedByTheirPath) {
  EXPECT_EQ(Message("size = 11\nflavour = 1\n", {.parent = "paint"}),
            "t.toml:1:8: paint.size: at most 10, got 11\n"
            "t.toml:2:1: paint: unknown key \"flavour\" (expected colour, size or region)");
}

TEST(KeyTableTest, ATableOfDefaultsRefusesAndDoesNotListKeysThatAreNotDefaults) {
  KeyScope defaults{.parent = "defaults", .defaults_note = "set it in each item"};
  EXPECT_EQ(Message("region = \"eu\"\nflavour = 1\n", defaults),
            "t.toml:1:1: defaults.region: set it in each item\n"
            "t.toml:2:1: defaults: unknown key \"flavour\" (expected colour or size)");
}

TEST(KeyTableTest, SyntaxErrorNamesFileLineAndColumn) {
  Target t;
  Status s = Read("size = = 3\n", t);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("t.toml:1:", 0), 0u) << s.message();
}

TEST(KeyTableTest, NamesAreListedAndQuoted) {
  constexpr std::string_view kOne[] = {"a"};
  constexpr std::string_view kThree[] = {"a", "b", "c"};
  EXPECT_EQ(ListOfNames(kOne), "a");
  EXPECT_EQ(ListOfNames(kThree), "a, b or c");
  EXPECT_EQ(Quote("a\"b\n"), "\"a\\\"b\\n\"");
  EXPECT_EQ(KeyNames(std::span<const Spec>(kKeys)),
            (std::vector<std::string_view>{"colour", "size", "region"}));
}

}  // namespace
}  // namespace jobctl
