// Engine: contributions and the rank-ordered reduction (the results go out
// from engine_results.cc).
//
// A plain chunk's result is always c0 op c1 op ... op c(n-1) in rank order,
// so its value is the same bitwise whatever order the chunks arrived in and
// however the work is split, but it is computed as the chunks come: a
// running prefix (Slot::folded). The contribution of member j = folded
// (the next in rank order) is reduced straight from the message into the
// slot's result buffer (member 0's is copied there), then every member
// after it whose contribution waits in its buffer; any other contribution
// is copied once into its buffer to wait. So in the common case (members
// in order, or nearly) an input byte is read once, from the message, and
// the result is ready one fold after the last contribution. The result
// buffer is written only once the previous chunk's result has left it
// (sends_pending == 0); until then everything waits in the buffers, and
// reduceReady folds what is left. The same left fold as reduceMany of all
// the members at once (common/reduce.h), hence the same bits as before.
//
// 16-bit floats are the exception: their contributions all wait in their
// buffers and are folded once the last is in, in fp64 on the stack, and
// rounded to 16 bits once (reduceHalfPiece), so no slot holds an fp64
// prefix between arrivals (for binary16 the fold is exact: the result is
// the correctly rounded sum, common/half.h).
//
// Routed chunks (CONTRIB_ROUTED, docs/agent-protocol.md "Routed calls") are
// copied into their buffers and reduced once all are in (kModeReduce), or
// only forwarded (kModeForward: each member sends its piece of the chunk,
// maybe none; the pieces must tile the chunk in rank order and are copied
// into the result), and the result's
// payload goes only to members [dest_lo, dest_hi] (less a member that
// forwarded the whole chunk itself); every other member gets a header-only
// RESULT, so its window moves on as for an allreduce.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "group.h"
#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;
using wire::Reason;

namespace {

constexpr size_t kPieceBytes = 64 * 1024;  // one pool task
constexpr size_t kBlockBytes = 16 * 1024;  // members' blocks stay in L1/L2 together
constexpr size_t kBatchInputs = 16;        // inputs per reduce call (on the stack)

// Whether `p` may be read as elements of `d`: aligned to the largest power
// of two dividing its size (up to 16), at least what the C type needs.
bool aligned(const void* p, Dtype d) {
  const size_t size = dtypeSize(d);
  const size_t align = std::min<size_t>(16, size & (~size + 1));
  return reinterpret_cast<uintptr_t>(p) % align == 0;
}

// A 16-bit float piece (every member, from = 0): each block of elements is
// folded in fp64 across all the members, in rank order - up to 16 members
// in one pass in registers (reduceMany), more on the stack in batches
// (accumulateHalf) - then rounded once.
constexpr size_t kHalfBlockElems = 2048;  // 16 KiB of fp64 per pool thread

void reduceHalfPiece(const Piece& p) {
  const Group& g = *p.group;
  const Slot& s = g.slots[p.slot];
  const SlotBuffers& b = *g.buffers;
  uint8_t* out = b.result(p.slot);
  const void* in[kBatchInputs];
  double acc[kHalfBlockElems];
  size_t members = 0;
  for (uint32_t r = 0; r < g.size; ++r) members += s.mode != 0 && !s.piece_len[r] ? 0 : 1;
  for (size_t at = p.begin; at < p.end; at += kHalfBlockElems) {
    const size_t n = std::min(kHalfBlockElems, p.end - at);
    const size_t off = at * sizeof(uint16_t);
    if (members <= kBatchInputs) {  // one pass, nothing between in memory (half.h)
      size_t k = 0;
      for (uint32_t r = 0; r < g.size; ++r)
        if (s.mode == 0 || s.piece_len[r]) in[k++] = b.contribution(p.slot, r) + off;
      (void)reduceMany(s.dtype, s.op, out + off, in, k, n);
      continue;
    }
    bool start = true;
    size_t k = 0;
    auto flush = [&] {
      if (k == 0) return;
      (void)accumulateHalf(s.dtype, s.op, acc, in, k, start, n);
      start = false;
      k = 0;
    };
    for (uint32_t r = 0; r < g.size; ++r) {
      if (s.mode != 0 && !s.piece_len[r]) continue;
      in[k++] = b.contribution(p.slot, r) + off;
      if (k == kBatchInputs) flush();
    }
    flush();
    (void)roundHalf(s.dtype, out + off, acc, n);
  }
}

void reducePiece(const Piece& p) {
  const Group& g = *p.group;
  if (isHalfFloat(g.slots[p.slot].dtype)) return reduceHalfPiece(p);
  const Slot& s = g.slots[p.slot];
  const size_t esize = dtypeSize(s.dtype);
  const size_t block = std::max<size_t>(1, kBlockBytes / esize);
  const SlotBuffers& b = *g.buffers;
  uint8_t* out = b.result(p.slot);
  const void* in[kBatchInputs];
  for (size_t at = p.begin; at < p.end; at += block) {
    const size_t n = std::min(block, p.end - at);
    const size_t off = at * esize;
    bool into = p.from > 0;  // the result holds members 0..from-1 already
    size_t k = 0;
    // A left fold in batches is the same left fold (reduceManyInto); decode
    // validated (dtype, op), so none of this can fail.
    auto flush = [&] {
      if (k == 0) return;
      if (into) (void)reduceManyInto(s.dtype, s.op, out + off, in, k, n);
      else (void)reduceMany(s.dtype, s.op, out + off, in, k, n);
      into = true;
      k = 0;
    };
    // Members in rank order, less one that kept its part (routed reduce).
    for (uint32_t r = p.from; r < p.to; ++r) {
      if (s.mode != 0 && !s.piece_len[r]) continue;
      in[k++] = (r == p.from && p.first ? p.first : b.contribution(p.slot, r)) + off;
      if (k == kBatchInputs) flush();
    }
    flush();
  }
}

// Cuts members [from, to) of a slot into pool pieces (appended to `out`).
void cutPieces(Group& g, uint32_t slot, uint32_t from, uint32_t to, const uint8_t* first,
               std::vector<Piece>& out) {
  const Slot& s = g.slots[slot];
  const size_t per_piece = std::max<size_t>(1, kPieceBytes / dtypeSize(s.dtype));
  for (size_t at = 0; at < s.count; at += per_piece)
    out.push_back({&g, slot, at, std::min<size_t>(s.count, at + per_piece), from, to, first});
}

}  // namespace

void AggregationEngine::handleContrib(PeerId from, const Message& m, int64_t now_ms) {
  Group* g = findGroup(m.token, m.group_id);
  if (!g) {
    const bool known = lookup_(m.token).has_value();
    return reject(from, m, known ? Reason::kUnknownGroup : Reason::kBadToken,
                  known ? "no such group for this lease" : "unknown or expired lease token");
  }
  if (!checkContrib(*g, from, m)) return;
  if (admitCall(*g, from, m) != ChunkFate::kProceed || !checkSlot(*g, m)) return;
  Slot& s = g->slots[m.slot];
  if (s.arrived == 0) {
    s.count = m.count;
    s.call_elems = m.call_elems;
    s.dtype = m.dtype;
    s.op = m.op;
    s.mode = modeOf(m);
    s.dest_lo = m.type == MsgType::kContribRouted ? m.dest_lo : 0;
    s.dest_hi = m.type == MsgType::kContribRouted ? m.dest_hi : g->size - 1;
    s.route_flags = m.route_flags;
    s.up_lo = m.up_lo;
    s.up_hi = m.up_hi;
    s.first_ms = now_ms;
    ++g->busy;
  }
  s.have[m.rank] = 1;
  if (s.mode != 0) {
    s.piece_off[m.rank] = m.piece_offset;
    s.piece_len[m.rank] = static_cast<uint32_t>(m.payload_bytes / dtypeSize(m.dtype));
  }
  // The next member of the running prefix, with the result buffer free, is
  // reduced from the message (and whoever waits after it); any other waits
  // in its buffer. Read in place only where the body holds aligned elements
  // (an eager AM's sits wherever UCX put it): else copied, then folded.
  // 16-bit floats all wait (reduceHalfPiece folds them at the end).
  const bool next = s.mode == 0 && s.sends_pending == 0 && m.rank == s.folded &&
                    !isHalfFloat(s.dtype);
  const bool staged = !(next && aligned(m.payload, s.dtype));
  // Received straight into its buffer (placeContrib): nothing to copy.
  uint8_t* buffer = g->buffers->contribution(m.slot, m.rank);
  const bool placed = m.payload == buffer;
  if (staged && m.payload_bytes && !placed) std::memcpy(buffer, m.payload, m.payload_bytes);
  if (next) foldPrefix(*g, m.slot, staged ? nullptr : static_cast<const uint8_t*>(m.payload));
  // Per contribution: no lock (this thread is the counters' only writer).
  ContribCounters::add(contrib_counters_.bytes_in, m.payload_bytes);
  ContribCounters::add(contrib_counters_.contributions, 1);
  if (staged && !placed) ContribCounters::add(contrib_counters_.bytes_staged, m.payload_bytes);
  if (placed) ContribCounters::add(contrib_counters_.bytes_placed, m.payload_bytes);
  ContribCounters::add(*g->bytes_in_job, m.payload_bytes);
  // Credits at the port: held until the chunk's result is sent.
  s.arrived_bytes += m.payload_bytes;
  g->held_bytes += m.payload_bytes;
  held_now_ += m.payload_bytes;
  if (held_now_ > held_max_.load(std::memory_order_relaxed))
    held_max_.store(held_now_, std::memory_order_relaxed);
  if (s.arrived == 0) {  // once per chunk
    std::lock_guard<std::mutex> lock(counters_mu_);
    ++counters_.slots_busy;
  }
  if (++s.arrived == g->size) {
    if (s.mode != 0 && g->tree) {
      if (!checkTreeRoute(*g, s)) return;
    } else if (s.mode == wire::kModeForward && !checkPieces(*g, s)) {
      return;
    }
    if (s.mode == wire::kModeReduce &&
        std::count(s.piece_len.begin(), s.piece_len.end(), 0u) == long(g->size)) {
      count(Reason::kRouteMismatch);
      return abortGroup(*g, Reason::kRouteMismatch,
                        "chunk " + std::to_string(m.chunk) + ": no member sent data to reduce");
    }
    s.ready = true;
    ready_.emplace_back(g, m.slot);
  }
}

bool AggregationEngine::checkPieces(Group& g, const Slot& s) {
  uint64_t at = 0;
  for (uint32_t r = 0; r < g.size; ++r) {
    if (s.piece_len[r] == 0) continue;
    if (s.piece_off[r] != at) {
      count(Reason::kRouteMismatch);
      abortGroup(g, Reason::kRouteMismatch,
                 "chunk " + std::to_string(s.expect_chunk) + ": rank " + std::to_string(r) +
                     "'s piece starts at element " + std::to_string(s.piece_off[r]) +
                     ", the pieces before it end at " + std::to_string(at));
      return false;
    }
    at += s.piece_len[r];
  }
  if (at == s.count) return true;
  count(Reason::kRouteMismatch);
  abortGroup(g, Reason::kRouteMismatch,
             "chunk " + std::to_string(s.expect_chunk) + ": the members' pieces cover " +
                 std::to_string(at) + " of its " + std::to_string(s.count) + " elements");
  return false;
}

void AggregationEngine::assemble(Group& g, uint32_t slot) {
  const Slot& s = g.slots[slot];
  const size_t esize = dtypeSize(s.dtype);
  uint8_t* out = g.buffers->result(slot);
  for (uint32_t r = 0; r < g.size; ++r)
    if (s.piece_len[r])
      std::memcpy(out + size_t(s.piece_off[r]) * esize, g.buffers->contribution(slot, r),
                  size_t(s.piece_len[r]) * esize);
}

bool AggregationEngine::hasReducible() const {
  for (const auto& [g, slot] : ready_)
    if (g->slots[slot].sends_pending == 0) return true;
  return false;
}

// One pass: every group's ready chunks in arrival order, each group's up to
// its fair share of contribution bytes (at least one chunk), so a chunk that
// becomes ready waits for at most the pass in progress and one more, and a
// pass holds at most fair_share + one chunk per group, however deep another
// group's window is. Which chunks share a pass does not change any result:
// each slot is reduced in rank order on its own.
void AggregationEngine::reduceReady() {
  if (revoke_) {
    const wire::Token token = *revoke_;
    revoke_.reset();
    revokeLease(token, "test fault");
  }
  // Scratch kept across passes (no allocation once warm); a group's share
  // of this pass is stamped with the pass number.
  auto& batch = batch_;
  auto& later = later_;
  batch.clear();
  later.clear();
  ++pass_;
  uint64_t deferred = 0, pass_bytes = 0;
  for (const auto& e : ready_) {
    const Slot& s = e.first->slots[e.second];
    if (s.sends_pending != 0) {
      later.push_back(e);
      continue;
    }
    Group& grp = *e.first;
    if (grp.share_pass != pass_) {
      grp.share_pass = pass_;
      grp.share_bytes = 0;  // contribution bytes taken this pass
    }
    if (config_.fair_share_bytes != 0 && grp.share_bytes >= config_.fair_share_bytes) {
      later.push_back(e);
      ++deferred;
      continue;
    }
    const uint64_t bytes = uint64_t(s.count) * dtypeSize(s.dtype) * grp.size;
    grp.share_bytes += bytes;
    pass_bytes += bytes;
    batch.push_back(e);
  }
  if (batch.empty()) return;
  ready_.swap(later);
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    counters_.chunks_deferred += deferred;
    counters_.largest_pass_bytes = std::max(counters_.largest_pass_bytes, pass_bytes);
  }
  const auto t0 = std::chrono::steady_clock::now();
  reduceSlots(batch);
  // A leaf's chunk goes up; its members get the parent's result later.
  for (auto& [g, slot] : batch) {
    if (g->tree) sendUpward(*g, slot, now_ms_);
    else sendResults(*g, slot);
  }
  // Turnaround: every chunk of the batch waited for all of it.
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
  constexpr size_t kRecent = 64;
  if (turnaround_us_.size() < kRecent) turnaround_us_.push_back(uint32_t(us));
  else turnaround_us_[turnaround_next_++ % kRecent] = uint32_t(us);
}

// Folds member s.folded (its data at `first`, or in its buffer when
// first is null) and every member after it whose contribution waits in its
// buffer into the result, then advances the prefix.
void AggregationEngine::foldPrefix(Group& g, uint32_t slot, const uint8_t* first) {
  Slot& s = g.slots[slot];
  uint32_t to = s.folded + 1;
  while (to < g.size && s.have[to]) ++to;
  // On this thread: one chunk's fold is too short to pay a fork-join with
  // the pool's threads on every arrival (the pass still uses them).
  reducePiece(Piece{&g, slot, 0, s.count, s.folded, to, first});
  s.folded = to;
}

void AggregationEngine::reduceSlots(const std::vector<std::pair<Group*, uint32_t>>& batch) {
  pieces_.clear();
  for (const auto& [g, slot] : batch) {
    Slot& s = g->slots[slot];
    if (s.mode == wire::kModeForward) {
      assemble(*g, slot);  // copies only: no pool task
    } else if (s.mode != 0) {
      cutPieces(*g, slot, 0, g->size, nullptr, pieces_);
    } else if (s.folded < g->size) {  // what waited for the result buffer
      cutPieces(*g, slot, s.folded, g->size, nullptr, pieces_);
      s.folded = g->size;
    }
  }
  pool_.run(pieces_.size(), [this](size_t i) { reducePiece(pieces_[i]); });
}

Message chunkMessage(MsgType type, const wire::Token& token, uint64_t group_id, const Slot& s,
                     uint32_t slot) {
  Message m;
  m.type = type;
  m.token = token;
  m.group_id = group_id;
  m.slot = slot;
  m.chunk = s.expect_chunk;
  m.call_elems = s.call_elems;
  m.dtype = s.dtype;
  m.op = s.op;
  m.count = s.count;
  return m;
}

Message joinMessage(MsgType type, const wire::Token& token, const Group& g, uint32_t size) {
  Message m;
  m.type = type;
  m.token = token;
  m.group_id = g.id;
  m.size = size;
  m.window = g.grant.window;
  return m;
}

}  // namespace switchagg::agent
