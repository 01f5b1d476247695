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

/// Below this the limit is not lowered: the daemon stops instead.
constexpr long kMinLimit = 1000;

}  // namespace

LlmProposer::LlmProposer(LlmConfig config, PathPolicy policy, CallSink* sink, Sleeper sleeper, Spend spent,
                         std::unique_ptr<ard::Proposer> on_cap, LogLine log, std::shared_ptr<SpendCap> cap)
    : client_(std::move(config), sink, std::move(sleeper), 0, std::move(spent), log, {}, std::move(cap)),
      policy_(std::move(policy)),
      on_cap_(std::move(on_cap)),
      sink_(sink),
      log_(std::move(log)) {
  const LlmConfig& c = client_.config();
  provider_ = std::string(protocol_name(c.protocol)) + " " + c.base_url + " " + c.model;
  if (sink_)
    if (auto learnt = sink_->learnt_limit(provider_)) learnt_ = *learnt;
}

long LlmProposer::limit() const {
  long learnt = learnt_.load();
  long configured = client_.config().context_tokens;
  return learnt > 0 ? std::min(learnt, configured) : configured;
}

void LlmProposer::lower_limit(long tokens, const std::string& reason) {
  long now = learnt_.load();
  do {
    if (now != 0 && now <= tokens) return;  // as low already (another thread's refusal)
  } while (!learnt_.compare_exchange_weak(now, tokens));
  if (sink_) sink_->learn_limit(provider_, tokens, reason);
  if (log_) log_("llm: " + provider_ + " refused a request: its limit is now " + std::to_string(tokens) +
                 " tokens (remembered): " + reason);
}

void LlmProposer::log_cuts(long experiment_id, const std::string& note) {
  if (!log_) return;
  {
    std::lock_guard<std::mutex> lock(log_mutex_);
    if (note == last_cuts_) return;
    last_cuts_ = note;
  }
  if (!note.empty()) log_("#" + std::to_string(experiment_id) + " " + note);
}

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

  Prompt prompt = build_prompt(context, config, limit());
  Conversation conv = prompt.conversation;
  std::string note = cut_note(prompt, config);  // said at the top of the next stored prompt
  log_cuts(context.experiment_id, note);
  bool fresh = true;                 // the next call starts a conversation: store all of it
  int edit_rounds = 0, read_rounds = 0;
  std::string last_error;
  for (;;) {
    if (context.cancelled())
      return failed(ard::ProposalError::Kind::kUnavailable, "cancelled: the daemon is stopping", std::move(attempts));
    // Later rounds add to the conversation; past the limit, keep only the
    // first message and the last exchange.
    if (conv.messages.size() > 2 && estimate_tokens(render(conv)) > prompt.limit) {
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
      // The server's limit is below what it refused: ask within three quarters of it.
      long lowered = std::min(prompt.limit, estimate_tokens(render(conv))) * 3 / 4;
      if (lowered < kMinLimit)
        return failed(ard::ProposalError::Kind::kFatal,
                      "the smallest prompt is still too long for the server (lower llm.context_tokens): " +
                          answer.message,
                      std::move(attempts));
      lower_limit(lowered, first_line(answer.message));
      prompt = build_prompt(context, config, limit());
      conv = prompt.conversation;
      note = cut_note(prompt, config) + " after: " + first_line(answer.message);
      log_cuts(context.experiment_id, cut_note(prompt, config));
      fresh = true;
      continue;
    }
    if (is_unavailable(answer.error) || is_fatal(answer.error)) {
      a.error = answer.message;
      attempts.push_back(std::move(a));
      auto kind = is_fatal(answer.error) ? ard::ProposalError::Kind::kFatal : ard::ProposalError::Kind::kUnavailable;
      ard::ProposalResult r = failed(kind, answer.message, std::move(attempts));
      r.error->retry_at = answer.retry_at;  // a Retry-After: no ask before it
      return r;
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
        reply = read_reply(parsed.reads, context.files, read_room(prompt, config, answer.text));
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
