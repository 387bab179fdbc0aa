#!/bin/sh
# run_expect.sh [--exit CODE] PATTERN [PATTERN...] -- COMMAND...
# Runs COMMAND; passes when it exits 0 (or CODE) and its combined output
# matches every PATTERN (grep -E). With the pattern "^PASS" (a check
# program's verdict, tests/mpi/verdict.h) any line starting FAIL, from any
# rank, fails it too. Prints the output either way, for ctest
# --output-on-failure.
want=0
if [ "$1" = "--exit" ]; then
  want=$2
  shift 2
fi
patterns=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  patterns="$patterns
$1"
  shift
done
[ "$1" = "--" ] && shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -ne "$want" ]; then
  echo "run_expect: command exited $rc, expected $want" >&2
  exit 1
fi
if printf '%s\n' "$patterns" | grep -qx '\^PASS' && printf '%s\n' "$out" | grep -q '^FAIL'; then
  echo "run_expect: a FAIL line: $(printf '%s\n' "$out" | grep -m1 '^FAIL')" >&2
  exit 1
fi
status=0
printf '%s\n' "$patterns" | while IFS= read -r p; do
  [ -z "$p" ] && continue
  if ! printf '%s\n' "$out" | grep -Eq -- "$p"; then
    echo "run_expect: output lacks /$p/" >&2
    exit 1
  fi
done || status=1
exit $status
