#!/usr/bin/env bash
# The reduction-server deployment a RoCE site can run today (issue 41): the
# agents on K ordinary reducer hosts whose links run at a compute host's
# rate (scripts/fabric.py --reducers), every call striped over them, against
# the host algorithms and Open MPI's own, on an emulated star of H hosts x 1
# rank, links shaped to RATE Mbit/s. switchagg-bench (float32 sum) per path,
# interleaved repetitions, medians of the per-size p50; the bytes each
# reducer link received per call from the interface counters; the theory
# next to each. And `auto` (offload=auto with the lease, online tuning
# settled over 30 untimed calls a size) three ways: blocking MPI_Allreduce,
# MPI_Iallreduce + MPI_Wait (after blocking warm-up calls: it inherits their
# verdict), and MPI_Allreduce at MPI_THREAD_MULTIPLE (timed by tuning over
# switchagg's own paths), each against the best fixed path for that call.
# Writes benchmarks/results/reducers.md.
#
#   benchmarks/reducers_bench.sh [--build DIR] [--hosts 4] [--ppn 1] [--rate 400] [--ks "1 2 4"]
#                                [--reps 3] [--min 1M] [--max 8M] [--out FILE]
# Theory (N bytes a rank, p hosts, one rank each, B = RATE): the switch path
# with K reducers is bound by max(N/B at each host, p·N/(K·B) into each
# reducer), the ring by 2(p−1)/p·N/B: switch/ring = max(1, p/K)·p/(2(p−1)),
# so K reducers beat the ring once p/K < 2(p−1)/p (K > p²/(2(p−1))).
# With PPN ranks a host (P = p·PPN) the switch path uses node leaders (one
# member a host: still max(1, p/K)·N/B) and the ring's neighbours sit on one
# host but for one edge a host, whose link then carries 2(P−1)/P·N:
# switch/ring = max(1, p/K)·P/(2(P−1)).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build hosts=4 ppn=1 rate=400 ks="1 2 4" reps=3 min=1M max=8M
out=$root/benchmarks/results/reducers.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args reducers_bench 2,25 "build hosts ppn rate ks reps min max out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup reducers-bench "$(basename "$out" .md)_raw" fresh
kmax=0
for k in $ks; do ((k > kmax)) && kmax=$k; done
((kmax >= 1 && kmax <= 16)) || { echo "reducers_bench: --ks must name 1..16 reducers" >&2; exit 2; }

declare -a apids asocks
stop_reducers() {
  local p
  for p in "${apids[@]}"; do AGENT_PID=$p; agent_stop; done
}
trap 'stop_reducers; fabric_down; rm -rf "$work"' EXIT

fabric_up rb --hosts "$hosts" --rate "$rate" --reducers "$kmax" --subnet 10.91
for k in $(seq 1 "$kmax"); do
  mkdir -p "$work/a$k"
  FABRIC_AGENT_HOST=r$k fabric_agent_start "$work/a$k" --set agent.log_level=warn
  apids[$k]=$AGENT_PID asocks[$k]=$AGENT_SOCKET
done
AGENT_PID=

# map K: agents a1..aK share the hosts h1..hH (each a contiguous range), so a
# job over all hosts leases from the K of them: K stripes of every call.
for k in $ks; do
  : >"$work/map$k.toml"
  for a in $(seq 1 "$k"); do
    lo=$(((a - 1) * hosts / k + 1)) hi=$((a * hosts / k))
    printf '[[agent]]\nname = "a%s"\ncontrol = "unix:%s"\nnodes = "h[%s-%s]"\n\n' \
      "$a" "${asocks[$a]}" "$lo" "$hi" >>"$work/map$k.toml"
  done
done

lease_k() {  # K: the job's lease over the agents of map K, exported
  eval "$("$bin/switchagg-ctl" lease create --job "reducers-k$1" --slots 16 --ttl 2h \
    --nodes "h[1-$hosts]" --fabric "$work/map$1.toml" | grep '^export ')"
}
lease_drop() {
  "$bin/switchagg-ctl" lease delete --job "reducers-k$1" --fabric "$work/map$1.toml" >/dev/null
}
reducer_rx() { fabric_rx_bytes | awk '/^r[0-9]/ { printf "%s%s", sep, $2; sep = " " } END { print "" }'; }

export SWITCHAGG_SWITCH_WINDOW=16
# Forced switch runs: every rank a member at one rank a host, node leaders
# (one member a host) at more.
leaders=off
((ppn > 1)) && leaders=on
host_paths=(
  "ring|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
  "rabenseifner|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm rabenseifner"
  "tuned|--mca coll ^switchagg"
  "tunedi|--mca coll ^switchagg --coll iallreduce"
)
run() {  # NAME REP [mpirun args] [-- bench args]
  local name=$1 rep=$2 margs=() bargs=()
  shift 2
  while (($#)) && [[ $1 != --coll && $1 != --thread-multiple && $1 != --min-warmup ]]; do
    margs+=("$1"); shift
  done
  bargs=("$@")
  echo "rep $rep: $name" >&2
  fabric_mpirun $((hosts * ppn)) "$ppn" "${margs[@]}" -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
    -x SWITCHAGG_SWITCH_WINDOW "$bin/switchagg-bench" --min "$min" --max "$max" \
    --iters 12 --min-iters 5 --warmup 2 "${bargs[@]}" --label "$name" \
    --csv "$raw/${name}_rep$rep.csv" >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; exit 1; }
  # --settle's word that a size still measured: kept for the page.
  grep 'switchagg-bench: .*tuning' "$work/run.log" | sed "s/^/$name rep $rep: /" >>"$raw/unsettled.txt" || true
}
for rep in $(seq 1 "$reps"); do
  for p in "${host_paths[@]}"; do
    # shellcheck disable=SC2086
    run "${p%%|*}" "$rep" ${p#*|}
  done
  for k in $ks; do
    lease_k "$k"
    r0=$(reducer_rx)
    run "switch_k$k" "$rep" --mca coll_switchagg_offload on \
      --mca coll_switchagg_allreduce_algorithm switch -x SWITCHAGG_SWITCH_LEADERS="$leaders"
    r1=$(reducer_rx)
    # bytes each used reducer received over the run, per byte of the vectors
    # all ranks sent (sum of the sizes x iterations is in the CSV's count).
    echo "$k $r0 | $r1" >>"$raw/rx_rep$rep.txt"
    run "switchi_k$k" "$rep" --mca coll_switchagg_offload on -x SWITCHAGG_SWITCH_LEADERS="$leaders" \
      --coll iallreduce
    # auto, settled: 30 untimed calls a size, then up to 40 more while
    # online tuning still measures (--settle; --min-warmup alone is capped
    # by --warmup: both).
    run "auto_k$k" "$rep" --mca coll_switchagg_offload auto --min-warmup 30 --warmup 30 --settle 40
    run "autoi_k$k" "$rep" --mca coll_switchagg_offload auto --coll iallreduce --min-warmup 30 \
      --warmup 30 --settle 40
    run "autot_k$k" "$rep" --mca coll_switchagg_offload auto --thread-multiple --min-warmup 30 \
      --warmup 30 --settle 40
    lease_drop "$k"
  done
done

{
  echo "# Reducer hosts, agents at a compute host's link rate: emulated cluster, $hosts hosts × $ppn rank(s)"
  echo
  echo "Command: \`benchmarks/reducers_bench.sh --hosts $hosts --ppn $ppn --rate $rate --ks \"$ks\" --reps $reps --min $min --max $max\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Deployment: **reducer hosts** (scripts/fabric.py star, $hosts hosts x $ppn rank(s) and reducer hosts"
  echo "r1..r$kmax, every link shaped to $rate Mbit/s both ways; an agent on each reducer host; a"
  echo "job's lease from K of them through a fabric map, so every call is cut in K stripes). Not the"
  echo "agent in the switch (benchmarks/results/fabric.md). Each cell: median over $reps"
  echo "interleaved runs of switchagg-bench's per-size p50, ms. switch_kK: the switch path forced"
  echo "(SWITCHAGG_SWITCH_LEADERS=$leaders: every rank a member at one rank a host, node leaders at"
  echo "more). Theory: switch/ring = max(1, p/K)·P/(2(P−1)), p hosts, P ranks."
  echo
  cat "$raw"/*_rep*.csv | awk -F, -v p="$hosts" -v P=$((hosts * ppn)) -v mbit="$rate" -v ks="$ks" \
    "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1 }
    END {
      B = mbit * 1e6 / 8
      nk = split(ks, K, " ")
      printf "| bytes | ring ms | rabenseifner ms | tuned ms"
      for (j = 1; j <= nk; j++) printf " | switch K=%d ms | switch/ring K=%d (theory)", K[j], K[j]
      printf " | ring theory ms (2(P-1)/P N/B) |\n| ---: | ---: | ---: | ---:"
      for (j = 1; j <= nk; j++) printf " | ---: | ---:"
      printf " | ---: |\n"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        rg = median(v["ring" SUBSEP s]) / 1000
        printf "| %s | %.1f | %.1f | %.1f", human(s), rg, median(v["rabenseifner" SUBSEP s]) / 1000,
               median(v["tuned" SUBSEP s]) / 1000
        for (j = 1; j <= nk; j++) {
          k = K[j]; sw = median(v["switch_k" k SUBSEP s]) / 1000
          th = (p / k > 1 ? p / k : 1) * P / (2 * (P - 1))
          printf " | %.1f | %.2f (%.2f)", sw, sw / rg, th
        }
        printf " | %.1f |\n", 2 * (P - 1) / P * s / B * 1000
      }
    }'
  echo
  echo "\`auto\` settled (offload=auto with the lease, 30 untimed calls a size first, then up to 40"
  echo "more while online tuning still measures: switchagg-bench --settle), against the"
  echo "best fixed path for the same call, ms (× the best): blocking MPI_Allreduce against ring,"
  echo "Rabenseifner, Open MPI tuned and the switch; MPI_Iallreduce + MPI_Wait (warmed up with"
  echo "blocking calls, whose verdict it inherits) against Open MPI's own MPI_Iallreduce and the"
  echo "switch's (the host algorithms have no nonblocking form); MPI_Allreduce at"
  echo "MPI_THREAD_MULTIPLE (one thread calling) against the blocking switchagg paths (there the"
  echo "previous module is no candidate: docs/selection.md \"Threads\")."
  echo
  cat "$raw"/*_rep*.csv | awk -F, -v ks="$ks" "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1 }
    function pick(names, s,   a, n, i, m, best) {
      n = split(names, a, " "); best = ""
      for (i = 1; i <= n; i++) {
        if (v[a[i] SUBSEP s] == "") continue
        m = median(v[a[i] SUBSEP s]) / 1000
        if (best == "" || m < bm) { best = a[i]; bm = m }
      }
      bestname = best; return bm
    }
    END {
      nk = split(ks, K, " ")
      print "| bytes | K | best blocking | auto | best Iallreduce | auto Iallreduce | best own (threads) | auto at THREAD_MULTIPLE |"
      print "| ---: | ---: | --- | ---: | --- | ---: | --- | ---: |"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) for (j = 1; j <= nk; j++) {
        s = list[i]; k = K[j]
        b = pick("ring rabenseifner tuned switch_k" k, s); bn = bestname
        bi = pick("tunedi switchi_k" k, s); bin = bestname
        bt = pick("ring rabenseifner switch_k" k, s); btn = bestname
        a = median(v["auto_k" k SUBSEP s]) / 1000
        ai = median(v["autoi_k" k SUBSEP s]) / 1000
        at = median(v["autot_k" k SUBSEP s]) / 1000
        printf "| %s | %d | %s %.1f | %.1f (%.2f×) | %s %.1f | %.1f (%.2f×) | %s %.1f | %.1f (%.2f×) |\n",
               human(s), k, bn, b, a, a / b, bin, bi, ai, ai / bi, btn, bt, at, at / bt
      }
    }'
  echo
  echo "Bytes each reducer host received during the switch runs (rep 1; K, then one"
  echo "column per reducer host r1..r$kmax: before | after):"
  echo
  sed 's/^/    /' "$raw/rx_rep1.txt"
  echo
  if [[ -s $raw/unsettled.txt ]]; then
    echo "Sizes whose timed \`auto\` calls were not all settled (switchagg-bench --settle):"
    echo
    sed 's/^/    /' "$raw/unsettled.txt"
  else
    echo "Every timed \`auto\` call ran a settled choice (switchagg-bench --settle said nothing)."
  fi
  bench_notes
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "reducers_bench: wrote ${out#$root/}" >&2
