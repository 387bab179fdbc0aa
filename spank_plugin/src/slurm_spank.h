// <slurm/spank.h> for C++: it declares the slurm_spank_* callbacks outside
// its own extern "C" block, so C++ would give them mangled names that Slurm
// never finds. Include Slurm's header only through this one.
#pragma once

extern "C" {
#include <slurm/spank.h>
}
