// Listener / Endpoint::connect / active-message scenarios: rank 1 listens on
// 127.0.0.1 port 0 and publishes "127.0.0.1:<port>" as its address; rank 0
// connects by socket address.
#include <cstring>
#include <list>
#include <memory>
#include <thread>

#include "peer_scenarios.h"
#include "peer_util.h"

namespace switchagg::test {
using ucx::AmMessage;
using ucx::Endpoint;
using ucx::Listener;
using ucx::Request;

namespace {

constexpr int64_t kWaitMs = 30000;
constexpr uint16_t kAmData = 3, kAmEcho = 4, kAmBye = 5;
constexpr uint64_t kRawTag = 0x42;  // top 8 bits clear: outside PeerGroup's space
constexpr size_t kRawTagBytes = 5001;

struct AmHeader {
  uint64_t seed;
  uint64_t size;
};

struct Reply {
  AmHeader header{};
  std::vector<uint8_t> data;
  Request request;
};

std::vector<uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

void checkAm(const AmMessage& m, const char* what) {
  if (m.header_length != sizeof(AmHeader)) fail(std::string(what) + ": bad header length");
  AmHeader h;
  std::memcpy(&h, m.header, sizeof(h));
  if (m.length != h.size)
    fail(std::string(what) + ": length " + std::to_string(m.length) + " != " +
         std::to_string(h.size));
  long bad = checkPattern(static_cast<const uint8_t*>(m.data), m.length, h.seed);
  if (bad >= 0) fail(std::string(what) + ": wrong byte at " + std::to_string(bad));
}

std::unique_ptr<Listener> startServer(const PeerEnv& env,
                                      std::vector<std::unique_ptr<Endpoint>>* accepted) {
  auto listener = Listener::listen(*env.worker, "127.0.0.1:0",
                                   [accepted](std::unique_ptr<Endpoint> ep) {
                                     accepted->push_back(std::move(ep));
                                   });
  check(listener.status(), "listen");
  exchange(bytesOf("127.0.0.1:" + std::to_string((*listener)->port())), env.size);
  return std::move(listener.value());
}

std::unique_ptr<Endpoint> connectClient(const PeerEnv& env) {
  auto addrs = exchange({}, env.size);
  std::string target(addrs[1].begin(), addrs[1].end());
  auto ep = Endpoint::connect(*env.worker, target);
  check(ep.status(), "connect " + target);
  return std::move(ep.value());
}

void serveEcho(const PeerEnv& env) {
  std::vector<std::unique_ptr<Endpoint>> accepted;
  std::list<Reply> replies;
  bool bye = false;
  auto listener = startServer(env, &accepted);
  check(env.worker->setAmHandler(kAmData, [&](const AmMessage& m) {
    checkAm(m, "server");
    if (m.from == nullptr) fail("server: message without its endpoint");
    Reply& r = replies.emplace_back();
    std::memcpy(&r.header, m.header, sizeof(r.header));
    const auto* p = static_cast<const uint8_t*>(m.data);
    r.data.assign(p, p + m.length);
    check(m.from->amSend(kAmEcho, &r.header, sizeof(r.header), r.data.data(), r.data.size(),
                         r.request),
          "echo send");
  }), "am handler");
  check(env.worker->setAmHandler(kAmBye, [&](const AmMessage&) { bye = true; }), "bye handler");
  check(env.worker->waitUntil([&] { return bye; }, 2 * kWaitMs), "wait for bye");
  // The raw tag path on a listener endpoint: the client sent it before bye.
  std::vector<uint8_t> tagged(8192);
  Request tr;
  check(env.worker->tagRecv(kRawTag, ~0ull, tagged.data(), tagged.size(), tr), "tagRecv");
  check(env.worker->wait(tr, kWaitMs), "raw tagged message");
  if (tr.length() != kRawTagBytes || checkPattern(tagged.data(), kRawTagBytes, kRawTag) >= 0)
    fail("raw tagged message corrupt");
  for (auto& r : replies)
    if (!r.request.done() || !r.request.status().ok()) fail("an echo did not complete");
  say("RESULT echoed=" + std::to_string(replies.size()) +
      " accepted=" + std::to_string(accepted.size()));
}

void clientEcho(const PeerEnv& env) {
  auto ep = connectClient(env);
  const std::vector<size_t> sizes = {0, 1, 7, 4095, 65536, 100003, (1 << 20) + 13, 64u << 20};
  size_t echoes = 0;
  check(env.worker->setAmHandler(kAmEcho, [&](const AmMessage& m) {
    checkAm(m, "client");
    ++echoes;
  }), "echo handler");
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<uint8_t> buf(sizes[i]);
    fillPattern(buf, 100 + i);
    AmHeader h{100 + i, sizes[i]};
    Request r;
    check(ep->amSend(kAmData, &h, sizeof(h), buf.data(), buf.size(), r), "am send");
    check(env.worker->waitUntil([&] { return r.done() && echoes == i + 1; }, kWaitMs),
          "echo of " + std::to_string(sizes[i]) + " bytes");
    check(r.status(), "am send completion");
  }
  std::vector<uint8_t> tagged(kRawTagBytes);
  fillPattern(tagged, kRawTag);
  Request tr;
  check(ep->tagSend(kRawTag, tagged.data(), tagged.size(), tr), "tagSend");
  check(env.worker->wait(tr, kWaitMs), "tagSend completion");
  Request bye;
  check(ep->amSend(kAmBye, nullptr, 0, nullptr, 0, bye), "bye");
  check(env.worker->wait(bye, kWaitMs), "bye completion");
  say("RESULT echoes=" + std::to_string(echoes));
}

}  // namespace

void runAm(const PeerEnv& env) {
  if (env.rank == 1) return serveEcho(env);
  clientEcho(env);
}

// rank 1 accepts one hello and goes quiet; rank 0 reports when the
// failure handler fires after the coordinator kills rank 1. First, a connect
// to a port nobody listens on must fail within the bound too.
void runAmIdle(const PeerEnv& env) {
  if (env.rank == 1) {
    std::vector<std::unique_ptr<Endpoint>> accepted;
    bool hello = false;
    auto listener = startServer(env, &accepted);
    check(env.worker->setAmHandler(kAmData, [&](const AmMessage&) { hello = true; }), "handler");
    check(env.worker->waitUntil([&] { return hello; }, kWaitMs), "hello");
    say("READY");
    std::this_thread::sleep_for(std::chrono::seconds(60));
    fail("not killed");
  }
  const int64_t timeout = env.worker->context().options().peer_timeout_ms;
  auto nobody = Endpoint::connect(*env.worker, "127.0.0.1:1");
  int64_t t0 = monotonicMs();
  bool refused = !nobody.ok();
  if (!refused)
    refused = env.worker->waitUntil([&] { return (*nobody)->failed(); }, 3 * timeout).ok();
  const int64_t refused_ms = monotonicMs() - t0;

  auto ep = connectClient(env);
  int64_t detected = -1;
  env.worker->setFailureHandler([&](Endpoint* e, const Status& st) {
    if (e == ep.get() && st.code() == Code::kPeerFailed) detected = monotonicMs();
  });
  AmHeader h{0, 0};
  Request r;
  check(ep->amSend(kAmData, &h, sizeof(h), nullptr, 0, r), "hello");
  check(env.worker->wait(r, kWaitMs), "hello completion");
  say("READY");
  Status st = env.worker->waitUntil([&] { return detected >= 0; }, kWaitMs);
  Request again;
  Status send_again = ep->amSend(kAmData, &h, sizeof(h), nullptr, 0, again);
  say("RESULT detect_ms=" + std::to_string(detected) + " wait=" + codeName(st.code()) +
      " failed=" + std::to_string(ep->failed()) + " again=" + codeName(send_again.code()) +
      " refused=" + std::to_string(refused) + " refused_ms=" + std::to_string(refused_ms));
}

}  // namespace switchagg::test
