#!/usr/bin/env python3
"""mpi4py at its default thread level (MPI_THREAD_MULTIPLE) through
switchagg: exact float32/float64/int32/complex64/complex128 results (NumPy
complex arrays are MPI_C_FLOAT_COMPLEX / MPI_C_DOUBLE_COMPLEX; integer
values, so sums are exact in any order), in place and not, on COMM_WORLD;
then two Python
threads, each on its own duplicate of COMM_WORLD, at the same time. Every
call must be served by --expect (the component's counters and last path
say so).

  mpirun -np 2 python3 python_check.py --expect ring|switch [--iters N]

Prints PASS on rank 0; exits 1 after printing what failed.
"""
import argparse
import os
import sys
import threading

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../apps/python"))
import switchagg_path  # noqa: E402

COUNTS = [1, 5, 1000, 40000]
DTYPES = [np.float32, np.float64, np.int32, np.complex64, np.complex128]


def contribution(rank, salt, count, dtype):
    values = (np.arange(count) * 7 + rank * 13 + salt) % 101 - 50
    if np.issubdtype(dtype, np.complexfloating):
        return (values - 2j * values).astype(dtype)
    return values.astype(dtype)


def check_calls(comm, salt, iters, expect, failures):
    rank, size = comm.Get_rank(), comm.Get_size()
    for k in range(iters):
        count, dtype = COUNTS[k % len(COUNTS)], DTYPES[(k // len(COUNTS)) % len(DTYPES)]
        mine = contribution(rank, salt + k, count, dtype)
        wide = np.complex128 if np.issubdtype(dtype, np.complexfloating) else np.int64
        want = sum(contribution(r, salt + k, count, wide) for r in range(size)).astype(dtype)
        if k % 2:
            got = mine.copy()
            comm.Allreduce(MPI.IN_PLACE, got, op=MPI.SUM)
        else:
            got = np.empty_like(mine)
            comm.Allreduce(mine, got, op=MPI.SUM)
        path = switchagg_path.last_path(comm)
        if not np.array_equal(got, want):
            failures.append(f"rank {rank} salt {salt} call {k}: wrong {dtype.__name__} result")
        if path != expect:
            failures.append(f"rank {rank} salt {salt} call {k}: served by {path}, expected {expect}")
        if len(failures) > 5:
            return


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--expect", required=True)
    p.add_argument("--iters", type=int, default=200)
    args = p.parse_args()
    world = MPI.COMM_WORLD
    failures = []
    if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        failures.append(f"thread level {MPI.Query_thread()}, mpi4py's default is MULTIPLE")
    check_calls(world, 0, args.iters, args.expect, failures)
    served = switchagg_path.counter(world, args.expect)
    if served != args.iters:
        failures.append(f"COMM_WORLD: {args.expect} counted {served} calls of {args.iters}")

    comms = [world.Dup() for _ in range(2)]
    threads = [threading.Thread(target=check_calls, args=(c, 100 * (i + 1), args.iters,
                                                          args.expect, failures))
               for i, c in enumerate(comms)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, c in enumerate(comms):
        served = switchagg_path.counter(c, args.expect)
        if served != args.iters:
            failures.append(f"thread {i}: {args.expect} counted {served} calls of {args.iters}")
        c.Free()

    for f in failures[:10]:
        print("FAIL", f, flush=True)
    total = world.allreduce(len(failures))
    if world.Get_rank() == 0 and total == 0:
        print(f"PASS mpi4py at MPI_THREAD_MULTIPLE: {world.Get_size()} ranks, "
              f"{args.iters} calls on COMM_WORLD then 2 threads x {args.iters} calls, "
              f"served by {args.expect}")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
