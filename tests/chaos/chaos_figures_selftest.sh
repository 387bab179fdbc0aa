#!/usr/bin/env bash
# chaos_figures_selftest.sh: the soak's verdict (chaos_figures.py) on made-up
# inputs: a soak whose switch path served between faults passes; the same
# soak where it never served, served too few calls, came back too late
# after a fault, or did not serve the final job fails, each naming why.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# make DIR PATH_AFTER_FAULT2 FINAL_SWITCH_CALLS SWITCH_CALLS: two checker
# jobs (10 and 11) of 20 s from t=0 and t=20 s, rank-0 samples every second
# on the switch path except 5-9 s (fallback after fault 1 at 4 s) and,
# after fault 2 at 25 s, on PATH_AFTER_FAULT2 until 39 s; the final job 12.
make() {
  local d=$1 after=$2 final=$3 switch_calls=$4 t p
  mkdir -p "$d/logs"
  : >"$d/jobs.log"
  printf 'fault 4000 agent_kill\nfault 25000 lease_delete job=11\n' >"$d/faults.log"
  for job in 10 11; do
    : >"$d/logs/$job.0"
    for ((t = (job - 10) * 20; t < (job - 9) * 20; t++)); do
      p=switch
      ((t >= 5 && t < 10)) && p=ring
      ((t > 25)) && p=$after
      echo "ok $((t * 1000)) $((t * 100)) $p" >>"$d/logs/$job.0"
    done
    echo "summary calls=2000 wrong=0 max_call_ms=900 fallbacks=1 rejoins=1 switch_calls=$switch_calls" >>"$d/logs/$job.0"
    echo "job loop=1 n=$job kind=check rc=0 start=$(((job - 10) * 20000)) end=$(((job - 9) * 20000)) limit_s=72 out=loop1.$job.out" >>"$d/jobs.log"
  done
  printf 'ok 41000 1 switch\nok 42000 100 switch\nsummary calls=100 wrong=0 max_call_ms=5 fallbacks=0 rejoins=0 switch_calls=%s\n' \
    "$final" >"$d/logs/12.0"
}
verdict() {  # DIR -> figures on stdout
  python3 "$here/chaos_figures.py" --out "$1" --leases-left 0 --final-rc 0 --final-job 12 \
    --call-bound-ms 30000 --minutes 1 --recovery-bound-ms 10000 --min-switch-share 0.25
}
expect() {  # NAME VERDICT PATTERN ARGS...
  local name=$1 want=$2 pattern=$3
  shift 3
  make "$work/$name" "$@"
  verdict "$work/$name" >"$work/$name.txt"
  grep -q "^verdict: $want" "$work/$name.txt" || { cat "$work/$name.txt"; fail "$name: verdict is not $want"; }
  grep -Eq -- "$pattern" "$work/$name.txt" || { cat "$work/$name.txt"; fail "$name: figures lack /$pattern/"; }
  echo "ok $name: $want"
}
# Served between faults: back 1 s after each fault, 75 % on the switch.
expect served PASS "recoveries past the bound .*: 0" switch 100 1500
# The switch never came back after fault 2 (until the final job, 16 s
# later: past the 10 s bound).
expect late FAIL "recoveries past the bound .*: 1" ring 100 1500
# Few calls through the switch path.
expect share FAIL "calls served by the switch path: 7.3 %" switch 100 100
# The final job (--switch-agg=require) not served by the switch path.
expect final FAIL "final clean job after the chaos: ok, 0 calls" switch 0 1500
echo PASS
