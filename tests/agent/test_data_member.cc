// test_data_member: one group member as a real process, for the data-plane
// multi-process tests. Connects to the agent, joins, runs `iters` allreduces
// of deterministic inputs and checks every result bit for bit against the
// rank-ordered reference.
//
//   test_data_member --agent H:P --token HEX --group ID --size N --rank R
//     [--dtype float32] [--op sum] [--count N] [--iters N] [--window W]
//     [--timeout MS] [--in-place] [--forever] [--pairs d1/o1,d2/o2,...]
//     [--routed reduce:ROOT|scatter|allgather|bcast:ROOT] [--delay MS] [--stall]
//     [--wait-limit MS]
//
// --routed runs routed calls (AggGroup::routed) instead of allreduces:
// reduce to ROOT, a reduce-scatter with uneven blocks (member r gets
// [r·count/size, (r+1)·count/size)), an allgather of `count` elements per
// member, or a bcast of ROOT's `count` elements; every wanted element is
// checked bit for bit, and a member wants nothing else written. Against an
// agent that predates routed calls it prints "RESULT unsupported" (exit 6).
//
// Prints "STREAMING" once joined, then one "RESULT ok ..." line or
// "RESULT fail <Code> <message>" line. Exit: 0 all calls right, 2 a call
// failed (status), 3 a wrong result, 4 connect/join failed, 5 bad usage.
// --forever repeats until a call fails (fault tests kill something meanwhile)
// and then checks that an in-place buffer still holds the input.
// --delay MS waits that long after joining before its first call (a member
// late for I/O: the others wait for it in their call).
// --wait-limit MS: how far the agent's WAITING may extend a call past
// --timeout (AggClient::setWaitLimit; 0: not at all). RESULT ok and
// RESULT fail lines end with "keepalives=K" (WAITING taken).
// --stall sends its contributions of one call (as far as the window allows),
// progresses for a second so they arrive, then stops taking anything:
// prints "STALLED" and sleeps without progressing its connection, as a
// wedged or stopped process would.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "switchagg/agent/data_client.h"
#include "test_data_util.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

struct Args {
  std::string agent, token;
  uint64_t group = 1;
  int size = 1, rank = 0, iters = 1, window = 0, delay_ms = 0;
  size_t count = 1000;
  int64_t timeout = 10000;
  int64_t wait_limit = -1;  // -1: the client's default
  bool in_place = false, forever = false, stall = false;
  std::vector<std::pair<Dtype, Op>> pairs;
  std::string routed;  // "", reduce, scatter, allgather, bcast
  int root = 0;
};

bool parsePairs(const std::string& text, std::vector<std::pair<Dtype, Op>>* out) {
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    const size_t slash = item.find('/');
    Dtype d;
    Op o;
    if (slash == std::string::npos || !parseDtype(item.substr(0, slash).c_str(), &d) ||
        !parseOp(item.substr(slash + 1).c_str(), &o))
      return false;
    out->emplace_back(d, o);
    at = comma + 1;
  }
  return !out->empty();
}

bool parseArgs(int argc, char** argv, Args* a) {
  Dtype dtype = Dtype::kFloat32;
  Op op = Op::kSum;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--in-place") {
      a->in_place = true;
      continue;
    }
    if (k == "--forever") {
      a->forever = true;
      continue;
    }
    if (k == "--stall") {
      a->stall = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (k == "--agent")
      a->agent = v;
    else if (k == "--token")
      a->token = v;
    else if (k == "--group")
      a->group = std::strtoull(v.c_str(), nullptr, 0);
    else if (k == "--size")
      a->size = std::atoi(v.c_str());
    else if (k == "--rank")
      a->rank = std::atoi(v.c_str());
    else if (k == "--iters")
      a->iters = std::atoi(v.c_str());
    else if (k == "--delay")
      a->delay_ms = std::atoi(v.c_str());
    else if (k == "--window")
      a->window = std::atoi(v.c_str());
    else if (k == "--count")
      a->count = std::strtoull(v.c_str(), nullptr, 0);
    else if (k == "--timeout")
      a->timeout = std::atoll(v.c_str());
    else if (k == "--wait-limit")
      a->wait_limit = std::atoll(v.c_str());
    else if (k == "--dtype") {
      if (!parseDtype(v.c_str(), &dtype)) return false;
    } else if (k == "--op") {
      if (!parseOp(v.c_str(), &op)) return false;
    } else if (k == "--pairs") {
      if (!parsePairs(v, &a->pairs)) return false;
    } else if (k == "--routed") {
      const size_t colon = v.find(':');
      a->routed = v.substr(0, colon);
      if (colon != std::string::npos) a->root = std::atoi(v.c_str() + colon + 1);
      if (a->routed != "reduce" && a->routed != "scatter" && a->routed != "allgather" &&
          a->routed != "bcast")
        return false;
    } else
      return false;
  }
  if (a->pairs.empty()) a->pairs.emplace_back(dtype, op);
  return !a->agent.empty() && !a->token.empty();
}

int g_calls = 0;  // allreduces that succeeded before a failure
const AggClient* g_client = nullptr;  // for the keepalives of a failure's line

int fail(const char* what, const Status& st, int code) {
  std::printf("RESULT fail %s %s: %s (after %d calls) keepalives=%llu\n", codeName(st.code()),
              what, st.message().c_str(), g_calls,
              static_cast<unsigned long long>(g_client ? g_client->counters().keepalives : 0));
  std::fflush(stdout);
  return code;
}

// One allreduce of call `iter`; 0 ok, else the exit code.
int runOne(AggGroup& g, const Args& a, Dtype d, Op op, int iter) {
  const std::vector<uint8_t> input = testing::makeInput(d, a.rank, iter, a.count);
  std::vector<uint8_t> send = input;
  std::vector<uint8_t> recv(a.in_place ? 0 : input.size(), 0xEE);
  void* out = a.in_place ? send.data() : recv.data();
  const Status st = g.allreduce(d, op, send.data(), out, a.count, a.timeout);
  if (!st.ok()) {
    // Failure contract: the input is intact (in place: the whole buffer).
    if (send != input) {
      std::printf("RESULT wrong input modified by a failed allreduce\n");
      return 3;
    }
    return fail("allreduce", st, 2);
  }
  const auto want = testing::referenceResult(d, op, a.size, iter, a.count);
  if (!testing::sameResult(d, static_cast<const uint8_t*>(out), want.data(), a.count)) {
    std::printf("RESULT wrong %s/%s iter %d\n", dtypeName(d), opName(op), iter);
    return 3;
  }
  if (!a.in_place && send != input) {
    std::printf("RESULT wrong send buffer modified\n");
    return 3;
  }
  return 0;
}

// One routed call of call `iter`; 0 ok, else the exit code.
int runRouted(AggGroup& g, const Args& a, Dtype d, Op op, int iter) {
  const size_t esize = dtypeSize(d), n = a.count;
  const auto p = static_cast<size_t>(a.size), r = static_cast<size_t>(a.rank);
  RoutedCall call;
  call.dtype = d;
  call.op = op;
  std::vector<uint8_t> expect;  // what this member must end with in its wanted range
  std::vector<uint8_t> input, buf, out;
  if (a.routed == "reduce" || a.routed == "scatter") {
    call.kind = RoutedCall::Kind::kReduce;
    call.total = n;
    input = testing::makeInput(d, a.rank, iter, n);
    call.want.assign(p + 1, 0);
    for (size_t m = 0; m <= p; ++m)
      call.want[m] = a.routed == "reduce" ? (m <= size_t(a.root) ? 0 : n) : m * n / p;
  } else {
    call.kind = RoutedCall::Kind::kForward;
    const bool gather = a.routed == "allgather";
    call.total = gather ? p * n : n;
    call.in_begin = gather ? r * n : 0;
    call.in_end = gather ? (r + 1) * n : (a.rank == a.root ? n : 0);
    input = testing::makeInput(d, gather ? a.rank : a.root, iter, call.in_end - call.in_begin);
  }
  size_t wb = 0, we = 0;
  call.wanted(a.rank, &wb, &we);
  // The reference over the whole vector, then this member's part of it.
  std::vector<uint8_t> whole;
  if (call.kind == RoutedCall::Kind::kReduce) {
    whole = testing::referenceResult(d, op, a.size, iter, n);
  } else if (a.routed == "allgather") {
    for (size_t m = 0; m < p; ++m) {
      const auto piece = testing::makeInput(d, int(m), iter, n);
      whole.insert(whole.end(), piece.begin(), piece.end());
    }
  } else {
    whole = testing::makeInput(d, a.root, iter, n);
  }
  expect.assign(whole.begin() + long(wb * esize), whole.begin() + long(we * esize));
  // Buffers: in place, the input and output share one buffer as MPI lays
  // them out (reduce/scatter: the input, results at its start; allgather:
  // the whole vector with this member's block in place; bcast: the root's).
  std::vector<uint8_t> in_copy = input;
  if (a.in_place) {
    if (a.routed == "allgather") {
      buf.assign(call.total * esize, 0xEE);
      std::memcpy(buf.data() + r * n * esize, input.data(), input.size());
      call.in = buf.data() + r * n * esize;
    } else {
      buf = input;
      buf.resize(std::max(input.size(), (we - wb) * esize), 0xEE);
      call.in = buf.data();
    }
    call.out = buf.data();
  } else {
    out.assign((we - wb) * esize + 1, 0xEE);  // one guard byte
    call.in = input.data();
    call.out = out.data();
  }
  const Status st = g.routed(call, a.timeout);
  if (st.code() == Code::kUnsupported && !g.routedSupported()) {
    std::printf("RESULT unsupported %s\n", st.message().c_str());
    return 6;
  }
  if (!st.ok()) {
    if (!a.in_place && input != in_copy) {
      std::printf("RESULT wrong input modified by a failed routed call\n");
      return 3;
    }
    return fail("routed", st, 2);
  }
  const auto* got = static_cast<const uint8_t*>(call.out);
  if (!testing::sameResult(d, got, expect.data(), we - wb)) {
    std::printf("RESULT wrong %s %s/%s iter %d (elements %zu..%zu)\n", a.routed.c_str(),
                dtypeName(d), opName(op), iter, wb, we);
    return 3;
  }
  if (!a.in_place && (out.back() != 0xEE || input != in_copy)) {
    std::printf("RESULT wrong wrote past the wanted range or into the input\n");
    return 3;
  }
  return 0;
}

// --stall: one call's contributions out, then no progress at all.
int stallAfterSending(std::unique_ptr<AggClient> client, std::unique_ptr<AggGroup> group,
                      const Args& a) {
  const auto [d, op] = a.pairs.front();
  std::vector<uint8_t> send = testing::makeInput(d, a.rank, 0, a.count), recv(send.size());
  std::vector<std::shared_ptr<AggClient>> clients;
  clients.push_back(std::move(client));
  std::vector<std::unique_ptr<AggGroup>> groups;
  groups.push_back(std::move(group));
  StripedGroup g(std::move(clients), std::move(groups));
  Status st = g.startCall(d, op, send.data(), recv.data(), a.count);
  const size_t chunks = (send.size() + g.info().slot_bytes - 1) / g.info().slot_bytes;
  // Post every chunk the window allows, then keep progressing for a second
  // so they reach the agent (no result can come yet: the other members
  // start after "STALLED"), then take nothing more.
  for (int i = 0; i < 10000 && st.code() == Code::kInProgress; ++i) {
    st = g.stepCall();
    if (g.counters().chunks_sent >= chunks && i >= 1000) break;
    usleep(1000);
  }
  std::printf("STALLED chunks_sent=%llu of %zu\n",
              static_cast<unsigned long long>(g.counters().chunks_sent), chunks);
  std::fflush(stdout);
  sleep(600);  // the test kills it
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parseArgs(argc, argv, &a)) {
    std::fprintf(stderr, "usage: see the top of test_data_member.cc\n");
    return 5;
  }
  auto client = AggClient::connect(a.agent, a.token, a.timeout);
  if (!client.ok()) return fail("connect", client.status(), 4);
  if (a.wait_limit >= 0) (*client)->setWaitLimit(a.wait_limit);
  g_client = client->get();
  auto group = (*client)->join(a.group, a.size, a.rank, a.timeout, static_cast<uint32_t>(a.window));
  if (!group.ok()) return fail("join", group.status(), 4);
  if (a.stall) return stallAfterSending(std::move(*client), std::move(*group), a);
  AggGroup& g = **group;
  const agent::wire::Capacity& cap = (*client)->agent().capacity;
  std::printf("CAPACITY reduce_mbps=%u link_mbps=%u turnaround_us=%u\n", cap.reduce_mbps,
              cap.link_mbps, cap.turnaround_us);
  std::printf("STREAMING window=%u slot_bytes=%zu\n", g.info().window, g.info().slot_bytes);
  std::fflush(stdout);
  if (a.delay_ms > 0) usleep(static_cast<useconds_t>(a.delay_ms) * 1000);
  int& calls = g_calls;
  for (int iter = 0; a.forever || iter < a.iters; ++iter) {
    for (const auto& [d, op] : a.pairs) {
      const bool reduces = a.routed.empty() || a.routed == "reduce" || a.routed == "scatter";
      if (reduces && !g.supports(d, op))
        return fail("supports", Status(Code::kUnsupported, dtypeName(d)), 2);
      const int rc = a.routed.empty() ? runOne(g, a, d, op, iter) : runRouted(g, a, d, op, iter);
      if (rc != 0) return rc;
      ++calls;
    }
  }
  const ClientCounters& c = g.counters();
  std::printf(
      "RESULT ok calls=%d chunks_sent=%llu chunks_received=%llu bytes_sent=%llu "
      "bytes_received=%llu keepalives=%llu\n",
      calls, static_cast<unsigned long long>(c.chunks_sent),
      static_cast<unsigned long long>(c.chunks_received),
      static_cast<unsigned long long>(c.bytes_sent),
      static_cast<unsigned long long>(c.bytes_received),
      static_cast<unsigned long long>(c.keepalives));
  std::fflush(stdout);
  group->reset();
  return 0;
}
