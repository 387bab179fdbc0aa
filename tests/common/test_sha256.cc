// SHA-256 (common/src/sha256.cc) against FIPS 180-4's examples (the one-
// and two-block messages of the NIST example document, and the long
// messages of its test set) and around the padding's block boundary.
#include <gtest/gtest.h>

#include <string>

#include "switchagg/common/sha256.h"

namespace {

using switchagg::sha256;
using switchagg::sha256Hex;

TEST(Sha256, FipsOneBlockMessage) {
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FipsTwoBlockMessage) {
  // 448 bits: the length no longer fits the first block.
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 896 bits.
  EXPECT_EQ(sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklm"
                      "nopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, EmptyAndAMillionAs) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// 55 bytes is the longest message padded into one block, 56 the shortest
// that needs two; 63/64/65 and 119/120 straddle the next boundaries.
// Expected digests from Python's hashlib.
TEST(Sha256, AroundThePaddingBoundaries) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
      {65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
      {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
      {120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"},
  };
  for (const auto& [n, hex] : cases) EXPECT_EQ(sha256Hex(std::string(n, 'x')), hex) << n << " bytes";
}

TEST(Sha256, DigestBytesAreTheHexInOrder) {
  const switchagg::Sha256Digest d = sha256("abc");
  EXPECT_EQ(d[0], 0xba);
  EXPECT_EQ(d[1], 0x78);
  EXPECT_EQ(d[31], 0xad);
}

}  // namespace
