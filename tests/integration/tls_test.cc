// TLS end to end with the real binaries on 127.0.0.1: a private CA, a coordinator certificate
// and a client certificate made with tests/tls/make-pki.sh (the commands of README.md's "TLS
// with a private CA"); `jobctl serve` with tls_cert/tls_key (and tls_client_ca for mTLS),
// agentd and jobctl with ca_file (and client_cert/client_key).
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <csignal>

#include "testlib/cluster.h"

namespace jobctl::testing {
namespace {

using std::chrono::seconds;

const char* kJobs =
    "[[job]]\n"
    "name = \"hello\"\n"
    "schedule = \"@yearly\"\n"
    "shell = \"echo hello over tls\"\n";

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult pki = jobctl::testing::Run({"/bin/sh", TLS_PKI_SCRIPT, dir_.path()});
    ASSERT_EQ(pki.exit_code, 0) << pki.err;
  }
  void TearDown() override {
    if (!HasFailure()) return;
    if (coord_) std::cerr << "---- coordinator ----\n" << coord_->Logs();
    for (const std::string& log : agent_logs_) std::cerr << "---- agent ----\n" << ReadFile(log);
  }

  std::string Pki(const std::string& name) const { return dir_.path() + "/" + name; }
  std::string Url() const { return "https://127.0.0.1:" + std::to_string(coord_->port()); }

  void StartCoordinator(bool mtls) {
    std::string config = "tls_cert = \"" + Pki("coordinator.crt") + "\"\n" + "tls_key = \"" +
                         Pki("coordinator.key") + "\"\n";
    if (mtls) config += "tls_client_ca = \"" + Pki("ca.crt") + "\"\n";
    coord_ = std::make_unique<Coordinator>(dir_, config);
    coord_->Start();
  }

  // jobctl with the admin token and no config file; `args` go before the command's.
  ProcessResult Jobctl(std::vector<std::string> args) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = {{"JOBCTL_TOKEN", coord_->admin_token()}, {"HOME", dir_.path()}, {"NO_COLOR", "1"}};
    o.unset_env = {"JOBCTL_COORDINATOR", "JOBCTL_CA_FILE", "JOBCTL_CLIENT_CERT",
                   "JOBCTL_CLIENT_KEY", "XDG_CONFIG_HOME"};
    o.cwd = dir_.path();
    o.timeout = seconds(60);
    return jobctl::testing::Run(args, o);
  }

  // agentd pointed at the TLS coordinator through agentd.toml alone.
  std::unique_ptr<Daemon> StartAgent(const std::string& name, const std::string& tls_keys) {
    struct passwd* pw = getpwuid(geteuid());
    std::string config = "coordinator = \"" + Url() + "\"\n" + "token_file = \"" +
                         dir_.Write(name + ".token", coord_->agent_token()) + "\"\n" +
                         "allow_run_as = [\"" + (pw ? pw->pw_name : "root") + "\"]\n" + tls_keys;
    std::string path = dir_.Write(name + ".toml", config);
    std::string log = dir_.path() + "/" + name + ".log";
    agent_logs_.push_back(log);
    return std::make_unique<Daemon>(
        std::vector<std::string>{AGENTD_BIN, "--config", path, "--name", name, "--state-dir",
                                 dir_.path() + "/state-" + name},
        log);
  }

  // The SHA-256 fingerprint of the certificate the coordinator serves now, as openssl prints it.
  std::string ServedFingerprint() {
    std::string cmd = "openssl s_client -connect 127.0.0.1:" + std::to_string(coord_->port()) +
                      " -CAfile " + Pki("ca.crt") +
                      " </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256";
    return jobctl::testing::Run({"/bin/sh", "-c", cmd}).out;
  }
  std::string FileFingerprint(const std::string& path) {
    return jobctl::testing::Run(
               {"/usr/bin/openssl", "x509", "-in", path, "-noout", "-fingerprint", "-sha256"})
        .out;
  }

  TempDir dir_;
  std::unique_ptr<Coordinator> coord_;
  std::vector<std::string> agent_logs_;
};

TEST_F(TlsTest, AgentWithCaFileRunsAJobAgainstTheTlsCoordinator) {
  StartCoordinator(/*mtls=*/false);
  auto agent = StartAgent("web-1", "ca_file = \"" + Pki("ca.crt") + "\"\n");
  std::vector<std::string> tls = {"--coordinator", Url(), "--ca-file", Pki("ca.crt")};
  dir_.Write("jobs.toml", kJobs);
  std::vector<std::string> apply = tls;
  apply.push_back("apply");
  ProcessResult applied = Jobctl(apply);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  std::vector<std::string> list = tls;
  list.push_back("list");
  ProcessResult listed = Jobctl(list);
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("hello"), std::string::npos) << listed.out;
  std::vector<std::string> trigger = tls;
  for (const char* a : {"trigger", "hello", "--wait", "--follow"}) trigger.push_back(a);
  ProcessResult run = Jobctl(trigger);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "hello over tls\n");
}

TEST_F(TlsTest, JobctlWithoutTheCaFailsWithAClearMessage) {
  StartCoordinator(/*mtls=*/false);
  ProcessResult r = Jobctl({"--coordinator", Url(), "list"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_NE(r.err.find("jobctl: list"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("TLS: cannot verify the certificate of " + Url()), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--ca-file"), std::string::npos) << r.err;
  // A CA file that is not there is a configuration problem, said before any request.
  ProcessResult missing = Jobctl({"--coordinator", Url(), "--ca-file", Pki("nope.crt"), "list"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("cannot read CA file " + Pki("nope.crt")), std::string::npos)
      << missing.err;
}

TEST_F(TlsTest, PlainHttpToTheTlsPortIsRefusedAndTheServerStaysHealthy) {
  StartCoordinator(/*mtls=*/false);
  std::string http = "http://127.0.0.1:" + std::to_string(coord_->port());
  ProcessResult r = Jobctl({"--coordinator", http, "list"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("this port speaks TLS: use an https:// URL"), std::string::npos) << r.err;
  ProcessResult after = Jobctl({"--coordinator", Url(), "--ca-file", Pki("ca.crt"), "list"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_TRUE(coord_->process().running());
}

TEST_F(TlsTest, WithClientCaAClientWithoutCertificateIsRefusedAndOneWithItWorks) {
  StartCoordinator(/*mtls=*/true);
  ProcessResult without = Jobctl({"--coordinator", Url(), "--ca-file", Pki("ca.crt"), "list"});
  EXPECT_EQ(without.exit_code, 69) << without.err;
  EXPECT_NE(without.err.find(Url()), std::string::npos) << without.err;
  EXPECT_NE(without.err.find("client certificate"), std::string::npos) << without.err;
  ProcessResult with = Jobctl({"--coordinator", Url(), "--ca-file", Pki("ca.crt"), "--client-cert",
                               Pki("web-1.crt"), "--client-key", Pki("web-1.key"), "list"});
  EXPECT_EQ(with.exit_code, 0) << with.err;
  // agentd with its certificate runs a job (the multi client presents it too).
  auto agent = StartAgent("web-1", "ca_file = \"" + Pki("ca.crt") + "\"\n" + "client_cert = \"" +
                                       Pki("web-1.crt") + "\"\n" + "client_key = \"" +
                                       Pki("web-1.key") + "\"\n");
  dir_.Write("jobs.toml", kJobs);
  std::vector<std::string> tls = {"--coordinator", Url(),           "--ca-file",
                                  Pki("ca.crt"),   "--client-cert", Pki("web-1.crt"),
                                  "--client-key",  Pki("web-1.key")};
  std::vector<std::string> apply = tls;
  apply.push_back("apply");
  ASSERT_EQ(Jobctl(apply).exit_code, 0);
  std::vector<std::string> trigger = tls;
  for (const char* a : {"trigger", "hello", "--wait", "--follow"}) trigger.push_back(a);
  ProcessResult run = Jobctl(trigger);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "hello over tls\n");

  // Under mTLS the certificate is the agent too: web-1's certificate does not enrol web-2.
  auto other = StartAgent("web-2", "ca_file = \"" + Pki("ca.crt") + "\"\n" + "client_cert = \"" +
                                       Pki("web-1.crt") + "\"\n" + "client_key = \"" +
                                       Pki("web-1.key") + "\"\n");
  EXPECT_TRUE(other->WaitForLog("the client certificate names", seconds(20)))
      << ReadFile(other->log_path());
  std::vector<std::string> agents = tls;
  for (const char* a : {"-o", "json", "agents"}) agents.push_back(a);
  ProcessResult agents_out = Jobctl(agents);
  ASSERT_EQ(agents_out.exit_code, 0) << agents_out.err;
  EXPECT_EQ(agents_out.out.find("web-2"), std::string::npos) << agents_out.out;
}

TEST_F(TlsTest, SighupServesTheNewCertificateAndKeepsItWhenTheNextOneIsBroken) {
  StartCoordinator(/*mtls=*/false);
  std::string before = FileFingerprint(Pki("coordinator.crt"));
  ASSERT_NE(before, "");
  ASSERT_EQ(ServedFingerprint(), before);
  // Renewed in place: same key, a new certificate from the same CA.
  ProcessResult renew = jobctl::testing::Run({"/bin/sh", "-c",
                                              "cd " + dir_.path() +
                                                  " && openssl x509 -req -in coordinator.csr -CA "
                                                  "ca.crt -CAkey ca.key -CAcreateserial -days 30 "
                                                  "-extfile server.ext -out coordinator.crt"});
  ASSERT_EQ(renew.exit_code, 0) << renew.err;
  std::string renewed = FileFingerprint(Pki("coordinator.crt"));
  ASSERT_NE(renewed, before);
  coord_->process().Signal(SIGHUP);
  EXPECT_TRUE(Coordinator::Eventually([&] { return ServedFingerprint() == renewed; }, seconds(20)));
  EXPECT_TRUE(coord_->process().WaitForLog("TLS certificate reloaded", seconds(5)));
  // A broken pair: logged, and the renewed certificate stays in use.
  dir_.Write("coordinator.crt", "not a certificate\n");
  coord_->process().Signal(SIGHUP);
  EXPECT_TRUE(coord_->process().WaitForLog("TLS reload failed", seconds(20)));
  EXPECT_EQ(ServedFingerprint(), renewed);
  ProcessResult listed = Jobctl({"--coordinator", Url(), "--ca-file", Pki("ca.crt"), "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
}

}  // namespace
}  // namespace jobctl::testing
