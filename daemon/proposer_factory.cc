// See proposer_factory.h.
#include "daemon/proposer_factory.h"

#include "daemon/scripted_proposer.h"

namespace ard {

std::unique_ptr<Proposer> make_proposer(const Config& config, llm::CallSink& calls) {
  (void)calls;  // used by the LLM proposer
  const std::string& kind = config.proposer_kind;
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
  throw ConfigError("proposer.kind: unknown proposer '" + kind + "' (this build knows: scripted)");
}

}  // namespace ard
