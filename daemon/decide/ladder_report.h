// The promotion ladder as `status`, `show` and the dashboard present it: each
// rung above 0 with its size, its reference, σ at the rung and the GPU time
// spent at rungs above 0, and every kept change of the chain with its label at
// each rung (decide/promotion.h), in the words a researcher uses ("transfers
// at 2x", "scale-bound at 2x", "untested at 2x"). Read from the store only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/decide/noise.h"
#include "daemon/decide/promotion.h"
#include "daemon/store/store.h"

namespace ard {

/// What the ladder's display needs of the config.
struct LadderSettings {
  std::vector<RungConfig> rungs;  ///< config.rungs: rung 0 first; no rung above 0: no ladder shown
  PromoteConfig promote;
};

/// The ladder settings of a config.
LadderSettings ladder_settings(const Config& config);

/// One rung above 0 as status shows it.
struct RungStanding {
  int rung = 1;
  std::string name;
  double depth_scale = 1;
  double budget_s = 0;
  /// The rung's reference: the latest kept change of the chain labelled
  /// transfers or scale_bound at the rung; nullopt: the base.
  std::optional<int64_t> reference;
  std::string reference_commit;        ///< its commit, or the tag's base commit ("" when unknown)
  std::optional<NoiseEstimate> sigma;  ///< rung_noise over the tag's runs; nullopt: not measured yet
};

/// A kept change of the chain with its current label at each rung above 0.
struct ChangeStanding {
  int64_t experiment_id = 0;
  std::string commit;
  std::string description;
  std::vector<LabelKind> labels;  ///< one per rung above 0, rung 1 first; no label row: untested
};

/// The whole ladder of a tag.
struct Ladder {
  std::vector<RungStanding> rungs;      ///< the rungs above 0; empty: the config has none
  std::vector<ChangeStanding> changes;  ///< the kept changes (the baselines aside), oldest first
  double promotion_share = 0;           ///< RunTime::promotion_share of the tag's runs
  PromoteConfig promote;
};

/// The ladder of tag: its kept changes, their labels, each rung's reference and σ.
Ladder ladder_of(Store& store, const std::string& tag, const LadderSettings& settings);

/// The name of a rung: the config's, or "rung N" when the config has no such rung.
std::string rung_name(const std::vector<RungConfig>& rungs, int rung);

/// "transfers at 2x", "scale-bound at 2x", "untested at 2x".
std::string label_words(LabelKind kind, const std::string& rung);

/// The `status` section "promotion ladder": one line per rung above 0 (size,
/// reference, σ), the GPU time spent there against promote.max_share, and
/// each kept change with its labels. "" when the ladder has no rung above 0.
std::string render_ladder(const Ladder& ladder);

/// The `show` section of an experiment's standing at larger scales: its label
/// at every rung above 0 with the evidence that decided it (the means and runs
/// of the comparison, σ at the rung, Δ, the trials), earlier labels, and its
/// commit's runs at each rung above 0. "" when there is nothing to say (no
/// rung above 0, or an experiment that is neither kept nor labelled nor run there).
std::string render_rung_standing(Store& store, const ExperimentRow& row, const LadderSettings& settings);

}  // namespace ard
