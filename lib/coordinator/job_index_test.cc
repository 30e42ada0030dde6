#include "coordinator/job_index.h"

#include <gtest/gtest.h>

#include <string>

#include "model/time_format.h"

namespace jobctl::coordinator {
namespace {

TEST(NameTableTest, FindsEveryNameAfterGrowingAndMissesUnknownOnes) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("job-" + std::to_string(i));
  auto name_of = [&names](uint32_t id) { return std::string_view(names[id - 1]); };
  NameTable table;
  for (uint32_t id = 1; id <= names.size(); ++id) table.Insert(names[id - 1], id, name_of);
  EXPECT_EQ(table.size(), names.size());
  EXPECT_LE(table.size() * 2, table.capacity());
  for (uint32_t id = 1; id <= names.size(); ++id) EXPECT_EQ(table.Find(names[id - 1], name_of), id);
  EXPECT_EQ(table.Find("job-5000", name_of), 0);
  EXPECT_EQ(table.Find("", name_of), 0);
}

TEST(JobIndexTest, EntriesAreFoundByIdAndNameAndKeepTheirAddressWhileJobsAreAdded) {
  JobIndex index;
  JobEntry* first = index.Add(1, "backup");
  ASSERT_NE(first, nullptr);
  first->misfire_cap = 7;
  for (int64_t id = 2; id < 5000; ++id) ASSERT_NE(index.Add(id, "j" + std::to_string(id)), nullptr);
  EXPECT_EQ(index.Find(1), first);
  EXPECT_EQ(index.FindByName("backup"), first);
  EXPECT_EQ(first->misfire_cap, 7);
  EXPECT_EQ(first->name, "backup");
  EXPECT_EQ(index.FindByName("j4999")->id, 4999);
  EXPECT_EQ(index.size(), 4999u);
  EXPECT_EQ(index.Find(5000), nullptr);
  EXPECT_EQ(index.FindByName("nope"), nullptr);
}

TEST(JobIndexTest, IdsMayHaveGapsAndForEachVisitsHeldIdsInOrder) {
  JobIndex index;
  ASSERT_NE(index.Add(3000, "c"), nullptr);
  ASSERT_NE(index.Add(2, "a"), nullptr);
  ASSERT_NE(index.Add(40, "b"), nullptr);
  std::vector<int64_t> seen;
  index.ForEach([&seen](const JobEntry& e) { seen.push_back(e.id); });
  EXPECT_EQ(seen, (std::vector<int64_t>{2, 40, 3000}));
  EXPECT_EQ(index.Find(41), nullptr);
  EXPECT_EQ(index.id_limit(), 3001);
}

TEST(JobIndexTest, RefusesIdsOutOfRangeAndANameHeldByAnotherId) {
  JobIndex index;
  EXPECT_EQ(index.Add(0, "zero"), nullptr);
  EXPECT_EQ(index.Add(-5, "negative"), nullptr);
  EXPECT_EQ(index.Add(JobIndex::kMaxId + 1, "huge"), nullptr);
  JobEntry* a = index.Add(1, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(index.Add(2, "a"), nullptr);
  EXPECT_EQ(index.Add(1, "other"), nullptr);
  EXPECT_EQ(index.Add(1, "a"), a);  // the same job again: the entry to update
}

TEST(JobIndexTest, ClearForgetsEverything) {
  JobIndex index;
  JobEntry* e = index.Add(1, "a");
  index.SetTiming(*e, "*/5 * * * *", Dialect::kCron, "", 0);
  index.Clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.FindByName("a"), nullptr);
  EXPECT_EQ(index.Find(1), nullptr);
  EXPECT_EQ(index.timings(), 0u);
  EXPECT_NE(index.Add(1, "b"), nullptr);
}

TEST(JobIndexTest, JobsWithTheSameScheduleShareOneTimingAndOneCompiledSchedule) {
  JobIndex index;
  JobEntry* a = index.Add(1, "a");
  JobEntry* b = index.Add(2, "b");
  JobEntry* c = index.Add(3, "c");
  index.SetTiming(*a, "*/5 * * * *", Dialect::kCron, "Europe/Berlin", 0);
  index.SetTiming(*b, "*/5 * * * *", Dialect::kCron, "Europe/Berlin", 0);
  index.SetTiming(*c, "*/5 * * * *", Dialect::kCron, "", 0);
  EXPECT_EQ(a->timing, b->timing);
  EXPECT_NE(a->timing, c->timing);
  EXPECT_EQ(index.timings(), 2u);
  EXPECT_EQ(index.ScheduleText(*c), "*/5 * * * *");
  auto sa = index.ScheduleOf(*a);
  auto sb = index.ScheduleOf(*b);
  ASSERT_TRUE(sa.ok());
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sa->get(), sb->get());
  EXPECT_EQ((*sa)->zone().name(), "Europe/Berlin");
}

TEST(JobIndexTest, HashedSchedulesDependOnTheJobName) {
  // Parse each the way the job file does, and compare with what the index compiles.
  JobIndex index;
  for (int64_t id = 1; id <= 20; ++id) {
    std::string name = "job-" + std::to_string(id);
    JobEntry* e = index.Add(id, name);
    index.SetTiming(*e, "H H * * *", Dialect::kCron, "", 0);
    auto compiled = index.ScheduleOf(*e);
    ASSERT_TRUE(compiled.ok());
    auto expected = Schedule::Parse({.expr = "H H * * *", .hash_key = name});
    ASSERT_TRUE(expected.ok());
    WallTime t = FromUnixMs(1'767'225'600'000);
    EXPECT_EQ((*compiled)->Next(t), expected->Next(t)) << name;
  }
  EXPECT_EQ(index.timings(), 1u);
}

TEST(JobIndexTest, AnchoredEverySchedulesFollowTheJobsAnchor) {
  JobIndex index;
  JobEntry* a = index.Add(1, "a");
  JobEntry* b = index.Add(2, "b");
  index.SetTiming(*a, "@every 1m", Dialect::kCron, "", 1'000);
  index.SetTiming(*b, "@every 1m", Dialect::kCron, "", 17'000);
  EXPECT_EQ(a->timing, b->timing);
  WallTime t = FromUnixMs(60'000'000);
  EXPECT_EQ(ToUnixMs(*(*index.ScheduleOf(*a))->Next(t)), 60'001'000);
  EXPECT_EQ(ToUnixMs(*(*index.ScheduleOf(*b))->Next(t)), 60'017'000);
}

TEST(JobIndexTest, AJobWithoutScheduleIsNotSchedulableAndSaysSo) {
  JobIndex index;
  JobEntry* e = index.Add(1, "manual");
  EXPECT_FALSE(e->schedulable());
  EXPECT_FALSE(index.ScheduleOf(*e).ok());
  index.SetTiming(*e, "0 0 * * *", Dialect::kCron, "", 0);
  EXPECT_TRUE(e->schedulable());
  index.SetTiming(*e, "", Dialect::kCron, "", 0);
  EXPECT_FALSE(e->schedulable());
  EXPECT_EQ(index.ScheduleText(*e), "");
}

TEST(JobIndexTest, AScheduleThatNoLongerCompilesIsAnError) {
  JobIndex index;
  JobEntry* e = index.Add(1, "a");
  index.SetTiming(*e, "0 0 * * *", Dialect::kCron, "Nowhere/Atlantis", 0);
  EXPECT_TRUE(e->schedulable());
  EXPECT_FALSE(index.ScheduleOf(*e).ok());
}

}  // namespace
}  // namespace jobctl::coordinator
