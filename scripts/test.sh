#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/setup.sh --tests: the
# test-only packages too), builds, runs every test.
#   scripts/test.sh            (build directory: $BUILD_DIR, default build-tests/)
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

# A build of its own, not start.sh's build/ (RelWithDebInfo), so that neither
# reconfigures the other. Compiled at -O1 without debug info: the tests' C++
# (gtest, gmock, Boost, JSON) is template-heavy, and -O2 -g took 4x as long to
# compile (tests/daemon/e2e_test.cc: 79 s against 18 s on this 2-core machine),
# which was most of the suite's wall time; what the tests run is I/O-bound.
# The CUDA trainer keeps its own flags.
build=${BUILD_DIR:-build-tests}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DTRAINER_CUDA="$([ "$cuda" = on ] && echo ON || echo OFF)"
cmake --build "$build" -j "$(nproc)"
status=0
# Twice as many tests at once as cores: most of them wait on child processes, loopback servers
# and a Slurm cluster, not on a core (on 2 cores, 279 s at -j2 and 227 s at -j4).
ctest --test-dir "$build" --output-on-failure -j "$(( $(nproc) * 2 ))" || status=$?
echo "test.sh: wall time $((SECONDS - start)) s (CUDA trainer: $cuda, $(nproc) cores)"
exit $status
