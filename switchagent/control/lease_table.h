// LeaseTable: the agent's record of which job holds how many aggregation
// slots, for whom, until when, and under which secret token. The control
// plane creates/renews/removes leases; the data plane looks tokens up on
// every group join. A reaper thread expires leases whose TTL ran out, so a
// crashed job cannot leak slots. With a LeaseStore attached (state.lease_file)
// every change is also saved to disk, so leases survive an agent restart.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "admission.h"
#include "switchagg/agent/lease_token.h"
#include "switchagg/common/status.h"

namespace switchagg::agent {

struct Lease {
  std::string job;            // Slurm job id or admin-chosen id
  uint32_t uid = 0;           // owning user
  int slots = 0;              // aggregation slots reserved from the pool
  LeaseToken token;           // the 128-bit secret (hex only in JSON and the lease file)
  int64_t expires_at_ms = 0;  // steady-clock ms
  int64_t ttl_ms = 0;         // the TTL last granted (create or renew)
  int64_t granted_at_wall_ms = 0;  // CLOCK_REALTIME ms of create: restore order
  // Steady-clock ms of the last use: created, renewed, restored, or looked
  // up by the data plane for a member's HELLO/JOIN or a live group's lease
  // check (every 250 ms while a group lives). Not saved: a restored lease
  // starts its idle time at the restore.
  int64_t used_at_ms = 0;
};

// Steady-clock milliseconds, the time base of Lease::expires_at_ms.
int64_t steadyNowMs();

class LeaseStore;
struct LeaseFileState;

class LeaseTable {  // thread-safe (one mutex)
 public:
  using RevokeCallback = std::function<void(const Lease&, const std::string& reason)>;

  explicit LeaseTable(const LeaseLimits& limits);
  ~LeaseTable();  // stops the reaper; does not revoke (call revokeAll first)
  LeaseTable(const LeaseTable&) = delete;
  LeaseTable& operator=(const LeaseTable&) = delete;

  // Called (outside the table's lock) whenever a lease goes away: deleted,
  // expired, or agent shutdown. The data plane aborts that lease's groups.
  void setRevokeCallback(RevokeCallback cb);

  // Only unexpired leases. An index lookup (the data plane asks on every
  // HELLO, JOIN, LEAVE and tick); equality is constant-time.
  std::optional<Lease> findByToken(const LeaseToken& token) const;
  // findByToken for the data plane: the lease counts as used now (its idle
  // time, policy.idle_reclaim, starts again).
  std::optional<Lease> useByToken(const LeaseToken& token);
  std::optional<Lease> findByJob(const std::string& job) const;

  struct Created {
    Lease lease;
    bool created = false;  // false: the job already had a lease for this uid
  };
  // Idempotent per job: the same job and uid get the existing lease back
  // unchanged. Otherwise admitLease(kCreate) decides and its refusal comes
  // back typed; a job held by another uid is kConflict.
  ApiResult<Created> create(const std::string& job, uint32_t uid, int slots, int64_t ttl_ms);
  // Extends the lease to now + ttl_ms if admitLease(kRenew) agrees;
  // kNotFound if it is gone.
  ApiResult<Lease> renew(const std::string& job, int64_t ttl_ms);
  // Removes the job's lease and fires the revoke callback; false if absent.
  bool remove(const std::string& job, const std::string& reason);
  std::vector<Lease> list() const;

  // Removes every lease expired at `now_ms`, and every lease unused for
  // limits().idle_reclaim_ms (when > 0; logged with its job and idle time),
  // firing callbacks; returns how many. The reaper calls it each tick;
  // tests call it with a chosen time.
  int expireAt(int64_t now_ms);
  // Revokes every lease (agent shutdown).
  void revokeAll(const std::string& reason);

  // Persistence (state.lease_file). Call once, before serving: loads the
  // file, re-admits its unexpired leases (oldest grant first) through
  // admitLease(kRestore), the check create() uses, logs each one dropped or
  // cut to policy.max_ttl, restores draining, saves the result, and from then
  // on saves after every change (create, renew, remove, expiry, drain).
  // Lookups never touch the disk. A failed save is logged and counted by the
  // store; the in-memory change stands. If the file cannot be read (not a
  // decode error: EACCES, EIO, a directory in its place) nothing is attached
  // or written and the error, naming the file, is returned: the caller must
  // not serve on an empty table that would overwrite the leases.
  Status attachStore(std::unique_ptr<LeaseStore> store);
  const LeaseStore* store() const { return store_.get(); }
  // The lease file ("" when persistence is off) and its failed saves.
  std::string leaseFile() const;
  uint64_t leaseFileSaveFailures() const;
  // Fires the revoke callback for every lease but keeps the leases (and the
  // file): shutdown with persistence ends live groups, not leases.
  void abortGroups(const std::string& reason);

  // Background expiry every tick_ms (blocking wait, no busy polling).
  void startReaper(int64_t tick_ms = 1000);
  void stopReaper();

  void setDraining(bool on);
  bool draining() const;
  int slotsInUse() const;
  int slotsOfUser(uint32_t uid) const;
  const LeaseLimits& limits() const { return limits_; }

 private:
  PoolUse useOthersLocked(const std::string& job, uint32_t uid) const;
  ApiResult<Created> createInMemory(const std::string& job, uint32_t uid, int slots, int64_t ttl_ms);
  void restoreLocked(LeaseFileState& state);
  void insertLocked(const Lease& lease);
  void eraseLocked(std::map<std::string, Lease>::iterator it);
  void persist();
  void fireRevoked(const std::vector<Lease>& gone, const std::string& reason);

  const LeaseLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Lease> by_job_;
  std::unordered_map<LeaseToken, std::string> job_by_token_;  // the same leases
  int slots_in_use_ = 0;
  bool draining_ = false;
  RevokeCallback revoke_cb_;

  std::unique_ptr<LeaseStore> store_;  // set once before serving; null = off
  std::mutex persist_mu_;              // saves in order: the file never goes back

  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool reaper_stop_ = false;
  std::thread reaper_;
};

}  // namespace switchagg::agent
