// The LLM proposer: asks the configured model for an experiment and turns the
// answer into file writes. When the edit cannot be used (no description, a
// block that matches nowhere, a path that is not editable, a cut-off answer),
// it asks again in the same conversation with the exact error, up to
// max_edit_attempts rounds. An answer of READ lines gets the files asked for,
// up to max_read_rounds rounds. Every round is returned in the attempts, with
// what was sent even when the call failed.
//
// A 413 or a context-length error shrinks the prompt (prompt.h) and asks
// again, the attempt saying what was left out. A provider that stays down, or
// a daemon that is stopping (the context's cancel flag), is kUnavailable; a
// refused key, unknown model or rejected request is kFatal. A reached cap
// (spend_cap.h) is kPaused, or, with a fallback proposer (llm.on_cap =
// "offline"), the fallback's proposal.
#pragma once

#include <memory>

#include "proposers/proposer.h"
#include "llm_client/chat_client.h"
#include "llm_client/edit_apply.h"

namespace llm {

class LlmProposer : public ard::Proposer {
 public:
  /// Throws MissingKeyError when the key's variable is unset. spent: the
  /// tag's spend so far. on_cap: proposes instead while a cap is reached;
  /// null pauses. log: one line per failed call and retry.
  LlmProposer(LlmConfig config, PathPolicy policy, CallSink* sink, Sleeper sleeper = sleep_seconds, Spend spent = {},
              std::unique_ptr<ard::Proposer> on_cap = nullptr, LogLine log = {});

  std::string name() const override;
  ard::ProposalResult propose(const ard::ProposalContext& context) override;
  /// Each call builds its own prompt and HTTP request; the client is safe to share.
  bool concurrent() const override { return true; }

 private:
  ard::ProposalResult capped(const CapReached& cap, const ard::ProposalContext& context,
                             std::vector<ard::ProposalAttempt> attempts);

  ChatClient client_;
  PathPolicy policy_;
  std::unique_ptr<ard::Proposer> on_cap_;
};

}  // namespace llm
