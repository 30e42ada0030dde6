// TimingWheel is the coordinator's index of next fire times: a hierarchical timing wheel that
// maps job ids to deadlines (unix ms) and hands back the ones that are due. The coordinator's
// schedule loop owns the one instance; it is not thread-safe (loop thread only).
//
// The loop asks NextWakeup(), sleeps until then, and calls Advance(now) with the wall clock.
// Advance fires each due entry exactly once, never before its due time; entries due at or
// before the wheel's time when scheduled fire at the next Advance. Insert, cancel and
// re-schedule are O(1); Advance costs O(fired + cascaded) and never ticks through empty time;
// NextWakeup reads one occupancy bitmap per level, so an idle coordinator with 1M jobs sleeps
// until the next occupied slot. Level 0 has 256 slots of 1 ms; each level above has 64 slots,
// each as wide as the whole level below. Eleven levels span all 2^64 ms, so there is no
// overflow list and any int64_t deadline is accepted.
//
// Memory: a 32-byte node per entry plus an 8-byte slot in the id index, which is kept between
// 3/8 and 3/4 full: 43-53 bytes per entry after Reserve(n), 50 at 1M entries without it, up to
// ~85 just after the node pool has doubled (bench/timing_wheel_bench.cc measures it). Capacity
// is never returned.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace jobctl {

class TimingWheel {
 public:
  // Called once per due entry, after it has been removed, so the callback may re-Schedule the
  // same id (a periodic job) or Schedule/Cancel any other id. It must not call Advance.
  using OnDue = std::function<void(uint64_t id, int64_t due_ms)>;

  // The wheel's time starts at now_ms and only moves forward.
  explicit TimingWheel(int64_t now_ms = 0);

  // Adds id due at due_ms, or moves it there if present.
  void Schedule(uint64_t id, int64_t due_ms);
  // Removes id; false if it was not scheduled.
  bool Cancel(uint64_t id);
  bool Contains(uint64_t id) const;
  std::optional<int64_t> DueOf(uint64_t id) const;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t now_ms() const;

  // Moves the wheel's time to now_ms and calls on_due for every entry with due_ms <= now_ms
  // (order unspecified). Entries the callback schedules at or before the time being fired wait
  // for the next Advance; later ones still within now_ms fire in this call. If now_ms is behind
  // the wheel's time (the wall clock stepped back) the time stays and only entries already
  // overdue fire.
  void Advance(int64_t now_ms, const OnDue& on_due);

  // A time at or before the earliest due entry, or nullopt when empty. Sleeping until then
  // never misses a deadline. It equals the earliest due when that entry is in level 0 (due in
  // the wheel's current 256 ms block) and is the start of the entry's slot otherwise: after
  // Advance to it the entry has moved down, and asking again gets closer. Overdue entries give
  // a time <= now_ms(). Meant for between Advance calls. O(levels).
  std::optional<int64_t> NextWakeup() const;

  // Preallocates for n entries so that growing to n allocates nothing.
  void Reserve(size_t n);
  // Heap bytes held (node pool and index capacity) plus the object itself.
  size_t MemoryBytes() const;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr int kLevels = 11;
  // Lists 0..895 are wheel slots (level 0: 0..255, level L >= 1: 192 + 64*L + slot); one
  // occupancy bit per list, so occupied_ word 0..3 is level 0 and word 3 + L is level L.
  static constexpr uint16_t kSlotLists = 256 + 64 * (kLevels - 1);
  static constexpr uint16_t kReadyList = kSlotLists;       // due <= now_, for the next Advance
  static constexpr uint16_t kFiringList = kSlotLists + 1;  // being fired by this Advance
  static constexpr uint16_t kNumLists = kSlotLists + 2;
  static constexpr uint16_t kFreeList = UINT16_MAX;

  struct Node {
    uint64_t id;
    uint64_t due;   // deadline as a key: unix ms with the sign bit flipped (see ToKey)
    uint32_t prev;  // within the list; kNil at the head
    uint32_t next;  // within the list, or the free list
    uint16_t list;  // which list holds it
  };
  // One open-addressing slot of the id index: node == kNil when empty. hash is the low 32 bits
  // of the id's hash, so probing and rehashing never touch the node pool.
  struct IndexSlot {
    uint32_t node;
    uint32_t hash;
  };
  struct Slot {
    uint64_t start;  // key of the slot's first instant
    uint16_t list;
  };

  uint16_t ListFor(uint64_t due) const;
  std::optional<Slot> EarliestSlot() const;
  void Link(uint32_t n, uint16_t list);
  void Unlink(uint32_t n);
  void Place(uint32_t n);
  void FireList(uint16_t list, const OnDue& on_due);
  void CascadeList(uint16_t list, const OnDue& on_due);
  void Fire(uint32_t n, const OnDue& on_due);
  uint32_t AllocNode(uint64_t id);
  void FreeNode(uint32_t n);

  size_t FindIndexSlot(uint64_t id) const;  // slot holding id, or index_.size()
  uint32_t FindNode(uint64_t id) const;
  void IndexInsert(uint32_t n);
  void IndexErase(uint64_t id);
  void IndexRehash(size_t capacity);

  uint64_t now_;                     // wheel time as a key
  uint64_t ready_min_ = UINT64_MAX;  // <= every due in kReadyList
  size_t size_ = 0;
  uint32_t free_head_ = kNil;
  bool advancing_ = false;  // catches Advance called from its own callback
  std::vector<Node> pool_;
  std::vector<IndexSlot> index_;  // power-of-two size, at most 3/4 full
  std::array<uint32_t, kNumLists> heads_;
  std::array<uint64_t, (kNumLists + 63) / 64> occupied_{};
};

}  // namespace jobctl
