#!/usr/bin/env bash
# Builds another revision's sm_90a trainer binaries (train, kernels_test and the benchmarks it
# has) into .device/NAME (git-ignored), beside scripts/device_stage.sh's .device/bin, so that one
# device call compares two trees: boards differ by a few percent from call to call, so A/B
# figures come from one call (docs/LOG.md). The revision is checked out in the git worktree
# build-trainer-NAME-src (the same path each time, so that build-trainer-NAME, where it is built,
# can be configured again); .device/NAME/REVISION names the commit.
#   scripts/device_stage_rev.sh REV NAME        e.g. scripts/device_stage_rev.sh main binM
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ]; then echo "usage: scripts/device_stage_rev.sh REV NAME" >&2; exit 2; fi
REV=$1 NAME=$2
case "$NAME" in "" | */* | .*) echo "device_stage_rev: NAME must be a plain folder name, not '$NAME'" >&2; exit 2 ;; esac
SHA=$(git rev-parse --verify --quiet "$REV^{commit}") || { echo "device_stage_rev: no commit '$REV'" >&2; exit 2; }
WT=$PWD/build-trainer-$NAME-src
git worktree remove --force "$WT" >/dev/null 2>&1 || rm -rf "$WT"
git worktree prune
trap 'git worktree remove --force "$WT" >/dev/null 2>&1 || true' EXIT
git worktree add --quiet --detach "$WT" "$SHA"
BUILD=$PWD/build-trainer-$NAME
export PATH=/usr/local/cuda/bin:$PATH
cmake -S "$WT/trainer" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTRAINER_TESTS=ON >/dev/null
targets="train kernels_test"
for b in "$WT"/trainer/tests/*_bench.cu; do [ -e "$b" ] && targets="$targets $(basename "$b" .cu)"; done
cmake --build "$BUILD" -j2 --target $targets
rm -rf ".device/$NAME"
mkdir -p ".device/$NAME"
for t in $targets; do cp "$BUILD/$t" ".device/$NAME/"; done
echo "$SHA" > ".device/$NAME/REVISION"
echo "staged $SHA ($targets) in .device/$NAME"
du -sh .device
