#!/usr/bin/env bash
# Switch path with the data plane's eager chunks (the default since the
# RNDV_THRESH change) vs UCX's automatic rendezvous threshold (the old
# behaviour, restored with UCX_RNDV_THRESH=auto in the agent's and the
# ranks' environment): two private agents, interleaved repetitions, medians
# of each size's p50, one table with the ratio. Writes
# benchmarks/results/switch_eager.md.
#
#   benchmarks/switch_eager_bench.sh [--build DIR] [--np N] [--reps R] [--max SIZE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np=2 reps=3 max=1M
out=$root/benchmarks/results/switch_eager.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args switch_eager_bench 2,9 "build np reps max" "" "$@"
build=$(cd "$build" && pwd)
bin=$build/bin
work=$(mktemp -d /tmp/switchagg-eager-bench.XXXXXX)
source "$root/scripts/lib_agent.sh"
pids=()
cleanup() { for p in "${pids[@]}"; do AGENT_PID=$p agent_stop; done; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
export SWITCHAGG_SWITCH_WINDOW=8

declare -A env_agent env_lease
for variant in eager rndv; do
  mkdir -p "$work/$variant"
  if [[ $variant == rndv ]]; then export UCX_RNDV_THRESH=auto; else unset UCX_RNDV_THRESH; fi
  agent_start "$root/config/agent.toml" "$work/$variant" --set agent.log_level=warn
  pids+=("$AGENT_PID")
  lease=$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job "eager-$variant" --slots 8 --ttl 2h)
  eval "$(grep '^export ' <<<"$lease")"
  env_agent[$variant]=$SWITCHAGG_AGENT
  env_lease[$variant]=$SWITCHAGG_LEASE
done
unset UCX_RNDV_THRESH
comp_path="$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://'):$build/lib/openmpi"
for rep in $(seq 1 "$reps"); do
  for variant in eager rndv; do
    echo "rep=$rep $variant" >&2
    extra=()
    [[ $variant == rndv ]] && extra=(-x UCX_RNDV_THRESH=auto)
    SWITCHAGG_AGENT=${env_agent[$variant]} SWITCHAGG_LEASE=${env_lease[$variant]} SWITCHAGG_MODE=require \
      mpirun --oversubscribe --bind-to none --mca btl self,vader \
      --mca mca_base_component_path "$comp_path" -np "$np" \
      --mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
      -x SWITCHAGG_SWITCH_WINDOW "${extra[@]}" "$bin/switchagg-bench" --min 1K --max "$max" \
      --iters 100 --min-iters 5 --warmup 5 --label "$variant" \
      --csv "$work/${variant}_$rep.csv" >/dev/null 2>"$work/err.txt" ||
      { cat "$work/err.txt" >&2; exit 1; }
  done
done

{
  echo "# Switch path: eager data-plane chunks vs UCX's automatic rendezvous"
  echo
  echo "Reproduce: \`benchmarks/switch_eager_bench.sh --np $np --reps $reps --max $max\`"
  echo "($(date -u +%F), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end;"
  echo "float32 sum, $np ranks, agent on the same cores over UCX TCP loopback, window 8 x 256 KiB;"
  echo "each cell = median over $reps interleaved runs of the per-size p50.)"
  echo
  cat "$work"/*.csv | awk -F, "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { key = $col["label"] SUBSEP $col["bytes"]; v[key] = v[key] " " $col["p50_us"]; sizes[$col["bytes"]] = 1 }
    END {
      print "| bytes | eager (default) p50 us | rendezvous (UCX_RNDV_THRESH=auto) p50 us | rendezvous / eager |"
      print "| ---: | ---: | ---: | ---: |"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        e = median(v["eager" SUBSEP list[i]]); r = median(v["rndv" SUBSEP list[i]])
        printf "| %s | %.1f | %.1f | %.2f |\n", human(list[i]), e, r, (e > 0 ? r / e : 0)
      }
    }'
} >"$out"
cat "$out"
