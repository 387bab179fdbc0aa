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

--mode fsdp shards the weights as FSDP / ZeRO-3 do: each rank keeps 1/p of
every bucket; the gradients go through comm.Reduce_scatter_block (each rank
gets its shard's sum, updates just that shard) and the weights come back
with comm.Allgather. --overlap runs the same calls nonblocking
(Ireduce_scatter_block per bucket as soon as it is packed, Iallgather
prefetched while the next batch is drawn). The arithmetic is the
allreduce mode's (sum, then / p, then SGD), so the loss curves agree.

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
    p.add_argument("--mode", choices=["allreduce", "fsdp"], default="allreduce")
    p.add_argument("--overlap", action="store_true",
                   help="fsdp: nonblocking Ireduce_scatter_block / Iallgather")
    args = p.parse_args()
    if args.overlap and args.mode != "fsdp":
        p.error("--overlap needs --mode fsdp")
    return args


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


class Sharded:
    """FSDP's view of the model: per bucket a flat float32 vector padded to
    p * shard, of which this rank owns [rank * shard, (rank + 1) * shard)."""

    def __init__(self, comm, model, buckets):
        self.comm, self.model, self.buckets = comm, model, buckets
        p, r = comm.Get_size(), comm.Get_rank()
        self.shard, self.mine, self.full, self.summed = [], [], [], []
        for names in buckets:
            n = sum(model.params[k].size for k in names)
            shard = -(-n // p)
            full = np.zeros(shard * p, np.float32)
            full[:n] = np.concatenate([model.params[k].ravel() for k in names])
            self.shard.append(shard)
            self.full.append(full)
            self.mine.append(full[r * shard:(r + 1) * shard].copy())
            self.summed.append(np.zeros(shard, np.float32))

    def _unpack(self, i):
        offset = 0
        for k in self.buckets[i]:
            size = self.model.params[k].size
            self.model.params[k] = self.full[i][offset:offset + size].reshape(
                self.model.params[k].shape).copy()
            offset += size

    def _pack_grads(self, i, grads):
        flat = np.concatenate([grads[k].ravel() for k in self.buckets[i]])
        self.full[i][:] = 0
        self.full[i][:flat.size] = flat

    def _update(self, i, lr):
        g = self.summed[i] / np.float32(self.comm.Get_size())
        self.mine[i] -= np.float32(lr) * g

    def step(self, grads, lr, overlap):
        """Reduce-scatter the gradients, update the shards, gather the weights."""
        if not overlap:
            for i in range(len(self.buckets)):
                self._pack_grads(i, grads)
                self.comm.Reduce_scatter_block(self.full[i], self.summed[i], op=MPI.SUM)
                self._update(i, lr)
                self.comm.Allgather(self.mine[i], self.full[i])
                self._unpack(i)
            return
        reqs = []
        for i in range(len(self.buckets)):  # posted bucket by bucket, in order
            self._pack_grads(i, grads)
            reqs.append(self.comm.Ireduce_scatter_block(self.full[i], self.summed[i], op=MPI.SUM))
        gathers = []
        for i, req in enumerate(reqs):
            req.Wait()
            self._update(i, lr)
            gathers.append(self.comm.Iallgather(self.mine[i], self.full[i]))
        self.pending = gathers

    def wait_gathered(self):
        """--overlap: the weights' prefetch, awaited before the next forward pass."""
        for i, req in enumerate(getattr(self, "pending", [])):
            req.Wait()
            self._unpack(i)
        self.pending = []


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
    sharded = Sharded(comm, model, buckets) if args.mode == "fsdp" else None
    if rank == 0 and sharded:
        print(f"mode fsdp{' (overlapped)' if args.overlap else ''}: "
              f"{sum(sharded.shard)} parameters per rank's shard")
    for step in range(args.steps):
        x, y = shard(rank, args.features, args.batch, step)  # drawn while the prefetch runs
        if sharded:
            sharded.wait_gathered()
        loss, grads = model.loss_and_grads(x, y)
        if sharded:
            sharded.step(grads, args.lr, args.overlap)
            paths = ["sharded"]
        else:
            paths = average_gradients(comm, grads, buckets)
            for name, g in grads.items():
                model.params[name] -= args.lr * g
        mean_loss = comm.allreduce(loss, op=MPI.SUM) / comm.Get_size()
        if rank == 0:
            print(f"step {step:3d}  loss {mean_loss:.6f}  buckets: {' '.join(paths)}")
    if sharded:
        sharded.wait_gathered()
        # Who served the shards' collectives (switchagg's counters; None
        # without the component).
        served = {k: switchagg_path.counter(comm, k) for k in (
            "reduce_scatter_block:switch", "reduce_scatter_block:previous",
            "allgather:switch", "allgather:previous",
            "ireduce_scatter_block:switch", "ireduce_scatter_block:previous",
            "iallgather:switch", "iallgather:previous")}
        if rank == 0:
            print("served: " + " ".join(f"{k}={v}" for k, v in served.items()))
    if rank == 0:
        print(f"final loss: {mean_loss:.6f}")


if __name__ == "__main__":
    main()
