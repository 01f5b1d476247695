#!/usr/bin/env bash
# The decision benchmark (CPU only): the real daemon (autoresearchd, its
# engine and keep rule) drives the fake trainer on 4 fake GPUs at 0.95, 0.98,
# 1.00 and 1.03 x speed. The fake trainer's simulation mode
# (daemon/sim_board.h) takes steps = budget x scale x speed / step cost
# and reports val_bpb = a + b*steps - true effect + N(0, 0.0015). A scripted
# proposer (scripts/bench_night.py) gives 300 candidates, a night's mix drawn
# by decision_sim from a seed: 50 % worse by 3 to 6 sigma, 35 % no effect, 15 %
# a 3 sigma gain, each an edit of its own line, so kept effects add up.
#
# For each sign of b (b > 0: the pinned corpus, data-limited; b < 0: a corpus
# larger than a run can use) it runs NIGHTS nights (default 1) with the keep
# rule and one with the old rule (strictly lower than the best, no rounds, no
# confirmations, no calibration), prints each night's figures, and ends with
# one line per sign of b, over the nights with the keep rule:
#   RESULT b=... null_keep_rate=... true_keep_rate=... board_bias=... repeat_share=...
# Targets: null_keep_rate <= 0.03, true_keep_rate >= 0.75, board_bias <= 0.02,
# repeat_share <= 0.25. board_bias is the difference of two small rates over
# ~26 no-effect candidates per board and night: one night measures it to a few
# hundredths only, so use several nights (NIGHTS=4) to pin it down. SIM=1 adds
# the policy simulation (decision_sim, 200 nights) as a cross-check.
#
# Then the common case: one GPU (one fake board at 1.00 x speed), b > 0, the
# same mix, GPU1_NIGHTS nights (default 8: 336 no-effect candidates, so one keep moves the rate by 0.003; about 12 minutes) of GPU1_COUNT candidates (default
# 120), the keep rule as a user gets it (confirmations and noise rounds on),
# and a third RESULT line (board bias has no meaning on one board):
#   RESULT gpus=1 b=... null_keep_rate=... true_keep_rate=... repeat_share=...
# ONLY_GPUS=1 runs only those nights; ONLY_GPUS=4 only the 4-board ones.
# Each run's noise comes from the night's seed and a count of its runs (bench_night.py), so a
# night on one GPU, whose runs come in one order, decides the same each time: two trees are
# compared night by night on the same seeds. On 4 boards the order follows the timing.
#
#   scripts/bench_decisions.sh [BUILD_DIR]     (default: build)
#   env: NIGHTS (1), COUNT (300), GPU1_NIGHTS (8), GPU1_COUNT (120), ONLY_GPUS, SECONDS_PER_RUN (0.5: the GPUs, not the 2 cores, bound a night), SEED (1), OLD_RULE (1), SIM (0),
#        KEEP_WORK (set: keep the nights' repos and results.db for a look)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}
nights=${NIGHTS:-1}
count=${COUNT:-300}
per_run=${SECONDS_PER_RUN:-0.5}
seed0=${SEED:-1}
cmake --build "$build" --target autoresearchd fake_trainer decision_sim -- -j2 >/dev/null
daemon=$root/$build/daemon/autoresearchd
fake=$root/$build/tests/daemon/fake_trainer
sim=$root/$build/tests/daemon/decision_sim
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "bench_decisions: the nights' repos are in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# run_night LABEL B A RULE SEED [GPUS [COUNT]]: one night; prints its figures line.
run_night() {
  local label=$1 b=$2 a=$3 rule=$4 seed=$5 gpus=${6:-4} count=${7:-$count}
  local dir=$work/$label$b-$seed repo
  repo=$dir/research
  mkdir -p "$dir"
  "$sim" --b "$b" --a "$a" --nights 1 --count "$count" --seed "$seed" --candidates-out "$dir/candidates.tsv" >/dev/null
  python3 scripts/bench_night.py setup "$repo" "$dir/candidates.tsv" --a="$a" --b="$b" --fake "$fake" \
    --rule "$rule" --seconds "$per_run" --seed "$seed" --gpus "$gpus"
  (cd "$repo" && git init -q && git add -A && git -c user.name=bench -c user.email=bench@localhost commit -qm base)
  (cd "$repo" && exec "$daemon" start) >"$dir/daemon.out" 2>&1 &
  pid=$!
  local db=$repo/.autoresearchd/results.db done=0 t0=$SECONDS
  while [ "$done" -lt "$count" ]; do
    sleep 2
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "bench_decisions: the daemon stopped early; its log:" >&2
      tail -20 "$repo/.autoresearchd/daemon.log" >&2 || cat "$dir/daemon.out" >&2
      exit 1
    fi
    [ -f "$db" ] || continue
    done=$(sqlite3 "$db" "SELECT count(*) FROM experiments WHERE is_baseline=0 AND state IN
      ('kept','discarded','crash','timeout','build_fail','tampered','patch_rejected','proposer_error','conflict')" 2>/dev/null || echo 0)
  done
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  python3 scripts/bench_night.py figures "$db" "$label b=$b seed=$seed ($((SECONDS - t0)) s)"
  local conflicts
  conflicts=$(sqlite3 "$db" "SELECT count(*) FROM experiments WHERE state NOT IN ('kept','discarded') AND is_baseline=0")
  [ "$conflicts" = 0 ] || echo "  ($conflicts candidates ended otherwise than kept or discarded)"
}

out=$work/figures
for sign in + -; do
  [ "${ONLY_GPUS:-4}" = 4 ] || break
  if [ "$sign" = + ]; then b=1.15e-4; a=0.642; else b=-1.15e-4; a=1.33; fi
  [ "${ONLY_B:-$sign}" = "$sign" ] || continue
  if [ "${OLD_RULE:-1}" = 1 ]; then run_night old_rule "$b" "$a" old "$seed0" | tee -a "$out"; fi
  [ "${ONLY_B:-$sign}" = "$sign" ] || continue
  for ((n = 0; n < nights; n++)); do run_night keep_rule "$b" "$a" new $((seed0 + n)) | tee -a "$out"; done
  if [ "${SIM:-0}" = 1 ]; then "$sim" --b "$b" --a "$a" --nights 200 | grep -E '^(old_rule|policy) ' | sed 's/^/simulated /'; fi
done

if [ "${ONLY_GPUS:-1}" = 1 ]; then
  for ((n = 0; n < ${GPU1_NIGHTS:-8}; n++)); do
    run_night keep_rule_1gpu 1.15e-4 0.642 new $((seed0 + n)) 1 "${GPU1_COUNT:-120}" | tee -a "$out"
  done
fi

# One RESULT line per sign of b: the keep rule's nights pooled (counts summed);
# then one for one GPU.
python3 - "$out" <<'PY'
import re, sys
acc = {}
for line in open(sys.argv[1]):
    if not line.startswith(("keep_rule ", "keep_rule_1gpu ")):
        continue
    b = re.search(r" b=(\S+)", line).group(1)
    if line.startswith("keep_rule_1gpu "):
        b = "gpus=1 " + b
    a = acc.setdefault(b, {"null": [0, 0], "gain": [0, 0], "board": {}, "share": []})
    for kind in ("null", "gain"):
        k, n = map(int, re.search(kind + r"=(\d+)/(\d+)", line).groups())
        a[kind][0] += k; a[kind][1] += n
    for g, k, n in re.findall(r"(\d+):(\d+)/(\d+)", line.split("null_by_board=")[1]):
        t = a["board"].setdefault(g, [0, 0]); t[0] += int(k); t[1] += int(n)
    a["share"].append(float(re.search(r"repeat_share=(\S+)", line).group(1)))
rate = lambda t: t[0] / t[1] if t[1] else 0.0
for b, a in sorted(acc.items(), key=lambda kv: kv[0].startswith("gpus=1")):
    share = sum(a["share"]) / len(a["share"])
    nights = f"  ({len(a['share'])} nights, {a['null'][1]} no-effect and {a['gain'][1]} gain candidates)"
    if b.startswith("gpus=1 "):
        print(nights.strip())
        print(f"RESULT gpus=1 b={b.split()[1]} null_keep_rate={rate(a['null']):.4f} "
              f"true_keep_rate={rate(a['gain']):.4f} repeat_share={share:.4f}")
        continue
    bias = abs(rate(a["board"].get("3", [0, 0])) - rate(a["board"].get("0", [0, 0])))
    print(nights.strip())
    print(f"RESULT b={b} null_keep_rate={rate(a['null']):.4f} true_keep_rate={rate(a['gain']):.4f} "
          f"board_bias={bias:.4f} repeat_share={share:.4f}")
PY
