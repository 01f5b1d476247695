// find_duplicate and the similarity it rests on: the same change however it
// is written is a duplicate; another value of the same constant is not.
#include "daemon/decide/duplicates.h"

#include <gtest/gtest.h>

namespace ard {
namespace {

std::string diff_of(const std::string& removed, const std::string& added, const std::string& file = "trainer/train.cu") {
  std::string d = "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -10,3 +10,3 @@\n";
  d += " int x = 1;\n";
  if (!removed.empty()) d += "-" + removed + "\n";
  if (!added.empty()) d += "+" + added + "\n";
  d += " int y = 2;\n";
  return d;
}

TEST(ChangeTokens, KeepOnlyChangedCodeMarkedWithFileAndSign) {
  const auto t = change_tokens(diff_of("const float lr = 0.01;  // old", "const float lr=0.02; /* tuned */"));
  const std::vector<std::string> want = {
      "trainer/train.cu\t-const", "trainer/train.cu\t-float", "trainer/train.cu\t-lr", "trainer/train.cu\t-=",
      "trainer/train.cu\t-0.01",  "trainer/train.cu\t-;",     "trainer/train.cu\t+const", "trainer/train.cu\t+float",
      "trainer/train.cu\t+lr",    "trainer/train.cu\t+=",     "trainer/train.cu\t+0.02",  "trainer/train.cu\t+;"};
  EXPECT_EQ(t, want);
}

TEST(ChangeSimilarity, WhitespaceAndCommentsDoNotMatter) {
  const auto a = change_tokens(diff_of("float lr = 0.01;", "float lr = 0.02;"));
  const auto b = change_tokens(diff_of("float lr = 0.01;", "float   lr =   0.02;   // a better rate"));
  EXPECT_EQ(change_similarity(a, b), 1.0);
}

TEST(ChangeSimilarity, AnotherValueOfTheSameConstantIsFarBelowTheThreshold) {
  const auto a = change_tokens(diff_of("lr = 0.01", "lr = 0.02"));
  const auto b = change_tokens(diff_of("lr = 0.01", "lr = 0.03"));
  EXPECT_DOUBLE_EQ(change_similarity(a, b), 3.0 / 5.0);
}

TEST(ChangeSimilarity, TheSameLinesInAnotherFileShareNothing) {
  const auto a = change_tokens(diff_of("lr = 0.01", "lr = 0.02", "a.cu"));
  const auto b = change_tokens(diff_of("lr = 0.01", "lr = 0.02", "b.cu"));
  EXPECT_EQ(change_similarity(a, b), 0.0);
}

TEST(FindDuplicate, TheSameChangeRewrittenRepeatsTheEarlierOne) {
  const std::vector<EarlierChange> earlier = {
      {2, diff_of("lr = 0.01", "lr = 0.03"), "discarded", "lr 0.03"},
      {3, diff_of("lr = 0.01", "lr = 0.02"), "discarded", "lr 0.02"},
  };
  auto d = find_duplicate(diff_of("lr = 0.01", "lr  =  0.02 // again"), earlier, 0.9);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id, 3);
  EXPECT_EQ(d->similarity, 1.0);
  EXPECT_FALSE(d->revert);
  EXPECT_EQ(d->reason, "repeats #3 (discarded: lr 0.02), similarity 1.00 (the same change)");
}

TEST(FindDuplicate, ADistinctChangeIsNone) {
  const std::vector<EarlierChange> earlier = {{2, diff_of("lr = 0.01", "lr = 0.03"), "discarded", ""}};
  EXPECT_FALSE(find_duplicate(diff_of("lr = 0.01", "lr = 0.02"), earlier, 0.9));
  EXPECT_FALSE(find_duplicate(diff_of("warmup = 10", "warmup = 20"), earlier, 0.9));
}

TEST(FindDuplicate, AnExactRepeatIsADuplicateWhateverTheThreshold) {
  const std::vector<EarlierChange> earlier = {{4, diff_of("a = 1", "a = 2"), "crash", ""}};
  EXPECT_TRUE(find_duplicate(diff_of("a = 1", "a = 2"), earlier, 1.0));
}

TEST(FindDuplicate, TheRevertOfAKeptChangeIsADuplicate) {
  const std::vector<EarlierChange> earlier = {{5, diff_of("depth = 8", "depth = 12"), "kept", "deeper"}};
  auto d = find_duplicate(diff_of("depth = 12", "depth = 8"), earlier, 0.9);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->revert);
  EXPECT_EQ(d->reason, "reverts the kept change #5 (kept: deeper)");
  // The revert of a discarded change is new work (the best never had it).
  const std::vector<EarlierChange> discarded = {{5, diff_of("depth = 8", "depth = 12"), "discarded", ""}};
  EXPECT_FALSE(find_duplicate(diff_of("depth = 12", "depth = 8"), discarded, 0.9));
}

TEST(FindDuplicate, ConflictsRejectedEditsAndTheFixChainAreNotCompared) {
  const std::string change = diff_of("a = 1", "a = 2");
  EXPECT_FALSE(find_duplicate(change, {{2, change, "conflict", ""}}, 0.9));
  EXPECT_FALSE(find_duplicate(change, {{2, change, "patch_rejected", ""}}, 0.9));
  EXPECT_FALSE(find_duplicate(change, {{2, change, "build_fail", ""}}, 0.9, {2}));
  EXPECT_TRUE(find_duplicate(change, {{2, change, "build_fail", ""}}, 0.9));
}

TEST(FindDuplicate, AnInFlightChangeCountsAndTheMostSimilarWins) {
  const std::string mine = diff_of("x = 1;\n-y = 2;\n-z = 3", "x = 5;\n+y = 2;\n+z = 3");
  const std::vector<EarlierChange> earlier = {
      {6, diff_of("x = 1;\n-y = 2;\n-z = 3", "x = 5;\n+y = 2;\n+z = 4"), "running", ""},
      {7, mine, "committed", ""},
  };
  auto d = find_duplicate(mine, earlier, 0.5);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id, 7);
  EXPECT_EQ(d->state, "committed");
}

}  // namespace
}  // namespace ard
