// agent_client_bench: one member of an agent goodput run (benchmarks/agent_bench.sh
// starts N of them). Joins the group, warms up, then times `iters` float32
// SUM allreduces of `bytes` and prints one line:
//   rank=R bytes=B iters=I median_us=M min_us=m goodput_MBps=G
// goodput = bytes / median time (this member's vector reduced per second).
// --agent takes a comma-separated list: one stripe per address (StripedGroup).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "switchagg/agent/data_client.h"
#include "switchagg/common/config.h"  // splitList

using namespace switchagg;
using namespace switchagg::agent;

int main(int argc, char** argv) {
  std::string agent, token;
  uint64_t group = 1;
  int size = 1, rank = 0, iters = 20, warmup = 3, window = 0;
  size_t bytes = 1 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--agent")
      agent = v;
    else if (k == "--token")
      token = v;
    else if (k == "--group")
      group = std::strtoull(v.c_str(), nullptr, 0);
    else if (k == "--size")
      size = std::atoi(v.c_str());
    else if (k == "--rank")
      rank = std::atoi(v.c_str());
    else if (k == "--iters")
      iters = std::atoi(v.c_str());
    else if (k == "--warmup")
      warmup = std::atoi(v.c_str());
    else if (k == "--window")
      window = std::atoi(v.c_str());
    else if (k == "--bytes")
      bytes = std::strtoull(v.c_str(), nullptr, 0);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  // --agent A,B,...: one stripe per address (an agent's data-plane threads
  // spreading the lease, or several agents), the token the same for all.
  std::vector<std::shared_ptr<AggClient>> clients;
  std::vector<std::unique_ptr<AggGroup>> groups;
  for (const std::string& address : splitList(agent)) {
    auto client = AggClient::connect(address, token, 10000);
    if (!client.ok()) {
      std::fprintf(stderr, "connect: %s\n", client.status().toString().c_str());
      return 1;
    }
    auto g = (*client)->join(group, size, rank, 30000, static_cast<uint32_t>(window));
    if (!g.ok()) {
      std::fprintf(stderr, "join: %s\n", g.status().toString().c_str());
      return 1;
    }
    clients.push_back(std::move(*client));
    groups.push_back(std::move(*g));
  }
  if (clients.empty()) {
    std::fprintf(stderr, "connect: --agent names no address\n");
    return 1;
  }
  const std::string transports = clients.front()->transports();
  auto g = std::make_unique<StripedGroup>(std::move(clients), std::move(groups));
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  std::vector<float> send(count, 1.0f + static_cast<float>(rank)), recv(count);
  std::vector<double> us;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const Status st =
        g->allreduce(Dtype::kFloat32, Op::kSum, send.data(), recv.data(), count, 60000);
    const auto t1 = std::chrono::steady_clock::now();
    if (!st.ok()) {
      std::fprintf(stderr, "allreduce: %s\n", st.toString().c_str());
      return 1;
    }
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  const float want = static_cast<float>(size) + static_cast<float>(size) * (size - 1) / 2.0f;
  if (recv[0] != want || recv[count - 1] != want) {
    std::fprintf(stderr, "wrong result %g, want %g\n", recv[0], want);
    return 1;
  }
  std::sort(us.begin(), us.end());
  const double med = us[us.size() / 2];
  std::printf(
      "transports=%s rank=%d bytes=%zu iters=%d stripes=%zu window=%u slot_bytes=%zu "
      "median_us=%.1f min_us=%.1f goodput_MBps=%.1f\n",
      transports.c_str(), rank, count * sizeof(float), iters, g->stripes(), g->info().window,
      g->info().slot_bytes, med, us.front(), static_cast<double>(count * sizeof(float)) / med);
  g.reset();
  return 0;
}
