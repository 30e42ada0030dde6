#include "config/coordinator_config.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(CoordinatorConfigTest, EmptyFileGivesDefaults) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig("", "coordinator.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "127.0.0.1:7070");
  EXPECT_EQ(c->data_dir, "/var/lib/jobctl");
  EXPECT_EQ(c->lease_ttl, std::chrono::seconds(15));
  EXPECT_EQ(c->heartbeat, std::chrono::seconds(5));
  EXPECT_EQ(c->log_cap_bytes, int64_t{64} << 20);
  EXPECT_EQ(c->max_jobfile_bytes, int64_t{8} << 20);
  EXPECT_EQ(c->header_timeout, std::chrono::seconds(10));
  EXPECT_EQ(c->idle_timeout, std::chrono::seconds(90));
  EXPECT_EQ(c->agent_expiry, std::chrono::hours(24 * 7));
}

TEST(CoordinatorConfigTest, ReadsEveryKey) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(R"(
listen = "0.0.0.0:9000"
data_dir = "/srv/jobctl"
lease_ttl = "30s"
heartbeat = "10s"
misfire_grace = "1m"
early_dispatch = "2s"
timeout_grace = "2m"
header_timeout = "5s"
idle_timeout = "3m"
agent_expiry = "2d"
log_cap = "256MiB"
max_jobfile = "128MiB"
log_level = "debug"
event_log = "/var/log/jobctl-events.jsonl"
)",
                                                       "coordinator.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "0.0.0.0:9000");
  EXPECT_EQ(c->data_dir, "/srv/jobctl");
  EXPECT_EQ(c->lease_ttl, std::chrono::seconds(30));
  EXPECT_EQ(c->heartbeat, std::chrono::seconds(10));
  EXPECT_EQ(c->misfire_grace, std::chrono::minutes(1));
  EXPECT_EQ(c->early_dispatch, std::chrono::seconds(2));
  EXPECT_EQ(c->timeout_grace, std::chrono::minutes(2));
  EXPECT_EQ(c->header_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c->idle_timeout, std::chrono::minutes(3));
  EXPECT_EQ(c->agent_expiry, std::chrono::hours(48));
  EXPECT_EQ(c->log_cap_bytes, int64_t{256} << 20);
  EXPECT_EQ(c->max_jobfile_bytes, int64_t{128} << 20);
  EXPECT_EQ(c->log_level, "debug");
  EXPECT_EQ(c->event_log, "/var/log/jobctl-events.jsonl");
}

TEST(CoordinatorConfigTest, ErrorsNameFileLineKeyAndWhatWasExpected) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(
      "lease_ttl = \"15s\"\nmax_jobfile = \"lots\"\nlistn = \"x\"\n", "coordinator.toml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("coordinator.toml:2:15: max_jobfile: expected a size like \"8MiB\""),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("coordinator.toml:3:1: unknown key \"listn\" (did you mean \"listen\"?)"),
            std::string::npos)
      << m;
  Result<CoordinatorConfig> far = ParseCoordinatorConfig("colour = 1\n", "coordinator.toml");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().message().rfind(
                "coordinator.toml:1:1: unknown key \"colour\" (expected listen, data_dir, ", 0),
            0u)
      << far.status().message();
}

TEST(CoordinatorConfigTest, ReadsNotifyChannels) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(R"(
mailto_channel = "ops-mail"
public_url = "https://ctl.example.com:7070"

[notify.ops-mail]
type = "email"
url = "smtp://mail.example.com:587"
from = "jobctl@example.com"
to = ["ops@example.com", "dba@example.com"]
username = "jobctl"
password_file = "/etc/jobctl/smtp-password"
starttls = "try"
timeout = "20s"

[notify.chat]
type = "webhook"
url = "https://hooks.example.com/T000/B000"
secret_file = "/etc/jobctl/webhook-key"
)",
                                                       "coordinator.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->notify_channels.size(), 2u);
  const NotifyChannelConfig& chat = c->notify_channels[0];  // sorted by name
  EXPECT_EQ(chat.name, "chat");
  EXPECT_EQ(chat.type, "webhook");
  EXPECT_EQ(chat.secret_file, "/etc/jobctl/webhook-key");
  const NotifyChannelConfig* mail = FindChannel(*c, "ops-mail");
  ASSERT_NE(mail, nullptr);
  EXPECT_EQ(mail->to, (std::vector<std::string>{"ops@example.com", "dba@example.com"}));
  EXPECT_EQ(mail->starttls, "try");
  EXPECT_EQ(mail->timeout, std::chrono::seconds(20));
  EXPECT_EQ(c->mailto_channel, "ops-mail");
  EXPECT_EQ(c->public_url, "https://ctl.example.com:7070");
}

TEST(CoordinatorConfigTest, NotifyChannelErrorsSayWhatIsMissing) {
  auto error = [](std::string_view text) {
    Result<CoordinatorConfig> c = ParseCoordinatorConfig(text, "coordinator.toml");
    return c.ok() ? std::string("ok") : c.status().message();
  };
  EXPECT_EQ(error("[notify.a]\nurl = \"smtp://x\"\n"),
            "coordinator.toml:1:1: notify.a: missing \"type\" (\"email\" or \"webhook\")");
  EXPECT_EQ(error("[notify.a]\ntype = \"email\"\nurl = \"https://x\"\nfrom = \"a@b\"\n"),
            "coordinator.toml:1:1: notify.a: url: expected smtp:// or smtps://");
  EXPECT_EQ(error("[notify.a]\ntype = \"email\"\nurl = \"smtp://x\"\nfrom = \"a@b\"\n"
                  "to = [\"x@y\\r\\nBcc: z@w\"]\n"),
            "coordinator.toml:5:6: notify.a.to: expected an array of at most 100 addresses like "
            "[\"ops@example.com\"]");
  EXPECT_EQ(error("[notify.a]\ntype = \"webhook\"\nurl = \"https://x\"\n"
                  "secret_file = \"key\"\n"),
            "coordinator.toml:4:15: notify.a.secret_file: expected an absolute path to a file, "
            "like \"/etc/jobctl/smtp-password\"");
  EXPECT_EQ(error("[notify.Chat]\ntype = \"webhook\"\n"),
            "coordinator.toml:1:9: notify.Chat: expected a name like ops-mail "
            "([a-z0-9][a-z0-9._-]*)");
  EXPECT_EQ(error("mailto_channel = \"chat\"\n[notify.chat]\ntype = \"webhook\"\n"
                  "url = \"https://x\"\n"),
            "coordinator.toml: mailto_channel: \"chat\" is not an email channel of [notify]");
}

TEST(CoordinatorConfigTest, HeartbeatMustLeaveRoomInTheLease) {
  Result<CoordinatorConfig> c =
      ParseCoordinatorConfig("lease_ttl = \"10s\"\nheartbeat = \"6s\"\n", "coordinator.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("heartbeat must be at most half of lease_ttl"),
            std::string::npos);
}

TEST(CoordinatorConfigTest, EarlyDispatchIsBoundedAndAtMostAQuarterOfTheLease) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig("", "coordinator.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->early_dispatch, std::chrono::seconds(1));
  EXPECT_EQ(EarlyDispatchMs(*c), 1000);
  // Left unset, it shrinks to a quarter of a short lease.
  c = ParseCoordinatorConfig("lease_ttl = \"2s\"\nheartbeat = \"1s\"\n", "coordinator.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(EarlyDispatchMs(*c), 500);
  c = ParseCoordinatorConfig("early_dispatch = \"0s\"\n", "coordinator.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(EarlyDispatchMs(*c), 0);
  c = ParseCoordinatorConfig("early_dispatch = \"3s\"\n", "coordinator.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(EarlyDispatchMs(*c), 3000);
  c = ParseCoordinatorConfig("early_dispatch = \"5s\"\n", "coordinator.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("early_dispatch must be at most a quarter of lease_ttl"),
            std::string::npos)
      << c.status().message();
  c = ParseCoordinatorConfig("lease_ttl = \"60s\"\nearly_dispatch = \"11s\"\n", "coordinator.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("coordinator.toml:2"), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("from \"0s\" (off) to \"10s\""), std::string::npos)
      << c.status().message();
}

TEST(CoordinatorConfigTest, ReadsTlsKeys) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(R"(
tls_cert = "/etc/jobctl/tls/coordinator.crt"
tls_key = "/etc/jobctl/tls/coordinator.key"
tls_client_ca = "/etc/jobctl/tls/ca.crt"
)",
                                                       "coordinator.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->tls_cert, "/etc/jobctl/tls/coordinator.crt");
  EXPECT_EQ(c->tls_key, "/etc/jobctl/tls/coordinator.key");
  EXPECT_EQ(c->tls_client_ca, "/etc/jobctl/tls/ca.crt");
}

TEST(CoordinatorConfigTest, TlsCertWithoutKeyOrClientCaWithoutCertIsRefused) {
  Result<CoordinatorConfig> half = ParseCoordinatorConfig("tls_cert = \"a.crt\"\n", "c.toml");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("tls_cert and tls_key go together"), std::string::npos);
  Result<CoordinatorConfig> ca_only =
      ParseCoordinatorConfig("tls_client_ca = \"ca.crt\"\n", "c.toml");
  ASSERT_FALSE(ca_only.ok());
  EXPECT_NE(ca_only.status().message().find("tls_client_ca needs tls_cert"), std::string::npos);
}

}  // namespace
}  // namespace jobctl

namespace jobctl {
namespace {

TEST(CoordinatorConfigTest, ReadsTheHttpLimitsAndRateLimits) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(
      "body_timeout = \"20s\"\nmax_connections = 100\nmax_connections_per_client = 10\n"
      "max_inflight = \"64MiB\"\nmax_inflight_per_client = \"16MiB\"\nrate_limit = 5\n"
      "rate_burst = 10\ntrigger_rate_limit = 0.5\ntrigger_burst = 3\nagent_rate_limit = 0\n"
      "agent_burst = 7\n",
      "c.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->body_timeout, std::chrono::seconds(20));
  EXPECT_EQ(c->max_connections, 100);
  EXPECT_EQ(c->max_connections_per_client, 10);
  EXPECT_EQ(c->max_inflight_bytes, 64LL << 20);
  EXPECT_EQ(c->max_inflight_bytes_per_client, 16LL << 20);
  EXPECT_EQ(c->rate_limit, 5);
  EXPECT_EQ(c->rate_burst, 10);
  EXPECT_EQ(c->trigger_rate_limit, 0.5);
  EXPECT_EQ(c->trigger_burst, 3);
  EXPECT_EQ(c->agent_rate_limit, 0);
  EXPECT_EQ(c->agent_burst, 7);
}

TEST(CoordinatorConfigTest, PerClientBodiesMustHoldAWholeJobFile) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(
      "max_jobfile = \"8MiB\"\nmax_inflight_per_client = \"4MiB\"\n", "c.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("max_inflight_per_client"), std::string::npos);
  // Left unset, the per-client figure grows with the job file.
  Result<CoordinatorConfig> big = ParseCoordinatorConfig("max_jobfile = \"128MiB\"\n", "c.toml");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_GE(big->max_inflight_bytes_per_client, (160LL << 20));
  EXPECT_GE(big->max_inflight_bytes, big->max_inflight_bytes_per_client);
  EXPECT_FALSE(ParseCoordinatorConfig("max_connections = 0\n", "c.toml").ok());
  EXPECT_FALSE(ParseCoordinatorConfig("rate_limit = -1\n", "c.toml").ok());
}

TEST(CoordinatorConfigTest, RetentionKeysHaveDefaultsAndReadTheirValues) {
  Result<CoordinatorConfig> d = ParseCoordinatorConfig("", "coordinator.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->runs_for, std::chrono::hours(24 * 30));
  EXPECT_EQ(d->keep_last, 20);
  EXPECT_EQ(d->logs_for, std::chrono::hours(24 * 7));
  EXPECT_EQ(d->logs_max_bytes, int64_t{1} << 30);
  EXPECT_EQ(d->prune_every, std::chrono::seconds(10));
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(R"(
runs_for = "2s"
keep_last = 0
logs_for = "0s"
logs_max = 0
prune_every = "100ms"
)",
                                                       "coordinator.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->runs_for, std::chrono::seconds(2));
  EXPECT_EQ(c->keep_last, 0);
  EXPECT_EQ(c->logs_for, Millis(0));
  EXPECT_EQ(c->logs_max_bytes, 0);
  EXPECT_EQ(c->prune_every, Millis(100));
}

TEST(CoordinatorConfigTest, RetentionKeysOutOfRangeNameFileLineAndTheRange) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(
      "runs_for = \"500ms\"\nkeep_last = -1\nlogs_for = \"4000d\"\nlogs_max = \"lots\"\n"
      "prune_every = \"2h\"\n",
      "coordinator.toml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  for (const char* want : {
           "coordinator.toml:1:12: runs_for: expected a duration from \"1s\" to \"3650d\"",
           "coordinator.toml:2:13: keep_last: expected a number of runs from 0 to 1000000",
           "coordinator.toml:3:12: logs_for: expected a duration from \"1s\"",
           "coordinator.toml:4:12: logs_max: expected a size like \"1GiB\" (0: no bound)",
           "coordinator.toml:5:15: prune_every: expected a duration from \"100ms\" to \"1h\"",
       }) {
    EXPECT_NE(m.find(want), std::string::npos) << want << "\nin: " << m;
  }
}

}  // namespace
}  // namespace jobctl

namespace jobctl {
namespace {

TEST(CoordinatorConfigTest, StoreIsAPostgresqlUrlAndHoldTtlIsBounded) {
  Result<CoordinatorConfig> c = ParseCoordinatorConfig(
      "store = \"postgresql://jobctl@db1,db2/jobctl?target_session_attrs=read-write\"\n"
      "hold_ttl = \"5s\"\n",
      "coordinator.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->store, "postgresql://jobctl@db1,db2/jobctl?target_session_attrs=read-write");
  EXPECT_EQ(c->hold_ttl, std::chrono::seconds(5));
  EXPECT_EQ(ParseCoordinatorConfig("", "c.toml")->hold_ttl, std::chrono::seconds(10));

  Result<CoordinatorConfig> bad = ParseCoordinatorConfig(
      "store = \"mysql://db/jobctl\"\nhold_ttl = \"1s\"\n", "coordinator.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("coordinator.toml:1:9: store: expected a postgresql:// URL"),
      std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("coordinator.toml:2:12: hold_ttl: expected a duration "
                                        "from \"3s\" to \"1h\""),
            std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(CheckStoreUrl(std::string("postgresql://") + std::string(5000, 'x')).ok());
  EXPECT_TRUE(CheckStoreUrl("").ok());
}

TEST(CoordinatorConfigTest, PasswordsAreLeftOutOfStoreUrlsInLogs) {
  EXPECT_EQ(RedactStoreUrl("postgresql://jobctl:s3cret@db1:5432/jobctl"),
            "postgresql://jobctl:***@db1:5432/jobctl");
  EXPECT_EQ(RedactStoreUrl("postgresql://jobctl@db1/jobctl?password=s3cret&sslmode=require"),
            "postgresql://jobctl@db1/jobctl?password=***&sslmode=require");
  EXPECT_EQ(RedactStoreUrl("postgresql://db1/jobctl"), "postgresql://db1/jobctl");
}

}  // namespace
}  // namespace jobctl
