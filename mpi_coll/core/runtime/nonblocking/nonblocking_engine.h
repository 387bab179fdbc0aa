/* The nonblocking engine: one communicator's queue of nonblocking switch
 * calls (MPI_Iallreduce, MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast,
 * MPI_Ireduce_scatter_block) and the machine each call runs through,
 * written once for both glues (docs/design.md "The nonblocking engine"):
 *
 *   QUEUED  -> its stream starts (switchagg_coll_istream_start), when it
 *              reaches the head of its communicator's queue
 *   STREAM  -> stepped until this rank's outcome
 *   SETTLE  -> one agent round trip settles it (the same answer on every
 *              rank), else the host's outcome agreement
 *   AGREE   -> the host's agreement runs (the worst outcome of all ranks
 *              and the lowest rank with it)
 *   REDO    -> anyone busy or failed, or the path declined alike on every
 *              rank: the host redoes the call from the intact input
 *   done    -> the host completes the user's request.
 *
 * The engine never waits and never calls MPI: what needs MPI (the
 * agreement, the redo, completing a request) and what drives progress
 * (Open MPI's progress callback, the PMPI layer's threads) are the host's
 * (switchagg_nb_host_t). An agreement or redo may end at once (DONE: the
 * PMPI layer runs them over the communicator's own transport) or later
 * (PENDING: Open MPI's glue posts them to libnbc and the engine polls).
 *
 * Locking is the host's too: a queue is touched under the host's lock,
 * except switchagg_nb_queue_head, which may peek without it (it reads
 * what the locked writers stored with release). Plain C: included by the
 * Open MPI glue. */
#ifndef SWITCHAGG_NONBLOCKING_ENGINE_H
#define SWITCHAGG_NONBLOCKING_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "coll_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a call is (numbered as the PMPI layer's messages print them). */
enum switchagg_nb_stage {
  SWITCHAGG_NB_QUEUED = 0,
  SWITCHAGG_NB_STREAM = 1,
  SWITCHAGG_NB_SETTLE = 2,
  SWITCHAGG_NB_REDO = 3,
  SWITCHAGG_NB_AGREE = 4
};

/* How a call ended (switchagg_nb_host_t.complete). */
enum switchagg_nb_end {
  SWITCHAGG_NB_SERVED = 0,      /* the switch's result is in recv */
  SWITCHAGG_NB_REDONE = 1,      /* the host's redo succeeded */
  SWITCHAGG_NB_FAILED = 2,      /* settle or agreement failed (counted "error") */
  SWITCHAGG_NB_REDO_FAILED = 3  /* the host's redo failed (the host counts it) */
};

/* A host operation's answer. */
enum switchagg_nb_wait {
  SWITCHAGG_NB_DONE = 0,
  SWITCHAGG_NB_PENDING = 1,
  SWITCHAGG_NB_ERROR = 2
};

/* One call: embedded in the host's request, its fields set before
 * switchagg_nb_queue_push (switchagg_nb_call_init first). send/recv/count/
 * dtype/op/root are what the core streams (switchagg_coll_istream_start:
 * switchagg dtype and op codes, byte images for allgather and bcast). */
typedef struct switchagg_nb_call {
  switchagg_coll_comm_t *core;
  void *owner; /* the host's request */
  int kind;    /* switchagg_coll_kind (coll_kind.h): SWITCHAGG_COLL_ALLREDUCE,
                * _BARRIER (a one-int32 sum of ones: `entered` ranks),
                * _ALLGATHER, _BCAST or _REDUCE_SCATTER_BLOCK */
  const void *send; /* NULL: in place */
  void *recv;
  size_t count;
  int dtype, op, root;
  int32_t one, entered; /* SWITCHAGG_COLL_BARRIER */
  int stage;            /* switchagg_nb_stage: read with switchagg_nb_call_stage */
  int outcome;          /* this rank's, once streamed */
  struct switchagg_nb_call *next;
} switchagg_nb_call_t;

/* One communicator's calls in posting order; served one at a time. */
typedef struct switchagg_nb_queue {
  switchagg_nb_call_t *head, *tail;
  size_t length;
} switchagg_nb_queue_t;

/* What the engine asks of the glue. Each gets the call (its `owner` is
 * the host's request). */
typedef struct switchagg_nb_host {
  /* The outcome agreement: DONE with *agreed (the worst outcome) and
   * *first_rank (the lowest rank with it), PENDING (then `poll`) or ERROR. */
  int (*agree)(switchagg_nb_call_t *call, int outcome, int *agreed, int *first_rank);
  /* The redo of the call from its intact input: DONE, PENDING or ERROR. */
  int (*redo)(switchagg_nb_call_t *call);
  /* A PENDING agreement (fills *agreed, *first_rank) or redo: DONE,
   * PENDING or ERROR. */
  int (*poll)(switchagg_nb_call_t *call, int *agreed, int *first_rank);
  /* The call ended (switchagg_nb_end): the host takes it off its queue
   * (switchagg_nb_queue_pop) and completes the user's request. The call
   * may be gone once this returns. */
  void (*complete)(switchagg_nb_call_t *call, int end);
  /* Optional (NULL): the call reached a new stage (a stall bound counts
   * from here). */
  void (*moved)(switchagg_nb_call_t *call);
} switchagg_nb_host_t;

void switchagg_nb_call_init(switchagg_nb_call_t *call, switchagg_coll_comm_t *core, void *owner,
                            int kind);
int switchagg_nb_call_stage(const switchagg_nb_call_t *call);

/* Appends `call`; 1 when the queue was empty (the call is its head). */
int switchagg_nb_queue_push(switchagg_nb_queue_t *queue, switchagg_nb_call_t *call);
/* Takes the head off (the head must be there). */
void switchagg_nb_queue_pop(switchagg_nb_queue_t *queue);
/* The head or NULL; safe without the host's lock. */
switchagg_nb_call_t *switchagg_nb_queue_head(const switchagg_nb_queue_t *queue);

/* Moves `call`, its queue's head, on as far as it can without waiting
 * (the host's lock need not be held: only the thread that steps a queue
 * pops it): 1 when it changed stage or ended (try again: the next call may
 * start at once), 0 when it waits (for the agent, the host, or a blocking
 * call on this process). */
int switchagg_nb_step(switchagg_nb_call_t *call, const switchagg_nb_host_t *host);

/* Counts `what` on the call's own counters (iallreduce:*, ibarrier:*,
 * iallgather:*, ...; switchagg_coll_inote). */
void switchagg_nb_note(const switchagg_nb_call_t *call, const char *what);
/* The redo on the communicator's own transport (switchagg_coll_iredo_host,
 * iallreduce.h), for a host that has no MPI of its own to redo with:
 * DONE or ERROR. */
int switchagg_nb_redo_host(switchagg_nb_call_t *call);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHAGG_NONBLOCKING_ENGINE_H */
