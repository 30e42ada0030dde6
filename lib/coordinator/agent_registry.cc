#include "coordinator/agent_registry.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/log.h"

namespace jobctl::coordinator {

AgentRegistry::AgentRegistry(Context* ctx) : ctx_(ctx) {}

void AgentRegistry::Start() {
  expiry_timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  // The registry is swept a few times per expiry period, at most hourly.
  uint64_t every = static_cast<uint64_t>(
      std::clamp<int64_t>(ctx_->config.agent_expiry.count() / 4, 1000, 3'600'000));
  expiry_timer_->Every(every, [this] { OnExpiryTimer(); });
  expiry_timer_->Unref();
}

void AgentRegistry::Close() { expiry_timer_.reset(); }

void AgentRegistry::Load(const store::AgentRow& row) {
  AgentInfo& a = agents_[row.name];
  a.name = row.name;
  a.slots = row.slots;
  a.version = row.version;
  a.draining = row.draining;
  a.last_seen_ms = row.last_seen_ms;
  a.described = true;
  nlohmann::json labels = nlohmann::json::parse(row.labels_json, nullptr, false);
  if (labels.is_object()) {
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      if (it.value().is_string()) a.labels[it.key()] = it.value().get<std::string>();
    }
  }
}

AgentInfo& AgentRegistry::Get(const std::string& name) {
  AgentInfo& a = agents_[name];
  if (a.name.empty()) a.name = name;
  return a;
}

AgentInfo* AgentRegistry::Find(const std::string& name) {
  auto it = agents_.find(name);
  return it == agents_.end() ? nullptr : &it->second;
}

void AgentRegistry::Seen(AgentInfo& a) {
  a.last_seen_mono = ctx_->MonoMs();
  a.last_seen_ms = ctx_->NowMs();
}

void AgentRegistry::Describe(AgentInfo& a, std::map<std::string, std::string> labels, int slots,
                             std::string version) {
  slots = std::max(slots, 1);
  if (a.labels == labels && a.slots == slots && a.version == version && a.described) return;
  a.labels = std::move(labels);
  a.slots = slots;
  a.version = std::move(version);
  a.described = true;
  Stage(a);
}

void AgentRegistry::Stage(const AgentInfo& a) {
  ctx_->batch->Stage([&] {
    return ctx_->store->PutAgent(
        {a.name, nlohmann::json(a.labels).dump(), a.slots, a.version, a.last_seen_ms, a.draining});
  });
}

Status AgentRegistry::SetDraining(const std::string& name, bool draining) {
  AgentInfo* a = Find(name);
  if (a == nullptr) return Status::NotFound("no such agent");
  a->draining = draining;
  return ctx_->batch->Write([&] {
    return ctx_->store->PutAgent({a->name, nlohmann::json(a->labels).dump(), a->slots, a->version,
                                  a->last_seen_ms, a->draining});
  });
}

Status AgentRegistry::Remove(const std::string& name) {
  agents_.erase(name);
  Status s =
      ctx_->batch->Write([&] { return ctx_->store->DeleteAgent(name); }, Status::Code::kNotFound);
  return s.code() == Status::Code::kNotFound ? Status::Ok() : s;
}

void AgentRegistry::ClearHeld() {
  for (auto& [name, a] : agents_) a.held.Clear();
}

bool AgentRegistry::Alive(const AgentInfo& a) const {
  return a.waiting != nullptr || (a.last_seen_mono != 0 && ctx_->MonoMs() - a.last_seen_mono <=
                                                               ctx_->config.lease_ttl.count());
}

std::vector<std::string> AgentRegistry::Eligible(const std::vector<LabelSelector>& on,
                                                 bool step) const {
  std::vector<std::string> out;
  for (const auto& [name, a] : agents_) {
    if (step && !a.step_output) continue;
    if (!a.draining && Alive(a) && MatchesLabels(on, a.labels)) out.push_back(name);
  }
  return out;
}

void AgentRegistry::OnExpiryTimer() {
  int64_t now_ms = ctx_->NowMs();
  std::vector<std::string> gone;
  for (const auto& [name, a] : agents_) {
    if (!a.waiting && a.held.size() == 0 && !Alive(a) &&
        now_ms - a.last_seen_ms >= ctx_->config.agent_expiry.count()) {
      gone.push_back(name);
    }
  }
  for (const std::string& name : gone) {
    log::Info("agent expired from the registry", {{"agent", name}});
    if (!Remove(name).ok()) return;
  }
}

}  // namespace jobctl::coordinator
