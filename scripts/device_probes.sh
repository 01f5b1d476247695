#!/usr/bin/env bash
# The integrity probes on the GPU machine: the clean trainer must pass them, and the two hacks
# of docs/patches/ (a causal-mask leak, losses reported 10 % low) must each fail the run with
# its `FAIL: tampered: ...` line. Also checks that bubblewrap (the daemon's sandbox) can make
# its namespaces there and that the trainer reaches the GPU from inside it.
#   scripts/device_probes.sh OUTDIR        (the device tool: scripts/device_probes.sh $OUT)
# Expects, carried: .device/ard.tar.xz (scripts/device_pack.sh: the static prepare and bwrap)
# and data/corpus/{train,val}.jsonl.xz. Builds the trainer there, once, then each patch
# incrementally in the same tree. Each run trains BUDGET_S seconds (default 15).
# Prints one line per variant, `variant=<name> expected=<pass|tampered> got=<...> probes_s=<...>`,
# and ends with `RESULT clean=pass leak=caught loss_scale=caught` when all three behave.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
CHECKOUT=$PWD
OUT=${1:?usage: scripts/device_probes.sh OUTDIR}
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-15}
export PATH=/usr/local/cuda/bin:$PATH
section() { echo "== $(date -u +%H:%M:%S) +${SECONDS}s $*"; }

if [ ! -x .device/ard/prepare ] && [ -f .device/ard.tar.xz ]; then tar -C .device -xJf .device/ard.tar.xz; fi
[ -x .device/ard/prepare ] || { echo "device_probes: .device/ard/prepare missing: run scripts/device_pack.sh"; exit 1; }
BWRAP=$CHECKOUT/.device/ard/bin/bwrap
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

section "prepare"
.device/ard/prepare --train data/corpus/train.jsonl.xz --val data/corpus/val.jsonl.xz --cache /tmp/cache \
  --threads 16 > "$OUT/prepare.log" 2>&1 || { tail -5 "$OUT/prepare.log"; exit 1; }
DATA=$(tail -1 "$OUT/prepare.log" | sed 's/^data_dir: //')

SRC=/tmp/probes/src
rm -rf /tmp/probes && mkdir -p "$SRC" && cp -r trainer "$SRC/"
build() {
  cmake -S "$SRC/trainer" -B "$SRC/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 &&
    cmake --build "$SRC/build" -j16 --target train > "$OUT/build_$1.log" 2>&1 || { tail -20 "$OUT/build_$1.log"; exit 1; }
}
# run NAME EXPECTED [WRAPPER...]: one budgeted run, judged by its FAIL line or its summary.
ALL_OK=1
run() {
  local name=$1 expected=$2; shift 2
  "$@" "$SRC/build/train" --data "$DATA" --time-budget "$BUDGET_S" > "$OUT/run_$name.log" 2>&1
  local rc=$? got probes
  if grep -q "^FAIL: tampered:" "$OUT/run_$name.log"; then got=tampered
  elif [ $rc = 0 ] && grep -q "^val_bpb:" "$OUT/run_$name.log"; then got=pass
  else got="error(rc=$rc)"; fi
  probes=$(sed -n 's/^probes: passed in \([0-9.]*\) s$/\1/p' "$OUT/run_$name.log")
  echo "variant=$name expected=$expected got=$got probes_s=${probes:--} $(grep -E '^(FAIL|val_bpb|num_steps):' "$OUT/run_$name.log" | tr '\n' ' ')"
  [ "$got" = "$expected" ] || ALL_OK=0
}

section "bubblewrap"
if [ -x "$BWRAP" ]; then
  "$BWRAP" --version
  # The daemon's shape of sandbox (daemon/exec/sandbox.cc): the system read-only (not the whole
  # root: the secrets of /etc hidden there are left out here), its own /proc, /dev and /tmp, the
  # GPU's device files bound in, new PID, IPC, UTS and network namespaces.
  SANDBOX=("$BWRAP")
  for p in /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt /sys; do
    if [ -L "$p" ]; then SANDBOX+=(--symlink "$(readlink "$p")" "$p"); elif [ -d "$p" ]; then SANDBOX+=(--ro-bind "$p" "$p"); fi
  done
  SANDBOX+=(--dev /dev --proc /proc --tmpfs /tmp --bind /tmp/cache /tmp/cache
            --bind "$SRC" "$SRC" --unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent)
  for d in /dev/nvidia*; do [ -e "$d" ] && SANDBOX+=(--dev-bind "$d" "$d"); done
  if "${SANDBOX[@]}" true 2> "$OUT/bwrap.err"; then echo "bwrap: namespaces made"; else echo "bwrap: $(head -1 "$OUT/bwrap.err")"; SANDBOX=(); fi
else
  echo "bwrap: not carried"; SANDBOX=()
fi

section "clean trainer: build, then a ${BUDGET_S}s run"
build clean
run clean pass
if [ ${#SANDBOX[@]} -gt 0 ]; then
  section "clean trainer inside bubblewrap"
  run clean_sandboxed pass "${SANDBOX[@]}" --
fi

section "causal-mask leak"
(cd "$SRC" && git apply "$CHECKOUT/docs/patches/probe_causal_leak.patch") || exit 1
build leak
run leak tampered
(cd "$SRC" && git apply -R "$CHECKOUT/docs/patches/probe_causal_leak.patch") || exit 1

section "losses reported 10 % low"
(cd "$SRC" && git apply "$CHECKOUT/docs/patches/probe_loss_scale.patch") || exit 1
build loss_scale
run loss_scale tampered

section "done"
if [ $ALL_OK = 1 ]; then echo "RESULT clean=pass leak=caught loss_scale=caught"; else echo "RESULT probes=unexpected (see the variant lines)"; exit 1; fi
