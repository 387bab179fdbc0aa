#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan in their own build dir
# and runs each for SECONDS (default 30). Exits non-zero if a target crashes,
# leaks or trips a sanitizer; the reproducer lands in <build>/artifacts/.
#
#   tests/fuzz/run_fuzz.sh [SECONDS] [TARGET...]
#   SWITCHAGG_FUZZ_BUILD_DIR=/tmp/fz tests/fuzz/run_fuzz.sh 10 fuzz_control
#
# Seeds: tests/fuzz/<X>_corpus/ for target fuzz_<X> (read only); inputs the
# fuzzer finds go to <build>/corpus/<target>/. Targets: tests/fuzz/CMakeLists.txt.
#
# The longer run (docs/security.md, "Hostile HTTP"): tests/fuzz/run_fuzz.sh 600.
# With SWITCHAGG_FUZZ_MERGE=1 each target's finds that add coverage are
# then merged into its seed corpus in the repo (libFuzzer -merge=1), for
# review and commit; a crash's reproducer belongs there too, next to the
# unit test of its fix.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SWITCHAGG_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-30}
shift || true

# -g1: line tables (file:line in crash stacks) at a quarter less compile time
# than -g.
sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
    -DSWITCHAGG_BUILD_FUZZ=ON -DSWITCHAGG_BUILD_TESTS=OFF \
    -DSWITCHAGG_BUILD_MPI=OFF -DSWITCHAGG_BUILD_SPANK=OFF >/dev/null
fi
if (($# > 0)); then
  targets=("$@")
else
  cmake "$build" >/dev/null  # refresh fuzz_targets.txt
  mapfile -t targets < <(grep -v '^$' "$build/fuzz_targets.txt")
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

mkdir -p "$build/artifacts"
failed=()
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/${t#fuzz_}_corpus"
  work="$build/corpus/$t"
  mkdir -p "$work"
  dirs=("$work")
  [[ -d "$seeds" ]] && dirs+=("$seeds")
  echo "run_fuzz: $t for ${seconds}s (seeds: ${seeds#$root/})" >&2
  if ! "$build/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "${dirs[@]}" \
       2>"$build/$t.log"; then
    failed+=("$t")
    tail -n 40 "$build/$t.log" >&2
  else
    grep -E "stat::number_of_executed_units|cov:" "$build/$t.log" | tail -n 2 >&2 || true
    if [[ "${SWITCHAGG_FUZZ_MERGE:-0}" == 1 ]]; then
      mkdir -p "$seeds"
      "$build/bin/$t" -merge=1 -timeout=10 -rss_limit_mb=2048 "$seeds" "$work" \
        2>>"$build/$t.log" >&2
      echo "run_fuzz: $t: ${seeds#$root/} now holds $(ls "$seeds" | wc -l) inputs" >&2
    fi
  fi
done
if ((${#failed[@]} > 0)); then
  echo "run_fuzz: FAILED: ${failed[*]} (reproducers in $build/artifacts/)" >&2
  exit 1
fi
echo "run_fuzz: ${#targets[@]} target(s) ran ${seconds}s each without a crash" >&2
