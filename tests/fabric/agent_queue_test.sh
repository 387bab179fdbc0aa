#!/usr/bin/env bash
# agent_queue_test.sh: fabric.py up --agent-queue N puts a shallow queue
# (pfifo limit N) on the switch's port toward the agent host, so an incast
# can be shown there. 3 hosts at 50 Mbit/s send 2 MB each at once over TCP
# to a sink on the agent host, whose link is also 50 Mbit/s (a 3:1 incast):
#   --agent-queue 8  the port's queue is pfifo limit 8 (`counters`: the
#                    agent's "port_queue"), it dropped packets and the
#                    senders retransmitted (their /proc/net/snmp)
#   no option        the port keeps the interface's own deep queue (none
#                    recorded) and the senders retransmit less than above
# In both runs the sink receives every byte (TCP recovers). Needs root
# (network namespaces, tc), Mininet; no build. About 15 s.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib_fabric.sh"
name=${SWITCHAGG_TEST_FABRIC:-ftaq}
subnet=${SWITCHAGG_TEST_SUBNET:-10.63}
probe=$root/tests/fabric/incast_probe.py
work=$(mktemp -d /var/tmp/switchagg-queue-test.XXXXXX)
die() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
  local rc=$?
  fabric_down
  if ip -o link show | grep -E "^[0-9]+: ${name}s[0-9]+" >/dev/null; then
    echo "FAIL: fabric $name left links" >&2
    rc=1
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, tc)"

# Retransmitted TCP segments of h1..h3 so far.
retransmits() { fabric_retransmits h1 h2 h3 || die "no retransmit counter"; }
# The agent's port_queue field $1 (empty when the port has none).
port_queue() {
  fabric_py counters "$name" | /usr/bin/python3 -c '
import json, sys
q = json.load(sys.stdin).get("agent", {}).get("port_queue")
print("" if q is None else q[sys.argv[1]])' "$1"
}
# incast LABEL: h1..h3 send 2 MB each to the agent host at once; sets
# RETRANS (the senders' retransmits during it); fails unless all arrived.
incast() {
  local before h pids=()
  before=$(retransmits) || exit 1
  timeout 60 /usr/bin/python3 "$root/scripts/fabric.py" exec "$name" agent -- \
    /usr/bin/python3 "$probe" sink 5001 3 >"$work/sink.log" 2>&1 &
  local sink=$!
  for _ in $(seq 50); do grep -q LISTENING "$work/sink.log" && break; sleep 0.1; done
  grep -q LISTENING "$work/sink.log" || die "$1: the sink did not start: $(cat "$work/sink.log")"
  for h in h1 h2 h3; do
    timeout 60 /usr/bin/python3 "$root/scripts/fabric.py" exec "$name" "$h" -- \
      /usr/bin/python3 "$probe" send "$subnet.1.1" 5001 2000000 &
    pids+=($!)
  done
  for h in "${pids[@]}"; do wait "$h" || die "$1: a sender failed"; done
  wait "$sink" || die "$1: the sink failed: $(cat "$work/sink.log")"
  grep -q '^RECEIVED 6000000$' "$work/sink.log" || die "$1: not every byte arrived: $(cat "$work/sink.log")"
  local after
  after=$(retransmits) || exit 1
  RETRANS=$((after - before))
}

fabric_up "$name" --hosts 3 --rate 50 --agent-rate 50 --agent-queue 8 --subnet "$subnet" ||
  die "fabric up --agent-queue 8"
[[ $(port_queue limit) == 8 ]] || die "the agent's port has no pfifo limit 8: $(fabric_py counters "$name")"
incast "queue 8"
dropped=$(port_queue dropped)
echo "--agent-queue 8: the agent's port dropped $dropped packets, senders retransmitted $RETRANS segments"
[[ $dropped -gt 0 && $RETRANS -gt 0 ]] || die "a 3:1 incast into an 8-packet queue dropped nothing"
fabric_down
FABRIC=

fabric_up "$name" --hosts 3 --rate 50 --agent-rate 50 --subnet "$subnet" || die "fabric up"
[[ -z $(port_queue limit) ]] || die "a port queue without --agent-queue"
port=$(fabric_py status "$name" --json | /usr/bin/python3 -c '
import json, sys
print(json.load(sys.stdin)["agent_ports"])')
[[ $port == "{}" ]] || die "agent ports recorded without --agent-queue: $port"
shallow=$RETRANS
incast "default queue"
echo "default queue: senders retransmitted $RETRANS segments"
[[ $RETRANS -lt $shallow ]] || die "the default queue retransmitted as much ($RETRANS) as the 8-packet one ($shallow)"
echo "PASS agent_queue"
