#include "policy.h"

#include <algorithm>
#include <filesystem>

namespace jobctl::agentd {
namespace {

bool Listed(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

Status CheckUser(const Assignment& a, const Policy& p, const AgentUser& self) {
  // Root is refused unless the host lists it, whether a job asks for it by name or gets it
  // by naming no user while agentd itself runs as root (as the packaged service does):
  // otherwise anyone who may apply a job file could run anything as root on every host.
  const std::string& user = a.run_as.empty() ? self.name : a.run_as;
  if (user == "root" || (a.run_as.empty() && self.is_root)) {
    if (Listed(p.allow_run_as, "root")) return Status::Ok();
    return Status::PermissionDenied(
        a.run_as.empty() ? "the job would run as root (agentd's own user; it sets no run_as) "
                           "and root is not in allow_run_as"
                         : "run_as root is refused: root is not in allow_run_as");
  }
  // No run_as: the shard runs as agentd's own (unprivileged) user.
  if (a.run_as.empty() || a.run_as == self.name) return Status::Ok();
  if (!Listed(p.allow_run_as, a.run_as)) {
    return Status::PermissionDenied("run_as \"" + a.run_as + "\" is not in allow_run_as");
  }
  if (!self.is_root) {
    return Status::PermissionDenied("agentd runs as \"" + self.name +
                                    "\" and cannot switch to run_as \"" + a.run_as + "\"");
  }
  return Status::Ok();
}

Status CheckProgram(const Assignment& a, const Policy& p) {
  if (p.allow_commands.empty()) return Status::Ok();
  const std::string program = a.shell.empty() ? a.command[0] : "/bin/sh";
  std::filesystem::path path(program);
  if (!path.is_absolute() || path.lexically_normal().string() != program) {
    return Status::PermissionDenied("program \"" + program +
                                    "\" is not an absolute normalized path, which "
                                    "allow_commands requires");
  }
  for (const std::string& prefix : p.allow_commands) {
    if (UnderPrefix(program, prefix)) return Status::Ok();
  }
  return Status::PermissionDenied("program \"" + program + "\" is not under allow_commands");
}

}  // namespace

bool UnderPrefix(const std::string& program, const std::string& prefix) {
  if (prefix.empty()) return false;
  if (program == prefix) return true;
  std::string dir = prefix.back() == '/' ? prefix : prefix + "/";
  return program.size() > dir.size() && program.compare(0, dir.size(), dir) == 0;
}

Status CheckPolicy(const Assignment& a, const Policy& policy, const AgentUser& self) {
  bool has_command = !a.command.empty();
  bool has_shell = !a.shell.empty();
  if (has_command == has_shell) {
    return Status::PermissionDenied("the shard must have exactly one of command and shell");
  }
  if (has_command && a.command[0].empty()) {
    return Status::PermissionDenied("the shard's command has an empty program name");
  }
  if (Status s = CheckUser(a, policy, self); !s.ok()) return s;
  return CheckProgram(a, policy);
}

}  // namespace jobctl::agentd
