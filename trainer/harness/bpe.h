// Byte-level BPE: training on counted chunks, and encoding of one chunk with
// the same rule Python's tiktoken applies to a rank file (so both give the
// same ids).
//
// Training: every chunk starts as its bytes (ids 0..255); repeatedly merge the
// most frequent adjacent pair (ties: the smaller pair of ids, compared as
// (left, right)) into a new id. Counts are updated incrementally: only the
// chunks that contain the merged pair are revisited. A merge whose bytes equal
// an existing token is skipped (the pair is never merged) so that every token
// has distinct bytes, as a tiktoken rank file requires.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace harness {

struct BpeTraining {
  std::vector<std::string> tokens;  // bytes of each token id (= its rank); 0..255 are the bytes
  size_t skipped_duplicates = 0;    // pairs never merged because their bytes already were a token
};

/// chunks: (chunk bytes, occurrence count). Stops at `num_tokens` tokens or
/// when no pair is left (then fewer tokens are returned).
BpeTraining train_bpe(const std::vector<std::pair<std::string, uint64_t>>& chunks, size_t num_tokens);

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// Encodes chunks with a rank table, as tiktoken does: a chunk that is itself
/// a token is that token; otherwise starting from its bytes, repeatedly merge
/// the adjacent pair whose joined bytes have the lowest rank (leftmost on ties)
/// until no joined pair is a token.
class BpeEncoder {
 public:
  explicit BpeEncoder(std::vector<std::string> tokens);  // throws on duplicates or missing bytes
  void encode_chunk(std::string_view chunk, std::vector<uint16_t>& out) const;  // appends
  const std::vector<std::string>& tokens() const { return tokens_; }
  /// The id of the token with exactly these bytes; UINT32_MAX if none.
  uint32_t rank(std::string_view bytes) const;

 private:
  std::vector<std::string> tokens_;
  // Open addressing over token ids (UINT32_MAX = empty), 4x oversized: a
  // lookup is one probe into a table that stays in cache.
  std::vector<uint32_t> slots_;
  size_t mask_ = 0;
};

}  // namespace harness
