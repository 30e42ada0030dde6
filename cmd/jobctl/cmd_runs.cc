// jobctl trigger, runs, logs, cancel, retry: runs of jobs, started by hand or by schedule.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "base/duration.h"
#include "cli.h"
#include "client.h"
#include "exit_codes.h"
#include "log_follower.h"
#include "model/time_format.h"
#include "model/trace_context.h"
#include "output.h"
#include "wire/trigger_request.h"

namespace jobctl::cli {

std::string ShardCount(const wire::RunView& run);

namespace {

using nlohmann::json;

std::atomic<bool> g_interrupted{false};

// The first Ctrl-C sets the flag the waiting loops check between their long-polls; it also
// gives SIGINT back its default action, so that a second Ctrl-C ends jobctl at once.
void CatchInterrupt() {
  std::signal(SIGINT, [](int) {
    g_interrupted = true;
    std::signal(SIGINT, SIG_DFL);
  });
}

bool Succeeded(const wire::RunView& run) { return run.state == "succeeded"; }

std::string Summary(const wire::RunView& run) {
  std::string s = "run " + std::to_string(run.id) + " of " + run.job + ": " + run.state;
  std::string hosts;
  for (const wire::ShardView& sh : run.shards) {
    hosts += (hosts.empty() ? "" : ", ") + std::string("shard ") + std::to_string(sh.index) + "@" +
             (sh.agent.empty() ? "-" : sh.agent) +
             (sh.exit_code ? " exit " + std::to_string(*sh.exit_code) : "") +
             (sh.outcome.empty() || sh.outcome == "exited" ? "" : " " + sh.outcome);
  }
  Result<WallTime> a = ParseInstant(run.created_at), b = ParseInstant(run.finished_at);
  if (a.ok() && b.ok()) s += " in " + FormatDuration(*b - *a);
  return s + (hosts.empty() ? "" : " (" + hosts + ")");
}

struct TriggerOptions {
  std::string job;
  bool wait = false;
  bool follow = false;
  std::vector<std::string> params;
  std::string key;
  std::string timeout;
  bool cancel_on_interrupt = false;
  std::string at;           // a deferred run: RFC 3339
  std::string in;           // or a duration from now
  std::string traceparent;  // the caller's W3C traceparent; else $TRACEPARENT
};

// Ctrl-C while waiting for run `id`: detach and say how to follow it, or cancel it with
// --cancel-on-interrupt. 130 either way once done; a cancel the coordinator refused or
// never answered exits with that error's code, and the run goes on.
int Interrupted(const TriggerOptions& opt, Client* client, int64_t id) {
  const std::string run = std::to_string(id);
  const std::string head =
      "jobctl: " + Shown("trigger " + opt.job, STDERR_FILENO) + ": interrupted; run " + run;
  if (!opt.cancel_on_interrupt) {
    std::cerr << head << " goes on. Follow it with: jobctl logs -f " << run
              << "; cancel it with: jobctl cancel " << run << '\n';
    return kExitInterrupted;
  }
  Result<json> canceled = client->Post("/v1/runs/" + run + "/cancel", json::object());
  if (!canceled.ok()) {
    std::cerr << head << " was NOT canceled and goes on: "
              << Shown(canceled.status().message(), STDERR_FILENO)
              << ". Cancel it with: jobctl cancel " << run << '\n';
    return ExitCodeFor(canceled.status());
  }
  std::cerr << head << " canceled; its agents stop its processes at their next heartbeat\n";
  return kExitInterrupted;
}

int RunTrigger(const TriggerOptions& opt, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("trigger", opt.job, client.status(), kExitConfig);
  wire::TriggerRequest req;
  for (const std::string& kv : opt.params) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Fail("trigger", opt.job,
                  Status::InvalidArgument("--param wants NAME=value, got \"" + kv + "\""),
                  kExitUsage);
    }
    req.params[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::optional<Millis> timeout;
  if (!opt.timeout.empty()) {
    Result<Millis> t = ParseDuration(opt.timeout);
    if (!t.ok()) return Fail("trigger", "--timeout", t.status(), kExitUsage);
    timeout = *t;
  }
  req.idempotency_key = opt.key;
  if (!opt.at.empty()) {
    Result<WallTime> at = ParseInstant(opt.at);
    if (!at.ok()) return Fail("trigger", "--at", at.status(), kExitUsage);
    req.at_ms = ToUnixMs(*at);
  }
  if (!opt.in.empty()) {
    Result<Millis> in = ParseDuration(opt.in);
    if (!in.ok()) return Fail("trigger", "--in", in.status(), kExitUsage);
    req.in = *in;
  }
  // The caller's trace: --traceparent, else $TRACEPARENT as CI systems and tracing tools set
  // it. A bad flag is an error; a bad variable is said and left out (the run gets its own).
  if (!opt.traceparent.empty()) {
    if (Result<TraceParent> tp = ParseTraceParent(opt.traceparent); !tp.ok()) {
      return Fail("trigger", "--traceparent", tp.status(), kExitUsage);
    }
    req.traceparent = opt.traceparent;
  } else if (const char* env = std::getenv("TRACEPARENT"); env != nullptr && *env != '\0') {
    if (Result<TraceParent> tp = ParseTraceParent(env); tp.ok()) {
      req.traceparent = env;
    } else {
      std::cerr << "jobctl: trigger: $TRACEPARENT left out: "
                << Shown(tp.status().message(), STDERR_FILENO) << "\n";
    }
  }
  // Ctrl-C detaches (or cancels with --cancel-on-interrupt); the loops below check the flag
  // between their short long-polls. Caught before the run exists, so that an interrupt
  // while it is being created still says which run goes on.
  if (opt.wait || opt.follow) CatchInterrupt();
  Result<json> reply = (*client)->Post("/v1/jobs/" + UrlEncode(opt.job) + "/trigger", req.ToJson());
  if (!reply.ok()) return Fail("trigger", opt.job, reply.status());
  Result<wire::RunView> run = ReplyAs<wire::RunView>(*reply);
  if (!run.ok()) return Fail("trigger", opt.job, run.status());
  const int64_t id = run->id;
  const std::string& starts = run->not_before;
  if (!starts.empty() && g.format() != OutputFormat::kJson) {
    std::cerr << "jobctl: trigger " << Shown(opt.job, STDERR_FILENO) << ": run " << id
              << " starts at " << LocalTime(starts) << "; until then: jobctl cancel " << id << '\n';
  }
  if (!opt.wait && !opt.follow) {
    if (g.format() == OutputFormat::kJson)
      PrintJson(*reply);
    else
      std::cout << id << '\n';
    return kExitOk;
  }
  auto deadline =
      timeout ? std::optional(std::chrono::steady_clock::now() + *timeout) : std::nullopt;
  if (opt.follow) {
    FollowOptions fo;
    fo.follow = true;
    fo.prefix = run->shard_total > 1;
    fo.stop = &g_interrupted;
    if (run->steps) {
      // A flow run: every step's output, each line prefixed with its step.
      FlowFollower follower(client->get(), id, fo);
      if (Status s = follower.Run(); !s.ok()) return Fail("trigger", opt.job, s);
    } else {
      LogFollower follower(client->get(), id, fo);
      if (Status s = follower.Run(); !s.ok()) return Fail("trigger", opt.job, s);
    }
  }
  json last;
  wire::RunView ended;
  // On a terminal, a spinner with the run's state and the time spent shows it is alive;
  // on a pipe (CI logs) nothing but the summary.
  const bool progress = !opt.follow && isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  static constexpr const char* kSpinner[] = {"|", "/", "-", "\\"};
  int tick = 0;
  while (true) {
    if (g_interrupted) return Interrupted(opt, client->get(), id);
    if (deadline && std::chrono::steady_clock::now() > *deadline) {
      std::cerr << "jobctl: trigger " << opt.job << ": gave up waiting for run " << id << " after "
                << opt.timeout << " (it goes on; jobctl logs -f " << id << ")\n";
      return kExitTempFail;
    }
    Result<json> r = (*client)->Get(
        "/v1/runs/" + std::to_string(id) + "/wait?timeout_ms=" + (progress ? "500" : "2000"),
        std::chrono::seconds(40));
    if (!r.ok()) return Fail("trigger", opt.job, r.status());
    Result<wire::RunView> now = ReplyAs<wire::RunView>(*r);
    if (!now.ok()) return Fail("trigger", opt.job, now.status());
    if (now->done.value_or(false) || !now->finished_at.empty()) {
      if (progress) std::cerr << "\r\x1b[K";
      last = *r;
      ended = std::move(now).value();
      break;
    }
    if (progress) {
      auto secs = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - started);
      std::cerr << "\r\x1b[K" << kSpinner[tick++ % 4] << " run " << id << " of "
                << Shown(opt.job + ": " + now->state, STDERR_FILENO) << " (" << FormatDuration(secs)
                << ")" << std::flush;
    }
  }
  if (g.format() == OutputFormat::kJson) {
    PrintJson(last);
  } else {
    std::cerr << Shown(Summary(ended), STDERR_FILENO) << '\n';
  }
  return Succeeded(ended) ? kExitOk : kExitFailed;
}

struct RunsOptions {
  std::string job;
  std::string state;
  std::string since;
  std::string trace;
  int limit = 20;
};

// A flow run's steps under it, each indented by its depth in the graph (a step one deeper than
// the deepest step it needs), in the flow's order, where a step follows what it needs.
void AddSteps(Table& t, const std::vector<wire::StepView>& steps, const GlobalOptions& g) {
  std::map<std::string, int> depth;
  for (const wire::StepView& s : steps) {
    int d = 1;
    for (const std::string& n : s.needs) d = std::max(d, depth[n] + 1);
    depth[s.name] = d;
    std::string what = std::string(static_cast<size_t>(2 * d), ' ') + s.name;
    if (s.when != "success") what += " (" + s.when + ")";
    std::string run = s.run == 0 ? "-" : std::to_string(s.run);
    std::string state = s.state;
    if (s.kept) state += " (kept)";
    std::string ok =
        s.shard_total > 0 ? std::to_string(s.shards_ok) + "/" + std::to_string(s.shard_total) : "-";
    std::string hosts;
    for (const std::string& h : s.hosts) hosts += (hosts.empty() ? "" : ",") + h;
    std::string detail = hosts.empty() ? (s.note.empty() ? "-" : s.note) : hosts;
    t.Add({run, what, "", "", Colored(state, g), ok, "", detail});
  }
}

int RunRuns(const RunsOptions& opt, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("runs", opt.job, client.status(), kExitConfig);
  std::string path = "/v1/runs?limit=" + std::to_string(opt.limit);
  if (!opt.job.empty()) path += "&job=" + UrlEncode(opt.job);
  if (!opt.state.empty()) path += "&state=" + UrlEncode(opt.state);
  if (!opt.trace.empty()) {
    if (!IsTraceId(opt.trace)) {
      return Fail("runs", "--trace",
                  Status::InvalidArgument("expected a trace id of 32 lowercase hex digits"),
                  kExitUsage);
    }
    path += "&trace=" + opt.trace;
  }
  if (!opt.since.empty()) {
    Result<Millis> d = ParseDuration(opt.since);
    if (!d.ok()) return Fail("runs", "--since", d.status(), kExitUsage);
    path += "&since=" + UrlEncode(FormatUtc(SystemClock().Now() - *d));
  }
  Result<json> reply = (*client)->Get(path);
  if (!reply.ok()) return Fail("runs", opt.job, reply.status());
  Result<std::vector<wire::RunView>> runs = ReplyListAs<wire::RunView>(*reply);
  if (!runs.ok()) return Fail("runs", opt.job, runs.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*reply);
    return kExitOk;
  }
  Table t({"RUN", "JOB", "REASON", "SCHEDULED", "STATE", "SHARDS OK", "PEAK MEM", "HOSTS"});
  for (const wire::RunView& r : *runs) {
    std::string hosts;
    std::optional<int64_t> peak;  // the largest of its shards'
    for (const wire::ShardView& s : r.shards) {
      const std::string& a = s.agent;
      if (!a.empty() && hosts.find(a) == std::string::npos) hosts += (hosts.empty() ? "" : ",") + a;
      if (s.peak_rss_bytes) peak = std::max(peak.value_or(0), *s.peak_rss_bytes);
    }
    // A fire's random delay (jitter) follows its time: "03:00:00 +1m12s".
    std::string scheduled = LocalTime(r.scheduled_at);
    if (r.jitter_ms) scheduled += " +" + FormatDuration(Millis(*r.jitter_ms));
    // Retention deleted its output: `jobctl logs` of it will say so.
    Cell state = r.output_pruned ? Cell(r.state + " (output pruned)") : Colored(r.state, g);
    t.Add({std::to_string(r.id), r.job, r.reason, scheduled, state, ShardCount(r), UsageSize(peak),
           hosts.empty() ? "-" : hosts});
    if (r.steps) AddSteps(t, *r.steps, g);
  }
  t.Print(std::cout);
  return kExitOk;
}

struct LogsOptions {
  std::string target;
  std::string since;
  bool follow = false;
  int shard = -1;
  std::string stream;
  std::string color = "never";  // never, auto or always: the job's own colours on a terminal
  bool raw = false;
};

int RunLogs(const LogsOptions& opt, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("logs", opt.target, client.status(), kExitConfig);
  int64_t run = 0;
  bool numeric =
      !opt.target.empty() && opt.target.find_first_not_of("0123456789") == std::string::npos;
  if (numeric) {
    run = std::stoll(opt.target);
  } else {
    // A job name means its latest run.
    Result<json> reply = (*client)->Get("/v1/runs?limit=1&job=" + UrlEncode(opt.target));
    if (!reply.ok()) return Fail("logs", opt.target, reply.status());
    Result<std::vector<wire::RunView>> runs = ReplyListAs<wire::RunView>(*reply);
    if (!runs.ok()) return Fail("logs", opt.target, runs.status());
    if (runs->empty()) return Fail("logs", opt.target, Status::NotFound("the job has no runs yet"));
    run = runs->front().id;
  }
  Result<json> reply = (*client)->Get("/v1/runs/" + std::to_string(run));
  if (!reply.ok()) return Fail("logs", opt.target, reply.status());
  Result<wire::RunView> info = ReplyAs<wire::RunView>(*reply);
  if (!info.ok()) return Fail("logs", opt.target, info.status());
  CatchInterrupt();
  FollowOptions fo;
  fo.follow = opt.follow;
  if (opt.shard >= 0) fo.shard = opt.shard;
  fo.stream = opt.stream;
  if (!opt.since.empty()) {
    Result<Millis> d = ParseDuration(opt.since);
    if (!d.ok()) return Fail("logs", "--since", d.status(), kExitUsage);
    fo.since = SystemClock().Now() - *d;
  }
  fo.prefix = opt.shard < 0 && info->shard_total > 1;
  fo.stop = &g_interrupted;
  const bool keep = opt.color == "always" || (opt.color == "auto" && ColorEnabled(g));
  fo.sgr = keep ? SgrPolicy::kKeep : SgrPolicy::kDrop;
  fo.raw = opt.raw;
  if (info->steps) {
    FlowFollower follower(client->get(), run, fo);
    if (Status s = follower.Run(); !s.ok()) return Fail("logs", opt.target, s);
    return g_interrupted ? kExitInterrupted : kExitOk;
  }
  LogFollower follower(client->get(), run, fo);
  if (Status s = follower.Run(); !s.ok()) return Fail("logs", opt.target, s);
  if (!follower.pruned().empty()) {
    std::cerr << "jobctl: logs " << Shown(opt.target, STDERR_FILENO) << ": output pruned ("
              << Shown(follower.pruned(), STDERR_FILENO) << ")\n";
  }
  return g_interrupted ? kExitInterrupted : kExitOk;
}

int RunAction(const std::string& verb, const std::string& run, bool failed_shards,
              const std::vector<std::string>& from, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail(verb, run, client.status(), kExitConfig);
  json body = json::object();
  if (failed_shards) body["failed_shards"] = true;
  if (!from.empty()) body["from"] = from;
  Result<json> r = (*client)->Post("/v1/runs/" + UrlEncode(run) + "/" + verb, body);
  if (!r.ok()) return Fail(verb, run, r.status());
  // A retry answers with the new run; a cancel with the run as it ended, or only its id.
  Result<wire::RunView> retried = verb == "retry" ? ReplyAs<wire::RunView>(*r) : wire::RunView{};
  if (!retried.ok()) return Fail(verb, run, retried.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
  } else if (verb == "retry") {
    std::cout << retried->id << '\n';
  } else {
    std::cout << "run " << Shown(run) << " canceled\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterRuns(CLI::App& app, GlobalOptions& g, int* rc) {
  auto t = std::make_shared<TriggerOptions>();
  auto* trigger = app.add_subcommand("trigger", "Run a job now");
  trigger->add_option("name", t->job, "Job name")->required();
  trigger->add_flag("--wait", t->wait, "Wait for the run to end; exit 0 if it succeeded, 1 if not");
  trigger->add_flag("--follow", t->follow,
                    "Stream the output of every shard while it runs (implies --wait)");
  trigger
      ->add_option("-p,--param,--env", t->params,
                   "Set a parameter the job declares (jobs.toml params), NAME=value; "
                   "repeatable; others are refused")
      ->allow_extra_args(false);
  trigger->add_option("--idempotency-key", t->key, "The same key never starts a second run");
  trigger->add_option("--timeout", t->timeout,
                      "Stop waiting after this long (exit 75; the run goes on)");
  auto* at = trigger->add_option(
      "--at", t->at,
      "Start the run at this time instead of now (RFC 3339, e.g. 2026-12-01T03:00:00Z or with an "
      "offset); it is created at once, survives restarts and can be canceled until then");
  trigger->add_option("--in", t->in, "Start the run after this long, e.g. 2h (like --at)")
      ->excludes(at);
  trigger->add_flag("--cancel-on-interrupt", t->cancel_on_interrupt,
                    "Ctrl-C cancels the run instead of detaching (exit 130 once canceled)");
  trigger->add_option("--traceparent", t->traceparent,
                      "The caller's W3C traceparent: the run joins its trace (default: "
                      "$TRACEPARENT when set)");
  trigger->footer(
      "Without --wait prints the run id. In CI:\n"
      "  jobctl trigger deploy-cache --wait --follow\n"
      "  jobctl trigger deploy-web --param VERSION=1.4.2 --wait\n"
      "Later, once: jobctl trigger reindex --in 2h   (or --at 2026-12-01T03:00:00+01:00)\n"
      "Exit status: 0 the run succeeded, 1 it failed (exit code, timeout, lost, canceled),\n"
      "69 coordinator unreachable, 77 not authorized, 75 --timeout passed, 130 interrupted\n"
      "(Ctrl-C: the run goes on, or with --cancel-on-interrupt it was canceled).\n"
      "A pipeline's trace continues into the run: its trace id is the run's trace_id and\n"
      "every shard's TRACEPARENT; jobctl runs --trace ID lists the runs of a trace.");
  trigger->callback([t, &g, rc] { *rc = RunTrigger(*t, g); });

  auto r = std::make_shared<RunsOptions>();
  auto* runs = app.add_subcommand("runs", "List runs, newest first");
  runs->add_option("name", r->job, "Only this job's runs");
  runs->add_option("--state", r->state,
                   "pending, running, succeeded, failed, timed_out, canceled, skipped or lost");
  runs->add_option("--since", r->since, "Only runs created within this duration, e.g. 2h");
  runs->add_option("--limit", r->limit, "At most this many")->check(CLI::Range(1, 10000));
  runs->add_option("--trace", r->trace,
                   "Only the runs of this trace (its 32-hex-digit id, as in TRACEPARENT)");
  runs->footer(
      "Example:\n  jobctl runs nightly-backup --state failed --since 24h\n"
      "  jobctl runs --trace 4bf92f3577b34da6a3ce929d0e0e4736\n"
      "JSON: array of runs, newest first: id, job, reason, scheduled_at, created_at,\n"
      "finished_at, state, trace_id, note, shard_total, shards[index, agent, state,\n"
      "attempt, token, exit_code, outcome, message, started_at, finished_at,\n"
      "peak_rss_bytes, cpu_ms]. PEAK MEM is the largest resident set one process of a\n"
      "shard reached, as its agent measured it (- where not reported).");
  runs->callback([r, &g, rc] { *rc = RunRuns(*r, g); });

  auto l = std::make_shared<LogsOptions>();
  auto* logs = app.add_subcommand("logs", "Print a run's output (RUN id, or a job's latest run)");
  logs->add_option("run", l->target, "Run id, or job name for its latest run")->required();
  logs->add_flag("-f,--follow", l->follow, "Keep printing until the run ends (Ctrl-C: exit 130)");
  logs->add_option("--shard", l->shard, "Only this shard");
  logs->add_option("--since", l->since, "Only output printed within this duration, e.g. 10m");
  logs->add_option("--stream", l->stream, "Only stdout or stderr")
      ->check(CLI::IsMember({"stdout", "stderr"}));
  logs->add_option("--color", l->color,
                   "On a terminal, the job's colours: never (default: removed), auto (kept "
                   "unless NO_COLOR or --no-color), always")
      ->check(CLI::IsMember({"never", "auto", "always"}));
  logs->add_flag("--raw", l->raw,
                 "On a terminal too, write the output byte for byte, escape sequences and all");
  logs->footer(
      "Example:\n  jobctl logs -f 1234\n  jobctl logs nightly-backup --stream stderr\n"
      "On a terminal, control characters and escape sequences in the output are shown, not\n"
      "obeyed (ESC as ^[, C1 controls as \\u009b, bytes that are not UTF-8 as \\xff); into a\n"
      "pipe or a file the output is written exactly as the job printed it.");
  logs->callback([l, &g, rc] { *rc = RunLogs(*l, g); });

  for (const char* verb : {"cancel", "retry"}) {
    auto run = std::make_shared<std::string>();
    auto failed_shards = std::make_shared<bool>(false);
    auto from = std::make_shared<std::vector<std::string>>();
    const bool retry = std::string(verb) == "retry";
    auto* sub = app.add_subcommand(verb, retry ? "Run a failed run again (a new run, reason retry)"
                                               : "Cancel a run: its shards' processes are killed");
    sub->add_option("run", *run, "Run id")->required();
    if (retry) {
      sub->add_flag("--failed-shards", *failed_shards,
                    "Run only the shards that did not succeed; the new run keeps the others as "
                    "they ended (outcome \"kept\")");
      sub->add_option("--from", *from,
                      "A flow run: run this step again, with every step that needs it (repeat "
                      "for several); the other steps keep how they ended. Default: the steps "
                      "that failed");
      sub->footer(
          "Examples:\n  jobctl retry 1234\n  jobctl retry 1234 --failed-shards\n"
          "  jobctl retry 812 --from load\n"
          "Prints the new run's id (-o json: the run). The new run uses the job's definition\n"
          "as it is now; with --failed-shards the job must still have the run's shard count.\n"
          "A flow run is retried as a new flow run with the graph it ran with: the steps run\n"
          "again start from their jobs' definitions as they are now, the others are kept.");
    } else {
      sub->footer("Example:\n  jobctl cancel 1234");
    }
    std::string v = verb;
    sub->callback([run, v, failed_shards, from, &g, rc] {
      *rc = RunAction(v, *run, *failed_shards, *from, g);
    });
  }
}

}  // namespace jobctl::cli
