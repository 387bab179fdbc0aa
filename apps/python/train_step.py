#!/usr/bin/env python3
"""A data-parallel training step in NumPy + mpi4py, the way PyTorch's MPI
backend averages gradients: the gradients are flattened into buckets of at
most --bucket-kb (last layer first, as DDP fills them while backprop runs),
each bucket is summed in place with comm.Allreduce(MPI.IN_PLACE, bucket) on
float32, then divided by the number of ranks.

Each rank trains the same two-layer network on its own shard of a fixed
synthetic regression problem. Rank 0 prints the loss per step and which
allreduce path served each bucket (switchagg's diagnostics; "n/a" without
the component).

  mpirun -np 4 python3 apps/python/train_step.py --steps 20
  srun --switch-agg=auto -n 4 --mpi=pmix python3 apps/python/train_step.py

mpi4py initialises MPI at MPI_THREAD_MULTIPLE by default, which switchagg
serves like every other thread level.
"""
import argparse
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import switchagg_path  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--hidden", type=int, default=256, help="hidden layer width")
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--bucket-kb", type=int, default=64, help="gradient bucket cap (KiB)")
    p.add_argument("--lr", type=float, default=0.02)
    return p.parse_args()


class Model:
    """y = W2 relu(W1 x + b1) + b2, float32 like a framework's tensors."""

    def __init__(self, features, hidden, seed=1):
        rng = np.random.default_rng(seed)  # same weights on every rank
        self.params = {
            "w1": (rng.standard_normal((hidden, features)) / np.sqrt(features)).astype(np.float32),
            "b1": np.zeros(hidden, np.float32),
            "w2": (rng.standard_normal((1, hidden)) / np.sqrt(hidden)).astype(np.float32),
            "b2": np.zeros(1, np.float32),
        }

    def loss_and_grads(self, x, y):
        p = self.params
        h = x @ p["w1"].T + p["b1"]
        a = np.maximum(h, 0)
        out = (a @ p["w2"].T + p["b2"]).ravel()
        err = out - y
        loss = float(np.mean(err * err))
        d_out = (2.0 / len(y)) * err[:, None].astype(np.float32)
        grads = {"w2": d_out.T @ a, "b2": d_out.sum(0)}
        d_h = (d_out @ p["w2"]) * (h > 0)
        grads["w1"] = d_h.T @ x
        grads["b1"] = d_h.sum(0)
        return loss, {k: v.astype(np.float32) for k, v in grads.items()}


def make_buckets(model, cap_bytes):
    """Parameter names per bucket, last layer first (DDP's order)."""
    buckets, current, size = [], [], 0
    for name in reversed(list(model.params)):
        nbytes = model.params[name].nbytes
        if current and size + nbytes > cap_bytes:
            buckets.append(current)
            current, size = [], 0
        current.append(name)
        size += nbytes
    if current:
        buckets.append(current)
    return buckets


def average_gradients(comm, grads, buckets):
    """In-place float32 allreduce per bucket; returns the path of each."""
    paths = []
    for names in buckets:
        flat = np.concatenate([grads[n].ravel() for n in names])
        comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
        paths.append(switchagg_path.last_path(comm) or "n/a")
        flat /= comm.Get_size()
        offset = 0
        for n in names:
            size = grads[n].size
            grads[n] = flat[offset:offset + size].reshape(grads[n].shape)
            offset += size
    return paths


def shard(rank, features, batch, step):
    """This rank's batch for a step of a fixed regression problem."""
    rng = np.random.default_rng(1000 * step + rank + 7)
    x = rng.standard_normal((batch, features)).astype(np.float32)
    truth = np.sin(np.arange(features, dtype=np.float32))
    y = (np.tanh(x @ truth / np.sqrt(features)) * 2).astype(np.float32)
    return x, y


def main():
    args = parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    model = Model(args.features, args.hidden)
    buckets = make_buckets(model, args.bucket_kb * 1024)
    if rank == 0:
        sizes = [sum(model.params[n].nbytes for n in b) for b in buckets]
        print(f"{comm.Get_size()} ranks, thread level {MPI.Query_thread()}, "
              f"{len(buckets)} buckets of {sizes} bytes")
    for step in range(args.steps):
        x, y = shard(rank, args.features, args.batch, step)
        loss, grads = model.loss_and_grads(x, y)
        paths = average_gradients(comm, grads, buckets)
        for name, g in grads.items():
            model.params[name] -= args.lr * g
        mean_loss = comm.allreduce(loss, op=MPI.SUM) / comm.Get_size()
        if rank == 0:
            print(f"step {step:3d}  loss {mean_loss:.6f}  buckets: {' '.join(paths)}")
    if rank == 0:
        print(f"final loss: {mean_loss:.6f}")


if __name__ == "__main__":
    main()
