#include "result_journal.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"

namespace jobctl::agentd {
namespace {

class ResultJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/agentd-journal-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = std::string(tmpl) + "/results";
  }
  void TearDown() override {
    std::filesystem::remove_all(std::filesystem::path(dir_).parent_path());
  }

  static std::string Json(AttemptKey key, int64_t exit_code, std::string message = "") {
    ShardResult r;
    r.key = key;
    r.token = key.run * 10;
    r.exit_code = exit_code;
    r.message = std::move(message);
    return ResultToJson(r, "a1");
  }
  // What a restarted agentd finds.
  std::map<AttemptKey, std::string> Reopen() {
    ResultJournal again(dir_);
    Result<std::map<AttemptKey, std::string>> left = again.Open();
    EXPECT_TRUE(left.ok()) << left.status().ToString();
    return left.ok() ? *left : std::map<AttemptKey, std::string>{};
  }
  std::string Contents() const {
    std::ifstream in(dir_ + "/journal");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
};

TEST_F(ResultJournalTest, ARestartFindsWhatWasWrittenAndNotSettledInItsLastVersion) {
  ResultJournal j(dir_);
  ASSERT_TRUE(j.Open().ok());
  EXPECT_EQ(std::filesystem::status(dir_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  AttemptKey a{1, 0, 1}, b{2, 3, 1}, c{2, 3, 2};
  ASSERT_TRUE(j.Put(a, Json(a, 0)).ok());
  ASSERT_TRUE(j.Put(b, Json(b, 1)).ok());
  ASSERT_TRUE(j.Put(a, Json(a, 7, "rewritten")).ok());
  ASSERT_TRUE(j.Put(c, Json(c, 2)).ok());
  ASSERT_TRUE(j.Remove(b).ok());
  std::map<AttemptKey, std::string> left = Reopen();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[a], Json(a, 7, "rewritten"));
  EXPECT_EQ(left[c], Json(c, 2));
  // The reopening rewrote the journal with only those two.
  EXPECT_EQ(Contents(), "+" + Json(a, 7, "rewritten") + "\n+" + Json(c, 2) + "\n");
}

// agentd killed in the middle of a write leaves a line without its newline: it is skipped,
// and what comes after the restart is read as it should be.
TEST_F(ResultJournalTest, ALastRecordCutShortByACrashIsSkipped) {
  AttemptKey a{1, 0, 1}, b{5, 0, 1}, c{6, 0, 1};
  {
    ResultJournal j(dir_);
    ASSERT_TRUE(j.Open().ok());
    ASSERT_TRUE(j.Put(a, Json(a, 0)).ok());
    std::string torn = "+" + Json(b, 0);
    std::ofstream(dir_ + "/journal", std::ios::app) << torn.substr(0, torn.size() / 2);
  }
  {
    ResultJournal j(dir_);
    Result<std::map<AttemptKey, std::string>> left = j.Open();
    ASSERT_TRUE(left.ok());
    ASSERT_EQ(left->size(), 1u);
    EXPECT_TRUE(left->count(a));
    ASSERT_TRUE(j.Put(c, Json(c, 4)).ok());
  }
  std::map<AttemptKey, std::string> left = Reopen();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[c], Json(c, 4));
}

TEST_F(ResultJournalTest, LinesThatDoNotReadAreSkippedAndTheRestKept) {
  AttemptKey a{1, 0, 1};
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ + "/journal")
      << "+{not json\n-x y z\n?\n\n+" << Json(a, 3) << "\n-9 0 1\n-1 0 1 2\n- 1 0 1\n-1 0\n";
  std::map<AttemptKey, std::string> left = Reopen();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[a], Json(a, 3));
}

// An agentd upgraded from the layout of one file per result reports those results too.
TEST_F(ResultJournalTest, ResultFilesOfAnOlderAgentdAreTakenIntoTheJournalAndRemoved) {
  AttemptKey a{4, 1, 2};
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ + "/r4-s1-a2.json") << nlohmann::json::parse(Json(a, 9)).dump(2) << "\n";
  std::ofstream(dir_ + "/r5-s0-a1.json.tmp") << "half";
  std::ofstream(dir_ + "/r6-s0-a1.json") << "not a result";
  ResultJournal j(dir_);
  Result<std::map<AttemptKey, std::string>> left = j.Open();
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(nlohmann::json::parse((*left)[a]), nlohmann::json::parse(Json(a, 9)));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/r4-s1-a2.json"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/r5-s0-a1.json.tmp"));
  EXPECT_EQ(Reopen().size(), 1u);
}

// Results come and go by the thousand: the journal is rewritten with what is live once it is
// mostly settled results, and a restart then still finds exactly the live ones.
TEST_F(ResultJournalTest, AJournalMostlyOfSettledResultsIsRewrittenWithTheLiveOnes) {
  ResultJournal j(dir_);
  ASSERT_TRUE(j.Open().ok());
  AttemptKey kept{1, 0, 1};
  std::string kept_json = Json(kept, 0, std::string(500, 'k'));
  ASSERT_TRUE(j.Put(kept, kept_json).ok());
  int64_t run = 2;
  while (!j.WantsRewrite()) {
    AttemptKey k{run++, 0, 1};
    ASSERT_TRUE(j.Put(k, Json(k, 0, std::string(500, 'x'))).ok());
    ASSERT_TRUE(j.Remove(k).ok());
    ASSERT_LT(run, 100'000);
  }
  EXPECT_GE(j.bytes(), ResultJournal::kMinRewriteBytes);
  ASSERT_TRUE(j.Rewrite({{kept, &kept_json}}).ok());
  EXPECT_EQ(j.bytes(), static_cast<int64_t>(kept_json.size()) + 2);
  EXPECT_FALSE(j.WantsRewrite());
  AttemptKey next{run, 0, 1};
  ASSERT_TRUE(j.Put(next, Json(next, 1)).ok());
  std::map<AttemptKey, std::string> left = Reopen();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[kept], kept_json);
  EXPECT_TRUE(left.count(next));
}

// A journal that cannot be rewritten at start (here its temporary file cannot be made) is
// appended to as it is, its torn last line ended first: nothing of it is lost.
TEST_F(ResultJournalTest, AJournalThatCannotBeRewrittenIsAppendedToAsItIs) {
  AttemptKey a{1, 0, 1}, c{3, 0, 1};
  std::filesystem::create_directories(dir_ + "/journal.tmp");
  std::ofstream(dir_ + "/journal.tmp/in-the-way") << "x";
  std::ofstream(dir_ + "/journal") << "+" << Json(a, 0) << "\n+{\"run\":2,\"sha";
  {
    ResultJournal j(dir_);
    Result<std::map<AttemptKey, std::string>> left = j.Open();
    ASSERT_TRUE(left.ok()) << left.status().ToString();
    EXPECT_EQ(left->size(), 1u);
    ASSERT_TRUE(j.Put(c, Json(c, 5)).ok());
    ASSERT_TRUE(j.Remove(a).ok());
  }
  std::filesystem::remove_all(dir_ + "/journal.tmp");
  std::map<AttemptKey, std::string> left = Reopen();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[c], Json(c, 5));
}

// A journal that is there but cannot be read is not taken for an empty one.
TEST_F(ResultJournalTest, AJournalThatCannotBeReadFailsTheOpenAndStaysAsItIs) {
  std::filesystem::create_directories(dir_ + "/journal");  // read(2) of a directory fails
  ResultJournal j(dir_);
  EXPECT_FALSE(j.Open().ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/journal"));
}

TEST_F(ResultJournalTest, AResultOfMoreThanOneLineIsRefused) {
  ResultJournal j(dir_);
  ASSERT_TRUE(j.Open().ok());
  EXPECT_FALSE(j.Put({1, 0, 1}, "{\n}").ok());
}

}  // namespace
}  // namespace jobctl::agentd
