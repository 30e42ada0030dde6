// How the wheel works. Deadlines become unsigned keys (the sign bit flipped, so unsigned order
// is signed order) and the wheel's time now_ is a key too. An entry lives in the level that
// holds the highest bit in which its due differs from now_, in the slot given by due's bits
// within that level. Hence every entry of a level lies in now_'s block of the level above, and
// in a slot strictly after now_'s own slot in that level (due > now_ and they first differ
// there, so due has the 1). Two things follow:
//   - The earliest entry is in the lowest non-empty level, in its lowest occupied slot, which
//     the occupancy bitmap gives with one count-trailing-zeros. In level 0 the slot is the due
//     time itself.
//   - Moving now_ forward to anything before the earliest slot's start breaks nothing: every
//     entry still first differs from now_ in the same level. So Advance jumps from one occupied
//     slot to the next; at a level-0 slot it fires the slot, at a higher one it re-places the
//     entries relative to the slot's start, which puts each in a lower level (or fires it when
//     due exactly then). Each entry cascades at most once per level.
// This is the scheme of Varghese and Lauck's hierarchical wheels, and of Linux's timers before
// 4.8, with the time jumps of the bitmap added so that nothing ticks through empty time.
#include "model/timing_wheel.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace jobctl {
namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr int kLevel0Bits = 8;
constexpr int kLevelBits = 6;

uint64_t ToKey(int64_t ms) { return static_cast<uint64_t>(ms) ^ kSignBit; }
int64_t FromKey(uint64_t key) { return static_cast<int64_t>(key ^ kSignBit); }

// Level L >= 1 covers key bits [Shift(L), Shift(L) + 6).
int Shift(int level) { return kLevel0Bits + kLevelBits * (level - 1); }

// murmur3's finalizer: job ids are often sequential, and linear probing needs them spread.
uint32_t HashId(uint64_t id) {
  id ^= id >> 33;
  id *= 0xff51afd7ed558ccdULL;
  id ^= id >> 33;
  id *= 0xc4ceb9fe1a85ec53ULL;
  id ^= id >> 33;
  return static_cast<uint32_t>(id);
}

}  // namespace

TimingWheel::TimingWheel(int64_t now_ms) : now_(ToKey(now_ms)) {
  static_assert(sizeof(Node) == 32, "the header's memory figures assume 32-byte nodes");
  heads_.fill(kNil);
}

int64_t TimingWheel::now_ms() const { return FromKey(now_); }

void TimingWheel::Schedule(uint64_t id, int64_t due_ms) {
  uint32_t n = FindNode(id);
  if (n == kNil) {
    n = AllocNode(id);
    IndexInsert(n);
  } else {
    Unlink(n);
  }
  pool_[n].due = ToKey(due_ms);
  Place(n);
}

bool TimingWheel::Cancel(uint64_t id) {
  uint32_t n = FindNode(id);
  if (n == kNil) return false;
  Unlink(n);
  IndexErase(id);
  FreeNode(n);
  return true;
}

bool TimingWheel::Contains(uint64_t id) const { return FindNode(id) != kNil; }

std::optional<int64_t> TimingWheel::DueOf(uint64_t id) const {
  uint32_t n = FindNode(id);
  if (n == kNil) return std::nullopt;
  return FromKey(pool_[n].due);
}

void TimingWheel::Advance(int64_t now_ms, const OnDue& on_due) {
  assert(!advancing_ && "Advance called from its own callback");
  advancing_ = true;
  // Overdue entries move to a list of their own first, so that entries the callbacks schedule
  // at or before now_ collect in the ready list for the next Advance instead of looping here.
  while (heads_[kReadyList] != kNil) {
    uint32_t n = heads_[kReadyList];
    Unlink(n);
    Link(n, kFiringList);
  }
  FireList(kFiringList, on_due);

  uint64_t target = ToKey(now_ms);
  if (target > now_) {
    // Jump from one occupied slot to the next, never through empty time. Callbacks may add
    // entries anywhere after now_, so the earliest slot is looked up afresh each time.
    for (std::optional<Slot> slot = EarliestSlot(); slot && slot->start <= target;
         slot = EarliestSlot()) {
      now_ = slot->start;
      if (slot->list < 256) {
        FireList(slot->list, on_due);
      } else {
        CascadeList(slot->list, on_due);
      }
    }
    now_ = target;
  }
  advancing_ = false;
}

std::optional<int64_t> TimingWheel::NextWakeup() const {
  if (heads_[kReadyList] != kNil) return FromKey(ready_min_);
  if (std::optional<Slot> slot = EarliestSlot()) return FromKey(slot->start);
  return std::nullopt;
}

void TimingWheel::Reserve(size_t n) {
  pool_.reserve(n);
  size_t capacity = 16;
  while (n * 4 > capacity * 3) capacity *= 2;
  if (capacity > index_.size()) IndexRehash(capacity);
}

size_t TimingWheel::MemoryBytes() const {
  return sizeof(*this) + pool_.capacity() * sizeof(Node) + index_.capacity() * sizeof(IndexSlot);
}

// Requires due > now_ (see the top of the file for why the first differing bit decides).
uint16_t TimingWheel::ListFor(uint64_t due) const {
  assert(due > now_);
  int high_bit = 63 - std::countl_zero(due ^ now_);
  if (high_bit < kLevel0Bits) return static_cast<uint16_t>(due & 255);
  int level = 1 + (high_bit - kLevel0Bits) / kLevelBits;
  uint64_t slot = (due >> Shift(level)) & 63;
  return static_cast<uint16_t>(192 + 64 * level + slot);
}

std::optional<TimingWheel::Slot> TimingWheel::EarliestSlot() const {
  // Every occupied slot lies after now_'s own slot in its level, so the lowest set bit is the
  // next one in time, and any slot of a lower level comes before every slot of a higher one.
  for (int word = 0; word < 4; ++word) {
    if (occupied_[word] == 0) continue;
    uint64_t slot = 64 * word + std::countr_zero(occupied_[word]);
    return Slot{(now_ & ~uint64_t{255}) | slot, static_cast<uint16_t>(slot)};
  }
  for (int level = 1; level < kLevels; ++level) {
    uint64_t bits = occupied_[3 + level];
    if (bits == 0) continue;
    uint64_t slot = std::countr_zero(bits);
    int top = Shift(level) + kLevelBits;
    uint64_t prefix = top >= 64 ? 0 : now_ & ~((uint64_t{1} << top) - 1);
    return Slot{prefix | (slot << Shift(level)), static_cast<uint16_t>(192 + 64 * level + slot)};
  }
  return std::nullopt;
}

void TimingWheel::Link(uint32_t n, uint16_t list) {
  Node& node = pool_[n];
  node.list = list;
  node.prev = kNil;
  node.next = heads_[list];
  if (node.next != kNil) pool_[node.next].prev = n;
  heads_[list] = n;
  occupied_[list >> 6] |= uint64_t{1} << (list & 63);
}

void TimingWheel::Unlink(uint32_t n) {
  Node& node = pool_[n];
  if (node.prev != kNil) {
    pool_[node.prev].next = node.next;
  } else {
    heads_[node.list] = node.next;
  }
  if (node.next != kNil) pool_[node.next].prev = node.prev;
  if (heads_[node.list] == kNil) {
    occupied_[node.list >> 6] &= ~(uint64_t{1} << (node.list & 63));
    // The minimum is only a bound; resetting it when the list empties keeps it from sticking
    // to a cancelled entry forever.
    if (node.list == kReadyList) ready_min_ = UINT64_MAX;
  }
}

void TimingWheel::Place(uint32_t n) {
  uint64_t due = pool_[n].due;
  if (due <= now_) {
    Link(n, kReadyList);
    ready_min_ = std::min(ready_min_, due);
  } else {
    Link(n, ListFor(due));
  }
}

// Pops from the head each time rather than walking the list, because the callback may cancel or
// move any other entry, including the next one in this list.
void TimingWheel::FireList(uint16_t list, const OnDue& on_due) {
  while (heads_[list] != kNil) Fire(heads_[list], on_due);
}

void TimingWheel::CascadeList(uint16_t list, const OnDue& on_due) {
  while (heads_[list] != kNil) {
    uint32_t n = heads_[list];
    if (pool_[n].due == now_) {
      Fire(n, on_due);
    } else {
      Unlink(n);
      Place(n);  // due is within this slot and after now_, so it lands in a lower level
    }
  }
}

void TimingWheel::Fire(uint32_t n, const OnDue& on_due) {
  // Copy out first: the callback may grow the pool and move every node.
  uint64_t id = pool_[n].id;
  int64_t due_ms = FromKey(pool_[n].due);
  Unlink(n);
  IndexErase(id);
  FreeNode(n);
  on_due(id, due_ms);
}

uint32_t TimingWheel::AllocNode(uint64_t id) {
  uint32_t n = free_head_;
  if (n != kNil) {
    free_head_ = pool_[n].next;
  } else {
    assert(pool_.size() < kNil);
    n = static_cast<uint32_t>(pool_.size());
    pool_.emplace_back();
  }
  pool_[n] = Node{id, 0, kNil, kNil, kFreeList};
  ++size_;
  return n;
}

void TimingWheel::FreeNode(uint32_t n) {
  pool_[n].list = kFreeList;
  pool_[n].next = free_head_;
  free_head_ = n;
  --size_;
}

size_t TimingWheel::FindIndexSlot(uint64_t id) const {
  if (index_.empty()) return index_.size();
  size_t mask = index_.size() - 1;
  uint32_t hash = HashId(id);
  // The table is never full, so an empty slot ends every probe.
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const IndexSlot& s = index_[i];
    if (s.node == kNil) return index_.size();
    if (s.hash == hash && pool_[s.node].id == id) return i;
  }
}

uint32_t TimingWheel::FindNode(uint64_t id) const {
  size_t i = FindIndexSlot(id);
  return i < index_.size() ? index_[i].node : kNil;
}

// Called after AllocNode has counted n in size_.
void TimingWheel::IndexInsert(uint32_t n) {
  if (size_ * 4 > index_.size() * 3) IndexRehash(index_.empty() ? 16 : index_.size() * 2);
  size_t mask = index_.size() - 1;
  uint32_t hash = HashId(pool_[n].id);
  size_t i = hash & mask;
  while (index_[i].node != kNil) i = (i + 1) & mask;
  index_[i] = IndexSlot{n, hash};
}

// Backward-shift deletion: linear probing without tombstones, so lookups stay short however
// many jobs come and go.
void TimingWheel::IndexErase(uint64_t id) {
  size_t hole = FindIndexSlot(id);
  assert(hole < index_.size());
  size_t mask = index_.size() - 1;
  for (size_t j = (hole + 1) & mask; index_[j].node != kNil; j = (j + 1) & mask) {
    size_t home = index_[j].hash & mask;
    // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    index_[hole] = index_[j];
    hole = j;
  }
  index_[hole].node = kNil;
}

void TimingWheel::IndexRehash(size_t capacity) {
  std::vector<IndexSlot> old(capacity, IndexSlot{kNil, 0});
  old.swap(index_);
  size_t mask = capacity - 1;
  for (const IndexSlot& s : old) {
    if (s.node == kNil) continue;
    size_t i = s.hash & mask;
    while (index_[i].node != kNil) i = (i + 1) & mask;
    index_[i] = s;
  }
}

}  // namespace jobctl
