#!/usr/bin/env python3
"""Renders benchmarks/results/agent.md from agent_bench.sh's raw outputs."""
import json
import re
import statistics
import sys
import time

tmp, vec_bytes, iters, reps, load_before, load_after, ncpu = sys.argv[1:8]


def kernels():
    data = json.load(open(f"{tmp}/kernels.json"))
    rates = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        rates[b["run_name"]] = b["bytes_per_second"] / 1e9
    return rates, data.get("context", {})


def kernel_table(rates):
    rows = ["| dtype | buffer | kernel GB/s | plain `a[i]+=b[i]` GB/s | kernel / plain | memcpy GB/s |",
            "| --- | --- | ---: | ---: | ---: | ---: |"]
    for t, name in (("int32_t", "int32"), ("int64_t", "int64"), ("float", "float32"),
                    ("double", "float64")):
        for size, label in (("262144", "256 KiB (cache)"), ("33554432", "32 MiB (memory)")):
            k = rates.get(f"kernelSum<{t}>/{size}")
            p = rates.get(f"plainLoop<{t}>/{size}")
            m = rates.get(f"memcpyBench/{size}")
            if k is None or p is None:
                continue
            rows.append(f"| {name} sum | {label} | {k:.1f} | {p:.1f} | {k / p:.0%} | {m:.1f} |")
    for t, name in (("float", "float32"), ("int32_t", "int32")):
        for size, label in (("262144", "256 KiB (cache)"), ("33554432", "32 MiB (memory)")):
            k = rates.get(f"kernelMax<{t}>/{size}")
            if k is not None:
                rows.append(f"| {name} max | {label} | {k:.1f} | – | – | – |")
    return "\n".join(rows)


def client_lines(label, n):
    out = []
    try:
        for line in open(f"{tmp}/e2e_{label}_{n}.txt"):
            if not line.startswith("transports="):
                continue  # e.g. UCX warnings, which UCX prints on stdout
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            out.append(f)
    except FileNotFoundError:
        pass
    tls = ""
    try:
        m = re.search(r"transports=(.*?) rank=", open(f"{tmp}/e2e_{label}_{n}.txt").read())
        tls = m.group(1) if m else ""
    except FileNotFoundError:
        pass
    return out, tls


def perftest(label):
    try:
        v = open(f"{tmp}/perftest_{label}.txt").read().split()
        return float(v[0]) * 1.048576 if v else None  # MiB/s -> MB/s
    except (FileNotFoundError, ValueError):
        return None


def agent_cpu(label, n):
    try:
        ticks, hz = open(f"{tmp}/cpu_{label}_{n}.txt").read().split()
        gb_in = n * float(vec_bytes) * (int(iters) + 2) / 1e9
        return f"{int(ticks) / int(hz) / gb_in:.2f}"
    except (FileNotFoundError, ValueError):
        return "–"


def e2e_table():
    rows = ["| UCX_TLS allowed | clients | data-plane lanes | median time / allreduce | "
            "goodput per client MB/s | agent goodput MB/s (all clients) | ucx_perftest AM bw MB/s | "
            "agent / perftest | agent CPU s per GB in |",
            "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, tls_name in (("tcp", "tcp"), ("shm", "posix,sysv,cma,self,tcp")):
        pt = perftest(label)
        for n in (2, 4, 8):
            lines, lanes = client_lines(label, n)
            if len(lines) != n:
                rows.append(f"| {tls_name} | {n} | – | failed ({len(lines)} of {n} clients) | | | | |")
                continue
            med_us = statistics.median(float(f["median_us"]) for f in lines)
            per = float(vec_bytes) / med_us  # bytes/us == MB/s
            agg = per * n
            ratio = f"{agg / pt:.0%}" if pt else "–"
            pts = f"{pt:.0f}" if pt else "–"
            rows.append(f"| {tls_name} | {n} | {lanes} | {med_us / 1000:.2f} ms | {per:.0f} | "
                        f"{agg:.0f} | {pts} | {ratio} | {agent_cpu(label, n)} |")
    return "\n".join(rows)


rates, ctx = kernels()
slot1 = rates.get("slotReduce/8388608/1/real_time")
slot2 = rates.get("slotReduce/8388608/2/real_time")
print(f"""# Agent data plane: kernels and end-to-end goodput

Measured {time.strftime('%Y-%m-%d %H:%M')} on this machine ({ncpu} cores,
{ctx.get('mhz_per_cpu', '?')} MHz), shared with the other engineers' builds and
tests: load average {load_before} before, {load_after} after. Medians of
{reps} repetitions (kernels) / {iters} timed allreduces after 2 warm-ups
(end to end). Reproduce: `benchmarks/agent_bench.sh [BUILD_DIR]`.

## Reduction kernels alone (one core)

GB/s of input reduced per second of CPU time (`inout[i] = inout[i] op in[i]`:
reads 2, writes 1 element per input element), Google Benchmark,
`switchagg::reduceInto` (common/src/reduce.cc, built -O3) against the
same loop written plainly at -O3 and against memcpy.

{kernel_table(rates)}

One agent slot (4 contributions x 8 MiB float32, result = c0+c1+c2+c3 in rank
order, 64 KiB pieces on the agent's ReducePool), wall-clock rate of input
reduced: 1 thread {slot1 or 0:.1f} GB/s, 2 threads {slot2 or 0:.1f} GB/s.

## End to end: agent goodput

Every client is one member of one group (float32 SUM of {int(vec_bytes) >> 20} MiB, lease of
8 slots x 256 KiB, so a window of 2 MiB in flight per client), all clients on
this machine with the agent. Goodput per client = vector bytes / median time
of one allreduce; agent goodput = clients x that (input bytes the agent
reduces per second; it also sends as many back). ucx_perftest: `ucp_am_bw`,
256 KiB messages, one pair, busy-polling, same UCX_TLS. Agent CPU = the
agent process's user+system time over the run / input bytes it reduced (a
rate that does not depend on how busy the machine was).

{e2e_table()}

{open(sys.argv[8]).read() if len(sys.argv) > 8 else ''}
""")
