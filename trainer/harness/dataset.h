// A prepared dataset on disk, opened read-only: the tokenized training and
// validation shards (uint16 tokens, every document prefixed by BOS), their
// document-boundary indexes, and the token_bytes table used by val_bpb.
//
// Layout of a dataset directory (written by prepare, see prepare.h):
//   tokenizer.tiktoken   base64(token bytes) rank, one line a token (learned tokens only)
//   token_bytes.bin      int32[VOCAB_SIZE]: UTF-8 byte length of each token, 0 for specials
//   train.bin, val.bin   uint16 tokens
//   train.idx, val.idx   uint64[num_docs + 1]: offset of each document's BOS in the .bin, then the total
//   meta.json            inputs, settings, counts, format version
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace harness {

/// A read-only, memory-mapped token shard with its document index.
class TokenShard {
 public:
  /// Maps `<dir>/<name>.bin` and `<dir>/<name>.idx`. Throws std::runtime_error
  /// naming the file when either is missing, truncated or inconsistent.
  TokenShard(const std::string& dir, const std::string& name);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  const uint16_t* tokens() const { return tokens_; }  // (num_tokens,)
  size_t num_tokens() const { return num_tokens_; }
  size_t num_docs() const { return offsets_.size() - 1; }
  /// Document d occupies tokens [doc_begin(d), doc_end(d)), starting with BOS.
  size_t doc_begin(size_t d) const { return offsets_[d]; }
  size_t doc_end(size_t d) const { return offsets_[d + 1]; }

 private:
  const uint16_t* tokens_ = nullptr;
  size_t num_tokens_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  std::vector<uint64_t> offsets_;
};

/// Reads token_bytes.bin: one int32 per token id, VOCAB_SIZE entries.
std::vector<int32_t> load_token_bytes(const std::string& dir);

}  // namespace harness
