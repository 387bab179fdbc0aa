// `switchagg-info --select`: prints the allreduce decision table (message
// size ranges -> algorithm, why, modeled time) that a communicator shape,
// rules file and policy yield, plus the modeled time of every candidate.
// Pure selection code: needs no MPI, no UCX, no running agent.
#pragma once

#include <string>

namespace switchagg::info {

// True when argv holds --select (the hook in switchagg-info's main).
bool wantsSelectCommand(int argc, char** argv);
// Runs the command; argv is switchagg-info's whole argv (--select included).
// Returns the process exit code (0 ok, 2 bad arguments or rules file).
int runSelectCommand(int argc, char** argv);
// The --select part of switchagg-info --help.
std::string selectUsage();

}  // namespace switchagg::info
