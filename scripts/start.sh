#!/usr/bin/env bash
# Checks the machine, installs what running needs, builds autoresearchd and
# starts it on this repo:
#   scripts/start.sh [--tag TAG] [--detach] [--config PATH]
# Later: build/daemon/autoresearchd status | stop | show ID | export
#
# Before anything is installed or built, two checks that a build cannot fix,
# each failing with one line (`autoresearchd doctor` runs them and the rest
# once the daemon is built):
#   gpu   `nvidia-smi -L` lists a GPU (preflight.gpu = "off": not checked;
#         another string: that command must exit 0)
#   data  the [data] inputs are readable, or data.fetch is on and the source
#         list is readable (and, where curl is installed, its first URL answers)
# The config is read for these few keys only; the daemon validates it whole.
set -euo pipefail
cd "$(dirname "$0")/.."

config=autoresearch.toml
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --config) config=${args[i + 1]:-} ;;
    --config=*) config=${args[i]#--config=} ;;
  esac
done

fail() {
  echo "start.sh: $1 (nothing was installed or built)" >&2
  exit 1
}

# The raw value of table.key in the config (an array on one line), or nothing.
# Reads `[table]` sections and dotted `table.key = ` lines; comments dropped.
toml_value() {
  [ -f "$config" ] || return 0
  awk -v want="$1.$2" -v sq="'" '
    function strip(line,   out, i, c, q) {
      out = ""; q = ""
      for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q == "" && c == "#") break
        if (q == "" && (c == "\"" || c == sq)) q = c; else if (c == q) q = ""
        out = out c
      }
      return out
    }
    { line = strip($0) }
    collecting { val = val " " line; if (index(line, "]")) { print val; exit } next }
    line ~ /^[ \t]*\[\[/ { table = "[["; next }
    line ~ /^[ \t]*\[/ { table = line; gsub(/[ \t\[\]]/, "", table); next }
    index(line, "=") {
      k = line; sub(/=.*/, "", k); gsub(/[ \t]/, "", k)
      if ((table == "" ? k : table "." k) != want) next
      v = line; sub(/^[^=]*=[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
      if (v ~ /^\[/ && !index(v, "]")) { collecting = 1; val = v; next }
      print v; exit
    }
  ' "$config"
}

# The quoted strings of a value, one a line.
strings_of() { printf '%s\n' "$1" | grep -o "\"[^\"]*\"\|'[^']*'" | sed "s/^.//; s/.\$//" || true; }
# A scalar value without its quotes.
scalar() { strings_of "$1" | head -n 1 | grep . || printf '%s\n' "$1"; }
# A path as the daemon resolves it: ~ is the home, a relative path is in the repo.
resolve() {
  local p
  case "$1" in "~/"*) p="$HOME/${1#\~/}" ;; /*) p=$1 ;; *) p="$PWD/$1" ;; esac
  realpath -m -- "$p" 2>/dev/null || echo "$p"
}

if [ -n "$config" ] && [ "$config" != autoresearch.toml ] && [ ! -f "$config" ]; then
  fail "✗ config: $config: no such file"
fi

# gpu
gpu=$(scalar "$(toml_value preflight gpu)")
gpu=${gpu:-nvidia-smi}
off_fix='or set preflight.gpu = "off" in autoresearch.toml if the stages need no GPU'
if [ "$gpu" = nvidia-smi ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    fail "✗ gpu: no GPU visible: nvidia-smi not found (no NVIDIA driver); fix: install the NVIDIA driver on a machine with a Hopper GPU (H100/H200), $off_fix"
  fi
  if ! listed=$(nvidia-smi -L 2>&1); then
    fail "✗ gpu: no GPU visible: nvidia-smi -L failed: $(printf '%s\n' "$listed" | grep . | tail -n 1); fix: check the NVIDIA driver, $off_fix"
  fi
  if ! printf '%s\n' "$listed" | grep -q '^GPU [0-9]'; then
    fail "✗ gpu: no GPU visible: nvidia-smi -L lists none; fix: check CUDA_VISIBLE_DEVICES and the driver, $off_fix"
  fi
elif [ "$gpu" != off ]; then
  if ! out=$(sh -c "$gpu" 2>&1); then
    fail "✗ gpu: \`$gpu\` (preflight.gpu) failed: $(printf '%s\n' "$out" | grep . | tail -n 1); fix: make the GPU usable, $off_fix"
  fi
fi

# data
if [ "$(scalar "$(toml_value data enabled)")" != false ]; then
  train=$(toml_value data train)
  val=$(toml_value data val)
  missing=""
  for key in train val; do
    value=${!key}
    if [ -z "$value" ]; then value="[\"../shared/corpus/$key.jsonl.xz\"]"; fi
    n=0
    while IFS= read -r f; do
      [ -n "$f" ] || continue
      path=$(resolve "$f")
      if [ -z "$missing" ] && [ ! -r "$path" ]; then missing="data.$key[$n]: $path: no such file or not readable"; fi
      n=$((n + 1))
    done < <(strings_of "$value")
  done
  if [ -n "$missing" ]; then
    if [ "$(scalar "$(toml_value data fetch)")" = false ]; then
      fail "✗ data: $missing; fix: put the file there, set data.train and data.val to your own files, or set data.fetch = true to download the default corpus"
    fi
    sources=$(scalar "$(toml_value data sources)")
    sources=$(resolve "${sources:-data_sources/c4-en.urls}")
    if [ ! -r "$sources" ]; then
      fail "✗ data: $missing, and the source list $sources (data.sources) cannot be read; fix: point data.sources at a URL list, or set data.train and data.val to your own files"
    fi
    # The first URL, its {A..B} range at its first value.
    url=$(awk '$1 == "train" || $1 == "val" { print $2; exit }' "$sources" | sed 's/{\([^.}]*\)\.\.[^}]*}/\1/')
    if [ -z "$url" ]; then
      fail "✗ data: $missing, and the source list $sources (data.sources) names no URL; fix: add \`train URL\` and \`val URL\` lines"
    fi
    if command -v curl >/dev/null 2>&1; then
      if ! err=$(curl -sS -I -L -o /dev/null --connect-timeout 5 --max-time 15 "$url" 2>&1); then
        fail "✗ data: $missing, and the download cannot start: HEAD $url: $(printf '%s\n' "$err" | grep . | tail -n 1); fix: check the network (or set https_proxy), or set data.train and data.val to local files"
      fi
    fi
  fi
fi

scripts/setup.sh
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target autoresearchd
exec build/daemon/autoresearchd start "$@"
