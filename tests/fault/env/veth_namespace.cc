#include "fault/env/veth_namespace.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>

#include "fault/env/must_run.h"
#include "testlib/subprocess.h"

namespace jobctl::testing {
namespace {

constexpr const char* kIp = "/usr/sbin/ip";
constexpr const char* kIptables = "/usr/sbin/iptables";
constexpr const char* kPrefix = "jfe";  // every namespace and veth this file makes

// The pid in a name made by this file ("jfe<pid>" or "jfe<pid>h"), or 0.
pid_t OwnerOf(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return 0;
  pid_t pid = 0;
  for (size_t i = 3; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

bool Dead(pid_t pid) { return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH; }

// A test process killed before its destructors ran leaves its namespace behind: delete those
// of processes that are gone, and host ends whose namespace went first.
void SweepLeftovers() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns", ec)) {
    std::string name = entry.path().filename();
    if (Dead(OwnerOf(name))) Run({kIp, "netns", "del", name});
  }
  ProcessResult links = Run({kIp, "-o", "link", "show"});
  size_t at = 0;
  while ((at = links.out.find(": jfe", at)) != std::string::npos) {
    size_t end = links.out.find_first_of("@:", at + 2);
    std::string name = links.out.substr(at + 2, end - at - 2);
    if (Dead(OwnerOf(name))) Run({kIp, "link", "del", name});
    at = end;
  }
}

}  // namespace

std::string VethNamespace::Unavailable() {
  if (::geteuid() != 0) return "needs root to create network namespaces";
  if (::access(kIp, X_OK) != 0) return "needs iproute2 (/usr/sbin/ip)";
  if (::access("/proc/self/ns/net", F_OK) != 0) return "the kernel has no network namespaces";
  return "";
}

VethNamespace::VethNamespace() {
  SweepLeftovers();
  pid_t pid = ::getpid();
  name_ = kPrefix + std::to_string(pid);
  host_veth_ = name_ + "h";
  ns_veth_ = name_ + "n";
  // A /30 in 10.231.0.0/16 picked from the pid; the next free one if taken.
  std::string taken = Run({kIp, "-o", "-4", "addr", "show"}).out;
  for (int i = 0; i < 16384; ++i) {
    int block = static_cast<int>((pid + i) % 16384);
    std::string base = "10.231." + std::to_string(block / 64) + ".";
    std::string host = base + std::to_string(block % 64 * 4 + 1);
    if (taken.find(" " + host + "/") != std::string::npos) continue;
    host_address_ = host;
    ns_address_ = base + std::to_string(block % 64 * 4 + 2);
    break;
  }
  // A namespace of an earlier process with this pid (it died without cleaning up) goes first.
  Run({kIp, "netns", "del", name_});
  Run({kIp, "link", "del", host_veth_});
  MustRun({kIp, "netns", "add", name_});
  try {
    MustRun({kIp, "link", "add", host_veth_, "type", "veth", "peer", "name", ns_veth_});
    MustRun({kIp, "link", "set", ns_veth_, "netns", name_});
    MustRun({kIp, "addr", "add", host_address_ + "/30", "dev", host_veth_});
    MustRun({kIp, "link", "set", host_veth_, "up"});
    Ip({"addr", "add", ns_address_ + "/30", "dev", ns_veth_});
    Ip({"link", "set", ns_veth_, "up"});
    Ip({"link", "set", "lo", "up"});
  } catch (...) {
    Run({kIp, "link", "del", host_veth_});
    Run({kIp, "netns", "del", name_});
    throw;
  }
}

VethNamespace::~VethNamespace() {
  // Deleting the namespace destroys the pair (and the rules inside); the host end only goes
  // by itself if it never reached the namespace.
  Run({kIp, "netns", "del", name_});
  Run({kIp, "link", "del", host_veth_});
}

Launch VethNamespace::launch() const { return {{kIp, "netns", "exec", name_}, {}}; }

void VethNamespace::SetLink(bool up) { Ip({"link", "set", ns_veth_, up ? "up" : "down"}); }

void VethNamespace::Iptables(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kIp, "netns", "exec", name_, kIptables};
  argv.insert(argv.end(), args.begin(), args.end());
  MustRun(argv);
}

void VethNamespace::Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kIp, "-n", name_};
  argv.insert(argv.end(), args.begin(), args.end());
  MustRun(argv);
}

}  // namespace jobctl::testing
