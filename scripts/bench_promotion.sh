#!/usr/bin/env bash
# The promotion benchmark (CPU only; a benchmark, not a test: CI does not run
# it): does promotion to a larger scale tell the kept changes that transfer
# from those that only help at the small scale, at what GPU cost, and how much
# of the gain that transfers does the final stack hold at the larger scale?
#
# The real daemon (autoresearchd, its engine, keep rule and promotion rounds)
# drives the fake trainer in its simulation mode (daemon/sim_trainer.h) on 4
# fake GPUs at 0.95, 0.98, 1.00 and 1.03 x speed, the keep rule as a user gets
# it (confirmations and noise rounds on), the default ladder (rung 1 "2x":
# depth_scale 2, twice rung 0's budget; the stage passes --budget {budget} and
# --depth-scale {depth_scale}, so a rung-1 run sees each candidate's scaled
# effect) and the default [promote] (every 5 kept changes, max_share 0.25,
# on_fail "label", or ON_FAIL=revert). noise σ = 0.0015. A scripted proposer gives COUNT
# candidates a night (scripts/bench_promotion.py candidates, from the night's
# seed), each an edit of its own line `effect X scaled Y` (X at rung 0, Y at
# rung 1), so kept effects add up at both rungs:
#   60 %  gains that transfer: X = 3σ (the decision benchmark's gain), Y = X × U(0.8, 1.2)
#   25 %  scale-bound gains: X = 3σ, Y = 0 (half of them) or −0.5 X (the other half)
#   15 %  as in the decision benchmark: worse by 3σ to 6σ (9 %) or no effect (6 %), Y = X
# A night ends once every candidate is decided and the GPUs fall idle: no run
# in flight at any rung and no promotion round open (at most SETTLE_S more
# seconds). Once the script is used up the proposer waits, so when nothing is
# left at rung 0 the idle GPUs promote what was kept (a round is due with one
# kept change, as for any user whose proposer waits).
#
# Figures (bench_promotion.py figures), for each night, then pooled over the
# nights (counts and seconds summed) in the last line:
#   RESULT label_accuracy=... false_transfer_rate=... promotion_share=... stack_gain_ratio=...
# - label_accuracy: among the kept changes (kept experiments but the
#   baseline), the share whose label at rung 1 (the latest in change_labels, as
#   Store::current_change_labels; none is untested) is the truth: transfers
#   when the rung-1 effect is a real gain (> 0 and > 0.3 × its rung-0 gain),
#   else scale_bound. untested counts as wrong; coverage (printed beside it) is
#   the share of kept changes labelled other than untested.
# - false_transfer_rate: among the kept changes whose truth is scale-bound, the
#   share labelled transfers.
# - promotion_share: the GPU time (training_seconds, else wall) of the trials
#   at rungs above 0 over all trials' time.
# - stack_gain_ratio: the final stack's true gain at rung 1 (the rung-1 effects
#   in trainer/train.cu at the tip of autoresearch/bench: every kept change of
#   the final chain, worse or neutral ones with their own) over the sum of the
#   rung-1 gains of the kept changes whose truth is transfers. Under
#   on_fail "label" the chain keeps every kept change, labelled or not, so
#   this figure moves with the keep rule alone; ON_FAIL=revert lets the
#   labels act on it.
# Targets: label_accuracy >= 0.90, false_transfer_rate <= 0.05,
# promotion_share <= 0.25, stack_gain_ratio >= 0.80.
#
# PROMOTE=0: today's behaviour, no promotion ([promote] max_share = 0: no
# round is ever due; on a tree that refuses 0, every = 1000000): every kept
# change is implicitly trusted, so it counts as labelled transfers (the night
# lines say the labels are implicit), and promotion_share is 0.
#
#   scripts/bench_promotion.sh [BUILD_DIR]     (default: build)
#   env: NIGHTS (4), COUNT (100), SEED (1), PROMOTE (1; 0: no promotion),
#        SECONDS_PER_RUN (0.5: the GPUs, not the 2 cores, bound a night),
#        ON_FAIL (label: the default; revert), MAX_SHARE (promote.max_share; the default 0.25 when unset),
#        SETTLE_S (60), KEEP_WORK (set: keep the nights' repos and results.db for a look)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}
nights=${NIGHTS:-4}
count=${COUNT:-100}
per_run=${SECONDS_PER_RUN:-0.5}
seed0=${SEED:-1}
promote=${PROMOTE:-1}
settle=${SETTLE_S:-60}
cmake --build "$build" --target autoresearchd fake_trainer -- -j1 >/dev/null
daemon=$root/$build/daemon/autoresearchd
fake=$root/$build/tests/daemon/fake_trainer
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "bench_promotion: the nights' repos are in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

if [ "$promote" = 0 ]; then mode=(--promote off); figures=(--implicit); label=no_promotion
else mode=(--promote on --on-fail "${ON_FAIL:-label}" ${MAX_SHARE:+--max-share "$MAX_SHARE"}); figures=(); label=promotion; fi
b=1.15e-4 a=0.642  # the pinned corpus (data-limited), as bench_decisions' first sign of b

# A tree whose config refuses promote.max_share = 0 gets every = 1000000 instead (no round is due either).
if [ "$promote" = 0 ]; then
  probe=$work/probe
  mkdir -p "$probe"
  printf 'tag = "probe"\n[promote]\nmax_share = 0\n' >"$probe/autoresearch.toml"
  git -C "$probe" init -q
  refusal=$(cd "$probe" && { "$daemon" status 2>&1 || true; })
  case $refusal in *promote.max_share*) mode+=(--no-round-by-every) ;; esac
fi

# sql DB QUERY: one value (0 while the store is not there yet or busy).
sql() { sqlite3 "$1" "$2" 2>/dev/null || echo 0; }

# run_night SEED: one night; prints its figures line.
run_night() {
  local seed=$1 dir=$work/night-$1 repo
  repo=$dir/research
  mkdir -p "$dir"
  python3 scripts/bench_promotion.py candidates "$dir/candidates.tsv" --count "$count" --seed "$seed"
  python3 scripts/bench_night.py setup "$repo" "$dir/candidates.tsv" --a="$a" --b="$b" --fake "$fake" \
    --rule new --seconds "$per_run" --seed "$seed" --gpus 4 "${mode[@]}"
  (cd "$repo" && git init -q && git add -A && git -c user.name=bench -c user.email=bench@localhost commit -qm base)
  (cd "$repo" && exec "$daemon" start) >"$dir/daemon.out" 2>&1 &
  pid=$!
  local db=$repo/.autoresearchd/results.db done=0 t0=$SECONDS t1=$SECONDS busy=1 last_busy=1 now_busy
  while [ "$done" -lt "$count" ] || { [ "$busy" != 0 ] && [ $((SECONDS - t1)) -lt "$settle" ]; }; do
    sleep 2
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "bench_promotion: the daemon stopped early; its log:" >&2
      tail -20 "$repo/.autoresearchd/daemon.log" >&2 2>/dev/null || cat "$dir/daemon.out" >&2
      exit 1
    fi
    [ -f "$db" ] || continue
    if [ "$done" -lt "$count" ]; then
      done=$(sql "$db" "SELECT count(*) FROM experiments WHERE is_baseline=0 AND state IN
        ('kept','discarded','crash','timeout','build_fail','tampered','patch_rejected','proposer_error','conflict')")
      t1=$SECONDS
    fi
    # Idle: no run in flight at any rung and no round open, at two looks in a row (a round
    # starts within a moment of the last run's end).
    now_busy=$(sql "$db" "SELECT (SELECT count(*) FROM trials WHERE ended_at IS NULL) +
      (SELECT count(*) FROM promotion_rounds WHERE started_at IS NOT NULL AND ended_at IS NULL)")
    if [ "$now_busy" = 0 ] && [ "$last_busy" = 0 ]; then busy=0; else busy=1; fi
    last_busy=$now_busy
  done
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  python3 scripts/bench_promotion.py figures "$db" "$label seed=$seed ($((SECONDS - t0)) s)" "${figures[@]}"
  local unscored
  unscored=$(sqlite3 "$db" "SELECT count(*) FROM experiments WHERE state NOT IN ('kept','discarded') AND is_baseline=0")
  [ "$unscored" = 0 ] || echo "  ($unscored candidates ended otherwise than kept or discarded)"
}

out=$work/figures
for ((n = 0; n < nights; n++)); do run_night $((seed0 + n)) | tee -a "$out"; done
python3 scripts/bench_promotion.py result "$out"
