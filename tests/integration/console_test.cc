// The web console (/ui/) in a real headless Chromium against the real `jobctl serve` and
// agentd on loopback: the jobs list shows an applied file; a running job's output appears
// while it runs, escape sequences rendered as colour and markup shown as text; a trigger token
// triggers and a read token is refused with a message on the page; a job's timeline shows
// its failures; the fleet page shows the agent and its runs. Every test also checks that the
// page asked nothing of any other origin and reported no script error or policy violation.
//
// Needs Debian's chromium (packaging/install-deps installs it); without it the tests skip,
// except under CI=true, where they fail. JOBCTL_SCREENSHOTS=DIR writes the README's pictures
// (console-jobs.png, console-job.png, console-run.png, console-fleet.png) to DIR.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "testlib/browser.h"
#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

class ConsoleTest : public CoordinatorFixture {
 protected:
  void SetUp() override {
    if (Browser::Find().empty()) {
      if (InCi()) FAIL() << "chromium is missing (packaging/install-deps installs it)";
      GTEST_SKIP() << "chromium not found (Debian's chromium; packaging/install-deps installs it)";
    }
    Start();
    agent_ = std::make_unique<AgentProcess>(*coord_, dir_, "web-1",
                                            std::vector<std::string>{"--labels", "role=web"});
    ASSERT_TRUE(Coordinator::Eventually(
        [this] { return coord_->GetJson("/v1/agents").size() == 1; }, seconds(20)));
    browser_ = std::make_unique<Browser>(dir_);
  }
  void TearDown() override {
    if (browser_ && HasFailure()) {
      std::string text = browser_->Eval("location.href + '\\n' + document.body.innerText").dump();
      if (text.size() > 4000)
        text = text.substr(0, 2000) + " [...] " + text.substr(text.size() - 2000);
      std::cerr << "---- the page ----\n" << text << "\n";
    }
    if (browser_) {
      browser_->Eval("0");  // reads the events still in the pipe
      // Nothing but the coordinator itself (and data: URLs of the page's own making).
      for (const std::string& url : browser_->requests()) {
        bool own = url.rfind(coord_->url() + "/", 0) == 0 || url.rfind("data:", 0) == 0 ||
                   url.rfind("blob:", 0) == 0 || url == "about:blank";
        EXPECT_TRUE(own) << "the page asked another origin: " << url;
      }
      EXPECT_TRUE(browser_->errors().empty())
          << "the page reported: " << json(browser_->errors()).dump(2);
    }
    browser_.reset();
    if (HasFailure() && agent_) std::cerr << "---- agentd log ----\n" << agent_->Logs();
    agent_.reset();
    CoordinatorFixture::TearDown();
  }
  // A token of `role` (read, trigger) for `jobs`, made through the API.
  std::string Token(const std::string& role, const std::string& jobs = "") {
    json body = {{"name", role + "-console"}, {"role", role}};
    if (!jobs.empty()) body["jobs"] = jobs;
    return coord_->PostJson("/v1/tokens", body).at("token").get<std::string>();
  }
  void Open(const std::string& route, const std::string& token) {
    browser_->Navigate(coord_->url() + "/ui/#" + route + "&token=" + token);
  }
  // A JS string literal.
  static std::string Js(const std::string& s) { return json(s).dump(); }
  std::string Text(const std::string& selector) {
    json v = browser_->Eval("(document.querySelector(" + Js(selector) +
                            ") || {textContent: ''}).textContent");
    return v.is_string() ? v.get<std::string>() : "";
  }
  void Picture(const std::string& name) {
    const char* dir = std::getenv("JOBCTL_SCREENSHOTS");
    if (dir == nullptr || *dir == '\0') return;
    std::filesystem::create_directories(dir);
    browser_->Screenshot(std::string(dir) + "/" + name);
  }
  std::unique_ptr<AgentProcess> agent_;
  std::unique_ptr<Browser> browser_;
};

TEST_F(ConsoleTest, TheJobsListShowsAFreshlyAppliedFileFailingFirst) {
  coord_->Apply(R"([[job]]
name = "backup"
description = "nightly backup"
schedule = "15 2 * * *"
shell = "true"
on = ["role=web"]
[[job]]
name = "broken"
schedule = "@yearly"
shell = "echo failing; exit 3"
[[job]]
name = "cache-warm"
schedule = "*/5 * * * *"
timezone = "Europe/Berlin"
shell = "true"
on = ["role=web", "dc!=fra1"]
)");
  json run = coord_->PostJson("/v1/jobs/broken/trigger", json::object());
  ASSERT_EQ(coord_->WaitRun(run["id"], seconds(20))["state"], "failed");
  Open("/jobs", coord_->admin_token());
  ASSERT_TRUE(browser_->WaitFor("document.body.dataset.jobsLoaded === '3'", seconds(15)));
  json names =
      browser_->Eval("[...document.querySelectorAll('.jobs-row')].map(r => r.dataset.job)");
  // The failing job first, then by name.
  EXPECT_EQ(names, json({"broken", "backup", "cache-warm"}));
  EXPECT_NE(Text(".jobs-row[data-job=backup]").find("every day at 02:15"), std::string::npos);
  EXPECT_NE(Text(".jobs-row[data-job=broken]").find("failed"), std::string::npos);
  // The strip of recent runs: one red mark for broken.
  ASSERT_TRUE(browser_->WaitFor(
      "document.querySelectorAll('.jobs-row[data-job=broken] .strip a.b-failed').length === 1",
      seconds(10)));
  // The role the page holds is shown.
  EXPECT_NE(Text("#who").find("(admin)"), std::string::npos);
  // "/" puts the cursor in the filter; Theme switches between dark and light.
  browser_->Eval(
      "document.body.focus(); document.dispatchEvent(new KeyboardEvent('keydown', {key: '/'}))");
  EXPECT_EQ(browser_->Eval("document.activeElement.id"), "filter");
  json theme = browser_->Eval("document.documentElement.dataset.theme");
  browser_->Eval("document.getElementById('theme').click()");
  EXPECT_NE(browser_->Eval("document.documentElement.dataset.theme"), theme);
  // The filter.
  browser_->Eval(
      "(() => { const f = document.getElementById('filter'); f.value = 'cache';"
      " f.dispatchEvent(new Event('input')); })()");
  ASSERT_TRUE(
      browser_->WaitFor("document.querySelectorAll('.jobs-row').length === 1 && "
                        "document.querySelector('.jobs-row').dataset.job === 'cache-warm'",
                        seconds(5)));
  browser_->Eval(
      "(() => { const f = document.getElementById('filter'); f.value = '';"
      " f.dispatchEvent(new Event('input')); })()");
  ASSERT_TRUE(browser_->WaitFor("document.querySelectorAll('.jobs-row').length === 3", seconds(5)));
  // A job's row shows the labels it runs on, and the label filter keeps the jobs whose `on`
  // has every term: a selector as written, or a key alone.
  EXPECT_EQ(Text(".jobs-row[data-job=cache-warm] .labels"), "  role=web dc!=fra1");
  EXPECT_EQ(Text(".jobs-row[data-job=broken] .labels"), "");
  auto labels = [this](const std::string& terms) {
    browser_->Eval("(() => { const f = document.getElementById('label-filter'); f.value = " +
                   Js(terms) + "; f.dispatchEvent(new Event('input')); })()");
  };
  auto shown = "[...document.querySelectorAll('.jobs-row')].map(r => r.dataset.job).join()";
  labels("role=web");
  ASSERT_TRUE(browser_->WaitFor(std::string(shown) + " === 'backup,cache-warm'", seconds(5)))
      << browser_->Eval(shown);
  EXPECT_NE(Text("#count").find("2 jobs match"), std::string::npos);
  labels("role=web dc!=fra1");
  ASSERT_TRUE(browser_->WaitFor(std::string(shown) + " === 'cache-warm'", seconds(5)));
  labels("dc");
  ASSERT_TRUE(browser_->WaitFor(std::string(shown) + " === 'cache-warm'", seconds(5)));
  labels("role=db");
  ASSERT_TRUE(browser_->WaitFor(
      std::string(shown) + " === '' && "
                           "document.getElementById('count').textContent === '0 jobs match'",
      seconds(5)));
  // "/" typed in the labels box stays there (values may hold one: zone=eu/west).
  browser_->Eval(
      "document.getElementById('label-filter').focus();"
      "document.dispatchEvent(new KeyboardEvent('keydown', {key: '/', cancelable: true}))");
  EXPECT_EQ(browser_->Eval("document.activeElement.id"), "label-filter");
  labels("");
  ASSERT_TRUE(browser_->WaitFor("document.querySelectorAll('.jobs-row').length === 3", seconds(5)));
  Picture("console-jobs.png");
}

// The rows in view are read again every 10 seconds: a run that ends while the list is open
// shows there without a reload.
TEST_F(ConsoleTest, TheJobsListShowsARunThatEndedWhileItWasOpen) {
  coord_->Apply(R"([[job]]
name = "later"
schedule = "@yearly"
shell = "exit 4"
)");
  Open("/jobs", coord_->admin_token());
  ASSERT_TRUE(browser_->WaitFor("document.body.dataset.jobsLoaded === '1'", seconds(15)));
  EXPECT_NE(Text(".jobs-row[data-job=later]").find("no run yet"), std::string::npos);
  browser_->Eval("window.sameDocument = true");
  json run = coord_->PostJson("/v1/jobs/later/trigger", json::object());
  ASSERT_EQ(coord_->WaitRun(run["id"], seconds(20))["state"], "failed");
  ASSERT_TRUE(browser_->WaitFor(
      "(document.querySelector('.jobs-row[data-job=later]')?.textContent || '').includes('failed')",
      seconds(25)))
      << Text(".jobs-row[data-job=later]");
  EXPECT_EQ(browser_->Eval("window.sameDocument === true"), true);
}

TEST_F(ConsoleTest, AThousandJobsAreReadAPageAtATimeAsTheyComeIntoView) {
  std::string toml;
  char name[32];
  for (int i = 0; i < 1000; ++i) {
    std::snprintf(name, sizeof name, "job-%04d", i);
    toml +=
        std::string("[[job]]\nname = \"") + name + "\"\nschedule = \"@yearly\"\nshell = \"true\"\n";
  }
  coord_->Apply(toml);
  // The route: a page, its place in the whole, the whole's length in a header.
  http::HttpResponse page = coord_->Request("GET", "/v1/jobs?limit=3&offset=998&order=health");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers["x-total-count"], "1000");
  json items = json::parse(page.body);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0]["name"], "job-0998");
  page = coord_->Request("GET", "/v1/jobs?limit=10&q=-09");
  EXPECT_EQ(page.headers["x-total-count"], "100");
  EXPECT_EQ(json::parse(page.body)[0]["name"], "job-0900");
  for (const char* bad : {"limit=0", "limit=1001", "limit=x", "offset=-1", "order=size"}) {
    EXPECT_EQ(coord_->Request("GET", std::string("/v1/jobs?") + bad).status, 400) << bad;
  }
  EXPECT_EQ(coord_->GetJson("/v1/jobs").size(), 1000u);  // no limit: all of them

  Open("/jobs", coord_->admin_token());
  ASSERT_TRUE(browser_->WaitFor("document.body.dataset.jobsLoaded === '1000'", seconds(15)));
  EXPECT_EQ(Text("#count"), "1000 jobs");
  // Only the rows in view are in the page.
  EXPECT_LT(browser_->Eval("document.querySelectorAll('.jobs-row').length").get<int>(), 60);
  browser_->Eval(
      "(() => { const s = document.getElementById('jobs'); s.scrollTop = s.scrollHeight; })()");
  ASSERT_TRUE(
      browser_->WaitFor("document.querySelector('.jobs-row[data-job=job-0999]')", seconds(10)));
  // Of the five pages, the first and the one of the last rows (and the refresh of the rows in
  // view, every 10 s, if it came meanwhile).
  int lists = 0;
  for (const std::string& url : browser_->requests()) {
    lists += url.find("/v1/jobs?order=health") != std::string::npos;
  }
  EXPECT_GE(lists, 2);
  EXPECT_LE(lists, 3);
}

TEST_F(ConsoleTest, ARunningJobsOutputAppearsLiveWithEscapesRenderedAsText) {
  std::string gate = dir_.path() + "/gate";
  coord_->Apply(R"([[job]]
name = "live"
schedule = "@yearly"
shell = '''
printf 'first line\n'
printf '\033[31mred words\033[0m and <b>not bold</b> <img src=x onerror=alert(1)>\n'
echo 'to stderr' >&2
while [ ! -e )" +
                gate + R"( ]; do sleep 0.05; done
printf 'after the gate\n'
'''
)");
  json run = coord_->PostJson("/v1/jobs/live/trigger", json::object());
  int64_t id = run["id"];
  Open("/run/" + std::to_string(id), coord_->admin_token());
  ASSERT_TRUE(browser_->WaitFor(
      "(document.getElementById('output') || {}).textContent?.includes('to stderr')", seconds(20)))
      << Text("#output-status");
  // The run is still going: the output came while it ran.
  EXPECT_EQ(coord_->GetJson("/v1/runs/" + std::to_string(id))["state"], "running");
  EXPECT_EQ(browser_->Eval("document.querySelector('#output .a-fg1')?.textContent"), "red words");
  EXPECT_EQ(browser_->Eval("document.querySelectorAll('#output b, #output img').length"), 0);
  EXPECT_NE(Text("#output").find("<b>not bold</b> <img src=x onerror=alert(1)>"),
            std::string::npos);
  EXPECT_EQ(browser_->Eval("document.querySelector('#output .stderr')?.textContent"),
            "to stderr\n");
  EXPECT_EQ(Text("#output").find("\x1b"), std::string::npos);
  // What a shard used is known once it ended.
  EXPECT_EQ(Text("#shards .peak-mem"), "-");
  Picture("console-run.png");
  dir_.Write("gate", "");
  ASSERT_TRUE(browser_->WaitFor(
      "document.getElementById('output')?.textContent.includes('after the gate')", seconds(20)));
  ASSERT_TRUE(
      browser_->WaitFor("document.getElementById('output')?.dataset.done === 'true'", seconds(20)));
  json done = coord_->WaitRun(id, seconds(10));
  EXPECT_EQ(done["state"], "succeeded");
  // The page draws the run again when it ended: its shard's peak memory as the agent
  // reported it, in the API's bytes.
  ASSERT_TRUE(done["shards"][0]["peak_rss_bytes"].is_number_integer()) << done.dump();
  int64_t peak = done["shards"][0]["peak_rss_bytes"];
  EXPECT_GT(peak, 0);
  ASSERT_TRUE(browser_->WaitFor(
      "/^[0-9.]+ (KiB|MiB)$/.test(document.querySelector('#shards .peak-mem')?.textContent)",
      seconds(10)))
      << Text("#shards");
}

// A tab out of view asks for more output without waiting, every 5 s, instead of holding one
// of the browser's few connections to the coordinator; shown again, it waits for output.
TEST_F(ConsoleTest, ATabOutOfViewAsksForOutputWithoutWaitingUntilItIsShownAgain) {
  coord_->Apply(R"([[job]]
name = "quiet"
schedule = "@yearly"
shell = '''
echo first
while [ ! -e )" +
                dir_.path() + R"(/one ]; do sleep 0.05; done
echo second
while [ ! -e )" +
                dir_.path() + R"(/two ]; do sleep 0.05; done
echo third
'''
)");
  int64_t id = coord_->PostJson("/v1/jobs/quiet/trigger", json::object())["id"];
  Open("/run/" + std::to_string(id), coord_->admin_token());
  ASSERT_TRUE(browser_->WaitFor(
      "(document.getElementById('output') || {}).textContent?.includes('first')", seconds(20)));
  auto reads = [this](const std::string& wait) {
    browser_->Eval("0");  // reads the events still in the pipe
    return std::count_if(
        browser_->requests().begin(), browser_->requests().end(), [&](const std::string& url) {
          return url.find("/v1/runs/") != std::string::npos && url.ends_with("&wait_ms=" + wait);
        });
  };
  const auto waiting_before = reads("25000");
  ASSERT_GE(waiting_before, 1);
  EXPECT_EQ(reads("0"), 0);
  browser_->Eval(
      "Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});"
      "document.dispatchEvent(new Event('visibilitychange'))");
  dir_.Write("one", "");  // ends the read that waits
  ASSERT_TRUE(browser_->WaitFor("document.getElementById('output').textContent.includes('second')",
                                seconds(20)));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Coordinator::Eventually([&] { return reads("0") >= 2; }, seconds(15)));
  // The second read without waiting came about 5 s after the first.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  EXPECT_EQ(reads("25000"), waiting_before);  // none since it was hidden
  browser_->Eval(
      "Object.defineProperty(document, 'hidden', {configurable: true, get: () => false});"
      "document.dispatchEvent(new Event('visibilitychange'))");
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return reads("25000") >= waiting_before + 1; }, seconds(10)));
  dir_.Write("two", "");
  // (The page is drawn again once the run has ended: its output is read anew, so the test
  // waits for the line rather than reading the box the moment the first one was done.)
  ASSERT_TRUE(browser_->WaitFor(
      "(document.getElementById('output') || {}).textContent?.includes('third')", seconds(20)))
      << Text("#output");
}

TEST_F(ConsoleTest, A32MiBOutputShowsItsTailAndLoadsEarlierOutputOnRequest) {
  coord_->Apply(R"([[job]]
name = "loud"
schedule = "@yearly"
shell = "head -c 33554432 /dev/zero | tr '\\0' x | fold -w 99; echo THE END"
)");
  json run = coord_->PostJson("/v1/jobs/loud/trigger", json::object());
  int64_t id = run["id"];
  ASSERT_EQ(coord_->WaitRun(id, seconds(60))["state"], "succeeded");
  // The route reads backwards and never waits.
  const std::string logs = "/v1/runs/" + std::to_string(id) + "/logs";
  for (const char* bad : {"?before=x", "?before=0", "?before=end&wait_ms=100"}) {
    EXPECT_EQ(coord_->Request("GET", logs + bad).status, 400) << bad;
  }
  json end = coord_->GetJson(logs + "?before=end");
  ASSERT_FALSE(end["chunks"].empty());
  EXPECT_EQ(end["next"], end["chunks"].back()["id"]);
  Open("/run/" + std::to_string(id), coord_->admin_token());
  ASSERT_TRUE(
      browser_->WaitFor("document.getElementById('output')?.dataset.done === 'true'", seconds(30)))
      << Text("#output-status");
  EXPECT_NE(Text("#output").find("THE END"), std::string::npos);
  // The tail only: a MiB of the 32 read, its last 5,000 lines (of 100 bytes) shown.
  auto shown = [this] {
    return browser_->Eval("document.getElementById('output').textContent.length").get<int64_t>();
  };
  auto read = [this] {
    return browser_
        ->Eval(
            "performance.getEntriesByType('resource').filter(e => e.name.includes('/logs'))"
            ".reduce((n, e) => n + e.encodedBodySize, 0)")
        .get<int64_t>();
  };
  int64_t tail = shown();
  // 5,000 lines of 100 bytes, less up to one chunk (64 KiB): whole chunks are dropped.
  EXPECT_GT(tail, 5000 * 100 - 65536 - 10'000);
  EXPECT_LT(tail, 600'000);
  EXPECT_LT(read(), 2'000'000);  // base64 in JSON: 4/3 of the bytes
  // A MiB more on request, put before what is shown.
  ASSERT_TRUE(browser_->WaitFor("!document.getElementById('earlier').hidden", seconds(5)));
  browser_->Eval("document.getElementById('earlier').click()");
  ASSERT_TRUE(browser_->WaitFor(
      "document.getElementById('output').textContent.length > " + std::to_string(tail + 900'000),
      seconds(20)));
  EXPECT_LT(shown(), tail + 1'200'000);
  EXPECT_NE(Text("#output").find("THE END"), std::string::npos);
  EXPECT_LT(read(), 4'000'000);
  // The raw log: every byte, as the job wrote it.
  std::string saved = dir_.path() + "/downloads";
  std::filesystem::create_directories(saved);
  browser_->AllowDownloads(saved);
  browser_->Eval("document.getElementById('download').click()");
  const std::string file = saved + "/run-" + std::to_string(id) + ".log";
  // 338,933 lines of 99 x and a newline, 65 x, then "THE END\n".
  const uintmax_t size = 33554432 / 99 * 100 + 33554432 % 99 + 8;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        std::error_code ec;
        return std::filesystem::file_size(file, ec) == size;
      },
      seconds(120)))
      << [&] {
           std::string seen;
           for (const auto& e : std::filesystem::directory_iterator(saved)) {
             seen += e.path().filename().string() + " ";
           }
           return seen + "| " + Text("#download") + " | " + Text("#banner");
         }();
}

TEST_F(ConsoleTest, ATriggerTokenTriggersAndAReadTokenIsRefusedOnThePage) {
  coord_->Apply(R"([[job]]
name = "deploy-cache"
schedule = "@yearly"
shell = "echo deployed"
[[job]]
name = "other"
schedule = "@yearly"
shell = "true"
)");
  // A trigger token for deploy-*: the button on the job's page starts a run and shows it.
  Open("/job/deploy-cache", Token("trigger", "deploy-*"));
  ASSERT_TRUE(browser_->WaitFor("document.getElementById('trigger')", seconds(15)));
  EXPECT_EQ(browser_->Eval("document.querySelectorAll('#next-fires li').length"), 10);
  EXPECT_NE(Text("#next-fires").find("2027-01-01T00:00:00Z"), std::string::npos);
  EXPECT_NE(Text("#who").find("(trigger, jobs deploy-*)"), std::string::npos);
  // Allowed: drawn solid. Pause is an admin's: drawn dashed.
  EXPECT_EQ(browser_->Eval("getComputedStyle(document.getElementById('trigger')).borderTopStyle"),
            "solid");
  EXPECT_EQ(browser_->Eval("getComputedStyle(document.getElementById('pause')).borderTopStyle"),
            "dashed");
  browser_->Eval("document.getElementById('trigger').click()");
  ASSERT_TRUE(
      browser_->WaitFor("/^#\\/run\\/\\d+$/.test(location.hash) && "
                        "document.getElementById('shards')",
                        seconds(15)));
  int64_t id = std::stoll(browser_->Eval("location.hash.split('/')[2]").get<std::string>());
  EXPECT_EQ(coord_->WaitRun(id, seconds(20))["job"], "deploy-cache");
  // The same token on a job outside its glob: the coordinator refuses to show it, and the
  // page says so.
  browser_->Navigate(coord_->url() + "/ui/#/job/other");
  ASSERT_TRUE(browser_->WaitFor("document.body.innerText.includes('may not GET /v1/jobs/other')",
                                seconds(15)));
  EXPECT_EQ(browser_->Eval("document.getElementById('trigger')"), json());
  EXPECT_EQ(coord_->Runs("other").size(), 0u);

  // A read token: refused by the coordinator, the message visible on the page.
  Open("/job/deploy-cache", Token("read"));
  ASSERT_TRUE(
      browser_->WaitFor("document.body.dataset.role === 'read' && "
                        "document.getElementById('trigger')",
                        seconds(15)));
  EXPECT_EQ(browser_->Eval("getComputedStyle(document.getElementById('trigger')).borderTopStyle"),
            "dashed");
  browser_->Eval("document.getElementById('trigger').click()");
  ASSERT_TRUE(browser_->WaitFor(
      "!document.getElementById('banner').hidden && "
      "document.getElementById('banner').textContent.includes('(needs role trigger)')",
      seconds(10)))
      << Text("#banner");
  EXPECT_TRUE(browser_
                  ->Eval("getComputedStyle(document.getElementById('banner')).display !== "
                         "'none' && document.getElementById('banner').offsetHeight > 0")
                  .get<bool>());
  EXPECT_EQ(coord_->Runs("deploy-cache").size(), 1u);  // only the trigger token's run
}

TEST_F(ConsoleTest, AJobsTimelineShowsItsFailures) {
  // Every other run fails.
  coord_->Apply(R"([[job]]
name = "flaky"
schedule = "* * * * * *"
shell = 'test $((JOB_RUN_ID % 2)) -eq 0 || { echo "odd run" >&2; exit 1; }'
[job.retry]
max = 0
[defaults]
timeout = "1m"
)");
  ASSERT_TRUE(Coordinator::Eventually(
      [this] {
        int ended = 0;
        for (const json& r : coord_->Runs("flaky"))
          ended += !r["finished_at"].get<std::string>().empty();
        return ended >= 6;
      },
      seconds(30)));
  coord_->PostJson("/v1/jobs/flaky/pause", json::object());
  ASSERT_TRUE(Coordinator::Eventually(
      [this] { return coord_->GetJson("/v1/jobs/flaky")["open_runs"] == 0; }, seconds(20)));
  int failed = 0;
  for (const json& r : coord_->Runs("flaky")) failed += r["state"] == "failed";
  ASSERT_GT(failed, 0);
  Open("/job/flaky", coord_->admin_token());
  ASSERT_TRUE(browser_->WaitFor("document.getElementById('timeline')", seconds(15)));
  EXPECT_EQ(browser_->Eval("document.querySelectorAll('#timeline rect[data-state=failed]').length"),
            failed);
  EXPECT_EQ(Text("#failed-count"), std::to_string(failed));
  EXPECT_EQ(browser_->Eval("document.querySelectorAll('#runs tr[data-state=failed]').length"),
            failed);
  EXPECT_EQ(browser_->Eval("document.querySelectorAll('#next-fires li').length"), 0);  // paused
  // An admin sees the job's section of the applied file, as written.
  ASSERT_TRUE(browser_->WaitFor(
      "document.getElementById('definition-source').textContent.includes('revision 1')",
      seconds(10)));
  EXPECT_NE(Text("#definition").find("shell = 'test $((JOB_RUN_ID % 2))"), std::string::npos);
  EXPECT_NE(Text("#definition").find("[job.retry]\nmax = 0"), std::string::npos);
  EXPECT_EQ(Text("#definition").find("[defaults]"), std::string::npos);
  Picture("console-job.png");
}

TEST_F(ConsoleTest, TheFleetPageShowsTheAgentAndWhatRanOnIt) {
  coord_->Apply(R"([[job]]
name = "hello"
schedule = "@yearly"
shards = 2
shell = "echo hello from $JOB_SHARD_INDEX"
)");
  json run = coord_->PostJson("/v1/jobs/hello/trigger", json::object());
  ASSERT_EQ(coord_->WaitRun(run["id"], seconds(20))["state"], "succeeded");
  Open("/fleet", coord_->admin_token());
  ASSERT_TRUE(
      browser_->WaitFor("document.querySelector('#agents tr[data-agent=web-1]') && "
                        "document.querySelector('#fleet-timeline svg')",
                        seconds(15)));
  EXPECT_NE(Text("#agents tr[data-agent=web-1]").find("role=web"), std::string::npos);
  EXPECT_EQ(browser_->Eval("document.querySelectorAll('#fleet-timeline rect[data-run=\"" +
                           std::to_string(run["id"].get<int64_t>()) + "\"]').length"),
            2);
  Picture("console-fleet.png");
}

TEST_F(ConsoleTest, ThePageIsServedWithAStrictPolicyAndWithoutAToken) {
  http::HttpResponse page = coord_->Request("GET", "/ui/", "", "");
  EXPECT_EQ(page.status, 200);
  std::string csp = page.headers["content-security-policy"];
  EXPECT_EQ(page.headers["x-content-type-options"], "nosniff");
  EXPECT_EQ(coord_->Request("GET", "/", "", "").status, 302);
  EXPECT_EQ(coord_->Request("GET", "/", "", "").headers["location"], "/ui/");
  EXPECT_EQ(coord_->Request("GET", "/ui/app.js", "", "").headers["content-type"],
            "text/javascript; charset=utf-8");
  EXPECT_EQ(coord_->Request("GET", "/ui/nope.js", "", "").status, 404);
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe"), std::string::npos);
  // Without a token the page asks for one and reads nothing.
  browser_->Navigate(coord_->url() + "/ui/");
  ASSERT_TRUE(browser_->WaitFor("document.getElementById('token')", seconds(10)));
  // A wrong token: the page says it was refused.
  browser_->Eval(
      "(() => { document.getElementById('token').value = 'jc_nope';"
      " document.querySelector('form.login button').click(); })()");
  ASSERT_TRUE(browser_->WaitFor("document.querySelector('form.login [role=alert]')", seconds(10)));
  EXPECT_NE(Text("form.login [role=alert]").find("refused"), std::string::npos);
  // A good one opens the console; Sign out forgets it at once. The sign-in form stays until
  // the jobs page has loaded, which took over 10 s twice on a loaded two-core machine (the
  // suite runs two tests at once): the deadline is generous, the wait ends when it holds.
  browser_->Eval("(() => { document.getElementById('token').value = " + Js(coord_->admin_token()) +
                 "; document.querySelector('form.login button').click(); })()");
  ASSERT_TRUE(
      browser_->WaitFor("document.body.dataset.role === 'admin' && "
                        "document.getElementById('jobs')",
                        seconds(30)));
  browser_->Eval("document.getElementById('forget').click()");
  ASSERT_TRUE(browser_->WaitFor("document.getElementById('token')", seconds(10)));
  EXPECT_EQ(browser_->Eval("sessionStorage.length"), 0);
}

}  // namespace
}  // namespace jobctl::testing
