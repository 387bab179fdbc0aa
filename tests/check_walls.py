#!/usr/bin/env python3
"""Nothing outside a part includes that part's private headers.

  check_walls.py SOURCE_DIR      the tree: lists every crossing, exit 1 if any
  check_walls.py --selftest      plants a crossing in a scratch tree and
                                 checks it is caught (and a clean tree passes)

A part is a top-level folder of product code (PARTS). Its public headers
are those under its include/ folder; every other header in it is private
to it. A source or header file of one part may include its own part's
headers, any part's public headers and system headers; an include of
another part's private header is a crossing. Tests (tests/) are not a part:
they reach internals through the *_internal CMake targets.

The build draws the same walls: check_walls_cmake.py checks the parts'
CMake files (private folders are PRIVATE include directories, reached
through *_internal targets, which only their own part and the tests link).

The crossings that are known and meant are listed in ALLOWED, each with why;
a new one fails the check until it is moved behind a public header or
listed here with its reason.
"""
import os
import re
import sys
import tempfile

from check_walls_cmake import ALLOWED_LINKS, cmake_crossings
from check_walls_cmake import selftest as cmake_selftest

PARTS = ["common", "ucx_module", "switchagent", "mpi_coll", "spank_plugin", "apps", "benchmarks"]
HEADER_EXT = (".h", ".hpp")
SOURCE_EXT = (".c", ".cc", ".cpp") + HEADER_EXT
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# (including file, included private header) -> why it may cross.
ALLOWED = {
    ("apps/info/select_cmd.cc", "mpi_coll/core/select/selector.h"):
        "switchagg-info --select prints the selector's own decisions",
    ("apps/info/params_cmd.cc", "mpi_coll/core/select/algorithm_registry.h"):
        "switchagg-info lists the algorithm parameter's values from the registry",
    ("benchmarks/agent_kernel_bench.cc", "switchagent/engine/reduce_pool.h"):
        "the kernel benchmark measures the engine's reduce pool itself",
    ("benchmarks/agent_kernel_bench.cc", "switchagent/engine/slot_pool.h"):
        "the kernel benchmark measures the engine's slot pool itself",
    ("benchmarks/engine_bench.cc", "switchagent/engine/aggregation_engine.h"):
        "the engine benchmark drives the aggregation engine itself, in one process",
    ("benchmarks/engine_bench.cc", "switchagent/engine/reduce_pool.h"):
        "the engine benchmark gives the engine its reduce pool, as the data plane does",
}


def walk(root, part):
    top = os.path.join(root, part)
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in ("build",) and not x.startswith(".")]
        for f in files:
            if f.endswith(SOURCE_EXT):
                yield os.path.relpath(os.path.join(d, f), root)


def is_public(rel, part):
    return rel.startswith(part + "/include/")


def crossings(root):
    headers = {}  # rel path -> part
    files = []
    for part in PARTS:
        if not os.path.isdir(os.path.join(root, part)):
            continue
        for rel in walk(root, part):
            files.append((rel, part))
            if rel.endswith(HEADER_EXT):
                headers[rel] = part
    found = []
    for rel, part in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        here = os.path.dirname(rel)
        for name in INCLUDE.findall(text):
            # Beside the including file first (the compiler's own rule).
            if os.path.normpath(os.path.join(here, name)) in headers:
                target = os.path.normpath(os.path.join(here, name))
                if headers[target] == part or is_public(target, headers[target]):
                    continue
                candidates = [target]
            else:
                candidates = [h for h in headers if h == name or h.endswith("/" + name)]
            # Resolvable in its own part or through a public header: fine.
            if any(headers[h] == part or is_public(h, headers[h]) for h in candidates):
                continue
            for h in candidates:
                if (rel, h) not in ALLOWED:
                    found.append((rel, name, h))
    return found


def selftest():
    with tempfile.TemporaryDirectory() as root:
        def put(rel, text=""):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        put("common/include/switchagg/common/pub.h")
        put("common/src/inner.h")
        put("common/src/inner.cc", '#include "inner.h"\n#include "switchagg/common/pub.h"\n')
        put("apps/tool/main.cc", '#include "switchagg/common/pub.h"\n#include <vector>\n')
        clean = crossings(root)
        if clean:
            print("selftest: a clean tree reported crossings: %s" % clean)
            return 1
        put("apps/tool/main.cc", '#include "inner.h"\n')
        put("mpi_coll/core/x.cc", '#include "src/inner.h"\n')
        found = crossings(root)
        want = {("apps/tool/main.cc", "common/src/inner.h"), ("mpi_coll/core/x.cc", "common/src/inner.h")}
        got = {(rel, h) for rel, _, h in found}
        if got != want:
            print("selftest: planted %s, found %s" % (sorted(want), sorted(got)))
            return 1
        wrong = cmake_selftest(put, root, PARTS)
        if wrong:
            print("selftest (CMake): " + wrong)
            return 1
    print("selftest: a clean tree passes, both planted crossings are caught, and the CMake "
          "files' three breaches (a published private folder, an *_internal target linked "
          "PUBLIC, one linked from another part)")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--selftest":
        return selftest()
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = argv[1]
    found = crossings(root)
    for rel, name, h in found:
        print('%s: #include "%s" is %s, private to %s (make it public, or list it in '
              "tests/check_walls.py ALLOWED with why)" % (rel, name, h, h.split("/")[0]))
    for (rel, h), why in sorted(ALLOWED.items()) + sorted(ALLOWED_LINKS.items()):
        if not os.path.exists(os.path.join(root, rel)):
            print("ALLOWED names %s, which is gone: drop the entry" % rel)
            found.append((rel, "", h))
    walls = cmake_crossings(root, PARTS)
    for line in walls:
        print(line)
    if not found and not walls:
        print("no part includes another part's private headers (%d allowed: %s); the CMake "
              "files keep private folders PRIVATE (%d cross-part links allowed)"
              % (len(ALLOWED), "; ".join(sorted(set(ALLOWED.values()))), len(ALLOWED_LINKS)))
    return 1 if found or walls else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
