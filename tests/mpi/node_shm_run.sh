#!/usr/bin/env bash
# node_shm_run.sh MAX_PERCENT -- MPIRUN COMMAND...
# Shared memory on the node with an RDMA device present (issue 45). Runs the
# command twice inside a private network namespace that holds only lo, so
# lo's counters see this job alone: with failure detection auto (node mode,
# once the RoCE profile sees an RDMA device) and with peer. TCP over lo
# stands in for the NIC here. Passes when both runs print PASS and the auto
# run sent at most MAX_PERCENT of the peer run's bytes over lo. The command
# must let the profile see RDMA (-x SWITCHAGG_ROCE_SYSFS_ROOT=<tree>) and
# keep TCP (-x UCX_NET_DEVICES=all). Needs root (unshare -n); exit 77 = skip.
set -euo pipefail
max_percent=$1
shift
[ "$1" = "--" ] && shift
if ! unshare -n true 2>/dev/null; then
  echo "node_shm_run: cannot create a network namespace (not root?): skipped"
  exit 77
fi

# One run: its output, then "lo_tx_bytes N" as the last line.
run() {
  local mode=$1
  shift
  unshare -n bash -c '
    ip link set lo up
    tx() { awk "/^ *lo:/ {print \$10}" /proc/net/dev; }
    before=$(tx)
    mode=$1
    shift
    "${@:1:1}" -x SWITCHAGG_UCX_FAILURE_DETECTION="$mode" "${@:2}" 2>&1 || echo "FAIL exit $?"
    echo "lo_tx_bytes $(($(tx) - before))"' node_shm_run "$mode" "$@"
}

auto=$(run auto "$@")
peer=$(run peer "$@")
printf '== failure detection auto (node)\n%s\n== failure detection peer\n%s\n' "$auto" "$peer"
for out in "$auto" "$peer"; do
  if ! grep -q '^PASS' <<<"$out" || grep -q '^FAIL' <<<"$out"; then
    echo "node_shm_run: a run did not pass" >&2
    exit 1
  fi
done
auto_bytes=$(tail -1 <<<"$auto" | awk '{print $2}')
peer_bytes=$(tail -1 <<<"$peer" | awk '{print $2}')
echo "lo bytes: node mode $auto_bytes, peer mode $peer_bytes (at most $max_percent% allowed)"
if ((peer_bytes == 0 || auto_bytes * 100 > peer_bytes * max_percent)); then
  echo "node_shm_run: node mode sent too much over lo" >&2
  exit 1
fi
echo "PASS node_shm"
