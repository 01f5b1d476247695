#!/usr/bin/env bash
# The prompt's figures at today's tree: bytes and estimated tokens of the first
# request of 10 consecutive experiments (trainer/train.cu, trainer/model/ and
# program.md as they are, a synthetic history of 100-110 experiments with
# failures), the share of the input that is a prefix common to all ten, and
# the input cost with and without Anthropic's prompt caching at the README's
# example prices. Then the grown tree: program.md grown to 16 KB and train.cu
# by 5 KB of code, whose first request must still hold train.cu whole, and a
# READ round of a 16 KB model file, which must come back whole within the
# limit. First the figures recorded before the budgeted assembly
# (docs/bench/prompt_before.txt), then today's. The last line is
#   RESULT first_request_bytes=... stable_prefix_share=... cached_cost_ratio=...
#          grown_prompt_has_surface=0|1 read_16k_ok=0|1   (one line)
# Usage: scripts/bench_prompt.sh [build dir]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
if [ ! -d "$build" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target bench_prompt >/dev/null
echo "== before: every editable file whole, no cache breakpoint (recorded at 7168f59)"
grep -v '^RESULT' "$root/docs/bench/prompt_before.txt"
echo "   before: $(grep '^RESULT' "$root/docs/bench/prompt_before.txt" | sed 's/^RESULT //')"
echo "== today"
"$build/llm_client/bench_prompt" "$root" today
