// A real headless Chromium (Debian's `chromium`) driven over its DevTools protocol on a pipe
// (--remote-debugging-pipe: commands are JSON texts ending in NUL on fd 3, answers and events
// the same on fd 4). For the console's browser tests: open a page, evaluate script in it,
// wait for a condition, take a screenshot, and list every request the page made and every
// script error or policy violation it reported.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testlib/subprocess.h"

namespace jobctl::testing {

class Browser {
 public:
  // The chromium binary (JOBCTL_CHROMIUM, else /usr/bin/chromium), or "" when there is none.
  static std::string Find();

  // Starts the browser with one blank tab, its profile in a directory of `dir`. Throws when
  // it cannot.
  explicit Browser(const TempDir& dir, int width = 1400, int height = 900);
  ~Browser();
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;

  // Opens `url` in another tab, which this class does not drive (its requests and errors are
  // not recorded); tabs stay open until the browser ends.
  void OpenTab(const std::string& url);
  // Loads `url` in the tab and waits for its load event.
  void Navigate(const std::string& url);
  // The value of a script expression in the page (promises are awaited); throws on an
  // exception in the page.
  nlohmann::json Eval(const std::string& expression);
  // Evaluates `expression` every 50 ms until it is truthy; false at the deadline.
  bool WaitFor(const std::string& expression, std::chrono::milliseconds timeout);
  // Files the page downloads are saved in `dir` under their suggested names.
  void AllowDownloads(const std::string& dir);
  // A PNG of the tab as it is now, written to `path`.
  void Screenshot(const std::string& path);

  // Every URL the page asked for since the start (documents, scripts, fetches, images).
  const std::vector<std::string>& requests() const { return requests_; }
  // Script exceptions, console errors, policy (CSP) violations and HTTP errors other than
  // 401 and 403 the page reported (as far as read: Eval("0") first reads what is pending).
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  nlohmann::json Call(const std::string& method,
                      const nlohmann::json& params = nlohmann::json::object(), bool in_page = true,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Reads one message (blocking up to the deadline); false at the deadline.
  bool Read(nlohmann::json* message, std::chrono::steady_clock::time_point deadline);
  void Note(const nlohmann::json& event);

  pid_t pid_ = -1;
  int to_ = -1;    // its fd 3
  int from_ = -1;  // its fd 4
  std::string buffer_;
  int next_id_ = 1;
  std::string session_;
  std::vector<nlohmann::json> events_;
  std::vector<std::string> requests_;
  std::vector<std::string> errors_;
  bool loaded_ = false;
};

}  // namespace jobctl::testing
