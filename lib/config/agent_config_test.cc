#include "config/agent_config.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(AgentConfigTest, EmptyFileGivesDefaults) {
  Result<AgentConfig> c = ParseAgentConfig("", "agentd.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->coordinators.empty());
  EXPECT_EQ(c->state_dir, "/var/lib/agentd");
  EXPECT_EQ(c->slots, 0);
  EXPECT_EQ(c->drain_timeout, std::chrono::seconds(60));
  EXPECT_EQ(c->kill_grace, std::chrono::seconds(10));
  EXPECT_EQ(c->spool_max_bytes, int64_t{256} << 20);
  EXPECT_TRUE(c->allow_run_as.empty());
}

TEST(AgentConfigTest, ReadsEveryKey) {
  Result<AgentConfig> c = ParseAgentConfig(R"(
coordinator = ["http://a:7070", "http://b:7070"]
token_file = "/etc/agentd/token"
name = "host-a"
labels = { role = "web", dc = "fra1" }
slots = 8
state_dir = "/tmp/agentd"
log_level = "debug"
allow_run_as = ["www-data", "backup"]
allow_commands = ["/usr/local/bin/", "/opt/jobs"]
drain_timeout = "2m"
kill_grace = "5s"
spool_max = "64MiB"
event_log = "/var/log/agentd-events.jsonl"
output_dir = "/run/agentd/outputs"
)",
                                           "agentd.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->coordinators, (std::vector<std::string>{"http://a:7070", "http://b:7070"}));
  EXPECT_EQ(c->token_file, "/etc/agentd/token");
  EXPECT_EQ(c->name, "host-a");
  EXPECT_EQ(c->labels.at("role"), "web");
  EXPECT_EQ(c->labels.at("dc"), "fra1");
  EXPECT_EQ(c->slots, 8);
  EXPECT_EQ(c->allow_run_as.size(), 2u);
  EXPECT_EQ(c->allow_commands[1], "/opt/jobs");
  EXPECT_EQ(c->drain_timeout, std::chrono::minutes(2));
  EXPECT_EQ(c->kill_grace, std::chrono::seconds(5));
  EXPECT_EQ(c->spool_max_bytes, int64_t{64} << 20);
  EXPECT_EQ(c->event_log, "/var/log/agentd-events.jsonl");
  EXPECT_EQ(c->output_dir, "/run/agentd/outputs");
}

TEST(AgentConfigTest, SingleCoordinatorMayBeAString) {
  Result<AgentConfig> c = ParseAgentConfig("coordinator = \"http://c:7070\"\n", "agentd.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->coordinators, std::vector<std::string>{"http://c:7070"});
}

TEST(AgentConfigTest, ErrorsNameFileLineAndWhatWasExpected) {
  Result<AgentConfig> c = ParseAgentConfig("name = \"a\"\nslots = 0\n", "agentd.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "agentd.toml:2:9: slots: expected an integer from 1 to 4096");
}

TEST(AgentConfigTest, ReportsEveryProblem) {
  Result<AgentConfig> c = ParseAgentConfig(
      "drain_timeout = \"soon\"\nspool_max = \"1KiB\"\ncoordinatr = \"x\"\n", "a.toml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("a.toml:1:17: drain_timeout: expected a duration"), std::string::npos) << m;
  EXPECT_NE(m.find("a.toml:2:13: spool_max: expected a size"), std::string::npos) << m;
  EXPECT_NE(m.find("a.toml:3:1: unknown key \"coordinatr\" (did you mean \"coordinator\"?)"),
            std::string::npos)
      << m;
}

TEST(AgentConfigTest, UnknownKeyListsEveryKey) {
  Result<AgentConfig> c = ParseAgentConfig("\n\ncolour = \"blue\"\n", "agentd.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(
      c.status().message(),
      "agentd.toml:3:1: unknown key \"colour\" (expected coordinator, token_file, name, "
      "labels, slots, state_dir, log_level, event_log, allow_run_as, allow_commands, "
      "secrets_dir, output_dir, drain_timeout, kill_grace, spool_max, ca_file, client_cert or "
      "client_key)");
}

TEST(AgentConfigTest, SyntaxErrorHasPosition) {
  Result<AgentConfig> c = ParseAgentConfig("slots = = 3\n", "agentd.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("agentd.toml:1:", 0), 0u) << c.status().message();
}

TEST(AgentConfigTest, RejectsBadCoordinatorUrlAndRelativeCommandPrefix) {
  Result<AgentConfig> c = ParseAgentConfig(
      "coordinator = \"coord:7070\"\nallow_commands = [\"bin/\"]\noutput_dir = \"out\"\n",
      "agentd.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("coordinator: expected a URL like"), std::string::npos);
  EXPECT_NE(c.status().message().find("allow_commands: expected absolute path prefixes"),
            std::string::npos);
  EXPECT_NE(c.status().message().find("agentd.toml:3:14: output_dir: expected an absolute path"),
            std::string::npos)
      << c.status().message();
}

TEST(AgentConfigTest, RejectsBadLabel) {
  Result<AgentConfig> c = ParseAgentConfig("labels = { role = \"a b\" }\n", "agentd.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("labels.role: expected label value of letters"),
            std::string::npos)
      << c.status().message();
}

TEST(AgentConfigTest, ParsesLabelFlag) {
  Result<std::map<std::string, std::string>> l = ParseLabels("role=web,dc=fra1");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->at("role"), "web");
  EXPECT_EQ(l->at("dc"), "fra1");
  EXPECT_TRUE(ParseLabels("")->empty());
  EXPECT_FALSE(ParseLabels("role").ok());
  EXPECT_FALSE(ParseLabels("=web").ok());
}

TEST(AgentConfigTest, MissingOptionalFileGivesDefaults) {
  Result<AgentConfig> c = LoadAgentConfig("/nonexistent/agentd.toml", false);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(LoadAgentConfig("/nonexistent/agentd.toml", true).ok());
}

TEST(AgentConfigTest, ReadsTlsKeysAndWantsCertAndKeyTogether) {
  Result<AgentConfig> c = ParseAgentConfig(R"(
coordinator = "https://coordinator.example:7070"
ca_file = "/etc/agentd/tls/ca.crt"
client_cert = "/etc/agentd/tls/web-1.crt"
client_key = "/etc/agentd/tls/web-1.key"
)",
                                           "agentd.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_file, "/etc/agentd/tls/ca.crt");
  EXPECT_EQ(c->client_cert, "/etc/agentd/tls/web-1.crt");
  EXPECT_EQ(c->client_key, "/etc/agentd/tls/web-1.key");
  Result<AgentConfig> half = ParseAgentConfig("client_cert = \"a.crt\"\n", "agentd.toml");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("client_cert and client_key go together"),
            std::string::npos);
}

}  // namespace
}  // namespace jobctl
