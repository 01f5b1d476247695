// Pre-tokenization: cuts text into the chunks BPE works inside, with the GPT-4
// style split pattern (digits in runs of at most two) through PCRE2 with UTF,
// UCP and the JIT. One Splitter per thread (it owns its match state).
#pragma once

#include <string_view>
#include <vector>

namespace harness {

/// The split pattern, also written to meta.json and used by tiktoken_check.py.
inline constexpr std::string_view SPLIT_PATTERN =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";

class Splitter {
 public:
  Splitter();  // throws std::runtime_error if PCRE2 rejects the pattern
  ~Splitter();
  Splitter(const Splitter&) = delete;
  Splitter& operator=(const Splitter&) = delete;

  /// Replaces `pieces` with the successive matches in `text` (valid UTF-8, not
  /// checked again); text between matches, if any, is skipped as tiktoken does.
  void split(std::string_view text, std::vector<std::string_view>& pieces);

  bool jit() const { return jit_; }

 private:
  struct Impl;
  Impl* impl_;
  bool jit_ = false;
};

}  // namespace harness
