#!/usr/bin/env bash
# Markdown summary of one np's coll_bench.sh runs: median latency per path
# and size, ratios against tuned, the algorithm auto chose, and the verdict
# on the target (auto <= 1.10 x tuned everywhere, < 1.0 x at >= 256 KiB).
#   benchmarks/coll_summary.sh NP RAWDIR PATH_NAME...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
np=$1 raw=$2
shift 2
names="$*"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat "$raw"/np"${np}"_*_rep*.csv 2>/dev/null | awk -F, '
  /^label,/ { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { print $col["label"], $col["bytes"], $col["p50_us"], $col["algorithm"], $col["check"] }' \
  >"$work/rows"
if [[ ! -s $work/rows ]]; then
  echo "## np=$np: no results (every run failed; see $raw/*.log)"
  echo
  exit 0
fi

# label bytes median_us failed_reps chosen_algorithm(last row seen)
sort -k1,1 -k2,2n -k3,3g "$work/rows" | awk '
  function flush() {
    if (n) print l, b, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), bad, alg
    n = 0; bad = 0
  }
  { if ($1 != l || $2 != b) { flush(); l = $1; b = $2 } v[++n] = $3; alg = $4; if ($5 == "FAILED") bad++ }
  END { flush() }' >"$work/medians"

awk -v names="$names" -v np="$np" "$(cat "$root/benchmarks/lib/stats.awk")"'
  { t[$1, $2] = $3; bad[$1, $2] = $4; alg[$1, $2] = $5; sizes[$2] = 1; if ($4 > 0) failed++ }
  END {
    n = split(names, name, " ")
    hdr = "| size | auto chose"; sep = "|---:|---"
    for (i = 1; i <= n; i++) { hdr = hdr " | " name[i]; sep = sep "|---:" }
    print "## np=" np "\n\nMedian latency (us) per path, and ratio to tuned:\n"
    print hdr " | auto/tuned | best host/tuned | target |"; print sep "|---:|---:|---|"
    m = sortedKeys(sizes, list)
    for (k = 1; k <= m; k++) {
      s = list[k]; line = "| " human(s) " | " ((("auto", s) in alg) ? alg["auto", s] : "-")
      best = ""
      for (i = 1; i <= n; i++) {
        p = name[i]; v = ((p, s) in t) ? sprintf("%.1f", t[p, s]) : "-"
        if ((p, s) in bad && bad[p, s] > 0) v = v " (check FAILED)"
        line = line " | " v
        if (p != "tuned" && p != "han" && p != "auto" && p != "switch" && (p, s) in t && (best == "" || t[p, s] < best)) best = t[p, s]
      }
      r = ""; rb = ""; verdict = "-"
      if (("tuned", s) in t && ("auto", s) in t && t["tuned", s] > 0) {
        r = t["auto", s] / t["tuned", s]
        ok = r <= 1.10 && (s < 262144 || r < 1.0)
        verdict = ok ? "met" : "**missed**"; if (!ok) missed++; total++
        r = sprintf("%.2f", r)
      }
      if (best != "" && ("tuned", s) in t && t["tuned", s] > 0) rb = sprintf("%.2f", best / t["tuned", s])
      print line " | " r " | " rb " | " verdict " |"
    }
    printf "\nTarget at np=%d: met at %d of %d sizes.", np, total - missed, total
    if (failed) printf " **%d result rows had validation failures.**", failed
    print "\n"
  }' "$work/medians"
