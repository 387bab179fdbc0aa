// libFuzzer target: the agent's lease file (state.lease_file; lease_store.h:
// decodeLeaseFile, and LeaseTable::attachStore, which restores it at start).
// Properties checked beyond "no crash / no sanitizer report":
//  * a refused file says why (a non-empty message);
//  * a file that decodes encodes to text that decodes to the same leases
//    and draining flag, and encodes to the same text again (a round trip);
//  * restoring it keeps only leases the policy admits: within the pool,
//    per job and per user, each found by its token, none expiring beyond
//    policy.max_ttl, the draining flag kept; the file then says what was
//    kept.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "fuzz_check.h"
#include "lease_store.h"
#include "lease_table.h"
#include "switchagg/common/log.h"

using namespace switchagg::agent;

namespace switchagg::fuzz {

const size_t kMaxTextBytes = 16384;

namespace {

bool same(const LeaseFileState& a, const LeaseFileState& b) {
  if (a.draining != b.draining || a.leases.size() != b.leases.size()) return false;
  for (size_t i = 0; i < a.leases.size(); ++i) {
    const Lease &x = a.leases[i], &y = b.leases[i];
    if (x.job != y.job || x.uid != y.uid || x.slots != y.slots || !(x.token == y.token) ||
        x.ttl_ms != y.ttl_ms || x.expires_at_ms != y.expires_at_ms ||
        x.granted_at_wall_ms != y.granted_at_wall_ms)
      return false;
  }
  return true;
}

// The encoding without its saved_at_wall_ms line (the clock moves).
std::string timeless(std::string text) {
  const size_t at = text.find("\"saved_at_wall_ms\"");
  if (at != std::string::npos) text.erase(at, text.find('\n', at) - at);
  return text;
}

const std::string& scratchFile() {
  static const std::string path = [] {
    char dir[] = "/tmp/fuzz_lease_file.XXXXXX";
    check(mkdtemp(dir) != nullptr);
    return std::string(dir) + "/leases.json";
  }();
  return path;
}

void restore(const std::string& text, const LeaseFileState& state) {
  const std::string& path = scratchFile();
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
  }
  LeaseLimits limits;
  limits.pool_slots = 64;
  limits.max_slots_per_job = 16;
  limits.max_slots_per_user = 32;
  limits.max_ttl_ms = 3600 * 1000;
  LeaseTable table(limits);
  check(table.attachStore(std::make_unique<LeaseStore>(path)).ok());
  check(table.draining() == state.draining);
  int total = 0;
  std::map<uint32_t, int> per_user;
  const int64_t now = steadyNowMs();
  for (const Lease& l : table.list()) {
    check(l.slots >= 1 && l.slots <= limits.max_slots_per_job);
    total += l.slots;
    per_user[l.uid] += l.slots;
    check(l.expires_at_ms <= now + limits.max_ttl_ms);
    auto found = table.findByToken(l.token);
    check(found && found->job == l.job);
  }
  check(total == table.slotsInUse() && total <= limits.pool_slots);
  for (const auto& [uid, slots] : per_user) check(slots <= limits.max_slots_per_user);
  // What was kept is what the file says now.
  std::ifstream in(path);
  const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto reread = decodeLeaseFile(saved);
  check(reread.ok() && reread->leases.size() == table.list().size());
  unlink(path.c_str());
}

}  // namespace

void fuzzText(const std::string& text) {
  static const bool quiet = [] {
    setenv("SWITCHAGG_LOG_LEVEL", "error", 0);
    return true;
  }();
  (void)quiet;
  auto state = decodeLeaseFile(text);
  if (!state.ok()) {
    check(!state.status().message().empty());
    return;
  }
  const std::string encoded = encodeLeaseFile(*state);
  auto again = decodeLeaseFile(encoded);
  check(again.ok() && same(*state, *again));
  check(timeless(encodeLeaseFile(*again)) == timeless(encoded));
  restore(text, *state);
}

}  // namespace switchagg::fuzz
