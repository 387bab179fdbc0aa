#!/usr/bin/env bash
# MPICH with the PMPI layer (docs/pmpi.md): MPICH's own MPI_Allreduce
# against switchagg's through libswitchagg_pmpi.so, the same program
# (switchagg-bench built with MPICH, build/bin/mpich) under mpiexec.mpich,
# side by side. Paths: *mpich* = no library; *layer-host* = the library
# preloaded, SWITCHAGG_OFFLOAD=off (auto: the cost model and online tuner
# choose among the host algorithms and MPICH's own); *layer-switch* = the
# library with the lease, SWITCHAGG_OFFLOAD=on (the switch path). Runs are
# interleaved (each rep runs every path once, the order rotating), the
# median of the reps' p50 per size. With --fabric H: on an emulated cluster
# (H hosts, one rank each, links shaped to --rate Mbit/s, UCX over TCP, the
# agent on its own host), Hydra launching through the fabric's launcher.
#
# Then, one node only (not with --fabric): the layer's cost on a call it
# declines, against plain MPICH, 8 B - 4 KiB p50 (benchmarks/pmpi_declined.cc,
# np --declined-np, --declined-reps rounds alternating the order):
# *previous* = SWITCHAGG_ALLREDUCE_ALGORITHM=previous SWITCHAGG_TUNE=off
# (every call counted and handed to PMPI_Allreduce); *off* = the library
# with SWITCHAGG_ENABLE=false (every call straight to PMPI_Allreduce).
# --min-warmup / --min-iters: switchagg-bench's floors above 64 KiB (let the
# online tuner settle before the timed calls of large sizes).
# Writes --out (default benchmarks/results/mpich.md, or mpich_fabric.md).
#
#   benchmarks/mpich_bench.sh [--build DIR] [--np "2 4"] [--reps 5] [--iters 200]
#                             [--min 8] [--max 1M] [--warmup 200] [--min-warmup 1]
#                             [--min-iters 5] [--out FILE]
#                             [--fabric H [--rate 400]]
#                             [--declined-reps 15] [--declined-np 2] [--no-declined]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np_list="2 4" reps=5 iters=200 min=8 max=1M warmup=200 min_warmup=1 min_iters=5 hosts='' rate=400 out='' declined_reps=15
declined_np=2 declined=1
source "$root/benchmarks/lib/bench_args.sh"
bench_args mpich_bench 2,28 "build np=np_list reps iters min max warmup min-warmup=min_warmup min-iters=min_iters out fabric=hosts rate declined-reps=declined_reps declined-np=declined_np" \
  "no-declined=declined=" "$@"
[[ -n $hosts ]] && declined=
source "$root/benchmarks/lib/bench_env.sh"
bench_out mpich
bench_setup mpich-bench
mbin=$bin/mpich
lib=$build/lib/libswitchagg_pmpi.so
for f in "$mbin/switchagg-bench" "$mbin/pmpi_declined" "$lib"; do
  [[ -e $f ]] || { echo "mpich_bench: $f missing: build the targets switchagg-bench_mpich pmpi_declined_mpich switchagg_pmpi" >&2; exit 1; }
done
export SWITCHAGG_UCX_WAIT=${SWITCHAGG_UCX_WAIT:-blocking}
bench_agent mpich-bench mcb

run() { bench_mpich_run "$@"; }
lease=(SWITCHAGG_AGENT="$SWITCHAGG_AGENT" SWITCHAGG_LEASE="$SWITCHAGG_LEASE"
  SWITCHAGG_MODE="$SWITCHAGG_MODE" SWITCHAGG_UCX_WAIT="$SWITCHAGG_UCX_WAIT")
# name|environment (space-separated K=V)
paths=(
  "mpich|"
  "layer-host|LD_PRELOAD=$lib SWITCHAGG_OFFLOAD=off SWITCHAGG_VERBOSE=1"
  "layer-switch|LD_PRELOAD=$lib SWITCHAGG_OFFLOAD=on SWITCHAGG_VERBOSE=1 ${lease[*]}"
)
declare -A samples algs
stuck=()
max_bytes=$(numfmt --from=iec "$max")
for np in $np_list; do
  for rep in $(seq 1 "$reps"); do
    for i in "${!paths[@]}"; do
      p=${paths[$(((i + rep) % ${#paths[@]}))]}
      name=${p%%|*}
      # shellcheck disable=SC2206
      envs=(${p#*|})
      if ! run "$np" "${envs[@]}" -- "$mbin/switchagg-bench" --dtype float64 --min "$min" \
        --max "$max" --iters "$iters" --warmup "$warmup" --min-warmup "$min_warmup" \
        --min-iters "$min_iters" --csv - >"$work/run.csv" 2>"$work/run.err"; then
        # Across the emulated hosts MPICH 4.0.2 (UCX over TCP) sometimes
        # never leaves MPI_Finalize (one rank in ucp_worker_progress, the
        # others in Hydra's PMI barrier), with or without the library: a
        # run whose largest size was reported is kept and counted.
        if [[ -n $hosts ]] && awk -F, -v b="$max_bytes" '$5 == b { found = 1 } END { exit !found }' "$work/run.csv"; then
          stuck+=("$name rep $rep")
        else
          cat "$work/run.err" "$work/run.csv" >&2; echo "mpich_bench: $name np $np failed" >&2; exit 1
        fi
      fi
      if [[ $name == layer-switch ]] && ! grep -q "joined switch group" "$work/run.err" "$work/run.csv"; then
        cat "$work/run.err" >&2; echo "mpich_bench: layer-switch did not join the agent" >&2; exit 1
      fi
      if [[ $name == layer-* ]] && ! grep -q "PMPI layer active" "$work/run.err" "$work/run.csv"; then
        cat "$work/run.err" >&2; echo "mpich_bench: $name: the library did not say it was active" >&2; exit 1
      fi
      while IFS=, read -r _ _ _ _ bytes _ _ _ _ _ _ _ alg _ p50 _; do
        [[ $bytes =~ ^[0-9]+$ ]] || continue
        samples[$np,$name,$bytes]+="$p50 "
        algs[$np,$name,$bytes]=$alg
      done <"$work/run.csv"
      echo "np=$np rep=$rep $name done" >&2
    done
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# The declined call: plain MPICH against the library with every call handed on.
if [[ -n $declined ]]; then
  variants=(plain previous off)
  for v in "${variants[@]}"; do : >"$work/d.$v"; done
  for ((r = 0; r < declined_reps; ++r)); do
    for i in "${!variants[@]}"; do
      v=${variants[$(((i + r) % ${#variants[@]}))]}
      case $v in
        plain) run "$declined_np" -- "$mbin/pmpi_declined" ;;
        previous) run "$declined_np" LD_PRELOAD="$lib" SWITCHAGG_ALLREDUCE_ALGORITHM=previous \
          SWITCHAGG_TUNE=off -- "$mbin/pmpi_declined" ;;
        off) run "$declined_np" LD_PRELOAD="$lib" SWITCHAGG_ENABLE=false -- "$mbin/pmpi_declined" ;;
      esac >>"$work/d.$v"
    done
  done
fi

sizes=$(for k in "${!samples[@]}"; do echo "${k##*,}"; done | sort -un)
{
  echo "# MPICH: its own allreduce against switchagg's through the PMPI layer${hosts:+ (emulated cluster)}"
  echo
  echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg),"
  echo "$(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*/MPICH /p; s/^MPICH Device:[[:space:]]*/device /p' | paste -sd' ')."
  if [[ -n $hosts ]]; then
    echo "An emulated cluster of $hosts hosts (one rank each, links shaped to $rate Mbit/s, UCX over TCP"
    echo "for MPICH and switchagg alike, the agent on its own emulated host)."
    echo "Command: \`benchmarks/mpich_bench.sh --fabric $hosts --rate $rate --reps $reps --iters $iters --min $min --max $max --warmup $warmup --min-warmup $min_warmup --min-iters $min_iters\`"
  else
    echo "One machine (ranks and the agent share the cores)."
    echo "Command: \`benchmarks/mpich_bench.sh --np \"$np_list\" --reps $reps --iters $iters --min $min --max $max --warmup $warmup --declined-reps $declined_reps --declined-np $declined_np\`"
  fi
  echo
  echo "switchagg-bench (built with MPICH) p50 in µs per call (the slowest rank's), float64 sum, the"
  echo "median of $reps interleaved runs. *mpich* = MPICH alone; *layer-host* = libswitchagg_pmpi.so"
  echo "preloaded, SWITCHAGG_OFFLOAD=off (auto: host algorithms or MPICH's own, per call);"
  echo "*layer-switch* = the library with a lease, SWITCHAGG_OFFLOAD=on (the switch path). The"
  echo "*served by* columns name the path that served the last call of that size."
  for np in $np_list; do
    echo
    echo "np $np:"
    echo
    echo "| size | mpich | layer-host | layer-switch | host / mpich | switch / mpich | served by (host, switch) |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    for b in $sizes; do
      m=$(median <<<"${samples[$np,mpich,$b]:-}") h=$(median <<<"${samples[$np,layer-host,$b]:-}")
      s=$(median <<<"${samples[$np,layer-switch,$b]:-}")
      [[ -n $m && -n $h && -n $s ]] || continue
      echo "| $b B | $m | $h | $s | $(bench_ratio "$h" "$m" 3) | $(bench_ratio "$s" "$m" 3) | ${algs[$np,layer-host,$b]}, ${algs[$np,layer-switch,$b]} |"
    done
  done
  echo
  if [[ -n $hosts ]]; then
    echo "Theory: a host link carries B = $rate Mbit/s each way; N bytes take N/B. The switch"
    echo "path sends N and receives N per host (N/B per call); a ring 2(p-1)/p·N each way"
    echo "(1.5 N/B at 4 hosts); MPICH's own allreduce at least the ring's. Here the ranks also"
    echo "share 2 cores: MPICH's ranks poll while they wait (ch4:ucx), the library's wait in"
    echo "the kernel (SWITCHAGG_UCX_WAIT=blocking), so MPICH's column carries the polling's"
    echo "cost on shared cores as well, which a cluster with a core per rank would not."
  else
    echo "Theory: on one node MPICH's allreduce runs over shared memory in ~1 µs at small sizes;"
    echo "switchagg's host algorithms run over its own UCX worker (shared memory here) at about"
    echo "the same cost; the switch path is a round trip to an agent process over TCP loopback"
    echo "on the same 2 cores (tens of µs, and N bytes through the agent per call), so on one"
    echo "node it loses at every size, as for Open MPI (BENCHMARKS.md, switch path vs host)."
  fi
  if ((${#stuck[@]})); then
    echo
    echo "Runs killed in MPI_Finalize after their last size was reported (MPICH over UCX TCP"
    echo "across the emulated hosts; kept): ${stuck[*]}."
  fi
  if [[ -n $declined ]]; then
    echo
    echo "## The layer's cost on a call it declines"
    echo
    echo "benchmarks/pmpi_declined.cc: MPI_Allreduce (MPI_DOUBLE, sum) 2000 timed calls per size,"
    echo "p50 of the slowest rank, np $declined_np, $declined_reps rounds rotating the order; the"
    echo "median over rounds. *previous*: the library preloaded with"
    echo "SWITCHAGG_ALLREDUCE_ALGORITHM=previous SWITCHAGG_TUNE=off, so every call is counted and"
    echo "handed to PMPI_Allreduce. *off*: the library preloaded with SWITCHAGG_ENABLE=false,"
    echo "every call straight to PMPI_Allreduce (what interposing costs at all: one more call"
    echo "and an atomic load). Target: *previous* within 3% of plain MPICH."
    echo
    echo "| size | mpich p50 µs | previous p50 µs | off p50 µs | previous / mpich | off / mpich |"
    echo "| --- | --- | --- | --- | --- | --- |"
    for b in $(awk '{ print $1 }' "$work/d.plain" | sort -un); do
      pm=$(awk -v b="$b" '$1 == b { print $2 }' "$work/d.plain" | median)
      pv=$(awk -v b="$b" '$1 == b { print $2 }' "$work/d.previous" | median)
      po=$(awk -v b="$b" '$1 == b { print $2 }' "$work/d.off" | median)
      echo "| $b B | $pm | $pv | $po | $(bench_ratio "$pv" "$pm" 3) | $(bench_ratio "$po" "$pm" 3) |"
    done
    echo
    echo "Theory: a declined call adds a fixed amount of work on each rank before its data"
    echo "leaves, so on the critical path: the interposed call (the *off* column), the"
    echo "communicator's state (a cached attribute), the datatype and op (the communicator's"
    echo "last pair), two counters, then PMPI_Allreduce (no progress pass of the core: nothing"
    echo "of switchagg's runs in the call). A few nanoseconds against MPICH's 0.5-2 µs"
    echo "shared-memory allreduce; the progress pass (a clock read and the thread gate) was"
    echo "most of the +0.04 µs measured before it was dropped from such calls."
  fi
} >"$out.new"
mv "$out.new" "$out"
cat "$out"
