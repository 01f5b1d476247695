#!/usr/bin/env bash
# Benchmarks of the trainer's harness (figures for docs/harness.md; not a test):
#   scripts/bench_harness.sh [TRAIN] [VAL]
# 1. prepare's wall time on the inputs (default: the pinned corpus), into a
#    fresh cache directory, so nothing is reused;
# 2. harness_bench on the result: the loader's packed tokens/s on one producer
#    thread, and single-thread encode throughput on the validation file.
# Builds into build-harness/ (-j2). Prints the machine's load before and after:
# the machine is shared, so note it with the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
train=${1:-../shared/corpus/train.jsonl.xz}
val=${2:-../shared/corpus/val.jsonl.xz}
[ -f "$train" ] || train=/work/shared/corpus/train.jsonl.xz
[ -f "$val" ] || val=/work/shared/corpus/val.jsonl.xz
build=build-harness
cmake -S trainer -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target prepare harness_bench >/dev/null

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  cores: $(nproc)  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
TIMEFORMAT='prepare: %R s wall, %U s user + %S s system CPU'
time "$build/harness/prepare" --train "$train" --val "$val" --cache "$cache" | tee "$cache/prepare.log"
echo "load after prepare: $(cut -d' ' -f1-3 /proc/loadavg)"
data=$(tail -n 1 "$cache/prepare.log" | sed 's/^data_dir: //')
"$build/harness/harness_bench" --data "$data" --text "$val" --seconds 5
echo "load after bench: $(cut -d' ' -f1-3 /proc/loadavg)"
