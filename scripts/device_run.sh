#!/usr/bin/env bash
# One call on the GPU machine (the device tool runs it in the repository root):
#   scripts/device_run.sh check    kernel tests, train --check, the RMSNorm-epsilon check,
#                                  prepare, tokenizer check,
#                                  a 20-step run with --dump-init and the PyTorch twin
#   scripts/device_run.sh fixed    prepare, tests, then the fixed-step run (--steps 874;
#                                  PROFILE=1 adds the per-kernel table first)
#   scripts/device_run.sh budget   prepare, tests, then the default 300-second run (PROFILE=1:
#                                  the per-kernel table first)
#   scripts/device_run.sh steps N  prepare, then a run of N steps (throughput)
#   AGAINST=DIR scripts/device_run.sh ab
#                                  a change against DIR's trainer: its tests and --check, both
#                                  attention benchmarks in joules, then PAIRS (default 3) pairs
#                                  of 100-step runs, DIR's first, each judged by its mean step
#                                  time over steps 30-99 (scripts/step_stats.py)
#   scripts/device_run.sh power    tests, then 150 steps with the SM clock and board power
#                                  sampled and the throttle reasons read 35 s in: the step
#                                  time at the power limit, where training runs (docs/LOG.md run 31);
#                                  AGAINST=DIR adds DIR's train, then the first again (A, B, A)
#   scripts/device_run.sh survey   tests and --check, the attention benchmark, a 30-step run
#                                  with the default evaluation (lines time-stamped: start-up and
#                                  evaluation time), the per-kernel table of one step (ncu and
#                                  scripts/kernel_table.py), and the PyTorch twin over 20 steps (TWIN_STEPS)
# Expects, carried in .device/ (git-ignored): bin/{train,kernels_test,optim_test} built here
# for sm_90 (scripts/device_stage.sh), the static prepare, corpus/{train,val}.jsonl.xz.
# Falls back to building the trainer there when the carried binaries do not start.
# Logs go to $OUT (they come back with the call).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/device_out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
MODE=${1:-check}
BIN=.device/bin
section() { echo "== $(date -u +%H:%M:%S) $*"; }

section "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
if ! "$BIN/train" --help >/dev/null 2>&1; then
  section "carried train does not start here; building"
  cmake -S trainer -B /tmp/bt -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTRAINER_TESTS=ON >/dev/null &&
    cmake --build /tmp/bt -j16 --target train kernels_test || exit 1
  BIN=/tmp/bt
fi

# The first of .device/bin, .device/bin2, .device/bin1 whose kernel tests and --check pass
# (bin: the newest build; bin1: the last one validated on the device).
# BIN_DIRS narrows the list (BIN_DIRS=.device/bin: the new build or nothing).
choose_binaries() {
  local chosen=""
  for dir in ${BIN_DIRS:-.device/bin .device/bin2 .device/bin1}; do
    [ -x "$dir/train" ] || continue
    section "kernel tests and --check of $dir"
    if timeout 120 "$dir/kernels_test" > "$OUT/kernels_test.log" 2>&1 && timeout 120 "$dir/train" --check > "$OUT/check.log" 2>&1; then
      echo "pass: using $dir"; BIN=$dir; chosen=$dir; grep -E "attention bf16 d|matmul_add bf16" "$OUT/kernels_test.log" | head -12; break
    fi
    grep -E "FAILED|WRONG|FAIL" "$OUT/kernels_test.log" "$OUT/check.log" | head -16
  done
  [ -n "$chosen" ] || { section "no binaries pass their tests"; exit 1; }
  timeout 120 "$BIN/kernels_test" --bench 2>&1 | tail -2
}

# The tokenizer check, then a 20-step --dump-init run replayed by the PyTorch twin, in
# whatever remains of a call of LIMIT seconds (default 590).
twin_and_tokenizer() {
  local left=$(( ${LIMIT:-590} - SECONDS ))
  if [ -f tests/tiktoken_check.py ] && [ $left -gt 30 ]; then
    section "tokenizer check"
    timeout 25 python3 tests/tiktoken_check.py --data "$DATA" --val .device/corpus/val.jsonl.xz 2>&1 | tail -6
  fi
  left=$(( ${LIMIT:-590} - SECONDS ))
  if [ -f tests/torch_twin.py ] && [ $left -gt 60 ]; then
    section "20 steps with --dump-init, then the PyTorch twin (${left}s left)"
    "$BIN/train" --data "$DATA" --steps ${TWIN_STEPS:-20} --dump-init /tmp/dump --eval-tokens 262144 > "$OUT/twin_train.log" 2>&1
    echo "train rc=$?"; grep -E "^step" "$OUT/twin_train.log" | cut -c1-60
    left=$(( ${LIMIT:-590} - SECONDS - 5 ))
    timeout $left python3 tests/torch_twin.py --dump /tmp/dump 2>&1 | tee "$OUT/twin.log" | tail -30
    echo "twin rc=${PIPESTATUS[0]}"
  fi
}

# Prefixes every line with the seconds since the pipe opened.
stamp_lines() { python3 -c 'import sys, time
t = time.time()
for line in sys.stdin: print(f"{time.time() - t:8.2f} {line}", end="", flush=True)'; }

optim_tests() {
  if [ -x "$BIN/optim_test" ]; then
    section "optimizer tests"; "$BIN/optim_test" > "$OUT/optim_test.log" 2>&1; echo "optim_test rc=$?"
    grep -E "FAIL|adamw bf16" "$OUT/optim_test.log" | head -12; tail -2 "$OUT/optim_test.log"
  fi
}

# One step's kernels, timed one by one by Nsight Compute (a 3-step run, one small evaluation batch).
kernel_profile() {
  section "per-kernel table of one step (ncu)"
  timeout ${PROFILE_LIMIT:-200} ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    --log-file "$OUT/ncu.csv" "$BIN/train" --data "$DATA" --steps 3 --eval-tokens 262144 > "$OUT/ncu_train.log" 2>&1
  echo "ncu rc=$?"; tail -3 "$OUT/ncu_train.log"
  python3 scripts/kernel_table.py "$OUT/ncu.csv" --order "$OUT/kernels_in_order.txt" --top 45
}

# 150 steps of $1/train with the SM clock and board power sampled every second (run $2 of a call).
power_run() {
  section "$1/train --steps 150 (SM clock and power sampled every second)"
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 1000 > "$OUT/smi$2.log" 2>&1 &
  local smi=$!
  "$1/train" --data "$DATA" --steps 150 --eval-tokens 262144 > "$OUT/power$2.log" 2>&1; echo "train rc=$?"
  kill $smi 2>/dev/null
  python3 scripts/power_summary.py "$OUT/power$2.log" "$OUT/smi$2.log"
  grep -E "mfu_percent" "$OUT/power$2.log"
}

prepare_data() {
  section "prepare"
  local t0=$SECONDS
  .device/prepare --train .device/corpus/train.jsonl.xz --val .device/corpus/val.jsonl.xz \
    --cache /tmp/cache --threads 16 > "$OUT/prepare.log" 2>&1 || { tail -5 "$OUT/prepare.log"; exit 1; }
  tail -3 "$OUT/prepare.log"
  DATA=$(tail -1 "$OUT/prepare.log" | sed 's/^data_dir: //')
  echo "prepare took $((SECONDS - t0)) s; data: $DATA"
}

case "$MODE" in
  check)
    section "kernel tests"
    "$BIN/kernels_test" 2>&1 | tee "$OUT/kernels_test.log" | tail -40
    if [ -x "$BIN/optim_test" ]; then section "optimizer tests"; "$BIN/optim_test" 2>&1 | tee "$OUT/optim_test.log" | tail -20; fi
    section "train --check"
    "$BIN/train" --check > "$OUT/check.log" 2>&1; echo "check rc=$?"; tail -30 "$OUT/check.log"
    section "which RMSNorm epsilon PyTorch adds to bf16 inputs (the trainer uses fp32's)"
    timeout 120 python3 tests/rmsnorm_eps_check.py 2>&1 | tail -3
    prepare_data
    if [ -f tests/tiktoken_check.py ]; then
      section "tokenizer check"
      timeout 120 python3 tests/tiktoken_check.py --data "$DATA" --val .device/corpus/val.jsonl.xz 2>&1 | tail -10
    fi
    section "20 steps with --dump-init"
    "$BIN/train" --data "$DATA" --steps 20 --dump-init /tmp/dump > "$OUT/twin_train.log" 2>&1
    echo "train rc=$?"; tail -36 "$OUT/twin_train.log"
    section "memcheck of the kernel tests"
    timeout 120 compute-sanitizer --tool memcheck "$BIN/kernels_test" 2>&1 | tail -8
    if [ -f tests/torch_twin.py ]; then
      section "PyTorch twin"
      timeout 240 python3 tests/torch_twin.py --dump /tmp/dump 2>&1 | tee "$OUT/twin.log" | tail -40
    fi
    ;;
  smoke)  # new kernels if their tests pass (else the last validated set in .device/bin1)
    prepare_data
    section "kernel tests of .device/bin"
    if "$BIN/kernels_test" > "$OUT/kernels_test.log" 2>&1; then echo "new kernels pass"; else
      tail -20 "$OUT/kernels_test.log"; echo "new kernels FAIL: using .device/bin1"; BIN=.device/bin1; fi
    "$BIN/train" --check > "$OUT/check.log" 2>&1; echo "check rc=$?"; tail -2 "$OUT/check.log"
    if [ -f tests/tiktoken_check.py ]; then
      section "tokenizer check"
      timeout 120 python3 tests/tiktoken_check.py --data "$DATA" --val .device/corpus/val.jsonl.xz 2>&1 | tail -10
    fi
    section "20 steps with --dump-init ($BIN)"
    "$BIN/train" --data "$DATA" --steps 20 --dump-init /tmp/dump > "$OUT/twin_train.log" 2>&1
    echo "train rc=$?"; tail -36 "$OUT/twin_train.log"; cp /tmp/dump/manifest.json "$OUT/" 2>/dev/null
    if [ -f tests/torch_twin.py ]; then
      section "PyTorch twin"
      timeout 240 python3 tests/torch_twin.py --dump /tmp/dump 2>&1 | tee "$OUT/twin.log" | tail -40
    fi
    if [ "$BIN" != .device/bin1 ]; then
      section "20 steps with .device/bin1 (comparison)"
      .device/bin1/train --data "$DATA" --steps 20 --eval-tokens 262144 > "$OUT/bin1.log" 2>&1
      echo "train rc=$?"; grep -E "^step 000(0|1)" "$OUT/bin1.log" | tail -12; tail -12 "$OUT/bin1.log"
    fi
    ;;
  twin)  # the tokenizer check and the PyTorch twin only (binaries validated by an earlier call)
    prepare_data
    twin_and_tokenizer
    ;;
  fixed)
    prepare_data
    choose_binaries
    optim_tests
    [ -n "${PROFILE:-}" ] && kernel_profile
    section "$BIN/train --steps 874 ${EVAL_ARGS:-}"
    "$BIN/train" --data "$DATA" --steps 874 ${EVAL_ARGS:-} > "$OUT/fixed.log" 2>&1; echo "train rc=$?"
    head -1 "$OUT/fixed.log"; grep -E "^step 0000[0-9]|^step 0001[0-5]" "$OUT/fixed.log" | cut -c1-150; tail -16 "$OUT/fixed.log"
    python3 scripts/step_stats.py "$OUT/fixed.log" --from 11
    twin_and_tokenizer
    ;;
  budget)
    prepare_data
    choose_binaries
    optim_tests
    [ -n "${PROFILE:-}" ] && kernel_profile
    section "$BIN/train (default 300 s budget) ${EVAL_ARGS:-}"
    "$BIN/train" --data "$DATA" ${EVAL_ARGS:-} > "$OUT/budget.log" 2>&1; echo "train rc=$?"
    head -1 "$OUT/budget.log"; grep -E "^step 0000[0-9]|^step 0001[0-5]" "$OUT/budget.log" | cut -c1-150; tail -17 "$OUT/budget.log"
    python3 scripts/step_stats.py "$OUT/budget.log" --from 11
    twin_and_tokenizer
    ;;
  steps)
    prepare_data
    section "train --steps ${2:-30}"
    "$BIN/train" --data "$DATA" --steps "${2:-30}" > "$OUT/steps.log" 2>&1; echo "train rc=$?"
    tail -30 "$OUT/steps.log"
    ;;
  power)
    choose_binaries
    prepare_data
    ( sleep 35; nvidia-smi -q -d PERFORMANCE > "$OUT/perf.txt" 2>&1 ) &
    power_run "$BIN" 1
    grep -E "SW Power Cap |HW Slowdown|Thermal Slowdown" "$OUT/perf.txt" | sed 's/  */ /g' | head -4
    if [ -n "${AGAINST:-}" ]; then  # A, B, A: the clock drifts as the board warms
      power_run "$AGAINST" 2
      power_run "$BIN" 3
    fi
    ;;
  ab)  # A = $AGAINST, B = $BIN (the change)
    [ -d "${AGAINST:-}" ] || { echo "ab: AGAINST must name the directory of the trainer to compare against"; exit 2; }
    choose_binaries
    prepare_data
    for side in "A $AGAINST" "B $BIN"; do
      set -- $side
      section "attention in joules, $1: $2"
      timeout 120 "$2/kernels_test" --bench-attention > "$OUT/bench_attention_$1.log" 2>&1
      echo "rc=$?"; grep -E "^energy attention" "$OUT/bench_attention_$1.log"
    done
    for pair in $(seq "${PAIRS:-3}"); do
      for side in "A $AGAINST" "B $BIN"; do
        set -- $side
        section "pair $pair, $1: $2/train --steps 100"
        timeout 90 "$2/train" --data "$DATA" --steps 100 --eval-tokens 1048576 > "$OUT/ab_$pair$1.log" 2>&1
        echo "train rc=$?"; python3 scripts/step_stats.py "$OUT/ab_$pair$1.log" --from 30
      done
    done
    ;;
  survey)
    choose_binaries
    optim_tests
    prepare_data
    section "train --steps 30, default evaluation (seconds since launch on each line; SM clock and power sampled)"
    nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 500 > "$OUT/smi.log" 2>&1 &
    SMI=$!
    "$BIN/train" --data "$DATA" --steps 30 2>&1 | stamp_lines > "$OUT/steps30.log"; echo "train rc=${PIPESTATUS[0]}"
    kill $SMI 2>/dev/null
    sort "$OUT/smi.log" | uniq -c | sort -rn | head -6
    grep -E "model:|step 0000[0-2]|step 000(1[0-2]|2[7-9])" "$OUT/steps30.log" | cut -c1-150; tail -11 "$OUT/steps30.log"
    kernel_profile
    twin_and_tokenizer
    ;;
  *) echo "unknown mode $MODE"; exit 2 ;;
esac
section "done"
