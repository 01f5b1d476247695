// The fixed constants of every experiment. Part of the harness: edits to
// trainer/harness/ are refused by the daemon, so these cannot be changed by a
// proposal. The time budget, a fixed step count and the evaluation token count
// can be overridden on the trainer's command line (run_options.h) for tests and
// smoke runs; the summary prints the values used.
#pragma once

#include <cstdint>

namespace harness {

constexpr int MAX_SEQ_LEN = 2048;          // tokens of context per row
constexpr double TIME_BUDGET = 300.0;      // seconds of counted training
constexpr long EVAL_TOKENS = 2097152;      // 8 batches of 128 x 2048
constexpr int VOCAB_SIZE = 8192;           // 8188 learned + 4 special
constexpr int NUM_SPECIAL_TOKENS = 4;      // <|reserved_0|> .. <|reserved_3|>
constexpr int NUM_LEARNED_TOKENS = VOCAB_SIZE - NUM_SPECIAL_TOKENS;  // 256 bytes + 7932 merges
constexpr uint16_t BOS_ID = NUM_LEARNED_TOKENS;  // <|reserved_0|>, prefixes every document

}  // namespace harness
