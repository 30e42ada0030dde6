// What jobctl and the daemons do with what they cannot trust: a job's output and names
// from elsewhere shown on a terminal (jobctl runs under a pseudo-terminal here) never drive
// it, while a pipe gets every byte; the audit trail names who did what with which token;
// secrets and state stay private to their owner whatever the umask.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "store/store.h"
#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Runs argv with its stdin, stdout and stderr on a new pseudo-terminal and returns all it
// wrote there, as a terminal would receive it (less the CR the line discipline adds before
// each newline). Exit status in *exit_code.
std::string RunOnTerminal(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, int* exit_code) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) env_text.push_back(kv);
  }
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
  args.push_back(nullptr);
  envp.push_back(nullptr);
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) throw std::runtime_error(std::string("forkpty: ") + std::strerror(errno));
  if (pid == 0) {
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child and its terminal are gone
    out.append(buf, static_cast<size_t>(n));
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string text;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\r' && i + 1 < out.size() && out[i + 1] == '\n') continue;
    text += out[i];
  }
  return text;
}

// Bytes a terminal would act on: ESC, BEL, raw 8-bit C1, C1 as UTF-8, and bytes that are
// not UTF-8 in the samples below.
bool HasRawControl(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b || c == 0x07 || c == 0x9b || c == 0x9d || c == 0xff) return true;
    if (c == 0xc2 && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xe0) == 0x80) {
      return true;
    }
  }
  return false;
}

// Every ESC starts a plain colour sequence "ESC [ digits;... m".
bool OnlyColourEscapes(const std::string& s) {
  for (size_t i = s.find('\x1b'); i != std::string::npos; i = s.find('\x1b', i + 1)) {
    if (i + 1 >= s.size() || s[i + 1] != '[') return false;
    size_t k = i + 2;
    while (k < s.size() && (std::isdigit(static_cast<unsigned char>(s[k])) || s[k] == ';')) ++k;
    if (k >= s.size() || s[k] != 'm') return false;
  }
  return true;
}

// Clear the screen, set the window title, write the clipboard (OSC 52, ended by ST), a DCS
// query, a C1 CSI in UTF-8, a colour, and a byte that is not UTF-8.
const std::string kHostile =
    "clear\x1b[2J\x1b[H title\x1b]0;pwned\x07 clip\x1b]52;c;cm0gLXJmIH4=\x1b\\ dcs\x1bP+q544e\x1b\\"
    " c1\xc2\x9b"
    "31m \x1b[31mred\x1b[0m bad\xff end\n";

class CliTrustTest : public CoordinatorFixture {
 protected:
  void SetUp() override {
    Start();
    env_ = {{"JOBCTL_COORDINATOR", coord_->url()},
            {"JOBCTL_TOKEN", coord_->admin_token()},
            {"HOME", dir_.path()},
            {"TERM", "xterm"}};
  }
  std::vector<std::string> Argv(std::vector<std::string> args) {
    args.insert(args.begin(), JOBCTL_BIN);
    return args;
  }
  ProcessResult Piped(std::vector<std::string> args,
                      std::map<std::string, std::string> extra = {}) {
    RunOptions o;
    o.env = env_;
    for (auto& [k, v] : extra) o.env[k] = v;
    o.cwd = dir_.path();
    o.unset_env = {"NO_COLOR"};
    return jobctl::testing::Run(Argv(std::move(args)), o);
  }
  std::string OnTerminal(std::vector<std::string> args, int* rc = nullptr) {
    int code = 0;
    std::map<std::string, std::string> env = env_;
    env["NO_COLOR"] = "";
    std::string out = RunOnTerminal(Argv(std::move(args)), env, &code);
    if (rc != nullptr) *rc = code;
    return out;
  }
  // A run of job "j" whose stdout is `output`, finished.
  int64_t RunPrinting(const std::string& output) {
    coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
    json run = coord_->PostJson("/v1/jobs/j/trigger", json::object());
    TestAgent agent(*coord_, "a");
    std::vector<json> a = agent.ClaimUpTo(1);
    EXPECT_EQ(a.size(), 1u);
    if (a.empty()) return 0;
    EXPECT_EQ(agent.Log(a[0], 1, "stdout", output).status, 200);
    EXPECT_EQ(agent.Finish(a[0], 0).status, 200);
    return run["id"].get<int64_t>();
  }
  json CreateToken(const std::string& role, const std::string& name) {
    http::HttpResponse r =
        coord_->Request("POST", "/v1/tokens", json{{"role", role}, {"name", name}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body);
  }
  std::map<std::string, std::string> env_;
};

TEST_F(CliTrustTest, JobOutputOnATerminalIsShownNotObeyedAndAPipeGetsItExactly) {
  std::string run = std::to_string(RunPrinting(kHostile));
  ProcessResult piped = Piped({"logs", run});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, kHostile);

  int rc = -1;
  std::string shown = OnTerminal({"logs", run}, &rc);
  EXPECT_EQ(rc, 0) << shown;
  EXPECT_FALSE(HasRawControl(shown)) << shown;
  EXPECT_NE(shown.find("clear^[[2J^[[H title^[]0;pwned^G clip^[]52;c;cm0gLXJmIH4=^[\\ "
                       "dcs^[P+q544e^[\\ c1\\u009b31m red bad\\xff end\n"),
            std::string::npos)
      << shown;

  // --color=always lets the plain colour through, and nothing else.
  std::string coloured = OnTerminal({"logs", run, "--color=always"});
  EXPECT_NE(coloured.find("\x1b[31mred\x1b[0m bad\\xff"), std::string::npos) << coloured;
  EXPECT_TRUE(OnlyColourEscapes(coloured)) << coloured;
  EXPECT_NE(coloured.find("^[]52;c;"), std::string::npos) << coloured;

  // --raw is the user's word for "my terminal, these bytes".
  EXPECT_EQ(OnTerminal({"logs", run, "--raw"}), kHostile);
}

TEST_F(CliTrustTest, TablesAndJsonOnATerminalShowNamesFromElsewhereVisibly) {
  const std::string name =
      "ci\x1b]0;pwned\x07\xc2\x9b"
      "2J";
  // Names the coordinator stores (tokens, agents, jobs) are refused with such bytes at all...
  EXPECT_EQ(
      coord_->Request("POST", "/v1/tokens", json{{"role", "read"}, {"name", name}}.dump()).status,
      400);
  // ...while an apply's author is free text, and reaches the audit table.
  http::HttpResponse applied = coord_->Request(
      "POST", "/v1/jobfile",
      json{{"text", "[[job]]\nname = \"k\"\nschedule = \"@yearly\"\nshell = \"true\"\n"},
           {"author", name}}
          .dump());
  ASSERT_EQ(applied.status, 200) << applied.body;
  std::string table = OnTerminal({"audit", "--action", "apply"});
  EXPECT_FALSE(HasRawControl(table)) << table;
  EXPECT_NE(table.find("ci^[]0;pwned^G\\u009b2J"), std::string::npos) << table;
  ProcessResult piped = Piped({"audit", "--action", "apply"});
  EXPECT_NE(piped.out.find(name), std::string::npos) << piped.out;

  // JSON stays JSON with the same value; only its raw controls are written as escapes.
  std::string j = OnTerminal({"audit", "--action", "apply", "-o", "json"});
  EXPECT_FALSE(HasRawControl(j)) << j;
  EXPECT_NE(j.find("ci\\u001b]0;pwned\\u0007\\u009b2J"), std::string::npos) << j;
  json parsed = json::parse(Piped({"audit", "--action", "apply", "-o", "json"}).out);
  bool found = false;
  for (const auto& e : parsed) {
    found = found || e["detail"].get<std::string>().find(name) != std::string::npos;
  }
  EXPECT_TRUE(found);

  // The author an apply names in its body reaches the audit table.
  http::HttpResponse r = coord_->Request(
      "POST", "/v1/jobfile",
      json{{"text", "[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n"},
           {"author", "mallory\x1b[2J\x1b]52;c;eA==\x07"}}
          .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::string audit = OnTerminal({"audit"});
  EXPECT_FALSE(HasRawControl(audit)) << audit;
  EXPECT_NE(audit.find("author mallory^[[2J^[]52;c;eA==^G"), std::string::npos) << audit;
}

TEST_F(CliTrustTest, TokenOnTheCommandLineIsWarnedAboutOnceAndTokenFilesOpenToOthersAreNamed) {
  ProcessResult r = Piped({"--token", coord_->admin_token(), "list"}, {{"JOBCTL_TOKEN", ""}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = "jobctl: warning: --token is visible to every user of this host";
  ASSERT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning, r.err.find(warning) + 1), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(coord_->admin_token()), std::string::npos) << r.err;

  std::string file = dir_.Write("admin.token", coord_->admin_token() + "\n");
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  r = Piped({"--token-file", file, "list"}, {{"JOBCTL_TOKEN", ""}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: token file " + file +
                       " is accessible to group and others (mode "
                       "0644); make it private: chmod 600 " +
                       file),
            std::string::npos)
      << r.err;
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  r = Piped({"--token-file", file, "list"}, {{"JOBCTL_TOKEN", ""}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// Every kind of change, made with jobctl by an admin token named "alice", is in the audit
// trail with that name and token id; refused requests are there too, with the token that
// was refused or none.
TEST_F(CliTrustTest, AuditShowsEveryChangeWithItsActorAndToken) {
  json alice = CreateToken("admin", "alice");
  json reader = CreateToken("read", "reader");
  env_["JOBCTL_TOKEN"] = alice["token"];
  dir_.Write("jobs.toml", "[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  ASSERT_EQ(Piped({"apply"}).exit_code, 0);
  ProcessResult trig = Piped({"trigger", "j"});
  ASSERT_EQ(trig.exit_code, 0) << trig.err;
  std::string run = trig.out.substr(0, trig.out.find('\n'));
  ASSERT_EQ(Piped({"cancel", run}).exit_code, 0);
  ProcessResult retry = Piped({"retry", run});
  ASSERT_EQ(retry.exit_code, 0) << retry.err;
  ASSERT_EQ(Piped({"pause", "j"}).exit_code, 0);
  ASSERT_EQ(Piped({"resume", "j"}).exit_code, 0);
  TestAgent agent(*coord_, "web-1");
  agent.Claim(1, 0);
  ASSERT_EQ(Piped({"agents", "drain", "web-1"}).exit_code, 0);
  ASSERT_EQ(Piped({"agents", "drain", "web-1", "--undo"}).exit_code, 0);
  ProcessResult created =
      Piped({"token", "create", "--role", "read", "--name", "temp", "-o", "json"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  std::string temp_id = std::to_string(json::parse(created.out)["id"].get<int64_t>());
  ASSERT_EQ(Piped({"token", "revoke", temp_id}).exit_code, 0);
  EXPECT_EQ(Piped({"list"}, {{"JOBCTL_TOKEN", "jc_0000000000000000000000000000dead"}}).exit_code,
            77);
  EXPECT_EQ(Piped({"pause", "j"}, {{"JOBCTL_TOKEN", reader["token"]}}).exit_code, 77);

  ProcessResult out = Piped({"audit", "-o", "json", "--limit", "100"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  json events = json::parse(out.out);
  std::map<std::string, json> latest;  // action -> its newest event
  for (auto it = events.rbegin(); it != events.rend(); ++it) latest[(*it)["action"]] = *it;
  int64_t alice_id = alice["id"].get<int64_t>();
  for (const char* action : {"apply", "trigger", "cancel", "retry", "pause", "resume", "drain",
                             "undrain", "token-create", "token-revoke"}) {
    ASSERT_TRUE(latest.count(action)) << action << "\n" << out.out;
    EXPECT_EQ(latest[action]["actor"], "alice") << latest[action];
    EXPECT_EQ(latest[action]["token_id"], alice_id) << latest[action];
  }
  EXPECT_EQ(latest["trigger"]["subject"], "j");
  EXPECT_EQ(latest["cancel"]["subject"], "run " + run);
  EXPECT_EQ(latest["drain"]["subject"], "web-1");
  EXPECT_EQ(latest["token-revoke"]["subject"], temp_id);
  // Refused: the unknown token (no credential) and the read token that may not pause.
  std::vector<json> refused;
  for (const json& e : events) {
    if (e["action"] == "auth-failure") refused.push_back(e);
  }
  ASSERT_EQ(refused.size(), 2u) << out.out;
  EXPECT_EQ(refused[0]["actor"], "reader");
  EXPECT_EQ(refused[0]["token_id"], reader["id"]);
  EXPECT_EQ(refused[0]["subject"], "POST /v1/jobs/j/pause");
  EXPECT_EQ(refused[1]["actor"], "");
  EXPECT_TRUE(refused[1]["token_id"].is_null());
  // Newest first; filters; a table for people.
  EXPECT_GT(events[0]["id"].get<int64_t>(), events[1]["id"].get<int64_t>());
  json triggers = json::parse(Piped({"audit", "--action", "trigger", "-o", "json"}).out);
  ASSERT_EQ(triggers.size(), 1u);
  EXPECT_EQ(triggers[0]["detail"], "run " + run);
  EXPECT_EQ(json::parse(Piped({"audit", "--actor", "reader", "-o", "json"}).out).size(), 1u);
  EXPECT_EQ(json::parse(Piped({"audit", "--limit", "3", "-o", "json"}).out).size(), 3u);
  EXPECT_EQ(json::parse(Piped({"audit", "--since", "1h", "-o", "json"}).out).size(), events.size());
  EXPECT_EQ(
      json::parse(Piped({"audit", "--since", "2099-01-01T00:00:00Z", "-o", "json"}).out).size(),
      0u);
  ProcessResult table = Piped({"audit", "--action", "pause"});
  EXPECT_NE(table.out.find("ACTION"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("pause"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("alice"), std::string::npos) << table.out;
  // The audit trail is for admins only.
  ProcessResult denied = Piped({"audit"}, {{"JOBCTL_TOKEN", reader["token"]}});
  EXPECT_EQ(denied.exit_code, 77) << denied.err;
}

TEST_F(CliTrustTest, AuditPagesAreBounded) {
  coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  for (int i = 0; i < 4; ++i) {
    coord_->PostJson("/v1/jobs/j/" + std::string(i % 2 ? "resume" : "pause"), json::object());
  }
  json all = coord_->GetJson("/v1/audit?limit=1000000");
  ASSERT_EQ(all.size(), 5u);  // apply and 4 pause/resume
  json page =
      coord_->GetJson("/v1/audit?limit=2&before=" + std::to_string(all[1]["id"].get<int64_t>()));
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0]["id"], all[2]["id"]);
  EXPECT_EQ(coord_->Request("GET", "/v1/audit?before=x").status, 400);
  EXPECT_EQ(coord_->Request("GET", "/v1/audit?action=" + std::string(300, 'a')).status, 400);
  EXPECT_EQ(coord_->Request("GET", "/v1/audit?since=yesterday").status, 400);
}

// The coordinator's data directory and every file in it are its own, whatever the umask and
// however the directory was made.
TEST(StateModeTest, CoordinatorDataDirIs0700AndItsFiles0600WhateverTheUmask) {
  mode_t old = umask(022);
  TempDir dir;
  ASSERT_EQ(::mkdir((dir.path() + "/data").c_str(), 0755), 0);
  Coordinator coord(dir);
  coord.Start();
  auto mode = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  EXPECT_EQ(mode(coord.data_dir()), 0700);
  for (const char* f :
       {"jobctl.db", "jobctl.db-wal", "jobctl.db-shm", "logs.db", "admin.token", "agent.token"}) {
    EXPECT_EQ(mode(coord.data_dir() + "/" + f), 0600) << f;
  }
  umask(old);
}

// jobctl list puts the jobs that need a look first: failing (red on a terminal), then
// overdue by their expect_success_within (yellow), then the rest by name; a pipe and
// NO_COLOR get no colour, and the table still says which is overdue.
TEST_F(CliTrustTest, ListShowsFailingThenOverdueJobsFirstInColourOnlyOnATerminal) {
  auto job = [](const std::string& name, const std::string& shell, const std::string& more) {
    return "[[job]]\nname = \"" + name + "\"\nschedule = \"@yearly\"\nshell = \"" + shell + "\"\n" +
           more;
  };
  coord_->Apply(job("a-ok", "true", "") + job("b-bad", "false", "") +
                job("c-stale", "true", "expect_success_within = \"1m\"\n") +
                job("d-idle", "true", ""));
  int64_t stale_run = coord_->PostJson("/v1/jobs/c-stale/trigger", json::object())["id"];
  coord_->PostJson("/v1/jobs/a-ok/trigger", json::object());
  coord_->PostJson("/v1/jobs/b-bad/trigger", json::object());
  {
    TestAgent agent(*coord_, "a");
    std::vector<json> a = agent.ClaimUpTo(3);
    ASSERT_EQ(a.size(), 3u);
    for (const json& shard : a) {
      ASSERT_EQ(agent.Finish(shard, shard["job"] == "b-bad" ? 1 : 0).status, 200);
    }
  }
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return coord_->GetJson("/v1/jobs/b-bad")["last_state"] == "failed"; }, seconds(10)));
  // c-stale's success five minutes ago, as a store from before a restart says.
  coord_->Stop();
  {
    Result<std::unique_ptr<store::Store>> st =
        store::OpenStore({.path = coord_->data_dir() + "/jobctl.db"});
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    int64_t ago = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch() - std::chrono::minutes(5))
                      .count();
    ASSERT_TRUE((*st)->Begin().ok());
    ASSERT_TRUE((*st)->UpdateRunState(stale_run, RunState::kSucceeded, ago, "").ok());
    ASSERT_TRUE((*st)->Commit().ok());
  }
  coord_->Start();
  env_["JOBCTL_COORDINATOR"] = coord_->url();

  auto names = [](const std::string& table) {
    std::vector<std::string> out;
    std::istringstream lines(table);
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) out.push_back(line.substr(0, line.find(' ')));
    return out;
  };
  const std::vector<std::string> order = {"b-bad", "c-stale", "a-ok", "d-idle"};
  ProcessResult piped = Piped({"list"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(names(piped.out), order) << piped.out;
  EXPECT_EQ(piped.out.find('\x1b'), std::string::npos) << piped.out;
  EXPECT_NE(piped.out.find(" overdue"), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find(" overdue"), piped.out.rfind(" overdue")) << piped.out;

  std::string shown = OnTerminal({"list"});
  EXPECT_NE(shown.find("\x1b[31mb-bad\x1b[0m"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\x1b[33mc-stale\x1b[0m"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\na-ok "), std::string::npos) << shown;  // not coloured
  EXPECT_TRUE(OnlyColourEscapes(shown)) << shown;
  int rc = -1;
  std::map<std::string, std::string> no_colour = env_;
  no_colour["NO_COLOR"] = "1";
  std::string plain = RunOnTerminal(Argv({"list"}), no_colour, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(plain.find('\x1b'), std::string::npos) << plain;

  ProcessResult show = Piped({"show", "c-stale"});
  EXPECT_NE(show.out.find("Expect:    a success within 1m; last success "), std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("; overdue\n"), std::string::npos) << show.out;

  json listed = json::parse(Piped({"list", "-o", "json"}).out);
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[0]["name"], "a-ok");  // the coordinator's order
  EXPECT_EQ(listed[0]["overdue"], false);
  EXPECT_TRUE(listed[0]["last_success"].is_string());
  EXPECT_EQ(listed[1]["last_state"], "failed");
  EXPECT_TRUE(listed[1]["last_success"].is_null());
  EXPECT_EQ(listed[2]["overdue"], true);
  EXPECT_TRUE(listed[3]["last_state"].is_null());
}

// agentd's state directory (spool and unreported results: job output) is its own, and a
// token file others can read is named in its log.
TEST(StateModeTest, AgentdStateDirIs0700AndATokenFileOpenToOthersIsWarnedAbout) {
  mode_t old = umask(022);
  TempDir dir;
  Coordinator coord(dir);
  coord.Start();
  ASSERT_EQ(::mkdir((dir.path() + "/agent-a").c_str(), 0755), 0);
  AgentProcess agent(coord, dir, "a");  // its token file is written 0644 under this umask
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return !coord.GetJson("/v1/agents").empty(); }, seconds(20)))
      << agent.Logs();
  auto mode = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  EXPECT_EQ(mode(agent.state_dir()), 0700);
  EXPECT_EQ(mode(agent.state_dir() + "/spool"), 0700);
  EXPECT_EQ(mode(agent.state_dir() + "/results"), 0700);
  std::string token_file = dir.path() + "/agent-a.token";
  EXPECT_NE(agent.Logs().find("token file " + token_file +
                              " is accessible to group and others "
                              "(mode 0644)"),
            std::string::npos)
      << agent.Logs();
  umask(old);
}

}  // namespace
}  // namespace jobctl::testing
