#include "result_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/log.h"
#include "base/secret_file.h"

namespace jobctl::agentd {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Status WriteFully(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Io(std::strerror(errno));
    if (n == 0) return Status::Io("short write");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// "<run> <shard> <attempt>", decimal, nothing else.
std::optional<AttemptKey> ParseKey(std::string_view text) {
  AttemptKey key;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto number = [&](auto* out, bool last) {
    auto [next, ec] = std::from_chars(p, end, *out);
    if (ec != std::errc() || next == p) return false;
    p = next;
    if (last) return p == end;
    if (p == end || *p != ' ') return false;
    ++p;
    return true;
  };
  if (!number(&key.run, false) || !number(&key.shard, false) || !number(&key.attempt, true)) {
    return std::nullopt;
  }
  return key;
}

}  // namespace

JournalText ReadJournal(std::string_view text, std::map<AttemptKey, std::string> live) {
  JournalText out{std::move(live)};
  while (!text.empty()) {
    size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      // Cut short by a crash mid-write: that record was never complete.
      out.torn_bytes = text.size();
      break;
    }
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (!line.empty() && line[0] == '+') {
      Result<ShardResult> r = ResultFromJson(line.substr(1));
      if (r.ok()) {
        out.live[r->key] = std::string(line.substr(1));
        continue;
      }
    } else if (!line.empty() && line[0] == '-') {
      if (std::optional<AttemptKey> key = ParseKey(line.substr(1))) {
        out.live.erase(*key);
        continue;
      }
    }
    ++out.skipped;
  }
  return out;
}

ResultJournal::ResultJournal(std::string dir) : dir_(std::move(dir)), path_(dir_ + "/journal") {}

ResultJournal::~ResultJournal() {
  if (fd_ >= 0) close(fd_);
}

Result<std::map<AttemptKey, std::string>> ResultJournal::Open() {
  if (Status s = MakePrivateDir(dir_); !s.ok()) return s;
  std::map<AttemptKey, std::string> live;
  // An older agentd's layout: one file per result.
  std::vector<std::filesystem::path> old_files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() == ".tmp") {
      std::filesystem::remove(p, ec);
    } else if (p.extension() == ".json") {
      old_files.push_back(p);
      std::string text = ReadAll(p.string());
      Result<ShardResult> r = ResultFromJson(text);
      if (!r.ok()) {
        log::Warn("ignoring an unreadable result file",
                  {{"file", p.string()}, {"error", r.status().message()}});
        continue;
      }
      // One line: JSON's own line breaks lie between tokens (inside strings they are escaped).
      std::erase_if(text, [](char c) { return c == '\n' || c == '\r'; });
      live[r->key] = std::move(text);
    }
  }
  if (ec) return Status::Io("cannot list " + dir_ + ": " + ec.message());
  JournalText read = ReadJournal(ReadAll(path_), std::move(live));
  if (read.torn_bytes > 0) {
    log::Warn("the last record of the result journal was cut short; skipping it",
              {{"file", path_}, {"bytes", static_cast<uint64_t>(read.torn_bytes)}});
  }
  if (read.skipped > 0) {
    log::Warn("ignoring unreadable lines of the result journal",
              {{"file", path_}, {"lines", static_cast<uint64_t>(read.skipped)}});
  }
  live = std::move(read.live);
  sizes_.clear();
  std::vector<const std::string*> all;
  for (const auto& [key, json] : live) {
    sizes_[key] = static_cast<int64_t>(json.size()) + 2;
    all.push_back(&json);
  }
  if (Status s = WriteAll(all); !s.ok()) return s;
  // Only once the journal holds them.
  for (const auto& p : old_files) std::filesystem::remove(p, ec);
  return live;
}

Status ResultJournal::WriteAll(const std::vector<const std::string*>& live) {
  std::string data;
  for (const std::string* json : live) {
    data += '+';
    data += *json;
    data += '\n';
  }
  std::string tmp = path_ + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  Status written = WriteFully(fd, data);
  if (close(fd) != 0 && written.ok()) written = Status::Io(std::strerror(errno));
  if (!written.ok()) {
    unlink(tmp.c_str());
    return Status::Io("cannot write " + tmp + ": " + written.message());
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    unlink(tmp.c_str());
    return Status::Io("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  int appender = open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (appender < 0) return Status::Io("cannot open " + path_ + ": " + std::strerror(errno));
  if (fd_ >= 0) close(fd_);
  fd_ = appender;
  bytes_ = live_bytes_ = static_cast<int64_t>(data.size());
  return Status::Ok();
}

Status ResultJournal::Append(const std::string& record) {
  if (fd_ < 0) return Status::Unavailable("the result journal is not open");
  Status s = WriteFully(fd_, record);
  if (!s.ok()) {
    // A part written would join the next record's line: cut it off again.
    if (ftruncate(fd_, bytes_) != 0) {
      log::Warn("cannot cut a failed write off the result journal",
                {{"file", path_}, {"error", std::strerror(errno)}});
    }
    return Status::Io("cannot write " + path_ + ": " + s.message());
  }
  bytes_ += static_cast<int64_t>(record.size());
  return Status::Ok();
}

Status ResultJournal::Put(AttemptKey key, const std::string& json) {
  if (json.find('\n') != std::string::npos) {
    return Status::InvalidArgument("a result must be one line");
  }
  if (Status s = Append("+" + json + "\n"); !s.ok()) return s;
  int64_t size = static_cast<int64_t>(json.size()) + 2;
  auto [it, added] = sizes_.try_emplace(key, size);
  if (!added) {
    live_bytes_ -= it->second;
    it->second = size;
  }
  live_bytes_ += size;
  return Status::Ok();
}

Status ResultJournal::Remove(AttemptKey key) {
  auto it = sizes_.find(key);
  if (it == sizes_.end()) return Status::Ok();  // never written: nothing to take back
  char record[64];
  std::snprintf(record, sizeof record, "-%" PRId64 " %d %d\n", static_cast<int64_t>(key.run),
                key.shard, key.attempt);
  if (Status s = Append(record); !s.ok()) return s;
  live_bytes_ -= it->second;
  sizes_.erase(it);
  return Status::Ok();
}

bool ResultJournal::WantsRewrite() const {
  return bytes_ >= kMinRewriteBytes && bytes_ > 4 * live_bytes_;
}

Status ResultJournal::Rewrite(const std::vector<const std::string*>& live) {
  return WriteAll(live);
}

}  // namespace jobctl::agentd
