#!/usr/bin/env python3
"""No 'producer | grep -q' or 'producer | head' in a shell script that sets
pipefail.

grep -q exits at its first match, head after its lines; a producer still
writing then dies of SIGPIPE, and pipefail turns the match into a failure
(under set -e, an assignment from it ends the script). It happens only under
load (ldd | grep -q failed 34 of 300 runs on a busy 2-core machine), so the
check that broke CI passes every quiet run. Read the whole output instead:
'producer | grep PATTERN >/dev/null', 'producer | sed -n 1,Np'.

  check_pipes.py ROOT        every *.sh under ROOT (build dirs skipped)
  check_pipes.py --selftest  the check catches a planted line
"""
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "docs"))
from check_lib import report  # noqa: E402

PIPE_EARLY_EXIT = re.compile(r"(?<!\|)\|(?!\|)\s*(grep\s+(-[A-Za-z]*q[A-Za-z]*\b|--quiet\b)|head\b)")


def offences(path):
    text = path.read_text(errors="replace")
    if "pipefail" not in text:
        return []
    found = []
    for no, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        if PIPE_EARLY_EXIT.search(code):
            found.append(f"{path}:{no}: {line.strip()}")
    return found


def scan(root):
    found = []
    for path in sorted(pathlib.Path(root).rglob("*.sh")):
        if any(part.startswith("build") or part.startswith(".") for part in path.relative_to(root).parts[:-1]):
            continue
        found += offences(path)
    return found


def main():
    if sys.argv[1:] == ["--selftest"]:
        with tempfile.TemporaryDirectory() as d:
            p = pathlib.Path(d, "t.sh")
            p.write_text("set -euo pipefail\nldd x | grep libtsan >/dev/null\n")
            assert not scan(d), "a full read was flagged"
            p.write_text("set -euo pipefail\nldd x | grep -q libtsan || exit 1\ngrep -q y f || grep -q z f\n"
                         "v=$(ucx_info -v | head -1)\nw=$(ucx_info -v | sed -n 1p)\n")
            assert len(scan(d)) == 2, "the planted 'ldd | grep -q' and '| head -1' were not both caught"
        print("PASS check_pipes selftest")
        return 0
    return report(scan(sys.argv[1]),
                  "FAIL: 'producer | grep -q' or '| head' under pipefail (a SIGPIPE race; use "
                  "'grep ... >/dev/null' or 'sed -n 1,Np')",
                  "PASS check_pipes: no 'producer | grep -q' or '| head' under pipefail")


if __name__ == "__main__":
    sys.exit(main())
