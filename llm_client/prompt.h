// The prompt of one proposal, assembled within the request's token limit in a
// stable order so that providers can cache its beginning (docs/llm.md, "The
// prompt"):
//
//   system   the research task and the answer format (edit_format.h)
//   user     1. the research surface whole (editable files at the shallowest
//               depth: trainer/train.cu)
//            2. headers (.h, .cuh, .hpp) whole, smallest first, while the
//               request stays within its goal, first_request_tokens (the
//               history and failure give way to the goal first, down to
//               their minimums); shown in path order
//            3. a map of every other editable file: path, size, the first line
//               of its opening comment (the model reads them with READ:)
//            4. program.md                       <- cache breakpoint here
//            5. the history table, within history_tokens
//            6. what was tried before, by region (tried_section), within
//               half of history_tokens; outside the goal (the goal
//               neither cuts it nor makes the history give way to it), and
//               the first thing cut when the limit is short
//            7. the last failure, cut in the middle to fit
//
// The first prompt leaves the READ reserve (llm.read_bytes) free. When the
// whole does not fit the limit, it degrades in a fixed order, the research
// surface last: the tried-before section, older history rows, the failure's
// log, the map's descriptions, program.md's tail (with a note), the READ
// reserve, and only then the surface moves to the map. Parts 1-4 depend only
// on the files, program.md and the limit, never on the history, what was
// tried or the failure.
#pragma once

#include <string>
#include <vector>

#include "llm_client/chat_protocol.h"
#include "llm_client/edit_format.h"
#include "llm_client/llm_config.h"
#include "proposers/proposer.h"

namespace llm {

/// A rough token count for budgets (about four characters a token).
long estimate_tokens(const std::string& text);

/// The history table: the best experiment first (the lowest kept value of
/// metric, or the highest under MetricGoal::kMax), then the most recent ones
/// that fit in budget_tokens, oldest of them first.
std::string history_table(const std::vector<ard::HistoryEntry>& history, long budget_tokens,
                          const std::string& metric = "val_bpb", ard::MetricGoal goal = ard::MetricGoal::kMin);

/// What was tried before, by region of the editable files: the most tried
/// regions first, each with its counts by outcome and its records closest to
/// a keep (id, outcome, Δσ, lines, description), as many as fit in
/// budget_tokens, then one line of totals by outcome; "" when there is no
/// region or not even one region's line fits. Its heading explains Δσ in the
/// words of metric and goal (positive is better under either goal).
std::string tried_section(const ard::TriedMemory& tried, long budget_tokens, const std::string& metric = "val_bpb",
                          ard::MetricGoal goal = ard::MetricGoal::kMin);

/// The experiments proposed and not measured yet (other workers may be
/// training them), oldest first, as many as fit in budget_tokens; "" when none.
/// The model is asked not to propose them again.
std::string in_flight_list(const std::vector<ard::HistoryEntry>& in_flight, long budget_tokens);

struct Prompt {
  Conversation conversation;         ///< system and the first user message (its cache_prefix set)
  std::vector<std::string> whole;    ///< files given in full
  std::vector<std::string> mapped;   ///< files given as a map line
  long limit = 0;                    ///< the token limit it was built within
  std::vector<std::string> cuts;     ///< what was cut to fit, in the order cut; empty when nothing
  long read_room = 0;                ///< tokens left for a READ round's reply (at most the reserve)
};

/// The conversation's system text and first user message, within limit
/// (estimated tokens; 0 or more than config.context_tokens: context_tokens).
Prompt build_prompt(const ard::ProposalContext& context, const LlmConfig& config, long limit = 0);

/// One line saying what a prompt left out and why, e.g. "prompt within 24000
/// tokens (llm.context_tokens 32000): cut older history rows (200 tokens)";
/// empty for a prompt at the configured limit with nothing cut.
std::string cut_note(const Prompt& prompt, const LlmConfig& config);

/// The file text a READ round may return after `answer`: what the prompt's
/// limit leaves once its first message and the answer are counted (earlier
/// rounds are left out past the limit), at most config.read_bytes.
size_t read_room(const Prompt& prompt, const LlmConfig& config, const std::string& answer);

/// The follow-up message after an answer whose edit failed.
std::string retry_message(const std::string& error);

/// The reply to a READ round: the files (or line ranges) asked for, while
/// their text stays within max_chars; unknown paths and what did not fit are
/// said so.
std::string read_reply(const std::vector<ReadRequest>& reads, const std::vector<ard::EditableFile>& files,
                       size_t max_chars);

}  // namespace llm
