# Sourced by the demo, the fabric tests and benchmarks/fabric_bench.sh: an
# emulated cluster (scripts/fabric.py) and MPI jobs across it.
#   fabric_up NAME [fabric.py up options]   → FABRIC (name), FABRIC_DIR
#   fabric_down                              (idempotent; also what a dead run left)
#   fabric_hostfile PPN                      → path of a hostfile with PPN slots per host
#   fabric_mpirun NP PPN [mpirun args] PROG… mpirun on h1 across the hosts (Open MPI's
#                                            TCP BTL on the fabric's subnet, or $FABRIC_BTL_IF)
#   fabric_mpirun_with EXPORTS NP PPN [mpirun args] PROG…
#                                            fabric_mpirun with exactly the lease of EXPORTS
#                                            (switchagg-ctl's "export ..." lines; "" = none)
#   fabric_agent_start WORKDIR [--set K=V…]  agent on the host `agent` (or $FABRIC_AGENT_HOST,
#                                            e.g. a leaf's `aleaf1`), told its link's rate,
#                                            data port $FABRIC_AGENT_PORT (default any)
#                                            → AGENT_* (lib_agent.sh)
#   fabric_tree_start WORKDIR RACKS HOSTS [--set K=V…]
#                                            a leaf-spine fabric's agents: the spine agent on
#                                            `agent`, leaf agent r on `aleaf<r>` (parent: the
#                                            spine) serving its rack's hosts; the fabric map
#                                            in TREE_MAP (WORKDIR/map.toml), TREE_PIDS (spine
#                                            first), SPINE_SOCKET/SPINE_DATA, LEAF_PIDS[r]
#   fabric_leaf_start R [--set K=V…]         leaf agent R (again, after a kill) → LEAF_PIDS[R]
#   fabric_uplink_bytes                      "rack up down" lines: bytes on each rack's uplink
#   fabric_tx_bytes                          "host bytes" lines: bytes sent per host so far
#   fabric_tx_delta BEFORE AFTER             "host bytes" each compute host sent between two
#                                            fabric_tx_bytes snapshots (files)
#   fabric_retransmits HOST…                 TCP segments the hosts retransmitted so far (sum)
# Needs $build (the build tree) and $root (the checkout).
FABRIC_STATE_ROOT=${SWITCHAGG_FABRIC_STATE:-/run/switchagg-fabric}

fabric_py() { /usr/bin/python3 "$root/scripts/fabric.py" "$@"; }

# One run at a time per fabric name on a machine: a second run (another
# checkout's tests, a demo) waits here for the first to finish, instead of
# failing on "already up" and then tearing down a fabric it does not own.
# The lock is held until this shell exits.
declare -gA FABRIC_LOCK_FD=()  # -g: also when sourced inside a function (bench_setup)
fabric_lock() {
  local name=$1 fd
  [[ -n ${FABRIC_LOCK_FD[$name]:-} ]] && return 0
  mkdir -p "$FABRIC_STATE_ROOT"
  exec {fd}>"$FABRIC_STATE_ROOT/$name.lock"
  if ! flock -n "$fd"; then
    echo "fabric $name is in use by another run; waiting (up to ${SWITCHAGG_FABRIC_WAIT:-900} s)" >&2
    flock -w "${SWITCHAGG_FABRIC_WAIT:-900}" "$fd" || {
      echo "fabric $name: still in use after ${SWITCHAGG_FABRIC_WAIT:-900} s" >&2
      exec {fd}>&-
      return 1
    }
  fi
  FABRIC_LOCK_FD[$name]=$fd
}

fabric_up() {
  local name=$1
  shift
  fabric_lock "$name" || return 1
  fabric_py up "$name" --quiet "$@" || return 1
  # Only a fabric this run brought up is its to tear down.
  FABRIC=$name
  FABRIC_DIR=$FABRIC_STATE_ROOT/$FABRIC
}

fabric_down() {
  [[ -n ${FABRIC:-} ]] && fabric_py down "$FABRIC" >/dev/null 2>&1
  return 0
}

fabric_hostfile() {
  local f=$FABRIC_DIR/hostfile.ppn$1
  fabric_py hostfile "$FABRIC" --ppn "$1" >"$f"
  echo "$f"
}

# The subnet's first two octets, for the interface filters.
fabric_net() { fabric_py status "$FABRIC" | sed -n 's/.*, \([0-9]*\.[0-9]*\)\.0\.0\/16,.*/\1/p'; }

# UCX over TCP only: every rank pair on different hosts shares this kernel's
# boot id, which UCX 1.13 takes for "same node" and would use shared memory
# across hosts. Ranks of one host then talk over that host's loopback (not
# shaped, like shared memory), ranks of different hosts over the fabric.
fabric_mpirun() {
  local np=$1 ppn=$2
  shift 2
  local net hf
  net=$(fabric_net)
  hf=$(fabric_hostfile "$ppn")
  fabric_py exec "$FABRIC" h1 -- env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --hostfile "$hf" -np "$np" --map-by "ppr:$ppn:node" --bind-to none \
    --mca plm_rsh_agent "$FABRIC_DIR/rsh" \
    --mca oob_tcp_if_include "$net.0.0/16" --mca btl self,vader,tcp \
    --mca btl_tcp_if_include "${FABRIC_BTL_IF:-$net.0.0/16}" \
    --mca mca_base_component_path "$build/lib/openmpi:$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')" \
    -x UCX_TLS=self,tcp -x SWITCHAGG_UCX_WAIT="${SWITCHAGG_UCX_WAIT:-blocking}" "$@" 2>&1 |
    grep -v 'plm:rsh: Warning: setpgid'   # the launcher execs at once; harmless
  return "${PIPESTATUS[0]}"
}

# The agent on the fabric's agent host, data plane on its fabric address.
# The caller's SWITCHAGG_AGENT / _LEASE / _AGENT_NAMES / _FABRIC are
# replaced by what EXPORTS sets (in a subshell), and each one set goes to
# the ranks (-x): a tree lease, a single agent's, or none, side by side.
fabric_mpirun_with() {
  local exports=$1
  shift
  (
    unset SWITCHAGG_AGENT SWITCHAGG_LEASE SWITCHAGG_AGENT_NAMES SWITCHAGG_FABRIC
    eval "$exports"
    local np=$1 ppn=$2 v xs=()
    shift 2
    for v in SWITCHAGG_AGENT SWITCHAGG_LEASE SWITCHAGG_AGENT_NAMES SWITCHAGG_FABRIC; do
      [[ -n ${!v:-} ]] && xs+=(-x "$v")
    done
    fabric_mpirun "$np" "$ppn" "${xs[@]}" "$@"
  )
}

# The agent is told its host's link rate (data.link_mbps; a caller's --set
# wins): sysfs inside a host shows the veth's speed, not the rate htb shapes
# the link to, and the agent in the switch has the sum of its ports'.
fabric_agent_start() {
  local dir=$1
  shift
  local ip mbit
  local host=${FABRIC_AGENT_HOST:-agent}
  ip=$(fabric_py status "$FABRIC" | awk -v h="$host" '$1 == h { print $2 }')
  mbit=$(fabric_py status "$FABRIC" |
         awk -v h="$host" '$1 == "link" && ($2 == h || $4 == h) { print $5; exit }')
  local link=()
  [[ -n $mbit ]] && link=(--set "data.link_mbps=$mbit")
  AGENT_LAUNCH=(/usr/bin/python3 "$root/scripts/fabric.py" exec "$FABRIC" "$host" --)
  # FABRIC_AGENT_PORT: a fixed data port P (data-plane thread k listens on
  # P - k, docs/fabric.md); default 0, any port.
  AGENT_DATA_LISTEN=$ip:${FABRIC_AGENT_PORT:-0}
  agent_start "$root/config/agent.toml" "$dir" "${link[@]}" "$@"
}

# "host bytes" lines: what each host sent (tx) or received (rx) so far.
fabric_tx_bytes() { fabric_dir_bytes tx_bytes; }
fabric_rx_bytes() { fabric_dir_bytes rx_bytes; }
fabric_dir_bytes() {
  fabric_py counters "$FABRIC" |
    /usr/bin/python3 -c 'import json,sys; [print(h, v[sys.argv[1]]) for h, v in sorted(json.load(sys.stdin).items())]' "$1"
}

# Bytes on the links between hosts so far: what the hosts sent minus what
# the agent host received (a switch-path call's own traffic goes to the
# agent; anything else crossed from host to host).
fabric_host_bytes() {
  fabric_py counters "$FABRIC" | /usr/bin/python3 -c '
import json, sys
c = json.load(sys.stdin)
print(sum(v["tx_bytes"] for h, v in c.items() if h != "agent") - c.get("agent", {}).get("rx_bytes", 0))'
}

# TCP segments HOST... retransmitted so far, summed (each host is its own
# network namespace: its /proc/net/snmp); fails naming a host without it.
fabric_retransmits() {
  local h n sum=0
  for h in "$@"; do
    n=$(fabric_py exec "$FABRIC" "$h" -- awk '/^Tcp:/ && ++n == 2 { print $13 }' /proc/net/snmp)
    [[ $n =~ ^[0-9]+$ ]] || { echo "no RetransSegs on $h: '$n'" >&2; return 1; }
    sum=$((sum + n))
  done
  echo "$sum"
}

fabric_tx_delta() { paste "$1" "$2" | awk '$1 ~ /^h[0-9]+$/ { print $1, $4 - $2 }'; }

declare -ga TREE_PIDS=() LEAF_PIDS=()
fabric_tree_start() {
  local dir=$1 racks=$2 hosts=$3 r
  shift 3
  TREE_DIR=$dir TREE_MAP=$dir/map.toml TREE_SET=("$@")
  mkdir -p "$dir/spine"
  fabric_agent_start "$dir/spine" "$@" || return 1
  TREE_PIDS+=("$AGENT_PID")
  SPINE_PID=$AGENT_PID SPINE_SOCKET=$AGENT_SOCKET SPINE_DATA=$AGENT_DATA
  {
    for r in $(seq 1 "$racks"); do
      printf '[[agent]]\nname = "leaf%s"\ncontrol = "unix:%s/l%s/agent.sock"\nnodes = "h[%s-%s]"\nparent = "spine"\n\n' \
        "$r" "$dir" "$r" $(((r - 1) * hosts + 1)) $((r * hosts))
    done
    printf '[[agent]]\nname = "spine"\ncontrol = "unix:%s"\ndata = "%s"\n' "$SPINE_SOCKET" "$SPINE_DATA"
  } >"$TREE_MAP"
  for r in $(seq 1 "$racks"); do fabric_leaf_start "$r" || return 1; done
  AGENT_PID=
}

fabric_leaf_start() {
  local r=$1
  shift
  mkdir -p "$TREE_DIR/l$r"
  FABRIC_AGENT_HOST=aleaf$r fabric_agent_start "$TREE_DIR/l$r" "${TREE_SET[@]}" "$@" \
    --set fabric.map="$TREE_MAP" --set fabric.name="leaf$r" || return 1
  TREE_PIDS+=("$AGENT_PID")
  LEAF_PIDS[$r]=$AGENT_PID
}

# The leaf switch's first port is its link to the spine (fabric.py adds it
# before the hosts'): its tx is the rack's traffic up, rx what comes down.
fabric_uplink_bytes() {
  local dev r=1
  while dev=/sys/class/net/${FABRIC}l$r-eth1/statistics && [[ -d $dev ]]; do
    echo "$r $(cat "$dev/tx_bytes") $(cat "$dev/rx_bytes")"
    r=$((r + 1))
  done
}
