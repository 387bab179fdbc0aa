#!/usr/bin/env bash
# The transport benchmark: switchagg-ucx-bench (PeerGroup tag path, lanes 1
# and 4, busy-poll waits like ucx_perftest, plus lanes 1 with the library's
# default blocking waits) beside ucx_perftest (tag_lat / tag_bw) on the same
# transports, in ONE run. Runs are interleaved (every path for a size, rep
# after rep), each point is the median over repetitions. Latency: one-way
# 50%ile (both tools); bandwidth: total bytes / wall time ("overall", MB =
# 10^6 B), 32 messages in flight on our side (ucx_perftest's default window
# is larger), default admission (64 KiB threshold, 8 MiB window).
# Writes benchmarks/results/ucx.md (table, ratios, the exact command).
#
#   benchmarks/ucx_bench.sh [--build DIR] [--reps 3] [--transports "shm tcp"]
#                           [--out FILE] [--quick]
#
# Transports: shm = UCX_TLS=posix,sysv,cma,self; tcp = UCX_TLS=tcp (both
# tools; switchagg's failure sentinel always uses its own TCP context).
# Both tools pin their two processes to CPUs 0 and 1 (ucx_perftest -c,
# switchagg-ucx-bench --cpus) so busy-polling ranks do not share a core.
# Target (issue 2): bandwidth >= 1 MiB within 10% of ucx_perftest tag_bw,
# 8-byte latency within 25% of tag_lat.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build reps=3 transports="shm tcp" out=$root/benchmarks/results/ucx.md
lat_sizes="8 64 512 4096"
bw_sizes="65536 262144 1048576 4194304 16777216 67108864"
cmdline="benchmarks/ucx_bench.sh $*"
source "$root/benchmarks/lib/bench_args.sh"
bench_args ucx_bench 2,16 "build reps transports out" "quick=reps=1,lat_sizes=8,bw_sizes=1048576" \
  "$@"
bench=$(cd "$build" && pwd)/bin/switchagg-ucx-bench
[[ -x $bench ]] || { echo "ucx_bench: $bench not built" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "ucx_bench: ucx_perftest missing (ucx-utils)" >&2; exit 1; }

raw=$(mktemp) port=$((20000 + RANDOM % 20000))
trap 'rm -f "$raw"' EXIT
tls_of() { [[ $1 == shm ]] && echo posix,sysv,cma,self || echo tcp; }
iters_of() {  # ~256 MiB of traffic per bandwidth point, 20000 round trips for latency
  local n=$((268435456 / $2)); [[ $1 == lat ]] && n=20000
  ((n < 8)) && n=8; ((n > 20000)) && n=20000; echo $n
}

# perftest <tls> <lat|bw> <size>: one value (50%ile us, or overall MB/s).
perftest() {
  local test=tag_$2 n; n=$(iters_of "$2" "$3"); port=$((port + 1))
  UCX_TLS=$1 timeout 120 ucx_perftest -t "$test" -s "$3" -n "$n" -p $port -c 0 -f >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  local line
  line=$(UCX_TLS=$1 timeout 120 ucx_perftest 127.0.0.1 -t "$test" -s "$3" -n "$n" -p $port -c 1 -f 2>/dev/null | tail -1)
  wait $server 2>/dev/null || true
  [[ $2 == lat ]] && awk '{print $2}' <<<"$line" || awk '{print $6}' <<<"$line"
}

# ours <tls> <lat|bw> <size> <lanes> <busy|blocking>: one value (median us, or MB/s).
ours() {
  UCX_TLS=$1 SWITCHAGG_LOG_LEVEL=error timeout 300 "$bench" --test "$2" --sizes "$3" \
    --lanes "$4" --wait "$5" --iters "$(iters_of "$2" "$3")" --cpus 0,1 --csv |
    awk -F, '/^(lat|bw),/{print $3}'
}

for ((rep = 1; rep <= reps; rep++)); do
  for tr in $transports; do
    tls=$(tls_of "$tr")
    for kind in lat bw; do
      sizes=$lat_sizes; [[ $kind == bw ]] && sizes=$bw_sizes
      for s in $sizes; do
        echo "$tr $kind $s perftest $(perftest "$tls" "$kind" "$s")" >>"$raw"
        for lanes in 1 4; do
          echo "$tr $kind $s lanes$lanes $(ours "$tls" "$kind" "$s" "$lanes" busy)" >>"$raw"
        done
        echo "$tr $kind $s blocking1 $(ours "$tls" "$kind" "$s" 1 blocking)" >>"$raw"

        echo "rep $rep/$reps $tr $kind $s done" >&2
      done
    done
  done
done

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
value() { awk -v t="$1" -v k="$2" -v s="$3" -v p="$4" '$1==t && $2==k && $3==s && $4==p && $5!="" {print $5}' "$raw" | median; }

{
  echo "# Transport benchmark: switchagg PeerGroup vs ucx_perftest"
  echo
  echo "Command: \`$cmdline\` (build: \`${build#"$root"/}\`), $(date -u '+%Y-%m-%d %H:%M UTC'),"
  echo "$(nproc) cores, UCX $(ucx_info -v | awk '/Version/{print $3}'), $reps repetitions (median),"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs shared the machine)."
  echo
  echo "Latency: one-way µs, 50%ile (lower is better; ratio = ours / perftest)."
  echo "Bandwidth: MB/s overall (higher is better; ratio = ours / perftest)."
  echo
  echo "| transport | test | size (B) | ucx_perftest | lanes=1 | ratio | lanes=4 | ratio | lanes=1 blocking | ratio |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for tr in $transports; do
    for kind in lat bw; do
      sizes=$lat_sizes; [[ $kind == bw ]] && sizes=$bw_sizes
      for s in $sizes; do
        pf=$(value "$tr" "$kind" "$s" perftest)
        l1=$(value "$tr" "$kind" "$s" lanes1)
        l4=$(value "$tr" "$kind" "$s" lanes4)
        b1=$(value "$tr" "$kind" "$s" blocking1)
        awk -v tr="$tr" -v k="$kind" -v s="$s" -v pf="$pf" -v l1="$l1" -v l4="$l4" -v b1="$b1" 'BEGIN {
          r1 = (pf > 0) ? l1 / pf : 0; r4 = (pf > 0) ? l4 / pf : 0; rb = (pf > 0) ? b1 / pf : 0
          printf "| %s | %s | %d | %.3f | %.3f | %.2f | %.3f | %.2f | %.3f | %.2f |\n",
                 tr, k, s, pf, l1, r1, l4, r4, b1, rb }'
      done
    done
  done
  echo
  echo "Raw values (transport, test, size, path, value per repetition):"
  echo
  echo '```'
  sort -k1,1 -k2,2 -k3,3n -k4,4 "$raw"
  echo '```'
} >"$out"
echo "ucx_bench: wrote $out" >&2
