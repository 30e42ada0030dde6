#include "result_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/fd_io.h"
#include "base/log.h"
#include "base/secret_file.h"

namespace jobctl::agentd {
namespace {

// The file's bytes; "" when it does not exist.
Result<std::string> ReadAll(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return Status::Io("cannot read " + path + ": " + std::strerror(errno));
  }
  std::string text;
  int e = ReadToEnd(fd, &text, SIZE_MAX);
  close(fd);
  if (e != 0) return Status::Io("cannot read " + path + ": " + std::strerror(e));
  return text;
}

Status WriteFully(int fd, const std::string& data) {
  int e = WriteToEnd(fd, data);
  return e == 0 ? Status::Ok() : Status::Io(std::strerror(e));
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
    if (line.empty()) continue;  // after a record cut short, the next starts a line
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
  old_files_.clear();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() == ".tmp") {
      std::error_code ignored;
      std::filesystem::remove(p, ignored);
    } else if (p.extension() == ".json") {
      Result<std::string> text = ReadAll(p.string());
      Result<ShardResult> r =
          text.ok() ? ResultFromJson(*text) : Result<ShardResult>(text.status());
      if (!r.ok()) {
        // Left where it is, as before this journal.
        log::Warn("ignoring an unreadable result file",
                  {{"file", p.string()}, {"error", r.status().message()}});
        continue;
      }
      // One line: JSON's own line breaks lie between tokens (inside strings they are escaped).
      std::erase_if(*text, [](char c) { return c == '\n' || c == '\r'; });
      live[r->key] = std::move(*text);
      old_files_.push_back(p.string());
    }
  }
  if (ec) return Status::Io("cannot list " + dir_ + ": " + ec.message());
  // A journal that cannot be read is not taken for an empty one: it would be replaced.
  Result<std::string> text = ReadAll(path_);
  if (!text.ok()) return text.status();
  JournalText read = ReadJournal(*text, std::move(live));
  if (read.torn_bytes > 0) {
    log::Warn("the last record of the result journal was cut short; skipping it",
              {{"file", path_}, {"bytes", static_cast<uint64_t>(read.torn_bytes)}});
  }
  if (read.skipped > 0) {
    log::Warn("ignoring unreadable lines of the result journal",
              {{"file", path_}, {"lines", static_cast<uint64_t>(read.skipped)}});
  }
  std::vector<std::pair<AttemptKey, const std::string*>> all;
  for (const auto& [key, json] : read.live) all.emplace_back(key, &json);
  if (Status s = Rewrite(all); !s.ok()) {
    // A full disk or a read-only one: go on appending to the journal as it is.
    log::Warn("cannot rewrite the result journal; appending to it as it is",
              {{"file", path_}, {"error", s.message()}});
    if (Status a = AppendToExisting(read, text->size()); !a.ok()) return a;
  }
  return std::move(read.live);
}

Status ResultJournal::AppendToExisting(const JournalText& read, size_t length) {
  int fd = open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot open " + path_ + ": " + std::strerror(errno));
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  bytes_ = static_cast<int64_t>(length);
  newline_first_ = read.torn_bytes > 0;  // the next record must not join the torn line
  sizes_.clear();
  live_bytes_ = 0;
  for (const auto& [key, json] : read.live) {
    sizes_[key] = static_cast<int64_t>(json.size()) + 2;
    live_bytes_ += sizes_[key];
  }
  return Status::Ok();
}

Status ResultJournal::Rewrite(const std::vector<std::pair<AttemptKey, const std::string*>>& live) {
  std::string data;
  std::map<AttemptKey, int64_t> sizes;
  for (const auto& [key, json] : live) {
    data += '+';
    data += *json;
    data += '\n';
    sizes[key] = static_cast<int64_t>(json->size()) + 2;
  }
  // Written to a file of its own and renamed over the journal: a kill leaves one or the
  // other whole. The same descriptor then appends.
  std::string tmp = path_ + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  Status s = fd < 0 ? Status::Io(std::strerror(errno)) : WriteFully(fd, data);
  if (s.ok() && std::rename(tmp.c_str(), path_.c_str()) != 0) s = Status::Io(std::strerror(errno));
  if (!s.ok()) {
    if (fd >= 0) close(fd);
    unlink(tmp.c_str());
    // Not tried again before the journal has grown by as much once more.
    retry_rewrite_at_ = bytes_ + kMinRewriteBytes;
    return Status::Io("cannot rewrite " + path_ + ": " + s.message());
  }
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  bytes_ = live_bytes_ = static_cast<int64_t>(data.size());
  sizes_ = std::move(sizes);
  newline_first_ = false;
  retry_rewrite_at_ = 0;
  // The journal holds what they said now; until it did, they had to stay.
  std::vector<std::string> left;
  for (const std::string& old : old_files_) {
    if (unlink(old.c_str()) != 0 && errno != ENOENT) {
      log::Warn("cannot remove a result file taken into the journal",
                {{"file", old}, {"error", std::strerror(errno)}});
      left.push_back(old);
    }
  }
  old_files_ = std::move(left);
  return Status::Ok();
}

Status ResultJournal::Append(std::string record) {
  if (fd_ < 0) return Status::Unavailable("the result journal is not open");
  if (newline_first_) record.insert(record.begin(), '\n');
  Status s = WriteFully(fd_, record);
  if (!s.ok()) {
    // A part written would join the next record's line: cut it off again, or failing that,
    // start the next record on a line of its own.
    if (ftruncate(fd_, bytes_) != 0) {
      struct stat st {};
      if (fstat(fd_, &st) == 0) bytes_ = st.st_size;
      newline_first_ = true;
    }
    return Status::Io("cannot write " + path_ + ": " + s.message());
  }
  bytes_ += static_cast<int64_t>(record.size());
  newline_first_ = false;
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
  if (it == sizes_.end()) return Status::Ok();  // not in the journal: nothing to take back
  char record[64];
  std::snprintf(record, sizeof record, "-%" PRId64 " %d %d\n", static_cast<int64_t>(key.run),
                key.shard, key.attempt);
  if (Status s = Append(record); !s.ok()) return s;
  live_bytes_ -= it->second;
  sizes_.erase(it);
  return Status::Ok();
}

bool ResultJournal::WantsRewrite() const {
  return bytes_ >= kMinRewriteBytes && bytes_ > 4 * live_bytes_ && bytes_ >= retry_rewrite_at_;
}

}  // namespace jobctl::agentd
