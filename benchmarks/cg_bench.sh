#!/usr/bin/env bash
# The CG mini-application (apps/cg, switchagg-cg: 3-D Poisson, MPI + OpenMP,
# two one-double allreduces per iteration) with switchagg off, on (auto: the
# cost model decides), on with recursive doubling forced, and with the
# switch path (offload on, a private agent and lease), interleaved, median
# solve time and median time inside MPI_Allreduce (max over ranks) per
# configuration. Also checks that every configuration's residual history
# is the same as switchagg off (bitwise where the ranks are 2).
# Writes benchmarks/results/cg.md; with --fabric H, on an emulated cluster
# of H hosts (scripts/fabric.py, one rank per host, links shaped to --rate
# Mbit/s, the agent on the switch's host; takes /run/switchagg-fabric.lock)
# and writes benchmarks/results/cg_fabric.md.
#
#   benchmarks/cg_bench.sh [--build DIR] [--np "2 4"] [--threads 1] [--n 48] [--reps 5]
#                          [--fabric H [--rate 400]] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np_list="2 4" threads=1 n=48 reps=5 out="" fabric=0 rate=400
source "$root/benchmarks/lib/bench_args.sh"
bench_args cg_bench 2,15 "build np=np_list threads n reps out fabric rate" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup cg-bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
if ((fabric > 0)); then
  exec 9>/run/switchagg-fabric.lock
  flock -w 1200 9 || { echo "cg_bench: the fabric lock stayed taken" >&2; exit 1; }
  np_list=$fabric
  fabric_up cgb --hosts "$fabric" --rate "$rate" --subnet 10.92
  fabric_agent_start "$work" >/dev/null || { echo "cg_bench: agent start failed" >&2; exit 1; }
  where="an emulated cluster of $fabric hosts (one rank each, $rate Mbit/s links, UCX over TCP)"
  out=${out:-$root/benchmarks/results/cg_fabric.md}
else
  agent_start "$root/config/agent.toml" "$work" >/dev/null ||
    { echo "cg_bench: agent start failed" >&2; exit 1; }
  where="this machine"
  out=${out:-$root/benchmarks/results/cg.md}
fi
# The lease goes to the switch configuration only (-x KEY=VALUE; local
# ranks inherit mpirun's environment, so it is not exported).
lease_args=()
for kv in $("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job cg-bench \
  --slots 16 | sed -n 's/^export //p'); do
  lease_args+=(-x "$kv")
done
# launch NP ARGS...: mpirun of NP ranks here or across the fabric's hosts.
launch() {
  local np=$1
  shift
  if ((fabric > 0)); then
    fabric_mpirun "$np" 1 "$@"
  else
    mpirun --oversubscribe --bind-to none -np "$np" --mca btl self,vader \
      --mca mca_base_component_path "$comp_path" "$@"
  fi
}

declare -A mca=(
  [off]="--mca coll_switchagg_enable 0"
  [auto]=""
  [recursive_doubling]="--mca coll_switchagg_allreduce_algorithm recursive_doubling"
  [switch]="--mca coll_switchagg_offload on"
)
configs=(off auto recursive_doubling switch)
: >"$work/rows"
for np in $np_list; do
  for ((r = 1; r <= reps; r++)); do
    for c in "${configs[@]}"; do
      log=$work/$np-$c-$r.log
      lease=()
      [[ $c == switch ]] && lease=("${lease_args[@]}")
      # shellcheck disable=SC2086 # mca options split on purpose
      launch "$np" ${mca[$c]} "${lease[@]}" -x OMP_NUM_THREADS="$threads" \
        -x OMP_WAIT_POLICY=passive -x SWITCHAGG_UCX_WAIT "$bin/switchagg-cg" --n "$n" >"$log" 2>&1 ||
        { cat "$log"; echo "cg_bench: $c np $np failed" >&2; exit 1; }
      grep '^iter' "$log" >"$work/$np-$c.hist"
      awk -v np="$np" -v c="$c" '/^converged after/ {
        print np, c, $3, $5, $7, $NF }' "$log" | tr -d ',' >>"$work/rows"
      served=$(awk -F': ' '/served by/ { gsub(/ /, "~", $2); print $2 }' "$log")
      echo "$np $c served=$served" >>"$work/served"
    done
    # "equal" (bitwise) or the largest relative difference of a residual.
    for c in "${configs[@]}"; do
      paste -d' ' "$work/$np-off.hist" "$work/$np-$c.hist" | awk -v np="$np" -v c="$c" '
        { d = $4 - $8; d = d < 0 ? -d : d; if ($4 != $8) diff = 1; if (d / $4 > m) m = d / $4 }
        END { if (!diff) print np, c, "equal"; else printf "%s %s max_rel_diff_%.1e\n", np, c, m }' \
        >>"$work/equal"
    done
  done
done
{
  opts="--np \"$np_list\""
  ((fabric > 0)) && opts="--fabric $fabric --rate $rate"
  echo "# CG mini-application: switchagg on and off, $where"
  echo
  echo "Command: \`benchmarks/cg_bench.sh $opts --threads $threads --n $n --reps $reps\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores shared with other jobs (load average at the"
  echo "end: $(cut -d' ' -f1-3 /proc/loadavg)), $threads OpenMP thread(s) per rank."
  echo
  echo "switchagg-cg on ${n}^3 points to a relative residual of 1e-8; each"
  echo "iteration is one halo exchange and two one-double MPI_Allreduce calls."
  echo "Median of $reps interleaved runs: wall time of the solve and time spent"
  echo "inside MPI_Allreduce (max over ranks). \"history\" compares the residual"
  echo "history with switchagg off, every run: bitwise equal, or the largest"
  echo "relative difference of one residual (another summation order of the"
  echo "ranks' partial dot products; the iteration counts are listed)."
  echo
  echo "| ranks | configuration | served by | iterations | solve (s) | in allreduce (s) | history vs off |"
  echo "| ---: | --- | --- | ---: | ---: | ---: | --- |"
  awk "$(cat "$root/benchmarks/lib/stats.awk")"'
    FILENAME ~ /served$/ { split($3, s, "="); served[$1, $2] = s[2]; next }
    FILENAME ~ /equal$/ { if (!(($1, $2) in eq) || eq[$1, $2] == "equal") eq[$1, $2] = $3; next }
    { it[$1, $2] = $3; t[$1, $2] = t[$1, $2] " " $4; a[$1, $2] = a[$1, $2] " " $5
      if (!(($1 SUBSEP $2) in seen)) { seen[$1, $2] = 1; order[++n] = $1 SUBSEP $2 } }
    END {
      for (i = 1; i <= n; i++) {
        split(order[i], k, SUBSEP)
        sv = served[k[1], k[2]]; gsub(/~/, " ", sv); e = eq[k[1], k[2]]; gsub(/_/, " ", e)
        printf "| %s | %s | %s | %s | %.3f | %.3f | %s |\n", k[1], k[2], sv,
          it[k[1], k[2]], median(t[k[1], k[2]]), median(a[k[1], k[2]]), e
      }
    }' "$work/served" "$work/equal" "$work/rows"
} >"$out"
cat "$out"
