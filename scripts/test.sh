#!/usr/bin/env bash
# README command two: bootstrap, build (warnings as errors), run every test.
# Extra arguments go to ctest (e.g. -L unit, -L mpi, -R agent).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHAGG_BUILD_DIR:-$root/build}
SWITCHAGG_BUILD_DIR=$build "$root/scripts/build.sh" -DSWITCHAGG_WERROR=ON
cd "$build"
# A label or pattern that selects nothing is a mistake, not a pass.
if (($# > 0)); then
  selected=$(ctest -N "$@" | sed -n 's/^Total Tests: //p')
  if [[ ${selected:-0} -eq 0 ]]; then
    echo "scripts/test.sh: no test matches: $*" >&2
    exit 1
  fi
fi
ctest --output-on-failure --timeout 600 "$@"
