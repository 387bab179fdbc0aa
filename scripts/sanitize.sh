#!/usr/bin/env bash
# The tree built with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DSWITCHAGG_SANITIZE=ON, cmake/SwitchaggSanitizers.cmake) into its own
# build directory, then its tests run there: the unit, UCX and agent tests
# (leak checking on), and an MPI subset - Open MPI loading the sanitized
# component, MPICH preloading the sanitized PMPI library, the switch path
# with a sanitized agent, the nonblocking mix on both (leak checking off:
# the MPI libraries themselves are not built for it and keep memory to
# exit). Any report fails the run (UBSan does not recover).
#
#   scripts/sanitize.sh [BUILD_DIR]      (default: build-asan beside build)
#
# CI runs it as the test `sanitize_asan` (label sanitize). Prints PASS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${SWITCHAGG_BUILD_DIR:-$root/build}-asan}
# shellcheck source=scripts/lib_sanitize.sh
source "$root/scripts/lib_sanitize.sh"
sanitize_configure "$root" "$build" ON
cmake --build "$build" -j "$(nproc)" >"$build.build.log" 2>&1 ||
  { tail -50 "$build.build.log"; echo "FAIL: the sanitized build" >&2; exit 1; }
cd "$build"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# UCX keeps its contexts' memory to exit: tests/sanitize/lsan.supp.
export LSAN_OPTIONS=suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0
# Unit, UCX and agent tests: every process sanitized, leaks reported (not
# fuzz_short: it builds and runs its own sanitized fuzz targets, and the
# plain suite runs it - here it was a second copy, 330 s of the 1116). A
# test that failed without a sanitizer report (a timing bound missed under
# the sanitizer's slowdown on loaded cores: its verdict is the plain build's,
# in the same suite) is run once more, alone, and named; a sanitizer report
# is never retried.
log=$build/sanitize-unit.log
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
if ! ctest --output-on-failure --test-output-truncation tail --timeout 600 -j 2 -O "$log" \
  -L 'unit|ucx|agent' -LE 'mpi|fabric|slurm|chaos|packages|ompi5|docs|fuzz'; then
  rc=0
  again=$(python3 "$root/scripts/ctest_digest.py" --rerun-regex "$log") || rc=$?
  if ((rc == 3)); then
    echo "FAIL: sanitize: a failed test has a sanitizer report (above)" >&2
    exit 1
  elif ((rc != 0)); then
    echo "FAIL: sanitize: the unit, UCX and agent tests failed (see above)" >&2
    exit 1
  fi
  echo "sanitize: failed without a sanitizer report, run once more alone: $again"
  ctest --output-on-failure --timeout 600 -R "$again" ||
    { echo "FAIL: sanitize: failed twice: $again" >&2; exit 1; }
fi
# The MPI subset. The PMPI library is preloaded ahead of the sanitizer's
# runtime in the program (verify_asan_link_order=0 lets it).
mpi_subset='^(mpi_allreduce_(ring|rabenseifner)_np3|mpich_allreduce_ring_np3|mpi_switch_serve_np2|mpich_switch_serve_np3|mpi_nbc_mix_np4|mpich_switch_nbc_mix_np4|mpich_switch_nbc_mix_threads_np4|mpi_threads_ring_np2|mpi_negative_rank_np3)$'
listed=$(ctest -N -R "$mpi_subset" | sed -n 's/^Total Tests: //p')
[[ $listed == 10 ]] || { echo "FAIL: the MPI subset selects $listed tests, not 10 (renamed?)" >&2; exit 1; }
ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 \
  ctest --output-on-failure --test-output-truncation tail --timeout 600 -R "$mpi_subset"
echo "PASS sanitize: unit, UCX, agent and the MPI subset under ASan + UBSan"
