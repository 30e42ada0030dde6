#include "fault/history.h"

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
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    // A line without its newline was being written when the writer died: not reported yet.
    if (nl == std::string::npos) break;
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    std::string where = name + ":" + std::to_string(line_no);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("src") || !j.contains("ev") || !j.contains("mono_ns")) {
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

Result<History> ReadHistory(const std::vector<std::string>& paths) {
  History h;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::NotFound("cannot read event log " + path);
    std::stringstream text;
    text << in.rdbuf();
    if (Status s = ParseEvents(text.str(), path, &h); !s.ok()) return s;
  }
  return h;
}

}  // namespace jobctl::fault
