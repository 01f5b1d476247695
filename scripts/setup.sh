#!/usr/bin/env bash
# Installs the Debian 12 packages that autoresearchd, its tests and the trainer's
# harness need. Idempotent: does nothing when everything is already installed.
# The CUDA toolkit is not installed here; without it the trainer's CUDA part is
# skipped and everything else still builds and tests. chromium runs the
# dashboard's browser test; libjs-chart.js is the Chart.js that `serve` serves;
# gnuplot-nox draws `plot`'s chart.
# slurmctld, slurmd, slurm-client and munge: the single-node Slurm cluster
# the Slurm executor's tests start (tests/slurm/cluster.py).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates xz-utils
  libgit2-dev libboost1.81-dev libcurl4-openssl-dev
  nlohmann-json3-dev libsqlite3-dev sqlite3 libgtest-dev libgmock-dev
  libcli11-dev libtomlplusplus-dev
  libpcre2-dev liblzma-dev zlib1g-dev libzstd-dev
  python3 bubblewrap
  slurmctld slurmd slurm-client munge
  chromium libjs-chart.js gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
