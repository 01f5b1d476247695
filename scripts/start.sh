#!/usr/bin/env bash
# Builds autoresearchd (installing what is missing) and starts it on this repo:
#   scripts/start.sh [--tag TAG] [--detach]
# Later: build/daemon/autoresearchd status | stop | show ID | export --tsv
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target autoresearchd
exec build/daemon/autoresearchd start "$@"
