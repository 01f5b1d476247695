// See proposer_factory.h.
#include "daemon/proposer_factory.h"

#include "llm_client/llm_proposer.h"
#include "proposers/editable.h"
#include "proposers/offline_proposer.h"
#include "proposers/scripted_proposer.h"
#include "proposers/swarm_proposer.h"

namespace ard {

namespace {

/// An llm proposer of `table` ([llm], or a profile's over it); cap: shared with the swarm's other profiles, or null.
std::unique_ptr<Proposer> make_llm(const Config& config, const toml::table& table, llm::CallSink& calls,
                                   std::function<void(const std::string&)> log, std::shared_ptr<llm::SpendCap> cap) {
  llm::LlmConfig llm_config = llm::parse_llm_config(table);
  // Children get only the env.pass variables; the key must never be one of them.
  for (const auto& name : config.env_pass)
    if (!llm_config.api_key_env.empty() && name == llm_config.api_key_env)
      throw ConfigError("env.pass: '" + name + "' holds the API key (llm.api_key_env); child processes must not see it");
  EditablePaths editable(config.editable);
  std::unique_ptr<Proposer> on_cap;
  if (llm_config.on_cap == llm::OnCap::kOffline)
    on_cap = std::make_unique<OfflineProposer>(parse_offline_config(config.offline));
  try {
    return std::make_unique<llm::LlmProposer>(
        llm_config, [editable](const std::string& path) { return editable.check_write(path); }, &calls,
        llm::sleep_seconds, calls.spend(config.tag), std::move(on_cap), std::move(log), std::move(cap));
  } catch (const llm::MissingKeyError& e) {
    throw ConfigError(e.what());
  }
}

/// The swarm of config.profiles; its llm profiles share the tag's caps (those of [llm]).
std::unique_ptr<Proposer> make_swarm(const Config& config, llm::CallSink& calls,
                                     std::function<void(const std::string&)> log) {
  std::shared_ptr<llm::SpendCap> cap;
  if (config.has_llm) {
    const llm::LlmConfig base = llm::parse_llm_config(config.llm);
    cap = std::make_shared<llm::SpendCap>(base.max_cost_usd, base.max_calls_per_hour, calls.spend(config.tag));
  }
  std::vector<SwarmProposer::Member> members;
  for (const auto& p : config.profiles) {
    SwarmProposer::Member m{{p.name, p.weight, p.addendum}, nullptr};
    if (p.kind == "llm") m.proposer = make_llm(config, p.llm, calls, log, cap);
    else m.proposer = std::make_unique<OfflineProposer>(parse_offline_config(config.offline));
    members.push_back(std::move(m));
  }
  return std::make_unique<SwarmProposer>(std::move(members));
}

}  // namespace

std::unique_ptr<Proposer> make_proposer(const Config& config, llm::CallSink& calls,
                                        std::function<void(const std::string&)> log) {
  if (!config.profiles.empty()) return make_swarm(config, calls, std::move(log));
  const std::string& kind = config.proposer_kind;
  if (kind == "llm") {
    if (!config.has_llm) throw ConfigError("proposer.kind: \"llm\" needs an [llm] table");
    return make_llm(config, config.llm, calls, std::move(log), nullptr);
  }
  if (kind == "offline") return std::make_unique<OfflineProposer>(parse_offline_config(config.offline));
  if (kind == "scripted") {
    if (config.proposer_script.empty()) throw ConfigError("proposer.script: required when proposer.kind is scripted");
    std::filesystem::path script = expand_home(config.proposer_script);
    if (script.is_relative()) script = config.repo / script;
    try {
      return std::make_unique<ScriptedProposer>(script);
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("proposer.script: ") + e.what());
    }
  }
  throw ConfigError("proposer.kind: unknown proposer '" + kind + "' (known: llm, offline, scripted)");
}

}  // namespace ard
