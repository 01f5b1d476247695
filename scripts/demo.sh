#!/usr/bin/env bash
# Builds autoresearchd (installing what is missing) and runs its demo: a night
# of research on a simulated trainer, no GPU needed (docs/daemon.md, the demo):
#   scripts/demo.sh [--dir DIR] [--port N] [--stop-after-kept N] [--timeout S]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target autoresearchd
exec build/daemon/autoresearchd demo "$@"
