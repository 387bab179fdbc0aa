// DataPlane: the agent's data-plane threads (data_thread.h) on one UCX
// context. Each thread owns a worker, a listener, an engine and the clients
// that connected to it; a lease's groups all live on its home thread
// (homeThread), whose address the control plane gives the lease's jobs.
// Revocations reach every thread; counters are summed over them.
#include "data_plane.h"
#include "data_plane_receive.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "aggregation_engine.h"
#include "data_thread.h"
#include "lease_table.h"
#include "switchagg/agent/malloc_tuning.h"
#include "switchagg/common/log.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::agent {

int homeThread(const LeaseToken& token, int threads) {
  if (threads <= 1) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a: every tool and test computes the same
  for (size_t i = 0; i < LeaseToken::size(); ++i) {
    h ^= token[i];
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % static_cast<uint64_t>(threads));
}

bool leaseServedBy(const LeaseToken& token, int index, int threads, int spread) {
  if (index == 0 || threads <= 1) return true;
  const int home = homeThread(token, threads);
  return (index - home + threads) % threads < std::clamp(spread, 1, threads);
}

int defaultPlaneThreads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(cores, 1, 4));
}

struct DataPlane::Impl {
  std::unique_ptr<ucx::Context> context;
  std::unique_ptr<DataThreadShared> shared;
  std::vector<std::unique_ptr<DataThread>> threads;  // destroyed before the context

  ~Impl() {
    for (auto& t : threads) t->stop();  // all loops end together, then each is joined
    threads.clear();
    context.reset();
  }
};

DataPlane::DataPlane(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DataPlane::~DataPlane() = default;

Result<std::unique_ptr<DataPlane>> DataPlane::start(const DataPlaneConfig& config,
                                                    std::string parent_address,
                                                    LeaseTable& leases) {
  if (config.engine.slot_bytes < SlotPool::kMinSlotBytes ||
      config.engine.slot_bytes > wire::kMaxSlotBytes)
    return Status(Code::kInvalidArgument, "data.slot_bytes must be between 4 KiB and 64 MiB, got " +
                                              std::to_string(config.engine.slot_bytes));
  tuneMallocForStreaming();
  auto impl = std::make_unique<Impl>();
  auto opts = ucx::TransportOptions::fromEnvironment();
  if (!opts.ok()) return opts.status();
  opts->enable_tag = false;  // active messages only
  opts->rndv_threshold = wire::kEagerThresholdBytes;
  auto ctx = ucx::Context::create(*opts);
  if (!ctx.ok()) return ctx.status();
  impl->context = std::move(ctx.value());
  const int n = config.plane_threads > 0 ? config.plane_threads : defaultPlaneThreads();
  impl->shared.reset(
      new DataThreadShared{config, std::move(parent_address), leases, *impl->context});
  impl->shared->count = n;
  // A leaf of a tree forwards each group to its spine whole: no spreading.
  impl->shared->spread = impl->shared->parent_address.empty() && n > 1
                             ? (config.threads_per_job > 0 ? std::min(config.threads_per_job, n) : n)
                             : 1;
  // The reduction threads (data.threads) are shared out over the planes.
  const int reduce =
      config.threads > 0 ? config.threads : static_cast<int>(std::thread::hardware_concurrency());
  impl->shared->reduce_threads = std::max(1, reduce / n);
  // Thread 0 listens on data.listen; thread k on the same host, port P - k
  // (P: data.listen's), so a restarted agent has the same addresses for the
  // jobs whose leases it kept; any port when P is 0.
  const size_t colon = config.listen.rfind(':');
  const std::string host = config.listen.substr(0, colon);
  const long port = std::strtol(config.listen.c_str() + colon + 1, nullptr, 10);
  if (port != 0 && port - (n - 1) < 1024)
    return Status(Code::kInvalidArgument,
                  "data.listen's port " + std::to_string(port) + " leaves no room for " +
                      std::to_string(n) + " data-plane threads (they take the ports below it, " +
                      "down to " + std::to_string(port - (n - 1)) + "; 1024 is the lowest)");
  for (int i = 0; i < n; ++i) {
    const std::string listen =
        i == 0 ? config.listen : host + ":" + std::to_string(port == 0 ? 0 : port - i);
    auto t = DataThread::create(*impl->shared, i, listen);
    if (!t.ok()) return t.status();
    impl->threads.push_back(std::move(t.value()));
  }
  for (auto& t : impl->threads) t->start();
  std::string all;
  for (auto& t : impl->threads) all += (all.empty() ? "" : " ") + t->address();
  SA_INFO("agent",
          "data plane listening on %s (%d data-plane threads: %s; %d reduction threads each; "
          "each lease on %d of them)",
          impl->threads[0]->address().c_str(), n, all.c_str(), impl->shared->reduce_threads,
          impl->shared->spread);
  return std::unique_ptr<DataPlane>(new DataPlane(std::move(impl)));
}

std::string DataPlane::address() const {
  return impl_->threads[0]->address();
}

std::string DataPlane::addressFor(const std::string& token_hex) const {
  // The home thread first, then the next spread - 1 (wrapping): the order
  // every member stripes in.
  const std::optional<LeaseToken> token = LeaseToken::fromHex(token_hex);
  if (!token) return address();  // thread 0 serves any
  const int n = threads();
  const int home = homeThread(*token, n);
  std::string out;
  for (int i = 0; i < impl_->shared->spread; ++i)
    out += (i == 0 ? "" : ",") + impl_->threads[size_t((home + i) % n)]->address();
  return out;
}

int DataPlane::threadOf(const std::string& token_hex) const {
  const std::optional<LeaseToken> token = LeaseToken::fromHex(token_hex);
  return token ? homeThread(*token, threads()) : 0;
}

int DataPlane::threads() const {
  return static_cast<int>(impl_->threads.size());
}

DataPlaneCounters DataPlane::counters() const {
  DataPlaneCounters sum;
  for (const auto& t : impl_->threads) {
    const DataPlaneCounters c = t->counters();
    addThreadCounters(sum, c);
    DataThreadCounters share;
    share.index = static_cast<int>(sum.threads.size());
    share.address = t->address();
    share.counters = static_cast<const DataPlaneScalars&>(c);
    share.busy_ns = t->busyNs();
    share.bytes_in_by_job = c.bytes_in_by_job;
    share.groups_by_job = c.groups_by_job;
    sum.threads.push_back(std::move(share));  // its leases: the control plane's (threadOf)
  }
  // One account for all threads (CounterCombine::kWhole): read it now.
  sum.slot_memory_bytes = impl_->shared->memory->load(std::memory_order_relaxed);
  return sum;
}

void DataPlane::revokeLease(const LeaseToken& token, const std::string& reason) {
  // Every thread: a lease's groups live on its home thread, but thread 0
  // serves any lease whose jobs came to data.listen.
  for (auto& t : impl_->threads) t->revokeLease(token, reason);
}

}  // namespace switchagg::agent
