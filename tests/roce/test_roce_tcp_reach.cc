// End to end on this machine (no RDMA device): a transport key applied by
// applyProfile travels exactly the way the RoCE keys do on a RoCE host
// (ucp_config_modify cache -> ucp_init -> ucp_worker_create applies it to the
// transport's config -> the transport uses it). tcp's SNDBUF is observable:
// UCX sets SO_SNDBUF on its connections, and Linux reports twice the value.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <vector>

#include "switchagg/ucx/roce_profile.h"
#include "switchagg/ucx/ucp_config.h"

namespace switchagg::ucx {
namespace {

constexpr int kSndbuf = 48 * 1024;  // odd enough that Linux autotuning never lands on 2x

std::set<int> tcpSockets(bool connected_only) {
  std::set<int> fds;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return fds;
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    struct stat st {};
    if (fd <= 2 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int proto = 0, listening = 0;
    socklen_t len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) != 0 || proto != IPPROTO_TCP)
      continue;
    len = sizeof(int);
    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
    if (!connected_only || !listening) fds.insert(fd);
  }
  closedir(d);
  return fds;
}

int sndbuf(int fd) {
  int v = 0;
  socklen_t len = sizeof(v);
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len);
  return v;
}

// Brings up a tcp-only UCP context from `config`, connects two workers and
// moves one message, then returns SO_SNDBUF of every new TCP connection.
std::vector<int> connectionSndbufs(ucp_config_t* config) {
  const std::set<int> before = tcpSockets(false);
  EXPECT_EQ(ucp_config_modify(config, "TLS", "tcp"), UCS_OK);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h ctx = nullptr;
  if (ucp_init(&params, config, &ctx) != UCS_OK) return {};
  ucp_worker_params_t wp{};
  ucp_worker_h a = nullptr, b = nullptr;
  EXPECT_EQ(ucp_worker_create(ctx, &wp, &a), UCS_OK);
  EXPECT_EQ(ucp_worker_create(ctx, &wp, &b), UCS_OK);
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  EXPECT_EQ(ucp_worker_get_address(b, &addr, &addr_len), UCS_OK);
  ucp_ep_params_t ep_params{};
  ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  ep_params.address = addr;
  ucp_ep_h ep = nullptr;
  EXPECT_EQ(ucp_ep_create(a, &ep_params, &ep), UCS_OK);
  char out[64] = "x", in[64];
  ucp_request_param_t rp{};
  void* recv = ucp_tag_recv_nbx(b, in, sizeof(in), 7, ~0ull, &rp);
  void* send = ucp_tag_send_nbx(ep, out, sizeof(out), 7, &rp);
  auto pending = [](void* r) {
    return UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS;
  };
  for (int i = 0; i < 2000000 && (pending(send) || pending(recv)); ++i) {
    ucp_worker_progress(a);
    ucp_worker_progress(b);
  }
  EXPECT_FALSE(pending(send) || pending(recv)) << "tcp loopback message never completed";
  std::vector<int> bufs;
  for (int fd : tcpSockets(true))
    if (!before.count(fd)) bufs.push_back(sndbuf(fd));
  if (UCS_PTR_IS_PTR(send)) ucp_request_free(send);
  if (UCS_PTR_IS_PTR(recv)) ucp_request_free(recv);
  ucp_request_param_t close{};
  close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  close.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* closing = ucp_ep_close_nbx(ep, &close);
  for (int i = 0; i < 100000 && pending(closing); ++i) ucp_worker_progress(a);
  if (UCS_PTR_IS_PTR(closing)) ucp_request_free(closing);
  ucp_worker_release_address(b, addr);
  ucp_worker_destroy(a);
  ucp_worker_destroy(b);
  ucp_cleanup(ctx);
  return bufs;
}

class RoceTcpReach : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("UCX_TCP_SNDBUF");
    ASSERT_EQ(ucp_config_read(nullptr, nullptr, &config_), UCS_OK);
  }
  void TearDown() override {
    ucp_config_release(config_);
    unsetenv("UCX_TCP_SNDBUF");
  }
  static RoceProfile profileWith(const std::string& key, const std::string& value) {
    RoceProfile p;
    p.ucx_settings = {{key, value}};
    return p;
  }
  ucp_config_t* config_ = nullptr;
};

TEST_F(RoceTcpReach, AppliedTransportKeyReachesTheConnections) {
  RoceProfile p = profileWith("SNDBUF", std::to_string(kSndbuf));
  ASSERT_TRUE(applyProfile(config_, p).ok());
  ASSERT_EQ(p.applied, p.ucx_settings);
  auto eff = effectiveTransportConfig(config_, {"SNDBUF"});
  ASSERT_TRUE(eff.ok());
  bool predicted = false;
  for (const auto& e : *eff)
    if (e.name == "UCX_TCP_SNDBUF") predicted = e.value == "48K" && e.source == "profile SNDBUF";
  EXPECT_TRUE(predicted) << "effectiveTransportConfig does not show UCX_TCP_SNDBUF=48K";
  std::vector<int> bufs = connectionSndbufs(config_);
  ASSERT_FALSE(bufs.empty()) << "no TCP connection was made";
  for (int v : bufs) EXPECT_EQ(v, 2 * kSndbuf);
}

// The spelling with the table's prefix is what UCX 1.13 caches and never
// applies; applyProfile refuses it, and raw ucp_config_modify shows why.
TEST_F(RoceTcpReach, PrefixedKeyIsRefusedBecauseUcxWouldIgnoreIt) {
  RoceProfile p = profileWith("TCP_SNDBUF", std::to_string(kSndbuf));
  Status st = applyProfile(config_, p);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("TCP_SNDBUF"), std::string::npos) << st.message();
  ASSERT_EQ(ucp_config_modify(config_, "TCP_SNDBUF", std::to_string(kSndbuf).c_str()), UCS_OK);
  std::vector<int> bufs = connectionSndbufs(config_);
  ASSERT_FALSE(bufs.empty());
  for (int v : bufs) EXPECT_NE(v, 2 * kSndbuf);
}

// Cached keys beat the environment inside UCX, so the user's UCX_TCP_SNDBUF
// only wins because applyProfile leaves the key alone.
TEST_F(RoceTcpReach, UserVariableWinsEndToEnd) {
  setenv("UCX_TCP_SNDBUF", "40K", 1);
  RoceProfile p = profileWith("SNDBUF", std::to_string(kSndbuf));
  ASSERT_TRUE(applyProfile(config_, p).ok());
  ASSERT_EQ(p.left_to_user.size(), 1u);
  EXPECT_EQ(p.left_to_user[0], std::make_pair(std::string("TCP_SNDBUF"), std::string("40K")));
  // SNDBUF also reaches the tcp connection manager, and no other key
  // reaches it alone: it keeps UCX's value rather than override the user.
  EXPECT_TRUE(p.applied.empty());
  std::vector<int> bufs = connectionSndbufs(config_);
  ASSERT_FALSE(bufs.empty());
  for (int v : bufs) EXPECT_EQ(v, 2 * 40 * 1024);
}

}  // namespace
}  // namespace switchagg::ucx
