#include "model/env_rules.h"

#include <gtest/gtest.h>

#include "model/job.h"

namespace jobctl {
namespace {

TEST(EnvRulesTest, LoaderNamesAreRefusedWhateverTheirSpelling) {
  for (const char* name : {"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "LD_DEBUG_OUTPUT", "LD_",
                           "LD_ANYTHING_NEW", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH",
                           "HOSTALIASES", "RES_OPTIONS", "MALLOC_TRACE"}) {
    EXPECT_TRUE(IsLoaderEnvName(name)) << name;
    EXPECT_NE(EnvNameProblem(name).find("dynamic loader"), std::string::npos) << name;
  }
  for (const char* name : {"LDAP_URI", "OLD_PRELOAD", "TMPDIR", "TZ", "LANG", "PATH"}) {
    EXPECT_FALSE(IsLoaderEnvName(name)) << name;
    EXPECT_EQ(EnvNameProblem(name), "") << name;
  }
}

TEST(EnvRulesTest, NamesMustBeShellIdentifiersOfBoundedLength) {
  for (const char* bad : {"", "X=Y", "1X", "A-B", "A B", "Ä"}) {
    EXPECT_NE(EnvNameProblem(bad).find("invalid variable name"), std::string::npos) << bad;
  }
  EXPECT_EQ(EnvNameProblem(std::string(kMaxEnvNameLength, 'A')), "");
  EXPECT_NE(EnvNameProblem(std::string(kMaxEnvNameLength + 1, 'A')), "");
}

TEST(EnvRulesTest, ReservedNamesAreTheAgentsOwn) {
  EXPECT_NE(EnvNameProblem("JOB_FENCING_TOKEN").find("reserved"), std::string::npos);
  EXPECT_NE(EnvNameProblem("TRACEPARENT").find("reserved"), std::string::npos);
  for (const char* name : {"JOB_FLOW", "JOB_FLOW_RUN_ID", "JOB_STEP", "JOB_OUTPUT",
                           "JOB_NEED_EXTRACT_RUN_ID", "JOB_NEED_", "JOB_OUT_ROWS"}) {
    EXPECT_NE(EnvNameProblem(name).find("reserved"), std::string::npos) << name;
  }
  EXPECT_EQ(EnvNameProblem("JOB_NEEDED"), "");
  EXPECT_EQ(EnvNameProblem("MY_JOB_FLOW"), "");
}

TEST(EnvRulesTest, ParametersMayNotChangeIdentityOrPath) {
  for (const char* name : {"PATH", "HOME", "SHELL", "USER", "LOGNAME"}) {
    EXPECT_NE(ParamNameProblem(name), "") << name;
  }
  EXPECT_NE(ParamNameProblem("LD_PRELOAD"), "");
  EXPECT_EQ(ParamNameProblem("VERSION"), "");
}

TEST(EnvRulesTest, ResolveTakesGivenValuesThenDefaults) {
  std::map<std::string, Param> declared = {{"VERSION", {"latest", false, 16}},
                                           {"REGION", {std::nullopt, false, 16}}};
  auto env = ResolveParams(declared, {{"REGION", "eu"}});
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(*env, (std::map<std::string, std::string>{{"VERSION", "latest"}, {"REGION", "eu"}}));
  env = ResolveParams(declared, {});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*env, (std::map<std::string, std::string>{{"VERSION", "latest"}}));
}

TEST(EnvRulesTest, ResolveRefusesUndeclaredLongMissingAndNulValues) {
  std::map<std::string, Param> declared = {{"VERSION", {std::nullopt, true, 4}}};
  auto r = ResolveParams(declared, {{"VERSION", "1.0"}, {"LD_PRELOAD", "/tmp/x.so"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("\"LD_PRELOAD\" is not declared"), std::string::npos);
  r = ResolveParams(declared, {{"VERSION", "1.0.0"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over its max_length 4"), std::string::npos);
  r = ResolveParams(declared, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"VERSION\" is required"), std::string::npos);
  r = ResolveParams(declared, {{"VERSION", std::string("a\0b", 3)}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NUL"), std::string::npos);
  r = ResolveParams({}, {{"X=Y", "z"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("declares none"), std::string::npos);
}

TEST(ShardEnvTest, JobEnvThenRunValuesThenDefaults) {
  Job job;
  job.env = {{"REPORT_DIR", "/srv"}, {"VERSION", "from-env"}};
  job.params = {{"VERSION", {"latest", false, 64}}, {"REGION", {std::nullopt, false, 64}}};
  EXPECT_EQ(ShardEnv(job, {}),
            (std::map<std::string, std::string>{{"REPORT_DIR", "/srv"}, {"VERSION", "latest"}}));
  EXPECT_EQ(ShardEnv(job, {{"VERSION", "1.2"}, {"REGION", "eu"}}),
            (std::map<std::string, std::string>{
                {"REPORT_DIR", "/srv"}, {"VERSION", "1.2"}, {"REGION", "eu"}}));
}

TEST(ShardEnvTest, StoredNamesThatAreNotAllowedNeverReachAShard) {
  // As a run or job stored before these rules existed could hold them.
  Job job;
  job.env = {{"LD_PRELOAD", "/tmp/x.so"}, {"OK", "1"}, {"X=Y", "z"}};
  job.params = {{"PATH", {"/tmp", false, 64}}};
  EXPECT_EQ(ShardEnv(job, {{"LD_AUDIT", "/tmp/a.so"}, {"GLIBC_TUNABLES", "x"}}),
            (std::map<std::string, std::string>{{"OK", "1"}}));
}

}  // namespace
}  // namespace jobctl
