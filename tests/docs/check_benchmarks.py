#!/usr/bin/env python3
"""Keeps BENCHMARKS.md an index a reader can scan (issue 44).

Usage: check_benchmarks.py SOURCE_ROOT

Rules, each failure named with file:line:
  * every table row of BENCHMARKS.md is at most 150 characters and ends with
    a cell holding one reference link ([name]) to its page;
  * every reference resolves to a definition, and every definition to a file
    under benchmarks/results/ that exists;
  * every page in benchmarks/results/ and benchmarks/results/archive/ is
    linked from the index (a new result page needs its line);
  * every page starts with one '# ' title, no two pages share a title
    (titles name their configuration), and every page names the command
    that reproduces it (a benchmarks/ script, or mpirun/srun in code);
  * section titles of BENCHMARKS.md are unique, and it stays under 250 lines.
"""
import os
import re
import sys

from check_lib import report

MAX_ROW = 150
MAX_LINES = 250
ROW_LINK = re.compile(r"\|\s*\[([^\]]+)\]\s*\|\s*$")
DEFINITION = re.compile(r"^\[([^\]]+)\]:\s*(\S+)\s*$")
COMMAND = re.compile(r"benchmarks/[a-z0-9_]+\.(sh|py)|`(mpirun|srun)\b|^\s*(mpirun|srun)\b", re.M)


def check(root):
    errors = []
    index = os.path.join(root, "BENCHMARKS.md")
    results = os.path.join(root, "benchmarks", "results")
    with open(index, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if len(lines) > MAX_LINES:
        errors.append(f"BENCHMARKS.md: {len(lines)} lines, more than {MAX_LINES}: move detail to a page")

    used, defined, sections = {}, {}, {}
    for no, line in enumerate(lines, 1):
        where = f"BENCHMARKS.md:{no}"
        m = DEFINITION.match(line)
        if m:
            defined[m.group(1)] = (m.group(2), where)
            continue
        if line.startswith("#"):
            if line in sections:
                errors.append(f"{where}: section title repeated (first at {sections[line]}): {line}")
            sections.setdefault(line, where)
            continue
        if not line.startswith("|"):
            continue
        if len(line) > MAX_ROW:
            errors.append(f"{where}: row of {len(line)} characters, more than {MAX_ROW}")
        if re.match(r"^\|\s*(what|-+)\s*\|", line):
            continue  # header and separator
        m = ROW_LINK.search(line)
        if not m:
            errors.append(f"{where}: row without a [page] link in its last cell")
            continue
        used.setdefault(m.group(1), where)

    linked = set()
    for name, where in used.items():
        if name not in defined:
            errors.append(f"{where}: [{name}] has no definition ([{name}]: benchmarks/results/...)")
    for name, (target, where) in defined.items():
        path = os.path.normpath(os.path.join(root, target))
        if not target.startswith("benchmarks/results/") or not os.path.isfile(path):
            errors.append(f"{where}: [{name}] points at {target}, not a page in benchmarks/results/")
            continue
        if name not in used:
            errors.append(f"{where}: [{name}] is defined but no row links it")
        linked.add(path)

    titles = {}
    for sub in ("", "archive"):
        folder = os.path.join(results, sub)
        if not os.path.isdir(folder):
            continue
        for page in sorted(os.listdir(folder)):
            path = os.path.normpath(os.path.join(folder, page))
            if not page.endswith(".md") or not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, root)
            if path not in linked:
                errors.append(f"{rel}: not linked from BENCHMARKS.md (add its line to the index)")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            first = text.split("\n", 1)[0]
            if not first.startswith("# "):
                errors.append(f"{rel}:1: the page does not start with a '# ' title")
            elif first in titles:
                errors.append(f"{rel}:1: title also used by {titles[first]} (say the configuration): {first}")
            else:
                titles[first] = rel
            if not COMMAND.search(text) and not page.startswith("summary-"):
                errors.append(f"{rel}: names no command that reproduces it")
    return errors


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return report(check(sys.argv[1]), "check_benchmarks: problems",
                  "check_benchmarks: BENCHMARKS.md is an index of every page")


if __name__ == "__main__":
    sys.exit(main())
