// Tagged PeerGroup scenarios: sizes with content checks and echo, ordering
// of same-tag messages across lanes and clear-to-send, the admission window
// under several senders, and an idle peer for the SIGKILL test.
#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>

#include "peer_scenarios.h"
#include "peer_util.h"

namespace switchagg::test {
using ucx::PeerGroup;
using ucx::Request;

namespace {

constexpr int64_t kWaitMs = 30000;

std::string counterLine(const PeerGroup& g) {
  const auto& c = g.counters();
  std::ostringstream os;
  os << "RESULT messages_sent=" << c.messages_sent << " bytes_sent=" << c.bytes_sent
     << " bytes_received=" << c.bytes_received << " cts_granted=" << c.cts_granted
     << " cts_waits=" << c.cts_waits << " credits_used=" << c.cts_credits_used
     << " revoked=" << c.cts_revoked << " max_inflight=" << c.max_inflight_to_me
     << " lanes=" << c.lane_messages.size();
  for (size_t i = 0; i < c.lane_messages.size(); ++i)
    os << " lane" << i << "=" << c.lane_messages[i];
  return os.str();
}

void expectPayload(const std::vector<uint8_t>& buf, size_t got, size_t want, uint64_t seed,
                   const std::string& what) {
  if (got != want)
    fail(what + ": length " + std::to_string(got) + " != " + std::to_string(want));
  long bad = checkPattern(buf.data(), want, seed);
  if (bad >= 0) fail(what + ": wrong byte at " + std::to_string(bad));
}

// rank 0 sends each size to rank 1, which checks it and echoes it back
// (sizes above kEchoMax one way only, to keep the suite quick).
void echoSizes(const PeerEnv& env, PeerGroup& g) {
  constexpr size_t kEchoMax = 4 << 20;
  const std::vector<size_t> sizes = {0,          1,      7,      4095,         65535,
                                     65536,      100003, 1 << 20, (1 << 20) + 13,
                                     64u << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t n = sizes[i];
    const uint32_t tag = static_cast<uint32_t>(i % 3);
    std::vector<uint8_t> buf(n);
    std::string what = "size " + std::to_string(n);
    if (env.rank == 0) {
      fillPattern(buf, i);
      check(g.send(1, tag, buf.data(), n, kWaitMs), what + " send");
      if (n > kEchoMax) continue;
      std::vector<uint8_t> back(n + 16);
      Request r;
      check(g.irecv(1, 1000 + tag, back.data(), back.size(), r), what + " irecv echo");
      check(env.worker->wait(r, kWaitMs), what + " echo");
      back.resize(n);
      expectPayload(back, r.length(), n, i, what + " echo");
    } else {
      Request r;
      std::vector<uint8_t> in(n + 16);  // a larger buffer: length must be reported
      check(g.irecv(0, tag, in.data(), in.size(), r), what + " irecv");
      check(env.worker->wait(r, kWaitMs), what + " recv");
      in.resize(n);
      expectPayload(in, r.length(), n, i, what);
      if (n > kEchoMax) continue;
      check(g.send(0, 1000 + tag, in.data(), n, kWaitMs), what + " echo send");
    }
  }
}

// Same (src, dst, tag) burst, small and large (clear-to-send) messages
// mixed, all in flight at once across the lanes: must match in order.
void orderedBurst(const PeerEnv& env, PeerGroup& g) {
  constexpr int kCount = 48;
  const size_t sizes[3] = {100, 200 << 10, 3000};
  std::vector<std::vector<uint8_t>> bufs(kCount);
  std::vector<std::unique_ptr<Request>> reqs;
  std::vector<Request*> raw;
  for (int j = 0; j < kCount; ++j) {
    bufs[j].resize(sizes[j % 3]);
    reqs.push_back(std::make_unique<Request>());
    raw.push_back(reqs.back().get());
    if (env.rank == 0) {
      fillPattern(bufs[j], 5000 + j);
      check(g.isend(1, 77, bufs[j].data(), bufs[j].size(), *reqs[j]), "burst isend");
    } else {
      check(g.irecv(0, 77, bufs[j].data(), bufs[j].size(), *reqs[j]), "burst irecv");
    }
  }
  check(env.worker->waitAll(raw, kWaitMs), "burst wait");
  if (env.rank == 1)
    for (int j = 0; j < kCount; ++j)
      expectPayload(bufs[j], reqs[j]->length(), sizes[j % 3], 5000 + j,
                    "burst message " + std::to_string(j));
}

// Everyone checks in with rank 0 and waits for its reply, so no rank closes
// its endpoints while another still has traffic for it.
void finalBarrier(const PeerEnv& env, PeerGroup& g) {
  uint8_t token = 1;
  if (env.rank != 0) {
    check(g.sendrecv(0, &token, 1, 0, &token, 1, 0xbaa, kWaitMs), "barrier");
    return;
  }
  for (int r = 1; r < env.size; ++r) check(g.recv(r, 0xbaa, &token, 1, kWaitMs), "barrier in");
  for (int r = 1; r < env.size; ++r) check(g.send(r, 0xbaa, &token, 1, kWaitMs), "barrier out");
}

// Receiver-driven credits: rank 1 posts a large receive and tells rank 0
// (small message); rank 0 lets the credit arrive, then its send must go at
// once (credits_used), without an RTS round trip.
void creditedSend(const PeerEnv& env, PeerGroup& g) {
  std::vector<uint8_t> buf(1 << 20);
  uint8_t token = 7;
  if (env.rank == 1) {
    Request r;
    check(g.irecv(0, 500, buf.data(), buf.size(), r), "credit irecv");
    check(g.send(0, 501, &token, 1, kWaitMs), "credit token");
    check(env.worker->wait(r, kWaitMs), "credited recv");
    expectPayload(buf, r.length(), buf.size(), 500, "credited message");
    return;
  }
  check(g.recv(1, 501, &token, 1, kWaitMs), "credit token");
  (void)env.worker->waitUntil([] { return false; }, 100);  // let the credit land
  const uint64_t waits = g.counters().cts_waits;
  fillPattern(buf, 500);
  check(g.send(1, 500, buf.data(), buf.size(), kWaitMs), "credited send");
  if (g.counters().cts_waits != waits) fail("a send with a credit in hand waited for CTS");
}

}  // namespace

void runMessages(const PeerEnv& env, PeerGroup& g) {
  if (env.size != 2) fail("messages needs 2 ranks");
  echoSizes(env, g);
  orderedBurst(env, g);
  creditedSend(env, g);
  finalBarrier(env, g);
  std::string lanes = g.describePeer(1 - env.rank);
  for (char& c : lanes) c = (c == ' ') ? ',' : (c == '\n' ? ';' : c);
  say(counterLine(g) + " transports=" + lanes);
}

// rank 0 receives from every other rank: phase 1 many window-sized-fraction
// messages, phase 2 one message larger than the window from each sender.
void runAdmission(const PeerEnv& env, PeerGroup& g) {
  constexpr int kPerSender = 8;
  constexpr size_t kSmall = 300 << 10, kLarge = 3 << 20;
  const int senders = env.size - 1;
  auto phase = [&](uint32_t tag, int count, size_t n) {
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<std::unique_ptr<Request>> reqs;
    std::vector<Request*> raw;
    for (int s = 1; s <= (env.rank == 0 ? senders : 1); ++s) {
      for (int j = 0; j < count; ++j) {
        bufs.emplace_back(n);
        reqs.push_back(std::make_unique<Request>());
        raw.push_back(reqs.back().get());
        uint64_t seed = uint64_t(tag) << 32 | uint64_t(env.rank == 0 ? s : env.rank) << 16 | j;
        if (env.rank == 0) {
          check(g.irecv(s, tag, bufs.back().data(), n, *reqs.back()), "admission irecv");
        } else {
          fillPattern(bufs.back(), seed);
          check(g.isend(0, tag, bufs.back().data(), n, *reqs.back()), "admission isend");
        }
      }
    }
    check(env.worker->waitAll(raw, kWaitMs), "admission wait");
    if (env.rank == 0)
      for (size_t k = 0; k < bufs.size(); ++k) {
        int s = 1 + static_cast<int>(k) / count, j = static_cast<int>(k) % count;
        expectPayload(bufs[k], reqs[k]->length(), n, uint64_t(tag) << 32 | uint64_t(s) << 16 | j,
                      "admission message");
      }
  };
  phase(1, kPerSender, kSmall);
  if (env.rank == 0) say("RESULT phase1_max_inflight=" + std::to_string(g.counters().max_inflight_to_me));
  phase(2, 1, kLarge);
  finalBarrier(env, g);
  say(counterLine(g));
}

// Credits must not deadlock: rank 0's 1 MiB window goes to rank 1's credit
// first, but rank 1 sends only after rank 0 heard from rank 2, whose
// message needs that window. Rank 0 has to take rank 1's credit back.
void runRevoke(const PeerEnv& env, PeerGroup& g) {
  std::vector<uint8_t> a(1 << 20), b(1 << 20);
  uint8_t token = 3;
  if (env.rank == 0) {
    Request ra, rb;
    check(g.irecv(1, 1, a.data(), a.size(), ra), "irecv from 1");
    check(g.irecv(2, 1, b.data(), b.size(), rb), "irecv from 2");
    check(env.worker->wait(rb, kWaitMs), "message from 2 (needs rank 1's credit back)");
    check(g.send(1, 2, &token, 1, kWaitMs), "token");
    check(env.worker->wait(ra, kWaitMs), "message from 1");
    expectPayload(a, ra.length(), a.size(), 1, "message from 1");
    expectPayload(b, rb.length(), b.size(), 2, "message from 2");
  } else {
    std::vector<uint8_t>& buf = env.rank == 1 ? a : b;
    fillPattern(buf, env.rank);
    if (env.rank == 1) check(g.recv(0, 2, &token, 1, kWaitMs), "token");
    check(g.send(0, 1, buf.data(), buf.size(), kWaitMs), "send to 0");
  }
  finalBarrier(env, g);
  say(counterLine(g));
}

// rank 1 goes quiet after a handshake; rank 0 has a receive and a
// clear-to-send send pending on it and reports when they fail.
void runIdle(const PeerEnv& env, PeerGroup& g) {
  uint32_t token = 42, back = 0;
  check(g.sendrecv(1 - env.rank, &token, sizeof(token), 1 - env.rank, &back, sizeof(back), 5,
                   kWaitMs),
        "handshake");
  if (env.rank == 1) {
    say("READY");
    std::this_thread::sleep_for(std::chrono::seconds(60));
    fail("not killed");
  }
  std::vector<uint8_t> in(1024), out(1 << 20);
  Request recv, send;
  check(g.irecv(1, 9, in.data(), in.size(), recv), "idle irecv");
  check(g.isend(1, 9, out.data(), out.size(), send), "idle isend");
  say("READY");
  Status st = env.worker->waitAll({&recv, &send}, kWaitMs);
  const int64_t detected = monotonicMs();
  Status again = g.send(1, 10, out.data(), 8, 1000);
  say("RESULT detect_ms=" + std::to_string(detected) + " wait=" + codeName(st.code()) +
      " recv=" + codeName(recv.status().code()) + " send=" + codeName(send.status().code()) +
      " again=" + codeName(again.code()));
}

// PeerGroup::watch: both ranks make their connections to the other and
// send nothing; rank 1 only progresses until it is killed; rank 0 waits
// for peerStatus(1) to turn failed (the death noticed without a message).
void runWatch(const PeerEnv& env, PeerGroup& g) {
  const int peer = 1 - env.rank;
  check(g.watch(peer), "watch");
  const Status before = g.peerStatus(peer);
  say("READY");
  if (env.rank == 1) {
    (void)env.worker->waitUntil([] { return false; }, 60000);
    fail("not killed");
  }
  Status st = env.worker->waitUntil([&] { return !g.peerStatus(peer).ok(); }, kWaitMs);
  const int64_t detected = monotonicMs();
  say("RESULT detect_ms=" + std::to_string(detected) + " wait=" + codeName(st.code()) +
      " before=" + codeName(before.code()) + " after=" + codeName(g.peerStatus(peer).code()) +
      " sent=" + std::to_string(g.counters().messages_sent));
}

// Every rank exchanges a message with every other (so each peer's lanes
// exist and carry data), then names the transports towards each peer:
// "to<peer>=lane,0:,sysv/memory,...;sentinel:,tcp/lo" (spaces as commas,
// lines as semicolons).
void runLocality(const PeerEnv& env, PeerGroup& g) {
  auto exchangeWithAll = [&](uint32_t tag) {
    for (int peer = 0; peer < env.size; ++peer) {
      if (peer == env.rank) continue;
      uint32_t mine = uint32_t(env.rank), theirs = ~0u;
      check(g.sendrecv(peer, &mine, sizeof mine, peer, &theirs, sizeof theirs, tag, kWaitMs),
            "locality exchange");
      if (theirs != uint32_t(peer)) fail("locality: wrong payload from " + std::to_string(peer));
    }
  };
  exchangeWithAll(900);
  std::string line = "RESULT";
  for (int peer = 0; peer < env.size; ++peer) {
    if (peer == env.rank) continue;
    std::string tl = g.describePeer(peer);
    for (char& c : tl) c = (c == ' ') ? ',' : (c == '\n' ? ';' : c);
    line += " to" + std::to_string(peer) + "=" + tl;
  }
  exchangeWithAll(901);  // nobody leaves before everyone has described its peers
  say(line);
}

// SWITCHAGG_TEST_NODE_OF="0,0,1": the node of each rank, for PeerGroup.
std::vector<int> nodeOfFromEnvironment() {
  std::vector<int> out;
  const char* text = std::getenv("SWITCHAGG_TEST_NODE_OF");
  if (text == nullptr) return out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

void runScenario(const PeerEnv& env) {
  if (env.scenario == "am") return runAm(env);
  if (env.scenario == "am-idle") return runAmIdle(env);
  auto addrs = exchange(env.worker->address(), env.size);
  auto group = ucx::PeerGroup::create(*env.worker, 7, env.rank, addrs, 0, nodeOfFromEnvironment());
  check(group.status(), "peer group");
  PeerGroup& g = **group;
  if (env.scenario == "messages") return runMessages(env, g);
  if (env.scenario == "admission") return runAdmission(env, g);
  if (env.scenario == "idle") return runIdle(env, g);
  if (env.scenario == "revoke") return runRevoke(env, g);
  if (env.scenario == "locality") return runLocality(env, g);
  if (env.scenario == "watch") return runWatch(env, g);
  fail("unknown scenario " + env.scenario);
}

}  // namespace switchagg::test
