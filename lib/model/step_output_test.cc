// Step outputs: what a $JOB_OUTPUT file may hold, and how a step's outputs are merged from its
// shards and its needs.
#include "model/step_output.h"

#include <gtest/gtest.h>

#include <vector>

namespace jobctl {
namespace {

TEST(StepOutputTest, ReadsKeyValueLinesSkippingCommentsAndBlankLines) {
  Result<StepOutputs> out = ParseStepOutput(
      "# written by extract\n"
      "ROWS=1200\n"
      "\n"
      "DAY=2026-03-01\r\n"
      "QUERY=a=b and c\n"
      "EMPTY=\n"
      "ROWS=1300");  // a later line wins; the last line needs no newline
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            (StepOutputs{
                {"ROWS", "1300"}, {"DAY", "2026-03-01"}, {"QUERY", "a=b and c"}, {"EMPTY", ""}}));
  EXPECT_EQ(ParseStepOutput("")->size(), 0u);
}

TEST(StepOutputTest, NamesTheLineAndWhatIsWrongWithIt) {
  struct Case {
    std::string text, message;
  };
  for (const Case& c : std::vector<Case>{
           {"A=1\njust words\n", "line 2: expected KEY=value, got \"just words\""},
           {"=1\n", "line 1: key \"\": invalid variable name"},
           {"1ABC=x\n", "line 1: key \"1ABC\": invalid variable name"},
           {"A B=x\n", "line 1: key \"A B\": invalid variable name"},
           {"\n\nPATH=/tmp\n", "line 3: key \"PATH\": refused"},
           {"LD_PRELOAD=/tmp/x.so\n", "line 1: key \"LD_PRELOAD\": refused"},
           {"JOB_RUN_ID=7\n", "line 1: key \"JOB_RUN_ID\": reserved"},
           {"JOB_ANYTHING=7\n", "line 1: key \"JOB_ANYTHING\": reserved"},
           {"BASH_ENV=/tmp/x\n", "line 1: key \"BASH_ENV\": refused"},
           {"PYTHONPATH=/tmp\n", "line 1: key \"PYTHONPATH\": refused"},
           {"NODE_OPTIONS=--require /tmp/x\n", "line 1: key \"NODE_OPTIONS\": refused"},
           {"A=ok\nCITY=M\xfcnchen\n", "line 2: is not UTF-8"},
           {"A=\xed\xa0\x80\n", "line 1: is not UTF-8"},  // a surrogate
           {"A=\xc0\xaf\n", "line 1: is not UTF-8"},      // an overlong "/"
           {std::string("A=x\0y\n", 6), "line 1: holds a NUL byte"},
       }) {
    Result<StepOutputs> out = ParseStepOutput(c.text);
    ASSERT_FALSE(out.ok()) << c.text;
    EXPECT_EQ(out.status().code(), Status::Code::kInvalidArgument) << c.text;
    EXPECT_EQ(out.status().message().rfind(c.message, 0), 0u)
        << c.text << " -> " << out.status().message();
  }
}

TEST(StepOutputTest, ValuesAreThoseAFileCouldHold) {
  EXPECT_EQ(OutputValueProblem("M\xc3\xbcnchen \xf0\x9f\x98\x80"), "");
  EXPECT_NE(OutputValueProblem("a\nb"), "");
  EXPECT_NE(OutputValueProblem(std::string("a\0b", 3)), "");
  EXPECT_NE(OutputValueProblem("a\r"), "");
  EXPECT_NE(OutputValueProblem("\xff"), "");
  EXPECT_NE(OutputValueProblem(std::string(kMaxStepOutputBytes + 1, 'x')), "");
}

TEST(StepOutputTest, AFileOverTheLimitIsRefusedWhole) {
  std::string at_limit = "A=" + std::string(kMaxStepOutputBytes - 2, 'x');
  Result<StepOutputs> out = ParseStepOutput(at_limit);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at("A").size(), kMaxStepOutputBytes - 2);
  out = ParseStepOutput(at_limit + "x");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Status::Code::kResourceExhausted);
  EXPECT_NE(out.status().message().find("65537 bytes, over the limit of 65536"), std::string::npos)
      << out.status().message();
}

TEST(StepOutputTest, ALaterLayerWinsPerKey) {
  std::vector<StepOutputs> layers = {{{"A", "1"}, {"B", "1"}}, {{"B", "2"}, {"C", "2"}}, {}};
  EXPECT_EQ(MergeOutputs(layers), (StepOutputs{{"A", "1"}, {"B", "2"}, {"C", "2"}}));
  EXPECT_EQ(MergeOutputs({}), StepOutputs{});
}

TEST(StepOutputTest, WhatAStepReceivesIsBounded) {
  std::string half(kMaxNeededOutputBytes / 2 - 1, 'x');
  std::vector<StepOutputs> needs = {{{"A", half}}, {{"B", half}}};
  Result<StepOutputs> got = NeededOutputs(needs);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(OutputBytes(*got), kMaxNeededOutputBytes);
  needs.push_back({{"C", ""}});
  got = NeededOutputs(needs);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kResourceExhausted);
  // The same key from two needs counts once: the later need's value.
  needs = {{{"A", half}}, {{"A", half}}, {{"B", half}}};
  EXPECT_TRUE(NeededOutputs(needs).ok());
}

TEST(StepOutputTest, FormattedOutputsReadBackTheSame) {
  StepOutputs outputs = {{"A", "1"}, {"B", "x=y # not a comment"}, {"EMPTY", ""}};
  Result<StepOutputs> back = ParseStepOutput(FormatStepOutput(outputs));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, outputs);
  // Also a file at the limit.
  Result<StepOutputs> full = ParseStepOutput("A=" + std::string(kMaxStepOutputBytes - 2, 'x'));
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  back = ParseStepOutput(FormatStepOutput(*full));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *full);
}

}  // namespace
}  // namespace jobctl
