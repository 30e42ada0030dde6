// Leases: which agent holds which shard, under which fencing token, until when. This is where
// a lease is granted, renewed, released and where it expires (OnTimer). Tokens come from one
// counter that only grows; the counter is saved once per dispatch pass (SaveTokenCounter),
// every grant's lease row with it. Leases are soft state otherwise: renewals live in memory,
// and after a restart every lease gets a whole TTL before expiry is judged (Load).
// Loop thread only; owned by the Dispatcher.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/context.h"
#include "model/ids.h"
#include "model/timing_wheel.h"
#include "uvx/handles.h"

namespace jobctl::coordinator {

struct Lease {
  ShardKey key;
  std::string agent;
  FencingToken token = 0;
  int64_t expires_mono = 0;
  bool canceled = false;   // the run was canceled: the agent is told to kill at its heartbeat
  int64_t start_mono = 0;  // granted ahead: when its child is due (monotonic ms); else 0
};

class Leases {
 public:
  // A lease expired: it is already released when this is called.
  using OnExpired = std::function<void(const Lease& lease)>;

  explicit Leases(Context* ctx);
  Leases(const Leases&) = delete;
  Leases& operator=(const Leases&) = delete;
  void set_on_expired(OnExpired f) { on_expired_ = std::move(f); }

  void Start();
  void Close();

  // Rebuilding from the store.
  void Clear();
  // `start_mono` (monotonic; 0: none): a lease granted ahead whose instant is still to come
  // counts its TTL from then.
  void Load(ShardKey key, const std::string& agent, FencingToken token, int64_t start_mono = 0);
  void SetLastToken(FencingToken last_used) { last_token_ = last_used; }

  // A new lease of `key` for `agent` under the next token; its row is staged in this turn.
  // `start_mono` (monotonic; 0: now): when its child is due, granted early; its TTL counts
  // from then, and no renewal before brings its expiry nearer.
  FencingToken Grant(ShardKey key, const std::string& agent, int64_t now_ms,
                     int64_t start_mono = 0);
  // Stages the token counter: once per dispatch pass, after its last grant.
  void SaveTokenCounter();

  enum class Renewal { kRenewed, kCanceled, kNotHeld };
  // A heartbeat from `agent` lists the lease: renewed for one more TTL from `now_mono`, or
  // the holder is told it was canceled, or it is not this agent's live lease under `token`.
  Renewal Renew(ShardKey key, FencingToken token, const std::string& agent, int64_t now_mono);

  // The lease ends; `why` (result, expired, released, agent removed) goes to the event log.
  // Returns the lease that ended, if there was one.
  std::optional<Lease> Release(ShardKey key, std::string_view why);
  void MarkCanceled(ShardKey key);

  const Lease* Find(ShardKey key) const;
  // That lease is live.
  bool Holds(ShardKey key, FencingToken token) const;
  // That lease is live and held by this agent.
  bool HeldBy(ShardKey key, FencingToken token, const std::string& agent) const;
  // For results and logs: kOk, or kConflict saying why (never which token is current); a
  // refusal is counted and written to the event log.
  Status CheckToken(ShardKey key, const std::string& agent, FencingToken token) const;
  // Every live lease of `agent`.
  std::vector<Lease> HeldByAgent(const std::string& agent) const;
  size_t size() const { return leases_.size(); }

  // Re-arms the expiry timer: due at the next lease's expiry, and at least every TTL/3 while
  // leases exist (which is how a loop stall shows).
  void Arm();

 private:
  // Holds `lease` as its shard's one lease, in place of any it had.
  void Put(Lease lease);
  void OnTimer();

  Context* ctx_;
  OnExpired on_expired_;
  std::map<ShardKey, Lease> leases_;
  std::map<FencingToken, ShardKey> by_token_;
  TimingWheel wheel_;  // token -> expiry (monotonic ms)
  std::unique_ptr<uvx::Timer> timer_;
  int64_t last_check_mono_ = 0;
  FencingToken last_token_ = 0;
};

}  // namespace jobctl::coordinator
