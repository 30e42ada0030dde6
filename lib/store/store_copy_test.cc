// CopyToPostgres against a real PostgreSQL server (testlib/postgres.h): an embedded store
// filled through the Store and LogStore interfaces reads back the same, ids included,
// through the PostgreSQL backend; new ids come after the copied ones; the fencing counter
// is kept; a target that holds jobctl data, or is held by a coordinator, is refused and left
// as it was.
#include "store/store_copy.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/log_store.h"
#include "store/store.h"
#include "testlib/postgres.h"

namespace jobctl::store {
namespace {

std::string Opt(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "null"; }

// Every row a Store holds, one line each, as read through its interface.
std::vector<std::string> Dump(Store& s) {
  std::vector<std::string> out;
  for (const char* counter : {"fence", "other"}) {
    out.push_back(std::string("counter ") + counter + "=" + std::to_string(*s.GetCounter(counter)));
  }
  Result<RevisionRow> rev = s.CurrentRevision();
  out.push_back("revision " + std::to_string(rev->id) + " " + rev->text + " " + rev->author + " " +
                std::to_string(rev->at_ms));
  std::vector<int64_t> jobs;
  EXPECT_TRUE(s.ForEachJob([&](JobRow&& j) {
                 jobs.push_back(j.id);
                 out.push_back(
                     "job " + std::to_string(j.id) + " " + j.name + " " + j.spec_json +
                     " active=" + std::to_string(j.active) + " paused=" + std::to_string(j.paused) +
                     " next=" + Opt(j.next_fire_ms) + " rev=" + std::to_string(j.revision) + " " +
                     j.timing.schedule + " " + j.timing.timezone +
                     " enabled=" + std::to_string(j.timing.enabled) +
                     " cap=" + std::to_string(j.timing.misfire_cap));
               }).ok());
  std::vector<int64_t> runs;
  EXPECT_TRUE(
      s.ForEachRun([&](RunRecord&& r) {
         runs.push_back(r.id);
         out.push_back("run " + std::to_string(r.id) + " job=" + std::to_string(r.job_id) + " " +
                       r.job + " " + std::string(RunReasonName(r.reason)) + " " +
                       std::string(RunStateName(r.state)) + " " + std::to_string(r.scheduled_ms) +
                       " " + r.trace_id + " key=" + r.idempotency_key + " env=" + r.env_json +
                       " note=" + r.note + " fin=" + Opt(r.finished_ms) +
                       " nb=" + std::to_string(r.not_before_ms));
         for (const ShardRecord& sh : r.shards) {
           out.push_back("  shard " + std::to_string(sh.run_id) + "/" + std::to_string(sh.index) +
                         " " + std::string(RunStateName(sh.state)) +
                         " a=" + std::to_string(sh.attempt) + " " + sh.agent +
                         " t=" + std::to_string(sh.token) + " exit=" + Opt(sh.exit_code) + " " +
                         sh.outcome + " " + sh.message + " " + Opt(sh.started_ms) + " " +
                         Opt(sh.finished_ms) + " lost=" + std::to_string(sh.lost_count));
         }
       }).ok());
  for (int64_t job : jobs) {
    Result<std::vector<MissRow>> misses = s.ListMisses(job, 0);
    for (const MissRow& m : *misses) {
      out.push_back("miss " + std::to_string(m.job_id) + " " + std::to_string(m.first_ms) + " " +
                    std::to_string(m.last_ms) + " " + std::to_string(m.count) + " " + m.reason);
    }
  }
  for (int64_t run : runs) {
    Result<std::vector<OutputEndRow>> ends = s.OutputEnds(run);
    for (const OutputEndRow& e : *ends) {
      out.push_back("end " + std::to_string(e.run_id) + "/" + std::to_string(e.shard) + "/" +
                    std::to_string(e.attempt) + " " + std::to_string(e.last_seq) + " " + e.agent +
                    " " + std::to_string(e.token));
    }
  }
  EXPECT_TRUE(s.ForEachLease([&](LeaseRow&& l) {
                 out.push_back("lease " + l.key + " " + l.holder + " " + std::to_string(l.token));
               }).ok());
  EXPECT_TRUE(s.ForEachAgent([&](AgentRow&& a) {
                 out.push_back("agent " + a.name + " " + a.labels_json + " " +
                               std::to_string(a.slots) + " " + a.version +
                               " draining=" + std::to_string(a.draining));
               }).ok());
  EXPECT_TRUE(s.ForEachToken([&](TokenRow&& t) {
                 out.push_back("token " + std::to_string(t.id) + " " + t.name + " " + t.role + " " +
                               t.jobs + " " + t.hash + " " + Opt(t.revoked_ms) + " " + t.agent +
                               " " + t.labels_json + " " + Opt(t.expires_ms));
               }).ok());
  Result<std::vector<EventRow>> events = s.ListEvents({.limit = 1000});
  for (const EventRow& e : *events) {
    out.push_back("event " + std::to_string(e.id) + " " + e.kind + " " + e.actor + " " +
                  Opt(e.token_id) + " " + e.subject + " " + e.detail);
  }
  Result<std::vector<NotificationRow>> notes = s.ListNotifications({.limit = 1000});
  for (const NotificationRow& n : *notes) {
    out.push_back("notification " + std::to_string(n.id) + " " + std::to_string(n.created_ms) +
                  " " + n.job + " " + std::to_string(n.run_id) + " " + n.event + " " +
                  std::to_string(n.reminder) + " " + std::to_string(n.failures) + " " + n.detail +
                  " " + n.target + " " + n.state + " " + std::to_string(n.attempts) + " " +
                  std::to_string(n.next_ms) + " " + std::to_string(n.done_ms) + " " + n.last_error);
  }
  EXPECT_TRUE(s.ForEachAlertState([&](int64_t job, const AlertState& a) {
                 out.push_back("alert " + std::to_string(job) + " " +
                               std::to_string(a.failing_since_ms) + " " +
                               std::to_string(a.failures) + " " + std::to_string(a.last_sent_ms) +
                               " " + std::to_string(a.agent_lost_sent_ms));
               }).ok());
  return out;
}

std::vector<std::string> DumpLogs(LogStore& l, const std::vector<int64_t>& runs) {
  std::vector<std::string> out;
  for (int64_t run : runs) {
    out.push_back("bytes " + std::to_string(run) + "=" + std::to_string(*l.RunBytes(run)));
    // The retention accounting: its job, bytes kept, last write and whether it was pruned.
    if (std::optional<RunOutput> o = *l.OutputOf(run)) {
      out.push_back(
          "output " + std::to_string(run) + " job=" + std::to_string(o->job_id) +
          " bytes=" + std::to_string(o->bytes) + " stored=" + std::to_string(o->stored_bytes) +
          " last=" + std::to_string(o->last_ms) + " truncated=" + std::to_string(o->truncated) +
          " pruned=" + std::to_string(o->pruned_ms.value_or(-1)) + " " + o->pruned_reason);
    }
    Result<std::vector<LogChunk>> chunks = l.Read({.run_id = run});
    for (const LogChunk& c : *chunks) {
      out.push_back("chunk " + std::to_string(c.id) + " " + std::to_string(c.run_id) + "/" +
                    std::to_string(c.shard) + "/" + std::to_string(c.attempt) + "/" +
                    std::to_string(c.seq) + " s=" + std::to_string(static_cast<int>(c.stream)) +
                    " " + std::to_string(c.at_ms) + " [" + c.data + "]");
    }
  }
  return out;
}

class StoreCopyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<std::unique_ptr<jobctl::testing::PostgresServer>> s =
        jobctl::testing::PostgresServer::Start();
    if (s.ok()) {
      server_ = std::move(*s);
    } else {
      why_not_ = s.status().ToString();
    }
  }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    if (server_ == nullptr) {
      if (jobctl::testing::RunningInCi()) FAIL() << why_not_;
      GTEST_SKIP() << "PostgreSQL not available: " << why_not_;
    }
    static int databases = 0;
    std::string name = "c" + std::to_string(++databases);
    ASSERT_TRUE(server_->CreateDatabase(name).ok());
    url_ = server_->Url(name);
    char tmpl[] = "/tmp/jobctl-store-copy-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // An embedded store with a little of everything; the ids of its runs.
  std::vector<int64_t> Fill() {
    Result<std::unique_ptr<Store>> opened = OpenStore({.path = dir_ + "/jobctl.db"});
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    Store& s = **opened;
    EXPECT_TRUE(s.Begin().ok());
    EXPECT_TRUE(s.SetCounter("fence", 41).ok());
    EXPECT_TRUE(s.InsertRevision("[jobs.a]\n", "alice", 1000, "+a +b").ok());
    JobTiming timing{.schedule = "*/5 * * * *", .timezone = "Europe/Paris", .misfire_cap = 7};
    int64_t a = *s.InsertJob({0, "a", "{\"x\":1}", true, false, 300'000, 1, timing}, 1000);
    int64_t b = *s.InsertJob({0, "b", "{}", true, false, std::nullopt, 1}, 1000);
    // Gaps in the ids: a copy keeps them.
    int64_t c = *s.InsertJob({0, "c", "{}", true, false, 5, 1}, 1000);
    EXPECT_TRUE(s.SetJobPaused(b, true).ok());
    EXPECT_TRUE(s.DeactivateJob(c, 2, 2000).ok());
    timing.enabled = false;
    EXPECT_TRUE(s.UpdateJobSpec(a, "{\"x\":2}", timing, 2, 2000).ok());

    std::vector<int64_t> runs;
    for (int i = 0; i < 3; ++i) {
      RunRecord run;
      run.job_id = i == 2 ? b : a;
      run.reason = i == 1 ? RunReason::kManual : RunReason::kSchedule;
      run.scheduled_ms = 60'000 * (i + 1);
      run.created_ms = run.scheduled_ms + 1;
      run.trace_id = "0123456789abcdef0123456789abcde" + std::to_string(i);
      if (i == 1) run.idempotency_key = "deploy-7";
      if (i == 1) run.env_json = "{\"V\":\"1\"}";
      run.not_before_ms = i * 10;
      run.shard_total = i + 1;
      for (int k = 0; k <= i; ++k) run.shards.push_back({.index = k});
      EXPECT_TRUE(s.InsertRun(run).ok());
      runs.push_back(run.id);
    }
    EXPECT_TRUE(s.UpdateRunState(runs[0], RunState::kSucceeded, 61'000, "done").ok());
    ShardRecord sh{.run_id = runs[1],
                   .index = 1,
                   .state = RunState::kFailed,
                   .attempt = 2,
                   .agent = "web1",
                   .token = 40,
                   .exit_code = 3,
                   .outcome = "failed",
                   .message = "exit 3",
                   .started_ms = 120'500,
                   .finished_ms = 121'000,
                   .not_before_ms = 9,
                   .lost_count = 1};
    EXPECT_TRUE(s.UpdateShard(sh).ok());
    sh = {.run_id = runs[2],
          .index = 0,
          .state = RunState::kRunning,
          .agent = "web2",
          .token = 41,
          .started_ms = 180'100};
    EXPECT_TRUE(s.UpdateShard(sh).ok());
    EXPECT_TRUE(s.InsertMiss({a, 1000, 4000, 4, "down", 5000}).ok());
    EXPECT_TRUE(s.PutOutputEnd({runs[1], 1, 2, 12, "web1", 40}).ok());
    EXPECT_TRUE(s.PutLease({"shard/" + std::to_string(runs[2]) + "/0", "web2", 41, 180'000}).ok());
    EXPECT_TRUE(s.PutAgent({"web1", "{\"zone\":\"a\"}", 4, "1.2.0", 9000, true}).ok());
    EXPECT_TRUE(s.PutAgent({"web2", "{}", 1, "1.2.0", 9100, false}).ok());
    TokenRow admin{.name = "admin", .role = "admin", .hash = std::string(64, 'a'), .created_ms = 1};
    int64_t admin_id = *s.InsertToken(admin);
    TokenRow agent{.name = "web1",
                   .role = "agent",
                   .hash = std::string(64, 'b'),
                   .created_ms = 2,
                   .agent = "web1",
                   .labels_json = "{\"zone\":\"a*\"}",
                   .expires_ms = 99'000};
    int64_t agent_id = *s.InsertToken(agent);
    EXPECT_TRUE(s.RevokeToken(agent_id, 3000).ok());
    EXPECT_TRUE(s.InsertEvent({.at_ms = 100,
                               .kind = "apply",
                               .actor = "admin",
                               .token_id = admin_id,
                               .subject = "a",
                               .detail = "+a"})
                    .ok());
    EXPECT_TRUE(s.InsertEvent(200, "auth-failure", "", "GET /v1/jobs", "bad token").ok());
    EXPECT_TRUE(s.InsertNotification({.created_ms = 10,
                                      .job_id = 1,
                                      .job = "a",
                                      .run_id = runs[0],
                                      .event = "failed",
                                      .reminder = true,
                                      .failures = 3,
                                      .failing_since_ms = 5,
                                      .detail = "d",
                                      .target = "mailto:x@example.com",
                                      .state = "sent",
                                      .attempts = 2,
                                      .next_ms = 11,
                                      .done_ms = 12,
                                      .last_error = "e"})
                    .ok());
    EXPECT_TRUE(
        s.PutAlertState(
             1, {.failing_since_ms = 5, .failures = 3, .last_sent_ms = 10, .agent_lost_sent_ms = 4})
            .ok());
    EXPECT_TRUE(s.Commit().ok());

    Result<std::unique_ptr<LogStore>> logs =
        OpenLogStore({.path = dir_ + "/logs.db", .run_cap_bytes = 8});
    EXPECT_TRUE(logs.ok()) << logs.status().ToString();
    LogStore& l = **logs;
    EXPECT_TRUE(l.Begin().ok());
    EXPECT_TRUE(
        l.Append({.run_id = runs[0], .seq = 1, .at_ms = 7, .data = "hello\n", .job_id = 1}).ok());
    EXPECT_TRUE(l.Append({.run_id = runs[1],
                          .shard = 1,
                          .attempt = 2,
                          .seq = 1,
                          .stream = LogStream::kStderr,
                          .at_ms = 8,
                          .data = std::string("\0\xff\x1b", 3)})
                    .ok());
    // Over the cap of 8 bytes: a marker, and the run is truncated.
    EXPECT_EQ(*l.Append({.run_id = runs[1],
                         .shard = 1,
                         .attempt = 2,
                         .seq = 2,
                         .at_ms = 9,
                         .data = "0123456789"}),
              LogStore::AppendResult::kTruncated);
    // Run 999's output was pruned by retention: it stays marked once copied.
    EXPECT_TRUE(l.PruneOutput(999, 50, "logs_for 7d", 10).ok());
    EXPECT_TRUE(l.Commit().ok());
    return runs;
  }

  Result<CopyStats> Copy(bool logs = true) {
    return CopyToPostgres(
        {.path = dir_ + "/jobctl.db", .logs_path = logs ? dir_ + "/logs.db" : "", .url = url_});
  }

  static std::unique_ptr<jobctl::testing::PostgresServer> server_;
  static std::string why_not_;
  std::string url_;
  std::string dir_;
};

std::unique_ptr<jobctl::testing::PostgresServer> StoreCopyTest::server_;
std::string StoreCopyTest::why_not_;

TEST_F(StoreCopyTest, EveryRowReadsBackTheSameWithItsIdsAndNewIdsComeAfterThem) {
  std::vector<int64_t> runs = Fill();
  std::vector<std::string> want;
  std::vector<std::string> want_logs;
  {
    Result<std::unique_ptr<Store>> sqlite = OpenStore({.path = dir_ + "/jobctl.db"});
    ASSERT_TRUE(sqlite.ok());
    want = Dump(**sqlite);
    Result<std::unique_ptr<LogStore>> logs =
        OpenLogStore({.path = dir_ + "/logs.db", .run_cap_bytes = 8});
    ASSERT_TRUE(logs.ok());
    want_logs = DumpLogs(**logs, runs);
  }
  std::vector<CopyProgress> progress;
  Result<CopyStats> stats =
      CopyToPostgres({.path = dir_ + "/jobctl.db",
                      .logs_path = dir_ + "/logs.db",
                      .url = url_,
                      .on_progress = [&](const CopyProgress& p) { progress.push_back(p); }});
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_GT(stats->output_bytes, 6 + 3);  // the two chunks and the marker's text
  int64_t runs_copied = -1;
  int64_t chunks_copied = -1;
  for (const CopyTableStats& t : stats->tables) {
    if (t.table == "runs") runs_copied = t.rows;
    if (t.table == "log_chunks") chunks_copied = t.rows;
  }
  EXPECT_EQ(runs_copied, 3);
  EXPECT_EQ(chunks_copied, 3);  // two chunks and the truncation marker
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(progress.back().done);
  EXPECT_EQ(progress.back().table, "log_run_bytes");

  Result<std::unique_ptr<Store>> opened = OpenStore({.url = url_});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& pg = **opened;
  EXPECT_EQ(Dump(pg), want);
  Result<std::unique_ptr<LogStore>> pg_logs = OpenLogStore({.url = url_, .run_cap_bytes = 8});
  ASSERT_TRUE(pg_logs.ok()) << pg_logs.status().ToString();
  EXPECT_EQ(DumpLogs(**pg_logs, runs), want_logs);
  EXPECT_EQ(want_logs[1], "output " + std::to_string(runs[0]) +
                              " job=1 bytes=6 stored=6 last=7 truncated=0 pruned=-1 ");
  Result<std::optional<RunOutput>> pruned = (*pg_logs)->OutputOf(999);
  ASSERT_TRUE(pruned.ok() && pruned->has_value()) << pruned.status().ToString();
  EXPECT_EQ((*pruned)->pruned_ms, 50);
  EXPECT_EQ((*pruned)->pruned_reason, "logs_for 7d");

  // The next ids follow the copied ones, and the fencing counter goes on from where it was.
  EXPECT_EQ(*pg.GetCounter("fence"), 41);
  ASSERT_TRUE(pg.Begin().ok());
  RunRecord next;
  next.job_id = 1;
  next.reason = RunReason::kManual;
  next.trace_id = std::string(32, 'f');
  next.shards.push_back({.index = 0});
  ASSERT_TRUE(pg.InsertRun(next).ok());
  EXPECT_EQ(next.id, runs.back() + 1);
  Result<int64_t> job = pg.InsertJob({0, "d", "{}", true, false, std::nullopt, 3}, 3000);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(*job, 4);
  Result<int64_t> token =
      pg.InsertToken({.name = "new", .role = "read", .hash = std::string(64, 'c')});
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, 3);
  ASSERT_TRUE(pg.InsertEvent(300, "apply", "admin", "d", "").ok());
  ASSERT_TRUE(pg.Commit().ok());
  Result<std::vector<EventRow>> events = pg.ListEvents({.limit = 1});
  EXPECT_EQ((*events)[0].id, 3);

  // The truncated run stays truncated: more output is counted, not kept, and no second marker.
  LogStore& l = **pg_logs;
  ASSERT_TRUE(l.Begin().ok());
  EXPECT_EQ(*l.Append({.run_id = runs[1], .shard = 1, .attempt = 2, .seq = 3, .data = "more"}),
            LogStore::AppendResult::kTruncated);
  Result<LogStore::AppendResult> fresh = l.Append({.run_id = next.id, .seq = 1, .data = "new"});
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(*fresh, LogStore::AppendResult::kStored);
  ASSERT_TRUE(l.Commit().ok());
  Result<std::vector<LogChunk>> out = l.Read({.run_id = next.id});
  ASSERT_EQ(out->size(), 1u);
  // After the three copied chunks and the one counted over the cap (kept empty, its seq).
  EXPECT_EQ((*out)[0].id, 5);
  Result<std::vector<LogChunk>> truncated = l.Read({.run_id = runs[1]});
  int markers = 0;
  for (const LogChunk& c : *truncated) {
    markers += c.stream == LogStream::kMarker && !c.data.empty() ? 1 : 0;
  }
  EXPECT_EQ(markers, 1);  // later chunks are empty markers, kept for their seq
}

TEST_F(StoreCopyTest, ManyRowsAreCopiedInBatchesAndTheRest) {
  std::vector<int64_t> runs = Fill();
  {
    Result<std::unique_ptr<Store>> s = OpenStore({.path = dir_ + "/jobctl.db"});
    ASSERT_TRUE(s.ok());
    Result<std::unique_ptr<LogStore>> l =
        OpenLogStore({.path = dir_ + "/logs.db", .run_cap_bytes = 1 << 20});
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE((*s)->Begin().ok());
    ASSERT_TRUE((*l)->Begin().ok());
    for (int i = 0; i < 250; ++i) {
      ASSERT_TRUE((*s)->InsertEvent(1000 + i, "trigger", "ci", "a", std::to_string(i)).ok());
      ASSERT_TRUE((*l)->Append({.run_id = runs[2],
                                .seq = i + 1,
                                .at_ms = i,
                                .data = std::string(static_cast<size_t>(i), 'x')})
                      .ok());
    }
    ASSERT_TRUE((*s)->Commit().ok());
    ASSERT_TRUE((*l)->Commit().ok());
  }
  std::vector<std::string> want;
  std::vector<std::string> want_logs;
  {
    Result<std::unique_ptr<Store>> s = OpenStore({.path = dir_ + "/jobctl.db"});
    ASSERT_TRUE(s.ok());
    want = Dump(**s);
    Result<std::unique_ptr<LogStore>> l = OpenLogStore({.path = dir_ + "/logs.db"});
    ASSERT_TRUE(l.ok());
    want_logs = DumpLogs(**l, runs);
  }
  Result<CopyStats> stats = Copy();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  Result<std::unique_ptr<Store>> pg = OpenStore({.url = url_});
  ASSERT_TRUE(pg.ok());
  EXPECT_EQ(Dump(**pg), want);
  Result<std::unique_ptr<LogStore>> pg_logs = OpenLogStore({.url = url_});
  ASSERT_TRUE(pg_logs.ok());
  EXPECT_EQ(DumpLogs(**pg_logs, runs), want_logs);
  // A byte count and the accounting per run, the chunks.
  EXPECT_EQ(want_logs.size(), 3 + 3 + 3 + 250u);
}

TEST_F(StoreCopyTest, WithoutLogsTheOutputIsLeftBehind) {
  std::vector<int64_t> runs = Fill();
  Result<CopyStats> stats = Copy(/*logs=*/false);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->output_bytes, 0);
  Result<std::unique_ptr<LogStore>> pg_logs = OpenLogStore({.url = url_, .run_cap_bytes = 8});
  ASSERT_TRUE(pg_logs.ok());
  EXPECT_EQ(*(*pg_logs)->RunBytes(runs[0]), 0);
  EXPECT_TRUE((*pg_logs)->Read({.run_id = runs[0]})->empty());
}

TEST_F(StoreCopyTest, ADatabaseACoordinatorUsedIsRefusedAndLeftAsItWas) {
  Fill();
  {
    Result<std::unique_ptr<Store>> used = OpenStore({.url = url_});
    ASSERT_TRUE(used.ok());
    ASSERT_TRUE((*used)->Begin().ok());
    ASSERT_TRUE((*used)->InsertToken({.name = "admin", .role = "admin", .hash = "x"}).ok());
    ASSERT_TRUE((*used)->Commit().ok());
  }
  Result<CopyStats> stats = Copy();
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), Status::Code::kConflict);
  EXPECT_NE(stats.status().message().find("already holds jobctl data (in tokens)"),
            std::string::npos)
      << stats.status().ToString();
  Result<std::unique_ptr<Store>> pg = OpenStore({.url = url_});
  ASSERT_TRUE(pg.ok());
  EXPECT_EQ(Dump(**pg).size(), 4u);  // two counters, the empty revision, the one token
}

TEST_F(StoreCopyTest, ADatabaseACoordinatorHoldsIsRefused) {
  Fill();
  Result<std::unique_ptr<Store>> holder = OpenStore({.url = url_});
  ASSERT_TRUE(holder.ok());
  Result<CopyStats> stats = Copy();
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), Status::Code::kConflict);
  EXPECT_NE(stats.status().message().find("holds the PostgreSQL database"), std::string::npos)
      << stats.status().ToString();
}

TEST_F(StoreCopyTest, AFailedCopyLeavesNothingAndCanBeRunAgain) {
  Fill();
  // A chunk PostgreSQL refuses (its stream does not fit a SMALLINT) in the last table but one:
  // everything copied before it, the scheduler's tables included, is rolled back.
  {
    Result<std::unique_ptr<LogStore>> l =
        OpenLogStore({.path = dir_ + "/logs.db", .run_cap_bytes = 8});
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE((*l)->Begin().ok());
    LogChunk bad{.run_id = 99, .seq = 1, .stream = static_cast<LogStream>(70000), .data = "x"};
    ASSERT_TRUE((*l)->Append(bad).ok());
    ASSERT_TRUE((*l)->Commit().ok());
  }
  Result<CopyStats> stats = Copy();
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("copy chunks row 4 into log_chunks"), std::string::npos)
      << stats.status().ToString();
  {
    Result<std::unique_ptr<Store>> pg = OpenStore({.url = url_});
    ASSERT_TRUE(pg.ok());
    EXPECT_EQ(Dump(**pg).size(), 3u);  // two counters at 0 and the empty revision
  }

  // Without the output, the copy runs again from the start.
  stats = Copy(/*logs=*/false);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
}

TEST_F(StoreCopyTest, AMissingStoreIsNotFound) {
  Result<CopyStats> stats = Copy();
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), Status::Code::kNotFound) << stats.status().ToString();
}

}  // namespace
}  // namespace jobctl::store
