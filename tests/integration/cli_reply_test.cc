// jobctl against a coordinator whose replies it cannot read (a different version, a proxy
// that rewrites bodies): a stand-in HTTP server on 127.0.0.1 answers each path with canned
// JSON, and the real binary must exit 69 (unavailable) with a message that names the reply
// and the field, never 70 (internal error) as a throwing read of a missing field did.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "testlib/subprocess.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;

// Answers GET <path> (the query ignored) with 200 and the body given for the path, or 404;
// one request per connection. Its thread stops when the listener is shut down.
class CannedServer {
 public:
  explicit CannedServer(std::map<std::string, std::string> bodies) : bodies_(std::move(bodies)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CannedServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve() {
    while (true) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(c, buf, sizeof(buf));
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      // "GET /v1/runs/1?x=y HTTP/1.1": the path up to the query.
      size_t start = head.find(' ') + 1;
      std::string path = head.substr(start, head.find_first_of("? ", start) - start);
      auto it = bodies_.find(path);
      std::string body = it != bodies_.end() ? it->second : R"({"error":"not_found"})";
      std::string reply =
          std::string("HTTP/1.1 ") + (it != bodies_.end() ? "200 OK" : "404 NF") +
          "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nConnection: close\r\n\r\n" + body;
      for (size_t off = 0; off < reply.size();) {
        ssize_t n = write(c, reply.data() + off, reply.size() - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
      close(c);
    }
  }

  std::map<std::string, std::string> bodies_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

json Shard() {
  return {{"index", 0},
          {"agent", "web-01"},
          {"state", "succeeded"},
          {"attempt", 1},
          {"token", nullptr},
          {"exit_code", 0},
          {"outcome", "exited"},
          {"message", ""},
          {"started_at", "2026-11-26T01:00:00Z"},
          {"finished_at", "2026-11-26T01:00:01Z"}};
}

json RunReply() {
  return {{"id", 1},
          {"job", "hello"},
          {"reason", "manual"},
          {"scheduled_at", "2026-11-26T01:00:00Z"},
          {"created_at", "2026-11-26T01:00:00Z"},
          {"not_before", ""},
          {"jitter_ms", nullptr},
          {"finished_at", "2026-11-26T01:00:01Z"},
          {"state", "succeeded"},
          {"trace_id", ""},
          {"note", ""},
          {"idempotency_key", ""},
          {"shard_total", 1},
          {"shards", json::array({Shard()})}};
}

json LogPageReply() {
  return {{"chunks", json::array({{{"id", 5},
                                   {"shard", 0},
                                   {"attempt", 1},
                                   {"seq", 1},
                                   {"stream", "stdout"},
                                   {"at", "2026-11-26T01:00:00Z"},
                                   {"data", "aGVsbG8K"}}})},
          {"next", 5},
          {"done", true}};
}

ProcessResult Jobctl(const CannedServer& server, std::vector<std::string> args) {
  TempDir home;
  args.insert(args.begin(), {JOBCTL_BIN, "--coordinator", server.url()});
  return Run(
      args,
      {.env = {{"HOME", home.path()}, {"XDG_CONFIG_HOME", home.path()}, {"JOBCTL_TOKEN", "t"}},
       .unset_env = {"JOBCTL_COORDINATOR"}});
}

const std::string kSkew = " (jobctl and the coordinator may be different versions)\n";

TEST(CliReplyTest, ReadsARunAndItsOutputFromWellFormedReplies) {
  CannedServer server(
      {{"/v1/runs/1", RunReply().dump()}, {"/v1/runs/1/logs", LogPageReply().dump()}});
  ProcessResult r = Jobctl(server, {"logs", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\n");
}

TEST(CliReplyTest, RunViewWithoutShardTotalExitsUnavailableNamingTheField) {
  json run = RunReply();
  run.erase("shard_total");
  CannedServer server({{"/v1/runs/1", run.dump()}, {"/v1/runs/1/logs", LogPageReply().dump()}});
  ProcessResult r = Jobctl(server, {"logs", "1"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_EQ(r.err,
            "jobctl: logs 1: run view: field \"shard_total\" is missing or not an integer" + kSkew);
}

TEST(CliReplyTest, LogPageWithoutDoneExitsUnavailableNamingTheField) {
  json page = LogPageReply();
  page.erase("done");
  CannedServer server({{"/v1/runs/1", RunReply().dump()}, {"/v1/runs/1/logs", page.dump()}});
  ProcessResult r = Jobctl(server, {"logs", "1"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_EQ(r.err,
            "jobctl: logs 1: log page: field \"done\" is missing or not true or false" + kSkew);
}

TEST(CliReplyTest, RunListItemOfTheWrongTypeExitsUnavailableNamingItsPlace) {
  json second = RunReply();
  second["id"] = "2";
  CannedServer server({{"/v1/runs", json::array({RunReply(), second}).dump()}});
  for (const char* format : {"table", "json"}) {
    ProcessResult r = Jobctl(server, {"-o", format, "runs"});
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_EQ(r.err,
              "jobctl: runs: run view list: field \"[1].id\" is missing or not an integer" + kSkew);
    EXPECT_EQ(r.out, "");
  }
}

TEST(CliReplyTest, JobListAndAgentListThatDoNotDecodeExitUnavailable) {
  json job = {{"name", "hello"},       {"next_fire", ""}, {"paused", "no"},
              {"enabled", true},       {"open_runs", 0},  {"last_state", nullptr},
              {"last_finished_at", ""}};
  CannedServer server(
      {{"/v1/jobs", json::array({job}).dump()},
       {"/v1/agents", json::array({{{"name", "web-01"}}}).dump()},
       {"/v1/jobfile", R"({"revision":"3","text":"","author":"","applied_at":""})"}});
  ProcessResult r = Jobctl(server, {"list"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_EQ(r.err,
            "jobctl: list: job summary list: field \"[0].paused\" is missing or not true or false" +
                kSkew);
  r = Jobctl(server, {"agents"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_EQ(r.err,
            "jobctl: agents: agent view list: field \"[0].labels\" is missing or not an object "
            "of strings" +
                kSkew);
  TempDir dir;
  r = Jobctl(server, {"pull", "-o", dir.path() + "/jobs.toml"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_NE(r.err.find("job file: field \"revision\" is missing or not an integer"),
            std::string::npos)
      << r.err;
}

// A coordinator from before the label filter ignores ?label= and lists every job, each
// without `on`: jobctl says so rather than print the whole list as the filtered one.
TEST(CliReplyTest, ListByLabelFromACoordinatorThatDoesNotFilterExitsUnavailable) {
  json job = {{"name", "hello"},       {"next_fire", ""}, {"paused", false},
              {"enabled", true},       {"open_runs", 0},  {"last_state", nullptr},
              {"last_finished_at", ""}};
  CannedServer older({{"/v1/jobs", json::array({job}).dump()}});
  for (const char* format : {"table", "json"}) {
    ProcessResult r = Jobctl(older, {"-o", format, "list", "--label", "role=web"});
    EXPECT_EQ(r.exit_code, 69) << r.err;
    EXPECT_NE(r.err.find("jobctl: list --label: the coordinator is older than this jobctl"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
  // Without --label the same reply lists the job.
  ProcessResult all = Jobctl(older, {"list"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("hello"), std::string::npos);
  // A coordinator that filters sends `on` with each job.
  job["on"] = json::array({"role=web"});
  CannedServer newer({{"/v1/jobs", json::array({job}).dump()}});
  ProcessResult filtered = Jobctl(newer, {"list", "--label", "role=web"});
  EXPECT_EQ(filtered.exit_code, 0) << filtered.err;
  EXPECT_NE(filtered.out.find("hello"), std::string::npos);
}

TEST(CliReplyTest, AReplyThatIsNotJsonExitsUnavailable) {
  CannedServer server(std::map<std::string, std::string>{{"/v1/jobs", "<html>proxy error</html>"}});
  ProcessResult r = Jobctl(server, {"list"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_EQ(r.err, "jobctl: list: the coordinator sent a response that is not JSON\n");
}

}  // namespace
}  // namespace jobctl::testing
