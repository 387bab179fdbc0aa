#!/usr/bin/env bash
# Routed collectives through an agent tree (issue 28): MPI_Reduce_scatter_block,
# MPI_Allgather (and MPI_Bcast, MPI_Reduce) on an emulated leaf-spine fabric
# (scripts/fabric.py, R racks × H hosts, host links at RATE Mbit/s, each rack's
# uplink at UPLINK), a leaf agent per rack and the spine agent (one tree
# lease), against Open MPI's tuned (component excluded) and switchagg's ring
# phase (half of its ring allreduce of the same N). PPN ranks per host (more
# than one: node leaders, each host one member of its leaf).
# switchagg-bench per collective and path, interleaved repetitions, medians of
# the per-size p50; bytes on each host link (up and down) and on each rack's
# uplink per call from the interface counters; the theory (docs/agent-
# protocol.md, "Routed calls through a tree") next to each figure. Writes
# benchmarks/results/routed_tree.md.
#
#   benchmarks/routed_tree_bench.sh [--build DIR] [--racks 2] [--hosts 3] [--rate 200]
#                                   [--uplink 300] [--colls "reduce_scatter_block allgather"]
#                                   [--ppn 1] [--reps 3] [--min 64K] [--max 4M] [--out FILE]
#                                   [--keep SIZE]  (the tree path's SWITCHAGG_SWITCH_KEEP; default
#                                   the library's: above it each call ends with the outcome agreement)
#                                   [--report]  (rewrite FILE from the last run's raw files)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build racks=2 hosts=3 rate=200 uplink=300 ppn=1 reps=3 min=64K max=4M keep="" report_only=0
colls="reduce_scatter_block allgather bcast reduce"
out=$root/benchmarks/results/routed_tree.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args routed_tree_bench 2,20 "build racks hosts rate uplink ppn colls reps min max keep out" \
  "report=report_only=1" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup routed-tree-bench "$(basename "$out" .md)_raw"
nh=$((racks * hosts)) np=$((racks * hosts * ppn))

# name|lease|mpirun args
paths=(
  "tree|tree|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1"
  "tuned|none|--mca coll ^switchagg"
)
[[ -z $keep ]] || paths+=("keep|tree|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1 -x SWITCHAGG_SWITCH_KEEP=$keep")
ring="ring|none|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"

run() {  # PATH_ENTRY PROGRAM ARGS...
  local entry=$1 rest lease args exports=""
  shift
  rest=${entry#*|}
  lease=${rest%%|*} args=${rest#*|}
  [[ $lease == tree ]] && exports=$tree_env
  # shellcheck disable=SC2086
  fabric_mpirun_with "$exports" "$np" "$ppn" $args -x SWITCHAGG_SWITCH_WINDOW "$@"
}

bench() {  # PATH_ENTRY COLL LABEL CSV
  local coll_args=()
  [[ $2 == allreduce ]] || coll_args=(--coll "$2")
  run "$1" "$bin/switchagg-bench" "${coll_args[@]}" --dtype float32 --min "$min" --max "$max" \
    --iters 20 --min-iters 3 --warmup 2 --label "$3" --csv "$4" >"$work/run.log" ||
    { cat "$work/run.log" >&2; exit 1; }
  if [[ $3 == tree || $3 == keep ]] && ! grep -q "a tree over $racks leaf agents" "$work/run.log"; then
    cat "$work/run.log" >&2; echo "routed_tree_bench: the tree path did not use the tree" >&2; exit 1
  fi
}

run_all() {
  local rep coll p name
  for rep in $(seq 1 "$reps"); do
    for coll in $colls; do
      for p in "${paths[@]}"; do
        name=${p%%|*}
        echo "rep $rep: $coll $name" >&2
        bench "$p" "$coll" "$name" "$raw/${coll}_${name}_rep${rep}.csv"
      done
    done
    echo "rep $rep: allreduce ring" >&2
    bench "$ring" allreduce ring "$raw/allreduce_ring_rep${rep}.csv"
  done
  : >"$raw/bytes.txt"
  for coll in $colls; do
    for p in "${paths[@]}"; do measure "${p%%|*}" "$p" "$coll" 1; done
  done
  measure ring "$ring" allreduce 2
  echo "$(date -u '+%Y-%m-%d %H:%M UTC')|$(cut -d' ' -f1-3 /proc/loadavg)" >"$raw/run.txt"
}

# Bytes per call at 4 MiB (8 calls per collective and path, plus the
# benchmark's own barriers and result gathers, a few hundred bytes), in units
# of N: host links up/down (mean over hosts; h1, the root of bcast/reduce,
# alone), each rack's uplink up/down. The ring: per allreduce, halved (a phase).
bsize=4194304
measure() {  # LABEL PATH_ENTRY COLL DIVISOR
  local coll_args=()
  [[ $3 == allreduce ]] || coll_args=(--coll "$3")
  fabric_py counters "$FABRIC" >"$work/c0"
  fabric_uplink_bytes >"$work/u0"
  run "$2" "$bin/switchagg-bench" "${coll_args[@]}" --dtype float32 --min "$bsize" --max "$bsize" \
    --iters 8 --min-iters 8 --warmup 0 >"$work/run.log" || { cat "$work/run.log" >&2; exit 1; }
  fabric_py counters "$FABRIC" >"$work/c1"
  fabric_uplink_bytes >"$work/u1"
  local d=$((8 * bsize * $4)) host up
  host=$(/usr/bin/python3 - "$work/c0" "$work/c1" "$d" <<'EOF'
import json, re, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
d = float(sys.argv[3])
hs = sorted((h for h in b if re.fullmatch(r"h\d+", h)), key=lambda h: int(h[1:]))
up = [(b[h]["tx_bytes"] - a[h]["tx_bytes"]) / d for h in hs]
dn = [(b[h]["rx_bytes"] - a[h]["rx_bytes"]) / d for h in hs]
print("%.3f %.3f %.3f %.3f" % (sum(up) / len(up), sum(dn) / len(dn), up[0], dn[0]))
EOF
  )
  up=$(paste "$work/u0" "$work/u1" | awk -v d="$d" '{ printf "%.3f %.3f ", ($5 - $2) / d, ($6 - $3) / d }')
  echo "$3 $1 $host $up" >>"$raw/bytes.txt"
}

if ((!report_only)); then
  bench_tree rtb 10.93
  tree_env=$("$bin/switchagg-ctl" lease create --job routed-tree-bench --slots 16 --ttl 2h \
    --nodes "h[1-$nh]" --fabric "$TREE_MAP" | grep '^export ')
  export SWITCHAGG_SWITCH_WINDOW=16
  run_all
fi

# Theory per call of N (P = R·H hosts, each one member of its leaf - with
# several ranks per host through its node leader -, a leaf serves H; the ring
# runs over all p ranks): units of N, "host up / host down / uplink up / uplink down".
theory_bytes() {
  awk -v c="$1" -v P="$nh" -v H="$hosts" -v p="$np" 'BEGIN {
    if (c == "reduce_scatter_block") printf "tree: host 1 / %.3f (its block), uplink 1 / %.3f (one partial up, its members'"'"' blocks down)", 1 / P, H / P
    else if (c == "allgather") printf "tree: host %.3f / %.3f (its block up, the rest down), uplink %.3f / %.3f (its members'"'"' blocks up, the other racks'"'"' down)", 1 / P, (P - 1) / P, H / P, (P - H) / P
    else if (c == "bcast") printf "tree: the root h1 1 up, every other host 1 down (mean up %.3f, down %.3f); the root'"'"'s uplink 1 up / 0 down, every other uplink 0 / 1", 1 / P, (P - 1) / P
    else if (c == "reduce") printf "tree: every host 1 up, the root h1 1 down (mean down %.3f); every uplink 1 up (one partial), the root'"'"'s 1 down, the others headers", 1 / P
    else printf ""
    if (c == "reduce_scatter_block" || c == "allgather")
      printf "; ring phase over %d ranks: %.3f each way on every host link and on every uplink (one ring hop leaves each host and crosses each rack boundary each way)", p, (p - 1) / p
  }'
}

# Link-bound time per call of N bytes (both directions of a link at once;
# B host link, U uplink), ms per byte, for the tree and the ring phase.
summarize() {  # COLL
  local coll=$1
  local files=("$raw/${coll}"_tree_rep*.csv "$raw/${coll}"_tuned_rep*.csv)
  [[ -z $keep ]] || files+=("$raw/${coll}"_keep_rep*.csv)
  [[ $coll == reduce_scatter_block || $coll == allgather ]] && files+=("$raw"/allreduce_ring_rep*.csv)
  cat "${files[@]}" | awk -F, -v coll="$coll" -v P="$nh" -v p="$np" -v H="$hosts" -v rate="$rate" \
    -v uplink="$uplink" -v keep="$keep" "$(cat "$root/benchmarks/lib/stats.awk")"'
    function mx(a, b) { return a > b ? a : b }
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; if ($1 != "ring") sizes[$5] = 1 }
    END {
      B = rate * 1e6 / 8; U = uplink * 1e6 / 8
      ringc = (coll == "reduce_scatter_block" || coll == "allgather")
      if (coll == "allgather") t_tree = mx((P - 1) / P / B, mx(H / P, (P - H) / P) / U)
      else t_tree = mx(1 / B, 1 / U)
      t_ring = (p - 1) / p * mx(1 / B, 1 / U)
      kh = keep == "" ? "" : " tree, keep " keep " ms | keep / tree |"
      ks = keep == "" ? "" : " ---: | ---: |"
      if (ringc) {
        printf "| bytes | tree ms | tuned ms | switchagg ring, one phase ms | tree / tuned | tree / ring phase (theory %.2f) | link-bound tree ms |%s\n", t_tree / t_ring, kh
        printf "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |%s\n", ks
      } else {
        printf "| bytes | tree ms | tuned ms | tree / tuned | link-bound tree ms |%s\n", kh
        printf "| ---: | ---: | ---: | ---: | ---: |%s\n", ks
      }
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        # The size asked (a power of two): the calls round N down to whole
        # blocks of P floats, the ring allreduce does not.
        nom = 1; while (nom * 2 <= s + p * 4) nom *= 2
        tr = median(v["tree" SUBSEP s]) / 1000; tu = median(v["tuned" SUBSEP s]) / 1000
        kc = ""
        if (keep != "") { kp = median(v["keep" SUBSEP s]) / 1000; kc = sprintf(" %.2f | %.2f |", kp, kp / tr) }
        if (ringc) {
          rg = median(v["ring" SUBSEP nom]) / 2000
          printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |%s\n", human(nom), tr, tu, rg, tr / tu, tr / rg, s * t_tree * 1000, kc
        } else
          printf "| %s | %.2f | %.2f | %.2f | %.1f |%s\n", human(nom), tr, tu, tr / tu, s * t_tree * 1000, kc
      }
    }'
  echo
  echo "Bytes per call of N = 4 MiB, units of N (8 calls; the ring: half an allreduce):"
  echo
  local hdr="| path | host up (mean) | host down (mean) | h1 up | h1 down |" sep="| --- | ---: | ---: | ---: | ---: |" r
  for r in $(seq 1 "$racks"); do hdr+=" rack $r uplink up | rack $r uplink down |"; sep+=" ---: | ---: |"; done
  echo "$hdr"
  echo "$sep"
  awk -v coll="$coll" '$1 == coll || ($1 == "allreduce" && (coll == "reduce_scatter_block" || coll == "allgather")) {
    printf "|"; for (i = 2; i <= NF; i++) printf " %s |", $i; printf "\n" }' "$raw/bytes.txt"
  echo
  echo "Theory: $(theory_bytes "$coll")."
}

IFS='|' read -r run_date run_load <"$raw/run.txt"
{
  echo "# Routed collectives through an agent tree on an emulated leaf-spine fabric ($racks racks × $hosts hosts × $ppn${keep:+, keep $keep})"
  echo
  echo "Command: \`benchmarks/routed_tree_bench.sh --racks $racks --hosts $hosts --rate $rate --uplink $uplink --ppn $ppn --colls \"$colls\" --reps $reps --min $min --max $max${keep:+ --keep $keep}\`,"
  echo "$run_date, $(nproc) cores, load average at the end $run_load."
  echo "Fabric: \`scripts/fabric.py\` leaf-spine, $racks racks × $hosts hosts, $ppn rank(s) per host$( ((ppn > 1)) && echo " (node leaders: a host is one member of its leaf)"), host links"
  echo "$rate Mbit/s, each rack's uplink $uplink Mbit/s ($(awk -v h="$hosts" -v r="$rate" -v u="$uplink" 'BEGIN { printf "%.1f:1", h * r / u }') oversubscribed), a leaf agent per leaf"
  echo "switch (parent: the spine agent), the spine agent on the spine; \`tree\` = one lease over the"
  echo "leaves and the spine (the run's log must say \"a tree over $racks leaf agents\"); \`tuned\` = Open MPI's"
  echo "tuned (the component excluded); \"switchagg ring, one phase\" = half of switchagg's ring"
  echo "allreduce of the same N in the same repetitions (a ring allreduce is one ring reduce-scatter"
  echo "and one ring allgather of N). UCX over TCP. Each cell is the median over $reps interleaved runs of"
  echo "switchagg-bench's per-size p50 (float32 sum; bytes = the whole vector N as asked: reduce-scatter"
  echo "and allgather round it down to whole blocks of $np floats, e.g. $((65536 / (4 * np) * 4 * np)) of 64 KiB), in ms."
  [[ -z $keep ]] || echo "\`keep\` = the tree with SWITCHAGG_SWITCH_KEEP=$keep (calls up to it end without the outcome agreement; \`tree\` runs the library's default)."
  echo
  echo "Theory (link-bound, both directions of a link at once; B host link, U uplink, P = $nh members"
  echo "(hosts), H = $hosts per rack, p = $np ranks): the tree's reduce-scatter puts N up each host link and one"
  echo "partial (N) up each uplink, max(N/B, N/U); its allgather (P−1)/P·N down each host link and"
  echo "H/P·N, (P−H)/P·N on each uplink; bcast and reduce N on the root's link and each uplink,"
  echo "max(N/B, N/U). A ring phase puts (p−1)/p·N on each host link and on each uplink,"
  echo "(p−1)/p·max(N/B, N/U). So a float reduce-scatter through the tree takes p/(p−1) of a ring"
  echo "phase (every member sends its whole vector so the leaf sums in rank order), an allgather"
  echo "((P−1)/P)/((p−1)/p) of one; no theory for tuned, whose algorithm Open MPI picks (measured only)."
  for coll in $colls; do
    echo
    echo "## $coll, $racks racks × $hosts hosts, $rate Mbit/s host links, $uplink Mbit/s uplinks"
    echo
    summarize "$coll"
  done
  bench_notes
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
