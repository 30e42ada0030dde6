#include "secrets.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace jobctl::agentd {
namespace {

class SecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/secrets-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& data) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << data;
  }
  std::string dir_;
};

TEST_F(SecretsTest, ValuesComeFromTheFilesWithOneTrailingNewlineDropped) {
  Write("db-password", "s3cret\n");
  Write("multi", "line1\nline2\n\n");
  auto got = ReadSecrets({{"DB_PASSWORD", "db-password"}, {"CERT", "multi"}}, dir_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::map<std::string, std::string>{{"DB_PASSWORD", "s3cret"},
                                                      {"CERT", "line1\nline2\n"}}));
}

TEST_F(SecretsTest, AMissingFileNamesTheVariableAndThePath) {
  auto got = ReadSecrets({{"API_KEY", "api-key"}}, dir_);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("secret API_KEY: " + dir_ + "/api-key"), std::string::npos)
      << got.status().message();
}

TEST_F(SecretsTest, NamesThatCouldLeaveTheDirectoryAreRefused) {
  for (const char* bad : {"../etc/shadow", "/etc/shadow", ".hidden", "a/b", ""}) {
    auto got = ReadSecrets({{"X", bad}}, dir_);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), Status::Code::kInvalidArgument) << bad;
  }
}

TEST_F(SecretsTest, SymlinksLargeFilesAndNulBytesAreRefused) {
  ASSERT_EQ(symlink("/etc/hostname", (dir_ + "/link").c_str()), 0);
  Write("big", std::string(kMaxSecretBytes + 1, 'x'));
  Write("nul", std::string("a\0b", 3));
  ASSERT_EQ(mkdir((dir_ + "/dir").c_str(), 0700), 0);
  for (const char* bad : {"link", "big", "nul", "dir"}) {
    EXPECT_FALSE(ReadSecrets({{"X", bad}}, dir_).ok()) << bad;
  }
  Write("max", std::string(kMaxSecretBytes, 'x'));
  EXPECT_TRUE(ReadSecrets({{"X", "max"}}, dir_).ok());
}

}  // namespace
}  // namespace jobctl::agentd
