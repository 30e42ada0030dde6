#include "spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/log.h"
#include "base/secret_file.h"

namespace jobctl::agentd {
namespace {

constexpr char kMagic[4] = {'J', 'C', 'S', '1'};

struct Header {
  ChunkStream stream;
  int64_t seq;
  int64_t at_ms;
  uint32_t length;
};

void Encode(const Chunk& c, char* out) {
  std::memcpy(out, kMagic, 4);
  out[4] = static_cast<char>(c.stream);
  out[5] = out[6] = out[7] = 0;
  uint32_t length = static_cast<uint32_t>(c.data.size());
  std::memcpy(out + 8, &c.seq, 8);
  std::memcpy(out + 16, &c.at_ms, 8);
  std::memcpy(out + 24, &length, 4);
}

bool Decode(const char* in, Header* h) {
  if (std::memcmp(in, kMagic, 4) != 0 || static_cast<unsigned char>(in[4]) > 2) return false;
  h->stream = static_cast<ChunkStream>(in[4]);
  std::memcpy(&h->seq, in + 8, 8);
  std::memcpy(&h->at_ms, in + 16, 8);
  std::memcpy(&h->length, in + 24, 4);
  return h->length <= (1u << 24);
}

Status Errno(const std::string& what) { return Status::Io(what + ": " + std::strerror(errno)); }

Status WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Errno("write");
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

bool ReadAt(int fd, char* data, size_t n, int64_t offset) {
  while (n > 0) {
    ssize_t r = pread(fd, data, n, offset);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
    offset += r;
  }
  return true;
}

}  // namespace

Spool::Spool(std::string dir, int64_t max_bytes)
    : dir_(std::move(dir)),
      max_bytes_(max_bytes),
      // Eight or more segments fit in the bound, so dropping one frees at most an eighth.
      segment_bytes_(std::clamp<int64_t>(max_bytes / 8, 64 * 1024, 8 << 20)) {}

std::string Spool::PathFor(AttemptKey key, int64_t token, uint64_t number) const {
  char name[160];
  std::snprintf(name, sizeof name, "r%lld-s%d-a%d-t%lld-%012llu.spool",
                static_cast<long long>(key.run), key.shard, key.attempt,
                static_cast<long long>(token), static_cast<unsigned long long>(number));
  return dir_ + "/" + name;
}

std::string Spool::DroppedPath(AttemptKey key, int64_t token) const {
  char name[160];
  std::snprintf(name, sizeof name, "r%lld-s%d-a%d-t%lld.dropped", static_cast<long long>(key.run),
                key.shard, key.attempt, static_cast<long long>(token));
  return dir_ + "/" + name;
}

void Spool::SaveDropped(AttemptKey key, const Attempt& a) {
  std::string path = DroppedPath(key, a.token);
  if (a.dropped == 0) {
    unlink(path.c_str());
    return;
  }
  // Rare (once per dropped segment) and tiny; losing it loses only the marker's number.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::string text = std::to_string(a.dropped) + "\n";
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    log::Debug("cannot write a dropped-output count", {{"path", path}});
  }
  close(fd);
}

Status Spool::Open() {
  if (Status s = MakePrivateDir(dir_); !s.ok()) return s;
  std::error_code ec;
  std::vector<std::pair<uint64_t, std::string>> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    found.emplace_back(0, entry.path().filename().string());
  }
  if (ec) return Status::Io("cannot list " + dir_ + ": " + ec.message());
  struct Parsed {
    AttemptKey key;
    int64_t token;
    uint64_t number;
    std::string path;
  };
  std::vector<Parsed> segments;
  for (auto& [unused, name] : found) {
    long long run = 0, token = 0;
    int shard = 0, attempt = 0, consumed = 0;
    unsigned long long number = 0;
    if (std::sscanf(name.c_str(), "r%lld-s%d-a%d-t%lld.dropped%n", &run, &shard, &attempt, &token,
                    &consumed) == 4 &&
        static_cast<size_t>(consumed) == name.size()) {
      long long dropped = 0;
      if (FILE* f = std::fopen((dir_ + "/" + name).c_str(), "r")) {
        if (std::fscanf(f, "%lld", &dropped) != 1) dropped = 0;
        std::fclose(f);
      }
      Attempt& a = attempts_[{run, shard, attempt}];
      a.token = token;
      a.dropped += dropped;
      continue;
    }
    consumed = 0;
    if (std::sscanf(name.c_str(), "r%lld-s%d-a%d-t%lld-%llu.spool%n", &run, &shard, &attempt,
                    &token, &number, &consumed) != 5 ||
        static_cast<size_t>(consumed) != name.size()) {
      continue;  // not ours
    }
    segments.push_back({{run, shard, attempt}, token, number, dir_ + "/" + name});
  }
  std::sort(segments.begin(), segments.end(),
            [](const Parsed& a, const Parsed& b) { return a.number < b.number; });
  for (const Parsed& p : segments) {
    Segment s{p.number, p.path, 0, 0, 0};
    int64_t max_seq = 0;
    if (Status st = Scan(p.path, &s, &max_seq); !st.ok() || s.unsent == 0) {
      Unlink(s);
      continue;
    }
    Attempt& a = attempts_[p.key];
    a.token = p.token;
    a.next_seq = std::max(a.next_seq, max_seq + 1);
    a.segments.push_back(s);
    bytes_ += s.size;
    next_segment_ = std::max<uint64_t>(next_segment_, p.number + 1);
  }
  return Status::Ok();
}

// Reads every header of a segment; a torn or foreign tail ends it there.
Status Spool::Scan(const std::string& path, Segment* s, int64_t* max_seq) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  struct stat st {};
  fstat(fd, &st);
  int64_t offset = 0;
  char buf[kHeaderBytes];
  Header h{};
  while (offset + kHeaderBytes <= st.st_size && ReadAt(fd, buf, kHeaderBytes, offset) &&
         Decode(buf, &h) && offset + kHeaderBytes + h.length <= st.st_size) {
    *max_seq = std::max(*max_seq, h.seq);
    s->unsent += h.length;
    offset += kHeaderBytes + h.length;
  }
  close(fd);
  if (offset < st.st_size && truncate(path.c_str(), offset) != 0) return Errno("truncate " + path);
  s->size = offset;
  return Status::Ok();
}

std::vector<Spool::AttemptInfo> Spool::Attempts() const {
  std::vector<AttemptInfo> out;
  for (const auto& [key, a] : attempts_) out.push_back({key, a.token, a.next_seq});
  return out;
}

Status Spool::Append(AttemptKey key, int64_t token, const Chunk& chunk) {
  Attempt& a = attempts_[key];
  a.token = token;
  a.next_seq = std::max(a.next_seq, chunk.seq + 1);
  int64_t record = kHeaderBytes + static_cast<int64_t>(chunk.data.size());
  if (record > max_bytes_) {
    a.dropped += static_cast<int64_t>(chunk.data.size());
    SaveDropped(key, a);
    return Status::ResourceExhausted("a chunk larger than the whole spool");
  }
  while (bytes_ + record > max_bytes_ && DropOldestSegment()) {
  }
  if (a.segments.empty() ||
      (a.segments.back().size > 0 && a.segments.back().size + record > segment_bytes_)) {
    uint64_t number = next_segment_++;
    a.segments.push_back({number, PathFor(key, token, number), 0, 0, 0});
  }
  Segment& s = a.segments.back();
  char header[kHeaderBytes];
  Encode(chunk, header);
  int fd = open(s.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  Status status = fd < 0 ? Errno("open " + s.path) : WriteAll(fd, header, sizeof header);
  if (status.ok()) status = WriteAll(fd, chunk.data.data(), chunk.data.size());
  if (fd >= 0) close(fd);
  if (!status.ok()) {
    // Whatever part was written is cut off again, so the segment stays readable. Should that
    // fail too, reading stops at the torn record and the segment's rest counts as dropped.
    if (fd >= 0 && truncate(s.path.c_str(), s.size) != 0) status = status.WithContext("truncate");
    a.dropped += static_cast<int64_t>(chunk.data.size());
    SaveDropped(key, a);
    if (s.size == 0) {
      Unlink(s);
      a.segments.pop_back();
    }
    return status.WithContext("spool");
  }
  s.size += record;
  s.unsent += static_cast<int64_t>(chunk.data.size());
  bytes_ += record;
  return Status::Ok();
}

bool Spool::DropOldestSegment() {
  Attempt* oldest = nullptr;
  AttemptKey oldest_key;
  for (auto& [key, a] : attempts_) {
    if (!a.segments.empty() &&
        (oldest == nullptr || a.segments.front().number < oldest->segments.front().number)) {
      oldest = &a;
      oldest_key = key;
    }
  }
  if (oldest == nullptr) return false;
  DropFront(*oldest);
  SaveDropped(oldest_key, *oldest);
  return true;
}

void Spool::DropFront(Attempt& a) {
  Segment& s = a.segments.front();
  int64_t lost = s.unsent;
  // Chunks being sent are not lost: the shipper holds copies.
  while (!a.taken.empty() && a.taken.front().segment == s.number) {
    lost -= a.taken.front().bytes;
    a.taken.pop_front();
  }
  a.dropped += std::max<int64_t>(lost, 0);
  bytes_ -= s.size;
  Unlink(s);
  a.segments.pop_front();
}

void Spool::Unlink(const Segment& s) { unlink(s.path.c_str()); }

bool Spool::Has(AttemptKey key) const {
  auto it = attempts_.find(key);
  return it != attempts_.end() && (!it->second.segments.empty() || it->second.dropped > 0);
}

int64_t Spool::TakeDropped(AttemptKey key) {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return 0;
  int64_t dropped = std::exchange(it->second.dropped, 0);
  if (dropped > 0) SaveDropped(key, it->second);
  if (it->second.segments.empty()) attempts_.erase(it);
  return dropped;
}

Spool::ReadEnd Spool::ReadRecords(const Segment& s, int64_t offset, size_t max_bytes,
                                  size_t overhead, std::vector<Chunk>* out, size_t* total,
                                  std::deque<Taken>* taken) {
  int fd = open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ReadEnd::kUnreadable;
  ReadEnd end = ReadEnd::kSegmentEnd;
  while (offset < s.size) {
    char buf[kHeaderBytes];
    Header h{};
    if (!ReadAt(fd, buf, kHeaderBytes, offset) || !Decode(buf, &h)) {
      end = ReadEnd::kUnreadable;
      break;
    }
    if (!out->empty() && *total + h.length + overhead > max_bytes) {
      end = ReadEnd::kFull;
      break;
    }
    Chunk c;
    c.stream = h.stream;
    c.seq = h.seq;
    c.at_ms = h.at_ms;
    c.data.resize(h.length);
    if (!ReadAt(fd, c.data.data(), h.length, offset + kHeaderBytes)) {
      end = ReadEnd::kUnreadable;
      break;
    }
    *total += h.length + overhead;
    taken->push_back({c.seq, s.number, static_cast<int64_t>(h.length)});
    out->push_back(std::move(c));
    offset += kHeaderBytes + h.length;
  }
  close(fd);
  return end;
}

Result<std::vector<Chunk>> Spool::Front(AttemptKey key, size_t max_bytes, size_t record_overhead) {
  std::vector<Chunk> out;
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return out;
  Attempt& a = it->second;
  a.taken.clear();
  size_t total = 0;
  for (size_t i = 0; i < a.segments.size();) {
    Segment& s = a.segments[i];
    if (i == 0 && s.read_offset >= s.size) {
      bytes_ -= s.size;
      Unlink(s);
      a.segments.pop_front();
      continue;
    }
    ReadEnd end = ReadRecords(s, i == 0 ? s.read_offset : 0, max_bytes, record_overhead, &out,
                              &total, &a.taken);
    if (end == ReadEnd::kUnreadable) {
      if (!out.empty()) break;  // what was read goes first; the next call meets the damage
      // An unreadable segment: its remaining bytes are lost, the rest of the spool is not.
      a.taken.clear();
      DropFront(a);
      SaveDropped(key, a);
      continue;
    }
    if (end == ReadEnd::kFull) break;
    ++i;  // read to its end: the next segment may add more
  }
  if (out.empty() && a.segments.empty() && a.dropped == 0) attempts_.erase(it);
  return out;
}

Result<std::optional<Chunk>> Spool::Front(AttemptKey key) {
  Result<std::vector<Chunk>> chunks = Front(key, 0);
  if (!chunks.ok()) return chunks.status();
  if (chunks->empty()) return std::optional<Chunk>();
  return std::optional<Chunk>(std::move(chunks->front()));
}

void Spool::Pop(AttemptKey key, int64_t seq) {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return;
  Attempt& a = it->second;
  while (!a.taken.empty() && a.taken.front().seq <= seq) {
    Taken t = a.taken.front();
    a.taken.pop_front();
    if (a.segments.empty() || a.segments.front().number != t.segment) continue;  // dropped
    Segment& s = a.segments.front();
    s.read_offset += kHeaderBytes + t.bytes;
    s.unsent -= t.bytes;
    if (s.read_offset >= s.size) {
      bytes_ -= s.size;
      Unlink(s);
      a.segments.pop_front();
    }
  }
  if (a.segments.empty() && a.dropped == 0) attempts_.erase(it);
}

bool Spool::Holds(AttemptKey key, int64_t seq) const {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return false;
  for (const Taken& t : it->second.taken) {
    if (t.seq == seq) return true;
  }
  return false;
}

void Spool::Release(AttemptKey key) {
  auto it = attempts_.find(key);
  if (it != attempts_.end()) it->second.taken.clear();
}

void Spool::AddDropped(AttemptKey key, int64_t token, int64_t bytes) {
  if (bytes <= 0) return;
  Attempt& a = attempts_[key];
  if (a.segments.empty()) a.token = token;
  a.dropped += bytes;
  SaveDropped(key, a);
}

void Spool::Remove(AttemptKey key) {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return;
  for (const Segment& s : it->second.segments) {
    bytes_ -= s.size;
    Unlink(s);
  }
  it->second.dropped = 0;
  SaveDropped(key, it->second);
  attempts_.erase(it);
}

}  // namespace jobctl::agentd
