#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test.
#   scripts/test.sh            (build directory: build/)
# The CUDA trainer is compiled when nvcc is found (PATH or /usr/local/cuda),
# so CI checks that it builds; its tests that need a GPU run on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
