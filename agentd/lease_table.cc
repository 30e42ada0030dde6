#include "lease_table.h"

#include <algorithm>

namespace jobctl::agentd {

int64_t LeaseDeadline(int64_t sent_ms, int64_t ttl_ms) {
  return sent_ms + ttl_ms * 99 / 100 - 1000;
}

int64_t HeartbeatEvery(int64_t ttl_ms, int64_t heartbeat_ms) {
  int64_t every = ttl_ms / 3;
  if (heartbeat_ms > 0) every = std::min(every, heartbeat_ms);
  return std::max<int64_t>(every, 100);
}

bool LeaseTable::Add(ShardKey key, int64_t token, int64_t sent_ms, int64_t ttl_ms, int64_t now_ms) {
  int64_t deadline = LeaseDeadline(sent_ms, ttl_ms);
  bool confirmed = deadline - now_ms >= kMinStartMs;
  HeldLease l{key, token, confirmed ? deadline : now_ms + ttl_ms, confirmed};
  auto [it, added] = leases_.try_emplace(key, l);
  if (!added) {
    Unindex(it->second);
    it->second = l;
  }
  Index(l);
  return confirmed;
}

bool LeaseTable::Renewed(ShardKey key, int64_t token, int64_t sent_ms, int64_t ttl_ms) {
  auto it = leases_.find(key);
  if (it == leases_.end() || it->second.token != token) return false;
  HeldLease& l = it->second;
  int64_t deadline = LeaseDeadline(sent_ms, ttl_ms);
  Unindex(l);
  l.deadline_ms = l.confirmed ? std::max(l.deadline_ms, deadline) : deadline;
  l.confirmed = true;
  Index(l);
  return true;
}

bool LeaseTable::Remove(ShardKey key, int64_t token) {
  auto it = leases_.find(key);
  if (it == leases_.end() || it->second.token != token) return false;
  Unindex(it->second);
  leases_.erase(it);
  return true;
}

std::vector<HeldLease> LeaseTable::TakeExpired(int64_t now_ms) {
  std::vector<HeldLease> expired;
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now_ms) {
    auto it = leases_.find(by_deadline_.begin()->second);
    by_deadline_.erase(by_deadline_.begin());
    expired.push_back(it->second);
    leases_.erase(it);
  }
  return expired;
}

std::optional<int64_t> LeaseTable::NextDeadline() const {
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first;
}

std::optional<HeldLease> LeaseTable::Find(ShardKey key) const {
  auto it = leases_.find(key);
  if (it == leases_.end()) return std::nullopt;
  return it->second;
}

std::vector<HeldLease> LeaseTable::All() const {
  std::vector<HeldLease> out;
  for (const auto& [key, l] : leases_) out.push_back(l);
  return out;
}

}  // namespace jobctl::agentd
