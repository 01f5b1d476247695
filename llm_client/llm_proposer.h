// The LLM proposer: asks the configured model for an experiment and turns the
// answer into file writes. When the edit cannot be used (no description, a
// block that matches nowhere, a path that is not editable, a cut-off answer),
// it asks again in the same conversation with the exact error, up to
// max_edit_attempts rounds; every round is returned in the attempts.
//
// A provider that stays down is kUnavailable (the daemon waits and asks
// again later); a refused key, unknown model or rejected request is kFatal.
#pragma once

#include <memory>

#include "proposers/proposer.h"
#include "llm_client/chat_client.h"
#include "llm_client/edit_apply.h"

namespace llm {

class LlmProposer : public ard::Proposer {
 public:
  /// Throws MissingKeyError when the key's variable is unset.
  LlmProposer(LlmConfig config, PathPolicy policy, CallSink* sink, Sleeper sleeper = sleep_seconds);

  std::string name() const override;
  ard::ProposalResult propose(const ard::ProposalContext& context) override;
  /// Each call builds its own prompt and HTTP request; the client is safe to share.
  bool concurrent() const override { return true; }

 private:
  ChatClient client_;
  PathPolicy policy_;
};

}  // namespace llm
