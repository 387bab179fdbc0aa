#!/usr/bin/env bash
# Data plane under abuse: one job's offloaded allreduces (switchagg-bench
# --check, 2 ranks, switch path forced) timed alone and while another party
# abuses the same agent's data plane, interleaved (quiet, attack, quiet,
# attack, ...) so machine noise hits both alike. Attacks:
#   junk       N raw TCP connections to data.listen sending garbage, re-opened every second
#   half-open  N TCP connections that never send a byte (half-done handshakes)
#   huge-groups a member with a valid token of ANOTHER lease joining group
#               after group of 4096 members that never form
#   silent     that member joins a 2-member group and never contributes
#   reconnect  that member connects and says HELLO over and over
# Prints one row per attack: p50 per size quiet vs attacked (ratio), and
# whether every result checked (--check exits 1 on a wrong one).
#
#   benchmarks/data_plane_abuse.sh [--build DIR] [--reps 3] [--conns 1000] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build reps=3 conns=1000 out=""
source "$root/benchmarks/lib/bench_args.sh"
bench_args data_plane_abuse 2,15 "build reps conns out" "" "$@"
build=$(cd "$build" && pwd)
bin=$build/bin
work=$(mktemp -d /tmp/switchagg-abuse.XXXXXX)
# shellcheck source=../scripts/lib_agent.sh
source "$root/scripts/lib_agent.sh"
attacker=""
trap '[[ -n $attacker ]] && kill "$attacker" 2>/dev/null; agent_stop; rm -rf "$work"' EXIT
ulimit -n "$(ulimit -Hn)"  # the flood and the agent need a descriptor per connection
agent_start "$root/config/agent.toml" "$work" --set agent.log_level=warn
ctl() { "$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" "$@"; }
eval "$(ctl lease create --job victim --slots 8 --ttl 2h | grep '^export ')"
bad_token=$(ctl --json lease create --job attacker --uid 4242 --slots 4 --ttl 2h |
  sed -n 's/.*"token": *"\([0-9a-f]*\)".*/\1/p')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
export SWITCHAGG_SWITCH_WINDOW=8 UCX_LOG_LEVEL=error
comp_path="$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://'):$build/lib/openmpi"

# One victim run; prints "bytes p50_us" rows.
victim() {
  mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mca_base_component_path "$comp_path" \
    -np 2 --mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch \
    -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT -x SWITCHAGG_SWITCH_WINDOW \
    "$bin/switchagg-bench" --check --min 64K --max 4M --iters 40 --min-iters 10 --warmup 3 \
    --csv "$work/run.csv" >/dev/null 2>"$work/err.txt" || { echo "WRONG-OR-FAILED"; cat "$work/err.txt" >&2; return 0; }
  awk -F, 'NR > 1 { print $5, $15, $13 }' "$work/run.csv"
}

startAttack() {
  case $1 in
    junk|half-open)
      local m=junk
      [[ $1 == half-open ]] && m=idle
      "$bin/switchagg-test-control-flood" --address "$AGENT_DATA" --connections "$conns" --mode "$m" \
        --reopen-ms 1000 >"$work/attack.txt" 2>&1 & ;;
    *)
      "$bin/switchagg-test-data-abuse" --agent "$AGENT_DATA" --token "$bad_token" --mode "$1" \
        --seconds 3600 >"$work/attack.txt" 2>&1 & ;;
  esac
  attacker=$!
  sleep 2
}
stopAttack() {
  kill "$attacker" 2>/dev/null || true
  wait "$attacker" 2>/dev/null || true
  attacker=""
  sleep 1
}

report() {
  printf '| attack | size | quiet p50 (µs) | attacked p50 (µs) | attacked/quiet | every result right |\n'
  printf '| --- | ---: | ---: | ---: | ---: | --- |\n'
}
{
  echo "data plane under abuse: $(date -u +%FT%TZ), $reps reps, $conns connections for junk/half-open"
  report
} | tee "$work/report.md"
for attack in junk half-open huge-groups silent reconnect; do
  : >"$work/quiet.txt"
  : >"$work/attacked.txt"
  for _ in $(seq 1 "$reps"); do
    victim >>"$work/quiet.txt"
    startAttack "$attack"
    victim >>"$work/attacked.txt"
    stopAttack
  done
  ok=yes
  grep -q WRONG-OR-FAILED "$work/quiet.txt" "$work/attacked.txt" && ok=NO
  grep -vq switch <(grep -v WRONG "$work/attacked.txt") && ok="$ok (some calls not on the switch path)"
  /usr/bin/python3 - "$attack" "$work/quiet.txt" "$work/attacked.txt" "$ok" <<'EOF' | tee -a "$work/report.md"
import statistics, sys
attack, quiet, attacked, ok = sys.argv[1:5]
def load(path):
    rows = {}
    for line in open(path):
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            rows.setdefault(int(parts[0]), []).append(float(parts[1]))
    return rows
q, a = load(quiet), load(attacked)
for size in sorted(q):
    if size not in a:
        continue
    mq, ma = statistics.median(q[size]), statistics.median(a[size])
    print("| %s | %d KiB | %.0f | %.0f | %.2f | %s |" % (attack, size // 1024, mq, ma, ma / mq, ok))
EOF
done
"$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" metrics | grep -E '^switchagg_(rejected_total|clients_connected|groups )' |
  tee -a "$work/report.md"
[[ -n $out ]] && cp "$work/report.md" "$out"
true
