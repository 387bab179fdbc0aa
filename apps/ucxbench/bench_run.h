// One rank of switchagg-ucx-bench: address swap over a pipe, then the
// latency and bandwidth loops over PeerGroup.
#pragma once

#include <string>
#include <vector>

#include "switchagg/ucx/transport.h"

namespace switchagg::bench {

struct BenchConfig {
  ucx::TransportOptions options;
  std::string test = "all";     // lat | bw | all
  std::vector<size_t> sizes;    // empty: 8 B..4 KiB (lat), 64 KiB..64 MiB (bw)
  int64_t iters = 0;            // 0: per size, about 0.2 s of traffic
  int window = 0;               // bw sends (and receives) in flight; 0: 32
  bool csv = false;
  std::vector<int> cpus;        // {rank 0 CPU, rank 1 CPU}; empty: no pinning
};

struct Pipe {
  int in;
  int out;
};

Status runRank(const BenchConfig& cfg, int rank, const Pipe& link);

}  // namespace switchagg::bench
