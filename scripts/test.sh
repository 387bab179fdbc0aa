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
# A failed test's output keeps its end (where the verdict is); after a failure
# a digest of why each test failed ends the log, so its tail names the cause.
status=0
ctest --output-on-failure --test-output-truncation tail --timeout 600 -O "$build/ctest-output.log" \
  "$@" || status=$?
if ((status != 0)); then
  python3 "$root/scripts/ctest_digest.py" "$build/ctest-output.log" || true
fi
exit "$status"
