// Proposer profiles, the swarm: several proposers, each with its own model
// (or the offline proposer) and an addendum to the prompt ("architecture
// changes only"), one drawn for each proposal by weight. They share the
// history and the research memory; each experiment records its profile.
//
// The draw is a smooth weighted round robin: over any run of proposals each
// profile's share is its weight's to within one proposal, so a short night
// is not left to luck. With `profiles.adapt` the weights follow the keeps per
// GPU-hour each profile earned (adapted_shares), with a floor so that none
// starves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ard {

/// One profile as the draw and the prompt see it.
struct ProfileSpec {
  std::string name;      ///< unique; recorded with each experiment ("" : the one proposer, no profiles)
  double weight = 1;     ///< > 0; the shares are the weights over their sum
  std::string addendum;  ///< appended to the prompt as its focus; "" for none
};

/// Picks the next profile, by index, in proportion to the weights.
class ProfileDraw {
 public:
  /// weights: one per profile, each > 0.
  explicit ProfileDraw(std::vector<double> weights);
  /// New weights (the same count); the draw goes on from where it is.
  void set_weights(std::vector<double> weights);
  /// The next profile: each adds its weight to its credit, the largest credit
  /// wins (the first on a tie) and pays the sum of the weights.
  size_t next();

 private:
  std::vector<double> weights_;
  std::vector<double> credit_;
};

/// What a profile earned so far.
struct ProfileRecord {
  int64_t keeps = 0;
  double gpu_seconds = 0;  ///< the training time of its experiments' runs
};

/// The shares adapted to the records (one per profile, in the same order):
///   R    = the pooled keeps per GPU-hour (every profile's keeps over their hours);
///   r_i  = (keeps_i + R * 1 h) / (hours_i + 1 h)   (one GPU-hour of the pooled rate as a prior,
///          so a profile with little time is not judged on it);
///   w_i  = base_i * r_i / R, then share_i = floor + (1 - n*floor) * w_i / sum(w).
/// Every share is at least floor (floor is capped at 1/n). With no keep yet
/// (R = 0) the shares are the base weights'.
std::vector<double> adapted_shares(const std::vector<double>& base, const std::vector<ProfileRecord>& records,
                                   double floor);

}  // namespace ard
