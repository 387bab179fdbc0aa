// switchagg-ucx-bench: PeerGroup tag-path ping-pong latency and streaming
// bandwidth between two processes on this host (the tool forks the second
// rank itself and swaps worker addresses over a pipe). Transports come from
// UCX_TLS, lanes/waits from SWITCHAGG_UCX_* or the flags below.
//
//   switchagg-ucx-bench [--test lat|bw|all] [--lanes N] [--wait busy|blocking]
//                       [--sizes 8,64,...] [--iters N] [--window W] [--csv]
//                       [--cpus A,B]   (pin rank 0 to CPU A, rank 1 to CPU B)
//
// Output (one line per size): "lat <bytes> <median us> <average us>" (one
// way, as ucx_perftest's 50%ile and average) or "bw <bytes> <MB/s>" (MB =
// 10^6 bytes, total bytes / wall time, as ucx_perftest's "overall").
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_run.h"
#include "switchagg/common/config.h"

using namespace switchagg;
using namespace switchagg::ucx;

namespace {

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--test lat|bw|all] [--lanes N] [--wait busy|blocking]\n"
               "          [--sizes a,b,c] [--iters N] [--window W] [--csv] [--cpus A,B]\n"
               "Environment: UCX_TLS picks transports; SWITCHAGG_UCX_* as in docs/transport.md\n",
               argv0);
}

Status parseSizes(const std::string& text, std::vector<size_t>* out) {
  out->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    auto v = parseSize("--sizes", item);
    if (!v.ok()) return v.status();
    out->push_back(*v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return Status::Ok();
}

Status parseArgs(int argc, char** argv, bench::BenchConfig* cfg) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--test") {
      auto v = parseChoice("--test", next(), {"lat", "bw", "all"});
      if (!v.ok()) return v.status();
      cfg->test = *v;
    } else if (a == "--lanes") {
      auto v = parseInt("--lanes", next(), 1, 64);
      if (!v.ok()) return v.status();
      cfg->options.lanes = static_cast<int>(*v);
    } else if (a == "--wait") {
      auto v = parseChoice("--wait", next(), {"busy", "blocking"});
      if (!v.ok()) return v.status();
      cfg->options.wait_mode = *v == "busy" ? WaitMode::kBusyPoll : WaitMode::kBlocking;
    } else if (a == "--sizes") {
      SWITCHAGG_RETURN_IF_ERROR(parseSizes(next(), &cfg->sizes));
    } else if (a == "--iters") {
      auto v = parseInt("--iters", next(), 1, 100000000);
      if (!v.ok()) return v.status();
      cfg->iters = *v;
    } else if (a == "--window") {
      auto v = parseInt("--window", next(), 1, 1024);
      if (!v.ok()) return v.status();
      cfg->window = static_cast<int>(*v);
    } else if (a == "--csv") {
      cfg->csv = true;
    } else if (a == "--cpus") {
      std::string v = next();
      size_t comma = v.find(',');
      if (comma == std::string::npos) return Status(Code::kInvalidArgument, "--cpus wants A,B");
      auto c0 = parseInt("--cpus", v.substr(0, comma), 0, 4095);
      auto c1 = parseInt("--cpus", v.substr(comma + 1), 0, 4095);
      if (!c0.ok()) return c0.status();
      if (!c1.ok()) return c1.status();
      cfg->cpus = {static_cast<int>(*c0), static_cast<int>(*c1)};
    } else {
      return Status(Code::kInvalidArgument, "unknown argument " + a);
    }
  }
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  bench::BenchConfig cfg;
  auto env = TransportOptions::fromEnvironment();
  if (!env.ok()) {
    std::fprintf(stderr, "switchagg-ucx-bench: %s\n", env.status().toString().c_str());
    return 2;
  }
  cfg.options = *env;
  cfg.options.wait_mode = WaitMode::kBusyPoll;  // like ucx_perftest; --wait overrides
  Status st = parseArgs(argc, argv, &cfg);
  if (!st.ok()) {
    std::fprintf(stderr, "switchagg-ucx-bench: %s\n", st.toString().c_str());
    usage(argv[0]);
    return 2;
  }
  int to_child[2], to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  const int rank = pid == 0 ? 1 : 0;
  if (!cfg.cpus.empty()) {
    // Pinning keeps both busy-polling ranks off one core, where every
    // hand-off would wait for a time slice (ucx_perftest -c does the same).
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cfg.cpus[rank], &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
      std::fprintf(stderr, "switchagg-ucx-bench: cannot pin rank %d to CPU %d\n", rank, cfg.cpus[rank]);
  }
  bench::Pipe link{rank == 0 ? to_parent[0] : to_child[0], rank == 0 ? to_child[1] : to_parent[1]};
  st = bench::runRank(cfg, rank, link);
  if (!st.ok()) std::fprintf(stderr, "switchagg-ucx-bench rank %d: %s\n", rank, st.toString().c_str());
  if (rank == 1) _exit(st.ok() ? 0 : 1);
  int child = 0;
  waitpid(pid, &child, 0);
  return st.ok() && WIFEXITED(child) && WEXITSTATUS(child) == 0 ? 0 : 1;
}
