// Promotion to larger scales: whether a kept change found at rung 0 (the
// experiment as configured) still helps at a larger rung (config.h,
// RungConfig), as values the engine applies. No I/O.
//
// A promotion round (engine/promotion_round.h) runs the kept changes c1..cm
// between the rung's reference c0 (the last change promoted to that rung; at
// first the original base) and the best cm at the rung, with σ measured at
// that rung, and decides each change against the commit before it by the
// transfer rule (transfer_rule.h: does it keep the gain it had at rung 0?).
// Every commit it runs is one the chain already has (no new build of a
// change). A change never compared at a rung is untested there.
//
// Every label carries its evidence (Label): the means, the runs' counts, σ,
// Δ and the trials of the comparison that decided it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/decide/noise.h"
#include "daemon/decide/summary.h"
#include "daemon/store/store.h"

namespace ard {

/// The metric of every finished (status ok) run of commit at rung under
/// calibration, oldest first, with their trial ids.
struct RungRuns {
  std::vector<double> values;
  std::vector<int64_t> trials;
  int failed = 0;  ///< its ended runs at the rung that gave no result (crash, timeout, tampered, ...)
};
RungRuns rung_runs(const std::vector<TrialRow>& trials, const std::string& commit, int rung, int64_t calibration);

/// σ at a rung: pooled over the groups of finished runs of one commit at that
/// rung under one calibration (calibration >= min_calibration). Every run at a
/// rung above 0 counts: no decision selected it. nullopt with no group of two.
std::optional<NoiseEstimate> rung_noise(const std::vector<TrialRow>& trials, int rung, int64_t min_calibration);

/// Why a promotion round is due now, or "" when none is: at least one kept
/// change since the last round, and either `every` of them or a round
/// `requested` (on demand, or while the GPU has nothing else to run; the
/// reason then begins with why_requested), while the GPU time at rungs above 0 stays within
/// max_share of all of it (promote.max_share) once the round's own runs are
/// done: (at_rungs + round) / (total + round) <= max_share, round being the
/// GPU seconds the round is expected to take (0: the share before it, which
/// must be under max_share). every < 1 is taken as 1.
std::string promotion_due(int kept_since_last_round, int every, double gpu_seconds_at_rungs,
                          double gpu_seconds_total, double max_share, bool requested = false,
                          double round_seconds = 0, const std::string& why_requested = "a round was requested");

/// The size a run reports in its summary (keys `depth`, `num_params_M`);
/// nullopt where the summary lacks the key.
struct ModelSize {
  std::optional<double> depth;
  std::optional<double> num_params_m;
};

/// The size a summary reports (keys depth and num_params_M), and the same
/// read from a summary stored as JSON (Summary::to_json; "" or not JSON: none).
ModelSize model_size(const Summary& summary);
ModelSize model_size(const std::string& summary_json);

/// Why a run at a rung is `tampered` (never a result), or "": its depth must
/// be the rung-0 run's depth × depth_scale (either whole number next to it
/// when that is not whole), and its parameters must grow (not shrink at
/// depth_scale 1). A missing or non-finite size on either side is a reason too.
std::string rung_size_check(const ModelSize& rung0, const ModelSize& rung, double depth_scale);

/// A change's standing at one rung.
enum class LabelKind { kTransfers, kScaleBound, kUntested };

/// "transfers", "scale_bound", "untested".
const char* to_string(LabelKind kind);
/// The kind of a word to_string gives; nullopt for any other.
std::optional<LabelKind> parse_label_kind(const std::string& word);

/// One comparison at a rung of a change against the commit before it: what
/// the transfer rule decided it on.
struct RungEvidence {
  double best_mean = 0;       ///< the commit before the change: its mean metric at the rung
  double candidate_mean = 0;  ///< the change's mean metric at the rung
  int best_n = 0;             ///< finished runs of each
  int candidate_n = 0;
  double sigma = 0;           ///< σ at the rung the decision used
  double delta = 0;           ///< the improvement (keep_rule.h): positive is better
  std::vector<int64_t> trials;  ///< the trial ids of every run above
  /// The gain g the transfer rule tested against and its λ (transfer_rule.h);
  /// nullopt in labels decided before the rule, or without a comparison.
  std::optional<double> gain_at_rung0;
  std::optional<double> lambda;

  bool operator==(const RungEvidence&) const = default;
};

/// A change's label at a rung with the evidence that made it (none for untested).
struct Label {
  LabelKind kind = LabelKind::kUntested;
  int rung = 0;
  std::optional<RungEvidence> evidence;

  bool operator==(const Label&) const = default;
};

/// The evidence as one JSON object {"best_mean", "candidate_mean", "best_n",
/// "candidate_n", "sigma", "delta", "trials"}, with "gain_at_rung0" and
/// "lambda" when set (older labels lack them); "{}" for none.
std::string evidence_json(const std::optional<RungEvidence>& evidence);
/// evidence_json read back: nullopt for "{}" or "". Throws std::invalid_argument
/// naming the field when the text is not such an object.
std::optional<RungEvidence> parse_evidence_json(const std::string& json);

}  // namespace ard
