// Tokenizer round trips on ASCII, multibyte UTF-8, digits and whitespace, and
// the tiktoken file format.
#include "harness/tokenizer.h"

#include <gtest/gtest.h>

#include <map>

#include "harness/constants.h"
#include "harness/input_error.h"
#include "harness/test_util.h"

namespace harness {
namespace {

const char* kSample =
    "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.\n"
    "int main(int argc, char** argv) {\n    return 0;\n}\n"
    "Caf\xC3\xA9 cr\xC3\xA8me br\xC3\xBBl\xC3\xA9" "e, \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C, 12345 + 678 = 13023\n";

std::shared_ptr<const BpeEncoder> small_encoder() {
  Splitter s;
  std::vector<std::string_view> pieces;
  std::map<std::string, uint64_t> counts;
  std::string text;
  for (int i = 0; i < 5; ++i) text += kSample;
  s.split(text, pieces);
  for (auto p : pieces) ++counts[std::string(p)];
  std::vector<std::pair<std::string, uint64_t>> chunks(counts.begin(), counts.end());
  return std::make_shared<const BpeEncoder>(train_bpe(chunks, 256 + 150).tokens);
}

TEST(Tokenizer, RoundTripsEdgeCases) {
  Tokenizer tok(small_encoder());
  const std::vector<std::string> cases = {
      "The quick brown fox",                       // ASCII seen in training
      "Zebra xylophone QUIZ",                      // ASCII unseen: falls back to bytes
      "Caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80 \xD0\x9F\xD1\x80\xD0\xB8",  // 2-, 3-, 4-byte sequences
      "0 12 345 6789 000000001",                   // digits in pairs
      "  leading, trailing   ",                    // spaces at both ends
      "\n\n\t\t\r\n \n",                           // only whitespace
      "tab\there\r\nCRLF\n\n\nthree newlines",
      "a", " ", "",
  };
  for (const std::string& text : cases) {
    std::vector<uint16_t> ids;
    tok.encode(text, ids);
    EXPECT_EQ(tok.decode(ids), text) << text;
    for (uint16_t id : ids) EXPECT_LT(id, 256 + 150);
  }
}

TEST(Tokenizer, LearnedMergesShortenSeenText) {
  Tokenizer tok(small_encoder());
  std::vector<uint16_t> ids;
  tok.encode("The quick brown fox", ids);
  EXPECT_LT(ids.size(), 8u);  // 19 bytes; four words seen five times each
  std::vector<uint16_t> again;
  tok.encode("The quick brown fox", again);  // cached chunks give the same ids
  EXPECT_EQ(ids, again);
}

TEST(Tokenizer, DecodesSpecials) {
  Tokenizer tok(small_encoder());
  EXPECT_EQ(tok.decode({BOS_ID, 'h', 'i'}), "<|reserved_0|>hi");
  EXPECT_EQ(tok.decode({VOCAB_SIZE - 1}), "<|reserved_3|>");
  EXPECT_THROW(tok.decode({1000}), std::out_of_range);  // not learned by the small tokenizer
}

TEST(Base64, KnownVectorsAndRoundTrip) {
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode(std::string_view("\xFF\x00\x80", 3)), "/wCA");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(base64_decode(base64_encode(all)), all);
  EXPECT_THROW(base64_decode("Zg="), std::invalid_argument);
  EXPECT_THROW(base64_decode("Z=g="), std::invalid_argument);
}

TEST(TiktokenFile, WritesRankLinesAndReadsThemBack) {
  std::vector<std::string> tokens = small_encoder()->tokens();
  const std::string file = tiktoken_file(tokens);
  EXPECT_EQ(file.substr(0, 12), "AA== 0\nAQ== ");
  EXPECT_NE(file.find("\nIA== 32\n"), std::string::npos);  // the space byte
  testing::TempDir dir;
  testing::write_text(dir.file("t.tiktoken"), file);
  EXPECT_EQ(read_tiktoken_file(dir.file("t.tiktoken")), tokens);
  testing::write_text(dir.file("bad.tiktoken"), "AA== 0\nAQ== 2\n");
  try {
    read_tiktoken_file(dir.file("bad.tiktoken"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("bad.tiktoken") + ":2: rank 2, expected 1");
  }
}

TEST(TokenBytes, LengthsAndZeroForSpecials) {
  std::vector<int32_t> t = token_byte_lengths({"a", "bc", "\xE4\xBD\xA0"}, 8);
  EXPECT_EQ(t, (std::vector<int32_t>{1, 2, 3, 0, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace harness
