// Wire codec: every message type round-trips, and the decoder rejects (with
// the right reason, never a crash) every truncation, extension, bad field
// and bit flip of valid messages.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "switchagg/agent/wire.h"

namespace switchagg::agent::wire {
namespace {

Token someToken() {
  Token t{};
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(0xa0 + i);
  return t;
}

// One valid message of every type, framed, with its payload where it has one.
std::vector<std::vector<uint8_t>> validFrames() {
  static const float payload[3] = {1.0f, 2.0f, 3.0f};
  std::vector<std::vector<uint8_t>> out;
  for (int t = 1; t <= kMaxMsgType; ++t) {
    Message m;
    m.type = static_cast<MsgType>(t);
    m.token = someToken();
    m.group_id = 0x1122334455667788ull;
    m.size = 4;
    m.rank = 2;
    m.window = 8;
    m.slot_bytes = 65536;
    m.caps.add(Dtype::kFloat32, Op::kSum);
    m.caps.add(Dtype::kInt64, Op::kMax);
    m.reason = Reason::kLeaseRevoked;
    m.text = "lease deleted";
    m.chunk = 17;
    m.slot = 1;
    m.dtype = Dtype::kFloat32;
    m.op = Op::kSum;
    m.count = 3;
    m.call_elems = 1000;
    m.capacity = Capacity{5100, 400, 73};
    if (m.type == MsgType::kResult) m.rank = 0;
    if (m.type == MsgType::kContribRouted) {
      m.mode = kModeReduce;
      m.dest_lo = 1;
      m.dest_hi = 3;
    }
    const bool chunk = carriesPayload(m.type);
    out.push_back(toFramed(encode(m), chunk ? payload : nullptr, chunk ? sizeof payload : 0));
  }
  return out;
}

TEST(DataWire, EveryTypeRoundTrips) {
  auto frames = validFrames();
  ASSERT_EQ(frames.size(), static_cast<size_t>(kMaxMsgType));
  for (size_t i = 0; i < frames.size(); ++i) {
    Message m;
    ASSERT_EQ(decodeFramed(frames[i].data(), frames[i].size(), &m), Reason::kNone)
        << "type " << i + 1;
    EXPECT_EQ(static_cast<size_t>(m.type), i + 1);
    EXPECT_EQ(m.token, someToken());
    EXPECT_EQ(m.group_id, 0x1122334455667788ull);
    switch (m.type) {
      case MsgType::kJoin:
      case MsgType::kJoinAck:
        EXPECT_EQ(m.size, 4u);
        EXPECT_EQ(m.rank, 2u);
        EXPECT_EQ(m.window, 8u);
        break;
      case MsgType::kHelloAck:
        EXPECT_EQ(m.window, 8u);
        EXPECT_EQ(m.slot_bytes, 65536u);
        EXPECT_TRUE(m.caps.supports(Dtype::kInt64, Op::kMax));
        EXPECT_FALSE(m.caps.supports(Dtype::kInt64, Op::kSum));
        break;
      case MsgType::kContrib:
      case MsgType::kResult:
      case MsgType::kContribRouted: {
        if (m.type == MsgType::kContribRouted) {
          EXPECT_EQ(m.mode, kModeReduce);
          EXPECT_EQ(m.dest_lo, 1u);
          EXPECT_EQ(m.dest_hi, 3u);
        }
        EXPECT_EQ(m.chunk, 17u);
        EXPECT_EQ(m.slot, 1u);
        EXPECT_EQ(m.count, 3u);
        EXPECT_EQ(m.call_elems, 1000u);
        ASSERT_EQ(m.payload_bytes, 12u);
        float v[3];
        std::memcpy(v, m.payload, sizeof v);
        EXPECT_EQ(v[2], 3.0f);
        break;
      }
      case MsgType::kAbort:
      case MsgType::kError:
        EXPECT_EQ(m.reason, Reason::kLeaseRevoked);
        EXPECT_EQ(m.text, "lease deleted");
        break;
      case MsgType::kWaiting:
        EXPECT_EQ(m.chunk, 17u);
        EXPECT_EQ(m.count, 3u);
        EXPECT_EQ(m.rank, 2u);
        break;
      case MsgType::kCapacityAck:
        EXPECT_EQ(m.capacity.reduce_mbps, 5100u);
        EXPECT_EQ(m.capacity.link_mbps, 400u);
        EXPECT_EQ(m.capacity.turnaround_us, 73u);
        break;
      default:
        break;
    }
  }
}

TEST(DataWire, EveryTruncationAndExtensionIsRejected) {
  for (const auto& f : validFrames()) {
    const size_t hlen = f[0] | (f[1] << 8);
    for (size_t cut = 0; cut < f.size(); ++cut) {
      // Shorter header with the same body, and shorter total.
      std::vector<uint8_t> g(f.begin(), f.begin() + static_cast<long>(cut));
      Message m;
      if (cut >= 2 + hlen) {
        // The header is whole: only a body that still matches may decode
        // (capability/text bodies of another valid length cannot occur here).
        const Reason r = decodeFramed(g.data(), g.size(), &m);
        if (r == Reason::kNone) {
          EXPECT_EQ(m.payload_bytes, m.count * dtypeSize(m.dtype));
        }
        continue;
      }
      EXPECT_NE(decodeFramed(g.data(), g.size(), &m), Reason::kNone) << "cut " << cut;
    }
    // A header cut short (and framed as such) never decodes.
    for (size_t k = 0; k < hlen; ++k) {
      Message m;
      EXPECT_NE(decode(f.data() + 2, k, f.data() + 2 + hlen, f.size() - 2 - hlen, &m),
                Reason::kNone);
    }
    // One byte more: no body, wrong count, wrong table length, or a NUL in text.
    std::vector<uint8_t> longer = f;
    longer.push_back(0);
    Message m;
    EXPECT_NE(decodeFramed(longer.data(), longer.size(), &m), Reason::kNone)
        << "type " << int(f[7]);
  }
}

// Decodes a CONTRIB with one header byte changed (and `clear` more zeroed).
Reason contribWith(size_t offset, uint8_t value, size_t clear = 0) {
  auto f = validFrames()[static_cast<size_t>(MsgType::kContrib) - 1];
  for (size_t i = 1; i <= clear; ++i) f[2 + offset + i] = 0;
  f[2 + offset] = value;
  Message m;
  return decodeFramed(f.data(), f.size(), &m);
}

TEST(DataWire, BadFieldsAreRejectedWithTheirReason) {
  EXPECT_EQ(contribWith(0, 0), Reason::kMalformed);      // magic
  EXPECT_EQ(contribWith(4, 2), Reason::kVersion);        // version
  EXPECT_EQ(contribWith(5, 0), Reason::kBadType);        // type 0
  EXPECT_EQ(contribWith(5, kMaxMsgType + 1), Reason::kBadType);  // type out of range
  EXPECT_EQ(contribWith(6, 1), Reason::kMalformed);      // reserved
  EXPECT_EQ(contribWith(56, 0), Reason::kBadDtypeOp);    // dtype 0
  EXPECT_EQ(contribWith(56, 200), Reason::kBadDtypeOp);  // dtype unknown
  EXPECT_EQ(contribWith(57, 13), Reason::kBadDtypeOp);   // op unknown
  EXPECT_EQ(contribWith(57, static_cast<uint8_t>(Op::kBand)), Reason::kBadDtypeOp);  // float band
  EXPECT_EQ(contribWith(58, 1), Reason::kMalformed);                                 // reserved
  EXPECT_EQ(contribWith(60, 4), Reason::kMalformed);     // count 4, body holds 3
  EXPECT_EQ(contribWith(60, 0), Reason::kMalformed);     // count 0
  EXPECT_EQ(contribWith(63, 0x10), Reason::kOversize);   // count * 4 > 64 MiB
  EXPECT_EQ(contribWith(48, 2, 7), Reason::kMalformed);  // call_elems 2 < count 3
  EXPECT_EQ(contribWith(40, 0), Reason::kNone);          // chunk: the engine's business
  EXPECT_EQ(contribWith(36, 9), Reason::kNone);          // slot: the engine's business
}

TEST(DataWire, AnUnknownTypeStillYieldsItsTokenForTheErrorReply) {
  auto f = validFrames()[static_cast<size_t>(MsgType::kCapacity) - 1];
  f[2 + 5] = kMaxMsgType + 1;  // a type from a newer peer
  Message m;
  ASSERT_EQ(decodeFramed(f.data(), f.size(), &m), Reason::kBadType);
  EXPECT_EQ(m.token, someToken());
  EXPECT_EQ(m.group_id, 0x1122334455667788ull);
}

TEST(DataWire, CapacityReservedFieldsMustBeZero) {
  for (MsgType t : {MsgType::kCapacity, MsgType::kCapacityAck}) {
    auto f = validFrames()[static_cast<size_t>(t) - 1];
    const size_t hlen = f[0] | (f[1] << 8);
    f[2 + hlen - 1] = 1;  // the last header byte is reserved in both
    Message m;
    EXPECT_EQ(decodeFramed(f.data(), f.size(), &m), Reason::kMalformed) << int(t);
  }
}

// WAITING names at least one missing member of a group the protocol
// allows, and carries no body.
TEST(DataWire, WaitingFieldsAreChecked) {
  auto waiting = [](uint32_t count, uint32_t rank, bool body) {
    Message m;
    m.type = MsgType::kWaiting;
    m.token = someToken();
    m.group_id = 3;
    m.chunk = 9;
    m.count = count;
    m.rank = rank;
    const uint8_t extra = 1;
    auto f = toFramed(encode(m), body ? &extra : nullptr, body ? 1 : 0);
    Message out;
    return decodeFramed(f.data(), f.size(), &out);
  };
  EXPECT_EQ(waiting(1, 0, false), Reason::kNone);
  EXPECT_EQ(waiting(kMaxGroupSize, kMaxGroupSize - 1, false), Reason::kNone);
  EXPECT_EQ(waiting(0, 0, false), Reason::kMalformed);
  EXPECT_EQ(waiting(kMaxGroupSize + 1, 0, false), Reason::kMalformed);
  EXPECT_EQ(waiting(1, kMaxGroupSize, false), Reason::kMalformed);
  EXPECT_EQ(waiting(1, 0, true), Reason::kMalformed);
}

TEST(DataWire, JoinFieldsAreChecked) {
  Message m;
  m.type = MsgType::kJoin;
  m.size = 4;
  m.rank = 4;
  auto f = toFramed(encode(m));
  Message out;
  EXPECT_EQ(decodeFramed(f.data(), f.size(), &out), Reason::kRankOutOfRange);
  m.rank = 0;
  m.size = 0;
  f = toFramed(encode(m));
  EXPECT_EQ(decodeFramed(f.data(), f.size(), &out), Reason::kMalformed);
  m.size = kMaxGroupSize + 1;
  f = toFramed(encode(m));
  EXPECT_EQ(decodeFramed(f.data(), f.size(), &out), Reason::kMalformed);
  m.size = 2;
  f = toFramed(encode(m));
  f.push_back(1);  // JOIN carries no body
  EXPECT_EQ(decodeFramed(f.data(), f.size(), &out), Reason::kMalformed);
}

TEST(DataWire, CapabilityTablesAndTextAreValidated) {
  Message m;
  m.type = MsgType::kHelloAck;
  m.window = 4;
  m.slot_bytes = 4096;
  m.caps.add(Dtype::kInt32, Op::kSum);
  Frame f = encode(m);
  Message out;
  auto check = [&](std::vector<uint8_t> body) {
    return decode(f.header.data(), f.header_bytes, body.data(), body.size(), &out);
  };
  EXPECT_EQ(check(f.body), Reason::kNone);
  EXPECT_EQ(check({}), Reason::kMalformed);
  EXPECT_EQ(check({2, 5, 0, 2, 0}), Reason::kMalformed);              // says 2 entries, has 1
  EXPECT_EQ(check({2, 5, 0, 2, 0, 5, 0, 2, 0}), Reason::kMalformed);  // duplicate dtype
  EXPECT_EQ(check({1, 99, 0, 2, 0}), Reason::kMalformed);             // bad dtype
  EXPECT_EQ(check({1, 5, 0, 1, 0}), Reason::kMalformed);              // op bit 0
  EXPECT_EQ(check({1, 5, 0, 0, 0x20}), Reason::kMalformed);           // op 13
  m = Message();
  m.type = MsgType::kAbort;
  m.reason = Reason::kShutdown;
  f = encode(m);
  EXPECT_EQ(check({'o', 'k'}), Reason::kNone);
  EXPECT_EQ(out.text, "ok");
  EXPECT_EQ(check({'o', '\n'}), Reason::kMalformed);
  EXPECT_EQ(check(std::vector<uint8_t>(kMaxTextBytes + 1, 'x')), Reason::kMalformed);
  f.header[32] = 0;  // reason 0
  EXPECT_EQ(check({}), Reason::kMalformed);
  f.header[32] = kMaxReason + 1;
  EXPECT_EQ(check({}), Reason::kMalformed);
}

// JOIN flags (the field was 0 before them) and the busy reason added to v1.
TEST(DataWire, JoinFlagsAndBusyReason) {
  Message m;
  m.type = MsgType::kJoin;
  m.size = 2;
  m.rank = 1;
  m.flags = kJoinFlagBusy;
  Frame f = encode(m);
  Message out;
  ASSERT_EQ(decode(f.header.data(), f.header_bytes, nullptr, 0, &out), Reason::kNone);
  EXPECT_EQ(out.flags, kJoinFlagBusy);
  m.flags = 0;
  f = encode(m);
  ASSERT_EQ(decode(f.header.data(), f.header_bytes, nullptr, 0, &out), Reason::kNone);
  EXPECT_EQ(out.flags, 0u);
  m.flags = kJoinFlagBusy | kJoinFlagRouted;
  f = encode(m);
  ASSERT_EQ(decode(f.header.data(), f.header_bytes, nullptr, 0, &out), Reason::kNone);
  EXPECT_EQ(out.flags, kJoinFlagBusy | kJoinFlagRouted);
  m.flags = 4;  // unknown flag
  f = encode(m);
  EXPECT_EQ(decode(f.header.data(), f.header_bytes, nullptr, 0, &out), Reason::kMalformed);
  m = Message();
  m.type = MsgType::kError;
  m.reason = Reason::kBusy;
  m.chunk = 42;
  f = encode(m);
  ASSERT_EQ(decode(f.header.data(), f.header_bytes, f.body.data(), f.body.size(), &out),
            Reason::kNone);
  EXPECT_EQ(out.reason, Reason::kBusy);
  EXPECT_EQ(out.chunk, 42u);
  EXPECT_STREQ(reasonName(Reason::kBusy), "busy");
}

TEST(DataWire, EncoderNeverEmitsUndecodableText) {
  Message m;
  m.type = MsgType::kError;
  m.reason = Reason::kMalformed;
  m.text = std::string("bad\x01\n") + std::string(2000, 'y');
  const auto f = toFramed(encode(m));
  Message out;
  ASSERT_EQ(decodeFramed(f.data(), f.size(), &out), Reason::kNone);
  EXPECT_EQ(out.text.size(), kMaxTextBytes);
  EXPECT_EQ(out.text.substr(0, 5), "bad??");
}

TEST(DataWire, EveryBitFlipOfEveryMessageDecodesSafely) {
  for (const auto& f : validFrames()) {
    for (size_t byte = 2; byte < f.size(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        auto g = f;
        g[byte] ^= static_cast<uint8_t>(1u << bit);
        Message m;
        if (decodeFramed(g.data(), g.size(), &m) != Reason::kNone) continue;
        if (m.type == MsgType::kContrib || m.type == MsgType::kResult) {
          EXPECT_EQ(m.payload_bytes, m.count * dtypeSize(m.dtype));
        }
        if (m.type == MsgType::kJoin) {
          EXPECT_LT(m.rank, m.size);
        }
      }
    }
  }
}

TEST(LeaseToken, HexRoundTripEitherCaseInLowercaseOut) {
  std::optional<LeaseToken> t = LeaseToken::fromHex("00112233445566778899aabbccddeeff");
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)[1], 0x11);
  EXPECT_EQ(t->hex(), "00112233445566778899aabbccddeeff");
  std::optional<LeaseToken> upper = LeaseToken::fromHex("00112233445566778899AABBCCDDEEFF");
  ASSERT_TRUE(upper);
  EXPECT_EQ(upper->hex(), "00112233445566778899aabbccddeeff");
  EXPECT_EQ(*upper, *t);
}

class LeaseTokenBadHex : public ::testing::TestWithParam<std::string> {};

TEST_P(LeaseTokenBadHex, IsRefused) { EXPECT_FALSE(LeaseToken::fromHex(GetParam())) << GetParam(); }

INSTANTIATE_TEST_SUITE_P(Wire, LeaseTokenBadHex,
                         ::testing::Values("", "00112233445566778899aabbccddeef",
                                           "00112233445566778899aabbccddeefg",
                                           "00112233445566778899aabbccddeeff0",
                                           " 0112233445566778899aabbccddeeff",
                                           "0x112233445566778899aabbccddeeff"));

TEST(LeaseToken, CompareAndHashIndexTheBytes) {
  LeaseToken t = *LeaseToken::fromHex("00112233445566778899aabbccddeeff");
  LeaseToken u = t;
  EXPECT_TRUE(t == u);
  u[15] ^= 1;
  EXPECT_FALSE(t == u);
  EXPECT_TRUE(t != u);
  EXPECT_FALSE(LeaseToken{} == t);
  std::unordered_map<LeaseToken, int> index{{t, 1}, {u, 2}};
  EXPECT_EQ(index.at(t), 1);
  EXPECT_EQ(index.at(u), 2);
  EXPECT_EQ(index.count(LeaseToken{}), 0u);
  Result<LeaseToken> a = LeaseToken::random(), b = LeaseToken::random();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(*a == *b);
}

}  // namespace
}  // namespace switchagg::agent::wire
