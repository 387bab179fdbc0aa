// AggClient: connection, HELLO, JOIN/LEAVE and the dispatch of the agent's
// messages to groups (client_core.cc). Streaming allreduce: client_stream.cc.
#include <chrono>
#include <optional>

#include "switchagg/agent/malloc_tuning.h"
#include "client_internal.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;
using wire::Reason;


Status AggClient::Impl::brokenStatus() const {
  if (failed) return failure;
  return Status(Code::kPeerFailed, "connection to the agent failed");
}

Status AggClient::Impl::sendControl(const Message& m, int64_t timeout_ms) {
  if (broken()) return brokenStatus();
  const wire::Frame f = wire::encode(m);
  ucx::Request req;
  Status st = ep->amSend(wire::kAmToAgent, f.header.data(), f.header_bytes,
                         f.body.empty() ? nullptr : f.body.data(), f.body.size(), req);
  if (st.ok()) st = worker->wait(req, timeout_ms);
  if (!st.ok()) {
    fail(st.code() == Code::kTimeout
             ? Status(Code::kTimeout, "agent not reachable: " + st.message())
             : st);
    if (!req.done()) ep.reset();  // cancel it: `f` dies with this frame
    return failure;
  }
  return Status::Ok();
}

void AggClient::Impl::drain(std::vector<ucx::Request*> pending, int64_t timeout_ms) {
  if (pending.empty()) return;
  if (ep && !ep->failed()) {
    const Status st = worker->waitUntil(
        [&] {
          for (ucx::Request* r : pending)
            if (!r->done()) return false;
          return true;
        },
        timeout_ms);
    if (st.ok()) return;
  }
  // Sends still reading caller memory: closing the (abandoned) endpoint
  // cancels them.
  fail(Status(Code::kPeerFailed, "sends to the agent did not complete; connection closed"));
  ep.reset();
}

AggClient::AggClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AggClient::~AggClient() {
  impl_->groups.clear();
  impl_->ep.reset();
  impl_->worker.reset();
  impl_->context.reset();
}

Result<std::unique_ptr<AggClient>> AggClient::connect(const std::string& agent_address,
                                                      const std::string& token_hex,
                                                      int64_t timeout_ms) {
  auto impl = std::make_unique<Impl>();
  std::optional<LeaseToken> token = LeaseToken::fromHex(token_hex);
  if (!token) return Status(Code::kInvalidArgument, "lease token must be 32 hex characters");
  impl->token = *token;
  tuneMallocForStreaming();  // results arrive in per-message buffers, see there
  auto opts = ucx::TransportOptions::fromEnvironment();
  if (!opts.ok()) return opts.status();
  opts->enable_tag = false;
  opts->rndv_threshold = wire::kEagerThresholdBytes;
  opts->route_to = agent_address;  // the device (rail) that reaches this agent
  auto ctx = ucx::Context::create(*opts);
  if (!ctx.ok()) return ctx.status();
  impl->context = std::move(ctx.value());
  auto w = ucx::Worker::create(*impl->context);
  if (!w.ok()) return w.status();
  impl->worker = std::move(w.value());
  Impl* raw = impl.get();
  SWITCHAGG_RETURN_IF_ERROR(impl->worker->setAmHandler(
      wire::kAmToClient, [raw](const ucx::AmMessage& am) { raw->onMessage(am); }));
  impl->worker->setFailureHandler([raw](ucx::Endpoint*, const Status& st) { raw->fail(st); });
  auto ep = ucx::Endpoint::connect(*impl->worker, agent_address);
  if (!ep.ok()) return ep.status();
  impl->ep = std::move(ep.value());

  const int64_t deadline = clientNowMs() + timeout_ms;
  Message hello;
  hello.type = MsgType::kHello;
  hello.token = impl->token;
  SWITCHAGG_RETURN_IF_ERROR(impl->sendControl(hello, timeout_ms));
  Status st = impl->worker->waitUntil([raw] { return raw->hello_done || raw->broken(); },
                                      deadline - clientNowMs());
  if (raw->broken()) return raw->brokenStatus();
  if (!st.ok())
    return Status(Code::kTimeout, "no answer from the agent at " + agent_address + " within " +
                                      std::to_string(timeout_ms) + " ms");
  if (!raw->hello_status.ok()) return raw->hello_status;
  // What the agent measured of itself, for the cost model. Optional: an
  // older agent refuses the type, a silent one costs at most a second.
  Message ask;
  ask.type = MsgType::kCapacity;
  ask.token = impl->token;
  const int64_t ask_ms = std::min<int64_t>(1000, std::max<int64_t>(1, deadline - clientNowMs()));
  SWITCHAGG_RETURN_IF_ERROR(impl->sendControl(ask, ask_ms));
  (void)impl->worker->waitUntil([raw] { return raw->capacity_done || raw->broken(); }, ask_ms);
  if (raw->broken()) return raw->brokenStatus();
  return std::unique_ptr<AggClient>(new AggClient(std::move(impl)));
}

const AgentInfo& AggClient::agent() const {
  return impl_->agent;
}
bool AggClient::supports(Dtype d, Op o) const {
  return impl_->agent.caps.supports(d, o);
}
int AggClient::progress() { return impl_->worker && impl_->worker->progress() ? 1 : 0; }

ucx::Worker* AggClient::worker() const { return impl_->worker.get(); }

bool AggClient::failed() const {
  return impl_->broken();
}
std::string AggClient::transports() const {
  return impl_->ep ? impl_->ep->transports() : "";
}
const Status& AggClient::failure() const {
  return impl_->failure;
}
const ClientCounters& AggClient::counters() const {
  return impl_->counters;
}
void AggClient::setWaitLimit(int64_t limit_ms) {
  impl_->wait_limit_ms = std::max<int64_t>(0, limit_ms);
}

Result<std::unique_ptr<AggGroup>> AggClient::join(uint64_t group_id, int size, int rank,
                                                  int64_t timeout_ms, uint32_t window_request,
                                                  const TreeJoin* tree) {
  Impl& c = *impl_;
  if (size < 1 || static_cast<uint32_t>(size) > wire::kMaxGroupSize || rank < 0 || rank >= size)
    return Status(Code::kInvalidArgument, "join: bad size/rank");
  std::optional<LeaseToken> parent_token;
  if (tree) {
    parent_token = LeaseToken::fromHex(tree->parent_token_hex);
    if (!parent_token)
      return Status(Code::kInvalidArgument, "join: the parent's lease token must be 32 hex characters");
    if (tree->leaves < 2 || tree->leaves > wire::kMaxGroupSize || tree->leaf_index >= tree->leaves)
      return Status(Code::kInvalidArgument, "join: bad tree leaf index/leaves");
  }
  if (c.groups.count(group_id))
    return Status(Code::kInvalidArgument,
                  "join: this client already has group " + std::to_string(group_id));
  if (c.broken()) return c.brokenStatus();
  auto state = std::make_unique<AggGroup::State>();
  state->info.group_id = group_id;
  state->info.size = size;
  state->info.rank = rank;
  AggGroup::State* g = state.get();
  std::unique_ptr<AggGroup> group(new AggGroup(impl_.get(), std::move(state)));
  c.groups[group_id] = g;  // group's destructor unregisters

  Message j;
  j.type = MsgType::kJoin;
  j.token = c.token;
  j.group_id = group_id;
  j.size = static_cast<uint32_t>(size);
  j.rank = static_cast<uint32_t>(rank);
  j.window = std::min<uint32_t>(window_request, wire::kMaxWindow);
  j.flags = wire::kJoinFlagBusy | wire::kJoinFlagRouted | wire::kJoinFlagKeepalive;
  if (tree) {
    j.flags = wire::kJoinFlagBusy | wire::kJoinFlagTree | wire::kJoinFlagRouted |
              wire::kJoinFlagTreeRouted | wire::kJoinFlagKeepalive;
    j.parent_token = *parent_token;
    j.tree_index = tree->leaf_index;
    j.tree_size = tree->leaves;
    g->leaves = tree->leaves;
  }
  const int64_t deadline = clientNowMs() + timeout_ms;
  Status st = c.sendControl(j, timeout_ms);
  if (st.ok())
    st = c.worker->waitUntil([&] { return g->acked || g->dead || c.broken(); },
                             deadline - clientNowMs());
  // An agent that predates a JOIN flag refuses it as malformed (without
  // creating the group): join again as an older client, first without
  // routed calls (allreduce and barrier only), then without ERROR(busy).
  // A tree group: without keepalives (WAITING; a leaf that predates them),
  // then without routed calls through trees (a leaf that predates
  // them), but never flat: refused then is refused.
  auto refused = [&] {
    return st.ok() && g->dead && g->failure_reason == Reason::kMalformed && !c.broken();
  };
  auto rejoin = [&](uint32_t flags) {
    *g = AggGroup::State();
    g->info.group_id = group_id;
    g->info.size = size;
    g->info.rank = rank;
    g->routed_flag = (flags & wire::kJoinFlagRouted) != 0;
    g->busy_flag = (flags & wire::kJoinFlagBusy) != 0;
    g->leaves = tree ? tree->leaves : 0;
    j.flags = flags;
    st = c.sendControl(j, std::max<int64_t>(1, deadline - clientNowMs()));
    if (st.ok())
      st = c.worker->waitUntil([&] { return g->acked || g->dead || c.broken(); },
                               deadline - clientNowMs());
  };
  if (tree && refused())
    rejoin(wire::kJoinFlagBusy | wire::kJoinFlagTree | wire::kJoinFlagRouted |
           wire::kJoinFlagTreeRouted);
  if (tree && refused()) rejoin(wire::kJoinFlagBusy | wire::kJoinFlagTree);
  if (tree && refused())
    g->failure = Status(Code::kUnsupported,
                        "join: the leaf agent refused a tree JOIN as malformed (it predates trees)");
  // Flat: without keepalives (WAITING) first, then without routed calls,
  // then without busy.
  static constexpr uint32_t kOlder[] = {wire::kJoinFlagBusy | wire::kJoinFlagRouted,
                                        wire::kJoinFlagBusy, 0};
  for (uint32_t flags : kOlder)
    if (!tree && refused()) rejoin(flags);
  if (c.broken())
    st = c.brokenStatus();
  else if (g->dead)
    st = g->failure;
  else if (!st.ok())
    st = Status(Code::kTimeout,
                "join: not every member joined within " + std::to_string(timeout_ms) + " ms");
  if (!st.ok()) {
    g->fail(st);
    ++c.counters.failures;
    return st;  // ~AggGroup sends LEAVE so the agent drops the half-formed group
  }
  g->slot_request.resize(g->info.window);
  g->slot_used.assign(g->info.window, 0);
  g->slot_header.resize(g->info.window);
  return group;
}

AggGroup::AggGroup(AggClient::Impl* client, std::unique_ptr<State> state)
    : client_(client), state_(std::move(state)) {}

AggGroup::~AggGroup() {
  if (!state_->agent_knows) (void)leave(AggClient::kDrainMs);
  client_->groups.erase(state_->info.group_id);
}

const GroupInfo& AggGroup::info() const {
  return state_->info;
}
bool AggGroup::supports(Dtype d, Op o) const {
  return state_->info.caps.supports(d, o);
}
bool AggGroup::routedSupported() const {
  return state_->routed_flag;
}
bool AggGroup::usable() const {
  return !state_->dead && !client_->broken();
}
const Status& AggGroup::failure() const {
  return state_->dead ? state_->failure : client_->failure;
}
const ClientCounters& AggGroup::counters() const {
  return state_->counters;
}
int64_t AggGroup::deadline(int64_t bound_ms, int64_t timeout_ms) const {
  return state_->deadline(bound_ms, timeout_ms, client_->wait_limit_ms);
}

Status AggGroup::leave(int64_t timeout_ms) {
  State& s = *state_;
  if (s.agent_knows) {
    s.fail(Status(Code::kAborted, "left the group"));
    return Status::Ok();
  }
  if (client_->broken()) return client_->brokenStatus();
  s.agent_knows = true;
  Message l;
  l.type = MsgType::kLeave;
  l.token = client_->token;
  l.group_id = s.info.group_id;
  l.rank = static_cast<uint32_t>(s.info.rank);
  const Status st = client_->sendControl(l, timeout_ms);
  s.fail(Status(Code::kAborted, "left the group"));
  return st;
}

}  // namespace switchagg::agent
