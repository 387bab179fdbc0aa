"""The walls as the build draws them (check_walls.py runs these checks).

A library's own folder is a PRIVATE include directory: what may look
inside links <target>_internal (cmake/SwitchaggWalls.cmake,
switchagg_internal_headers). In the CMake files of the parts:

  1. no target but a *_internal one publishes (PUBLIC or INTERFACE) an
     include directory in the source tree outside an include/ folder;
  2. no target but a *_internal one links a *_internal target PUBLIC or
     INTERFACE (its users would see the private folders too);
  3. a *_internal target is linked only from its own part (tests/ is not a
     part and may link any), or where ALLOWED_LINKS says why.
"""
import os
import re

# (CMake file, *_internal target) -> why it links another part's internals.
# Each matches source crossings listed in check_walls.py ALLOWED.
ALLOWED_LINKS = {
    ("apps/info/CMakeLists.txt", "switchagg_coll_select_internal"):
        "switchagg-info prints the selector's decisions and the registry's algorithm names",
    ("benchmarks/CMakeLists.txt", "switchagg_engine_internal"):
        "the engine and kernel benchmarks measure the engine's own pools and engine",
}

KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"}
CALL = re.compile(r"\b(target_include_directories|target_link_libraries|set|add_library|"
                  r"switchagg_internal_headers)\s*\(([^)]*)\)", re.S)
VAR = re.compile(r"\$\{(\w+)\}")


def cmake_files(root, parts):
    for part in parts:
        top = os.path.join(root, part)
        for d, dirs, files in os.walk(top):
            dirs[:] = [x for x in dirs if x != "build" and not x.startswith(".")]
            for f in files:
                if f == "CMakeLists.txt" or f.endswith(".cmake"):
                    yield part, os.path.relpath(os.path.join(d, f), root)


def calls(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        text = re.sub(r"(?m)#.*$", "", f.read())
    for name, args in CALL.findall(text):
        yield name, args.split()


def resolve(token, root, rel, variables):
    """The source-tree path an include-directory argument names, or None."""
    m = re.fullmatch(r"\$<BUILD_INTERFACE:(.*)>", token)
    if m:
        token = m.group(1)
    here = os.path.dirname(os.path.join(root, rel))
    fixed = {"CMAKE_CURRENT_SOURCE_DIR": here, "CMAKE_CURRENT_LIST_DIR": here,
             "PROJECT_SOURCE_DIR": root, "CMAKE_SOURCE_DIR": root}
    for _ in range(4):
        token = VAR.sub(lambda v: fixed.get(v.group(1), variables.get(v.group(1), v.group(0))), token)
    if "$" in token:
        return None  # another tree (a package's, the build's): not a wall
    path = os.path.relpath(os.path.normpath(token if os.path.isabs(token) else os.path.join(here, token)), root)
    return None if path.startswith("..") else path


def scopes(args):
    """(scope, token) for each argument after the target; a plain
    target_link_libraries signature is PUBLIC."""
    scope = "PUBLIC"
    for tok in args[1:]:
        if tok in KEYWORDS:
            if tok in ("PUBLIC", "PRIVATE", "INTERFACE"):
                scope = tok
            continue
        yield scope, tok


def cmake_crossings(root, parts):
    root = os.path.abspath(root)
    files = list(cmake_files(root, parts))
    variables, owner = {}, {}  # set() values; *_internal target -> its part
    for part, rel in files:
        for name, args in calls(root, rel):
            if name == "set" and len(args) == 2:
                variables[args[0]] = args[1].replace("${CMAKE_CURRENT_SOURCE_DIR}", os.path.dirname(os.path.join(root, rel)))
            elif name == "add_library" and args and args[0].endswith("_internal"):
                owner[args[0]] = part
            elif name == "switchagg_internal_headers" and args:
                owner[args[0] + "_internal"] = part
    found = []
    for part, rel in files:
        for name, args in calls(root, rel):
            if not args:
                continue
            internal = args[0].endswith("_internal")
            if name == "target_include_directories" and not internal:
                for scope, tok in scopes(args):
                    path = resolve(tok, root, rel, variables)
                    if scope != "PRIVATE" and path and "include" not in path.split(os.sep):
                        found.append("%s: %s publishes %s (%s), a folder outside include/: make it "
                                     "PRIVATE and let its users link %s_internal "
                                     "(switchagg_internal_headers)" % (rel, args[0], path, scope, args[0]))
            if name != "target_link_libraries":
                continue
            for scope, tok in scopes(args):
                if not tok.endswith("_internal"):
                    continue
                if scope != "PRIVATE" and not internal:
                    found.append("%s: %s links %s %s: its users would see that target's private "
                                 "folders; link it PRIVATE" % (rel, args[0], tok, scope))
                if tok in owner and owner[tok] != part and (rel, tok) not in ALLOWED_LINKS:
                    found.append("%s: %s links %s, internal to %s (link its public target, or list "
                                 "it in tests/check_walls_cmake.py ALLOWED_LINKS with why)"
                                 % (rel, args[0], tok, owner[tok]))
    return found


def selftest(put, root, parts):
    """Plants each kind of breach in the scratch tree check_walls.py made;
    returns what went wrong ("" if every breach was caught and a clean
    tree passed)."""
    put("common/CMakeLists.txt",
        "add_library(c STATIC src/inner.cc)\n"
        "switchagg_internal_headers(c ${CMAKE_CURRENT_SOURCE_DIR}/src)\n"
        "target_include_directories(c PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)\n"
        "target_link_libraries(c PUBLIC x PRIVATE c_internal)\n")
    put("apps/tool/CMakeLists.txt", "add_executable(tool main.cc)\n"
        "target_link_libraries(tool PRIVATE c)  # c_internal would cross\n")
    clean = cmake_crossings(root, parts)
    if clean:
        return "a clean tree's CMake files reported: %s" % clean
    put("apps/tool/CMakeLists.txt", "add_executable(tool main.cc)\n"
        "target_link_libraries(tool PRIVATE c_internal)\n")
    put("common/sub/CMakeLists.txt", "add_library(s STATIC s.cc)\n"
        "target_include_directories(s INTERFACE ${CMAKE_CURRENT_SOURCE_DIR})\n"
        "target_link_libraries(s c_internal)\n")
    found = cmake_crossings(root, parts)
    want = ["apps/tool/CMakeLists.txt: tool links c_internal, internal to common",
            "common/sub/CMakeLists.txt: s publishes common/sub (INTERFACE)",
            "common/sub/CMakeLists.txt: s links c_internal PUBLIC"]
    missing = [w for w in want if not any(f.startswith(w) for f in found)]
    if missing or len(found) != len(want):
        return "planted %s, found %s" % (want, found)
    return ""
