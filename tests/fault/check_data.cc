// I6 (nothing acknowledged is lost) from the agents' acknowledgements, the coordinator's fire
// events and the probes' records against the store; and I9, no two attempts of a shard alive at
// once (measured too).
#include <climits>
#include <map>

#include "fault/checker.h"
#include "fault/probe_output.h"
#include "model/ids.h"

namespace jobctl::fault {
namespace {

std::string Attempt(const StoreView& s, int64_t run, int shard, int attempt, int64_t token) {
  const RunRecord* r = s.FindRun(run);
  std::string job = r != nullptr
                        ? "job " + r->job + " instant " + FormatInstant(r->scheduled_ms) + " "
                        : std::string("job ? ");
  return job + "run " + std::to_string(run) + " shard " + std::to_string(shard) + " attempt " +
         std::to_string(attempt) + " token " + std::to_string(token);
}

void CheckLogAck(const Event& e, const std::string& agent, const StoreView& s, Report* r) {
  AttemptId id{e.Int("run"), static_cast<int>(e.Int("shard")), static_cast<int>(e.Int("attempt"))};
  int64_t seq = e.Int("seq"), bytes = e.Int("bytes");
  auto attempt = s.chunks.find(id);
  const store::LogChunk* chunk = nullptr;
  if (attempt != s.chunks.end()) {
    if (auto c = attempt->second.find(seq); c != attempt->second.end()) chunk = &c->second;
  }
  if (chunk == nullptr || static_cast<int64_t>(chunk->data.size()) != bytes) {
    r->Fail("I6", Attempt(s, std::get<0>(id), std::get<1>(id), std::get<2>(id), e.Int("token")) +
                      ": agent " + agent + " saw log chunk seq " + std::to_string(seq) + " (" +
                      std::to_string(bytes) + " bytes) acknowledged at " + e.where +
                      ", but the store has " +
                      (chunk == nullptr ? std::string("no such chunk")
                                        : std::to_string(chunk->data.size()) + " bytes"));
  }
}

void CheckResultAck(const Event& e, const std::string& agent, const StoreView& s, Report* r) {
  int64_t run = e.Int("run"), token = e.Int("token");
  int shard = static_cast<int>(e.Int("shard")), attempt = static_cast<int>(e.Int("attempt"));
  const RunRecord* rec = s.FindRun(run);
  const ShardRecord* sh =
      rec != nullptr && shard >= 0 && shard < static_cast<int>(rec->shards.size())
          ? &rec->shards[static_cast<size_t>(shard)]
          : nullptr;
  // Durable: the shard moved on to a later attempt, or ended with this one.
  bool kept =
      sh != nullptr && (sh->attempt > attempt ||
                        (sh->attempt == attempt && sh->token == token && IsTerminal(sh->state)));
  if (!kept) {
    r->Fail("I6",
            Attempt(s, run, shard, attempt, token) + ": agent " + agent + " saw its result (" +
                e.Str("outcome") + ") acknowledged at " + e.where + ", but the store has " +
                (sh == nullptr
                     ? std::string("no such shard")
                     : "attempt " + std::to_string(sh->attempt) + " token " +
                           std::to_string(sh->token) + " " + std::string(RunStateName(sh->state))));
  }
}

// What each probe attempt printed must be stored exactly: a prefix of its output while it
// may have been cut short, all of it once its result was acknowledged.
void CheckProbeOutput(const History& h, const StoreView& s, Report* r) {
  std::map<AttemptId, const Event*> starts, ends;
  for (const Event& e : h.probes) {
    AttemptId id{e.Int("run"), static_cast<int>(e.Int("shard")),
                 static_cast<int>(e.Int("attempt"))};
    (e.ev == "start" ? starts : ends)[id] = &e;
  }
  std::map<AttemptId, const Event*> acked;
  for (const auto& [agent, events] : h.agents) {
    for (const Event& e : events) {
      if (e.ev == "result_acked") {
        acked[{e.Int("run"), static_cast<int>(e.Int("shard")),
               static_cast<int>(e.Int("attempt"))}] = &e;
      }
    }
  }
  int64_t complete = 0;
  for (const auto& [id, start] : starts) {
    auto [run, shard, attempt] = id;
    int lines = static_cast<int>(start->Int("lines"));
    std::string want = ProbeOutput(run, shard, attempt, lines);
    std::string got = s.Output(id, store::LogStream::kStdout);
    auto end = ends.find(id);
    auto ack = acked.find(id);
    bool whole = end != ends.end() && !end->second->Has("signal") && ack != acked.end() &&
                 ack->second->Str("outcome") == "exited";
    std::string who = Attempt(s, run, shard, attempt, start->Int("token"));
    if (whole && got != want) {
      r->Fail("I6", who + ": the probe printed " + std::to_string(want.size()) + " bytes (sha256 " +
                        Sha256Hex(want) + ") and its result was acknowledged, but the store has " +
                        std::to_string(got.size()) + " bytes (sha256 " + Sha256Hex(got) + ")");
    } else if (!whole && want.compare(0, got.size(), got) != 0) {
      r->Fail("I6", who + ": the stored output (" + std::to_string(got.size()) + " bytes, sha256 " +
                        Sha256Hex(got) + ") is not what the probe printed");
    }
    complete += whole;
  }
  r->Count("probes", static_cast<int64_t>(starts.size()));
  r->Count("probes_complete", complete);
}

}  // namespace

void CheckAcknowledged(const History& h, const StoreView& s, Report* r) {
  int64_t log_acks = 0, result_acks = 0;
  for (const auto& [agent, events] : h.agents) {
    for (const Event& e : events) {
      if (e.ev == "log_acked") {
        ++log_acks;
        CheckLogAck(e, agent, s, r);
      } else if (e.ev == "result_acked") {
        ++result_acks;
        CheckResultAck(e, agent, s, r);
      }
    }
  }
  for (const Event& e : h.coordinator) {
    if (e.ev != "fire" && e.ev != "skip") continue;
    const RunRecord* run = s.FindRun(e.Int("run"));
    if (run == nullptr || run->job != e.Str("job") || run->scheduled_ms != e.Int("scheduled_ms")) {
      r->Fail("I6", "job " + e.Str("job") + " instant " + FormatInstant(e.Int("scheduled_ms")) +
                        " run " + std::to_string(e.Int("run")) + ": reported at " + e.where +
                        " but not in the store");
    }
  }
  CheckProbeOutput(h, s, r);
  r->Count("log_acks", log_acks);
  r->Count("result_acks", result_acks);
}

void MeasureOverlaps(const History& h, Report* r) {
  // Per attempt: when its process started and when it was last seen alive or ending.
  struct Life {
    int64_t start = -1;
    int64_t end = LLONG_MAX;
  };
  std::map<ShardKey, std::map<int, Life>> lives;
  auto life = [&](const Event& e) -> Life& {
    return lives[{e.Int("run"), static_cast<int>(e.Int("shard"))}]
                [static_cast<int>(e.Int("attempt"))];
  };
  int64_t last_ns = 0;
  for (const Event& e : h.probes) {
    last_ns = std::max(last_ns, e.mono_ns);
    if (e.ev == "start") life(e).start = e.mono_ns;
    if (e.ev == "end") life(e).end = std::min(life(e).end, e.mono_ns);
  }
  for (const auto& [agent, events] : h.agents) {
    for (const Event& e : events) {
      last_ns = std::max(last_ns, e.mono_ns);
      // agentd saw the process end, or its fence killed it (SIGKILL: dead when written; not
      // when the kill failed).
      bool fenced = e.ev == "fenced" && e.Str("error").empty();
      if ((e.ev == "exited" || fenced) && life(e).start >= 0) {
        life(e).end = std::min(life(e).end, e.mono_ns);
      }
    }
  }
  for (const auto& [key, attempts] : lives) {
    for (auto a = attempts.begin(); a != attempts.end(); ++a) {
      for (auto b = std::next(a); b != attempts.end(); ++b) {
        if (a->second.start < 0 || b->second.start < 0) continue;
        int64_t from = std::max(a->second.start, b->second.start);
        int64_t to = std::min(std::min(a->second.end, b->second.end), last_ns);
        if (to <= from) continue;
        r->overlaps.push_back({key.run, key.shard, a->first, b->first, (to - from) / 1'000'000,
                               a->second.end != LLONG_MAX});
        r->Fail("I9", "run " + std::to_string(key.run) + " shard " + std::to_string(key.shard) +
                          ": attempt " + std::to_string(b->first) + " started while attempt " +
                          std::to_string(a->first) + " was alive (" +
                          std::to_string((to - from) / 1'000'000) + " ms at once" +
                          (a->second.end == LLONG_MAX
                               ? ", attempt " + std::to_string(a->first) + " never seen ending)"
                               : ")"));
      }
    }
  }
}

}  // namespace jobctl::fault
