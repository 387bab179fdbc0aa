// `switchagg-info --fabric FILE [--nodes HOSTLIST]`: checks a fabric map
// (docs/admin.md "Fabric map") and prints its agents, or the agents a job
// on those nodes would lease from, in the order its stripes use them. Reads
// the file only: needs no running agent.
#pragma once

#include <string>

namespace switchagg::info {

// True when argv holds --fabric (the hook in switchagg-info's main).
bool wantsFabricCommand(int argc, char** argv);
// Returns the process exit code (0 ok, 2 bad arguments or map).
int runFabricCommand(int argc, char** argv);
// The --fabric part of switchagg-info --help.
std::string fabricUsage();

}  // namespace switchagg::info
