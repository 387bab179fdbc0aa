#!/usr/bin/env bash
# The demo's one-screen summary. Args: OUTDIR NP METRICS_TEXT [PLOTS [EXTRA]]
# (EXTRA: lines printed after the agent's counters, e.g. what Slurm did).
set -euo pipefail
out=$1 np=$2 metrics=$3 plots=${4:-} extra=${5:-}

printf '\n\033[1mswitchagg demo summary (np=%s)\033[0m\n' "$np"
printf '%-9s | %-18s %10s | %-18s %10s | %7s | %-18s %10s | %9s | %12s %12s\n' \
  size "offload=on path" "time us" "offload=off path" "time us" "on/off" "offload=auto path" "time us" \
  "auto/best" "sent/rank on" "off"
# Bytes a rank sends per allreduce of N bytes: measured by the component when
# the bench reports it (bytes_sent_per_rank column), else the algorithm's
# textbook volume.
table=$(awk -F, -v np="$np" '
  function human(b) { b = b + 0; return b >= 1048576 ? sprintf("%gM", b / 1048576) : b >= 1024 ? sprintf("%gK", b / 1024) : b "" }
  function model(alg, n,   l) {
    if (alg == "switch") return n
    if (alg == "ring" || alg == "rabenseifner") return int(2 * (np - 1) / np * n)
    if (alg == "recursive_doubling") { l = 0; for (p = 1; p < np; p *= 2) l++; return l * n }
    return -1
  }
  # "previous" is the module Open MPI would have used: its bytes are not counted here.
  function sent(alg, n, measured) { if (alg == "previous") return "n/a"; if (measured != "") return human(measured); v = model(alg, n); return v < 0 ? "n/a" : human(v) }
  FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; f++; next }
  { b = $col["bytes"]; sizes[b] = 1
    m = ("bytes_sent_per_rank" in col) ? $col["bytes_sent_per_rank"] : ""
    if (f == 1)      { a1[b] = $col["algorithm"]; t1[b] = $col["avg_us"]; s1[b] = sent(a1[b], b, m) }
    else if (f == 2) { a2[b] = $col["algorithm"]; t2[b] = $col["avg_us"]; s2[b] = sent(a2[b], b, m) }
    else             { a3[b] = $col["algorithm"]; t3[b] = $col["avg_us"] } }
  END {
    for (b in sizes) {
      best = (t1[b] > 0 && t1[b] < t2[b]) || t2[b] <= 0 ? t1[b] : t2[b]
      printf "%d %-9s | %-18s %10.1f | %-18s %10.1f | %7.2f | %-18s %10.1f | %9.2f | %12s %12s\n", b, human(b), a1[b], t1[b], a2[b], t2[b], (t2[b] > 0 ? t1[b] / t2[b] : 0), (b in a3 ? a3[b] : "n/a"), t3[b], (best > 0 && t3[b] > 0 ? t3[b] / best : 0), s1[b], s2[b]
    }
  }' "$out/bench-switch.csv" "$out/bench-host.csv" "$out/bench-auto.csv" | sort -n | cut -d" " -f2-)
printf '%s\n' "$table"
echo "paths: switch = the switch agent; ring, recursive_doubling, rabenseifner, hierarchical ="
echo "  switchagg's host algorithms; previous = Open MPI's own module (tuned), picked by the cost"
echo "  model when it is cheapest (its bytes are not counted: n/a). on/off < 1: the switch was faster."
echo "offload=auto is what every job gets (srun --switch-agg=auto): online tuning timed the candidates"
echo "  in the warm-up and serves the fastest; auto/best = its time over the faster of on and off."
echo "  on, off and auto are three runs one after another: where auto served off's path, auto/best"
echo "  is their run-to-run noise (1.4-1.9x seen with 4 ranks on 2 cores; BENCHMARKS.md interleaves)."
printf '%s\n' "$table" | awk -F'|' '$6 + 0 > 0 { print $6 + 0 }' | sort -g |
  awk '{ r[NR] = $1 } END { if (NR) printf "auto/best over %d sizes: median %.2f, worst %.2f\n", NR, r[int((NR + 1) / 2)], r[NR] }'

# MPI_Barrier and MPI_Reduce_scatter_block beside it: who served, how fast.
for coll in barrier reduce_scatter_block; do
  [[ -f $out/$coll-switch.csv && -f $out/$coll-host.csv ]] || continue
  echo
  awk -F, -v coll="$coll" '
    function human(b) { b = b + 0; return b >= 1048576 ? sprintf("%gM", b / 1048576) : b >= 1024 ? sprintf("%gK", b / 1024) : b "" }
    FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; f++; next }
    { b = $col["bytes"]; if (coll == "barrier") b = 0; sizes[b] = 1
      if (f == 1) { a1[b] = $col["algorithm"]; t1[b] = $col["p50_us"]; c1[b] = $col["check"] }
      else        { a2[b] = $col["algorithm"]; t2[b] = $col["p50_us"]; c2[b] = $col["check"] } }
    END {
      printf "%-22s | %-14s %10s | %-14s %10s | %7s | %s\n", (coll == "barrier" ? "MPI_Barrier" : "MPI_Reduce_scatter_block"), "offload=on", "p50 us", "offload=off", "p50 us", "on/off", "check"
      for (b in sizes)
        printf "%d   %-20s | %-14s %10.1f | %-14s %10.1f | %7.2f | %s/%s\n", b, (coll == "barrier" ? "-" : human(b)), a1[b], t1[b], a2[b], t2[b], (t2[b] > 0 ? t1[b] / t2[b] : 0), c1[b], c2[b]
    }' "$out/$coll-switch.csv" "$out/$coll-host.csv" | { IFS= read -r head; echo "$head"; sort -n | cut -d" " -f2-; }
done
echo "  (switch = served through the agent; previous = Open MPI's own module. One node: the agent"
echo "  shares the cores and adds a round trip, so it is slower here; on a cluster see BENCHMARKS.md.)"

echo
for label in switch host; do
  log=$out/train-$label.log
  printf 'train (offload=%s): %s; %s\n' "$([[ $label == switch ]] && echo on || echo off)" \
    "$(grep -m1 '^time per step' "$log" | sed 's/ (mean.*//')" "$(grep -m1 '^final loss' "$log")"
  grep '^bucket' "$log" | sed 's/^/    /'
done
if cmp -s "$out/loss-switch.csv" "$out/loss-host.csv"; then
  echo "loss curves: bitwise identical with offload on and off"
else
  awk -F, 'NR == FNR { a[$1] = $2; next } FNR > 1 { d = $2 - a[$1]; if (d < 0) d = -d; if (d > m) m = d } END { printf "loss curves: max |difference| %.3g (float sums reduced in a different order)\n", m }' \
    "$out/loss-switch.csv" "$out/loss-host.csv"
fi
echo
echo "agent: $(printf '%s\n' "$metrics" | awk '/^switchagg_(chunks_reduced|bytes_reduced|groups_created|groups_aborted)_total/ { printf "%s=%s  ", $1, $2 }')"
[[ -n $extra ]] && printf '%s\n' "$extra"
[[ -n $plots ]] && echo "plots: $plots"
echo "logs and CSV: $out"
