// DataThread: one data-plane thread (data_thread.h). It waits (blocking)
// on its UCX worker for messages, feeds them to its AggregationEngine,
// reduces completed slots on its ReducePool, sends results and control
// messages; a send's completion gives its descriptor back to the SendPool
// (and a result's tells the engine). Other threads only post lease
// revocations (picked up within the worker's idle tick) and read counters.
#include "data_thread.h"
#include "data_plane_receive.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "aggregation_engine.h"
#include "lease_table.h"
#include "link_rate.h"
#include "send_pool.h"
#include "switchagg/common/log.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::agent {
namespace {

constexpr int64_t kLoopWaitMs = 50;
constexpr int64_t kTickMs = 50;
constexpr int64_t kShutdownDrainMs = 500;

// Endpoint user data: our PeerId, 0 before adoption, kDying once the peer
// was dropped (its endpoint is closing and must not be adopted again).
constexpr uintptr_t kDying = ~uintptr_t{0};
// The connection this agent made to its parent (trees): never a client.
constexpr uintptr_t kParent = ~uintptr_t{0} - 1;

uintptr_t tagOf(const ucx::Endpoint* ep) {
  return ep ? reinterpret_cast<uintptr_t>(ep->userData()) : kDying;
}

struct Peer {
  ucx::Endpoint* ep = nullptr;
  std::unique_ptr<ucx::Endpoint> owned;  // set once the listener hands it over
  bool stalled = false;                  // dropped by the stalled-send watch
  int64_t last_done_ms = 0;              // when a send to it last completed
};

}  // namespace

struct DataThread::Impl : EngineOutput {
  const DataThreadShared& shared;
  const DataPlaneConfig& config;
  const int index;
  const std::string listen;
  const std::string& parent_address;  // "" = a root
  LeaseTable& leases;
  std::unique_ptr<ucx::Worker> worker;
  std::unique_ptr<ucx::Listener> listener;
  std::unique_ptr<ReducePool> pool;
  std::unique_ptr<AggregationEngine> engine;
  std::string address;

  std::unordered_map<PeerId, Peer> peers;
  PeerId next_peer = 1;
  std::vector<std::pair<PeerId, std::string>> failed;  // worker thread only
  std::deque<std::pair<PeerId, wire::Frame>> outbox;   // control messages to send
  // Sized in init(): two sends per slot of the pool before it must grow.
  std::unique_ptr<SendPool> sends;

  std::mutex mu;  // guards revokes
  std::vector<std::pair<LeaseToken, std::string>> revokes;
  std::atomic<bool> has_revokes{false};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> peers_stalled{0};
  // The loop's clock, read once per turn: what the stalled-send watch
  // stamps sends and completions with (its bound is seconds; a turn waits
  // at most kLoopWaitMs), so no send reads the clock.
  int64_t loop_ms = 0;
  std::thread thread;

  std::atomic<int64_t> wrong_thread_warned_ms{0};

  Impl(const DataThreadShared& s, int i, std::string l)
      : shared(s),
        config(s.config),
        index(i),
        listen(std::move(l)),
        parent_address(s.parent_address),
        leases(s.leases) {}

  // Gives a connection its PeerId (on its first message or when the
  // listener hands it over, whichever comes first); 0 for a dying one.
  // The parent's connection: made on a tree group's first message up,
  // dropped (and remade by the next one) when it fails.
  std::unique_ptr<ucx::Endpoint> parent;
  std::string parent_failure;  // worker thread: the failure to report

  PeerId adopt(ucx::Endpoint* ep) {
    const uintptr_t tag = tagOf(ep);
    if (tag == kDying || tag == kParent) return 0;
    if (tag != 0) return static_cast<PeerId>(tag);
    const PeerId id = next_peer++;
    ep->setUserData(reinterpret_cast<void*>(static_cast<uintptr_t>(id)));
    peers[id].ep = ep;
    engine->onPeerConnected();
    return id;
  }

  ucx::Endpoint* endpoint(PeerId id) {
    auto it = peers.find(id);
    return (it == peers.end() || it->second.ep->failed()) ? nullptr : it->second.ep;
  }

  void sendControl(PeerId to, wire::Frame frame) override {
    outbox.emplace_back(to, std::move(frame));
  }

  void sendResult(PeerId to, const uint8_t* header, size_t header_bytes, const void* payload,
                  size_t bytes, std::shared_ptr<SlotBuffers> buffers, uint64_t serial,
                  uint32_t slot) override {
    ucx::Endpoint* ep = endpoint(to);
    const uint32_t i = sends->take();
    SendDescriptor& d = sends->at(i);
    if (!ep || !ep->amSend(wire::kAmToClient, header, header_bytes, payload, bytes, d.request,
                           completion(i))
                    .ok()) {
      sends->give(i);
      engine->sendDone(serial, slot);  // the member's failure aborts the group
      return;
    }
    // Filled after the post: the completion runs no earlier than the end of
    // a progress round, never inside amSend.
    d.buffers = std::move(buffers);
    d.serial = serial;
    d.slot = slot;
    d.result = true;
    d.to = to;
    d.since_ms = loop_ms;
  }

  ucx::SendCompletion completion(uint32_t i) {
    return ucx::SendCompletion{&Impl::onSendDone, this, i};
  }

  static void onSendDone(void* ctx, uint64_t id, const Status& /*status*/, size_t /*length*/) {
    auto* self = static_cast<Impl*>(ctx);
    SendDescriptor& d = self->sends->at(static_cast<uint32_t>(id));
    if (d.to != 0) {
      auto peer = self->peers.find(d.to);
      if (peer != self->peers.end()) peer->second.last_done_ms = self->loop_ms;
    }
    const bool result = d.result;
    const uint64_t serial = d.serial;
    const uint32_t slot = d.slot;
    self->sends->give(static_cast<uint32_t>(id));
    // Failed or not: a member's failure reaches the engine on its own.
    if (result) self->engine->sendDone(serial, slot);
  }

  bool sendUp(wire::Frame frame, const void* payload, size_t bytes,
              std::shared_ptr<SlotBuffers> keep) override {
    if (parent_address.empty()) return false;
    if (parent && parent->failed()) return false;  // reported by the failure handler
    if (!parent) {
      auto ep = ucx::Endpoint::connect(*worker, parent_address);
      if (!ep.ok()) {
        SA_WARN("agent", "parent agent at %s: %s", parent_address.c_str(),
                ep.status().toString().c_str());
        return false;
      }
      parent = std::move(ep.value());
      parent->setUserData(reinterpret_cast<void*>(kParent));
      SA_INFO("agent", "connected to the parent agent at %s", parent_address.c_str());
    }
    return sendFrame(*parent, wire::kAmToAgent, std::move(frame), payload, bytes, std::move(keep));
  }

  // Sends a frame (its own body, or `payload` read from `keep`'s buffers)
  // and tracks it until it completes; false if UCX refused it.
  bool sendFrame(ucx::Endpoint& ep, uint16_t am, wire::Frame frame, const void* payload = nullptr,
                 size_t bytes = 0, std::shared_ptr<SlotBuffers> keep = nullptr, PeerId to = 0) {
    const uint32_t i = sends->take();
    SendDescriptor& d = sends->at(i);
    d.to = to;
    d.since_ms = loop_ms;
    d.frame = std::move(frame);
    d.buffers = std::move(keep);
    const auto& f = d.frame;
    const void* body = payload ? payload : (f.body.empty() ? nullptr : f.body.data());
    const size_t body_bytes = payload ? bytes : f.body.size();
    if (!ep.amSend(am, f.header.data(), f.header_bytes, body, body_bytes, d.request, completion(i))
             .ok()) {
      sends->give(i);
      return false;
    }
    return true;
  }

  void flushOutbox() {
    while (!outbox.empty()) {
      auto [to, frame] = std::move(outbox.front());
      outbox.pop_front();
      if (ucx::Endpoint* ep = endpoint(to))
        (void)sendFrame(*ep, wire::kAmToClient, std::move(frame), nullptr, 0, nullptr, to);
    }
  }

  void processEvents() {
    if (has_revokes.exchange(false)) {
      std::vector<std::pair<LeaseToken, std::string>> todo;
      {
        std::lock_guard<std::mutex> lock(mu);
        todo.swap(revokes);
      }
      for (auto& [token, why] : todo) engine->revokeLease(token, why);
    }
    if (!parent_failure.empty()) {
      const std::string why = std::move(parent_failure);
      parent_failure.clear();
      engine->onParentFailed(why);
      // Its sends may still reference the endpoint: abandon, then close.
      if (parent) parent->abandon();
      parent.reset();
    }
    while (!failed.empty()) {
      std::vector<std::pair<PeerId, std::string>> todo;
      todo.swap(failed);
      for (auto& [id, why] : todo) {
        engine->onPeerFailed(id, why);
        // Closing may progress the worker (and re-enter handlers): the
        // engine is consistent here, and `failed` was swapped out.
        auto it = peers.find(id);
        if (it == peers.end()) continue;
        std::unique_ptr<ucx::Endpoint> owned = std::move(it->second.owned);
        // Forced close: cancels what is still in flight to it (a stalled
        // peer's sends, and the slot buffers they hold, are let go).
        it->second.ep->abandon();
        it->second.ep->setUserData(reinterpret_cast<void*>(kDying));
        peers.erase(it);
        owned.reset();
      }
    }
  }

  // A client that has not taken a send for member_timeout (a SIGSTOPped or
  // wedged process: its socket full, UCX's keepalive still answered by its
  // kernel) would hold the slot buffers its results read forever, aborted
  // group or not: it is dropped as failed, which aborts its groups and
  // cancels those sends. One pass over the descriptors per tick.
  void watchStalledSends(int64_t now) {
    const int64_t bound = config.engine.member_timeout_ms;
    sends->forEach([&](SendDescriptor& d) {
      if (!d.in_flight || d.to == 0 || now - d.since_ms <= bound) return;
      auto it = peers.find(d.to);
      // Progress is any send to it completing (a queue of large sends to a
      // slow but live member moves; one that takes nothing does not).
      if (it == peers.end() || it->second.stalled || now - it->second.last_done_ms <= bound) return;
      it->second.stalled = true;
      ++peers_stalled;
      const std::string why = "a send to it made no progress for " +
                              std::to_string(now - std::max(d.since_ms, it->second.last_done_ms)) +
                              " ms (data.member_timeout): a stopped or stuck member";
      SA_WARN("agent", "client %llu dropped: %s", static_cast<unsigned long long>(d.to),
              why.c_str());
      failed.emplace_back(d.to, why);
    });
  }

  bool wakeup() const {
    return stop.load() || has_revokes.load() || !failed.empty() || !parent_failure.empty() ||
           !outbox.empty() || engine->hasReducible();
  }

  void run() {
    int64_t next_tick = 0;
    loop_ms = steadyNowMs();
    while (!stop.load()) {
      (void)worker->waitIdle([this] { return wakeup(); }, kLoopWaitMs);
      loop_ms = steadyNowMs();
      processEvents();
      flushOutbox();
      engine->reduceReady();
      flushOutbox();
      const int64_t now = steadyNowMs();
      if (now >= next_tick) {
        engine->tick(now);
        watchStalledSends(now);
        next_tick = now + kTickMs;
      }
    }
    engine->abortAll(wire::Reason::kShutdown, "agent shutting down");
    flushOutbox();
    (void)worker->waitUntil([this] { return sends->inFlight() == 0; }, kShutdownDrainMs);
  }

  Status init() {
    auto w = ucx::Worker::create(shared.context);
    if (!w.ok()) return w.status();
    worker = std::move(w.value());
    pool = std::make_unique<ReducePool>(shared.reduce_threads);
    EngineConfig ec;
    static_cast<EngineSettings&>(ec) = config.engine;
    const LinkRate link = dataLinkRate(config.engine.link_mbps, config.sysfs_root, config.listen);
    ec.link_mbps = link.mbps;
    if (index == 0) SA_INFO("agent", "%s", link.text().c_str());
    ec.pool_slots = static_cast<size_t>(leases.limits().pool_slots);
    ec.has_parent = !parent_address.empty();
    ec.memory_account = shared.memory;
    sends = std::make_unique<SendPool>(2 * std::max<size_t>(ec.pool_slots, 1));
    SWITCHAGG_RETURN_IF_ERROR(armTestFault(ec));  // SWITCHAGG_AGENT_TEST_FAULT, test only
    LeaseLookup lookup = [this](const LeaseToken& token) -> std::optional<LeaseInfo> {
      if (!leaseServedBy(token, index, shared.count, shared.spread)) {
        warnWrongThread(token);
        return std::nullopt;  // refused as an unknown token: not this thread's lease
      }
      auto lease = leases.useByToken(token);  // a member or live group: the lease is in use
      if (!lease) return std::nullopt;
      return LeaseInfo{lease->job, static_cast<uint32_t>(std::max(lease->slots, 0))};
    };
    engine = std::make_unique<AggregationEngine>(ec, std::move(lookup), *this, *pool);
    SWITCHAGG_RETURN_IF_ERROR(
        worker->setAmHandler(wire::kAmToAgent, [this](const ucx::AmMessage& m) {
          const PeerId from = m.from ? adopt(m.from) : 0;
          engine->onMessage(from, m.header, m.header_length, m.data, m.length, steadyNowMs(),
                            m.placed);
        }));
    SWITCHAGG_RETURN_IF_ERROR(receiveIntoSlots(*worker, *engine, [this](ucx::Endpoint* ep) {
      return adopt(ep);
    }));
    SWITCHAGG_RETURN_IF_ERROR(
        worker->setAmHandler(wire::kAmToClient, [this](const ucx::AmMessage& m) {
          // Only the parent talks to this agent as to a client.
          if (!m.from || tagOf(m.from) != kParent) return;
          engine->onParentMessage(m.header, m.header_length, m.data, m.length, steadyNowMs());
        }));
    worker->setFailureHandler([this](ucx::Endpoint* ep, const Status& st) {
      const uintptr_t tag = tagOf(ep);
      if (tag == kParent) {
        parent_failure = st.message().empty() ? "connection lost" : st.message();
        return;
      }
      if (tag != 0 && tag != kDying) failed.emplace_back(static_cast<PeerId>(tag), st.message());
    });
    auto l = ucx::Listener::listen(*worker, listen, [this](std::unique_ptr<ucx::Endpoint> ep) {
      const PeerId id = adopt(ep.get());
      if (id != 0) peers[id].owned = std::move(ep);  // else: dropped already, closes here
    });
    if (!l.ok()) return l.status();
    listener = std::move(l.value());
    const size_t colon = listen.rfind(':');
    address = listen.substr(0, colon) + ":" + std::to_string(listener->port());
    return Status::Ok();
  }

  ~Impl() override {
    // Stop accepting and dispatching; then destroy the worker first: it
    // force-closes every endpoint at once (a flushing close per endpoint
    // could wait peer_timeout_ms for each unresponsive client). Slot buffers
    // that sends still referenced live until UCX has purged those sends.
    listener.reset();
    if (worker) {
      (void)worker->setAmHandler(wire::kAmToAgent, nullptr);
      (void)worker->setAmHandler(wire::kAmToClient, nullptr);
      worker->setFailureHandler(nullptr);
    }
    // Destroying a Request in flight cancels its completion (it never runs).
    std::vector<std::shared_ptr<SlotBuffers>> keep;
    if (sends) sends->forEach([&](SendDescriptor& d) { keep.push_back(std::move(d.buffers)); });
    sends.reset();
    outbox.clear();
    if (parent) parent->abandon();
    worker.reset();
    parent.reset();
    peers.clear();
    keep.clear();
    engine.reset();
  }

  // A lease of another thread here (refused as unknown): said once a second.
  void warnWrongThread(const LeaseToken& token) {
    const int64_t now = steadyNowMs();
    int64_t last = wrong_thread_warned_ms.load();
    if (now - last < 1000 || !wrong_thread_warned_ms.compare_exchange_strong(last, now)) return;
    SA_WARN("agent",
            "data thread %d (%s): lease %.8s... is served by data thread %d (and the %d after it); "
            "refused as unknown (connect to the lease's data_address)",
            index, address.c_str(), token.hex().c_str(), homeThread(token, shared.count),
            shared.spread - 1);
  }
};

DataThread::DataThread(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DataThread::~DataThread() {
  stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void DataThread::stop() {
  impl_->stop.store(true);
}

Result<std::unique_ptr<DataThread>> DataThread::create(const DataThreadShared& shared, int index,
                                                       const std::string& listen) {
  auto impl = std::make_unique<Impl>(shared, index, listen);
  SWITCHAGG_RETURN_IF_ERROR(impl->init());
  return std::unique_ptr<DataThread>(new DataThread(std::move(impl)));
}

void DataThread::start() {
  Impl* raw = impl_.get();
  raw->thread = std::thread([raw] {
    // Every data thread has this name: top -H, tests counting its allocations.
    pthread_setname_np(pthread_self(), "switchagg-data");
    raw->run();
  });
}

const std::string& DataThread::address() const {
  return impl_->address;
}

DataPlaneCounters DataThread::counters() const {
  DataPlaneCounters c = impl_->engine->counters();
  c.peers_stalled = impl_->peers_stalled.load();
  return c;
}

uint64_t DataThread::busyNs() const {
  clockid_t clock;
  timespec ts;
  if (!impl_->thread.joinable() || pthread_getcpuclockid(impl_->thread.native_handle(), &clock) ||
      clock_gettime(clock, &ts))
    return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void DataThread::revokeLease(const LeaseToken& token, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->revokes.emplace_back(token, reason);
  }
  impl_->has_revokes.store(true);
}

}  // namespace switchagg::agent
