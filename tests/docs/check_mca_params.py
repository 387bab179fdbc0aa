#!/usr/bin/env python3
"""docs/mca-params.md's parameter table is the coll parameter table.

Usage: check_mca_params.py SWITCHAGG_INFO DOC
       check_mca_params.py --selftest SWITCHAGG_INFO DOC

`switchagg-info --coll-params` prints, from the one table the component,
the PMPI library and switchagg-info are made of
(mpi_coll/include/switchagg/coll/coll_params.h), the parameter, default and
values columns of every Open MPI parameter in the table's order. The doc's
table under "## Parameters" must hold the same rows in the same order (its
fourth column, the effect, is prose and not compared). Every difference is
named: a missing or extra parameter, a row out of order, a cell that differs.
docs/pmpi.md (beside DOC) must name every environment variable the PMPI
library reads for the table's rows (`switchagg-info --json` lists them with
the help the table gives them), so its hand-written list cannot fall behind.
--selftest breaks copies of the docs in memory, one way each, and fails
unless the check catches every one.
"""
import json
import os
import subprocess
import sys

from check_lib import expect_caught, split_args

HEADER = ["parameter", "default", "values"]


def cells(line):
    parts = [c.strip() for c in line.strip().strip("|").split(" | ")]
    return parts


def table_rows(lines, where):
    """The rows of the first table whose header starts parameter|default|values."""
    rows, inside = [], False
    for no, line in enumerate(lines, 1):
        if not inside:
            if line.startswith("|") and cells(line)[:3] == HEADER:
                inside = True
            continue
        if not line.startswith("|"):
            break
        c = cells(line)
        if set(line.replace("|", "").strip()) <= set("- "):
            continue  # the separator
        rows.append((f"{where}:{no}", c[:3]))
    return rows


def compare(expected, doc_lines):
    errors = []
    rows = table_rows(doc_lines, "docs/mca-params.md")
    if not rows:
        return ["docs/mca-params.md: no table with the columns parameter | default | values"]
    want = {r[0]: r for r in expected}
    have = {c[0]: (where, c) for where, c in rows}
    for name in want:
        if name not in have:
            errors.append(f"docs/mca-params.md: parameter {name} is in the table "
                          f"(coll_params.h) but not in the doc")
    for name, (where, c) in have.items():
        if name not in want:
            errors.append(f"{where}: parameter {name} is not in the table (coll_params.h)")
            continue
        for col, (doc_cell, table_cell) in enumerate(zip(c, want[name])):
            if doc_cell != table_cell:
                errors.append(f"{where}: {name}: {HEADER[col]} is '{doc_cell}' in the doc, "
                              f"'{table_cell}' in the table")
        if len(c) < 3:
            errors.append(f"{where}: {name}: fewer than 3 columns")
    order_doc = [c[0] for _, c in rows if c[0] in want]
    order_table = [r[0] for r in expected if r[0] in have]
    if order_doc != order_table:
        errors.append("docs/mca-params.md: rows not in the table's order: doc "
                      + ", ".join(order_doc) + "; table " + ", ".join(order_table))
    return errors


def expected_rows(info):
    out = subprocess.run([info, "--coll-params"], check=True, capture_output=True, text=True).stdout
    rows = [c for _, c in table_rows(out.split("\n"), "switchagg-info --coll-params")]
    if not rows:
        sys.exit(f"switchagg-info --coll-params printed no table:\n{out}")
    return rows


def pmpi_variables(info):
    """The PMPI library's variables for the coll parameter table's rows."""
    out = subprocess.run([info, "--json"], check=True, capture_output=True, text=True).stdout
    return [o["env"] for o in json.loads(out)["options"]
            if o["name"].startswith("coll_switchagg_") and o.get("env")]


def compare_pmpi(variables, pmpi_text):
    if not variables:
        return ["switchagg-info --json lists no PMPI variable of the coll parameter table"]
    return [f"docs/pmpi.md: {v} (the PMPI library reads it: coll_params.h) is not named"
            for v in variables if f"`{v}`" not in pmpi_text]


def selftest(expected, lines):
    if compare(expected, lines):
        print("FAIL: the doc as it is does not pass:\n" + "\n".join(compare(expected, lines)))
        return 1
    print("ok: the doc as it is passes")
    rows = table_rows(lines, "doc")
    first = int(rows[0][0].rsplit(":", 1)[1]) - 1
    second = int(rows[1][0].rsplit(":", 1)[1]) - 1
    last = int(rows[-1][0].rsplit(":", 1)[1]) - 1

    def default_changed(ls):
        c = ls[first].split(" | ")
        c[1] = "`12345`"
        ls[first] = " | ".join(c)

    def values_changed(ls):
        c = ls[second].split(" | ")
        c[2] = c[2] + ", `bogus`"
        ls[second] = " | ".join(c)

    def row_dropped(ls):
        del ls[last]

    def row_added(ls):
        ls.insert(last + 1, "| `coll_switchagg_bogus` | `1` | `0`/`1` | not a parameter |")

    def rows_swapped(ls):
        ls[first], ls[second] = ls[second], ls[first]

    cases = [("a default changed", default_changed, "default is '`12345`'"),
             ("values changed", values_changed, "values is"),
             ("a row dropped", row_dropped, "but not in the doc"),
             ("a row added", row_added, "`coll_switchagg_bogus` is not in the table"),
             ("two rows swapped", rows_swapped, "not in the table's order")]
    broken = []
    for name, breaker, want in cases:
        copy = list(lines)
        breaker(copy)
        broken.append((name, compare(expected, copy), want))
    return broken


def main(argv):
    test, (info, doc) = split_args(argv, (2,), __doc__)
    expected = expected_rows(info)
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    with open(os.path.join(os.path.dirname(doc), "pmpi.md"), encoding="utf-8") as f:
        pmpi_text = f.read()
    variables = pmpi_variables(info)
    if test:
        broken = selftest(expected, lines)
        if not isinstance(broken, list):
            return broken
        if compare_pmpi(variables, pmpi_text):
            print("FAIL: docs/pmpi.md as it is does not pass:\n"
                  + "\n".join(compare_pmpi(variables, pmpi_text)))
            return 1
        dropped = pmpi_text.replace(f"`{variables[-1]}`", "`SWITCHAGG_SOMETHING_ELSE`")
        broken.append(("a PMPI variable dropped from docs/pmpi.md",
                       compare_pmpi(variables, dropped), f"{variables[-1]} (the PMPI library"))
        return expect_caught(broken)
    table_errors = compare(expected, lines)
    errors = table_errors + compare_pmpi(variables, pmpi_text)
    for e in errors:
        print(e)
    if table_errors:
        print("regenerate the columns with: switchagg-info --coll-params")
    if errors:
        return 1
    print(f"ok: {len(expected)} parameters, the doc's table matches coll_params.h; "
          f"docs/pmpi.md names its {len(variables)} PMPI variables")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
