// Builds the proposer that the config's proposer.kind names. The daemon calls
// it at start, before the loop, so a bad proposer config stops it at once.
// Kinds: "scripted" (proposers/scripted_proposer.h); "llm" and "offline" come
// from llm_client/ and are validated here from the raw [llm] / [offline] tables.
#pragma once

#include <memory>

#include "daemon/config.h"
#include "proposers/proposer.h"
#include "proposers/call_record.h"

namespace ard {

/// Throws ConfigError (one line, naming the key) for an unknown kind or a bad
/// proposer section. calls receives every LLM API call; it outlives the proposer.
std::unique_ptr<Proposer> make_proposer(const Config& config, llm::CallSink& calls);

}  // namespace ard
