#!/usr/bin/env python3
"""Every file docs/design.md's recipes name exists.

Usage: check_design_paths.py SOURCE_ROOT [DOC]
       check_design_paths.py --selftest SOURCE_ROOT

In the section "## Where a change goes" of docs/design.md (or DOC), every
`backquoted` word that looks like a path (it holds a '/' or ends in a source
or doc extension) must name a file or folder of the source tree: the path
itself from the root, or the end of a longer path (`runtime/routed.cc` is
mpi_coll/core/runtime/routed.cc).
`a.{h,cc}` names both; a `<placeholder>` part is skipped but the folder
before it must exist. Each path that names nothing fails, with its line.
--selftest checks copies of the doc with one path broken each way (a plain
path, a short path, one name of a brace pair, a placeholder's folder).
"""
import os
import re
import sys

from check_lib import expect_caught, split_args

SECTION = "## Where a change goes"
EXT = re.compile(r"\.(cc|h|c|md|py|sh|cmake|toml|txt|json|rules)$")
SKIP_DIRS = {".git", "build"}


def tree(root):
    paths = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
        rel = os.path.relpath(d, root)
        if rel != ".":
            paths.add(rel)
        for f in files:
            paths.add(os.path.normpath(os.path.join(rel, f)))
    return paths


def expand(token):
    m = re.search(r"\{([^}]*)\}", token)
    if not m:
        return [token]
    return [token[:m.start()] + alt + token[m.end():] for alt in m.group(1).split(",")]


def resolve(path, paths):
    path = path.rstrip("/")
    if path in paths:
        return True
    hits = [p for p in paths if p.endswith("/" + path)]
    return len(hits) >= 1


def check(doc, lines, paths):
    errors, checked, inside = [], 0, False
    for no, line in enumerate(lines, 1):
        if line.startswith("## "):
            inside = line.strip() == SECTION
            continue
        if not inside:
            continue
        for token in re.findall(r"`([^`\s]+)`", line):
            if token.startswith("-") or "::" in token or "(" in token:
                continue
            if "/" not in token and not EXT.search(token):
                continue
            for path in expand(token):
                if "<" in path:
                    path = path[:path.index("<")]
                    path = path[:path.rfind("/")] if "/" in path else ""
                    if not path:
                        continue
                checked += 1
                if not resolve(path, paths):
                    errors.append(f"{os.path.basename(doc)}:{no}: `{token}`: no such file or "
                                  f"folder ({path})")
    if checked == 0:
        errors.append(f"{doc}: no paths found under '{SECTION}'")
    return errors, checked


def selftest(root, doc, lines, paths):
    text = "\n".join(lines)
    cases = [("a plain path", "`docs/agent-protocol.md`", "`docs/agent-protocolx.md`"),
             ("a short path", "`select/algorithm_registry.cc`", "`select/algorithm_registryx.cc`"),
             ("a brace pair", "cost_model.{h,cc}", "cost_model.{h,ccx}"),
             ("a placeholder's folder", "mpi_coll/core/algorithms/allreduce_<name>.cc",
              "mpi_coll/core/algorithmsx/allreduce_<name>.cc")]
    errors, _ = check(doc, lines, paths)
    if errors:
        print("FAIL: the doc as it is does not pass: " + "; ".join(errors))
        return 1
    missing = [good for _, good, _ in cases if good not in text]
    if missing:
        print(f"FAIL: no longer in the doc (update the selftest): {missing}")
        return 1
    return expect_caught([(name, check(doc, text.replace(good, bad, 1).split("\n"), paths)[0],
                           bad.strip("`")) for name, good, bad in cases])


def main(argv):
    test, args = split_args(argv, (1, 2), __doc__)
    root = args[0]
    doc = args[1] if len(args) == 2 else os.path.join(root, "docs", "design.md")
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    paths = tree(root)
    if test:
        return selftest(root, doc, lines, paths)
    errors, checked = check(doc, lines, paths)
    for e in errors:
        print(e)
    if not errors:
        print(f"ok: {checked} paths named by the recipes exist")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
