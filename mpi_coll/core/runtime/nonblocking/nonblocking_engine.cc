// The nonblocking engine (nonblocking_engine.h): the queue and the machine
// of a nonblocking switch call, over the core's stream
// (switchagg_coll_istream_*, iallreduce.h) and the host's agreement, redo
// and completion.
#include "nonblocking_engine.h"

#include "iallreduce.h"

namespace {

void setStage(switchagg_nb_call_t* call, int stage, const switchagg_nb_host_t* host) {
  // Relaxed: a host reads it from another thread only for its messages.
  __atomic_store_n(&call->stage, stage, __ATOMIC_RELAXED);
  if (host->moved != nullptr) host->moved(call);
}

// The stream's start, one entry for every kind; a switchagg_coll_istream
// answer. A barrier streams its one-int32 sum of ones.
int startStream(switchagg_nb_call_t* c) {
  const int barrier = c->kind == SWITCHAGG_COLL_BARRIER;
  return switchagg_coll_istream_start(c->core, c->kind, barrier ? &c->one : c->send,
                                      barrier ? &c->entered : c->recv, barrier ? 1 : c->count,
                                      c->dtype, c->op, c->root);
}

// This rank's outcome of a stream (start or step answered DONE, BUSY or
// FAILED): kept for the settle and the agreement.
bool finished(switchagg_nb_call_t* c, int answer) {
  if (answer == SWITCHAGG_OUTCOME_PENDING || answer == SWITCHAGG_OUTCOME_NOT_NOW) return false;
  c->outcome = answer;
  return true;
}

void fail(switchagg_nb_call_t* c, const switchagg_nb_host_t* host) {
  switchagg_nb_note(c, "error");
  host->complete(c, SWITCHAGG_NB_FAILED);
}

void startRedo(switchagg_nb_call_t* c, const switchagg_nb_host_t* host) {
  switch (host->redo(c)) {
    case SWITCHAGG_NB_DONE: host->complete(c, SWITCHAGG_NB_REDONE); return;
    case SWITCHAGG_NB_PENDING:
      if (c->stage != SWITCHAGG_NB_REDO) setStage(c, SWITCHAGG_NB_REDO, host);
      return;
    default: host->complete(c, SWITCHAGG_NB_REDO_FAILED); return;
  }
}

// The ranks' verdict (agreed, first_rank: -1 when settled without the
// agreement): served, or redone.
void end(switchagg_nb_call_t* c, int agreed, int first_rank, const switchagg_nb_host_t* host) {
  if (switchagg_coll_istream_end(c->core, agreed, first_rank) == SWITCHAGG_OUTCOME_DONE)
    host->complete(c, SWITCHAGG_NB_SERVED);
  else
    startRedo(c, host);
}

void agreed(switchagg_nb_call_t* c, int wait, int agreed_outcome, int first_rank,
            const switchagg_nb_host_t* host) {
  if (wait == SWITCHAGG_NB_DONE) end(c, agreed_outcome, first_rank, host);
  else if (wait == SWITCHAGG_NB_PENDING) setStage(c, SWITCHAGG_NB_AGREE, host);
  else fail(c, host);
}

// After this rank's outcome: one agent round trip settles a small call,
// else the host's agreement. False when it must be tried again later.
bool settle(switchagg_nb_call_t* c, const switchagg_nb_host_t* host) {
  int agreed_outcome = 0, first_rank = -1;
  if (c->stage != SWITCHAGG_NB_SETTLE) setStage(c, SWITCHAGG_NB_SETTLE, host);
  const int settled = switchagg_coll_istream_settle(c->core, c->outcome);
  switch (settled) {
    case SWITCHAGG_OUTCOME_NOT_NOW:
      return false;
    case SWITCHAGG_OUTCOME_DONE:
    case SWITCHAGG_OUTCOME_BUSY:
    case SWITCHAGG_OUTCOME_FAILED:
      end(c, settled, -1, host);
      return true;
    case SWITCHAGG_OUTCOME_PENDING: {  // the ranks must agree
      const int wait = host->agree(c, c->outcome, &agreed_outcome, &first_rank);
      agreed(c, wait, agreed_outcome, first_rank, host);
      return true;
    }
    default:  // ERROR: the core logged why
      fail(c, host);
      return true;
  }
}

}  // namespace

extern "C" {

void switchagg_nb_call_init(switchagg_nb_call_t* call, switchagg_coll_comm_t* core, void* owner,
                            int kind) {
  *call = switchagg_nb_call_t{};
  call->core = core;
  call->owner = owner;
  call->kind = kind;
  call->one = 1;
  call->stage = SWITCHAGG_NB_QUEUED;
}

int switchagg_nb_call_stage(const switchagg_nb_call_t* call) {
  return __atomic_load_n(&call->stage, __ATOMIC_RELAXED);
}

int switchagg_nb_queue_push(switchagg_nb_queue_t* queue, switchagg_nb_call_t* call) {
  call->next = nullptr;
  ++queue->length;
  if (queue->tail != nullptr) {
    queue->tail->next = call;
    queue->tail = call;
    return 0;
  }
  queue->tail = call;
  // Release: a peek (switchagg_nb_queue_head) without the lock sees the
  // call whole.
  __atomic_store_n(&queue->head, call, __ATOMIC_RELEASE);
  return 1;
}

void switchagg_nb_queue_pop(switchagg_nb_queue_t* queue) {
  switchagg_nb_call_t* head = queue->head;
  // Release: a peek that sees the queue move (a drain waiting for it to
  // empty) sees everything done before.
  __atomic_store_n(&queue->head, head->next, __ATOMIC_RELEASE);
  if (head->next == nullptr) queue->tail = nullptr;
  head->next = nullptr;
  --queue->length;
}

switchagg_nb_call_t* switchagg_nb_queue_head(const switchagg_nb_queue_t* queue) {
  return __atomic_load_n(&queue->head, __ATOMIC_ACQUIRE);
}

int switchagg_nb_step(switchagg_nb_call_t* c, const switchagg_nb_host_t* host) {
  int agreed_outcome = 0, first_rank = -1, wait = 0;
  switch (c->stage) {
    case SWITCHAGG_NB_QUEUED:
      switch (const int answer = startStream(c)) {
        case SWITCHAGG_OUTCOME_NOT_NOW: return 0;  // a blocking call holds the gate
        case SWITCHAGG_OUTCOME_DECLINED:  // alike on every rank: no agreement
          setStage(c, SWITCHAGG_NB_REDO, host);
          startRedo(c, host);
          return 1;
        case SWITCHAGG_OUTCOME_PENDING: setStage(c, SWITCHAGG_NB_STREAM, host); return 1;
        default:  // this rank's outcome already
          (void)finished(c, answer);
          (void)settle(c, host);
          return 1;
      }
    case SWITCHAGG_NB_STREAM:
      if (!finished(c, switchagg_coll_istream_step(c->core))) return 0;
      (void)settle(c, host);
      return 1;
    case SWITCHAGG_NB_SETTLE:
      return settle(c, host) ? 1 : 0;
    case SWITCHAGG_NB_AGREE:
      wait = host->poll(c, &agreed_outcome, &first_rank);
      if (wait == SWITCHAGG_NB_PENDING) return 0;
      agreed(c, wait, agreed_outcome, first_rank, host);
      return 1;
    case SWITCHAGG_NB_REDO:
      wait = host->poll(c, &agreed_outcome, &first_rank);
      if (wait == SWITCHAGG_NB_PENDING) return 0;
      host->complete(c, wait == SWITCHAGG_NB_DONE ? SWITCHAGG_NB_REDONE : SWITCHAGG_NB_REDO_FAILED);
      return 1;
    default:
      return 0;
  }
}

void switchagg_nb_note(const switchagg_nb_call_t* call, const char* what) {
  if (call->core != nullptr) switchagg_coll_inote(call->core, call->kind, what);
}

int switchagg_nb_redo_host(switchagg_nb_call_t* c) {
  return switchagg_coll_iredo_host(c->core, c->kind, c->send, c->recv, c->count, c->dtype, c->op,
                                   c->root) == 0
             ? SWITCHAGG_NB_DONE
             : SWITCHAGG_NB_ERROR;
}

}  // extern "C"
