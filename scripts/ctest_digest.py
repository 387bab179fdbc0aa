#!/usr/bin/env python3
"""After a failed ctest run: for each failed test, the lines of its output
that say why (FAIL, errors, sanitizer reports, timeouts, a nested ctest's
list of failures) and its last lines, so the tail of a long log names the
cause. Reads the console log ctest wrote with -O (scripts/test.sh passes
BUILD/ctest-output.log); not ctest's LastTest.log, which any `ctest -N`
in the build directory (tests/check_labels.py runs one) replaces mid-run.

  scripts/ctest_digest.py CONSOLE_LOG
"""
import re
import sys

DONE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(\*\*\*)?(\S+)")
NEXT = re.compile(r"^\s+Start\s+\d+: |^\d+% tests passed")
WHY = re.compile(r"FAIL|Fail|Expected|ERROR|error:|Sanitizer|runtime error|timed out|Timeout|"
                 r"Assertion|abort|Segmentation|what\(\)")
KEEP_WHY, KEEP_TAIL = 15, 6


def failures(lines):
    """(name, verdict, output lines) per failed test, in the order they ended."""
    cur = None
    for line in lines:
        m = DONE.match(line)
        if m or NEXT.match(line):
            if cur:
                yield cur
            cur = (m.group(1), m.group(3), []) if m and m.group(2) else None
        elif cur:
            cur[2].append(line)
    if cur:
        yield cur


def main():
    if len(sys.argv) != 2:
        print("usage: ctest_digest.py CONSOLE_LOG", file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"ctest_digest: cannot read the test log: {e}")
        return 0
    failed = list(failures(lines))
    if not failed:
        return 0
    print(f"\n==== why {len(failed)} test(s) failed (from {sys.argv[1]}) ====")
    for name, verdict, out in failed:
        out = [l for l in out if l.strip()]
        print(f"---- {name}: {verdict}")
        for l in [l for l in out if WHY.search(l)][-KEEP_WHY:]:
            print(f"  why | {l[:300]}")
        for l in out[-KEEP_TAIL:]:
            print(f"  end | {l[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
