// Duplicates are caught before any GPU time: a proposed change is compared
// with every earlier candidate's of the tag, finished or in flight, and one
// that repeats an earlier change is recorded as `duplicate`, never built.
//
// What is compared is what a diff changes, not how it is written:
//   1. the added and removed lines of each file (`+`/`-`, not the headers or
//      the context), with `//` and `/* */` comments and all whitespace
//      dropped, split into tokens (identifiers, numbers, single symbols), each
//      marked with its file and its sign;
//   2. similarity = |A ∩ B| / |A ∪ B| over the two changes' 3-token shingles
//      (Jaccard), 1 for identical token streams.
// Two changes of one constant to different values share the removed line but
// not the added one: lr 0.01 -> 0.02 against lr 0.01 -> 0.03 is 3/5 = 0.6.
// The same change with other comments, spacing or line breaks is 1.
//
// A change is a duplicate of the most similar earlier one when:
//   - it is identical to it (similarity 1), whatever the threshold; or
//   - its similarity reaches `threshold` (dedup.threshold, default 0.9); or
//   - it is exactly the revert of a kept change (its signs flipped).
// Not compared: conflicts, rejected edits and proposer errors (never measured:
// trying again on a newer best is new work), and the chain of build failures
// a fix repairs (a fix carries the failed change in its own diff).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ard {

/// A diff's change as tokens: "<file>\t<sign><token>", in order.
std::vector<std::string> change_tokens(const std::string& diff);

/// Jaccard similarity of two token streams' 3-token shingles (a stream
/// shorter than 3 is one shingle); 1 when both are empty.
double change_similarity(const std::vector<std::string>& a, const std::vector<std::string>& b);

/// An earlier candidate of the tag, as the store has it.
struct EarlierChange {
  int64_t id = 0;
  std::string diff;
  std::string state;  ///< its experiment's state (kept, discarded, running, ...)
  std::string description;
};

/// What find_duplicate found.
struct DuplicateOf {
  int64_t id = 0;
  double similarity = 0;
  bool revert = false;  ///< it reverts the kept change id
  std::string state;
  /// One line for the store and the proposer, e.g. "repeats #12 (discarded:
  /// lower lr), similarity 0.96 >= 0.90".
  std::string reason;
};

/// The earlier change that `diff` repeats, or nothing. skip: ids not to
/// compare with (the fix chain of a fix). threshold in (0, 1].
std::optional<DuplicateOf> find_duplicate(const std::string& diff, const std::vector<EarlierChange>& earlier,
                                          double threshold, const std::vector<int64_t>& skip = {});

}  // namespace ard
