// Every message of the plugin starts with "switchagg: ". Where a line ends up
// depends on the process: slurmd's log for slurmd and the prolog/epilog,
// srun's/sbatch's stderr in the submitting command, the job's stderr (and
// slurmd's log) for error() and userLine() in a job step.
#pragma once

namespace switchagg::spank {

void logError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logInfo(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logDebug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// A line for the user's terminal or job stderr, without Slurm's
// "slurmstepd: error:" decoration (slurm_spank_log).
void userLine(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace switchagg::spank
