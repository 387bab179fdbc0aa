#!/usr/bin/env bash
# The agent's reduction at its slot size (256 KiB, in cache), in one run ->
# benchmarks/results/agent_kernels.md:
#   1. every dtype's SUM kernel against a plain `a[i] += b[i]` loop, on
#      separately allocated buffers and on the agent's SlotBuffers layout;
#   2. the same one-vector loop placed inside a 64-byte line vs across one;
#   3. one slot (4 members, rank order) on the agent's ReducePool (one
#      reduceMany pass per block, and the pairwise chain it replaced) against
#      OpenMP (`parallel for` over the same pieces, and `parallel for simd`
#      over the elements in one pass), OMP_WAIT_POLICY=passive;
#   4. the same with OpenMP's threads spinning (OMP_WAIT_POLICY=active).
# Every case of a run is interleaved with the others (Google Benchmark's random
# interleaving), REPS repetitions, medians; CPU time for one-core cases,
# wall-clock for the slot reductions.
#
#   benchmarks/kernel_slot_bench.sh [BUILD_DIR]   (default: build-bench, configured if missing)
#   KERNEL_BENCH_REPS=15 (env knob)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
reps=${KERNEL_BENCH_REPS:-15}
out=$root/benchmarks/results/agent_kernels.md

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWITCHAGG_BUILD_MPI=OFF \
    -DSWITCHAGG_BUILD_SPANK=OFF -DSWITCHAGG_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target agent_kernel_bench >/dev/null
bench=$build/bin/agent_kernel_bench
tmp=$(mktemp -d /tmp/kernel_slot_bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

run() {  # $1 = output name, $2 = filter, $3 = OMP_WAIT_POLICY
  OMP_WAIT_POLICY=$3 "$bench" --benchmark_filter="$2" --benchmark_repetitions="$reps" \
    --benchmark_enable_random_interleaving=true --benchmark_min_time=0.05 \
    --benchmark_report_aggregates_only=true --benchmark_format=json >"$tmp/$1.json" 2>/dev/null
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "kernel_slot_bench: kernels at the slot size" >&2
run kernels '^(kernelSum|plainLoop)<.*>/262144$|^slot(Kernel|Plain)|^placedLoop' passive
echo "kernel_slot_bench: slot reduction, pool vs OpenMP (passive)" >&2
run slot '^slotReduce' passive
echo "kernel_slot_bench: slot reduction, OpenMP spinning" >&2
run spin '^slotReduce(Omp)?/' active
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$tmp" "$reps" "$load_before" "$load_after" "$(nproc)" >"$out" <<'EOF'
import json, sys, time
tmp, reps, load_before, load_after, ncpu = sys.argv[1:6]

def rates(name):
    data = json.load(open(f"{tmp}/{name}.json"))
    r = {b["run_name"]: b["bytes_per_second"] / 1e9
         for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
    return r, data.get("context", {})

k, ctx = rates("kernels")
s, _ = rates("slot")
a, _ = rates("spin")
types = (("int32_t", "int32"), ("int64_t", "int64"), ("float", "float32"), ("double", "float64"))
print(f"""# The agent's reduction at its slot size: kernels, layout, OpenMP

Measured {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC on this machine ({ncpu} cores,
{ctx.get('mhz_per_cpu', '?')} MHz), shared with other engineers' builds and tests: load average
{load_before} before, {load_after} after. Every case of a table comes from one run in
which all its cases were interleaved (random interleaving), medians of {reps} repetitions.
Reproduce: `benchmarks/kernel_slot_bench.sh [BUILD_DIR]` (`benchmarks/agent_kernel_bench.cc`).

## Every dtype at the slot size (256 KiB, one core)

GB/s of input reduced per second of CPU time, `switchagg::reduceInto` SUM against
a plain `a[i] += b[i]` loop at -O3, on two separately allocated buffers
(`std::vector`) and on the agent's own layout (a slot's result and contribution
0 from one `SlotBuffers` allocation, `slot_bytes` apart, so 4 KiB-congruent).

| dtype | kernel, separate | plain, separate | kernel / plain | kernel, agent layout | plain, agent layout | kernel / plain | agent layout / separate (kernel) |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |""")
for t, name in types:
    ks, ps = k[f"slotKernel<{t}>/262144/0"], k[f"slotPlain<{t}>/262144/0"]
    ka, pa = k[f"slotKernel<{t}>/262144/1"], k[f"slotPlain<{t}>/262144/1"]
    print(f"| {name} | {ks:.1f} | {ps:.1f} | {ks / ps:.0%} | {ka:.1f} | {pa:.1f} | {ka / pa:.0%} | {ka / ks:.2f} |")
print("""
The `kernelSum` / `plainLoop` cases of `benchmarks/agent_bench.sh` (the same
kernels on their own buffers) in the same run:

| dtype | kernel | plain | kernel / plain |
| --- | ---: | ---: | ---: |""")
for t, name in types:
    ks, ps = k[f"kernelSum<{t}>/262144"], k[f"plainLoop<{t}>/262144"]
    print(f"| {name} | {ks:.1f} | {ps:.1f} | {ks / ps:.0%} |")
print("""
## Where the loop lands (same run)

The plain double loop (one 16-byte vector per iteration: load, load, add,
store, add, cmp, jb; 27 bytes of code), written out in assembly so its place is
fixed, starting N bytes into a 64-byte line:

| loop starts at byte | GB/s | vs byte 0 |
| ---: | ---: | ---: |""")
base = k["placedLoop<0>/262144"]
for off in (0, 16, 40, 56):
    r = k[f"placedLoop<{off}>/262144"]
    where = "inside one line" if off + 27 <= 64 else "straddles two lines"
    print(f"| {off} ({where}) | {r:.1f} | {r / base:.2f} |")
print("""
## One slot, 4 members: the agent's ReducePool vs OpenMP

Wall-clock GB/s of input (4 contributions) reduced, result = c0 + c1 + c2 + c3
in rank order, float32. `pool`: the engine's way (64 KiB pieces on
`ReducePool`, 16 KiB blocks within a piece, each block in one `reduceMany`
pass over the members). `pool, pairwise`: the engine before this change
(`reduce3` of c0 and c1, then `reduceInto` of c2 and c3, per block).
`omp for`: the engine's pieces under `#pragma omp parallel for schedule(dynamic, 1)`.
`omp for simd`: `#pragma omp parallel for simd` over the elements, all four
members in one pass, no blocks (same order per element, so the same bits).
The last three columns come from a second run with OpenMP's threads spinning.

| slot | threads | pool | pool, pairwise | pool / pairwise | omp for (passive) | omp for / pool | omp for simd (passive) | simd / pool | pool, 2nd run | omp for (spinning) | spinning / pool |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |""")
for size, label in (("262144", "256 KiB"), ("8388608", "8 MiB")):
    for th in (1, 2):
        key = f"{size}/{th}/real_time"
        p, w = s[f"slotReduce/{key}"], s[f"slotReducePairwise/{key}"]
        o, m = s[f"slotReduceOmp/{key}"], s[f"slotReduceOmpSimd/{key}"]
        pa, oa = a[f"slotReduce/{key}"], a[f"slotReduceOmp/{key}"]
        print(f"| {label} | {th} | {p:.1f} | {w:.1f} | {p / w:.2f} | {o:.1f} | {o / p:.2f} | {m:.1f} | {m / p:.2f} | {pa:.1f} | {oa:.2f} | {oa / pa:.2f} |")
EOF
cat "$root/benchmarks/agent_kernels_notes.md" >>"$out"
echo "wrote $out" >&2
