#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/setup.sh --tests: the
# test-only packages too), builds, runs every test.
#   scripts/test.sh            (build directory: $BUILD_DIR, default build/)
#   scripts/test.sh --cuda     also compile the CUDA trainer and its kernel tests
# Without --cuda the CUDA trainer is compiled only where a GPU is visible
# (nvidia-smi -L), since its tests need one; CI passes --cuda so that it still
# checks that the CUDA code compiles (nvcc from PATH or /usr/local/cuda).
# Ends with the wall time of the whole run.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
cuda=auto
for arg in "$@"; do
  case "$arg" in
    --cuda) cuda=on ;;
    *) echo "scripts/test.sh: unknown argument $arg (usage: scripts/test.sh [--cuda])" >&2; exit 2 ;;
  esac
done
scripts/setup.sh --tests

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
if [ "$cuda" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then cuda=on; else cuda=off; fi
fi
if [ "$cuda" = off ]; then
  echo "test.sh: no GPU visible: the CUDA trainer is not compiled (scripts/test.sh --cuda compiles it)"
fi

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINER_CUDA="$([ "$cuda" = on ] && echo ON || echo OFF)"
cmake --build "$build" -j "$(nproc)"
status=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" || status=$?
echo "test.sh: wall time $((SECONDS - start)) s (CUDA trainer: $cuda, $(nproc) cores)"
exit $status
