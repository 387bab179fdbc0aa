// `switchagg-info --coll-params`: the coll parameters' table
// (switchagg/coll/coll_params.h) as the first three columns of
// docs/mca-params.md's table (parameter, default, values), one Markdown row
// per parameter of the Open MPI component, in the table's order. The docs
// test docs_mca_params_table compares the doc with it.
#pragma once

namespace switchagg::info {

// The --coll-params part of switchagg-info --help.
inline constexpr const char* kParamsUsage =
    "usage: switchagg-info --coll-params\n"
    "  prints the coll component's parameters (name, default, values) from the table\n"
    "  the component, the PMPI library and docs/mca-params.md are made from\n";

// -1 when argv holds no --coll-params; else runs it and returns the exit
// code (0, or 2 with other arguments beside it).
int paramsCommand(int argc, char** argv);

}  // namespace switchagg::info
