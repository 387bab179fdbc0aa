"""The one substitution table of the docs test (tests/docs/run_doc.py).

Docs are written for a reader's cluster; the test runs them on one small
machine. Each entry maps a doc placeholder or size to a runnable value:
(files it applies to as a glob over the doc's name, regular expression,
replacement, why). Entries apply in order to every command of an sh block;
the runner prints the command as it runs it, and the doc's text beside it
when an entry changed it. Keep this table short: a doc that needs many
entries should be rewritten instead.

Shell variables the runner defines for the replacements:
  $PREFIX      a private install prefix (the install fixture fills it)
  $DOCS_BUILD  the build directory under test
  $DOCS_TMP    a private temporary directory, removed afterwards
"""

SUBSTITUTIONS = [
    ("*", r"/opt/switchagg\b", "$PREFIX",
     "the install prefix of the docs is a private temporary prefix here"),
    ("*", r"/run/switchagg/agent\.sock\b", "${SWITCHAGG_CONTROL#unix:}",
     "the agent's control socket: the agent fixture's private one"),
    ("*", r"\./my_app\b", "switchagg-bench --check --max 64K --iters 5",
     "the reader's MPI program: the checked allreduce benchmark, small sizes"),
    ("*", r"(?<![-\w])(-np|-n) 64\b", r"\1 2",
     "rank counts of a cluster: two ranks on this two-core machine "
     "(not --np of switchagg-info --select, a model query)"),
    ("*", r"(-B|--build|--test-dir|--install) build\b", r'\1 "$DOCS_BUILD"',
     "the docs' build/ (scripts/build.sh's default) is the build directory under test"),
    ("README.md", r"^\./scripts/demo\.sh(?=\s|$)",
     './scripts/demo.sh --no-build --max 64K --iters 50 --steps 20 --out "$DOCS_TMP/demo"',
     "the demo on the build under test (SWITCHAGG_BUILD_DIR; the test suite built it), "
     "small sizes, output in a temporary directory (--steps 20: fewer fail --check)"),
]
