// A promotion round's rows, written as the engine writes them, for the tests
// of what status, show and the dashboard print of the ladder: a tag with a
// baseline and three kept changes, their runs at rung 1 and the labels a
// bisection gave them (decide/promotion.h): the first transfers, the second
// is scale-bound, the third untested.
#pragma once

#include <string>
#include <vector>

#include "daemon/decide/promotion.h"
#include "daemon/store/store.h"

namespace ard::testing {

/// The rows add_ladder_rows wrote: the experiments and the runs at rung 1.
struct LadderRows {
  int64_t base = 0, lower_lr = 0, discarded = 0, wider = 0, deeper = 0;
  std::vector<int64_t> base_runs, lower_lr_runs, wider_runs, deeper_runs;  ///< their trials at rung 1
  RungEvidence lower_lr_evidence, wider_evidence;
};

inline const std::string kLadderBase = "a000000000000000000000000000000000000000";
inline const std::string kLadderLowerLr = "a100000000000000000000000000000000000000";
inline const std::string kLadderWider = "a200000000000000000000000000000000000000";
inline const std::string kLadderDeeper = "a300000000000000000000000000000000000000";

/// Fills tag: #base (kept baseline, one 300 s run at rung 0), lower lr (kept),
/// a discarded change, wider (kept), deeper (kept); at rung 1 two 600 s runs
/// each of the base and the three kept commits, every pair 0.002 apart (σ at
/// rung 1 = 0.001414 on df 4); labels at rung 1: lower lr transfers, wider
/// scale_bound, deeper untested. GPU time at rungs above 0: 4800 s of 5500 s
/// (the rung-0 runs: 300 s and 4 × 100 s), 87.3 %.
inline LadderRows add_ladder_rows(Store& store, const std::string& tag) {
  LadderRows rows;
  store.add_run(tag, "autoresearch/" + tag, kLadderBase);
  store.put_program("ladder", "# program\n");
  auto experiment = [&](bool baseline, const std::string& commit, const std::string& what, const char* state,
                        double value, double seconds) {
    const int64_t id = store.create_experiment(tag, baseline, kLadderBase, "ladder", "scripted", std::nullopt);
    store.set_proposal(id, what);
    store.set_commit(id, commit, baseline ? "" : "+" + what + "\n");
    store.set_metrics(id, {value, 1024.0, seconds, "{}"});
    const int64_t trial = store.begin_trial(id, tag, "0", baseline ? "baseline" : "candidate", commit);
    store.end_trial(trial, "ok", seconds, value, "{}");
    store.finish(id, state, "", "");
    return id;
  };
  rows.base = experiment(true, kLadderBase, "baseline", status::kKept, 1.0, 300);
  rows.lower_lr = experiment(false, kLadderLowerLr, "lower lr", status::kKept, 0.99, 100);
  rows.discarded = experiment(false, std::string(40, 'b'), "no help", status::kDiscarded, 1.01, 100);
  rows.wider = experiment(false, kLadderWider, "wider mlp", status::kKept, 0.98, 100);
  rows.deeper = experiment(false, kLadderDeeper, "deeper", status::kKept, 0.97, 100);

  auto at_rung_1 = [&](int64_t id, const std::string& commit, double first, std::vector<int64_t>& trials) {
    for (double value : {first, first + 0.002}) {
      const int64_t trial = store.begin_trial(id, tag, "0", "promote", commit, 1, 0, 1);
      store.end_trial(trial, "ok", 600, value, "{}");
      trials.push_back(trial);
    }
  };
  at_rung_1(rows.base, kLadderBase, 0.950, rows.base_runs);
  at_rung_1(rows.deeper, kLadderDeeper, 0.951, rows.deeper_runs);
  at_rung_1(rows.lower_lr, kLadderLowerLr, 0.940, rows.lower_lr_runs);
  at_rung_1(rows.wider, kLadderWider, 0.949, rows.wider_runs);

  auto with = [](std::vector<int64_t> a, const std::vector<int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // λ = (Δ·g − g²/2)/(σ²·(1/2+1/2)) = (0.010·0.012 − 0.000072)/0.001414² = 24.01, as the transfer rule stores it
  rows.lower_lr_evidence = {0.951, 0.941, 2, 2, 0.001414, 0.010, with(rows.base_runs, rows.lower_lr_runs), 0.012, 24.01};
  rows.wider_evidence = {0.951, 0.950, 2, 2, 0.001414, 0.001, with(rows.base_runs, rows.wider_runs)};
  store.add_change_label({0, rows.lower_lr, 1, "transfers", evidence_json(rows.lower_lr_evidence), 1000});
  store.add_change_label({0, rows.wider, 1, "scale_bound", evidence_json(rows.wider_evidence), 1000});
  store.add_change_label({0, rows.deeper, 1, "untested", "{}", 1000});
  return rows;
}

}  // namespace ard::testing
