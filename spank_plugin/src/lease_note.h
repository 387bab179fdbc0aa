// A node-local note from the job prolog (root) to the job's own tasks: why
// no lease could be created. The prolog must never fail (a failed prolog
// drains the node), so the reason waits here until task start, where a
// require job fails with it. One small file per job in state_dir, owned by
// the job's user, mode 0600; it never holds a token. The epilog removes it.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

#include "switchagg/common/status.h"

namespace switchagg::spank {

struct LeaseNote {
  std::string error;  // control error code ("unreachable", "quota_exceeded", ...)
  std::string text;   // explainLeaseFailure() line
};

std::string notePath(const std::string& state_dir, uint32_t job);
// Creates state_dir (0755) if needed; writes atomically; chowns to uid/gid.
Status writeNote(const std::string& state_dir, uint32_t job, uid_t uid, gid_t gid,
                 const LeaseNote& note);
// No note (or an unreadable one) gives an empty LeaseNote.
LeaseNote readNote(const std::string& state_dir, uint32_t job);
void removeNote(const std::string& state_dir, uint32_t job);

}  // namespace switchagg::spank
