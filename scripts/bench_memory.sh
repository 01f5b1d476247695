#!/usr/bin/env bash
# The duplicate benchmark (CPU only): the real daemon, with the LLM proposer
# talking to a replayed LLM (tests/llm/fake_llm_server.py) that repeats itself,
# and the fake trainer in simulation mode. scripts/bench_memory.py draws the
# answers from a seed: 30 % an earlier idea again (half verbatim, half
# re-spaced or re-commented), otherwise a new idea, one in ten of them twice in
# a row (the second proposed while the first is in flight). The configuration
# is a user's: one GPU, confirmations and noise rounds on, the sandbox on.
# Prints the counts and one line per night, then:
#   RESULT duplicate_catch_rate=... false_duplicate_rate=... duplicate_gpu_share=... concurrent_same_idea=...
# Targets: duplicate_catch_rate >= 0.95, false_duplicate_rate <= 0.01,
# duplicate_gpu_share <= 0.02, concurrent_same_idea = 0 (the nights pooled).
#
#   scripts/bench_memory.sh [BUILD_DIR]     (default: build)
#   env: NIGHTS (2), COUNT (100 answers a night), SEED (1), GPUS (1), SECONDS_PER_RUN (0.5),
#        DAEMON (another autoresearchd binary, e.g. one built before duplicates were caught),
#        KEEP_WORK (set: keep the nights' repos)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}
nights=${NIGHTS:-2}
count=${COUNT:-100}
seed0=${SEED:-1}
cmake --build "$build" --target autoresearchd fake_trainer -- -j2 >/dev/null
daemon=${DAEMON:-$root/$build/daemon/autoresearchd}
fake=$root/$build/tests/daemon/fake_trainer
work=$(mktemp -d)
pid= server=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "bench_memory: the nights' repos are in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

out=$work/figures
for ((n = 0; n < nights; n++)); do
  seed=$((seed0 + n))
  dir=$work/night$seed
  repo=$dir/research
  mkdir -p "$dir"
  # The port is the server's to choose: the replay is written first, then served.
  python3 scripts/bench_memory.py setup "$repo" --fake "$fake" --port 0 --count "$count" --seed "$seed" \
    --gpus "${GPUS:-1}" --seconds "${SECONDS_PER_RUN:-0.5}"
  python3 -u tests/llm/fake_llm_server.py --script "$repo/replay.json" --log "$dir/llm.log" >"$dir/server.out" &
  server=$!
  for _ in $(seq 50); do grep -q '^port' "$dir/server.out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/^port //p' "$dir/server.out")
  [ -n "$port" ] || { echo "bench_memory: the fake LLM server did not start: $(cat "$dir/server.out")" >&2; exit 1; }
  sed -i "s|127.0.0.1:0/v1|127.0.0.1:$port/v1|" "$repo/autoresearch.toml"
  (cd "$repo" && git init -q && git add -A && git -c user.name=bench -c user.email=bench@localhost commit -qm base)
  (cd "$repo" && exec "$daemon" start) >"$dir/daemon.out" 2>&1 &
  pid=$!
  db=$repo/.autoresearchd/results.db
  t0=$SECONDS
  # The night ends when the replay is spent (the server answers 503 from then on) and nothing is in flight.
  while :; do
    sleep 2
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "bench_memory: the daemon stopped early; its log:" >&2
      tail -20 "$repo/.autoresearchd/daemon.log" >&2 || cat "$dir/daemon.out" >&2
      exit 1
    fi
    asked=$(grep -c '"step"' "$dir/llm.log" 2>/dev/null || true)
    busy=$(sqlite3 "$db" "SELECT count(*) FROM experiments WHERE state IN
      ('committed','building','built','running','evaluated')" 2>/dev/null || echo 1)
    if [ "${asked:-0}" -gt "$count" ] && [ "$busy" = 0 ]; then break; fi
  done
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=
  echo "night seed=$seed ($((SECONDS - t0)) s)"
  python3 scripts/bench_memory.py figures "$db" | tee -a "$out"
done

# The nights pooled: rates over the summed counts, the GPU share over the summed seconds.
python3 - "$out" <<'PY'
import re, sys
c = {"dup": 0, "caught": 0, "distinct": 0, "false": 0, "gpu": 0.0, "dup_gpu": 0.0, "concurrent": 0}
for line in open(sys.argv[1]):
    m = re.search(r"(\d+) repeat an idea \((\d+) caught\), (\d+) distinct \((\d+) refused\); GPU (\d+) s, (\d+) s", line)
    if m:
        for k, v in zip(("dup", "caught", "distinct", "false", "gpu", "dup_gpu"), m.groups()):
            c[k] += float(v)
    m = re.search(r"concurrent_same_idea=(\d+)", line)
    if m:
        c["concurrent"] += int(m.group(1))
rate = lambda k, n: k / n if n else 0.0
print(f"RESULT duplicate_catch_rate={rate(c['caught'], c['dup']):.4f} "
      f"false_duplicate_rate={rate(c['false'], c['distinct']):.4f} "
      f"duplicate_gpu_share={rate(c['dup_gpu'], c['gpu']):.4f} concurrent_same_idea={c['concurrent']}")
PY
