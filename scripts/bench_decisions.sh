#!/usr/bin/env bash
# The decision benchmark (CPU only). This first version simulates the keep
# POLICY, not the daemon: tests/daemon/decision_sim plays nights of 300
# candidates (50 % worse by 3σ or more, 35 % no effect, 15 % a 3σ gain) through
# daemon/keep_rule, noise and calibration on 4 simulated boards at 0.95, 0.98,
# 1.00 and 1.03 × speed, with the world the fake trainer's simulation mode
# shares (tests/daemon/fake_board.h): steps = budget × scale × speed / step
# cost, val_bpb = a + b·steps − effect + N(0, 0.0015). It prints the old rule
# (strictly lower than the best run) next to the policy, and ends with one line
# per sign of b:
#   RESULT b=… null_keep_rate=… true_keep_rate=… board_bias=… repeat_share=…
# Targets: null_keep_rate <= 0.03, true_keep_rate >= 0.75, board_bias <= 0.02,
# repeat_share <= 0.25. Rates are over NIGHTS nights (default 200), so that the
# board bias (a difference of two small rates) is measured, not sampled.
#
#   scripts/bench_decisions.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
nights=${NIGHTS:-200}
cmake --build "$build" --target decision_sim >/dev/null
sim="$build/tests/daemon/decision_sim"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# b > 0: the pinned corpus (data-limited: more steps, higher val_bpb); b < 0: a corpus larger than a run can use.
"$sim" --b 1.15e-4 --a 0.642 --nights "$nights" | tee -a "$out"
"$sim" --b -1.15e-4 --a 1.33 --nights "$nights" | tee -a "$out"
grep '^policy ' "$out" | sed -E 's/^policy +/RESULT /; s/ worse_kept=.*//'
