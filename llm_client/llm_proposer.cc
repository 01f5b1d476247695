// See llm_proposer.h.
#include "llm_client/llm_proposer.h"

#include <algorithm>

#include "llm_client/edit_format.h"
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

/// The prompt at the first shrink level whose estimate fits its limit.
Prompt fitting_prompt(const ard::ProposalContext& context, const LlmConfig& config, int& shrink) {
  for (;; ++shrink) {
    Prompt p = build_prompt(context, config, shrink);
    if (shrink == kMaxShrink || estimate_tokens(render(p.conversation)) <= context_limit(config, shrink)) return p;
  }
}

}  // namespace

LlmProposer::LlmProposer(LlmConfig config, PathPolicy policy, CallSink* sink, Sleeper sleeper, Spend spent,
                         std::unique_ptr<ard::Proposer> on_cap, LogLine log)
    : client_(std::move(config), sink, std::move(sleeper), 0, std::move(spent), std::move(log)),
      policy_(std::move(policy)),
      on_cap_(std::move(on_cap)) {}

std::string LlmProposer::name() const {
  return std::string("llm:") + protocol_name(client_.config().protocol) + "/" + client_.config().model;
}

ard::ProposalResult LlmProposer::capped(const CapReached& cap, const ard::ProposalContext& context,
                                        std::vector<ard::ProposalAttempt> attempts) {
  if (!on_cap_) {
    ard::ProposalResult r = failed(ard::ProposalError::Kind::kPaused, cap.reason, std::move(attempts));
    r.error->retry_at = cap.retry_at;
    return r;
  }
  // llm.on_cap = "offline": the fallback proposes, the record says why.
  ard::ProposalResult r = on_cap_->propose(context);
  attempts.push_back({"", "", cap.reason + "; proposed by " + on_cap_->name() + " instead"});
  auto& list = r.ok() ? r.proposal->attempts : r.error->attempts;
  list.insert(list.begin(), attempts.begin(), attempts.end());
  return r;
}

ard::ProposalResult LlmProposer::propose(const ard::ProposalContext& context) {
  const LlmConfig& config = client_.config();
  std::vector<ard::ProposalAttempt> attempts;
  if (auto cap = client_.cap_reached()) return capped(*cap, context, std::move(attempts));

  int shrink = 0;
  Prompt prompt = fitting_prompt(context, config, shrink);
  Conversation conv = prompt.conversation;
  std::string note = prompt.shrunk;  // said at the top of the next stored prompt
  bool fresh = true;                 // the next call starts a conversation: store all of it
  int edit_rounds = 0, read_rounds = 0;
  std::string last_error;
  for (;;) {
    if (context.cancelled())
      return failed(ard::ProposalError::Kind::kUnavailable, "cancelled: the daemon is stopping", std::move(attempts));
    // Later rounds add to the conversation; past the limit, keep only the
    // first message and the last exchange.
    if (conv.messages.size() > 2 && estimate_tokens(render(conv)) > context_limit(config, shrink)) {
      Conversation short_conv = prompt.conversation;
      short_conv.messages.insert(short_conv.messages.end(), conv.messages.end() - 2, conv.messages.end());
      conv = std::move(short_conv);
      note += std::string(note.empty() ? "" : "; ") + "earlier rounds left out (context_tokens)";
      fresh = true;
    }
    ard::ProposalAttempt a;
    a.prompt = fresh ? render(conv) : "[user]\n" + conv.messages.back().content;
    if (!note.empty()) a.prompt = "[" + note + "]\n" + a.prompt;
    note.clear();
    fresh = false;
    ChatResult answer = client_.ask(conv, context.experiment_id, static_cast<int>(attempts.size()) + 1, context.cancel);
    a.response = answer.text;
    if (answer.capped) {
      a.error = answer.capped->reason;
      attempts.push_back(std::move(a));
      return capped(*answer.capped, context, std::move(attempts));
    }
    if (answer.error == CallError::kCancelled) {
      a.error = answer.message;
      attempts.push_back(std::move(a));
      return failed(ard::ProposalError::Kind::kUnavailable, answer.message, std::move(attempts));
    }
    if (answer.error == CallError::kContextLength) {
      a.error = answer.message;
      attempts.push_back(std::move(a));
      if (shrink == kMaxShrink)
        return failed(ard::ProposalError::Kind::kFatal,
                      "the smallest prompt is still too long for the server (lower llm.context_tokens): " +
                          answer.message,
                      std::move(attempts));
      ++shrink;
      prompt = fitting_prompt(context, config, shrink);
      conv = prompt.conversation;
      note = prompt.shrunk + " after: " + first_line(answer.message);
      fresh = true;
      continue;
    }
    if (is_retryable(answer.error) || is_fatal(answer.error)) {
      a.error = answer.message;
      attempts.push_back(std::move(a));
      auto kind = is_fatal(answer.error) ? ard::ProposalError::Kind::kFatal : ard::ProposalError::Kind::kUnavailable;
      return failed(kind, answer.message, std::move(attempts));
    }

    std::string error, reply;
    ard::Proposal proposal;
    if (!answer.ok()) {
      error = answer.message;  // empty, truncated or not the protocol's JSON
      if (answer.error == CallError::kTruncated) error += "; give a smaller edit (SEARCH/REPLACE blocks, not whole files)";
    } else {
      ParsedAnswer parsed = parse_answer(answer.text);
      if (!parsed.reads.empty() && read_rounds < config.max_read_rounds) {
        ++read_rounds;
        long room = context_limit(config, shrink) - estimate_tokens(render(conv)) - estimate_tokens(answer.text) - 100;
        size_t max_chars = static_cast<size_t>(std::clamp<long>(room * 4, 0, config.read_max_bytes));
        reply = read_reply(parsed.reads, context.files, max_chars);
      } else if (!parsed.reads.empty()) {
        error = "no READ rounds left (" + std::to_string(config.max_read_rounds) + " used): answer with an edit";
      } else if (!parsed.error.empty()) {
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
    if (error.empty() && reply.empty()) {
      proposal.attempts = std::move(attempts);
      ard::ProposalResult r;
      r.proposal = std::move(proposal);
      return r;
    }
    if (!error.empty()) {
      last_error = error;
      if (++edit_rounds >= config.max_edit_attempts) break;
      reply = retry_message(error);
    }
    conv.messages.push_back({"assistant", answer.text.empty() ? "(no answer)" : answer.text});
    conv.messages.push_back({"user", reply});
  }
  return failed(ard::ProposalError::Kind::kBadEdit,
                std::to_string(edit_rounds) + " answers gave no usable edit; the last: " + first_line(last_error),
                std::move(attempts));
}

}  // namespace llm
