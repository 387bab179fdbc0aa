#!/usr/bin/env python3
"""After a failed ctest run: for each failed test, the lines of its output
that say why (FAIL, errors, sanitizer reports, timeouts, a nested ctest's
list of failures) and its last lines, so the tail of a long log names the
cause. Reads the console log ctest wrote with -O (scripts/test.sh passes
BUILD/ctest-output.log); not ctest's LastTest.log, which any `ctest -N`
in the build directory (tests/check_labels.py runs one) replaces mid-run.

  scripts/ctest_digest.py CONSOLE_LOG            the digest
  scripts/ctest_digest.py --rerun-regex CONSOLE_LOG
      a ctest -R regex selecting exactly the failed tests; exit 3 when a
      failed test's output holds a sanitizer report (never to be retried)
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


SANITIZER = re.compile(r"ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:|"
                       r"WARNING: ThreadSanitizer")


def rerun_regex(failed):
    """The -R regex of the failed tests; 3 if one of them has a sanitizer report."""
    if not failed:
        return 2
    if any(SANITIZER.search(l) for _, _, out in failed for l in out):
        return 3
    print("^(" + "|".join(re.sub(r"([][.*+?()|^$\\{}])", r"\\\1", n) for n, _, _ in failed) + ")$")
    return 0


def main():
    args = sys.argv[1:]
    rerun = bool(args) and args[0] == "--rerun-regex"
    if rerun:
        args = args[1:]
    if len(args) != 1:
        print("usage: ctest_digest.py [--rerun-regex] CONSOLE_LOG", file=sys.stderr)
        return 2
    try:
        with open(args[0], errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"ctest_digest: cannot read the test log: {e}", file=sys.stderr)
        return 2 if rerun else 0
    failed = list(failures(lines))
    if rerun:
        return rerun_regex(failed)
    if not failed:
        return 0
    print(f"\n==== why {len(failed)} test(s) failed (from {args[0]}) ====")
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
