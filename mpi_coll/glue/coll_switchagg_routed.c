/* MPI_Reduce, MPI_Reduce_scatter, MPI_Reduce_scatter_block, MPI_Allgather
 * and MPI_Bcast (docs/offload.md "Routed collectives"): the core routes the
 * call through the switch agent or declines, and a declined call (also one
 * the core redid after a busy refusal or a failure: the input is intact)
 * goes to the previous module with the caller's arguments.
 *
 * Every rank must reach the core, or not, alike:
 * - reductions: MPI requires the same datatype and op on every rank, so
 *   switchagg_mpi_classify answers alike; anything it does not serve
 *   goes to the previous module, counted as <op>:previous:<reason>;
 * - allgather and bcast: ranks may describe the same bytes with different
 *   datatypes (MPI_INT x 4 on one, a contiguous type on another), so the
 *   decision may depend only on the byte count, alike everywhere: a buffer
 *   whose datatype is not one plain run of bytes is packed into (and
 *   unpacked from) a contiguous staging buffer with MPI_Pack, never sent
 *   elsewhere. Blocks above INT_MAX bytes (MPI_Pack's limit) go to the
 *   previous module on every rank.
 * Queued MPI_Iallreduce calls complete first (they share the agent group). */
#include "coll_switchagg.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"


/* After the previous module served a routed call: online tuning times it
 * when the core handed it back to measure it (a no-op otherwise). */
static int previous_done(mca_coll_switchagg_module_t *m, int kind, int rc) {
  if (OMPI_SUCCESS == rc && NULL != m->core &&
      0 != switchagg_coll_routed_previous_done(m->core, kind))
    return MPI_ERR_OTHER;
  return rc;
}

/* The reductions' common classification: NULL and the core's codes, or why
 * the previous module serves (counted). */
static const char *classify_reduction(const void *sbuf, void *rbuf,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      int *sa_dtype, int *sa_op, int *flags, int *scale) {
  const char *why = switchagg_mpi_classify(dtype, op, sa_dtype, sa_op, flags, scale);
  if (NULL == why && mca_coll_switchagg_device_buffers(sbuf, rbuf)) why = "device memory";
  return why;
}

int mca_coll_switchagg_reduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1;
  if (NULL == m->previous_reduce) return OMPI_ERR_NOT_SUPPORTED;
  mca_coll_switchagg_iallreduce_drain(m);
  if (NULL != m->core && count >= 0) {
    const char *why =
        classify_reduction(sbuf, rbuf, dtype, op, &sa_dtype, &sa_op, &flags, &scale);
    if (NULL == why) {
      int rc = switchagg_coll_reduce(m->core, MPI_IN_PLACE == sbuf ? NULL : sbuf, rbuf,
                                     (size_t)count * (size_t)scale, sa_dtype, sa_op, root, flags);
      if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
    } else {
      switchagg_coll_note_routed_fallback(m->core, SWITCHAGG_COLL_REDUCE, why);
    }
  }
  return previous_done(m, SWITCHAGG_COLL_REDUCE,
                       m->previous_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                                          m->previous_reduce_module));
}

/* Both reduce-scatters: counts[r] elements for rank r (block: all equal). */
static int reduce_scatter_core(mca_coll_switchagg_module_t *m, const void *sbuf, void *rbuf,
                               const int *rcounts, int block_count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, int kind) {
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, rc, r;
  const int size = ompi_comm_size(comm);
  size_t stack_counts[64], *counts = stack_counts;
  const char *why;
  if (NULL == m->core) return SWITCHAGG_OUTCOME_DECLINED;
  why = classify_reduction(sbuf, rbuf, dtype, op, &sa_dtype, &sa_op, &flags, &scale);
  if (NULL != why) {
    switchagg_coll_note_routed_fallback(m->core, kind, why);
    return SWITCHAGG_OUTCOME_DECLINED;
  }
  if (size > 64 && NULL == (counts = (size_t *)malloc(sizeof(size_t) * (size_t)size)))
    return SWITCHAGG_OUTCOME_ERROR;
  for (r = 0; r < size; ++r)
    counts[r] = (size_t)(NULL != rcounts ? rcounts[r] : block_count) * (size_t)scale;
  if (SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK == kind) flags |= SWITCHAGG_COLL_BLOCK;
  rc = switchagg_coll_reduce_scatter(m->core, MPI_IN_PLACE == sbuf ? NULL : sbuf, rbuf, counts,
                                     sa_dtype, sa_op, flags);
  if (counts != stack_counts) free(counts);
  return rc;
}

int mca_coll_switchagg_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  int rc;
  if (NULL == m->previous_reduce_scatter) return OMPI_ERR_NOT_SUPPORTED;
  mca_coll_switchagg_iallreduce_drain(m);
  rc = reduce_scatter_core(m, sbuf, rbuf, rcounts, 0, dtype, op, comm,
                           SWITCHAGG_COLL_REDUCE_SCATTER);
  if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
  return previous_done(m, SWITCHAGG_COLL_REDUCE_SCATTER,
                       m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                                  m->previous_reduce_scatter_module));
}

int mca_coll_switchagg_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                            struct ompi_communicator_t *comm,
                                            mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  int rc;
  if (NULL == m->previous_reduce_scatter_block) return OMPI_ERR_NOT_SUPPORTED;
  mca_coll_switchagg_iallreduce_drain(m);
  rc = reduce_scatter_core(m, sbuf, rbuf, NULL, rcount, dtype, op, comm,
                           SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK);
  if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
  return previous_done(m, SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK,
                       m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                        m->previous_reduce_scatter_block_module));
}

int mca_coll_switchagg_bcast(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  const size_t bytes = mca_coll_switchagg_type_bytes(datatype, count);
  if (NULL == m->previous_bcast) return OMPI_ERR_NOT_SUPPORTED;
  mca_coll_switchagg_iallreduce_drain(m);
  if (NULL != m->core && bytes <= INT_MAX) {
    int rc;
    if (mca_coll_switchagg_device_buffers(NULL, buff)) {
      switchagg_coll_note_routed_fallback(m->core, SWITCHAGG_COLL_BCAST, "device memory");
    } else if (mca_coll_switchagg_plain_bytes(datatype, count)) {
      rc = switchagg_coll_bcast(m->core, buff, bytes, root);
      if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
    } else {
      const bool is_root = ompi_comm_rank(comm) == root;
      void *staged = malloc(bytes > 0 ? bytes : 1);
      if (NULL == staged) return MPI_ERR_NO_MEM;
      if (is_root &&
          MPI_SUCCESS != mca_coll_switchagg_pack(buff, count, datatype, staged, bytes, comm)) {
        free(staged);
        return MPI_ERR_OTHER;
      }
      rc = switchagg_coll_bcast(m->core, staged, bytes, root);
      if (SWITCHAGG_OUTCOME_DONE == rc && !is_root &&
          MPI_SUCCESS != mca_coll_switchagg_unpack(staged, bytes, buff, count, datatype, comm))
        rc = SWITCHAGG_OUTCOME_ERROR;
      free(staged);
      if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
    }
  } else if (NULL != m->core) {
    switchagg_coll_note_routed_fallback(m->core, SWITCHAGG_COLL_BCAST, "over INT_MAX bytes");
  }
  return previous_done(m, SWITCHAGG_COLL_BCAST,
                       m->previous_bcast(buff, count, datatype, root, comm,
                                         m->previous_bcast_module));
}

/* The core's allgather on byte images: the caller's buffers where they are
 * plain, else packed / unpacked through staging. */
static int allgather_core(mca_coll_switchagg_module_t *m, const void *sbuf, int scount,
                          struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          size_t block) {
  const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
  const bool in_place = MPI_IN_PLACE == sbuf;
  const bool plain_recv = mca_coll_switchagg_plain_bytes(rdtype, rcount);
  const ptrdiff_t rstride = mca_coll_switchagg_type_extent(rdtype) * (ptrdiff_t)rcount;
  char *rblock = (char *)rbuf + rank * rstride; /* this rank's block in rbuf */
  void *send_image = NULL, *recv_image = rbuf, *staged_send = NULL, *staged_recv = NULL;
  int rc = SWITCHAGG_OUTCOME_ERROR, r;

  if (!plain_recv) {
    staged_recv = malloc((size_t)size * block);
    if (NULL == staged_recv) return SWITCHAGG_OUTCOME_ERROR;
    recv_image = staged_recv;
  }
  if (in_place) {
    if (!plain_recv) {
      /* Our block from rbuf into its place in the staged image. */
      if (MPI_SUCCESS != mca_coll_switchagg_pack(rblock, rcount, rdtype,
                                                 (char *)staged_recv + (size_t)rank * block,
                                                 block, comm))
        goto out;
    }
    send_image = NULL;
  } else if (mca_coll_switchagg_plain_bytes(sdtype, scount)) {
    send_image = (void *)sbuf;
  } else {
    staged_send = malloc(block);
    if (NULL == staged_send ||
        MPI_SUCCESS != mca_coll_switchagg_pack(sbuf, scount, sdtype, staged_send, block, comm))
      goto out;
    send_image = staged_send;
  }
  rc = switchagg_coll_allgather(m->core, send_image, recv_image, block);
  for (r = 0; SWITCHAGG_OUTCOME_DONE == rc && !plain_recv && r < size; ++r)
    if (MPI_SUCCESS != mca_coll_switchagg_unpack((char *)staged_recv + (size_t)r * block, block,
                                                 (char *)rbuf + r * rstride, rcount, rdtype,
                                                 comm))
      rc = SWITCHAGG_OUTCOME_ERROR;
out:
  free(staged_send);
  free(staged_recv);
  return rc;
}

int mca_coll_switchagg_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                 void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  /* The receive side's block: every rank's signatures match, so every rank
   * sees the same byte count. */
  const size_t block = mca_coll_switchagg_type_bytes(rdtype, rcount);
  mca_coll_switchagg_iallreduce_drain(m);
  if (NULL != m->core && block <= INT_MAX) {
    if (mca_coll_switchagg_device_buffers(sbuf, rbuf)) {
      switchagg_coll_note_routed_fallback(m->core, SWITCHAGG_COLL_ALLGATHER, "device memory");
    } else {
      int rc = allgather_core(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, block);
      if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
    }
  } else if (NULL != m->core) {
    switchagg_coll_note_routed_fallback(m->core, SWITCHAGG_COLL_ALLGATHER, "over INT_MAX bytes");
  }
  /* The previous module's allgather, as the core's own agreements use it. */
  return previous_done(m, SWITCHAGG_COLL_ALLGATHER,
                       m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                             m->previous_allgather_module));
}
