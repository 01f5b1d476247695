#!/usr/bin/env bash
# The whole loop on the GPU machine: `autoresearchd start` drives the real trainer on the pinned
# corpus with budget_s = 60 for RUN_S seconds (default 420: 7 minutes), then stops it and leaves
# in OUTDIR what happened and where the time went.
#   scripts/device_e2e.sh OUTDIR           (the device tool: scripts/device_e2e.sh $OUT)
#   NOISE_ONLY=1 scripts/device_e2e.sh OUTDIR   the trainer's noise instead: no candidate, the
#                                          daemon's noise rounds back to back for RUN_S seconds
#   PROMOTE=1 BUDGET_S=15 scripts/device_e2e.sh OUTDIR   one promotion round instead: one scripted
#                                          change (half the tokens a step), kept or not, and with
#                                          it kept a round at the default ladder's rung 1 (depth
#                                          ×2, twice the budget); stops when the round ends or at
#                                          RUN_S. Switched off for a round to fit one call, and
#                                          said in e2e.log: noise rounds (noise.prior_sigma
#                                          PRIOR_SIGMA, default 0.004, instead), the share cap
#                                          (promote.max_share = 1, promote.every = 1)
# Runs there in under 10 minutes: Ubuntu 24.04, CUDA 13, CMake and ninja, python3, git; no
# network, no apt. Expects, carried (git-ignored; scripts/device_pack.sh makes them here):
#   .device/ard.tar.xz (or the folder .device/ard/): the daemon built on Debian 12 with its
#     libraries beside it (rpath $ORIGIN/lib), and the static prepare
#   data/corpus/{train,val}.jsonl.xz: the pinned corpus
# What it does:
#   1. checks that the carried daemon finds every library (ldd) and starts;
#   2. copies the checkout's tracked files into a fresh git repo of its own (the daemon's
#      worktree, branch and .autoresearchd/ go there, not into the checkout);
#   3. starts tests/llm/fake_llm_server.py on loopback with scripts/e2e_replay.py's edits to
#      trainer/train.cu (one that should help, one that should hurt, one that does not compile
#      and its fix, one that crashes at run time) and starts the daemon with it as its LLM;
#   4. once the replay is used up (the server answers 503), stops the daemon and starts it
#      again with the offline proposer for the rest of RUN_S; then `stop`. The five replies
#      take about six experiments (the baseline first); at 60 s of training each, 7 minutes may
#      end before they are used up, and then there is no offline phase (RUN_S=480 leaves
#      room for it and still ends within a 10-minute call if the first build is quick);
#   5. checks that nvidia-smi lists no process after the stop, and writes `status`, every
#      `show`, `export --tsv`, the database, the daemon log and scripts/e2e_summary.py's
#      split of each experiment's time (build, check, start-up, warm-up steps, evaluation,
#      training), the training share, the GPU busy share and experiments per hour at 60 s and
#      extrapolated to 300 s.
# The build and each stage print `ard-e2e-t <unix time> begin|end` (and the train stage a
# stamp before each step line and before its summary) for e2e_summary.py; the summary block
# is parsed as always (those lines have no colon).
# OUTDIR gets at most 8 files (what a device call brings back): e2e.log, summary.txt,
# status.txt, shows.txt, export.tsv, daemon.log, results.db, e2e-extra.tar.gz (stage logs,
# configs, the replay and its request log, ldd, nvidia-smi samples).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
CHECKOUT=$PWD
OUT=${1:?usage: scripts/device_e2e.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RUN_S=${RUN_S:-420}
BUDGET_S=${BUDGET_S:-60}
STAGE_FLAGS=""  # PROMOTE=1: the stage takes the rung's depth scale, which gives the default ladder
[ "${PROMOTE:-0}" = 1 ] && STAGE_FLAGS="--depth-scale {depth_scale}"
TAG=e2e
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
START=$SECONDS
section() { echo "== $(date -u +%H:%M:%S) +$((SECONDS - START))s $*" | tee -a "$OUT/e2e.log"; }
die() { section "FAILED: $*"; exit 1; }

WORK=$(mktemp -d /tmp/ard-e2e.XXXXXX)
EXTRA=$WORK/extra
mkdir -p "$EXTRA"
REPO=$WORK/repo
STATE=$REPO/.autoresearchd
ARD="" SERVER_PID="" SAMPLER_PID="" DAEMON_CFG=""

cleanup() {
  if [ -n "$DAEMON_CFG" ]; then "$ARD" stop --repo "$REPO" --config "$DAEMON_CFG" --timeout 60 >/dev/null 2>&1; fi
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null; fi
  if [ -n "$SAMPLER_PID" ]; then kill -- "-$SAMPLER_PID" 2>/dev/null; fi
}
trap cleanup EXIT

# 1. The carried daemon.
section "the daemon"
if [ ! -x .device/ard/autoresearchd ] && [ -f .device/ard.tar.xz ]; then
  tar -C .device -xJf .device/ard.tar.xz || die "cannot unpack .device/ard.tar.xz"
fi
ARD=$CHECKOUT/.device/ard/autoresearchd
PREPARE=$CHECKOUT/.device/ard/prepare
[ -x "$ARD" ] || die ".device/ard/autoresearchd missing: run scripts/device_pack.sh here and carry .device/ard.tar.xz"
[ -x "$PREPARE" ] || die ".device/ard/prepare missing: run scripts/device_pack.sh"
for f in train val; do
  [ -f "data/corpus/$f.jsonl.xz" ] || die "data/corpus/$f.jsonl.xz missing: carry data/corpus (scripts/device_pack.sh copies it)"
done
command -v git >/dev/null || die "git not found on this machine"
grep PRETTY_NAME /etc/os-release | tee -a "$OUT/e2e.log"
ldd "$ARD" > "$EXTRA/ldd.txt" 2>&1
if grep -q "not found" "$EXTRA/ldd.txt"; then
  grep "not found" "$EXTRA/ldd.txt" | tee -a "$OUT/e2e.log"
  die "the daemon's libraries are not all found"
fi
grep -c "$CHECKOUT/.device/ard/lib" "$EXTRA/ldd.txt" | sed 's/^/libraries from .device\/ard\/lib: /' | tee -a "$OUT/e2e.log"
"$ARD" --help >/dev/null 2>&1 || die "the daemon does not start here"
# The sandbox: the carried bubblewrap on PATH. Where it cannot make its namespaces, the run
# goes on unconfined (sandbox.mode = "off", which `status` warns of) and says why here.
export PATH=$CHECKOUT/.device/ard/bin:$PATH
SANDBOX_TABLE=""
if ! bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net true 2> "$EXTRA/bwrap.err"; then
  echo "sandbox off: bwrap cannot make its namespaces here: $(head -1 "$EXTRA/bwrap.err")" | tee -a "$OUT/e2e.log"
  SANDBOX_TABLE='[sandbox]
mode = "off"'
else
  echo "sandbox: bwrap $(bwrap --version | awk '{print $2}') makes its namespaces here" | tee -a "$OUT/e2e.log"
fi
nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm --format=csv,noheader | tee -a "$OUT/e2e.log"

# 2. A research repo of its own, committed.
section "research repo"
mkdir -p "$REPO"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z | tar --null -T - -cf - | tar -C "$REPO" -xf -
else  # a copy without .git: everything but the ignored folders
  tar --exclude=./.git --exclude=./.device --exclude=./data --exclude='./build*' --exclude=./.autoresearchd \
    -cf - . | tar -C "$REPO" -xf -
fi
(cd "$REPO" && git init -q -b main && git add -A &&
  git -c user.name=e2e -c user.email=e2e@localhost commit -qm "e2e: the tree under test") || die "cannot make the research repo"
git -C "$REPO" log --oneline | tee -a "$OUT/e2e.log"

# The daemon's configuration: every command stamped for e2e_summary.py.
write_config() {  # write_config FILE PROPOSER_TABLES
  cat > "$1" <<EOF
tag = "$TAG"
budget_s = $BUDGET_S
retry_wait_s = 5

[build]
command = '''bash -c 'echo "ard-e2e-t \$EPOCHREALTIME begin"; cmake -S trainer -B build/trainer -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build/trainer --target train; rc=\$?; echo "ard-e2e-t \$EPOCHREALTIME end"; exit \$rc' '''
timeout_s = 900

[[stage]]
name = "check"
command = '''bash -c 'echo "ard-e2e-t \$EPOCHREALTIME begin"; build/trainer/train --check; rc=\$?; echo "ard-e2e-t \$EPOCHREALTIME end"; exit \$rc' '''
timeout_s = 120

[[stage]]
name = "train"
command = '''bash -c 'echo "ard-e2e-t \$EPOCHREALTIME begin"; set -o pipefail; build/trainer/train --data {data_dir} --time-budget {budget} $STAGE_FLAGS 2>&1 | while IFS= read -r line; do case "\$line" in "step "*) echo "ard-e2e-t \$EPOCHREALTIME step";; ---) echo "ard-e2e-t \$EPOCHREALTIME summary";; esac; printf "%s\n" "\$line"; done; rc=\$?; echo "ard-e2e-t \$EPOCHREALTIME end"; exit \$rc' '''

[data]
prepare = "$PREPARE"
train = ["$CHECKOUT/data/corpus/train.jsonl.xz"]
val = ["$CHECKOUT/data/corpus/val.jsonl.xz"]
cache = "$WORK/cache"

$SANDBOX_TABLE

$2
EOF
}

if [ "${NOISE_ONLY:-0}" = 1 ]; then
  # The trainer's noise, by the daemon's own noise rounds: no candidate (an empty script),
  # and a round due as soon as the last one ends (noise.max_age_s = 1), so the unmodified
  # trainer runs again and again on this one board for RUN_S seconds; σ and its df are the
  # daemon's (noise_estimates), every run's val_bpb is in the export and the database.
  section "noise only: the baseline again and again"
  echo "[]" > "$EXTRA/empty.json"
  write_config "$EXTRA/noise.toml" "[proposer]
kind = \"scripted\"
script = \"$EXTRA/empty.json\"

[noise]
max_age_s = 1"
  DAEMON_CFG=$EXTRA/noise.toml
  DEADLINE=$((SECONDS + RUN_S))
  "$ARD" start --repo "$REPO" --config "$DAEMON_CFG" --detach 2>&1 | tee -a "$OUT/e2e.log"
  sleep $(( DEADLINE - SECONDS > 0 ? DEADLINE - SECONDS : 0 ))
  section "stop"
  "$ARD" stop --repo "$REPO" --config "$DAEMON_CFG" --timeout 60 2>&1 | tee -a "$OUT/e2e.log"
  DAEMON_CFG=""
  "$ARD" status --repo "$REPO" --config "$EXTRA/noise.toml" > "$OUT/status.txt" 2>&1
  cat "$OUT/status.txt" >> "$OUT/e2e.log"
  python3 - "$STATE/results.db" <<'PY' | tee -a "$OUT/e2e.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs = db.execute("SELECT purpose, val_bpb, num_steps, training_seconds FROM trials WHERE status='ok' ORDER BY id").fetchall()
for r in runs:
    print("run", *r)
est = db.execute("SELECT sigma, df, reason FROM noise_estimates ORDER BY id DESC LIMIT 1").fetchone()
print("RESULT runs=%d sigma=%s df=%s" % (len(runs), est[0] if est else None, est[1] if est else None))
PY
  cp "$STATE/daemon.log" "$OUT/daemon.log"
  section "done in $((SECONDS - START)) s"
  exit 0
fi

if [ "${PROMOTE:-0}" = 1 ]; then
  section "promotion: one change, then a round at rung 1"
  echo "switched off to fit one call: noise rounds (noise.prior_sigma ${PRIOR_SIGMA:-0.004} instead)," \
    "the share cap (promote.max_share = 1); promote.every = 1" | tee -a "$OUT/e2e.log"
  python3 - "$REPO/trainer/train.cu" > "$EXTRA/promote.json" <<'PY' || die "cannot write the script"
import json, sys
find = "constexpr long TOTAL_BATCH_TOKENS = 524288;"
if find not in open(sys.argv[1]).read():
    sys.exit("trainer/train.cu has no line " + find)
print(json.dumps([{"description": "half the tokens a step: twice the steps in the budget",
                   "edits": [{"path": "trainer/train.cu", "find": find,
                              "replace": "constexpr long TOTAL_BATCH_TOKENS = 262144;"}]}]))
PY
  write_config "$EXTRA/promote.toml" "[proposer]
kind = \"scripted\"
script = \"$EXTRA/promote.json\"

[noise]
rounds = false
prior_sigma = ${PRIOR_SIGMA:-0.004}

[promote]
every = 1
max_share = 1"
  DAEMON_CFG=$EXTRA/promote.toml
  "$ARD" status --repo "$REPO" --config "$DAEMON_CFG" > /dev/null 2> "$EXTRA/config_check.txt" ||
    die "the config: $(head -1 "$EXTRA/config_check.txt")"
  DEADLINE=$((SECONDS + RUN_S))
  "$ARD" start --repo "$REPO" --config "$DAEMON_CFG" --detach 2>&1 | tee -a "$OUT/e2e.log"
  [ "${PIPESTATUS[0]}" = 0 ] || die "the daemon did not start"
  # Until the round ends, or the change is discarded (no round then), or the deadline.
  while [ "$SECONDS" -lt "$DEADLINE" ]; do
    sleep 5
    ended=$(python3 -c 'import sqlite3,sys
db = sqlite3.connect(sys.argv[1])
rounds = db.execute("SELECT count(*) FROM promotion_rounds WHERE ended_at IS NOT NULL").fetchone()[0]
done = db.execute("SELECT count(*) FROM experiments WHERE is_baseline=0 AND state IN (\x27discarded\x27,\x27crash\x27,\x27timeout\x27,\x27build_fail\x27,\x27tampered\x27,\x27patch_rejected\x27,\x27proposer_error\x27,\x27conflict\x27,\x27duplicate\x27)").fetchone()[0]
print("yes" if rounds or done else "no")' "$STATE/results.db" 2>/dev/null)
    [ "$ended" = yes ] && break
  done
  section "stop"
  "$ARD" stop --repo "$REPO" --config "$DAEMON_CFG" --timeout 60 2>&1 | tee -a "$OUT/e2e.log"
  DAEMON_CFG=""
  "$ARD" status --repo "$REPO" --config "$EXTRA/promote.toml" > "$OUT/status.txt" 2>&1
  cat "$OUT/status.txt" >> "$OUT/e2e.log"
  : > "$OUT/shows.txt"
  for id in $(python3 -c 'import sqlite3,sys; print(*[r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT id FROM experiments ORDER BY id")])' "$STATE/results.db"); do
    { echo "==== show $id"; "$ARD" show "$id" --repo "$REPO" --config "$EXTRA/promote.toml" 2>&1; } >> "$OUT/shows.txt"
  done
  python3 - "$STATE/results.db" <<'PY' | tee -a "$OUT/e2e.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("SELECT id, experiment_id, purpose, rung, status, val_bpb, training_seconds, num_steps FROM trials ORDER BY id"):
    print("trial", *r)
for r in db.execute("SELECT experiment_id, rung, label, evidence FROM change_labels ORDER BY id"):
    print("label", *r)
for r in db.execute("SELECT id, rung, reason, outcome FROM promotion_rounds ORDER BY id"):
    print("round", *r)
PY
  grep -h "^\(depth\|num_params_M\|depth_scale\):" "$STATE"/logs/* 2>/dev/null | sort | uniq -c | tee -a "$OUT/e2e.log"
  cp "$STATE/daemon.log" "$OUT/daemon.log"
  tar -C "$WORK" -czf "$OUT/e2e-extra.tar.gz" extra repo/.autoresearchd/logs
  section "done in $((SECONDS - START)) s"
  exit 0
fi

# 3. The replay LLM server.
section "replay LLM server"
python3 scripts/e2e_replay.py "$REPO/trainer/train.cu" > "$EXTRA/replay.json" || die "cannot write the replay"
REPLIES=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$EXTRA/replay.json")
python3 tests/llm/fake_llm_server.py --script "$EXTRA/replay.json" --log "$EXTRA/llm_requests.jsonl" \
  > "$WORK/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do grep -q "^port " "$WORK/server.out" && break; sleep 0.1; done
PORT=$(sed -n 's/^port //p' "$WORK/server.out")
[ -n "$PORT" ] || die "the replay server did not start: $(cat "$WORK/server.out")"
echo "port $PORT, $REPLIES replies" | tee -a "$OUT/e2e.log"

write_config "$EXTRA/llm.toml" "[llm]
provider = \"openai\"
model = \"replay\"
base_url = \"http://127.0.0.1:$PORT/v1\"
api_key_env = \"\"
retries = 0
timeout_s = 60
max_edit_attempts = 1"
write_config "$EXTRA/offline.toml" "[proposer]
kind = \"offline\""

# nvidia-smi sampled once a second (its own process group, ended at the end); the inner
# shell expands $EPOCHREALTIME, not this one.
# shellcheck disable=SC2016
setsid bash -c 'nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 1000 |
  while read -r u; do echo "$EPOCHREALTIME $u"; done' > "$EXTRA/gpu.log" 2>&1 &
SAMPLER_PID=$!

# 4. The daemon: the replay first, then the offline proposer, RUN_S seconds in all.
section "start (replay LLM)"
DEADLINE=$((SECONDS + RUN_S))
DAEMON_CFG=$EXTRA/llm.toml
"$ARD" start --repo "$REPO" --config "$DAEMON_CFG" --detach 2>&1 | tee -a "$OUT/e2e.log"
[ "${PIPESTATUS[0]}" = 0 ] || die "the daemon did not start"

# The event that ends the replay: the server logs a request it had no reply for.
touch "$EXTRA/llm_requests.jsonl"
WAIT_S=$((DEADLINE - SECONDS > 1 ? DEADLINE - SECONDS : 1))  # timeout 0 would mean no timeout
grep -m1 -q "\"step\": ${REPLIES}[,}]" < <(timeout "$WAIT_S" tail -n +1 -F "$EXTRA/llm_requests.jsonl" 2>/dev/null)
WAITER=$!
kill "$WAITER" 2>/dev/null
if [ $((DEADLINE - SECONDS)) -gt 90 ]; then
  section "replay used up: stop, then start with the offline proposer"
  "$ARD" stop --repo "$REPO" --config "$DAEMON_CFG" --timeout 60 2>&1 | tee -a "$OUT/e2e.log"
  DAEMON_CFG=$EXTRA/offline.toml
  "$ARD" start --repo "$REPO" --config "$DAEMON_CFG" --detach 2>&1 | tee -a "$OUT/e2e.log"
else
  section "replay not used up before the last 90 s: no offline phase"
fi
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader > "$EXTRA/gpu_apps_during.txt" 2>&1
# Until the deadline: the daemon runs on its own; the status at mid-way shows it running.
sleep $(( (DEADLINE - SECONDS) / 2 > 0 ? (DEADLINE - SECONDS) / 2 : 0 ))
"$ARD" status --repo "$REPO" --config "$DAEMON_CFG" > "$EXTRA/status_during.txt" 2>&1
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader >> "$EXTRA/gpu_apps_during.txt" 2>&1
sleep $(( DEADLINE - SECONDS > 0 ? DEADLINE - SECONDS : 0 ))
section "stop"
"$ARD" stop --repo "$REPO" --config "$DAEMON_CFG" --timeout 60 2>&1 | tee -a "$OUT/e2e.log"
DAEMON_CFG=""

# 5. After the stop: no process on the GPU, then the reports.
section "GPU processes after stop"
# The driver may list a process for a moment after it exits (2026-12-06: the stopped stage's pid
# with no name, in the stop's second), so poll for 15 s and say when the list emptied.
STOPPED_AT=$SECONDS
for _ in $(seq 30); do
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader > "$EXTRA/gpu_apps_after.txt" 2>&1
  [ -s "$EXTRA/gpu_apps_after.txt" ] || break
  sleep 0.5
done
if [ -s "$EXTRA/gpu_apps_after.txt" ]; then
  echo "NOT clean: processes left on the GPU 15 s after the stop:" | tee -a "$OUT/e2e.log"
  tee -a "$OUT/e2e.log" < "$EXTRA/gpu_apps_after.txt"
  ps -eo pid,ppid,stat,etime,cmd | grep -v grep | grep -E "train|autoresearchd" | tee -a "$OUT/e2e.log"
else
  echo "clean: nvidia-smi lists no compute process ($((SECONDS - STOPPED_AT)) s after the stop)" | tee -a "$OUT/e2e.log"
fi
echo "listed while the daemon ran (if empty, this machine's nvidia-smi does not list processes" \
  "and the check above proves nothing):" | tee -a "$OUT/e2e.log"
tee -a "$OUT/e2e.log" < "$EXTRA/gpu_apps_during.txt"
kill -- "-$SAMPLER_PID" 2>/dev/null
SAMPLER_PID=""

section "status, show, export"
CFG=$EXTRA/offline.toml
"$ARD" status --repo "$REPO" --config "$CFG" > "$OUT/status.txt" 2>&1
cat "$OUT/status.txt" >> "$OUT/e2e.log"
"$ARD" export --tsv --repo "$REPO" --config "$CFG" > "$OUT/export.tsv" 2>&1
: > "$OUT/shows.txt"
for id in $(python3 -c 'import sqlite3,sys; print(*[r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT id FROM experiments ORDER BY id")])' "$STATE/results.db"); do
  { echo "==== show $id"; "$ARD" show "$id" --repo "$REPO" --config "$CFG" 2>&1; } >> "$OUT/shows.txt"
done
cp "$STATE/daemon.log" "$OUT/daemon.log"
python3 - "$STATE/results.db" "$OUT/results.db" <<'EOF'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
EOF

section "summary"
python3 scripts/e2e_summary.py "$STATE" --gpu-log "$EXTRA/gpu.log" --budget "$BUDGET_S" --extrapolate 300 \
  > "$OUT/summary.txt" 2>&1
tee -a "$OUT/e2e.log" < "$OUT/summary.txt"
tar -C "$WORK" -czf "$OUT/e2e-extra.tar.gz" extra repo/.autoresearchd/logs
section "done in $((SECONDS - START)) s"
