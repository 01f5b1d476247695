#!/usr/bin/env bash
# Installs the Debian 12 packages that autoresearchd needs. Idempotent: does
# nothing when everything is already installed.
#   scripts/setup.sh           what building and running the daemon needs (scripts/start.sh)
#   scripts/setup.sh --tests   that, and what only the tests use (scripts/test.sh)
# The CUDA toolkit is not installed here; without it the trainer's CUDA part is
# skipped and everything else still builds and tests.
#
# Running: the toolchain and libraries; libgtest-dev and libgmock-dev because
# configuring the project needs them; bubblewrap, the sandbox of every child;
# libjs-chart.js, the Chart.js that `serve` serves; gnuplot-nox draws `plot`.
# Tests only: chromium runs the dashboard's browser test; python3 runs the fake
# servers; sqlite3 reads stores; slurmctld, slurmd, slurm-client and munge make
# the single-node Slurm cluster each Slurm test starts and stops itself
# (tests/slurm/cluster.py). With --tests, their system services are disabled
# and stopped, so no Slurm cluster or munged is left running or enabled.
set -euo pipefail

tests=no
for arg in "$@"; do
  case "$arg" in
    --tests) tests=yes ;;
    *) echo "scripts/setup.sh: unknown argument $arg (usage: scripts/setup.sh [--tests])" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates xz-utils
  libgit2-dev libboost1.81-dev libcurl4-openssl-dev
  nlohmann-json3-dev libsqlite3-dev libgtest-dev libgmock-dev
  libcli11-dev libtomlplusplus-dev
  libpcre2-dev liblzma-dev zlib1g-dev libzstd-dev
  bubblewrap libjs-chart.js gnuplot-nox
)
test_packages=(python3 sqlite3 slurmctld slurmd slurm-client munge chromium)
# The services the Slurm and munge packages enable when installed.
test_services=(slurmctld slurmd munge)
if [ "$tests" = yes ]; then packages+=("${test_packages[@]}"); fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# The tests start their own Slurm daemons and munged; the packages' services
# must not run or start at boot. Acts only on a service that is enabled or running.
disable_test_services() {
  local s
  for s in "${test_services[@]}"; do
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
      if systemctl is-enabled --quiet "$s" 2>/dev/null || systemctl is-active --quiet "$s" 2>/dev/null; then
        $sudo systemctl disable --now "$s" >/dev/null 2>&1 || true
        echo "setup: disabled and stopped the $s service (the tests start their own)"
      fi
    elif [ -x "/etc/init.d/$s" ] && "/etc/init.d/$s" status >/dev/null 2>&1; then
      $sudo "/etc/init.d/$s" stop >/dev/null 2>&1 || true
      if command -v update-rc.d >/dev/null 2>&1; then $sudo update-rc.d "$s" disable >/dev/null 2>&1 || true; fi
      echo "setup: stopped the $s service (the tests start their own)"
    fi
  done
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "$tests" = yes ]; then disable_test_services; fi
