// Tests of the pooled noise estimate, the σ decisions use, and when a noise
// round is due.
#include "daemon/decide/noise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace ard {
namespace {

TEST(Noise, PooledOverGroupsWithTheirDegreesOfFreedom) {
  // Group 1: mean 1, squares 0.01²·2; group 2: mean 2, squares 0.02²·2 + 0; df = 1 + 2.
  auto e = pooled_noise({{0.99, 1.01}, {1.98, 2.0, 2.02}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->df, 3);
  EXPECT_NEAR(e->sigma, std::sqrt((2 * 0.0001 + 2 * 0.0004) / 3), 1e-12);
  EXPECT_FALSE(e->from_prior);
}

TEST(Noise, SingletonsAndNonFiniteValuesAddNothing) {
  EXPECT_FALSE(pooled_noise({}));
  EXPECT_FALSE(pooled_noise({{1.0}, {2.0}, {}}));
  EXPECT_FALSE(pooled_noise({{1.0, NAN}}));
  auto e = pooled_noise({{1.0}, {1.0, 1.2, NAN}, {INFINITY, 3.0}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->df, 1);
  EXPECT_NEAR(e->sigma, std::sqrt(0.02), 1e-12);
}

TEST(Noise, IdenticalRepeatsGiveZero) {
  auto e = pooled_noise({{0.98, 0.98}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->sigma, 0);
}

TEST(Noise, EstimatesTheTrueSigma) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n(0, 0.0015);
  std::vector<std::vector<double>> groups;
  for (int g = 0; g < 400; ++g) groups.push_back({0.9 + g * 1e-3 + n(rng), 0.9 + g * 1e-3 + n(rng)});
  auto e = pooled_noise(groups);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->df, 400);
  EXPECT_NEAR(e->sigma, 0.0015, 0.0015 * 0.1);  // the relative error is about 1/√(2·df) = 3.5 %
}

TEST(Noise, DecisionsUseTheMeasuredSigmaOnceItHasEnoughDf) {
  EXPECT_FALSE(noise_for_decisions(std::nullopt, 0));
  auto prior = noise_for_decisions(std::nullopt, 0.002);
  ASSERT_TRUE(prior);
  EXPECT_TRUE(prior->from_prior);
  EXPECT_EQ(prior->sigma, 0.002);
  EXPECT_EQ(prior->df, 0);

  NoiseEstimate rough{0.001, 2, false}, enough{0.001, 3, false};
  EXPECT_FALSE(noise_for_decisions(rough, 0));
  EXPECT_TRUE(noise_for_decisions(rough, 0.002)->from_prior);
  EXPECT_EQ(noise_for_decisions(enough, 0.002)->df, 3);
  EXPECT_EQ(noise_for_decisions(rough, 0, 2)->df, 2);
}

TEST(Noise, RoundDue) {
  EXPECT_EQ(noise_round_due(false, 0, 0, 20, 1, 3600), NoiseDue::never_measured);
  EXPECT_EQ(noise_round_due(true, 19, 100, 20, 1, 3600), NoiseDue::not_due);
  EXPECT_EQ(noise_round_due(true, 20, 100, 20, 1, 3600), NoiseDue::every_experiments);
  EXPECT_EQ(noise_round_due(true, 79, 100, 20, 4, 3600), NoiseDue::not_due);  // every 20 per GPU
  EXPECT_EQ(noise_round_due(true, 80, 100, 20, 4, 3600), NoiseDue::every_experiments);
  EXPECT_EQ(noise_round_due(true, 20, 100, 20, 0, 3600), NoiseDue::every_experiments);  // no GPU count: 1
  EXPECT_EQ(noise_round_due(true, 3, 3600, 20, 1, 3600), NoiseDue::too_old);
  EXPECT_EQ(noise_round_due(true, 3, 1e9, 20, 1, 0), NoiseDue::not_due);  // no age limit
  EXPECT_EQ(describe(NoiseDue::every_experiments, 20, 0), "20 experiments since the last round");
  EXPECT_EQ(describe(NoiseDue::too_old, 3, 25200), "the estimate is 7.0 h old");
  EXPECT_EQ(describe(NoiseDue::never_measured, 0, 0), "never measured");
  EXPECT_EQ(describe(NoiseDue::not_due, 0, 0), "");
}

TEST(Noise, StudentTAgainstTableValues) {
  // Two-sided 95 % and one-sided 95 %/99 % points from any t table.
  EXPECT_NEAR(student_t_quantile(0.975, 3), 3.182446, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228139, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.95, 1), 6.313752, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.99, 30), 2.457262, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.025, 3), -3.182446, 1e-5);
  EXPECT_NEAR(student_t_cdf(2.228139, 10), 0.975, 1e-6);
  EXPECT_NEAR(student_t_cdf(0, 4), 0.5, 1e-12);
}

TEST(Noise, TheKeepMarginFallsTowardsZAsSigmasDfGrow) {
  const double z = 2;
  double last = 1e9;
  for (int df : {1, 2, 3, 5, 7, 15, 40, 200}) {
    const double m = keep_margin(z, NoiseEstimate{0.0015, df, false});
    EXPECT_GT(m, z) << "df " << df;
    EXPECT_LT(m, last) << "df " << df;
    last = m;
  }
  EXPECT_NEAR(keep_margin(z, NoiseEstimate{0.0015, 3, false}), 3.31, 0.01);
  EXPECT_NEAR(keep_margin(z, NoiseEstimate{0.0015, 200, false}), 2.02, 0.01);
  // The tail probability is the one z has with σ exact: Φ̄(2) = 2.275 %.
  EXPECT_NEAR(1 - student_t_cdf(keep_margin(z, NoiseEstimate{1, 7, false}), 7), 0.02275, 1e-5);
  EXPECT_EQ(keep_margin(z, NoiseEstimate{0.0015, 0, true}), z);  // a prior is taken as exact
}

}  // namespace
}  // namespace ard
