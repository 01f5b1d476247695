// The prompt of one proposal: program.md as the human wrote it, the full text
// of every editable file, a compact table of past experiments that fits a
// token budget, the exact last failure, and our edit-format instructions.
#pragma once

#include <string>

#include "proposers/proposer.h"
#include "llm_client/chat_protocol.h"

namespace llm {

/// A rough token count for budgets (about four characters a token).
long estimate_tokens(const std::string& text);

/// The history table: the best experiment first, then the most recent ones
/// that fit in budget_tokens, oldest of them first.
std::string history_table(const std::vector<ard::HistoryEntry>& history, long budget_tokens);

/// The conversation's system text and first user message.
Conversation build_prompt(const ard::ProposalContext& context, long history_tokens);

/// The follow-up message after an answer whose edit failed.
std::string retry_message(const std::string& error);

/// A conversation as one text, for the proposal_attempts table and `show`.
std::string render(const Conversation& conversation);

}  // namespace llm
