// Endpoint::amSend with a SendCompletion (label ucx, one process, real UCX:
// a listener's worker and a client's worker progressed in turn). The agent's
// data plane counts a slot's RESULT sends down by it (docs/agent-protocol.md
// "Reduced as it arrives", case 3), so: it runs once per started send, only
// from a progress round (never inside amSend), with the send's id; a send
// that did not start (an error return) never runs it; a Request destroyed
// while its send is in flight never runs it.
// AmPlacer (the agent receives rendezvous contributions into its slots,
// docs/agent-protocol.md "Received into the slot"): a rendezvous message
// lands where the placer said, in memory mapped with ucp_mem_map, and is
// delivered with its cookie; one whose receive fails is released, never
// delivered; eager ones are not placed.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

constexpr uint16_t kAm = 7;

struct Done {
  int calls = 0;
  uint64_t id = 0;
  bool ok = false;
};

void onDone(void* ctx, uint64_t id, const Status& status, size_t /*length*/) {
  auto* d = static_cast<Done*>(ctx);
  ++d->calls;
  d->id = id;
  d->ok = status.ok();
}

// A listener and a client connected to it, each on its own context.
struct Pair {
  std::unique_ptr<Context> server_ctx, client_ctx;
  std::unique_ptr<Worker> server, client;
  std::unique_ptr<Listener> listener;
  std::vector<std::unique_ptr<Endpoint>> accepted;
  std::unique_ptr<Endpoint> ep;  // client -> server
  size_t received = 0;           // messages the server got

  ~Pair() {  // forced closes: nobody progresses the other side any more
    if (ep) ep->abandon();
    for (auto& a : accepted) a->abandon();
  }

  void start() {
    auto opts = TransportOptions::fromEnvironment();
    ASSERT_TRUE(opts.ok());
    opts->enable_tag = false;
    for (auto* c : {&server_ctx, &client_ctx}) {
      auto ctx = Context::create(*opts);
      ASSERT_TRUE(ctx.ok()) << ctx.status().toString();
      *c = std::move(ctx.value());
    }
    auto s = Worker::create(*server_ctx);
    auto c = Worker::create(*client_ctx);
    ASSERT_TRUE(s.ok() && c.ok());
    server = std::move(s.value());
    client = std::move(c.value());
    ASSERT_TRUE(server->setAmHandler(kAm, [this](const AmMessage&) { ++received; }).ok());
    auto l = Listener::listen(*server, "127.0.0.1:0",
                              [this](std::unique_ptr<Endpoint> e) { accepted.push_back(std::move(e)); });
    ASSERT_TRUE(l.ok()) << l.status().toString();
    listener = std::move(l.value());
    auto e = Endpoint::connect(*client, "127.0.0.1:" + std::to_string(listener->port()));
    ASSERT_TRUE(e.ok()) << e.status().toString();
    ep = std::move(e.value());
    // The server takes the connection before a test goes on: UCX 1.13 runs
    // a connection request on its async thread, and one still pending when
    // the listener goes away crashes there (seen under ASan).
    ASSERT_TRUE(progressUntil([this] { return !accepted.empty(); }));
  }

  // Progresses both until `pred` holds (false after 10 s).
  template <typename Pred>
  bool progressUntil(Pred pred) {
    for (int i = 0; i < 10000000; ++i) {
      (void)client->progress();
      (void)server->progress();
      if (pred()) return true;
    }
    return false;
  }
};

TEST(AmCompletion, RunsOnceFromAProgressRoundWithItsId) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  const uint64_t header = 1;
  std::vector<uint8_t> small(64, 1), large(4 << 20, 2);
  for (const auto* body : {&small, &large}) {
    Done done;
    Request req;
    const size_t before = p.received;
    ASSERT_TRUE(p.ep->amSend(kAm, &header, sizeof header, body->data(), body->size(), req,
                             SendCompletion{&onDone, &done, 41})
                    .ok());
    EXPECT_EQ(done.calls, 0) << "ran inside amSend";
    ASSERT_TRUE(p.progressUntil([&] { return done.calls > 0 && p.received > before; }));
    EXPECT_EQ(done.id, 41u);
    EXPECT_TRUE(done.ok);
    for (int i = 0; i < 1000; ++i) {
      (void)p.client->progress();
      (void)p.server->progress();
    }
    EXPECT_EQ(done.calls, 1) << body->size() << " bytes";
  }
}

TEST(AmCompletion, ASendThatDidNotStartNeverRunsIt) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  p.ep->abandon();  // the endpoint counts as failed: amSend refuses
  Done done;
  Request req;
  const uint64_t header = 1;
  EXPECT_FALSE(p.ep->amSend(kAm, &header, sizeof header, nullptr, 0, req,
                            SendCompletion{&onDone, &done, 1})
                   .ok());
  for (int i = 0; i < 1000; ++i) (void)p.client->progress();
  EXPECT_EQ(done.calls, 0);
}

TEST(AmCompletion, ARequestDestroyedInFlightNeverRunsIt) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  Done done;
  const uint64_t header = 1;
  std::vector<uint8_t> large(8 << 20, 3);
  {
    Request req;
    ASSERT_TRUE(p.ep->amSend(kAm, &header, sizeof header, large.data(), large.size(), req,
                             SendCompletion{&onDone, &done, 2})
                    .ok());
  }  // destroyed before any progress
  ASSERT_TRUE(p.progressUntil([&] { return p.received > 0; }));
  for (int i = 0; i < 1000; ++i) {
    (void)p.client->progress();
    (void)p.server->progress();
  }
  EXPECT_EQ(done.calls, 0);
}


struct Placed {
  std::vector<uint8_t> memory;
  int placed = 0, released = 0, delivered = 0;
  uint64_t cookie = 0;
  const void* data = nullptr;
  size_t length = 0;
};

void setPlacer(Pair& p, Placed& pl) {
  ASSERT_TRUE(p.server
                  ->setAmHandler(kAm,
                                 [&](const AmMessage& m) {
                                   ++p.received;
                                   ++pl.delivered;
                                   pl.cookie = m.placed;
                                   pl.data = m.data;
                                   pl.length = m.length;
                                 })
                  .ok());
  ASSERT_TRUE(p.server
                  ->setAmPlacer(kAm, AmPlacer{1024,
                                              [&](Endpoint*, const void*, size_t, size_t n) {
                                                ++pl.placed;
                                                return n <= pl.memory.size()
                                                           ? AmPlacement{pl.memory.data(), 77}
                                                           : AmPlacement{};
                                              },
                                              [&](uint64_t c) {
                                                EXPECT_EQ(c, 77u);
                                                ++pl.released;
                                              }})
                  .ok());
}

TEST(AmPlacer, ARendezvousMessageLandsInMappedMemoryWhereThePlacerSaid) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  Placed pl;
  pl.memory.assign(4 << 20, 0);
  auto map = p.server->mapMemory(pl.memory.data(), pl.memory.size());
  ASSERT_TRUE(map.ok()) << map.status().toString();  // ucp_mem_map, even over TCP
  ASSERT_NO_FATAL_FAILURE(setPlacer(p, pl));
  const uint64_t header = 1;
  std::vector<uint8_t> large(4 << 20), small(64, 9);
  for (size_t i = 0; i < large.size(); ++i) large[i] = uint8_t(i * 7 + 1);
  Request r1, r2;
  ASSERT_TRUE(p.ep->amSend(kAm, &header, sizeof header, large.data(), large.size(), r1).ok());
  ASSERT_TRUE(p.progressUntil([&] { return pl.delivered == 1 && r1.done(); }));
  EXPECT_EQ(pl.placed, 1);
  EXPECT_EQ(pl.cookie, 77u);
  EXPECT_EQ(pl.data, pl.memory.data());
  EXPECT_EQ(pl.length, large.size());
  EXPECT_EQ(std::memcmp(pl.memory.data(), large.data(), large.size()), 0);
  ASSERT_TRUE(p.ep->amSend(kAm, &header, sizeof header, small.data(), small.size(), r2).ok());
  ASSERT_TRUE(p.progressUntil([&] { return pl.delivered == 2 && r2.done(); }));
  EXPECT_EQ(pl.placed, 1) << "an eager message asked the placer";
  EXPECT_EQ(pl.cookie, 0u);
  EXPECT_EQ(pl.released, 0);
}

// The sender goes away mid-transfer (its endpoint closed by force, its
// worker destroyed): the receive into the placed memory fails, the placer's
// release runs once, the message is never delivered.
TEST(AmPlacer, AFailedReceiveIsReleasedNotDelivered) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.start());
  Placed pl;
  pl.memory.assign(64 << 20, 0);
  ASSERT_NO_FATAL_FAILURE(setPlacer(p, pl));
  const uint64_t header = 1;
  std::vector<uint8_t> huge(64 << 20, 5);
  {
    Request req;
    ASSERT_TRUE(p.ep->amSend(kAm, &header, sizeof header, huge.data(), huge.size(), req).ok());
    ASSERT_TRUE(p.progressUntil([&] { return pl.placed == 1; }));
    p.ep->abandon();
    p.ep.reset();
    // The forced close ends the send on the sender's worker; were the
    // worker destroyed first, UCX would never complete it and its state
    // would leak (LeakSanitizer said so).
    for (int i = 0; i < 2000000 && !req.done(); ++i) (void)p.client->progress();
    ASSERT_TRUE(req.done()) << "the forced close never ended the send";
  }
  p.client.reset();  // the sender is gone
  bool ended = false;
  for (int i = 0; i < 2000000 && !ended; ++i) {
    (void)p.server->progress();
    ended = pl.released + pl.delivered > 0;
  }
  ASSERT_TRUE(ended) << "the receive into the placed memory never ended";
  EXPECT_EQ(pl.released, 1);
  EXPECT_EQ(pl.delivered, 0);
}

}  // namespace
}  // namespace switchagg::ucx
