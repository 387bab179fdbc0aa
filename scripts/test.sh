#!/usr/bin/env bash
# README command two: bootstrap, build (warnings as errors), run every test.
# Extra arguments go to ctest (e.g. -L unit, -L mpi, -R agent).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHAGG_BUILD_DIR:-$root/build}
SWITCHAGG_BUILD_DIR=$build "$root/scripts/build.sh" -DSWITCHAGG_WERROR=ON
cd "$build"
ctest --output-on-failure --timeout 600 "$@"
