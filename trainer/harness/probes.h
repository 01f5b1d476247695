// The integrity probes: fixed checks, run in every experiment after training and
// before the summary, that the model measured is a model and the measurement is
// honest. A failure prints `FAIL: tampered: <message>` (docs/CONTRACTS.md) and
// the daemon records the experiment as tampered.
//
//   causality      for sampled rows and positions t (window edges and document
//                  boundaries among them), replacing every token after t leaves
//                  the logits at positions <= t unchanged within bf16 tolerance.
//   honest losses  the cross-entropy the harness computes from the model's logits
//                  matches the per-token losses the model hands to evaluate_bpb.
//
// The work: per probe row one logits() call of 1 + positions rows and one
// per_token_losses() call, i.e. a few forward passes (well under 3 s on an H200
// for the default 2 rows x 6 positions at T = 2048).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/dataset.h"
#include "harness/probe_model.h"

namespace harness {

struct ProbeSettings {
  int rows = 2;                 ///< validation rows probed
  int positions_per_row = 6;    ///< causality positions per row
  uint64_t seed = 0;            ///< chooses rows, positions and replacement tokens
  /// Causality: |logit change| <= abs_tol + rel_tol * |logit|. A bf16 logit of
  /// magnitude 16-32 moves in steps of 0.125, but the same prefix computed twice
  /// gives the same bits up to reduction order; a leak moves logits by O(1).
  float causal_abs_tol = 0.02f, causal_rel_tol = 0.01f;
  /// Honest losses: per token |reported - recomputed| <= abs_tol + rel_tol * recomputed,
  /// and the row means within mean_rel_tol (a 0.9 scale is 10 % off).
  float loss_abs_tol = 0.05f, loss_rel_tol = 0.02f, loss_mean_rel_tol = 0.01f;
};

struct ProbeResult {
  bool ok = true;
  std::string message;  ///< why not ok: one line naming the probe, the row and the position
};

/// One probe row: T+1 tokens and where a document starts inside it (its BOS), if anywhere.
struct ProbeRow {
  std::vector<uint16_t> tokens;
  int boundary = -1;
};

/// rows probe rows of seq_len+1 tokens from the shard, each straddling a document
/// boundary where the shard has one in reach. Throws std::runtime_error for a
/// shard shorter than one row.
std::vector<ProbeRow> pick_probe_rows(const TokenShard& shard, int seq_len, const ProbeSettings& settings);

/// The causality positions of a row: t and t-1 at the document boundary, at
/// window edges (the model's windows and fixed powers of two), and random ones,
/// each in [0, seq_len-2] (a later input token exists), distinct, sorted.
std::vector<int> causality_positions(const ProbeRow& row, int seq_len, const std::vector<int>& windows,
                                     const ProbeSettings& settings);

ProbeResult check_causality(ProbeModel& model, const ProbeRow& row, int row_index, int seq_len,
                            const TokenShard& shard, const ProbeSettings& settings);
ProbeResult check_honest_losses(ProbeModel& model, const ProbeRow& row, int row_index, int seq_len,
                                const ProbeSettings& settings);

/// Every probe on every picked row; the first failure, or ok.
ProbeResult run_integrity_probes(ProbeModel& model, const TokenShard& shard, int seq_len,
                                 const ProbeSettings& settings);

/// The line a trainer prints for a failed probe: "FAIL: tampered: <message>".
std::string tampered_fail_line(const ProbeResult& result);

}  // namespace harness
