// The split pattern on tricky strings, against hand-checked pieces.
#include "harness/splitter.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

std::vector<std::string> split(const std::string& text) {
  static Splitter splitter;
  std::vector<std::string_view> pieces;
  splitter.split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

using V = std::vector<std::string>;

TEST(Splitter, UsesTheJit) { EXPECT_TRUE(Splitter().jit()); }

TEST(Splitter, WordsAndContractions) {
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("I'm you'll we've they're"), (V{"I", "'m", " you", "'ll", " we", "'ve", " they", "'re"}));
  EXPECT_EQ(split("DON'T HE'LL"), (V{"DON", "'T", " HE", "'LL"}));  // case-insensitive contractions
  EXPECT_EQ(split("(hello)"), (V{"(hello", ")"}));                 // one non-letter may lead a word
}

TEST(Splitter, DigitsComeInPairs) {
  EXPECT_EQ(split("12345"), (V{"12", "34", "5"}));
  EXPECT_EQ(split("abc123 4"), (V{"abc", "12", "3", " ", "4"}));
  EXPECT_EQ(split("\xD9\xA3\xD9\xA4\xD9\xA5"), (V{"\xD9\xA3\xD9\xA4", "\xD9\xA5"}));  // Arabic-Indic digits are \p{N}
}

TEST(Splitter, WhitespaceRules) {
  EXPECT_EQ(split("  hello"), (V{" ", " hello"}));       // \s+(?!\S) leaves one space for the word
  EXPECT_EQ(split("a\n\nb"), (V{"a", "\n\n", "b"}));
  EXPECT_EQ(split("x  \n y"), (V{"x", "  \n", " y"}));    // \s*[\r\n] ends at the last line break
  EXPECT_EQ(split("foo\tbar"), (V{"foo", "\tbar"}));
  EXPECT_EQ(split("end   "), (V{"end", "   "}));
  EXPECT_EQ(split("a\r\n\tb"), (V{"a", "\r\n", "\tb"}));
  EXPECT_EQ(split("    if (x) {"), (V{"   ", " if", " (", "x", ")", " {"}));
}

TEST(Splitter, PunctuationAndUnicode) {
  EXPECT_EQ(split("hello!!!\nnext"), (V{"hello", "!!!\n", "next"}));
  EXPECT_EQ(split("x += 1;"), (V{"x", " +=", " ", "1", ";"}));
  EXPECT_EQ(split("\xC3\xA9 caf\xC3\xA9"), (V{"\xC3\xA9", " caf\xC3\xA9"}));           // é café
  EXPECT_EQ(split("\xE4\xBD\xA0\xE5\xA5\xBD!"), (V{"\xE4\xBD\xA0\xE5\xA5\xBD", "!"}));  // 你好!
  EXPECT_EQ(split("\xF0\x9F\x98\x80x"), (V{"\xF0\x9F\x98\x80x"}));            // a symbol may lead a word
  EXPECT_EQ(split("x\xF0\x9F\x98\x80\xF0\x9F\x98\x80! y"), (V{"x", "\xF0\x9F\x98\x80\xF0\x9F\x98\x80!", " y"}));
  EXPECT_EQ(split(""), V{});
}

}  // namespace
}  // namespace harness
