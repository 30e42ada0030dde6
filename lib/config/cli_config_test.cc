#include "config/cli_config.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(CliConfigTest, ReadsEveryKey) {
  Result<CliConfig> c = ParseCliConfig(R"(
coordinator = "https://jobs.internal:7070"
token = "t"
token_file = "/home/ci/token"
file = "jobs.toml"
ca_file = "ca.crt"
client_cert = "me.crt"
client_key = "me.key"
)",
                                       "config.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->coordinator, "https://jobs.internal:7070");
  EXPECT_EQ(c->token, "t");
  EXPECT_EQ(c->token_file, "/home/ci/token");
  EXPECT_EQ(c->file, "jobs.toml");
  EXPECT_EQ(c->ca_file, "ca.crt");
  EXPECT_EQ(c->client_cert, "me.crt");
  EXPECT_EQ(c->client_key, "me.key");
  EXPECT_EQ(c->path, "config.toml");
}

TEST(CliConfigTest, UnknownKeyListsTheKeysAndAWrongTypeNamesTheKey) {
  Result<CliConfig> c = ParseCliConfig("colour = \"x\"\ntoken = 3\n", "config.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "config.toml:1:1: unknown key \"colour\" (expected coordinator, token, token_file, "
            "file, ca_file, client_cert or client_key)\n"
            "config.toml:2:9: token: expected a string");
}

TEST(CliConfigTest, SyntaxErrorHasPosition) {
  Result<CliConfig> c = ParseCliConfig("token = = 3\n", "config.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("config.toml:1:", 0), 0u) << c.status().message();
}

}  // namespace
}  // namespace jobctl
