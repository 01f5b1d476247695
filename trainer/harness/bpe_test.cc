// BPE training (hand-computed merges, and an exhaustive recount reference on
// random corpora) and the tiktoken encoding rule.
#include "harness/bpe.h"

#include <gtest/gtest.h>

#include "harness/splitter.h"

#include <map>
#include <random>
#include <set>

namespace harness {
namespace {

std::vector<std::string> learned(const BpeTraining& t) { return {t.tokens.begin() + 256, t.tokens.end()}; }

using V = std::vector<std::string>;

TEST(TrainBpe, FirstMergesByHand) {
  // (a,b): 5 + 1 = 6, (b,c): 5 + 1 = 6: a tie, the smaller pair (97,98) goes
  // first; then (b,c) = 5, then (ab,c) = 1; then no pair is left.
  BpeTraining t = train_bpe({{"ab", 5}, {"bc", 5}, {"abc", 1}}, 1000);
  EXPECT_EQ(learned(t), (V{"ab", "bc", "abc"}));
  EXPECT_EQ(t.skipped_duplicates, 0u);
}

TEST(TrainBpe, MostFrequentPairWins) {
  BpeTraining t = train_bpe({{"the", 10}, {" the", 4}, {"then", 1}, {"x", 100}}, 257);
  // (t,h) and (h,e) both 15: tie -> (h,e) = (104,101) < (116,104).
  EXPECT_EQ(learned(t), (V{"he"}));
  t = train_bpe({{"the", 10}, {" the", 4}, {"then", 1}}, 258);
  EXPECT_EQ(learned(t), (V{"he", "the"}));
}

TEST(TrainBpe, FirstMergesOfASmallTextThroughTheSplitter) {
  // Chunks: "low" x1, " low" x2, " lower" x1, " lowest" x1. (l,o) and (o,w) tie at 5: (108,111)
  // first; then low, " low" (4), " lowe" (2); at 1 the smallest pair is (s,t) = (115,116),
  // then (" lowe", r) = (259,114) before (" lowe", st) = (259,260).
  Splitter splitter;
  std::vector<std::string_view> pieces;
  splitter.split("low low low lower lowest", pieces);
  std::map<std::string, uint64_t> counts;
  for (auto p : pieces) ++counts[std::string(p)];
  BpeTraining t = train_bpe({counts.begin(), counts.end()}, 1000);
  EXPECT_EQ(learned(t), (V{"lo", "low", " low", " lowe", "st", " lower", " lowest"}));
}

TEST(TrainBpe, OverlappingPairsMergeLeftToRight) {
  EXPECT_EQ(learned(train_bpe({{"aaa", 1}}, 1000)), (V{"aa", "aaa"}));
  EXPECT_EQ(learned(train_bpe({{"aaaa", 1}}, 1000)), (V{"aa", "aaaa"}));
}

// Reference: recount every pair of every word before each merge.
BpeTraining reference_train(const std::vector<std::pair<std::string, uint64_t>>& chunks, size_t num_tokens) {
  BpeTraining out;
  for (int b = 0; b < 256; ++b) out.tokens.emplace_back(1, static_cast<char>(b));
  std::set<std::string> known(out.tokens.begin(), out.tokens.end());
  std::set<std::pair<uint32_t, uint32_t>> banned;
  std::vector<std::pair<std::vector<uint32_t>, uint64_t>> words;
  for (auto& [s, n] : chunks) {
    std::vector<uint32_t> ids;
    for (unsigned char c : s) ids.push_back(c);
    words.push_back({ids, n});
  }
  while (out.tokens.size() < num_tokens) {
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> counts;
    for (auto& [ids, n] : words)
      for (size_t k = 0; k + 1 < ids.size(); ++k) counts[{ids[k], ids[k + 1]}] += n;
    std::pair<uint32_t, uint32_t> best{};
    uint64_t best_n = 0;
    for (auto& [p, n] : counts)  // map order: the first of equal counts is the smaller pair
      if (n > best_n && !banned.count(p)) best = p, best_n = n;
    if (best_n == 0) break;
    std::string joined = out.tokens[best.first] + out.tokens[best.second];
    if (known.count(joined)) {
      banned.insert(best);
      ++out.skipped_duplicates;
      continue;
    }
    const uint32_t m = static_cast<uint32_t>(out.tokens.size());
    known.insert(joined);
    out.tokens.push_back(joined);
    for (auto& [ids, n] : words) {
      std::vector<uint32_t> merged;
      for (size_t k = 0; k < ids.size();) {
        if (k + 1 < ids.size() && ids[k] == best.first && ids[k + 1] == best.second) {
          merged.push_back(m);
          k += 2;
        } else {
          merged.push_back(ids[k++]);
        }
      }
      ids = merged;
    }
  }
  return out;
}

TEST(TrainBpe, MatchesFullRecountOnRandomCorpora) {
  for (int seed = 0; seed < 30; ++seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<std::string, uint64_t>> chunks;
    for (int i = 0; i < 60; ++i) {
      std::string w;
      const int len = 1 + rng() % 9;
      for (int k = 0; k < len; ++k) w.push_back("abcd"[rng() % (seed % 2 ? 2 : 4)]);
      chunks.push_back({w, 1 + rng() % 5});
    }
    BpeTraining fast = train_bpe(chunks, 256 + 60);
    BpeTraining slow = reference_train(chunks, 256 + 60);
    ASSERT_EQ(fast.tokens, slow.tokens) << "seed " << seed;
    EXPECT_EQ(fast.skipped_duplicates, slow.skipped_duplicates);
    std::set<std::string> distinct(fast.tokens.begin(), fast.tokens.end());
    EXPECT_EQ(distinct.size(), fast.tokens.size());
  }
}

std::vector<uint16_t> encode(const BpeEncoder& e, std::string_view s) {
  std::vector<uint16_t> out;
  e.encode_chunk(s, out);
  return out;
}

std::vector<std::string> with_bytes(V extra) {
  V t;
  for (int b = 0; b < 256; ++b) t.emplace_back(1, static_cast<char>(b));
  t.insert(t.end(), extra.begin(), extra.end());
  return t;
}

using Ids = std::vector<uint16_t>;

TEST(BpeEncoder, LowestRankPairMergesFirst) {
  BpeEncoder e(with_bytes({"bc", "ab"}));  // "bc" = 256 outranks "ab" = 257
  EXPECT_EQ(encode(e, "abc"), (Ids{'a', 256}));
  EXPECT_EQ(encode(e, "abab"), (Ids{257, 257}));
  EXPECT_EQ(encode(e, "xyz"), (Ids{'x', 'y', 'z'}));
}

TEST(BpeEncoder, LeftmostOnEqualRanks) {
  BpeEncoder e(with_bytes({"aa"}));
  EXPECT_EQ(encode(e, "aaa"), (Ids{256, 'a'}));
}

TEST(BpeEncoder, WholeChunkThatIsATokenIsThatToken) {
  // As tiktoken: "abc" is a token even though no pair inside it is.
  BpeEncoder e(with_bytes({"abc"}));
  EXPECT_EQ(encode(e, "abc"), (Ids{256}));
  EXPECT_EQ(encode(e, "abcd"), (Ids{'a', 'b', 'c', 'd'}));
}

TEST(BpeEncoder, RejectsBadTables) {
  EXPECT_THROW(BpeEncoder(with_bytes({"ab", "ab"})), std::invalid_argument);
  EXPECT_THROW(BpeEncoder(V{"a", "b"}), std::invalid_argument);
}

}  // namespace
}  // namespace harness
