#!/usr/bin/env python3
"""Every label a test is declared with in the CMake files reaches CTest.

  check_labels.py SOURCE_DIR BUILD_DIR

Reads the test declarations from the source (tests/**/CMakeLists.txt and
tests/**/*.cmake), not from a list kept here:
  * gtest_discover_tests / switchagg_discover_tests(<target> [TEST_SUFFIX s]
    PROPERTIES LABELS l ...): every test the built binary lists
    (--gtest_list_tests), with the suffix, must be in CTest with all of l;
  * gtest_add_tests(TARGET t SOURCES ... TEST_LIST V) and then
    set_tests_properties(${V} PROPERTIES LABELS l): every TEST/TEST_F of
    those sources must be in CTest with all of l;
  * set_tests_properties(<literal names> PROPERTIES LABELS l): each name must
    be in CTest with all of l.
Calls of the tests' own CMake functions (add_switch_test, add_slurm_case,
...) and foreach loops are expanded, parameters bound, so a test declared
through a helper is checked like a literal one. Then by name: a test about
a fault (fault, kill, crash, agent_down, peer_failure, link_down in its
name) must carry `fault`, and one named mpich_* or *_mpich_* `mpich`.
Then asks CTest (ctest --show-only=json-v1 in BUILD_DIR) what it has, and
checks `ctest -N -L fault` lists every ControlFaults.* test. A declaration
whose binary or test this build does not configure is listed as such (it
is not an error: MPI or Slurm parts may be off); a binary that is built but
has no test in CTest is an error.
"""
import glob
import json
import os
import re
import subprocess
import sys

PROPERTY_KEYWORDS = {"PROPERTIES"}
# Names of tests about a failure ("Default" is not one).
FAULT_NAME = re.compile(r"(?<![Dd]e)[Ff]ault|[Kk]ill|[Cc]rash|agent_down|AgentDown|peer_failure|"
                        r"PeerFailure|link_down|LinkDown")
# Tests run under MPICH are named mpich_* (or *_mpich_*); a unit test that
# only mentions MPICH in CamelCase is not one.
MPICH_NAME = re.compile(r"(^|_)mpich(_|$)")
GTEST_KEYWORDS = {"TEST_SUFFIX", "TEST_PREFIX", "EXTRA_ARGS", "WORKING_DIRECTORY", "TEST_LIST",
                  "TEST_FILTER", "DISCOVERY_TIMEOUT", "DISCOVERY_MODE", "XML_OUTPUT_DIR",
                  "PROPERTIES", "NO_PRETTY_TYPES", "NO_PRETTY_VALUES"}


def strip_comment(line):
    out, quoted, i = [], False, 0
    while i < len(line):
        c = line[i]
        if c == "\\" and quoted:
            out.append(line[i:i + 2])
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "#" and not quoted:
            break
        out.append(c)
        i += 1
    return "".join(out)


def commands(path):
    """(name, [args]) of every command call in a CMake file; quoted args keep ';'."""
    text = "\n".join(strip_comment(line) for line in open(path, encoding="utf-8"))
    for m in re.finditer(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text):
        i, depth, args, cur, quoted, had = m.end(), 1, [], [], False, False
        while i < len(text) and depth > 0:
            c = text[i]
            if quoted:
                if c == "\\" and i + 1 < len(text):
                    cur.append({"n": "\n", "t": "\t"}.get(text[i + 1], text[i + 1]))
                    i += 2
                    continue
                if c == '"':
                    quoted = False
                else:
                    cur.append(c)
            elif c == '"':
                quoted, had = True, True
            elif c in " \t\n":
                if cur or had:
                    args.append("".join(cur))
                cur, had = [], False
            elif c == "(":
                depth += 1
                cur.append(c)
            elif c == ")":
                depth -= 1
                if depth > 0:
                    cur.append(c)
            else:
                cur.append(c)
            i += 1
        if cur or had:
            args.append("".join(cur))
        yield m.group(1), args


def labels_of(args):
    """LABELS value after PROPERTIES (name/value pairs), as a list, or None."""
    if "PROPERTIES" not in args:
        return None
    props = args[args.index("PROPERTIES") + 1:]
    for k in range(0, len(props) - 1):
        if props[k] == "LABELS":
            return [x for x in props[k + 1].split(";") if x]
    return None


def keyword_value(args, key):
    return args[args.index(key) + 1] if key in args and args.index(key) + 1 < len(args) else None


def source_tests(paths):
    names = []
    for p in paths:
        for m in re.finditer(r"^\s*TEST(?:_F)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", open(p, encoding="utf-8").read(),
                             re.M):
            names.append(f"{m.group(1)}.{m.group(2)}")
    return names


def main():
    src, build = sys.argv[1], sys.argv[2]
    shown = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                                      capture_output=True, text=True).stdout)
    ctest, by_filter = {}, {}
    for t in shown["tests"]:
        labels = []
        for p in t.get("properties", []):
            if p["name"] == "LABELS":
                labels = p["value"]
        ctest[t["name"]] = labels
        # Discovered gtest cases: (binary, --gtest_filter) -> CTest names.
        command = t.get("command", [])
        for arg in command[1:]:
            if arg.startswith("--gtest_filter="):
                key = (os.path.basename(command[0]), arg[len("--gtest_filter="):])
                by_filter.setdefault(key, []).append(t["name"])

    failures, checked, not_configured = [], 0, []
    variables = {}  # the few set()/file(GLOB)/list(FILTER) values test lists use
    add_tests = {}  # TEST_LIST variable -> (target, sources)
    discovered = []  # (target, TEST_SUFFIX, labels, where)

    def expand(value, here, listdir):
        value = value.replace("${CMAKE_CURRENT_SOURCE_DIR}", here)
        value = value.replace("${CMAKE_CURRENT_LIST_DIR}", listdir)
        value = value.replace("${PROJECT_SOURCE_DIR}", src)
        return re.sub(r"\$\{(\w+)\}", lambda m: ";".join(variables.get(m.group(1), [m.group(0)])), value)

    def expect(name, labels, where):
        nonlocal checked
        if name not in ctest:
            failures.append(f"{where}: test {name} (labels {';'.join(labels)}) is not in CTest")
            return
        checked += 1
        missing = [l for l in labels if l not in ctest[name]]
        if missing:
            failures.append(f"{where}: {name} lacks label(s) {','.join(missing)} "
                            f"(declared {';'.join(labels)}, CTest has {';'.join(ctest[name]) or 'none'})")

    files = sorted(glob.glob(os.path.join(src, "tests", "**", "CMakeLists.txt"), recursive=True) +
                   glob.glob(os.path.join(src, "tests", "**", "*.cmake"), recursive=True))
    # Included .cmake files use their includer's variables: read them after it.
    files.sort(key=lambda f: (os.path.dirname(f), not f.endswith("CMakeLists.txt"), f))
    functions = {}  # function(name params...) bodies, for calls in later files too

    def unroll(seq, bound):
        """Commands of `seq` with foreach bodies once per item and calls of
        the files' own functions replaced by their bodies, parameters bound
        (${ARGN}: the arguments past the named ones)."""
        i = 0
        while i < len(seq):
            name, args = seq[i]
            args = [bind(a, bound) for a in args]
            if name in ("foreach", "function"):
                end = "end" + name
                depth, j = 1, i + 1
                while j < len(seq) and depth:
                    depth += {name: 1, end: -1}.get(seq[j][0], 0)
                    j += 1
                body = seq[i + 1:j - 1]
                if name == "function" and args:
                    functions[args[0].lower()] = (args[1:], body)
                elif len(args) >= 2 and args[1] not in ("IN", "RANGE"):
                    for item in args[1:]:
                        yield from unroll(body, dict(bound, **{args[0]: item}))
                else:
                    yield from unroll(body, bound)
                i = j
                continue
            if name.lower() in functions:
                params, body = functions[name.lower()]
                inner = dict(zip(params, args))
                inner["ARGN"] = ";".join(args[len(params):])
                yield from unroll(body, inner)
            else:
                yield name, args
            i += 1

    def bind(value, bound):
        for k, v in bound.items():
            value = value.replace("${" + k + "}", v)
        return value

    def calls(path):
        yield from unroll(list(commands(path)), {})

    for path in files:
        listdir = os.path.dirname(path)
        where = os.path.relpath(path, src)
        for name, args in calls(path):
            if name == "set" and len(args) >= 2 and "${" not in args[0]:
                variables[args[0]] = [expand(a, listdir, listdir) for a in args[1:]]
            elif name == "file" and len(args) >= 3 and args[0] == "GLOB":
                pats = [a for a in args[2:] if a != "CONFIGURE_DEPENDS"]
                variables[args[1]] = sorted(f for p in pats for f in glob.glob(expand(p, listdir, listdir)))
            elif name == "list" and len(args) == 5 and args[0] == "FILTER" and args[3] == "REGEX":
                keep = args[2] == "INCLUDE"
                variables[args[1]] = [v for v in variables.get(args[1], [])
                                      if bool(re.search(args[4], v)) == keep]
            elif name == "gtest_add_tests" and "TEST_LIST" in args:
                target = keyword_value(args, "TARGET")
                i = args.index("SOURCES") + 1
                sources = []
                while i < len(args) and args[i] not in ("TEST_LIST", "EXTRA_ARGS", "WORKING_DIRECTORY",
                                                        "TARGET", "SKIP_DEPENDENCY"):
                    sources += [s for s in expand(args[i], listdir, listdir).split(";") if s]
                    i += 1
                add_tests[keyword_value(args, "TEST_LIST")] = (target, sources)
            elif name in ("gtest_discover_tests", "switchagg_discover_tests"):
                labels = labels_of(args)
                if not labels:
                    continue
                target, suffix = args[0], keyword_value(args, "TEST_SUFFIX") or ""
                discovered.append((target, suffix, labels, where))
            elif name == "set_tests_properties":
                labels = labels_of(args)
                if not labels or any("${" in l for l in labels):
                    continue
                for test in args[:args.index("PROPERTIES")]:
                    m = re.fullmatch(r"\$\{(\w+)\}", test)
                    if m and m.group(1) in add_tests:
                        target, sources = add_tests[m.group(1)]
                        if not os.path.exists(os.path.join(build, "bin", target)):
                            not_configured.append(f"{target} ({where})")
                            continue
                        names = source_tests(sources)
                        if not names:
                            failures.append(f"{where}: no TEST() found in the sources of {m.group(1)}")
                        for n in names:
                            expect(n, labels, f"{where} ({m.group(1)})")
                    elif "${" in test or "$<" in test:
                        continue  # a name built in a loop: its own literal declarations are checked
                    elif test in ctest:
                        expect(test, labels, where)
                    else:
                        not_configured.append(f"{test} ({where})")

    # Discovered binaries: every case the binary lists, found in CTest by its
    # --gtest_filter (CTest names parameterized cases with their values).
    suffixes = {}
    for target, suffix, _, _ in discovered:
        suffixes.setdefault(target, set()).add(suffix)
    for target, suffix, labels, where in discovered:
        binary = os.path.join(build, "bin", target)
        if not os.path.exists(binary):
            not_configured.append(f"{target} ({where})")
            continue
        listing = subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True,
                                 check=True).stdout
        cases, suite = [], None
        for line in listing.splitlines():
            line = line.split("#")[0].rstrip()
            if not line or line.startswith("Running main()"):
                continue
            if not line.startswith(" "):
                suite = line.strip()
            else:
                cases.append(f"{suite}{line.strip()}")
        if not cases:
            failures.append(f"{where}: {target} lists no tests")
        others = [x for x in suffixes[target] if x and x != suffix]
        for case in cases:
            names = [n for n in by_filter.get((target, case), [])
                     if n.endswith(suffix) and not any(n.endswith(o) for o in others)]
            if len(names) != 1:
                failures.append(f"{where}: {target} case {case}{suffix} is in CTest {len(names)} time(s)")
                continue
            expect(names[0], labels, f"{where} ({target})")

    # The fault label in particular: ctest -L fault must select ControlFaults.*.
    faults = subprocess.run(["ctest", "-N", "-L", "fault"], cwd=build, check=True, capture_output=True,
                            text=True).stdout
    selected = set(re.findall(r"Test +#\d+: (\S+)", faults))
    control_faults = [n for n in ctest if n.startswith("ControlFaults.")]
    if not control_faults:
        failures.append("CTest has no ControlFaults.* test")
    for n in control_faults:
        if n not in selected:
            failures.append(f"ctest -L fault does not select {n}")

    # By name: what a test is about decides two labels.
    for n, labels in sorted(ctest.items()):
        if FAULT_NAME.search(n) and "fault" not in labels:
            failures.append(f"{n}: its name says it tests a fault but it lacks the label fault "
                            f"(has {';'.join(labels) or 'none'})")
        if MPICH_NAME.search(n) and "mpich" not in labels:
            failures.append(f"{n}: its name says MPICH but it lacks the label mpich "
                            f"(has {';'.join(labels) or 'none'})")

    for n in not_configured:
        print(f"check_labels: not configured in this build: {n}")
    for f in failures:
        print(f"check_labels: FAIL {f}")
    print(f"check_labels: {checked} declared test(s) checked, {len(control_faults)} ControlFaults.* "
          f"under -L fault, {len(failures)} failure(s)")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
