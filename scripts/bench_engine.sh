#!/usr/bin/env bash
# Benchmark of the research engine (figures for docs/daemon.md; not a test).
#
#   scripts/bench_engine.sh [--daemon BIN] [--fake-trainer BIN] [--gpus "1 4"]
#                           [--seconds 240] [--legacy]
#
# For each GPU count, autoresearchd runs in a temporary repo against the fake
# trainer and a fake LLM on loopback:
#   - training: a 10 s budget (the trainer reports training_seconds 10), plus
#     0.5 s of start-up and evaluation in the stage;
#   - build: about 1 s;
#   - the LLM answers every request with a valid whole-file edit after 3 s.
# On a machine without GPUs `gpus = [0, 1, ...]` only labels the workers.
# After --seconds of running (at least 240 for a figure worth quoting) the
# daemon is stopped and the store is read by scripts/engine_stats.py:
# experiments per hour, the GPU busy share (time in stages over wall time x
# GPUs), the training share (training_seconds over wall time x GPUs) and the
# median gap between one training's end and the next start on the same GPU.
# --legacy: the daemon knows no `gpus` key (the one-GPU loop before the engine);
# only the 1-GPU setting runs then.
#
# The last line reads
#   RESULT gpus1_exp_per_hour=A gpus4_exp_per_hour=B speedup=B/A train_share_1=S1 train_share_4=S4 median_gap_s=G
# with G the median gap of the 4-GPU setting (of the 1-GPU one when only that ran).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
daemon=build/daemon/autoresearchd
fake=build/tests/daemon/fake_trainer
gpu_counts="1 4"
seconds=240
legacy=0
while (($#)); do
  case $1 in
    --daemon) daemon=$2; shift 2 ;;
    --fake-trainer) fake=$2; shift 2 ;;
    --gpus) gpu_counts=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --legacy) legacy=1; gpu_counts=1; shift ;;
    *) echo "bench_engine: unknown argument $1" >&2; exit 2 ;;
  esac
done
daemon=$(realpath "$daemon")
fake=$(realpath "$fake")
[ -x "$daemon" ] || { echo "bench_engine: no daemon at $daemon (build it first)" >&2; exit 1; }
[ -x "$fake" ] || { echo "bench_engine: no fake trainer at $fake" >&2; exit 1; }

work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  cores: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "daemon: $daemon"
declare -A eph share gap
for gpus in $gpu_counts; do
  repo=$work/repo$gpus
  mkdir -p "$repo/trainer/harness"
  printf 'val_bpb 1.0\nseconds 10\n' >"$repo/trainer/train.cu"
  echo '// fixed evaluation' >"$repo/trainer/harness/eval.h"
  printf '# program\nLower val_bpb.\n' >"$repo/program.md"
  echo 'build/' >"$repo/.gitignore"
  git -C "$repo" init -q -b main
  git -C "$repo" -c user.name=bench -c user.email=bench@localhost add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -qm base

  # Answers: whole-file edits with distinct values, a few better than the best.
  python3 - "$work/script$gpus.json" <<'PY'
import json, random, sys
random.seed(7)
steps = []
for i in range(2000):
    v = 1.0 - 0.0005 * i * random.random() + 0.02 * random.random()
    steps.append({"hang_s": 3, "answer": "DESCRIPTION: try value %.6f (#%d)\n\n"
                  "=== FILE: trainer/train.cu ===\nval_bpb %.6f\nseconds 10\n=== END FILE ===\n" % (v, i, v)})
json.dump(steps, open(sys.argv[1], "w"))
PY
  python3 -u tests/llm/fake_llm_server.py --script "$work/script$gpus.json" --log "$work/llm$gpus.log" \
    >"$work/server$gpus.out" &
  server_pid=$!
  for _ in $(seq 50); do grep -q '^port' "$work/server$gpus.out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/^port //p' "$work/server$gpus.out")

  gpu_line=""
  if ((legacy == 0)); then
    gpu_line="gpus = [$(seq -s ', ' 0 $((gpus - 1)))]"
  fi
  cat >"$repo/autoresearch.toml" <<TOML
tag = "bench"
budget_s = 10
startup_s = 5
retry_wait_s = 1
$gpu_line
[build]
command = "sleep 1 && $fake build trainer/train.cu"
timeout_s = 60
[[stage]]
name = "train"
command = "sleep 0.5 && $fake run trainer/train.cu"
timeout_s = 60
[data]
enabled = false
[preflight]
gpu = "off"
[proposer]
kind = "llm"
[llm]
provider = "openai"
model = "fake-model"
base_url = "http://127.0.0.1:$port/v1"
retries = 0
api_key_env = ""
# The default cap of 60 calls an hour would pause proposing within the run:
# 4 GPUs ask for about 900 proposals an hour at this budget. This measures
# the engine's scheduling, not the spend caps.
max_calls_per_hour = 100000
TOML
  (cd "$repo" && "$daemon" start --detach >/dev/null)
  sleep "$seconds"
  (cd "$repo" && "$daemon" stop --timeout 60 >/dev/null)
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=

  line=$(python3 "$root/scripts/engine_stats.py" "$repo/.autoresearchd/results.db" --gpus "$gpus")
  echo "gpus=$gpus $line"
  eph[$gpus]=$(sed -n 's/.*exp_per_hour=\([^ ]*\).*/\1/p' <<<"$line")
  share[$gpus]=$(sed -n 's/.*train_share=\([^ ]*\).*/\1/p' <<<"$line")
  gap[$gpus]=$(sed -n 's/.*median_gap_s=\([^ ]*\).*/\1/p' <<<"$line")
done

a=${eph[1]:-0}
b=${eph[4]:-0}
speedup=$(python3 -c "print('%.2f' % ($b / $a) if $a > 0 and $b > 0 else 'n/a')")
g=${gap[4]:-${gap[1]:-n/a}}
echo "RESULT gpus1_exp_per_hour=$a gpus4_exp_per_hour=${eph[4]:-n/a} speedup=$speedup" \
  "train_share_1=${share[1]:-n/a} train_share_4=${share[4]:-n/a} median_gap_s=$g"
