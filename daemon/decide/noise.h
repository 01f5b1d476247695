// The noise floor: σ, the spread of val_bpb between runs of the same commit,
// pooled over every group of repeats, and when the next noise round is due.
//
// Pure functions: the caller reads the runs from the store and decides which
// runs form a group (runs of one commit under one calibration), so a change of
// board scale never passes for noise.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ard {

/// σ with the degrees of freedom it rests on (Σ (n_g − 1) over the groups).
struct NoiseEstimate {
  double sigma = 0;
  int df = 0;
  bool from_prior = false;  ///< σ is `noise.prior_sigma`, not measured
};

/// Pooled standard deviation over groups of repeat values:
/// σ² = Σ_g Σ_i (x_gi − mean_g)² / Σ_g (n_g − 1). Groups with fewer than two
/// finite values add nothing (non-finite values are skipped). nullopt when no
/// group has two values.
std::optional<NoiseEstimate> pooled_noise(const std::vector<std::vector<double>>& groups);

/// Fewer degrees of freedom than this and σ is too rough to decide on: with
/// df = 2 the estimate is below half the true σ one time in ten.
inline constexpr int kMinNoiseDf = 3;

/// The σ decisions use: the measured one once it rests on at least min_df
/// degrees of freedom, else the prior when one is set (prior_sigma > 0), else
/// nullopt (σ not yet known: the keep rule then asks for confirmation runs).
std::optional<NoiseEstimate> noise_for_decisions(const std::optional<NoiseEstimate>& measured,
                                                 double prior_sigma, int min_df = kMinNoiseDf);

/// The keep margin, in units of σΔ, of a one-sided test whose error rate is
/// the one z gives when σ is exact (Φ̄(z): 2.3 % for z = 2), for a σ measured
/// on noise.df degrees of freedom: Student's t quantile at Φ(z), since Δ/σ̂Δ
/// follows Student's t with df degrees of freedom when nothing changed. It
/// falls towards z as σ's df grow (z = 2: 3.31 at df 3, 2.43 at df 7, 2.18
/// at df 15, 2.06 at df 40), so an early σ̂ that happens to be low does not
/// keep no-effect changes, and a σ from noise.prior_sigma (taken as exact)
/// gives z itself. z when df is 0 or above 1000.
double keep_margin(double z, const NoiseEstimate& noise);

/// Student's t distribution with df > 0 degrees of freedom: its CDF at t, and
/// the t whose CDF is p (0 < p < 1). Accurate to about 1e-10.
double student_t_cdf(double t, int df);
double student_t_quantile(double p, int df);

/// Why a noise round (the incumbent re-run, on every GPU when there are
/// several) is due now, or `not_due`.
enum class NoiseDue { not_due, never_measured, every_experiments, too_old };

/// never_measured when there was no round yet; every_experiments once
/// every × gpus experiments ended since the last round (a round costs one run
/// per GPU, so its share of GPU time does not grow with the GPUs); too_old once
/// it is max_age_s old (max_age_s <= 0: no age limit).
NoiseDue noise_round_due(bool measured_before, int experiments_since_round, double round_age_s, int every, int gpus,
                         double max_age_s);

/// "never measured", "20 experiments since the last round", "the estimate is 7.0 h old", "".
std::string describe(NoiseDue due, int experiments_since_round, double round_age_s);

}  // namespace ard
