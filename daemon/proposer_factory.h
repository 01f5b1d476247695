// Builds the proposer that the config's proposer.kind names. The daemon calls
// it at start, before the loop, so a bad proposer config stops it at once.
// Kinds: "scripted" (proposers/scripted_proposer.h); "llm" and "offline" come
// from llm_client/ and are validated here from the raw [llm] / [offline] tables.
// With [[proposer.profile]] tables, the swarm (proposers/swarm_proposer.h):
// one proposer per profile, the llm ones sharing the tag's caps.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "daemon/config.h"
#include "proposers/call_record.h"
#include "proposers/proposer.h"

namespace ard {

/// Throws ConfigError (one line, naming the key) for an unknown kind or a bad
/// proposer section. calls receives every LLM API call and says what the
/// config's tag has spent so far (the LLM caps start from it); it outlives the
/// proposer. log, when set, gets one line per failed LLM call and retry.
std::unique_ptr<Proposer> make_proposer(const Config& config, llm::CallSink& calls,
                                        std::function<void(const std::string&)> log = {});

}  // namespace ard
