// UTF-8 validation and code point prefixes.
#include "harness/utf8.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

constexpr size_t npos = std::string_view::npos;

TEST(Utf8, AcceptsValidText) {
  EXPECT_EQ(find_invalid_utf8(""), npos);
  EXPECT_EQ(find_invalid_utf8("plain ASCII text, longer than eight bytes"), npos);
  EXPECT_EQ(find_invalid_utf8("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80"), npos);
  EXPECT_EQ(find_invalid_utf8("\xF4\x8F\xBF\xBF"), npos);  // U+10FFFF
}

TEST(Utf8, FindsTheFirstBadSequence) {
  EXPECT_EQ(find_invalid_utf8("ab\x80"), 2u);                  // stray continuation
  EXPECT_EQ(find_invalid_utf8("abcdefghij\xC0\x80"), 10u);     // overlong NUL
  EXPECT_EQ(find_invalid_utf8("x\xE0\x80\xAF"), 1u);           // overlong 3-byte
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);            // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);        // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("ok\xE4\xB8"), 2u);              // truncated
  EXPECT_EQ(find_invalid_utf8("\xC3\x28"), 0u);                // bad continuation
  EXPECT_EQ(find_invalid_utf8("\xFF"), 0u);
}

TEST(Utf8, PrefixCountsCodePoints) {
  size_t chars = 0;
  const std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80z";  // a é 中 😀 z
  EXPECT_EQ(utf8_prefix(s, 3, chars), 6u);
  EXPECT_EQ(chars, 3u);
  EXPECT_EQ(utf8_prefix(s, 100, chars), s.size());
  EXPECT_EQ(chars, 5u);
  EXPECT_EQ(utf8_prefix(s, 0, chars), 0u);
}

}  // namespace
}  // namespace harness
