// Latency: ping-pong, one-way time = round trip / 2 (as ucx_perftest
// tag_lat). Bandwidth: rank 0 streams `iters` messages keeping `window`
// sends in flight, rank 1 keeps `window` receives posted (all into one
// buffer, as ucx_perftest tag_bw); the clock stops at rank 1's ack.
#include "bench_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

namespace switchagg::bench {
using ucx::PeerGroup;
using ucx::Request;
using ucx::Worker;

namespace {

constexpr int64_t kWaitMs = 120000;
constexpr uint32_t kTagLat = 1, kTagBw = 2, kTagAck = 3;

// All n bytes at c through `io` (read or write), which may move part of
// them at a time; `what` names the failure.
template <typename Byte, typename Io>
Status pipeAll(Io io, int fd, Byte* c, size_t n, const char* what) {
  while (n > 0) {
    const ssize_t done = io(fd, c, n);
    if (done <= 0) return Status(Code::kIoError, what);
    c += done;
    n -= static_cast<size_t>(done);
  }
  return Status::Ok();
}

Status writeAll(int fd, const void* p, size_t n) {
  return pipeAll(::write, fd, static_cast<const uint8_t*>(p), n, "pipe write");
}

Status readAll(int fd, void* p, size_t n) {
  return pipeAll(::read, fd, static_cast<uint8_t*>(p), n, "pipe read");
}

Result<std::vector<uint8_t>> swapAddress(const Pipe& link, const std::vector<uint8_t>& mine) {
  uint64_t n = mine.size();
  SWITCHAGG_RETURN_IF_ERROR(writeAll(link.out, &n, sizeof(n)));
  SWITCHAGG_RETURN_IF_ERROR(writeAll(link.out, mine.data(), mine.size()));
  SWITCHAGG_RETURN_IF_ERROR(readAll(link.in, &n, sizeof(n)));
  std::vector<uint8_t> theirs(n);
  SWITCHAGG_RETURN_IF_ERROR(readAll(link.in, theirs.data(), n));
  return theirs;
}

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int64_t itersFor(const BenchConfig& cfg, size_t size, bool lat) {
  if (cfg.iters > 0) return cfg.iters;
  if (lat) return 20000;
  return std::clamp<int64_t>((int64_t(1) << 30) / int64_t(std::max<size_t>(size, 1)), 16, 20000);
}

struct Latency {
  double median_us;   // one-way, from the median round trip (ucx_perftest's 50%ile)
  double average_us;  // one-way, total time / iterations
};

// A cycle counter for per-round-trip timing, as ucx_perftest does:
// clock_gettime costs ~60 ns on a VM, a tenth of a shared-memory round
// trip. Scaled to microseconds against steady_clock over the whole run.
inline uint64_t ticks() {
#if defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Both ranks run this; rank 0's result is meaningful.
Result<Latency> pingPong(PeerGroup& g, std::vector<uint8_t>& buf, size_t size, int64_t iters) {
  Worker& w = g.worker();
  const int peer = 1 - g.rank();
  Request s, r;
  std::vector<uint64_t> rtt;
  rtt.reserve(static_cast<size_t>(iters));
  auto t0 = std::chrono::steady_clock::now();
  uint64_t first = 0, last = 0;
  for (int64_t i = -iters / 10; i < iters; ++i) {  // negative i: warm-up
    if (i == 0) {
      t0 = std::chrono::steady_clock::now();
      first = last = ticks();
    }
    SWITCHAGG_RETURN_IF_ERROR(g.irecv(peer, kTagLat, buf.data(), size, r));
    if (g.rank() == 0) {
      SWITCHAGG_RETURN_IF_ERROR(g.isend(peer, kTagLat, buf.data(), size, s));
      SWITCHAGG_RETURN_IF_ERROR(w.wait(r, kWaitMs));
    } else {
      SWITCHAGG_RETURN_IF_ERROR(w.wait(r, kWaitMs));
      SWITCHAGG_RETURN_IF_ERROR(g.isend(peer, kTagLat, buf.data(), size, s));
    }
    SWITCHAGG_RETURN_IF_ERROR(w.wait(s, kWaitMs));
    if (i >= 0) {
      uint64_t now = ticks();
      rtt.push_back(now - last);
      last = now;
    }
  }
  const double total_us = seconds(t0) * 1e6;
  const double us_per_tick = total_us / double(std::max<uint64_t>(last - first, 1));
  Latency out{0, total_us / double(iters) / 2.0};
  std::nth_element(rtt.begin(), rtt.begin() + rtt.size() / 2, rtt.end());
  out.median_us = double(rtt[rtt.size() / 2]) * us_per_tick / 2.0;
  return out;
}

// Rank 0 returns MB/s.
Result<double> stream(PeerGroup& g, std::vector<uint8_t>& buf, size_t size, int64_t iters,
                      int window) {
  Worker& w = g.worker();
  const int peer = 1 - g.rank();
  std::vector<std::unique_ptr<Request>> reqs(window);
  for (auto& r : reqs) r = std::make_unique<Request>();
  uint8_t ack = 0;
  auto post = [&](Request& r) {
    return g.rank() == 0 ? g.isend(peer, kTagBw, buf.data(), size, r)
                         : g.irecv(peer, kTagBw, buf.data(), size, r);
  };
  // Warm-up round so lanes are connected and buffers registered.
  SWITCHAGG_RETURN_IF_ERROR(post(*reqs[0]));
  SWITCHAGG_RETURN_IF_ERROR(w.wait(*reqs[0], kWaitMs));
  SWITCHAGG_RETURN_IF_ERROR(g.rank() == 0 ? g.recv(peer, kTagAck, &ack, 1, kWaitMs)
                                          : g.send(peer, kTagAck, &ack, 1, kWaitMs));
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < std::min<int64_t>(window, iters); ++i)
    SWITCHAGG_RETURN_IF_ERROR(post(*reqs[i]));
  for (int64_t i = 0; i < iters; ++i) {
    Request& r = *reqs[i % window];
    SWITCHAGG_RETURN_IF_ERROR(w.wait(r, kWaitMs));
    if (i + window < iters) SWITCHAGG_RETURN_IF_ERROR(post(r));
  }
  if (g.rank() == 0) {
    SWITCHAGG_RETURN_IF_ERROR(g.recv(peer, kTagAck, &ack, 1, kWaitMs));
  } else {
    SWITCHAGG_RETURN_IF_ERROR(g.send(peer, kTagAck, &ack, 1, kWaitMs));
  }
  return double(size) * double(iters) / seconds(t0) / 1e6;
}

// "lat <bytes> <median us> <average us>" / "bw <bytes> <MB/s>"
void report(const BenchConfig& cfg, const char* kind, size_t size, double value,
            double extra = -1) {
  if (cfg.csv) {
    std::printf("%s,%zu,%.3f", kind, size, value);
    if (extra >= 0) std::printf(",%.3f", extra);
  } else {
    std::printf("%-4s %10zu %12.3f", kind, size, value);
    if (extra >= 0) std::printf(" %12.3f", extra);
    std::printf(" %s", std::string(kind) == "lat" ? "us(median,avg)" : "MB/s");
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

Status runRank(const BenchConfig& cfg, int rank, const Pipe& link) {
  auto ctx = ucx::Context::create(cfg.options);
  if (!ctx.ok()) return ctx.status();
  auto worker = ucx::Worker::create(**ctx);
  if (!worker.ok()) return worker.status();
  auto theirs = swapAddress(link, (*worker)->address());
  if (!theirs.ok()) return theirs.status();
  std::vector<std::vector<uint8_t>> addrs(2);
  addrs[rank] = (*worker)->address();
  addrs[1 - rank] = *theirs;
  auto group = PeerGroup::create(**worker, 1, rank, addrs);
  if (!group.ok()) return group.status();
  PeerGroup& g = **group;
  if (rank == 0) {
    std::string lanes = g.describePeer(1);
    std::printf("# lanes=%d wait=%s\n", (*ctx)->lanes(),
                cfg.options.wait_mode == ucx::WaitMode::kBusyPoll ? "busy" : "blocking");
    for (size_t p = 0; p < lanes.size();) {
      size_t nl = lanes.find('\n', p);
      std::printf("# %s\n", lanes.substr(p, nl - p).c_str());
      p = nl == std::string::npos ? lanes.size() : nl + 1;
    }
  }
  const bool lat = cfg.test != "bw", bw = cfg.test != "lat";
  std::vector<size_t> lat_sizes = {8, 64, 512, 4096};
  std::vector<size_t> bw_sizes = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  if (!cfg.sizes.empty()) lat_sizes = bw_sizes = cfg.sizes;
  size_t max_size = 8;
  for (size_t s : lat_sizes) max_size = std::max(max_size, s);
  for (size_t s : bw_sizes) max_size = std::max(max_size, s);
  std::vector<uint8_t> buf(max_size, 0x5a);
  for (size_t s : lat ? lat_sizes : std::vector<size_t>{}) {
    auto v = pingPong(g, buf, s, itersFor(cfg, s, true));
    if (!v.ok()) return v.status();
    if (rank == 0) report(cfg, "lat", s, v->median_us, v->average_us);
  }
  for (size_t s : bw ? bw_sizes : std::vector<size_t>{}) {
    int window = cfg.window > 0 ? cfg.window : 32;
    auto v = stream(g, buf, s, itersFor(cfg, s, false), window);
    if (!v.ok()) return v.status();
    if (rank == 0) report(cfg, "bw", s, *v);
  }
  return Status::Ok();
}

}  // namespace switchagg::bench
