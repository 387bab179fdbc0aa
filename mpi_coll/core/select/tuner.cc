#include "tuner.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

#include "rules.h"

namespace switchagg::coll {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

size_t slot(Algorithm a) { return static_cast<size_t>(a); }

bool contains(const std::vector<Algorithm>& list, Algorithm a) {
  return std::find(list.begin(), list.end(), a) != list.end();
}

Tuner::Payload nanPayload() {
  Tuner::Payload p;
  p.fill(kNaN);
  return p;
}

}  // namespace

double medianOf(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + long(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  const double lower = *std::max_element(v.begin(), v.begin() + long(mid));
  return (lower + upper) / 2;
}

Tuner::Tuner(TunerOptions options) : options_(options) {
  for (Bucket& b : buckets_) b.agreed = nanPayload();
}

int Tuner::bucketOf(size_t bytes) {
  int log2 = 0;
  while ((bytes >> log2) > 1) ++log2;
  return log2;
}

void Tuner::startExploring(Bucket& b, const std::vector<Algorithm>& candidates) {
  b.phase = Phase::kRound1;
  b.candidates = candidates;
  b.order = candidates;
  b.next = 0;
  for (auto& s : b.samples) s.clear();
  b.agreed = nanPayload();
  b.recent.clear();
}

Algorithm Tuner::choose(size_t bytes, bool switch_ok, const std::vector<Algorithm>& candidates,
                        uint64_t epoch) {
  current_ = nullptr;
  last_settled_ = false;
  if (epoch != epoch_) {
    epoch_ = epoch;
    for (Bucket& b : buckets_) {
      if (b.candidates.empty()) continue;
      ++counters_.reopened;
      startExploring(b, b.candidates);
    }
  }
  Bucket& b = bucket(bucketOf(bytes), switch_ok);
  if (b.candidates.empty()) startExploring(b, candidates);
  if (b.phase == Phase::kSettled && b.retry_every > 0 && b.settled_for >= b.retry_every &&
      b.candidates.size() > 1) {
    ++counters_.retried;
    startExploring(b, b.candidates);
  }
  Algorithm pick;
  if (b.phase == Phase::kSettled) {
    pick = b.choice;
    last_settled_ = true;
  } else {
    // Round 1: each candidate twice in a row; round 2: interleaved.
    pick = b.phase == Phase::kRound1 ? b.order[(b.next / 2) % b.order.size()]
                                     : b.order[b.next % b.order.size()];
  }
  // A call of this bucket whose candidates differ (e.g. a datatype the
  // previous module would reduce differently) follows the model and is not
  // a sample: the same on every rank, since candidates are.
  if (!contains(candidates, pick)) return candidates.front();
  current_ = &b;
  current_pick_ = pick;
  return pick;
}

std::optional<Algorithm> Tuner::settledChoice(size_t bytes, bool switch_ok,
                                              uint64_t epoch) const {
  if (epoch != epoch_) return std::nullopt;
  const Bucket& b = bucket(bucketOf(bytes), switch_ok);
  if (b.phase != Phase::kSettled) return std::nullopt;
  return b.choice;
}

std::optional<Algorithm> Tuner::settledNonblocking(size_t bytes, bool switch_ok,
                                                   uint64_t epoch) const {
  const std::optional<Algorithm> settled = settledChoice(bytes, switch_ok, epoch);
  if (!settled) return std::nullopt;
  if (*settled == Algorithm::kSwitch || *settled == Algorithm::kPrevious) return settled;
  const double ts = agreedUs(bytes, switch_ok, Algorithm::kSwitch);
  if (std::isnan(ts)) return Algorithm::kPrevious;
  for (const AlgorithmInfo& row : algorithmRegistry()) {
    if (row.id == Algorithm::kSwitch) continue;
    const double t = agreedUs(bytes, switch_ok, row.id);
    if (!std::isnan(t) && t < ts) return Algorithm::kPrevious;
  }
  return Algorithm::kSwitch;
}

double Tuner::agreedUs(size_t bytes, bool switch_ok, Algorithm a) const {
  return bucket(bucketOf(bytes), switch_ok).agreed[slot(a)];
}

void Tuner::record(Algorithm served, double us) {
  if (current_ == nullptr) return;
  Bucket& b = *current_;
  current_ = nullptr;
  if (b.phase == Phase::kSettled) {
    ++counters_.settled_calls;
    ++b.settled_for;
    if (served == b.choice) {
      if (b.recent.size() >= options_.recent) b.recent.erase(b.recent.begin());
      b.recent.push_back(us);
    }
    if (++b.since_check >= b.check_every) agreement_ = &b;
    return;
  }
  ++counters_.explore_calls;
  if (!warmed_[slot(served)]) {
    // Its first call here: connection set-up, not speed. The same
    // candidate's turn comes again (served is alike on every rank).
    warmed_[slot(served)] = true;
    ++counters_.cold_calls;
    if (served == current_pick_) return;
  }
  if (served == current_pick_) b.samples[slot(served)].push_back(us);
  ++b.next;
  const size_t calls_in_round =
      b.order.size() * size_t(b.phase == Phase::kRound1 ? 2 : options_.round2_calls);
  if (b.next >= calls_in_round) agreement_ = &b;
}

Tuner::Payload Tuner::payload() const {
  Payload p = nanPayload();
  if (agreement_ == nullptr) return p;
  const Bucket& b = *agreement_;
  if (b.phase == Phase::kSettled) {
    p[slot(b.choice)] = medianOf(b.recent);
  } else {
    for (Algorithm a : b.order) {
      const std::vector<double>& v = b.samples[slot(a)];
      // Round 1 judges by the faster of the pair: one preemption of one
      // rank on a busy node must not condemn a path.
      if (b.phase == Phase::kRound1)
        p[slot(a)] = v.empty() ? std::numeric_limits<double>::quiet_NaN()
                               : *std::min_element(v.begin(), v.end());
      else
        p[slot(a)] = medianOf(v);
    }
  }
  return p;
}

void Tuner::agree(const std::vector<double>& all) {
  if (agreement_ == nullptr) return;
  Bucket& b = *agreement_;
  agreement_ = nullptr;
  ++counters_.agreements;
  // Exploring: the max over ranks (synchronised start); settled: the min.
  const bool use_max = b.phase != Phase::kSettled;
  Payload agreed = nanPayload();
  for (size_t i = 0; i + kAlgorithms <= all.size(); i += kAlgorithms) {
    for (size_t a = 0; a < kAlgorithms; ++a) {
      const double v = all[i + a];
      if (std::isnan(v)) continue;
      if (std::isnan(agreed[a]) || (use_max ? v > agreed[a] : v < agreed[a])) agreed[a] = v;
    }
  }
  switch (b.phase) {
    case Phase::kRound1: finishRound1(b, agreed); break;
    case Phase::kRound2: finishRound2(b, agreed); break;
    case Phase::kSettled: {
      const double now = agreed[slot(b.choice)];
      b.since_check = 0;
      // What the choice was settled at (NaN if it never got a sample: no check fires).
      const double settled = b.agreed[slot(b.choice)];
      if (!std::isnan(now) && now > options_.reopen_factor * settled) {
        if (b.slow_once) {
          ++counters_.reopened;
          startExploring(b, b.candidates);
          return;
        }
        // Once may be noise: look again soon.
        b.slow_once = true;
        b.check_every = std::max<uint32_t>(1, options_.check_first);
        break;
      }
      b.slow_once = false;
      b.check_every = std::min(b.check_every * 2, options_.check_max);
      break;
    }
  }
}

void Tuner::finishRound1(Bucket& b, const Payload& agreed) {
  b.agreed = agreed;
  double best = std::numeric_limits<double>::infinity();
  for (Algorithm a : b.order)
    if (!std::isnan(agreed[slot(a)])) best = std::min(best, agreed[slot(a)]);
  const double bound =
      std::min(options_.prune_factor * best,
               std::max(options_.confirm_factor * best, best + options_.confirm_slack_us));
  std::vector<Algorithm> survivors;
  for (Algorithm a : b.order) {
    const double t = agreed[slot(a)];
    if (!std::isnan(t) && t <= bound) survivors.push_back(a);
  }
  if (survivors.empty()) survivors.push_back(b.order.front());  // nothing measured
  b.order = survivors;
  b.next = 0;
  if (survivors.size() == 1 || options_.round2_calls <= 0) {
    finishRound2(b, agreed);
    return;
  }
  b.phase = Phase::kRound2;
}

void Tuner::finishRound2(Bucket& b, const Payload& agreed) {
  Algorithm choice = b.order.front();
  for (Algorithm a : b.order) {
    const double t = agreed[slot(a)];
    if (std::isnan(t)) continue;
    b.agreed[slot(a)] = t;
    const double best = b.agreed[slot(choice)];
    if (std::isnan(best) || t < best) choice = a;
  }
  // The retry interval doubles while exploring again finds the same choice.
  const uint32_t first = options_.retry_first;
  b.retry_every = b.chosen_before && choice == b.last_choice
                      ? std::min(std::max(b.retry_every, first) * 2, options_.retry_max)
                      : first;
  b.chosen_before = true;
  b.last_choice = choice;
  b.settled_for = 0;
  b.choice = choice;
  b.phase = Phase::kSettled;
  b.recent.clear();
  b.since_check = 0;
  b.slow_once = false;
  b.check_every = std::max<uint32_t>(1, options_.check_first);
}

uint64_t Tuner::settledBuckets() const {
  uint64_t n = 0;
  for (const Bucket& b : buckets_) n += b.phase == Phase::kSettled ? 1 : 0;
  return n;
}

std::vector<Tuner::Learnt> Tuner::learnt() const {
  std::vector<Learnt> out;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    const Bucket& b = buckets_[i];
    if (b.candidates.empty()) continue;
    Learnt l;
    l.log2_bytes = int(i / 2);
    l.switch_ok = (i % 2) != 0;
    l.settled = b.phase == Phase::kSettled;
    l.choice = b.choice;
    l.agreed_us = b.agreed;
    out.push_back(l);
  }
  return out;
}

std::string formatTuneRules(const std::vector<Tuner::Learnt>& learnt, const SelectionInput& shape) {
  std::string text;
  char line[512];
  for (const Tuner::Learnt& l : learnt) {
    if (!l.settled) continue;
    const uint64_t lo = uint64_t(1) << l.log2_bytes;
    const uint64_t hi = l.log2_bytes >= 63 ? UINT64_MAX : (lo << 1) - 1;
    char where[200];
    snprintf(where, sizeof where, "bytes=%" PRIu64 "-%" PRIu64 " np=%d ppn=%d nodes=%d switch=%s",
             lo, hi, shape.comm_size, shape.ranks_per_node, shape.nodes,
             l.switch_ok ? "yes" : "no");
    snprintf(line, sizeof line, "allreduce %s algorithm=%s\n", where, algorithmName(l.choice));
    text += line;
    // Only times the rules parser reads back (a call of over 16 minutes
    // is not one to ship anyway); NaN: not measured.
    std::string times;
    for (size_t a = 0; a < Tuner::kAlgorithms; ++a) {
      const double us = l.agreed_us[a];
      if (!(us >= 0 && us <= kMaxRulesNumber)) continue;
      snprintf(line, sizeof line, " us:%s=%.1f", algorithmName(static_cast<Algorithm>(a)), us);
      times += line;
    }
    if (!times.empty()) text += std::string("measured ") + where + times + "\n";
  }
  return text;
}

}  // namespace switchagg::coll
