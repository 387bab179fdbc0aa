#!/usr/bin/env bash
# Bootstraps and builds switchagg into ${SWITCHAGG_BUILD_DIR:-build}.
# Extra arguments go to cmake's configure step (e.g. -DSWITCHAGG_SANITIZE=ON).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHAGG_BUILD_DIR:-$root/build}
"$root/scripts/bootstrap.sh"
if [[ ! -f "$build/build.ninja" ]] || (($# > 0)); then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
