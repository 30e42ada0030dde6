#include "fault/history.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace jobctl::fault {

int64_t Event::Int(const char* key, int64_t fallback) const {
  auto it = fields.find(key);
  return it != fields.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

std::string Event::Str(const char* key) const {
  auto it = fields.find(key);
  return it != fields.end() && it->is_string() ? it->get<std::string>() : "";
}

Status ParseEvents(const std::string& text, const std::string& name, History* into) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    // A line without its newline was being written when the writer died: not reported yet.
    if (nl == std::string::npos) break;
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  auto parse = [](const std::string& line) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    bool ok = j.is_object() && j.contains("src") && j.contains("ev") && j.contains("mono_ns");
    return ok ? j : nlohmann::json();
  };
  int64_t last_pid = 0;  // of the last whole line
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty()) continue;
    std::string where = name + ":" + std::to_string(i + 1);
    nlohmann::json j = parse(line);
    if (j.is_null()) {
      // SIGKILL can cut a write short (at a page boundary): the killed writer's last line is
      // torn, and the next process to open the log ends it first. Torn, and not corrupt, when
      // the next whole line is another process's (or there is none).
      size_t next = i + 1;
      while (next < lines.size() && lines[next].empty()) ++next;
      nlohmann::json after = next < lines.size() ? parse(lines[next]) : nlohmann::json();
      bool torn =
          next == lines.size() || (!after.is_null() && after.value("pid", int64_t{0}) != last_pid);
      if (torn) {
        ++into->torn_lines;
        continue;
      }
      return Status::Corrupt(where + ": not an event line: " + line.substr(0, 200));
    }
    Event e;
    e.src = j.value("src", "");
    e.ev = j.value("ev", "");
    e.pid = j.value("pid", int64_t{0});
    e.mono_ns = j.value("mono_ns", int64_t{0});
    e.wall_ms = j.value("wall_ms", int64_t{0});
    e.where = where;
    e.fields = std::move(j);
    last_pid = e.pid;
    if (e.src == "coord") {
      into->coordinator.push_back(std::move(e));
    } else if (e.src == "agent") {
      std::string agent = e.Str("agent");
      into->agents[agent].push_back(std::move(e));
    } else if (e.src == "probe") {
      into->probes.push_back(std::move(e));
    } else {
      return Status::Corrupt(where + ": unknown src \"" + e.src + "\"");
    }
  }
  return Status::Ok();
}

int64_t CommitOrderNs(const Event& e) { return e.Int("order_ns", e.mono_ns); }

void MergeCoordinators(History* h) {
  // By file (Event::where is "FILE:LINE"), in order, each line given its order_ns: a commit
  // line's began_ns (when its transaction began), the lines after it (the events it made
  // true) the same, up to the next commit or loading; any other line its mono_ns; and none
  // before the line above it in its file. A
  // coordinator stopped (SIGSTOP) between a commit and its lines writes them late; keyed so,
  // they come where the commit did.
  std::map<std::string, std::vector<Event>> files;
  std::map<std::string, int64_t> commit;    // per file: the order_ns of the commit in progress
  std::map<std::string, int64_t> last_key;  // per file: the order_ns of its previous line
  for (Event& e : h->coordinator) {
    std::string file = e.where.substr(0, e.where.rfind(':'));
    auto c = commit.find(file);
    int64_t key = e.mono_ns;
    if (e.ev == "commit") {
      int64_t began = e.Int("began_ns", 0);
      key = began > 0 ? std::min(began, e.mono_ns) : e.mono_ns;
      commit[file] = key;
    } else if (e.ev == "loading" || e.ev == "lease_loaded" || e.ev == "loaded") {
      commit.erase(file);
    } else if (c != commit.end()) {
      key = std::min(key, c->second);
    }
    // Never before an earlier line of the same file: a turn's transaction may begin before
    // the load that the same turn finishes writes its "loaded" line (a takeover).
    int64_t& floor = last_key[file];
    key = std::max(key, floor);
    floor = key;
    e.fields["order_ns"] = key;
    files[file].push_back(std::move(e));
  }
  h->coordinator.clear();
  std::map<std::string, size_t> next;
  for (;;) {
    const std::string* pick = nullptr;
    int64_t best = 0;
    for (const auto& [name, events] : files) {
      size_t i = next[name];
      if (i >= events.size()) continue;
      int64_t key = CommitOrderNs(events[i]);
      if (pick == nullptr || key < best) {
        pick = &name;
        best = key;
      }
    }
    if (pick == nullptr) return;
    h->coordinator.push_back(std::move(files[*pick][next[*pick]++]));
  }
}

Result<History> ReadHistory(const std::vector<std::string>& paths) {
  History h;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::NotFound("cannot read event log " + path);
    std::stringstream text;
    text << in.rdbuf();
    if (Status s = ParseEvents(text.str(), path, &h); !s.ok()) return s;
  }
  MergeCoordinators(&h);
  return h;
}

}  // namespace jobctl::fault
