#!/usr/bin/env bash
# bench_args (benchmarks/lib/bench_args.sh), the benchmark scripts' one
# command-line parser: value options (same-named and mapped variables, values
# with spaces), flags setting several variables, and the errors naming an
# unknown option or a missing value; and every benchmark script using it
# refuses an unknown option by name.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/benchmarks/lib/bench_args.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
np_list=x build=x large=0 min=8 max=64K report_only=0
bench_args demo 2,3 "build np=np_list max" "large=large=1,min=128K,max=4M" \
  --np "2 4" --build /b --large --max 8M
[[ $np_list == "2 4" && $build == /b && $large == 1 && $min == 128K && $max == 8M ]] ||
  fail "parsed np_list='$np_list' build='$build' large=$large min=$min max=$max"
err=$( (bench_args demo 2,3 "build" "" --bogus x) 2>&1) && fail "an unknown option was accepted"
[[ $err == "demo: unknown option --bogus" ]] || fail "unknown option message: $err"
err=$( (bench_args demo 2,3 "build" "" --build) 2>&1) && fail "a missing value was accepted"
[[ $err == "demo: --build needs a value" ]] || fail "missing value message: $err"
err=$( (bench_args demo 2,3 "build" "" -build x) 2>&1) && fail "a single-dash option was accepted"
n=0
for f in $(grep -l '^bench_args ' "$root"/benchmarks/*.sh); do
  name=$(sed -n 's/^bench_args \([a-z0-9_]*\) .*/\1/p' "$f")
  out=$("$f" --no-such-option 2>&1) && fail "$f accepted --no-such-option"
  [[ $out == "$name: unknown option --no-such-option" ]] || fail "$f: $out"
  "$f" --help | grep . >/dev/null || fail "$f --help printed nothing"
  n=$((n + 1))
done
((n >= 10)) || fail "only $n benchmark scripts use bench_args"
echo "PASS: bench_args and $n benchmark scripts"
