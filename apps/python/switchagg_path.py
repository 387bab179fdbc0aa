"""Which path served a communicator's last MPI_Allreduce, from Python.

The switchagg coll component exports two C functions (see
mpi_coll/include/switchagg/coll/diagnostics.h); Open MPI loads the component
into the global symbol scope, so ctypes finds them in the running process.
Without the component (another MPI, or coll_switchagg_enable=0) both
functions answer None.
"""
import ctypes

from mpi4py import MPI

_process = ctypes.CDLL(None)


def _lookup(name, restype, *argtypes):
    try:
        fn = getattr(_process, name)
    except AttributeError:
        return None
    fn.argtypes = [ctypes.c_void_p, *argtypes]  # an MPI_Comm is a pointer in Open MPI
    fn.restype = restype
    return fn


_last = _lookup("switchagg_coll_last_algorithm", ctypes.c_char_p)
_counter = _lookup("switchagg_coll_comm_counter", ctypes.c_uint64, ctypes.c_char_p)
_NOT_SERVED = 2**64 - 1


def last_path(comm):
    """'ring', 'switch', 'previous', ... or None when switchagg is not used."""
    if _last is None:
        return None
    name = _last(MPI._handleof(comm))
    return name.decode() if name else None


def counter(comm, name):
    """A per-communicator counter ('switch', 'ring', 'fallback', ...), or
    None when switchagg does not serve allreduce on comm."""
    if _counter is None:
        return None
    value = _counter(MPI._handleof(comm), name.encode())
    return None if value == _NOT_SERVED else value
