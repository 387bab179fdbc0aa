#!/usr/bin/env bash
# Renders switchagg-bench CSV output as two PNGs: latency vs message size and
# bus bandwidth vs message size, one line per path (the CSV `label` column;
# `algorithm` when a run had no label). Several files or repeated runs may be
# given: each point is the median of all rows with that label and size.
#
#   scripts/plot_bench.sh [-o OUTDIR] [-t TITLE] run1.csv [run2.csv ...]
#
# Writes OUTDIR/allreduce_latency.png and OUTDIR/allreduce_busbw.png (OUTDIR
# defaults to the first CSV's folder) and prints their paths. Needs gnuplot
# (Debian gnuplot-nox, installed by scripts/bootstrap.sh).
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

outdir="" title="MPI_Allreduce"
while getopts "o:t:h" opt; do
  case $opt in
    o) outdir=$OPTARG ;;
    t) title=$OPTARG ;;
    h) usage 0 ;;
    *) usage 2 ;;
  esac
done
shift $((OPTIND - 1))
(($# > 0)) || usage 2
command -v gnuplot >/dev/null || { echo "plot_bench: gnuplot not found (scripts/bootstrap.sh installs it)" >&2; exit 1; }
outdir=${outdir:-$(dirname "$1")}
mkdir -p "$outdir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "label bytes latency busbw" for every data row, columns found by header
# name. Latency is the per-call median (p50_us) when the CSV has it.
for f in "$@"; do
  awk -F, '
    /^label,/ { for (i = 1; i <= NF; i++) col[$i] = i; next }
    !("bytes" in col) { next }
    { l = $col["label"]; if (l == "") l = $col["algorithm"]
      gsub(/ /, "_", l)
      t = ("p50_us" in col) ? $col["p50_us"] : $col["avg_us"]
      bw = ("p50_us" in col && t > 0) ? $col["busbw_GBps"] * $col["avg_us"] / t : $col["busbw_GBps"]
      print l, $col["bytes"], t, bw }' "$f"
done >"$work/rows"
[[ -s $work/rows ]] || { echo "plot_bench: no data rows in $*" >&2; exit 1; }

# Median per (label, bytes) of column $1 (3 = latency, 4 = busbw), one data
# file per label for gnuplot.
medians() {
  sort -k1,1 -k2,2n -k"$1","$1"g "$work/rows" | awk -v c="$1" -v dir="$work" -v tag="$2" '
    function flush() { if (n) print key_b, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) >> (dir "/" key_l "." tag); n = 0 }
    { if ($1 != key_l || $2 != key_b) { flush(); key_l = $1; key_b = $2 } v[++n] = $c }
    END { flush() }'
}
medians 3 lat
medians 4 bw

plot() {  # $1 tag, $2 png, $3 y label, $4 extra gnuplot settings
  local cmds="" sep=""
  for d in "$work"/*."$1"; do
    local name; name=$(basename "$d" ".$1")
    cmds+="$sep'$d' using 1:2 with linespoints title '${name//_/ }'"
    sep=", "
  done
  gnuplot <<GP
set terminal png size 1000,640 noenhanced
set output '$2'
set title '$title'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set ylabel '$3'
set key left top
set grid
$4
plot $cmds
GP
  echo "$2"
}
plot lat "$outdir/allreduce_latency.png" "latency (us, median)" "set logscale y 10"
plot bw "$outdir/allreduce_busbw.png" "bus bandwidth (GB/s, median)" ""
