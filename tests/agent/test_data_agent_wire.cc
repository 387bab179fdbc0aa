// Hostile and broken clients against the real agent, speaking the wire
// protocol by hand over UCX: malformed messages, unknown groups, duplicate
// contributions and count mismatches are rejected and counted by reason,
// the offending group is aborted with a reason, and nothing else moves.
#include <cstring>

#include "switchagg/agent/data_client.h"
#include "switchagg/agent/wire.h"
#include "switchagg/ucx/transport.h"
#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

using agent::wire::Message;
using agent::wire::MsgType;
using agent::wire::Reason;
namespace wire = agent::wire;

// A client that sends whatever it is told and records what comes back.
class RawClient {
 public:
  static std::unique_ptr<RawClient> connect(const std::string& address) {
    auto c = std::unique_ptr<RawClient>(new RawClient());
    auto opts = ucx::TransportOptions::fromEnvironment();
    if (!opts.ok()) return nullptr;
    opts->enable_tag = false;
    auto ctx = ucx::Context::create(*opts);
    if (!ctx.ok()) return nullptr;
    c->ctx_ = std::move(ctx.value());
    auto w = ucx::Worker::create(*c->ctx_);
    if (!w.ok()) return nullptr;
    c->worker_ = std::move(w.value());
    RawClient* raw = c.get();
    if (!c->worker_
             ->setAmHandler(wire::kAmToClient,
                            [raw](const ucx::AmMessage& m) {
                              Message msg;
                              if (wire::decode(m.header, m.header_length, m.data, m.length, &msg) ==
                                  Reason::kNone)
                                raw->got_.push_back(msg);
                            })
             .ok())
      return nullptr;
    auto ep = ucx::Endpoint::connect(*c->worker_, address);
    if (!ep.ok()) return nullptr;
    c->ep_ = std::move(ep.value());
    return c;
  }

  void sendRaw(const void* header, size_t hlen, const void* body, size_t blen) {
    ucx::Request r;
    ASSERT_TRUE(ep_->amSend(wire::kAmToAgent, header, hlen, body, blen, r).ok());
    ASSERT_TRUE(worker_->wait(r, 5000).ok());
  }
  void send(const Message& m, const void* payload = nullptr, size_t bytes = 0) {
    const wire::Frame f = wire::encode(m);
    sendRaw(f.header.data(), f.header_bytes, payload ? payload : f.body.data(),
            payload ? bytes : f.body.size());
  }
  // Waits for a message of `type`; returns it (type kHello if none came).
  Message expect(MsgType type, int64_t timeout_ms = 10000) {
    Message found;
    (void)worker_->waitUntil(
        [&] {
          for (size_t i = 0; i < got_.size(); ++i)
            if (got_[i].type == type) {
              found = got_[i];
              got_.erase(got_.begin() + static_cast<long>(i));
              return true;
            }
          return false;
        },
        timeout_ms);
    return found;
  }

 private:
  std::unique_ptr<ucx::Context> ctx_;
  std::unique_ptr<ucx::Worker> worker_;
  std::unique_ptr<ucx::Endpoint> ep_;
  std::vector<Message> got_;
};

class DataAgentWire : public DataAgentTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(startAgent());
    std::optional<agent::LeaseToken> token = agent::LeaseToken::fromHex(createLease("wire", 2));
    ASSERT_TRUE(token);
    token_ = *token;
    for (int i = 0; i < 2; ++i) {
      members_.push_back(RawClient::connect(agent_->dataAddress()));
      ASSERT_NE(members_.back(), nullptr);
    }
  }
  void joinBoth(uint64_t gid) {
    for (uint32_t r = 0; r < 2; ++r) {
      Message j;
      j.type = MsgType::kJoin;
      j.token = token_;
      j.group_id = gid;
      j.size = 2;
      j.rank = r;
      members_[r]->send(j);
    }
    for (auto& m : members_) ASSERT_EQ(m->expect(MsgType::kJoinAck).window, 2u);
  }
  void contrib(int member, uint64_t gid, uint32_t rank, uint64_t chunk, std::vector<int32_t> v) {
    Message m;
    m.type = MsgType::kContrib;
    m.token = token_;
    m.group_id = gid;
    m.rank = rank;
    m.chunk = chunk;
    m.slot = static_cast<uint32_t>(chunk % 2);
    m.dtype = Dtype::kInt32;
    m.op = Op::kSum;
    m.count = static_cast<uint32_t>(v.size());
    m.call_elems = 100;
    members_[member]->send(m, v.data(), v.size() * sizeof(int32_t));
  }
  int64_t rejected(const std::string& reason) {
    return waitStatus([&](const nlohmann::json& s) { return s["rejected"].value(reason, 0) > 0; },
                      5000)["rejected"]
        .value(reason, 0);
  }

  wire::Token token_{};
  std::vector<std::unique_ptr<RawClient>> members_;
};

TEST_F(DataAgentWire, DuplicateContributionAbortsTheGroupAndIsCounted) {
  joinBoth(1);
  contrib(0, 1, 0, 0, {1, 2});
  contrib(0, 1, 0, 0, {1, 2});
  for (auto& m : members_)
    EXPECT_EQ(m->expect(MsgType::kAbort).reason, Reason::kDuplicateContribution);
  EXPECT_EQ(rejected("duplicate_contribution"), 1);
}

TEST_F(DataAgentWire, CountMismatchAbortsTheGroupAndIsCounted) {
  joinBoth(2);
  contrib(0, 2, 0, 0, {1, 2});
  contrib(1, 2, 1, 0, {1, 2, 3});
  for (auto& m : members_) EXPECT_EQ(m->expect(MsgType::kAbort).reason, Reason::kCountMismatch);
  EXPECT_EQ(rejected("count_mismatch"), 1);
}

TEST_F(DataAgentWire, GarbageAndStrangersGetErrorsAndTheGroupLivesOn) {
  joinBoth(3);
  const uint8_t junk[64] = {0x53, 0x41, 0x47, 0x57, 9, 9};
  members_[0]->sendRaw(junk, sizeof junk, nullptr, 0);
  EXPECT_EQ(members_[0]->expect(MsgType::kError).reason, Reason::kVersion);
  members_[0]->sendRaw(junk, 7, nullptr, 0);
  EXPECT_EQ(members_[0]->expect(MsgType::kError).reason, Reason::kMalformed);
  contrib(0, 99, 0, 0, {1});  // no such group in this lease
  EXPECT_EQ(members_[0]->expect(MsgType::kError).reason, Reason::kUnknownGroup);
  // A stranger with a made-up token cannot touch group 3.
  auto stranger = RawClient::connect(agent_->dataAddress());
  ASSERT_NE(stranger, nullptr);
  Message m;
  m.type = MsgType::kContrib;
  m.group_id = 3;
  m.token[0] = 1;
  m.count = 1;
  m.call_elems = 100;
  int32_t v = 1000;
  stranger->send(m, &v, sizeof v);
  EXPECT_EQ(stranger->expect(MsgType::kError).reason, Reason::kBadToken);
  // Group 3 still reduces right.
  contrib(0, 3, 0, 0, {1, 2});
  contrib(1, 3, 1, 0, {10, 20});
  for (auto& mem : members_) {
    const Message r = mem->expect(MsgType::kResult);
    ASSERT_EQ(r.type, MsgType::kResult);
    ASSERT_EQ(r.count, 2u);
  }
  EXPECT_EQ(rejected("bad_token"), 1);
  EXPECT_EQ(rejected("unknown_group"), 1);
  EXPECT_EQ(rejected("malformed"), 1);
  EXPECT_EQ(rejected("version"), 1);
  EXPECT_EQ(status()["counters"]["groups_aborted"], 0);
}

}  // namespace
}  // namespace switchagg::testing
