// switchagg-test-control-flood: the control-plane starvation attack, as an
// unprivileged user would run it. Holds N connections to a control address
// (TCP or unix:PATH), each sending half a request line (or nothing, or
// junk), and every --reopen interval re-opens those the agent cut. Stops
// after --seconds or on SIGTERM/SIGINT and prints what it saw:
//   flood: 200 held, 1234 opened, 1034 cut by the agent, 0 connect errors
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "agent_fixture.h"

using switchagg::testing::RawConnection;

namespace {

volatile sig_atomic_t g_stop = 0;
void onSignal(int) { g_stop = 1; }

int usage() {
  std::fprintf(stderr,
               "usage: switchagg-test-control-flood --address ADDR [--connections N] "
               "[--seconds S] [--reopen-ms MS] [--mode half|idle|junk]\n");
  return 2;
}

std::string payload(const std::string& mode, unsigned seed) {
  if (mode == "idle") return "";
  if (mode == "junk") {
    std::string junk(64, '\0');
    for (char& c : junk) c = static_cast<char>((seed = seed * 1103515245 + 12345) >> 16);
    return junk;
  }
  return "GET /v1/status HT";  // half a request line, never finished
}

}  // namespace

int main(int argc, char** argv) {
  std::string address, mode = "half";
  int connections = 200;
  double seconds = 0;  // 0: until a signal
  int reopen_ms = 1000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--address") address = v;
    else if (a == "--connections") connections = std::atoi(v.c_str());
    else if (a == "--seconds") seconds = std::atof(v.c_str());
    else if (a == "--reopen-ms") reopen_ms = std::atoi(v.c_str());
    else if (a == "--mode" && (v == "half" || v == "idle" || v == "junk")) mode = v;
    else return usage();
  }
  if (address.empty() || connections < 1 || reopen_ms < 1) return usage();
  signal(SIGTERM, onSignal);
  signal(SIGINT, onSignal);
  signal(SIGPIPE, SIG_IGN);

  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  std::vector<std::unique_ptr<RawConnection>> held(static_cast<size_t>(connections));
  uint64_t opened = 0, cut = 0, connect_errors = 0;
  auto next_reopen = Clock::now();
  while (!g_stop && (seconds <= 0 || Clock::now() < end)) {
    if (Clock::now() >= next_reopen) {
      for (size_t i = 0; i < held.size(); ++i) {
        if (held[i]) continue;
        auto c = RawConnection::open(address);
        if (!c.ok()) {
          ++connect_errors;
          continue;
        }
        ++opened;
        (*c)->send(payload(mode, static_cast<unsigned>(opened)));
        held[i] = std::move(*c);
      }
      next_reopen = Clock::now() + std::chrono::milliseconds(reopen_ms);
    }
    std::vector<pollfd> fds;
    std::vector<size_t> slot;
    for (size_t i = 0; i < held.size(); ++i) {
      if (!held[i]) continue;
      fds.push_back({held[i]->fd(), POLLIN, 0});
      slot.push_back(i);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_reopen - Clock::now());
    int n = poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait.count(), 1)));
    if (n <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      char buf[4096];
      ssize_t got = recv(fds[k].fd, buf, sizeof buf, MSG_DONTWAIT);
      if (got > 0) continue;  // the agent's answer (a 503 or 408); the close follows
      ++cut;
      held[slot[k]].reset();
    }
  }
  size_t still = 0;
  for (const auto& c : held) still += c != nullptr;
  std::printf("flood: %zu held, %llu opened, %llu cut by the agent, %llu connect errors\n", still,
              static_cast<unsigned long long>(opened), static_cast<unsigned long long>(cut),
              static_cast<unsigned long long>(connect_errors));
  return 0;
}
