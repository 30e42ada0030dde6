#include "spawn_spec.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "running_shard.h"

namespace jobctl::agentd {
namespace {

Assignment Sample() {
  Assignment a;
  a.key = {12, 1, 2};
  a.shard_total = 3;
  a.token = 57;
  a.job = "nightly";
  a.scheduled_at = "2026-11-22T04:29:20Z";
  a.trace_id = "0af7651916cd43dd8448eb211c80319c";
  a.shell = "echo $JOB_SHARD_INDEX";
  a.env = {{"K", "V"}, {"USER", "mallory"}};
  return a;
}

SpawnContext Context() {
  return {"/usr/sbin/agentd",
          "/var/lib/agentd",
          {"svc", 1000, 1000, "/home/svc", "/bin/bash"},
          false,
          "b7ad6b7169203331"};
}

bool Has(const SpawnSpec& s, const std::string& kv) {
  return std::find(s.env.begin(), s.env.end(), kv) != s.env.end();
}

TEST(SpawnSpecTest, SetsTheJobVariablesAndTraceParent) {
  SpawnSpec s = BuildSpawnSpec(Sample(), Context());
  EXPECT_EQ(s.argv, (std::vector<std::string>{"/bin/sh", "-c", "echo $JOB_SHARD_INDEX"}));
  for (const char* kv :
       {"JOB_NAME=nightly", "JOB_RUN_ID=12", "JOB_SHARD_INDEX=1", "JOB_SHARD_TOTAL=3",
        "JOB_SCHEDULED_AT=2026-11-22T04:29:20Z", "JOB_ATTEMPT=2", "JOB_FENCING_TOKEN=57", "K=V",
        "TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}) {
    EXPECT_TRUE(Has(s, kv)) << kv;
  }
}

TEST(SpawnSpecTest, UserIdentityComesFromPasswdAndCannotBeOverridden) {
  SpawnSpec s = BuildSpawnSpec(Sample(), Context());
  EXPECT_TRUE(Has(s, "USER=svc"));
  EXPECT_TRUE(Has(s, "LOGNAME=svc"));
  EXPECT_TRUE(Has(s, "HOME=/home/svc"));
  EXPECT_TRUE(Has(s, "SHELL=/bin/bash"));
  EXPECT_TRUE(Has(s, std::string("PATH=") + kDefaultPath));
}

TEST(SpawnSpecTest, JobPathWins) {
  Assignment a = Sample();
  a.env["PATH"] = "/opt/bin";
  EXPECT_TRUE(Has(BuildSpawnSpec(a, Context()), "PATH=/opt/bin"));
}

TEST(SpawnSpecTest, CwdIsTheJobsElseTheStateDirWithoutRunAs) {
  Assignment a = Sample();
  EXPECT_EQ(BuildSpawnSpec(a, Context()).cwd, "/var/lib/agentd");
  a.cwd = "/srv";
  EXPECT_EQ(BuildSpawnSpec(a, Context()).cwd, "/srv");
}

TEST(SpawnSpecTest, RunAsGoesThroughTheExecHelperEnteringHome) {
  Assignment a = Sample();
  a.run_as = "svc";
  a.shell.clear();
  a.command = {"/usr/bin/id", "-G"};
  SpawnContext c = Context();
  c.switch_user = true;
  SpawnSpec s = BuildSpawnSpec(a, c);
  EXPECT_EQ(s.argv, (std::vector<std::string>{"/usr/sbin/agentd", "--exec-as", "svc", "--cwd",
                                              "/home/svc", "--", "/usr/bin/id", "-G"}));
  EXPECT_EQ(s.cwd, "/");
}

TEST(SpawnSpecTest, TheExecHelperStartsWithNoEnvironmentAndGetsTheJobsOnDescriptorThree) {
  Assignment a = Sample();
  a.run_as = "svc";
  a.env["LD_PRELOAD"] = "/tmp/x.so";  // as a coordinator of an older version could send
  SpawnContext c = Context();
  c.switch_user = true;
  SpawnSpec s = BuildSpawnSpec(a, c);
  EXPECT_TRUE(s.env.empty());
  EXPECT_NE(s.helper_input.find(std::string("K=V\0", 4)), std::string::npos);
  EXPECT_NE(s.helper_input.find(std::string("USER=svc\0", 9)), std::string::npos);
  EXPECT_EQ(s.helper_input.back(), '\0');
}

TEST(SpawnSpecTest, WithoutRunAsNothingGoesOnDescriptorThree) {
  SpawnSpec s = BuildSpawnSpec(Sample(), Context());
  EXPECT_TRUE(s.helper_input.empty());
  EXPECT_TRUE(Has(s, "K=V"));
}

TEST(SpawnSpecTest, AFlowStepLearnsItsFlowItsNeedsAndWhatTheyWrote) {
  Assignment a = Sample();
  a.env = {{"K", "V"}, {"DAY", "from-the-job"}};
  a.step = wire::StepContext{.flow = "nightly-etl",
                             .flow_run = 812,
                             .step = "load",
                             .needs = {{"extract", 813}, {"transform-2", 814}},
                             .outputs = {{"ROWS", "1200"}, {"DAY", "from-a-need"}}};
  SpawnContext c = Context();
  c.output_path = "/run/agentd/outputs/r12-s1-a2-0123456789abcdef";
  SpawnSpec s = BuildSpawnSpec(a, c);
  for (const char* kv :
       {"JOB_FLOW=nightly-etl", "JOB_FLOW_RUN_ID=812", "JOB_STEP=load",
        "JOB_NEED_EXTRACT_RUN_ID=813", "JOB_NEED_TRANSFORM_2_RUN_ID=814", "JOB_OUT_ROWS=1200",
        "JOB_OUT_DAY=from-a-need", "DAY=from-the-job",
        "JOB_OUTPUT=/run/agentd/outputs/r12-s1-a2-0123456789abcdef", "JOB_RUN_ID=12"}) {
    EXPECT_TRUE(Has(s, kv)) << kv;
  }
  // Outputs never take the place of the user's identity, PATH, agentd's variables or a
  // secret, even from a context no decoder checked: they are all under JOB_OUT_.
  a.step->outputs = {{"HOME", "/tmp"},
                     {"PATH", "/tmp"},
                     {"JOB_RUN_ID", "1"},
                     {"BASH_ENV", "/x"},
                     {"DB", "from-a-need"}};
  c.secrets = {{"DB", "secret"}};
  s = BuildSpawnSpec(a, c);
  for (const char* kv :
       {"HOME=/home/svc", "JOB_RUN_ID=12", "DB=secret", "JOB_OUT_DB=from-a-need"}) {
    EXPECT_TRUE(Has(s, kv)) << kv;
  }
  for (const std::string& e : s.env) {
    EXPECT_FALSE(e == "PATH=/tmp" || e.starts_with("BASH_ENV=")) << e;
  }
  c.output_path.clear();
  s = BuildSpawnSpec(a, c);
  for (const std::string& e : s.env) EXPECT_FALSE(e.starts_with("JOB_OUTPUT=")) << e;
  // A plain shard gets none of them.
  SpawnSpec plain = BuildSpawnSpec(Sample(), c);
  for (const std::string& e : plain.env) {
    EXPECT_FALSE(e.starts_with("JOB_FLOW") || e.starts_with("JOB_STEP") ||
                 e.starts_with("JOB_NEED_") || e.starts_with("JOB_OUTPUT"))
        << e;
  }
}

TEST(SpawnSpecTest, InvalidTraceIdGivesNoTraceParent) {
  EXPECT_EQ(TraceParent("00000000000000000000000000000000", "b7ad6b7169203331"), "");
  EXPECT_EQ(TraceParent("0AF7651916CD43DD8448EB211C80319C", "b7ad6b7169203331"), "");
  EXPECT_EQ(TraceParent("abc", "b7ad6b7169203331"), "");
}

TEST(ShardResultTest, OutcomeFollowsTheFirstStopReason) {
  Assignment a = Sample();
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kNone, "", {0, 0}).outcome, Outcome::kExited);
  ShardResult sig = RunningShard::ResultFor(a, StopReason::kNone, "", {0, 9});
  EXPECT_EQ(sig.outcome, Outcome::kSignaled);
  EXPECT_FALSE(sig.exit_code);
  EXPECT_NE(sig.message.find("SIGKILL"), std::string::npos) << sig.message;
  ShardResult t = RunningShard::ResultFor(a, StopReason::kTimeout, "timed out after 1s", {0, 15});
  EXPECT_EQ(t.outcome, Outcome::kTimedOut);
  EXPECT_EQ(t.message, "timed out after 1s; killed by signal 15 (SIGTERM)");
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kCanceled, "x", {1, 0}).outcome,
            Outcome::kCanceled);
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kLeaseLost, "x", {0, 15}).outcome,
            Outcome::kLeaseLost);
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kDraining, "x", {0, 15}).outcome,
            Outcome::kLeaseLost);
}

// The kernel killed a process of the run for its memory_max: its own outcome, unless the
// shard succeeded anyway or was being stopped for another reason.
TEST(ShardResultTest, AnOutOfMemoryKillIsItsOwnOutcomeNamingTheLimit) {
  Assignment a = Sample();
  a.limits.memory_max_bytes = int64_t{512} << 20;
  ExitInfo oom{.exit_status = 0, .term_signal = 9, .out_of_memory = true};
  ShardResult r = RunningShard::ResultFor(a, StopReason::kNone, "", oom);
  EXPECT_EQ(r.outcome, Outcome::kOutOfMemory);
  EXPECT_EQ(r.message, "killed: out of memory (memory_max 512MiB); killed by signal 9 (SIGKILL)");
  ExitInfo child_oom{.exit_status = 137, .term_signal = 0, .out_of_memory = true};
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kNone, "", child_oom).outcome,
            Outcome::kOutOfMemory);
  ExitInfo survived{.exit_status = 0, .term_signal = 0, .out_of_memory = true};
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kNone, "", survived).outcome, Outcome::kExited);
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kTimeout, "t", oom).outcome, Outcome::kTimedOut);
  // Without a memory_max of its own, an OOM kill (of the machine, of agentd's unit) is a signal.
  a.limits = {};
  EXPECT_EQ(RunningShard::ResultFor(a, StopReason::kNone, "", oom).outcome, Outcome::kSignaled);
}

}  // namespace
}  // namespace jobctl::agentd
