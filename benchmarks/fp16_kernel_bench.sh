#!/usr/bin/env bash
# binary16 SUM kernels at the agent's slot size, this tree against another
# commit's (default main), interleaved: agent_kernel_bench's halfSum/k and
# halfBound/k (benchmarks/results/fp16_kernels.md). The other commit is
# built from `git archive` with this tree's benchmark file, Release, no MPI.
#
#   benchmarks/fp16_kernel_bench.sh [--build DIR] [--base COMMIT] [--rounds 5]
#                                    [--before BIN]
# --before BIN: that agent_kernel_bench binary as the other side (e.g. this
# tree's build with one file reverted) instead of building --base.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build base=main rounds=5 before=''
# shellcheck source=benchmarks/lib/bench_args.sh
source "$root/benchmarks/lib/bench_args.sh"
bench_args fp16_kernel_bench 2,10 "build base rounds before" "" "$@"
old=$root/build-fp16-base
if [[ -z $before ]]; then
  rm -rf "$old/src" && mkdir -p "$old/src"
  git -C "$root" archive "$base" | tar -x -C "$old/src"
  cp "$root/benchmarks/agent_kernel_bench.cc" "$old/src/benchmarks/"
  cmake -S "$old/src" -B "$old/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWITCHAGG_BUILD_MPI=OFF \
    -DSWITCHAGG_BUILD_SPANK=OFF -DSWITCHAGG_BUILD_TESTS=OFF >/dev/null
  ninja -C "$old/b" -j2 agent_kernel_bench >/dev/null
  before=$old/b/bin/agent_kernel_bench
fi
ninja -C "$build" -j2 agent_kernel_bench >/dev/null
tmp=$(mktemp -d /tmp/fp16_kernel_bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  for side in before now; do
    b=$before
    [[ $side == now ]] && b=$build/bin/agent_kernel_bench
    "$b" --benchmark_filter='^(half(Sum|Bound)|kernelSum<float>/262144)' --benchmark_repetitions=3 --benchmark_min_time=0.05 \
      --benchmark_report_aggregates_only=true --benchmark_format=json >"$tmp/$side-$r.json" 2>/dev/null
  done
done
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
res = {}
for side in ("before", "now"):
    for r in range(1, rounds + 1):
        for b in json.load(open(f"{tmp}/{side}-{r}.json"))["benchmarks"]:
            if b.get("aggregate_name") == "median":
                res.setdefault((b["run_name"], side), []).append(b["bytes_per_second"] / 1e9)
for (name, side), v in sorted(res.items()):
    print(f"{name:14s} {side:6s} median {statistics.median(v):6.2f} GB/s  rounds {' '.join(f'{x:.1f}' for x in v)}")
PY
