#!/usr/bin/env bash
# shellcheck disable=SC2016  # $ORIGIN is the loader's, not the shell's
# Packs what scripts/device_e2e.sh needs on the GPU machine (Ubuntu 24.04, no apt, no
# network) that this Debian 12 machine builds:
#   .device/ard/autoresearchd      the daemon, its rpath set to $ORIGIN/lib
#   .device/ard/lib/               the Debian shared libraries it links (from ldd), each with
#                                  rpath $ORIGIN, so their own dependencies are found there too;
#                                  glibc's and the compiler's runtime libraries stay behind
#                                  (Ubuntu 24.04's are newer and backward compatible)
#   .device/ard/bin/bwrap          Debian's bubblewrap (the daemon's sandbox; the GPU machine has
#                                  none), rpath $ORIGIN/../lib
#   .device/ard/prepare            the harness's prepare, statically linked (the GPU machine
#                                  lacks PCRE2's, xz's and zstd's development libraries)
#   .device/ard.tar.xz             the same folder compressed: with the 52 MB corpus beside it,
#                                  the folder alone would take a call past its 64 MiB
#   data/corpus/{train,val}.jsonl.xz   the pinned corpus (../shared does not travel)
# .device/ and data/ are git-ignored: a call carries them, e.g.
#   carry: [".device/ard.tar.xz", "data/corpus"]; command: scripts/device_e2e.sh $OUT
#   scripts/device_pack.sh [BUILD_DIR] [PREPARE_BUILD_DIR] [CORPUS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-release}
PREP=${2:-build-trainer-prepare}
CORPUS=${3:-../shared/corpus}
ARD=.device/ard

for tool in patchelf cmake ninja xz ldd; do
  command -v "$tool" >/dev/null || { echo "device_pack: $tool not found (apt-get install -y --no-install-recommends patchelf)" >&2; exit 1; }
done
for f in train.jsonl.xz val.jsonl.xz; do
  [ -f "$CORPUS/$f" ] || { echo "device_pack: $CORPUS/$f missing (the pinned corpus)" >&2; exit 1; }
done

# The daemon alone (no tests, no trainer: the daemon builds the trainer on the GPU machine).
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target autoresearchd
# prepare, static, as scripts/device_stage.sh builds it.
cmake -S trainer -B "$PREP" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHARNESS_STATIC_PREPARE=ON >/dev/null
cmake --build "$PREP" -j2 --target prepare

rm -rf "$ARD" .device/ard.tar.xz
mkdir -p "$ARD/lib" "$ARD/bin"
command -v bwrap >/dev/null || { echo "device_pack: bwrap not found (apt-get install -y bubblewrap)" >&2; exit 1; }
cp "$(command -v bwrap)" "$ARD/bin/bwrap"
cp "$BUILD/daemon/autoresearchd" "$ARD/"
strip "$ARD/autoresearchd"
cp "$PREP/harness/prepare" "$ARD/"
strip "$ARD/prepare"

# The libraries ldd resolves, but the base system's: the dynamic loader, glibc's libraries
# and the C++/GCC runtime, which the GPU machine has in newer, compatible versions.
base_lib() {
  case "$(basename "$1")" in
    ld-linux*|libc.so.*|libm.so.*|libdl.so.*|librt.so.*|libpthread.so.*|libresolv.so.*|libutil.so.*|\
    libstdc++.so.*|libgcc_s.so.*) return 0 ;;
  esac
  return 1
}
# pack_libs BINARY: its libraries (but the base system's) into lib/, each with rpath $ORIGIN.
pack_libs() {
  ldd "$1" | awk '/=> \//{print $1, $3}' | while read -r soname path; do
    base_lib "$path" && continue
    [ -f "$ARD/lib/$soname" ] && continue
    cp -L "$path" "$ARD/lib/$soname"
    chmod u+w "$ARD/lib/$soname"
    strip --strip-unneeded "$ARD/lib/$soname"
    patchelf --set-rpath '$ORIGIN' "$ARD/lib/$soname"
  done
}
pack_libs "$ARD/autoresearchd"
pack_libs "$ARD/bin/bwrap"
patchelf --set-rpath '$ORIGIN/lib' "$ARD/autoresearchd"
patchelf --set-rpath '$ORIGIN/../lib' "$ARD/bin/bwrap"

# Check here what the GPU machine will check: every library found in lib/ (none missing),
# and that the packed binary starts.
if ldd "$ARD/autoresearchd" "$ARD/bin/bwrap" | grep -q "not found"; then
  ldd "$ARD/autoresearchd" "$ARD/bin/bwrap" | grep "not found" >&2
  echo "device_pack: a library is not found through the rpath" >&2
  exit 1
fi
"$ARD/autoresearchd" --help >/dev/null
"$ARD/bin/bwrap" --version >/dev/null

mkdir -p data/corpus
cp "$CORPUS/train.jsonl.xz" "$CORPUS/val.jsonl.xz" data/corpus/
tar -C .device -cJf .device/ard.tar.xz ard
du -sh "$ARD" .device/ard.tar.xz data/corpus
echo "libraries packed: $(find "$ARD/lib" -type f | wc -l)"
