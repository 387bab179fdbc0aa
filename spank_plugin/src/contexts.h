// One file per SPANK context; plugin.cc only dispatches to these.
//
//   context_submit.cc      srun / sbatch / salloc on the submit host, as the user:
//                          validates the options and SWITCHAGG_JOB_* and records the
//                          job's request in the job-control environment.
//   context_job_script.cc  slurmd's job prolog/epilog, as root: creates the job's
//                          lease for the job's uid, deletes it at job end.
//   context_remote.cc      slurmstepd for each step, as the job's user: fetches the
//                          token, hands SWITCHAGG_* to the tasks, or stops them.
//   context_slurmd.cc      slurmd start: reports a broken plugstack line early.
#pragma once

#include "slurm_spank.h"

namespace switchagg::spank {

int submitInit(spank_t sp);
int submitPostOpt(spank_t sp);

int jobProlog(spank_t sp, int argc, char** argv);
int jobEpilog(spank_t sp, int argc, char** argv);

int remoteInit(spank_t sp);
int remoteUserInit(spank_t sp);
int remoteTaskInit(spank_t sp);

int slurmdInit(spank_t sp);

}  // namespace switchagg::spank
