// Spool keeps log chunks that could not be sent yet in files under the state dir, so that an
// outage of the coordinator (or a restart of agentd during one) loses no output, within a
// bound. Owned by the LogShipper; loop thread only. File I/O is synchronous: it happens only
// while the coordinator is unreachable or behind, in writes and reads of at most one chunk.
//
// Layout: one directory, files "r<run>-s<shard>-a<attempt>-t<token>-<segment>.spool". Each
// attempt's chunks are appended to its newest segment file; a new segment starts past
// segment_bytes. Segment numbers grow across all attempts, so the smallest is the oldest.
// A segment is a sequence of records: a 28-byte header (magic "JCS1", stream, 3 bytes zero,
// seq i64, at_ms i64, length u32; host byte order) and the chunk's bytes.
//
// Bound: the segments never exceed max_bytes together. To make room, whole segments are
// dropped, oldest first, and the dropped bytes are counted per attempt for an explicit
// "N bytes dropped" marker (TakeDropped); the count is kept in a small side file
// "r<run>-s<shard>-a<attempt>-t<token>.dropped" so that a restart still sends the marker. A
// torn record at a segment's end (a crash during a write) ends that segment.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "assignment.h"
#include "base/status.h"
#include "chunker.h"

namespace jobctl::agentd {

class Spool {
 public:
  static constexpr int64_t kHeaderBytes = 28;

  struct AttemptInfo {
    AttemptKey key;
    int64_t token = 0;
    int64_t next_seq = 1;  // one past the largest seq spooled
  };

  Spool(std::string dir, int64_t max_bytes);

  // Creates the directory and finds the segments a previous agentd left.
  Status Open();
  std::vector<AttemptInfo> Attempts() const;

  // Appends a numbered chunk, dropping the oldest segments for room. On a write error the
  // chunk's bytes are counted as dropped and the error is returned (for a log line).
  Status Append(AttemptKey key, int64_t token, const Chunk& chunk);

  // Whether the attempt has spooled chunks or dropped bytes not yet taken.
  bool Has(AttemptKey key) const;
  // Bytes of this attempt dropped since the last call.
  int64_t TakeDropped(AttemptKey key);
  // The attempt's oldest spooled chunks, in order: the first one, and after it as many more
  // as fit in `max_bytes` together, each counted as its bytes plus `record_overhead` (empty:
  // none spooled). They count as being sent: a drop of their segment does not count them as
  // dropped (the caller holds copies), and Pop removes them once acknowledged. Each call
  // hands them out anew from the oldest one.
  Result<std::vector<Chunk>> Front(AttemptKey key, size_t max_bytes, size_t record_overhead = 0);
  // Front(key, 0): the oldest chunk alone.
  Result<std::optional<Chunk>> Front(AttemptKey key);
  // The chunks handed out by Front() up to and including `seq` were acknowledged.
  void Pop(AttemptKey key, int64_t seq);
  // Whether the record `seq` handed out by Front() is still on disk.
  bool Holds(AttemptKey key, int64_t seq) const;
  // The caller no longer holds the chunks Front() handed out: a drop counts them again.
  void Release(AttemptKey key);
  // Counts bytes lost elsewhere (a chunk held only in memory at shutdown) for the marker.
  void AddDropped(AttemptKey key, int64_t token, int64_t bytes);
  // Deletes the attempt's files (its lease is gone).
  void Remove(AttemptKey key);

  int64_t bytes() const { return bytes_; }
  int64_t segment_bytes() const { return segment_bytes_; }

 private:
  struct Segment {
    uint64_t number = 0;
    std::string path;
    int64_t size = 0;         // bytes in the file
    int64_t read_offset = 0;  // start of the first record not yet acknowledged
    int64_t unsent = 0;       // chunk bytes from read_offset on
  };
  // A record Front() handed out; they follow each other from the first segment's read_offset.
  struct Taken {
    int64_t seq = 0;
    uint64_t segment = 0;  // its segment's number
    int64_t bytes = 0;     // chunk bytes (the record is kHeaderBytes more)
  };
  struct Attempt {
    int64_t token = 0;
    int64_t next_seq = 1;
    std::deque<Segment> segments;
    int64_t dropped = 0;
    std::deque<Taken> taken;
  };

  std::string PathFor(AttemptKey key, int64_t token, uint64_t number) const;
  std::string DroppedPath(AttemptKey key, int64_t token) const;
  void SaveDropped(AttemptKey key, const Attempt& a);
  bool DropOldestSegment();  // false: nothing left to drop
  void DropFront(Attempt& a);
  // Reads the records of `s` from `offset` on into `out` while they fit.
  enum class ReadEnd { kSegmentEnd, kFull, kUnreadable };
  ReadEnd ReadRecords(const Segment& s, int64_t offset, size_t max_bytes, size_t overhead,
                      std::vector<Chunk>* out, size_t* total, std::deque<Taken>* taken);
  void Unlink(const Segment& s);
  Status Scan(const std::string& path, Segment* s, int64_t* max_seq);

  std::string dir_;
  int64_t max_bytes_;
  int64_t segment_bytes_;
  int64_t bytes_ = 0;
  uint64_t next_segment_ = 1;
  std::map<AttemptKey, Attempt> attempts_;
};

}  // namespace jobctl::agentd
