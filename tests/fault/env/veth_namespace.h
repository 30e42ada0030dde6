// VethNamespace is a network namespace of a test's own, joined to this one by a veth pair, so
// that a test can cut an agent off from the coordinator and heal it again. The host end gets
// 10.231.X.Y+1/30 and the namespace end 10.231.X.Y+2/30 (X, Y from this process's pid, so
// concurrent tests never share a subnet); nothing else is ever addressed. A daemon started
// with launch() runs inside the namespace (`ip netns exec`); the coordinator listens on
// host_address(), which this side of the pair reaches locally whatever the link does.
//
// The destructor deletes the namespace, which takes both veth ends and every iptables rule
// made inside it along: nothing is left in this namespace's tables, even after a failure.
// Namespaces left by a test process that died (SIGKILL) are deleted by the next Create().
// Test thread only; needs root and iproute2 (Unavailable() says what is missing).
#pragma once

#include <string>
#include <vector>

#include "testlib/cluster.h"

namespace jobctl::testing {

class VethNamespace {
 public:
  // Why namespaces cannot be made here ("" when they can): not root, no `ip`, no netns support.
  static std::string Unavailable();

  VethNamespace();  // throws std::runtime_error when a command fails
  ~VethNamespace();
  VethNamespace(const VethNamespace&) = delete;
  VethNamespace& operator=(const VethNamespace&) = delete;

  const std::string& name() const { return name_; }
  const std::string& host_address() const { return host_address_; }
  const std::string& ns_address() const { return ns_address_; }
  // Starts a daemon inside the namespace.
  Launch launch() const;

  // Takes the namespace end of the pair down (both directions cut) or up again.
  void SetLink(bool up);
  // Runs `iptables ARGS` inside the namespace; throws when it fails.
  void Iptables(const std::vector<std::string>& args);
  // Runs `ip ARGS` inside the namespace; throws when it fails.
  void Ip(const std::vector<std::string>& args);

 private:
  std::string name_;       // the namespace, also in /run/netns
  std::string host_veth_;  // this side's end of the pair
  std::string ns_veth_;    // the end inside the namespace
  std::string host_address_;
  std::string ns_address_;
};

}  // namespace jobctl::testing
