// See llm_proposer.h.
#include "llm_client/llm_proposer.h"

#include "llm_client/prompt.h"

namespace llm {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

ard::ProposalResult failed(ard::ProposalError::Kind kind, std::string message,
                           std::vector<ard::ProposalAttempt> attempts) {
  ard::ProposalResult r;
  r.error = ard::ProposalError{kind, first_line(message), std::move(attempts)};
  return r;
}

}  // namespace

LlmProposer::LlmProposer(LlmConfig config, PathPolicy policy, CallSink* sink, Sleeper sleeper)
    : client_(std::move(config), sink, std::move(sleeper)), policy_(std::move(policy)) {}

std::string LlmProposer::name() const {
  return std::string("llm:") + protocol_name(client_.config().protocol) + "/" + client_.config().model;
}

ard::ProposalResult LlmProposer::propose(const ard::ProposalContext& context) {
  Conversation conv = build_prompt(context, client_.config().history_tokens);
  std::vector<ard::ProposalAttempt> attempts;
  const int rounds = client_.config().max_edit_attempts;
  std::string last_error;
  for (int round = 1; round <= rounds; ++round) {
    ard::ProposalAttempt a;
    // The first round stores the whole prompt; a later one only what it added.
    a.prompt = round == 1 ? render(conv) : "[user]\n" + conv.messages.back().content;
    ChatResult answer = client_.ask(conv, context.experiment_id, round, context.cancel);
    a.response = answer.text;
    if (answer.error == CallError::kCancelled) {
      a.error = answer.message;
      attempts.push_back(std::move(a));
      return failed(ard::ProposalError::Kind::kUnavailable, answer.message, std::move(attempts));
    }
    if (is_retryable(answer.error) || is_fatal(answer.error)) {
      a.error = answer.message;
      // No answer came back: a first round's prompt would only be stored again
      // and again while a provider is down (the daemon asks once a minute).
      if (round == 1) a.prompt.clear();
      attempts.push_back(std::move(a));
      auto kind = is_fatal(answer.error) ? ard::ProposalError::Kind::kFatal : ard::ProposalError::Kind::kUnavailable;
      return failed(kind, answer.message, std::move(attempts));
    }

    std::string error;
    ard::Proposal proposal;
    if (!answer.ok()) {
      error = answer.message;  // empty, truncated or not the protocol's JSON
      if (answer.error == CallError::kTruncated) error += "; give a smaller edit (SEARCH/REPLACE blocks, not whole files)";
    } else {
      ParsedAnswer parsed = parse_answer(answer.text);
      if (!parsed.error.empty()) {
        error = parsed.error;
      } else {
        ApplyResult applied = apply_edits(parsed.edits, context.files, policy_);
        if (!applied.ok()) error = applied.error;
        proposal.description = parsed.description;
        proposal.writes = std::move(applied.writes);
      }
    }
    a.error = error;
    attempts.push_back(std::move(a));
    if (error.empty()) {
      proposal.attempts = std::move(attempts);
      ard::ProposalResult r;
      r.proposal = std::move(proposal);
      return r;
    }
    last_error = error;
    conv.messages.push_back({"assistant", answer.text.empty() ? "(no answer)" : answer.text});
    conv.messages.push_back({"user", retry_message(error)});
  }
  return failed(ard::ProposalError::Kind::kBadEdit,
                std::to_string(rounds) + " answers gave no usable edit; the last: " + first_line(last_error),
                std::move(attempts));
}

}  // namespace llm
