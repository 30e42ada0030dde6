#include "base/secret_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace jobctl {
namespace {

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobctl-secret-test.XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = tmpl;
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  std::string path_;
};

TEST_F(SecretFileTest, OwnerOnlyFileIsFine) {
  ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
  EXPECT_EQ(LooseSecretFileMode(path_, "token file"), std::nullopt);
  ASSERT_EQ(::chmod(path_.c_str(), 0400), 0);
  EXPECT_EQ(LooseSecretFileMode(path_, "token file"), std::nullopt);
}

TEST_F(SecretFileTest, GroupOrWorldAccessIsNamedWithTheFileAndItsMode) {
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  EXPECT_EQ(LooseSecretFileMode(path_, "token file"),
            "token file " + path_ + " is accessible to group and others (mode 0644); make it " +
                "private: chmod 600 " + path_);
  ASSERT_EQ(::chmod(path_.c_str(), 0640), 0);
  EXPECT_NE(LooseSecretFileMode(path_, "token file")->find("its group (mode 0640)"),
            std::string::npos);
  ASSERT_EQ(::chmod(path_.c_str(), 0604), 0);
  EXPECT_NE(LooseSecretFileMode(path_, "token file")->find("others (mode 0604)"),
            std::string::npos);
}

TEST_F(SecretFileTest, MissingFileIsLeftToTheReadThatFollows) {
  EXPECT_EQ(LooseSecretFileMode(path_ + ".none", "token file"), std::nullopt);
}

}  // namespace
}  // namespace jobctl
