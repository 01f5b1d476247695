// The keep rule: does a candidate's val_bpb beat the incumbent (the best
// commit) by more than the noise, should it run again, or is it discarded?
//
// A pure function of the runs, σ and the settings, so a user can check every
// decision by hand from the numbers its reason line prints (docs/daemon.md,
// "The keep rule"). The rule is a two-look sequential test on Δ, the
// incumbent's mean minus the candidate's mean (positive: the candidate is
// better), in units of σΔ = σ·√(1/n_incumbent + 1/n_candidate):
//
//   Δ ≥ k·σΔ and Δ ≥ min_improvement       keep
//   Δ < discard_below·σΔ                    discard
//   in between                              confirm (run again) while
//                                           confirmations are left, else discard
//
// z sets the rule's false-keep rate: a candidate with no effect is kept with
// probability at most Φ̄(z) (2.3 % for z = 2), split evenly over the looks
// (the first run and each confirmation: Bonferroni), so each look's margin is
// the normal quantile of Φ̄(z)/looks (2.28 for z = 2 and one confirmation),
// turned into Student's t for σ's degrees of freedom (→ the normal quantile as
// df grows): a σ measured on few runs asks for a larger margin. Equal but
// simpler: |Δ| ≤ σ and a diff that removes more lines than it adds is kept.
// σ not yet known: confirm while confirmations are left, then today's rule
// (strictly lower by min_improvement), said so in the reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/noise.h"

namespace ard {

struct Config;

struct KeepSettings {
  double z = 2;                   ///< `noise.z`: sets the false-keep rate Φ̄(z)
  double discard_below = 1;       ///< Δ under this many σΔ is discarded at once
  double min_improvement = 0;     ///< floor on Δ, whatever σ says
  bool equal_but_simpler = true;  ///< `keep.equal_but_simpler`
  int max_confirmations = 1;      ///< `keep.confirmations`: runs after the first
};

/// The settings that the config names; discard_below stays at its default.
KeepSettings keep_settings(const Config& config);

struct KeepInput {
  std::vector<double> incumbent;  ///< val_bpb of every finished run of the best commit
  std::vector<double> candidate;  ///< val_bpb of every finished run of the candidate
  std::optional<NoiseEstimate> noise;  ///< noise_for_decisions(); nullopt: σ not yet known
  int lines_added = 0;            ///< the candidate's diff against the incumbent
  int lines_removed = 0;
  int confirmations_done = 0;     ///< runs of the candidate after its first
};

enum class Verdict { keep, discard, confirm };

struct KeepDecision {
  Verdict verdict = Verdict::discard;
  std::string reason;  ///< one line with every number the decision used
};

/// Decides on a candidate. No incumbent runs: kept (nothing to beat). No
/// finite candidate run: discarded. Non-finite values are ignored.
KeepDecision decide_keep(const KeepInput& input, const KeepSettings& settings);

/// The margin multiplier k of one look: the one-sided Student-t quantile with
/// df degrees of freedom at the tail probability Φ̄(z)/looks; the normal
/// quantile for df <= 0 (a prior σ, taken as exact), so z itself for one look.
double keep_multiplier(double z, int df, int looks);

const char* to_string(Verdict verdict);

/// Where a confirmation run goes: the GPU (of `gpus`, in order) the candidate
/// has run on least, so a second run lands on another board when there is one
/// and on the same board with one GPU. Empty when gpus is empty.
std::string confirmation_gpu(const std::vector<std::string>& gpus, const std::vector<std::string>& candidate_gpus);

}  // namespace ard
