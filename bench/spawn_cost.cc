// The spawn-cost phase of agent_bench: does starting a child get dearer as the agent grows?
// It runs in the bench process itself, with agentd's own UvRunner on a private loop, after
// growing this process by a ballast of touched anonymous memory (what a big spool buffer or
// many held shards would be). For reference the same children are started with libuv's
// uv_spawn, which forks in libuv 1.44 (Debian 12) and so copies the page tables of the whole
// process for every child. Each child is /bin/true with its output on pipes; at most 64 run
// at once. Reported: children per second (wall) and the spawner's own CPU per child
// (getrusage: user + system of this process, children excluded).
#include "bench/spawn_cost.h"

#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "agentd/cgroup.h"
#include "agentd/job_runner.h"
#include "bench/bench_util.h"

namespace jobctl::bench {
namespace {

constexpr int kConcurrent = 64;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Figures {
  double per_s = 0;
  double cpu_us = 0;  // per child
  int failed = 0;
};

// Starts `n` children, keeping up to kConcurrent running; `start` begins one and calls
// `done` once it is over. Returns false if one failed to start.
Figures Drive(uv_loop_t* loop, int n, const std::function<bool(std::function<void()>)>& start) {
  int started = 0, finished = 0, failed = 0;
  std::function<void()> top_up;
  top_up = [&] {
    while (started < n && started - finished < kConcurrent) {
      ++started;
      if (!start([&] {
            ++finished;
            top_up();
          })) {
        ++failed;
        ++finished;
      }
    }
  };
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  top_up();
  while (finished < n && uv_run(loop, UV_RUN_ONCE) != 0) {
  }
  double wall = Seconds(Clock::now() - t0), cpu = CpuSeconds() - cpu0;
  return {n / wall, cpu / n * 1e6, failed};
}

// With `tree`, each child in a cgroup of its own, made and removed per child, as agentd does.
Figures WithRunner(int n, const agentd::CgroupTree* tree = nullptr) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  auto runner = std::make_unique<agentd::UvRunner>(&loop);
  runner->UseCgroups(tree);
  agentd::SpawnSpec spec{{"/bin/true"}, {"PATH=/usr/bin:/bin"}, "/"};
  RunId next = 0;
  Figures f = Drive(&loop, n, [&](std::function<void()> done) {
    agentd::Runner::Callbacks cb;
    cb.on_output = [](agentd::ChunkStream, std::string_view) {};
    cb.on_exit = [done](agentd::ExitInfo) { done(); };
    if (tree != nullptr) spec.cgroup = AttemptKey{++next, 0, 1};
    return runner->Start(spec, std::chrono::milliseconds(1000), std::move(cb)).ok();
  });
  // Cgroups whose processes were still dying are removed by the runner's retries.
  while (runner->cgroups_to_remove() > 0) uv_run(&loop, UV_RUN_ONCE);
  runner->Close([] {});
  uv_run(&loop, UV_RUN_DEFAULT);
  runner.reset();
  uv_loop_close(&loop);
  return f;
}

// libuv's own spawn with the same pipes, for reference.
struct UvChild {
  uv_process_t process{};
  uv_pipe_t out{}, err{};
  int open = 3;
  std::function<void()> done;
};

void CloseUvChild(uv_handle_t* h) {
  auto* c = static_cast<UvChild*>(h->data);
  if (--c->open == 0) {
    std::function<void()> done = std::move(c->done);
    delete c;
    done();
  }
}

Figures WithUvSpawn(int n) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  char file[] = "/bin/true";
  char* args[] = {file, nullptr};
  char path_env[] = "PATH=/usr/bin:/bin";
  char* env[] = {path_env, nullptr};
  Figures f = Drive(&loop, n, [&](std::function<void()> done) {
    auto* c = new UvChild;
    c->done = std::move(done);
    uv_pipe_init(&loop, &c->out, 0);
    uv_pipe_init(&loop, &c->err, 0);
    c->process.data = c->out.data = c->err.data = c;
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[1].data.stream = reinterpret_cast<uv_stream_t*>(&c->out);
    stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[2].data.stream = reinterpret_cast<uv_stream_t*>(&c->err);
    uv_process_options_t options{};
    options.file = file;
    options.args = args;
    options.env = env;
    options.flags = UV_PROCESS_DETACHED;
    options.stdio_count = 3;
    options.stdio = stdio;
    options.exit_cb = [](uv_process_t* p, int64_t, int) {
      auto* ch = static_cast<UvChild*>(p->data);
      uv_close(reinterpret_cast<uv_handle_t*>(&ch->out), CloseUvChild);
      uv_close(reinterpret_cast<uv_handle_t*>(&ch->err), CloseUvChild);
      uv_close(reinterpret_cast<uv_handle_t*>(p), CloseUvChild);
    };
    if (uv_spawn(&loop, &c->process, &options) != 0) {
      std::function<void()> ignored = std::move(c->done);
      uv_close(reinterpret_cast<uv_handle_t*>(&c->out), CloseUvChild);
      uv_close(reinterpret_cast<uv_handle_t*>(&c->err), CloseUvChild);
      uv_close(reinterpret_cast<uv_handle_t*>(&c->process), CloseUvChild);
      c->done = [] {};
      return false;
    }
    return true;
  });
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return f;
}

}  // namespace

void SpawnCostPhase(int spawns, const std::vector<int>& ballast_mib) {
  Result<agentd::CgroupTree> tree = agentd::CgroupTree::Open(/*move_self=*/false);
  if (!tree.ok()) {
    std::printf("spawncost: no cgroup per child measured: %s\n", tree.status().message().c_str());
  }
  for (int mib : ballast_mib) {
    std::vector<char> ballast(static_cast<size_t>(mib) << 20);
    // Touch every page, so the ballast is resident and mapped.
    for (size_t i = 0; i < ballast.size(); i += 4096) ballast[i] = 1;
    double rss = Sample(getpid()).rss_mib;
    Figures runner = WithRunner(spawns), uv = WithUvSpawn(spawns);
    std::printf(
        "spawncost %d children of /bin/true from a %.0f MiB process: agentd's runner (posix_spawn) "
        "%.0f/s, %.0f us CPU each%s; libuv uv_spawn (fork) %.0f/s, %.0f us CPU each%s\n",
        spawns, rss, runner.per_s, runner.cpu_us, runner.failed ? " (SOME FAILED)" : "", uv.per_s,
        uv.cpu_us, uv.failed ? " (SOME FAILED)" : "");
    if (tree.ok()) {
      Figures in_cgroups = WithRunner(spawns, &*tree);
      std::printf(
          "spawncost %d children of /bin/true from a %.0f MiB process: agentd's runner with a "
          "cgroup per child (clone3, mkdir, cgroup.kill, rmdir) %.0f/s, %.0f us CPU each%s: "
          "%+.0f us CPU per child\n",
          spawns, rss, in_cgroups.per_s, in_cgroups.cpu_us,
          in_cgroups.failed ? " (SOME FAILED)" : "", in_cgroups.cpu_us - runner.cpu_us);
    }
    std::fflush(stdout);
  }
  if (tree.ok()) rmdir(tree->dir().c_str());
}

}  // namespace jobctl::bench
