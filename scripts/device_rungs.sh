#!/usr/bin/env bash
# The trainer at two rungs of the default promotion ladder on the GPU machine: rung 0 as
# configured (depth 8) for BUDGET0 seconds and rung 1 (`--depth-scale 2`, twice the depth
# and width) for BUDGET1 seconds, on the pinned corpus; each run's summary block and the
# depth and size it reports.
#   scripts/device_rungs.sh OUTDIR     (the device tool: scripts/device_rungs.sh $OUT)
#   env: BUDGET0 (60), BUDGET1 (120), SEED (42)
# Expects, carried (git-ignored; scripts/device_pack.sh makes them here): .device/ard.tar.xz
# (for its static prepare) and data/corpus/{train,val}.jsonl.xz. Runs in about 8 minutes:
# the trainer's build, the data step, and the two runs with their evaluations.
# OUTDIR gets rungs.log and one file per run: rung0.log, rung1.log (the whole output).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${1:?usage: scripts/device_rungs.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUDGET0=${BUDGET0:-60}
BUDGET1=${BUDGET1:-120}
SEED=${SEED:-42}
export PATH=/usr/local/cuda/bin:$PATH
START=$SECONDS
section() { echo "== $(date -u +%H:%M:%S) +$((SECONDS - START))s $*" | tee -a "$OUT/rungs.log"; }
die() { section "FAILED: $*"; exit 1; }

section "prepare and build"
if [ ! -x .device/ard/prepare ] && [ -f .device/ard.tar.xz ]; then
  tar -C .device -xJf .device/ard.tar.xz || die "cannot unpack .device/ard.tar.xz"
fi
[ -x .device/ard/prepare ] || die ".device/ard/prepare missing: run scripts/device_pack.sh and carry .device/ard.tar.xz"
for f in train val; do
  [ -f "data/corpus/$f.jsonl.xz" ] || die "data/corpus/$f.jsonl.xz missing: carry data/corpus"
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/rungs.log"
cmake -S trainer -B build/trainer -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 &&
  cmake --build build/trainer --target train >> "$OUT/build.log" 2>&1 || die "the trainer's build (build.log)"
.device/ard/prepare --train data/corpus/train.jsonl.xz --val data/corpus/val.jsonl.xz --cache /tmp/ard-rungs-cache \
  > "$OUT/prepare.log" 2>&1 || die "prepare (prepare.log)"
DATA=$(sed -n 's/^data_dir: //p' "$OUT/prepare.log" | tail -1)
[ -n "$DATA" ] || die "prepare printed no data_dir line (prepare.log)"
section "data: $DATA"

run_rung() {  # run_rung NAME BUDGET DEPTH_SCALE
  section "$1: --time-budget $2 --depth-scale $3"
  build/trainer/train --data "$DATA" --time-budget "$2" --depth-scale "$3" --seed "$SEED" > "$OUT/$1.log" 2>&1 ||
    die "$1 failed: $(tail -1 "$OUT/$1.log")"
  sed -n '/^---$/,$p' "$OUT/$1.log" | sed "s/^/$1 /" | tee -a "$OUT/rungs.log"
}
run_rung rung0 "$BUDGET0" 1
run_rung rung1 "$BUDGET1" 2
section "done"
