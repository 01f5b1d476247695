// Tests of the profiles' draw and of their adapted shares.
#include "proposers/profiles.h"

#include <gmock/gmock.h>

#include <map>

namespace ard {
namespace {

// Over any window the counts follow the weights to within one.
TEST(ProfileDraw, EachProfilesShareIsItsWeightsWithinOneProposal) {
  ProfileDraw draw({3, 1, 1});
  std::vector<int> count(3, 0);
  for (int k = 1; k <= 50; ++k) {
    ++count[draw.next()];
    for (size_t i = 0; i < 3; ++i) {
      const double expected = k * (i == 0 ? 0.6 : 0.2);
      EXPECT_LE(std::abs(count[i] - expected), 1.0) << "after " << k << " draws, profile " << i;
    }
  }
  EXPECT_EQ(count, (std::vector<int>{30, 10, 10}));
}

TEST(ProfileDraw, OneProfileIsAlwaysDrawnAndBadWeightsAreRefused) {
  ProfileDraw one({2});
  EXPECT_EQ(one.next(), 0u);
  EXPECT_EQ(one.next(), 0u);
  EXPECT_THROW(ProfileDraw({}), std::invalid_argument);
  EXPECT_THROW(ProfileDraw({1, 0}), std::invalid_argument);
  EXPECT_THROW(one.set_weights({1, 1}), std::invalid_argument);
}

TEST(AdaptedShares, BeforeAnyKeepTheBaseWeightsHold) {
  const auto s = adapted_shares({3, 1}, {{0, 3600}, {0, 0}}, 0.1);
  EXPECT_NEAR(s[0], 0.1 + 0.8 * 0.75, 1e-12);
  EXPECT_NEAR(s[1], 0.1 + 0.8 * 0.25, 1e-12);
}

// A profile that keeps more per GPU-hour gains share; the other keeps its floor.
TEST(AdaptedShares, TheProfileWithMoreKeepsPerGpuHourGainsAndNoneFallsUnderTheFloor) {
  // 8 keeps in 4 h against 0 in 4 h: pooled 1/h; rates (8+1)/5 = 1.8 and 1/5 = 0.2.
  const auto s = adapted_shares({1, 1}, {{8, 4 * 3600}, {0, 4 * 3600}}, 0.15);
  EXPECT_NEAR(s[0], 0.15 + 0.7 * 0.9, 1e-12);
  EXPECT_NEAR(s[1], 0.15 + 0.7 * 0.1, 1e-12);
  EXPECT_NEAR(s[0] + s[1], 1, 1e-12);
  // A hopeless profile still gets its floor; a floor above 1/n is capped there.
  const auto capped = adapted_shares({1, 1}, {{50, 3600}, {0, 100 * 3600}}, 0.9);
  EXPECT_NEAR(capped[0], 0.5, 1e-12);
  EXPECT_NEAR(capped[1], 0.5, 1e-12);
}

// Little GPU time says little: one hour of the pooled rate as a prior.
TEST(AdaptedShares, AProfileWithLittleTimeStaysNearItsBase) {
  const auto s = adapted_shares({1, 1}, {{1, 600}, {10, 10 * 3600}}, 0);
  // pooled 11 / (10 h + 1/6 h) = 1.082; r0 = (1 + 1.082) / (1/6 + 1) = 1.785; r1 = (10 + 1.082) / 11 = 1.007.
  EXPECT_GT(s[0], 0.5);
  EXPECT_LT(s[0], 0.7);
}

}  // namespace
}  // namespace ard
