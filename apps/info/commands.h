// switchagg-info's commands beside the RoCE report (info_report.h), one
// source file each; main.cc asks each whether argv is its own.
//
// --select (select_cmd.cc): prints the allreduce decision table (message
// size ranges -> algorithm, why, modeled time) that a communicator shape,
// rules file and policy yield, plus the modeled time of every candidate.
// Pure selection code: needs no MPI, no UCX, no running agent.
//
// --fabric FILE [--nodes HOSTLIST] (fabric_cmd.cc): checks a fabric map
// (docs/admin.md "Fabric map") and prints its agents, or the agents a job
// on those nodes would lease from, in the order its stripes use them. Reads
// the file only: needs no running agent.
//
// --coll-params (params_cmd.cc): the coll parameters' table
// (switchagg/coll/coll_params.h) as the first three columns of
// docs/mca-params.md's table (parameter, default, values), one Markdown row
// per parameter of the Open MPI component, in the table's order. The docs
// test docs_mca_params_table compares the doc with it.
#pragma once

#include <string>

namespace switchagg::info {

// True when argv holds --select / --fabric (the hooks in main).
bool wantsSelectCommand(int argc, char** argv);
bool wantsFabricCommand(int argc, char** argv);
// Run the command; argv is switchagg-info's whole argv (the flag included).
// Return the process exit code (0 ok, 2 bad arguments, rules file or map).
int runSelectCommand(int argc, char** argv);
int runFabricCommand(int argc, char** argv);
// Their parts of switchagg-info --help.
std::string selectUsage();
std::string fabricUsage();

// The --coll-params part of switchagg-info --help.
inline constexpr const char* kParamsUsage =
    "usage: switchagg-info --coll-params\n"
    "  prints the coll component's parameters (name, default, values) from the table\n"
    "  the component, the PMPI library and docs/mca-params.md are made from\n";

// -1 when argv holds no --coll-params; else runs it and returns the exit
// code (0, or 2 with other arguments beside it).
int paramsCommand(int argc, char** argv);

}  // namespace switchagg::info
