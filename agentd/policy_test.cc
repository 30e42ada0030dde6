#include "policy.h"

#include <gtest/gtest.h>

namespace jobctl::agentd {
namespace {

Assignment Command(std::vector<std::string> argv, std::string run_as = "") {
  Assignment a;
  a.command = std::move(argv);
  a.run_as = std::move(run_as);
  return a;
}

const AgentUser kRoot{"root", true};
const AgentUser kPlain{"agent", false};

TEST(PolicyTest, JobWithoutRunAsRunsAsAgentdsOwnUser) {
  EXPECT_TRUE(CheckPolicy(Command({"/bin/true"}), {}, kPlain).ok());
}

TEST(PolicyTest, JobWithoutRunAsUnderARootAgentNeedsRootListed) {
  Status s = CheckPolicy(Command({"/bin/true"}), {{"www-data"}, {}}, kRoot);
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(s.message().find("would run as root"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckPolicy(Command({"/bin/true"}), {{"root"}, {}}, kRoot).ok());
}

TEST(PolicyTest, RunAsRootIsRefusedUnlessListed) {
  Status s = CheckPolicy(Command({"/bin/true"}, "root"), {{"www-data"}, {}}, kRoot);
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(s.message().find("root is not in allow_run_as"), std::string::npos);
  EXPECT_TRUE(CheckPolicy(Command({"/bin/true"}, "root"), {{"root"}, {}}, kRoot).ok());
}

TEST(PolicyTest, RunAsMustBeListed) {
  Assignment a = Command({"/bin/true"}, "www-data");
  EXPECT_FALSE(CheckPolicy(a, {}, kRoot).ok());
  EXPECT_TRUE(CheckPolicy(a, {{"www-data"}, {}}, kRoot).ok());
}

TEST(PolicyTest, NonRootAgentRunsAsItselfButCannotSwitch) {
  EXPECT_TRUE(CheckPolicy(Command({"/bin/true"}), {}, kPlain).ok());
  EXPECT_TRUE(CheckPolicy(Command({"/bin/true"}, "agent"), {}, kPlain).ok());
  Status s = CheckPolicy(Command({"/bin/true"}, "www-data"), {{"www-data"}, {}}, kPlain);
  EXPECT_NE(s.message().find("cannot switch"), std::string::npos) << s.message();
}

TEST(PolicyTest, NeedsExactlyOneOfCommandAndShell) {
  Assignment neither;
  EXPECT_FALSE(CheckPolicy(neither, {}, kPlain).ok());
  Assignment both = Command({"/bin/true"});
  both.shell = "true";
  EXPECT_FALSE(CheckPolicy(both, {}, kPlain).ok());
  EXPECT_FALSE(CheckPolicy(Command({""}), {}, kPlain).ok());
}

TEST(PolicyTest, AllowCommandsMatchesWholePathComponents) {
  Policy p{{}, {"/opt/jobs", "/usr/local/bin/"}};
  EXPECT_TRUE(CheckPolicy(Command({"/opt/jobs/report"}), p, kPlain).ok());
  EXPECT_TRUE(CheckPolicy(Command({"/usr/local/bin/x"}), p, kPlain).ok());
  EXPECT_FALSE(CheckPolicy(Command({"/opt/jobsx/evil"}), p, kPlain).ok());
  EXPECT_FALSE(CheckPolicy(Command({"/bin/rm"}), p, kPlain).ok());
}

TEST(PolicyTest, AllowCommandsRefusesRelativeAndDotDotPaths) {
  Policy p{{}, {"/opt/jobs"}};
  EXPECT_FALSE(CheckPolicy(Command({"report"}), p, kPlain).ok());
  EXPECT_FALSE(CheckPolicy(Command({"/opt/jobs/../../bin/sh"}), p, kPlain).ok());
  EXPECT_FALSE(CheckPolicy(Command({"/opt/jobs//x"}), p, kPlain).ok());
}

TEST(PolicyTest, ShellJobsNeedBinShAllowed) {
  Assignment a;
  a.shell = "echo hi";
  EXPECT_FALSE(CheckPolicy(a, {{}, {"/opt/jobs"}}, kPlain).ok());
  EXPECT_TRUE(CheckPolicy(a, {{}, {"/opt/jobs", "/bin/sh"}}, kPlain).ok());
  EXPECT_TRUE(CheckPolicy(a, {}, kPlain).ok());
}

}  // namespace
}  // namespace jobctl::agentd
