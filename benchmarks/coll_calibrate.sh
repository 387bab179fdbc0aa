#!/usr/bin/env bash
# Calibrates the selection cost model on this machine: runs switchagg-bench
# with each algorithm forced (and `previous`, the module switchagg replaces),
# fits t(n) = A + B·n per algorithm, and turns A, B into the cost table's
# alpha_us / beta_ns with the algorithm's own formula (docs/selection.md);
# gamma_ns comes from timing the reduction kernel (--measure-gamma).
# Prints `cost` lines for a rules file (or for the defaults in the rows of
# mpi_coll/core/select/algorithm_registry.cc).
#
#   benchmarks/coll_calibrate.sh [--build DIR] [--np 4] [--locality shm|net]
#                                [--reps 3] [--max 16M] [-- extra mpirun args]
#
# On a cluster, run it once with all ranks on one node (--locality shm) and
# once with one rank per node (--locality net, mpirun args for the hosts).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np=4 locality=shm reps=3 max=16M
extra=()
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --np) np=$2; shift ;;
    --locality) locality=$2; shift ;;
    --reps) reps=$2; shift ;;
    --max) max=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "coll_calibrate: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
bench=$build/bin/switchagg-bench
[[ -x $bench ]] || { echo "coll_calibrate: $bench not built" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
comp_path="$(ompi_info --path pkglibdir | awk '{print $NF}'):$build/lib/openmpi"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gamma=$(mpirun -np 1 "$bench" --measure-gamma --max 64M | sed -n 's/^gamma_ns=\([0-9.]*\).*/\1/p')
echo "# measured: reduction kernel gamma_ns=$gamma (float32 sum, 64 MiB)"

algorithms="recursive_doubling ring rabenseifner hierarchical previous"
for rep in $(seq 1 "$reps"); do
  for alg in $algorithms; do
    mpirun -np "$np" --oversubscribe --mca mca_base_component_path "$comp_path" \
      --mca coll_switchagg_allreduce_algorithm "$alg" "${extra[@]}" \
      "$bench" --min 8 --max "$max" --iters 100 --label "$alg" --csv "$work/$alg.$rep.csv" \
      >/dev/null 2>"$work/$alg.$rep.log" || { echo "coll_calibrate: $alg failed:" >&2; cat "$work/$alg.$rep.log" >&2; exit 1; }
  done
done

# Median per (algorithm, bytes), then per algorithm: A = median latency of
# the sizes <= 256 B, B = least-squares slope of (t - A) over sizes >= 256 KiB.
cat "$work"/*.csv | awk -F, '/^label,/ { for (i = 1; i <= NF; i++) col[$i] = i; next }
                           { print $col["label"], $col["bytes"], $col["p50_us"] }' |
  sort -k1,1 -k2,2n -k3,3g | awk '
    function flush() { if (n) print l, b, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2); n = 0 }
    { if ($1 != l || $2 != b) { flush(); l = $1; b = $2 } v[++n] = $3 }
    END { flush() }' >"$work/medians"

awk -v p="$np" -v g="$gamma" -v loc="$locality" '
  function log2floor(x,  k) { k = 0; while (2 ^ (k + 1) <= x) k++; return k }
  function log2ceil(x,  k) { k = 0; while (2 ^ k < x) k++; return k }
  { if ($2 <= 256) { small[$1] += $3; ns[$1]++ } else if ($2 >= 262144) { x[$1, ++nl[$1]] = $2; y[$1, nl[$1]] = $3 } }
  END {
    p2 = 2 ^ log2floor(p); L = log2floor(p); fold = (p2 != p)
    for (a in ns) {
      A = small[a] / ns[a]
      sxx = 0; sxy = 0
      for (i = 1; i <= nl[a]; i++) { sxx += x[a, i] ^ 2; sxy += x[a, i] * (y[a, i] - A) }
      B = sxx > 0 ? sxy / sxx * 1000 : 0      # ns per byte
      # A = ka*alpha, B = kb*beta + kg*gamma, per the model formulas
      if (a == "ring") { ka = 2 * (p - 1); kb = 2 * (p - 1) / p; kg = (p - 1) / p }
      else if (a == "hierarchical") { s = log2ceil(p); ka = 2 * s; kb = 2 * s; kg = s }
      else if (a == "rabenseifner") { ka = 2 * L + 2 * fold; kb = 2 * (p2 - 1) / p2 + 2 * fold; kg = (p2 - 1) / p2 + fold }
      else { ka = L + 2 * fold; kb = L + 2 * fold; kg = L + fold }   # recursive_doubling; previous fits like it for alpha
      if (a == "previous") { kb = 2 * (p - 1) / p; kg = (p - 1) / p } # large sizes: tuned runs a ring-like schedule
      beta = (B - kg * g) / kb; if (beta < 0.001) beta = 0.001
      printf "cost %-18s %s alpha_us=%.2f beta_ns=%.3f gamma_ns=%.3f   # fit: A=%.1f us, B=%.3f ns/B at np=%d\n",
             a, loc, A / ka, beta, g, A, B, p
    }
  }' "$work/medians" | sort
