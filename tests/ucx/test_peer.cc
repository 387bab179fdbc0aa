// switchagg-ucx-test-peer: one rank of a multi-process transport test.
//
//   switchagg-ucx-test-peer <scenario> <rank> <size>
//
// Protocol with the coordinating test (stdin/stdout, one line each):
//   peer  -> "ADDR <hex>"         its worker address (or "host:port" for the
//                                  listener scenarios, hex-encoded)
//   coord -> "<hex>" x size        every rank's ADDR, in rank order
//   peer  -> "READY"               (failure scenarios) set up, now kill me
//   peer  -> "RESULT k=v ..."      values the test asserts on
//   peer  -> "DONE ok" | "DONE fail <why>"   then exit 0 / 1
// Options come from the environment (TransportOptions::fromEnvironment), so
// the test picks lanes, windows and UCX_TLS per run.
#include <cstdio>
#include <iostream>
#include <string>

#include "peer_scenarios.h"
#include "peer_util.h"

using namespace switchagg;
using namespace switchagg::ucx;

namespace switchagg::test {

void say(const std::string& line) {
  std::cout << line << std::endl;  // flushes: the coordinator reads lines
}

[[noreturn]] void fail(const std::string& why) {
  say("DONE fail " + why);
  std::exit(1);
}

void check(const Status& st, const std::string& what) {
  if (!st.ok()) fail(what + ": " + st.toString());
}

std::vector<std::vector<uint8_t>> exchange(const std::vector<uint8_t>& mine, int size) {
  say("ADDR " + toHex(mine));
  std::vector<std::vector<uint8_t>> all;
  for (int i = 0; i < size; ++i) {
    std::string line;
    if (!std::getline(std::cin, line)) fail("coordinator closed stdin");
    all.push_back(fromHex(line));
  }
  return all;
}

}  // namespace switchagg::test

int main(int argc, char** argv) {
  using namespace switchagg::test;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <scenario> <rank> <size>\n", argv[0]);
    return 2;
  }
  PeerEnv env;
  env.scenario = argv[1];
  env.rank = std::atoi(argv[2]);
  env.size = std::atoi(argv[3]);
  auto options = TransportOptions::fromEnvironment();
  check(options.status(), "options");
  auto context = Context::create(*options);
  check(context.status(), "context");
  auto worker = Worker::create(**context);
  check(worker.status(), "worker");
  env.worker = worker->get();
  runScenario(env);
  say("DONE ok");
  return 0;
}
