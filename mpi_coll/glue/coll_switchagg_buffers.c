/* What a caller's buffer is: device memory or host memory, and its byte
 * image (docs/offload.md "Routed collectives"): whether `count` elements
 * of a datatype are one plain run of bytes, how many bytes they hold, and
 * MPI_Pack / MPI_Unpack to and from a staged image. Used by the blocking
 * and the nonblocking calls alike. */
#include "coll_switchagg.h"

#include "ompi/datatype/ompi_datatype.h"

#if OPAL_CUDA_SUPPORT
#include "opal/datatype/opal_datatype_cuda.h"
#endif

/* Open MPI built CUDA-aware hands device pointers to coll components as it
 * does host ones; the host kernels must never read them. opal_cuda_check_bufs
 * is the check Open MPI's own coll/cuda makes (false when no GPU runtime is
 * loaded). Without CUDA support every buffer is host memory. */
bool mca_coll_switchagg_device_buffers(const void *sbuf, void *rbuf) {
#if OPAL_CUDA_SUPPORT
  char *send = (MPI_IN_PLACE == sbuf || NULL == sbuf) ? (char *)rbuf : (char *)sbuf;
  return NULL != rbuf && opal_cuda_check_bufs((char *)rbuf, send);
#else
  (void)sbuf;
  (void)rbuf;
  return false;
#endif
}

bool mca_coll_switchagg_plain_bytes(struct ompi_datatype_t *dt, int count) {
  return count == 0 ||
         (ompi_datatype_is_contiguous_memory_layout(dt, count) && dt->super.true_lb == 0);
}

size_t mca_coll_switchagg_type_bytes(struct ompi_datatype_t *dt, int count) {
  size_t size = 0;
  ompi_datatype_type_size(dt, &size);
  return count > 0 ? size * (size_t)count : 0;
}

ptrdiff_t mca_coll_switchagg_type_extent(struct ompi_datatype_t *dt) {
  ptrdiff_t lb = 0, extent = 0;
  ompi_datatype_get_extent(dt, &lb, &extent);
  return extent;
}

int mca_coll_switchagg_pack(const void *buf, int count, struct ompi_datatype_t *dt, void *staged,
                            size_t bytes, struct ompi_communicator_t *comm) {
  int position = 0;
  return PMPI_Pack(buf, count, dt, staged, (int)bytes, &position, comm);
}

int mca_coll_switchagg_unpack(const void *staged, size_t bytes, void *buf, int count,
                              struct ompi_datatype_t *dt, struct ompi_communicator_t *comm) {
  int position = 0;
  return PMPI_Unpack(staged, (int)bytes, &position, buf, count, dt, comm);
}
