#include "lease_table.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "lease_store.h"
#include "switchagg/common/log.h"

namespace switchagg::agent {

int64_t steadyNowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

namespace {

constexpr const char* kPart = "agent";

}  // namespace

LeaseTable::LeaseTable(const LeaseLimits& limits) : limits_(limits) {}

LeaseTable::~LeaseTable() { stopReaper(); }

void LeaseTable::setRevokeCallback(RevokeCallback cb) {
  std::lock_guard<std::mutex> lock(mu_);
  revoke_cb_ = std::move(cb);
}

std::optional<Lease> LeaseTable::useByToken(const LeaseToken& token) {
  const int64_t now = steadyNowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto t = job_by_token_.find(token);
  if (t == job_by_token_.end()) return std::nullopt;
  auto l = by_job_.find(t->second);
  if (l == by_job_.end() || l->second.expires_at_ms <= now) return std::nullopt;
  l->second.used_at_ms = now;
  return l->second;
}

std::optional<Lease> LeaseTable::findByToken(const LeaseToken& token) const {
  int64_t now = steadyNowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto t = job_by_token_.find(token);
  if (t == job_by_token_.end()) return std::nullopt;
  auto l = by_job_.find(t->second);
  if (l == by_job_.end() || l->second.expires_at_ms <= now) return std::nullopt;
  return l->second;
}

void LeaseTable::insertLocked(const Lease& lease) {
  // A job holds one lease: one it replaces leaves no token or slots behind.
  if (auto old = by_job_.find(lease.job); old != by_job_.end()) eraseLocked(old);
  by_job_[lease.job] = lease;
  job_by_token_[lease.token] = lease.job;
  slots_in_use_ += lease.slots;
}

void LeaseTable::eraseLocked(std::map<std::string, Lease>::iterator it) {
  slots_in_use_ -= it->second.slots;
  job_by_token_.erase(it->second.token);
  by_job_.erase(it);
}

std::optional<Lease> LeaseTable::findByJob(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_job_.find(job);
  if (it == by_job_.end()) return std::nullopt;
  return it->second;
}

PoolUse LeaseTable::useOthersLocked(const std::string& job, uint32_t uid) const {
  PoolUse use;
  use.draining = draining_;
  use.slots_in_use = slots_in_use_;
  for (const auto& [j, lease] : by_job_) {
    if (j == job) use.slots_in_use -= lease.slots;
    else if (lease.uid == uid) use.user_slots += lease.slots;
  }
  return use;
}

ApiResult<LeaseTable::Created> LeaseTable::create(const std::string& job, uint32_t uid,
                                                  int slots, int64_t ttl_ms) {
  ApiResult<Created> r = createInMemory(job, uid, slots, ttl_ms);
  if (r.ok() && r->created) persist();
  return r;
}

ApiResult<LeaseTable::Created> LeaseTable::createInMemory(const std::string& job, uint32_t uid,
                                                          int slots, int64_t ttl_ms) {
  Result<LeaseToken> token = LeaseToken::random();
  if (!token.ok()) return ApiFailure{ApiError::kInternal, token.status().message()};

  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_job_.find(job);
  if (it != by_job_.end()) {
    if (it->second.uid != uid) {
      return ApiFailure{ApiError::kConflict,
                        "job " + job + " is leased to uid " + std::to_string(it->second.uid)};
    }
    return Created{it->second, false};
  }
  Admission a = admitLease(limits_, Admit::kCreate, {job, uid, slots, ttl_ms},
                           useOthersLocked(job, uid));
  if (a.denial) return *a.denial;
  Lease lease;
  lease.job = job;
  lease.uid = uid;
  lease.slots = slots;
  lease.token = std::move(*token);
  lease.ttl_ms = a.ttl_ms;
  lease.expires_at_ms = steadyNowMs() + a.ttl_ms;
  lease.used_at_ms = steadyNowMs();
  lease.granted_at_wall_ms = wallNowMs();
  insertLocked(lease);
  return Created{lease, true};
}

ApiResult<Lease> LeaseTable::renew(const std::string& job, int64_t ttl_ms) {
  Lease renewed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_job_.find(job);
    if (it == by_job_.end()) return ApiFailure{ApiError::kNotFound, "no lease for job " + job};
    const Lease& held = it->second;
    Admission a = admitLease(limits_, Admit::kRenew, {job, held.uid, held.slots, ttl_ms},
                             useOthersLocked(job, held.uid));
    if (a.denial) return *a.denial;
    it->second.ttl_ms = a.ttl_ms;
    it->second.expires_at_ms = steadyNowMs() + a.ttl_ms;
    it->second.used_at_ms = steadyNowMs();
    renewed = it->second;
  }
  persist();
  return renewed;
}

bool LeaseTable::remove(const std::string& job, const std::string& reason) {
  std::vector<Lease> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_job_.find(job);
    if (it == by_job_.end()) return false;
    gone.push_back(it->second);
    eraseLocked(it);
  }
  persist();
  fireRevoked(gone, reason);
  return true;
}

std::vector<Lease> LeaseTable::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Lease> out;
  out.reserve(by_job_.size());
  for (const auto& [job, lease] : by_job_) out.push_back(lease);
  return out;
}

int LeaseTable::expireAt(int64_t now_ms) {
  std::vector<Lease> gone, idle;
  const int64_t idle_ms = limits_.idle_reclaim_ms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = by_job_.begin(); it != by_job_.end();) {
      auto next = std::next(it);
      if (it->second.expires_at_ms <= now_ms) {
        gone.push_back(it->second);
        eraseLocked(it);
      } else if (idle_ms > 0 && now_ms - it->second.used_at_ms >= idle_ms) {
        idle.push_back(it->second);
        eraseLocked(it);
      }
      it = next;
    }
  }
  for (const Lease& l : gone)
    SA_INFO(kPart, "lease of job %s (uid %u, %d slots) expired: ttl %lld s, not deleted before it",
            l.job.c_str(), l.uid, l.slots, static_cast<long long>(l.ttl_ms / 1000));
  for (const Lease& l : idle)
    SA_INFO(kPart,
            "lease of job %s (uid %u, %d slots) reclaimed: no member used it for %lld s "
            "(policy.idle_reclaim %lld s)",
            l.job.c_str(), l.uid, l.slots, static_cast<long long>((now_ms - l.used_at_ms) / 1000),
            static_cast<long long>(idle_ms / 1000));
  if (!gone.empty() || !idle.empty()) persist();
  fireRevoked(gone, "lease expired");
  fireRevoked(idle, "lease reclaimed: no member used it for policy.idle_reclaim");
  return static_cast<int>(gone.size() + idle.size());
}

void LeaseTable::revokeAll(const std::string& reason) {
  std::vector<Lease> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [job, lease] : by_job_) gone.push_back(lease);
    by_job_.clear();
    job_by_token_.clear();
    slots_in_use_ = 0;
  }
  if (!gone.empty()) persist();
  fireRevoked(gone, reason);
}

void LeaseTable::abortGroups(const std::string& reason) { fireRevoked(list(), reason); }

std::string LeaseTable::leaseFile() const { return store_ ? store_->path() : ""; }

uint64_t LeaseTable::leaseFileSaveFailures() const {
  return store_ ? store_->saveFailures() : 0;
}

Status LeaseTable::attachStore(std::unique_ptr<LeaseStore> store) {
  Result<LeaseFileState> loaded = store->load();
  if (!loaded.ok()) return loaded.status();
  LeaseFileState& state = *loaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    store_ = std::move(store);
    restoreLocked(state);
  }
  persist();  // the file now says what was kept, and an unwritable directory shows at start
  return Status::Ok();
}

// Oldest grant first: when the pool shrank, the jobs that have run longest
// (a multi-day training job) keep their slots; newer ones fall back to host
// algorithms. Each lease passes admitLease, the check a new request passes
// (bar draining); a remaining time beyond policy.max_ttl is cut to it.
void LeaseTable::restoreLocked(LeaseFileState& state) {
  const char* file = store_->path().c_str();
  std::stable_sort(state.leases.begin(), state.leases.end(), [](const Lease& a, const Lease& b) {
    return a.granted_at_wall_ms < b.granted_at_wall_ms;
  });
  int64_t wall = wallNowMs();
  int64_t steady = steadyNowMs();
  int kept = 0;
  for (Lease& l : state.leases) {
    int64_t left = l.expires_at_ms - wall;
    if (left <= 0) {
      SA_INFO(kPart, "lease file %s: job %s (uid %u, %d slots) expired %lld s ago, while the "
              "agent was down: dropped", file, l.job.c_str(), l.uid, l.slots,
              static_cast<long long>(-left / 1000));
      continue;
    }
    // A wall clock stepped back while we were down must not stretch a lease
    // beyond the TTL it was granted.
    Admission a = admitLease(limits_, Admit::kRestore, {l.job, l.uid, l.slots, std::min(left, l.ttl_ms)},
                             useOthersLocked(l.job, l.uid));
    if (a.denial) {
      SA_WARN(kPart, "lease file %s: job %s (uid %u, %d slots) no longer fits the current "
              "policy: dropped (%s)", file, l.job.c_str(), l.uid, l.slots,
              a.denial->message.c_str());
      continue;
    }
    if (a.ttl_cut) {
      SA_WARN(kPart, "lease file %s: job %s (uid %u) had %lld s left, beyond policy.max_ttl: "
              "cut to %lld s", file, l.job.c_str(), l.uid, static_cast<long long>(left / 1000),
              static_cast<long long>(a.ttl_ms / 1000));
      l.ttl_ms = a.ttl_ms;
    }
    l.expires_at_ms = steady + a.ttl_ms;
    l.used_at_ms = steady;
    insertLocked(l);
    ++kept;
  }
  draining_ = state.draining;
  SA_INFO(kPart, "lease file %s: restored %d of %zu leases (%d slots)%s", file, kept,
          state.leases.size(), slots_in_use_,
          draining_ ? "; the agent was draining and still is (switchagg-ctl drain off resumes)"
                    : "");
}

void LeaseTable::persist() {
  if (!store_) return;
  // Snapshot and write under one lock, so saves land in order and the file
  // never goes back to an older state; the table lock is held only to copy.
  std::lock_guard<std::mutex> order(persist_mu_);
  LeaseFileState state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t wall = wallNowMs();
    int64_t steady = steadyNowMs();
    state.draining = draining_;
    for (const auto& [job, lease] : by_job_) {
      Lease w = lease;
      w.expires_at_ms = wall + (lease.expires_at_ms - steady);
      state.leases.push_back(std::move(w));
    }
  }
  // A failure is logged and counted by the store; the change in memory stands.
  static_cast<void>(store_->save(state));
}

void LeaseTable::fireRevoked(const std::vector<Lease>& gone, const std::string& reason) {
  if (gone.empty()) return;
  RevokeCallback cb;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cb = revoke_cb_;
  }
  if (!cb) return;
  for (const Lease& lease : gone) cb(lease, reason);
}

void LeaseTable::startReaper(int64_t tick_ms) {
  std::lock_guard<std::mutex> lock(reaper_mu_);
  if (reaper_.joinable()) return;
  reaper_stop_ = false;
  reaper_ = std::thread([this, tick_ms] {
    std::unique_lock<std::mutex> lk(reaper_mu_);
    while (!reaper_stop_) {
      reaper_cv_.wait_for(lk, std::chrono::milliseconds(tick_ms));
      if (reaper_stop_) break;
      lk.unlock();
      expireAt(steadyNowMs());
      lk.lock();
    }
  });
}

void LeaseTable::stopReaper() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    reaper_stop_ = true;
    t = std::move(reaper_);
  }
  reaper_cv_.notify_all();
  if (t.joinable()) t.join();
}

void LeaseTable::setDraining(bool on) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_ == on) return;
    draining_ = on;
  }
  persist();
}

bool LeaseTable::draining() const {
  std::lock_guard<std::mutex> lock(mu_);
  return draining_;
}

int LeaseTable::slotsInUse() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_in_use_;
}

int LeaseTable::slotsOfUser(uint32_t uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [job, lease] : by_job_) {
    if (lease.uid == uid) n += lease.slots;
  }
  return n;
}

}  // namespace switchagg::agent
