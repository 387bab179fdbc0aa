// switchagg-test-data-abuse: a member with a valid lease token misbehaving
// on the data plane, for the data-plane abuse benchmark (other jobs must
// keep their speed and answers):
//   --mode huge-groups   join group after group of 4096 members (never formed)
//   --mode silent        join a 2-member group on two connections, never contribute
//   --mode reconnect     connect + HELLO over and over
// Runs for --seconds and prints what the agent answered.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "switchagg/agent/data_client.h"

using switchagg::agent::AggClient;
using switchagg::agent::AggGroup;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::string agent, token, mode = "huge-groups";
  double seconds = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--agent") agent = v;
    else if (a == "--token") token = v;
    else if (a == "--mode") mode = v;
    else if (a == "--seconds") seconds = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (agent.empty() || token.empty() ||
      (mode != "huge-groups" && mode != "silent" && mode != "reconnect")) {
    std::fprintf(stderr, "usage: switchagg-test-data-abuse --agent ADDR --token HEX "
                         "--mode huge-groups|silent|reconnect [--seconds S]\n");
    return 2;
  }
  const auto end = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  std::map<std::string, uint64_t> outcomes;
  uint64_t attempts = 0;
  if (mode == "reconnect") {
    while (Clock::now() < end) {
      auto c = AggClient::connect(agent, token, 2000);
      ++attempts;
      ++outcomes[c.ok() ? "connected" : switchagg::codeName(c.status().code())];
    }
  } else if (mode == "huge-groups") {
    auto c = AggClient::connect(agent, token, 2000);
    if (!c.ok()) {
      std::fprintf(stderr, "connect: %s\n", c.status().toString().c_str());
      return 1;
    }
    for (uint64_t gid = 1u << 20; Clock::now() < end; ++gid) {
      auto g = (*c)->join(gid, 4096, 0, 5);  // the other 4095 never come
      ++attempts;
      ++outcomes[g.ok() ? "formed" : switchagg::codeName(g.status().code())];
      if ((*c)->failed()) break;
    }
  } else {
    auto a = AggClient::connect(agent, token, 2000);
    auto b = AggClient::connect(agent, token, 2000);
    if (!a.ok() || !b.ok()) return 1;
    std::unique_ptr<AggGroup> ga, gb;
    std::thread t([&] {
      auto g = (*b)->join(77, 2, 1, 5000);
      if (g.ok()) gb = std::move(*g);
    });
    auto g = (*a)->join(77, 2, 0, 5000);
    t.join();
    if (g.ok()) ga = std::move(*g);
    attempts = 1;
    ++outcomes[ga && gb ? "joined, silent" : "join failed"];
    std::this_thread::sleep_until(end);
  }
  std::printf("data abuse (%s): %llu attempts;", mode.c_str(),
              static_cast<unsigned long long>(attempts));
  for (const auto& [k, n] : outcomes) std::printf(" %s %llu;", k.c_str(), static_cast<unsigned long long>(n));
  std::printf("\n");
  return 0;
}
