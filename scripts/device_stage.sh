#!/usr/bin/env bash
# Fills .device/ (git-ignored) with what scripts/device_run.sh needs on the GPU
# machine: the sm_90a trainer binaries built here (with the MLP product
# benchmark), the statically linked prepare, and the pinned corpus. Carry ".device" with the call (< 64 MiB).
#   scripts/device_stage.sh [BUILD_DIR] [PREPARE_BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-trainer}
PREP=${2:-build-trainer-prepare}
export PATH=/usr/local/cuda/bin:$PATH
cmake -S trainer -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTRAINER_TESTS=ON >/dev/null
cmake --build "$BUILD" -j2 --target train kernels_test mlp_gemm_bench gemm_algo_bench
[ -f trainer/tests/optim_test.cu ] && { cmake --build "$BUILD" -j2 --target optim_test || echo "optim_test does not build: not staged"; }
cmake -S trainer -B "$PREP" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHARNESS_STATIC_PREPARE=ON >/dev/null
cmake --build "$PREP" -j2 --target prepare
mkdir -p .device/bin .device/corpus
cp "$BUILD/train" "$BUILD/kernels_test" "$BUILD/mlp_gemm_bench" "$BUILD/gemm_algo_bench" .device/bin/
rm -f .device/bin/optim_test
if [ -f "$BUILD/optim_test" ]; then cp "$BUILD/optim_test" .device/bin/; fi
cp "$PREP/harness/prepare" .device/prepare
strip .device/prepare
cp /work/shared/corpus/train.jsonl.xz /work/shared/corpus/val.jsonl.xz .device/corpus/
du -sh .device
