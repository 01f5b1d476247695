#!/usr/bin/env bash
# scripts/start.sh checks the GPU and the data inputs before it installs or
# builds anything: run on a copy of the repo's scripts and config, with a PATH
# that holds no nvidia-smi (or a stub one), each failure is one line and no
# build directory appears; once both pass it goes on to scripts/setup.sh (here
# a stub that records the call and stops).
#   tests/scripts/start_sh_test.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: start_sh_test.sh SOURCE_DIR}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # check NAME CONDITION-RESULT MESSAGE
  if [ "$2" = yes ]; then echo "ok: $1"; else echo "FAIL: $1: $3"; failures=$((failures + 1)); fi
}

# The system's tools without nvidia-smi, and a directory for stubs.
mkdir -p "$tmp/sysbin" "$tmp/stubs"
for d in /usr/local/bin /usr/bin /bin; do
  for t in "$d"/*; do
    n=${t##*/}
    [ "$n" = nvidia-smi ] || [ -e "$tmp/sysbin/$n" ] || ln -s "$t" "$tmp/sysbin/$n"
  done
done
nogpu_path="$tmp/sysbin"
gpu_path="$tmp/stubs:$tmp/sysbin"

repo="$tmp/repo"
mkdir -p "$repo/scripts" "$repo/data_sources"
cp "$src/scripts/start.sh" "$repo/scripts/"
cp "$src/autoresearch.toml" "$repo/"
cp "$src/data_sources/c4-en.urls" "$repo/data_sources/"
printf '#!/bin/sh\necho setup ran >> "%s/setup.log"\nexit 1\n' "$tmp" > "$repo/scripts/setup.sh"
chmod +x "$repo/scripts/setup.sh"

run() {  # run PATH ARGS...: stdout+stderr in $out, exit code in $code
  local path=$1; shift
  set +e
  out=$(cd "$repo" && HOME="$tmp/home" PATH="$path" "$repo/scripts/start.sh" "$@" 2>&1)
  code=$?
  set -e
}
no_build() { [ ! -e "$repo/build" ] && [ ! -e "$repo/.autoresearchd" ] && [ ! -e "$tmp/setup.log" ] && echo yes || echo no; }

# 1. No nvidia-smi: the GPU line, at once.
start=$SECONDS
run "$nogpu_path"
check "no nvidia-smi exits 1" "$([ "$code" = 1 ] && echo yes || echo no)" "exit $code: $out"
check "no nvidia-smi is one line" "$([ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && echo yes || echo no)" "$out"
check "no nvidia-smi names the GPU and the fix" \
  "$([[ "$out" == "start.sh: ✗ gpu: no GPU visible: nvidia-smi not found (no NVIDIA driver); fix: "*'preflight.gpu = "off"'* ]] && echo yes || echo no)" "$out"
check "no nvidia-smi fails fast" "$([ $((SECONDS - start)) -le 5 ] && echo yes || echo no)" "$((SECONDS - start)) s"
check "no nvidia-smi builds nothing" "$(no_build)" "a build directory or setup ran"

# 2. nvidia-smi lists no GPU.
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' > "$tmp/stubs/nvidia-smi"
chmod +x "$tmp/stubs/nvidia-smi"
run "$gpu_path"
check "a failing nvidia-smi -L is quoted" \
  "$([ "$code" = 1 ] && [[ "$out" == "start.sh: ✗ gpu: no GPU visible: nvidia-smi -L failed: No devices were found; fix: "* ]] && echo yes || echo no)" "$out"

# 3. A GPU, but the inputs are missing and the fetch is off: the data line.
printf '#!/bin/sh\n[ "$1" = -L ] && echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"\n' > "$tmp/stubs/nvidia-smi"
sed 's/^fetch = true/fetch = false/' "$src/autoresearch.toml" > "$repo/autoresearch.toml"
run "$gpu_path"
check "missing inputs without the fetch name the key and the file" \
  "$([ "$code" = 1 ] && [ "$out" = "start.sh: ✗ data: data.train[0]: $tmp/shared/corpus/train.jsonl.xz: no such file or not readable; fix: put the file there, set data.train and data.val to your own files, or set data.fetch = true to download the default corpus (nothing was installed or built)" ] && echo yes || echo no)" "$out"
check "missing inputs build nothing" "$(no_build)" "a build directory or setup ran"

# 4. preflight.gpu = "off" skips the GPU check (no nvidia-smi at all); a fetch from a
#    mirror nothing listens on fails at its first URL when curl can ask.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 9)
sed "s|https://huggingface.co|http://127.0.0.1:$port|" "$src/data_sources/c4-en.urls" > "$repo/mirror.urls"
sed -e 's/^gpu = "nvidia-smi"/gpu = "off"/' -e 's|^sources = .*|sources = "mirror.urls"|' "$src/autoresearch.toml" > "$repo/off.toml"
run "$nogpu_path" --config off.toml
if command -v curl >/dev/null 2>&1; then
  check "an unreachable mirror is the data line" \
    "$([ "$code" = 1 ] && [[ "$out" == "start.sh: ✗ data: data.train[0]: "*", and the download cannot start: HEAD http://127.0.0.1:$port/datasets/allenai/c4/resolve/main/en/c4-train.00000-of-01024.json.gz: "* ]] && echo yes || echo no)" "$out"
  check "an unreachable mirror builds nothing" "$(no_build)" "a build directory or setup ran"
fi

# 5. Both pass (own inputs; the GPU check off): on to scripts/setup.sh.
mkdir -p "$tmp/shared/corpus"
echo '{"text":"a"}' > "$tmp/shared/corpus/train.jsonl.xz"
echo '{"text":"b"}' > "$tmp/shared/corpus/val.jsonl.xz"
run "$nogpu_path" --config off.toml
check "passing checks go on to setup.sh" "$([ -e "$tmp/setup.log" ] && [ ! -e "$repo/build" ] && echo yes || echo no)" "$out"

# 6. A --config that is not there.
run "$nogpu_path" --config nope.toml
check "a missing --config is one line" "$([ "$code" = 1 ] && [[ "$out" == "start.sh: ✗ config: nope.toml: no such file"* ]] && echo yes || echo no)" "$out"

# 7. scripts/setup.sh installs what running needs; --tests (scripts/test.sh) adds the
#    test-only packages. dpkg-query, apt-get, sudo and systemctl are stubs (the install
#    is recorded, no service is touched).
mkdir -p "$tmp/pkgbin"
printf '#!/bin/sh\nexit 1\n' > "$tmp/pkgbin/dpkg-query"
printf '#!/bin/sh\necho "$*" >> "%s/apt.log"\n' "$tmp" > "$tmp/pkgbin/apt-get"
# As a user with sudo, whose sudo runs apt-get (the stub) and records anything else.
printf '#!/bin/sh\necho 1000\n' > "$tmp/pkgbin/id"
printf '#!/bin/sh\n[ "$1" = apt-get ] && exec "$@"\necho "$*" >> "%s/sudo.log"\n' "$tmp" > "$tmp/pkgbin/sudo"
# No service is touched on this machine: systemctl says none is enabled or running.
printf '#!/bin/sh\nexit 1\n' > "$tmp/pkgbin/systemctl"
chmod +x "$tmp/pkgbin"/*
set +e
PATH="$tmp/pkgbin:$tmp/sysbin" "$src/scripts/setup.sh" > /dev/null 2>&1
run_install=$(grep install "$tmp/apt.log" 2>/dev/null)
rm -f "$tmp/apt.log"
PATH="$tmp/pkgbin:$tmp/sysbin" "$src/scripts/setup.sh" --tests > /dev/null 2>&1
test_install=$(grep install "$tmp/apt.log" 2>/dev/null)
set -e
has() { [[ " $1 " == *" $2 "* ]]; }
ok_run=yes
for p in cmake libgit2-dev bubblewrap gnuplot-nox libjs-chart.js; do has "$run_install" "$p" || ok_run=no; done
for p in chromium slurmd slurmctld slurm-client munge; do has "$run_install" "$p" && ok_run=no; done
check "setup.sh installs what running needs and no test-only package" "$ok_run" "$run_install"
ok_tests=yes
for p in cmake bubblewrap chromium slurmd slurmctld slurm-client munge python3; do has "$test_install" "$p" || ok_tests=no; done
check "setup.sh --tests adds the test-only packages" "$ok_tests" "$test_install"
check "start.sh runs setup.sh without --tests" \
  "$(grep -qx 'scripts/setup.sh' "$src/scripts/start.sh" && grep -qx 'scripts/setup.sh --tests' "$src/scripts/test.sh" && echo yes || echo no)" \
  "start.sh or test.sh calls setup.sh otherwise"

[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
