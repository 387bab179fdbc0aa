#!/usr/bin/env bash
# benchmarks/pmpi_declined.sh [BUILD_DIR] [REPS] [NP]: the PMPI layer's cost
# on calls it declines, against plain MPICH, measured side by side: REPS
# rounds (default 7), each running pmpi_declined plain and with the
# library preloaded and SWITCHAGG_ALLREDUCE_ALGORITHM=previous, the order
# alternating per round. Prints per size the median over rounds of each
# side's p50 and the ratio (layer / plain).
set -euo pipefail
build=${1:-build} reps=${2:-7} np=${3:-2}
prog=$build/bin/mpich/pmpi_declined
lib=$build/lib/libswitchagg_pmpi.so
[[ -x $prog && -f $lib ]] || { echo "pmpi_declined: build $prog and $lib first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
plain() { mpiexec.mpich -n "$np" "$prog" >>"$out/plain"; }
layer() {
  mpiexec.mpich -n "$np" -genv LD_PRELOAD "$lib" -genv SWITCHAGG_ALLREDUCE_ALGORITHM previous \
    -genv SWITCHAGG_TUNE off "$prog" >>"$out/layer"
}
for ((r = 0; r < reps; ++r)); do
  if ((r % 2 == 0)); then plain; layer; else layer; plain; fi
done
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
printf "%-6s %12s %12s %8s\n" bytes plain_p50_us layer_p50_us ratio
for bytes in $(awk '{ print $1 }' "$out/plain" | sort -un); do
  p=$(awk -v b="$bytes" '$1 == b { print $2 }' "$out/plain" | median)
  l=$(awk -v b="$bytes" '$1 == b { print $2 }' "$out/layer" | median)
  awk -v b="$bytes" -v p="$p" -v l="$l" 'BEGIN { printf "%-6s %12.3f %12.3f %8.3f\n", b, p, l, l / p }'
done
