#include "spawn_spec.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

namespace jobctl::agentd {
namespace {

bool IsLowerHex(const std::string& s, size_t n) {
  if (s.size() != n) return false;
  bool non_zero = false;
  for (char c : s) {
    bool digit = c >= '0' && c <= '9', letter = c >= 'a' && c <= 'f';
    if (!digit && !letter) return false;
    non_zero = non_zero || c != '0';
  }
  return non_zero;
}

Result<UserInfo> FromPasswd(int rc, const passwd* pw, const std::string& what) {
  if (pw == nullptr) {
    return rc == 0 ? Status::NotFound("no such user " + what)
                   : Status::Unavailable("looking up user " + what + ": " + std::strerror(rc));
  }
  return UserInfo{pw->pw_name, pw->pw_uid, pw->pw_gid, pw->pw_dir ? pw->pw_dir : "/",
                  pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh"};
}

}  // namespace

Result<UserInfo> LookUpUser(const std::string& name) {
  passwd pw{}, *found = nullptr;
  std::vector<char> buf(16384);
  int rc = getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  return FromPasswd(rc, found, "\"" + name + "\"");
}

Result<UserInfo> CurrentUser() {
  passwd pw{}, *found = nullptr;
  std::vector<char> buf(16384);
  uid_t uid = geteuid();
  int rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
  if (found == nullptr && rc == 0) {
    // A uid without a passwd entry (containers): still usable, with neutral values.
    return UserInfo{std::to_string(uid), uid, getegid(), "/", "/bin/sh"};
  }
  return FromPasswd(rc, found, "uid " + std::to_string(uid));
}

std::string TraceParent(const std::string& trace_id, const std::string& span_id) {
  if (!IsLowerHex(trace_id, 32) || !IsLowerHex(span_id, 16)) return "";
  return "00-" + trace_id + "-" + span_id + "-01";
}

SpawnSpec BuildSpawnSpec(const Assignment& a, const SpawnContext& c) {
  // Cron's order: the user's identity first, then the job's env (which may change HOME or
  // SHELL but not who the user is), then what the agent guarantees.
  std::map<std::string, std::string> env = {{"HOME", c.user.home}, {"SHELL", c.user.shell}};
  if (a.step) {
    // Checked when the grant was read; checked again here, where it matters. Under a prefix
    // of agentd's own: what one step wrote can never be a variable another program reads
    // for its own purposes (git, a shell, an interpreter) in a step that may run as another
    // user.
    for (const auto& [k, v] : a.step->outputs) {
      if (OutputKeyProblem(k).empty() && OutputValueProblem(v).empty()) env["JOB_OUT_" + k] = v;
    }
  }
  for (const auto& [k, v] : a.env) env[k] = v;
  for (const auto& [k, v] : c.secrets) env[k] = v;
  if (!env.count("PATH")) env["PATH"] = kDefaultPath;
  env["USER"] = c.user.name;
  env["LOGNAME"] = c.user.name;
  env["JOB_NAME"] = a.job;
  env["JOB_RUN_ID"] = std::to_string(a.key.run);
  env["JOB_SHARD_INDEX"] = std::to_string(a.key.shard);
  env["JOB_SHARD_TOTAL"] = std::to_string(a.shard_total);
  env["JOB_SCHEDULED_AT"] = a.scheduled_at;
  env["JOB_ATTEMPT"] = std::to_string(a.key.attempt);
  env["JOB_FENCING_TOKEN"] = std::to_string(a.token);
  if (std::string tp = TraceParent(a.trace_id, c.span_id); !tp.empty()) env["TRACEPARENT"] = tp;
  if (a.step) {
    env["JOB_FLOW"] = a.step->flow;
    env["JOB_FLOW_RUN_ID"] = std::to_string(a.step->flow_run);
    env["JOB_STEP"] = a.step->step;
    for (const auto& [need, run] : a.step->needs) {
      env["JOB_NEED_" + StepEnvName(need) + "_RUN_ID"] = std::to_string(run);
    }
    if (!c.output_path.empty()) env["JOB_OUTPUT"] = c.output_path;
  }

  SpawnSpec spec;
  std::vector<std::string> entries;
  for (const auto& [k, v] : env) entries.push_back(k + "=" + v);
  std::vector<std::string> argv =
      a.shell.empty() ? a.command : std::vector<std::string>{"/bin/sh", "-c", a.shell};
  std::string cwd = !a.cwd.empty() ? a.cwd : a.run_as.empty() ? c.state_dir : c.user.home;
  if (c.switch_user) {
    // The helper enters cwd after dropping privileges, so the user must be able to.
    spec.argv = {c.exe_path, "--exec-as", c.user.name, "--cwd", cwd, "--"};
    spec.argv.insert(spec.argv.end(), argv.begin(), argv.end());
    spec.cwd = "/";
    // The helper itself runs as root with no environment at all.
    for (const std::string& e : entries) spec.helper_input.append(e).push_back('\0');
  } else {
    spec.argv = std::move(argv);
    spec.cwd = cwd;
    spec.env = std::move(entries);
  }
  spec.cgroup = a.key;
  spec.limits = a.limits;
  return spec;
}

}  // namespace jobctl::agentd
