// The tokenizer of a dataset: split pattern + BPE ranks + the special tokens,
// and its files: tokenizer.tiktoken (base64(token bytes) rank, one line a
// learned token; specials are not in it) and token_bytes.bin.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "harness/bpe.h"
#include "harness/flat_string_map.h"
#include "harness/splitter.h"

namespace harness {

/// "<|reserved_0|>" .. "<|reserved_3|>"; id = NUM_LEARNED_TOKENS + k.
std::string special_token_name(int k);

/// Encodes text to ids; one per thread (owns a Splitter and a chunk cache),
/// sharing one BpeEncoder.
class Tokenizer {
 public:
  explicit Tokenizer(std::shared_ptr<const BpeEncoder> encoder);
  /// Appends the ids of `text` (valid UTF-8), no BOS.
  void encode(std::string_view text, std::vector<uint16_t>& out);
  /// Bytes of the ids; specials decode to their names.
  std::string decode(const std::vector<uint16_t>& ids) const;

 private:
  std::shared_ptr<const BpeEncoder> encoder_;
  Splitter splitter_;
  std::vector<std::string_view> pieces_;
  struct Span {
    uint32_t begin = 0, count = 0;  // ids_ [begin, begin + count); count 0: not yet encoded
  };
  FlatStringMap<Span> cache_;     // chunk -> its ids in cached_ids_
  std::vector<uint16_t> cached_ids_;
};

std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);  // throws std::invalid_argument

/// tokenizer.tiktoken contents for tokens in rank order.
std::string tiktoken_file(const std::vector<std::string>& tokens);
/// Parses a tiktoken file; ranks must run 0, 1, 2, ... Throws InputError.
std::vector<std::string> read_tiktoken_file(const std::string& path);

/// token_bytes table: byte length of each learned token, 0 for the specials.
std::vector<int32_t> token_byte_lengths(const std::vector<std::string>& tokens, int vocab_size);

}  // namespace harness
