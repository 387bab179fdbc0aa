#!/usr/bin/env bash
# check_benchmarks.py fails when it should: on copies of the repo's index and
# pages, each broken one way, it must exit 1 and name the problem.
set -euo pipefail
src=${1:?usage: check_benchmarks_selftest.sh SOURCE_ROOT}
checker=$src/tests/docs/check_benchmarks.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fresh() {
  rm -rf "$work/repo"
  mkdir -p "$work/repo/benchmarks"
  cp "$src/BENCHMARKS.md" "$work/repo/"
  cp -r "$src/benchmarks/results" "$work/repo/benchmarks/"
}
failures=0
expect() {  # expect NAME PATTERN: the checker fails and prints PATTERN
  local name=$1 pattern=$2 out rc=0
  out=$(python3 "$checker" "$work/repo" 2>&1) || rc=$?
  if [[ $rc -eq 1 ]] && grep -q -- "$pattern" <<<"$out"; then
    echo "ok: $name"
  else
    echo "FAIL: $name: exit $rc, wanted 1 and '$pattern'; output:"
    echo "$out"
    failures=$((failures + 1))
  fi
}
fresh
python3 "$checker" "$work/repo" >/dev/null || { echo "FAIL: the unbroken copy does not pass"; exit 1; }
echo "ok: the unbroken copy passes"

fresh; sed -i '0,/^| kernels/s/^| kernels/| kernels and a very long explanation that no reader wants in an index row, going on and on/' "$work/repo/BENCHMARKS.md"
expect "a row over 150 characters" "more than 150"
fresh; sed -i '0,/| \[agent\] |$/s/| \[agent\] |$/| see the page |/' "$work/repo/BENCHMARKS.md"
expect "a row without a link" "without a \[page\] link"
fresh; sed -i 's#^\[ucx\]: .*#[ucx]: benchmarks/results/no_such_page.md#' "$work/repo/BENCHMARKS.md"
expect "a link to a missing page" "not a page in benchmarks/results/"
fresh; printf '# A page nobody indexed\n\n`benchmarks/x_bench.sh`\n' >"$work/repo/benchmarks/results/orphan.md"
expect "a page not in the index" "orphan.md: not linked"
fresh; sed -i '1s/.*/# MPI_Barrier through the switch: one node/' "$work/repo/benchmarks/results/archive/barrier_fabric.md"
expect "two pages with one title" "title also used by"
fresh; sed -i 's#benchmarks/[a-z0-9_]*\.sh#a script#g; s#`mpirun#`run#g; s#^\( *\)mpirun#\1run#' "$work/repo/benchmarks/results/cg.md"
expect "a page without its command" "cg.md: names no command"
fresh; for i in $(seq 100); do echo >>"$work/repo/BENCHMARKS.md"; done
expect "an index grown long" "more than 250"
fresh; echo "## The agent alone (one core, no MPI)" >>"$work/repo/BENCHMARKS.md"
expect "a repeated section title" "section title repeated"

if ((failures)); then echo "check_benchmarks_selftest: $failures case(s) not caught"; exit 1; fi
echo "check_benchmarks_selftest: every broken copy caught"
