// LeaseStore: the agent's leases on disk (policy key state.lease_file), so an
// agent restart (upgrade, systemctl restart, crash + Restart=) does not take
// switch aggregation away from running jobs. The file holds lease tokens,
// which are secrets: it is written mode 0600, atomically (temp file in the
// same directory, fsync, rename, fsync of the directory), so a crash leaves
// either the old or the new file, never a torn one.
//
// Expiry is stored as wall-clock (CLOCK_REALTIME) milliseconds: the steady
// clock the lease table runs on restarts with the machine.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lease_table.h"
#include "switchagg/common/status.h"

namespace switchagg::agent {

// What the file holds. Here Lease::expires_at_ms is WALL-clock ms.
struct LeaseFileState {
  bool draining = false;
  std::vector<Lease> leases;
};

// CLOCK_REALTIME milliseconds.
int64_t wallNowMs();

// The file's JSON text, and back. decode refuses (kProtocol, the message
// says what is wrong) anything it did not write: unknown format or version,
// a bad job id, token, slot count or TTL, duplicate jobs or tokens.
std::string encodeLeaseFile(const LeaseFileState& state);
Result<LeaseFileState> decodeLeaseFile(const std::string& text);

// Replaces `path` with `bytes` atomically, mode 0600.
Status writeFileAtomically(const std::string& path, const std::string& bytes);

class LeaseStore {
 public:
  explicit LeaseStore(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  // A missing file is an empty state. A file that reads but does not decode
  // is logged (naming the file and the problem), renamed to
  // <path>.corrupt-<UTC time> and read as empty. A file that cannot be read
  // (EACCES, EIO, a directory in its place, ...) is left exactly where it
  // is and kIoError names the file and the error: such faults are often
  // transient, and the leases in it are not ours to throw away.
  Result<LeaseFileState> load();

  // Writes `state`. A failure is logged and counted, and returned.
  Status save(const LeaseFileState& state);
  uint64_t saveFailures() const { return save_failures_.load(); }

 private:
  std::string path_;
  std::atomic<uint64_t> save_failures_{0};
};

}  // namespace switchagg::agent
