// The LLM proposer: asks the configured model for an experiment and turns the
// answer into file writes. When the edit cannot be used (no description, a
// block that matches nowhere, a path that is not editable, a cut-off answer),
// it asks again in the same conversation with the exact error, up to
// max_edit_attempts rounds. An answer of READ lines gets the files asked for,
// up to max_read_rounds rounds. Every round is returned in the attempts, with
// what was sent even when the call failed.
//
// A 413 or a context-length error lowers the request's limit to three
// quarters of what was refused, remembers it for the provider through the
// CallSink (so the next experiment, and the next start, begin there), rebuilds
// the prompt within it (prompt.h) and asks again, the attempt saying what was
// left out. A prompt built below llm.context_tokens or with anything cut is
// logged once per change. A provider that stays down, or
// a daemon that is stopping (the context's cancel flag), is kUnavailable; a
// refused key, unknown model or rejected request is kFatal. A reached cap
// (spend_cap.h) is kPaused, or, with a fallback proposer (llm.on_cap =
// "offline"), the fallback's proposal.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "llm_client/chat_client.h"
#include "llm_client/edit_apply.h"
#include "proposers/proposer.h"

namespace llm {

class LlmProposer : public ard::Proposer {
 public:
  /// Throws MissingKeyError when the key's variable is unset. spent: the
  /// tag's spend so far. on_cap: proposes instead while a cap is reached;
  /// null pauses. log: one line per failed call and retry.
  /// cap: the spending caps shared with the other profiles of a swarm; null: its own.
  LlmProposer(LlmConfig config, PathPolicy policy, CallSink* sink, Sleeper sleeper = sleep_seconds, Spend spent = {},
              std::unique_ptr<ard::Proposer> on_cap = nullptr, LogLine log = {},
              std::shared_ptr<SpendCap> cap = nullptr);

  std::string name() const override;
  ard::ProposalResult propose(const ard::ProposalContext& context) override;
  /// Each call builds its own prompt and HTTP request; the client is safe to share.
  bool concurrent() const override { return true; }
  /// The model reads the compiler's errors and the failed files, and repairs them.
  bool fixes_builds() const override { return true; }

 private:
  ard::ProposalResult capped(const CapReached& cap, const ard::ProposalContext& context,
                             std::vector<ard::ProposalAttempt> attempts);
  /// The request limit now: context_tokens, or less once a server refused more.
  long limit() const;
  /// Lowers the limit to tokens (never raises it) and remembers it.
  void lower_limit(long tokens, const std::string& reason);
  /// Logs what a prompt cut, once per change of it.
  void log_cuts(long experiment_id, const std::string& note);

  ChatClient client_;
  PathPolicy policy_;
  std::unique_ptr<ard::Proposer> on_cap_;
  CallSink* sink_;
  LogLine log_;
  std::string provider_;            ///< protocol, base_url and model: the key of the learnt limit
  std::atomic<long> learnt_{0};     ///< the limit a server taught; 0: none
  std::mutex log_mutex_;
  std::string last_cuts_;           ///< the cut note logged last (guarded by log_mutex_)
};

}  // namespace llm
