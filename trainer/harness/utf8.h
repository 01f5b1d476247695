// UTF-8 checks for prepare: validation (PCRE2 is run without its own check)
// and code point counting for the tokenizer's character caps.
#pragma once

#include <cstddef>
#include <string_view>

namespace harness {

/// Byte offset of the first invalid sequence (overlong forms, surrogates and
/// code points above U+10FFFF are invalid), or npos when `s` is valid UTF-8.
size_t find_invalid_utf8(std::string_view s);

/// Byte length of the first `max_chars` code points of valid UTF-8 `s`
/// (all of `s` if it has fewer); `chars` receives how many were counted.
size_t utf8_prefix(std::string_view s, size_t max_chars, size_t& chars);

}  // namespace harness
