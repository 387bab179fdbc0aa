#!/usr/bin/env bash
# docs_runner_selftest: the docs test must fail when a doc is wrong, naming
# the place. Runs tests/docs/run_doc.py on the sample docs in selftest/ and
# checks exit code and message of each.
#   selftest.sh BUILD SRC
set -uo pipefail
build=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
failures=0

# expect CASE RC PATTERN: run_doc.py on selftest/CASE.md exits RC and prints PATTERN.
expect() {
  local case=$1 want_rc=$2 pattern=$3 out rc
  out=$("$here/run_doc.py" --name "$case.md" --logs "$tmp/logs" \
        "$here/selftest/$case.md" "$build" "$src" 2>&1)
  rc=$?
  if [[ $rc -ne $want_rc ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $case: want exit $want_rc and /$pattern/, got exit $rc:"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  else
    echo "ok   $case: exit $rc, $(grep -m1 -E -- "$pattern" <<<"$out")"
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect pass 0 'pass.md: PASS'
expect pass 0 'SYNTAX-ONLY pass.md:20 \(not run: shows the suite itself\)'
expect pass 0 '^\[pass.md:7\] \$ echo "\$greeting" \\$'
expect fail 1 'FAILED \(exit 1\) at fail.md:5$'
expect hidden 2 'ERROR hidden.md:4: command-like line in a ```text block'
expect untagged 2 'ERROR untagged.md:3: untagged code block'
expect unknown_directive 2 "ERROR unknown_directive.md:3: unknown doc-test directive 'fixtur'"
expect unknown_fixture 2 "ERROR unknown_fixture.md:3: unknown fixture 'gpu'"
expect timeout 1 'TIMEOUT after 1 s at timeout.md:5$'
expect unresolved 2 "ERROR unresolved.md:5: 'no-such-command-anywhere' does not resolve"
# fail.md's third command never ran.
if "$here/run_doc.py" --name fail.md --logs "$tmp/logs" "$here/selftest/fail.md" "$build" "$src" |
   grep -q 'never printed$'; then
  echo "FAIL fail: the command after the failing one ran"
  failures=$((failures + 1))
fi
((failures == 0)) && echo "all runner self-checks passed"
exit $((failures > 0))
