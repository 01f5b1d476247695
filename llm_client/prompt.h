// The prompt of one proposal, assembled within llm.context_tokens in a stable
// order so that providers can cache its beginning (docs/llm.md, "The prompt"):
//
//   system   the research task and the answer format (edit_format.h)
//   user     1. the research surface whole (editable files at the shallowest
//               depth: trainer/train.cu)
//            2. headers (.h, .cuh, .hpp) whole, smallest first, while they fit
//               the stable budget; shown in path order
//            3. a map of every other editable file: path, size, the first line
//               of its opening comment (the model reads them with READ:)
//            4. program.md                       <- cache breakpoint here
//            5. the history table, within history_tokens
//            6. the last failure, cut in the middle to fit
//
// Parts 1-4 change only when the best commit or program.md does. A shrink
// level (after a 413 or a context-length error) cuts the history first, then
// moves header bodies to the map, then the research surface too.
#pragma once

#include <string>
#include <vector>

#include "proposers/proposer.h"
#include "llm_client/chat_protocol.h"
#include "llm_client/edit_format.h"
#include "llm_client/llm_config.h"

namespace llm {

/// A rough token count for budgets (about four characters a token).
long estimate_tokens(const std::string& text);

/// The history table: the best experiment first, then the most recent ones
/// that fit in budget_tokens, oldest of them first.
std::string history_table(const std::vector<ard::HistoryEntry>& history, long budget_tokens);

/// The highest shrink level: history and failure cut short, only the map.
constexpr int kMaxShrink = 3;

struct Prompt {
  Conversation conversation;         ///< system and the first user message (its cache_prefix set)
  std::vector<std::string> whole;    ///< files given in full
  std::vector<std::string> mapped;   ///< files given as a map line
  std::string shrunk;                ///< what shrink level > 0 left out, one line; empty at level 0
};

/// The conversation's system text and first user message, within
/// config.context_tokens (scaled down by the shrink level).
Prompt build_prompt(const ard::ProposalContext& context, const LlmConfig& config, int shrink = 0);

/// The estimated token limit at a shrink level.
long context_limit(const LlmConfig& config, int shrink);

/// The follow-up message after an answer whose edit failed.
std::string retry_message(const std::string& error);

/// The reply to a READ round: the files (or line ranges) asked for, within
/// max_chars; unknown paths and what did not fit are said so.
std::string read_reply(const std::vector<ReadRequest>& reads, const std::vector<ard::EditableFile>& files,
                       size_t max_chars);

}  // namespace llm
