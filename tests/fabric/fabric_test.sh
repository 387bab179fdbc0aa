#!/usr/bin/env bash
# fabric_test.sh BUILD_DIR SCENARIO: MPI across an emulated cluster
# (scripts/fabric.py: Mininet hosts in network namespaces, links shaped
# with htb), the component loaded from BUILD_DIR. Scenarios:
#   hosts      4-host star: ring, recursive doubling, Rabenseifner exact across
#              real emulated nodes (4 ranks on 4 nodes); hierarchical with 2
#              ranks per host (MPI_COMM_TYPE_SHARED sees 2 nodes); a ring
#              allreduce's bytes leave every host through its shaped link
#              (2(p-1)/p N per call, from the interface counters)
#   switch     the agent on the fabric's agent host, a lease: the switch path
#              is exact across hosts and each host sends N bytes per call,
#              with 1 rank per host and with 2 (node leaders)
#   link_down  a host's link flaps (3 s down) during a loop of checked
#              switch-path calls, timed against the calls (once rank 0 has
#              done 10, the loop still running when the link comes back):
#              the component's counters show the flap hit at least one call
#              (fallback:switch-failed or switch:recovered on some rank) and
#              every result is exact; or a rank ends with a clear error; in
#              bounded time, never a hang
#   auto       offload=auto with online tuning, 4 hosts x 1 rank, a lease:
#              after warm-up small calls settle on a host path and large
#              ones on the switch, where the links make it faster
#   negative   3 hosts x 1 rank on the switch path with the test fault
#              point SWITCHAGG_TEST_WRONG_RESULT (skip, rank:1): the checker
#              fails both times (its verdict travels point to point)
#   teardown   the fabric's owner SIGKILLed: a new `up` cleans what it left;
#              `down` leaves no namespace, bridge, link or process
#   stripes    3 hosts, 3 agents on the agent host, fabric maps giving the job
#              K = 1, 2 or 3 agents (a lease from `switchagg-ctl lease create
#              --fabric`): the dtype x op matrix exact at (K, ppn) = (3, 1),
#              (2, 2), (1, 3) (counts 2 and 1001: fewer elements than
#              stripes, and odd stripes); at ppn 2 float/double sums of
#              inexact values bitwise identical over 5 runs and across ranks,
#              and the 1 MiB+8 int64/double results' bits the same for K = 1
#              and K = 3 (rank order, not the stripe cut, fixes each
#              element's sum); one stripe's agent SIGKILLed mid-loop at K = 3:
#              every result right, every call bounded, the other agents alive
#   reducers   the reduction-server deployment: 3 hosts and 3 reducer hosts
#              r1..r3 at the hosts' link rate (fabric.py --reducers), an
#              agent on each, the three a reducer pool of the fabric map (a
#              job takes K with lease create --reducers K); a job striped
#              over K = 3 of them is exact on
#              the dtype x op matrix, its 1 MiB+8 int64/double sums bitwise
#              those of K = 1, and the three reducer links carry equal
#              shares (interface counters, within 10%); offload=auto: 4 MiB
#              MPI_Iallreduces inherit the blocking calls' measurements (the
#              faster of switch and previous with K = 1 reducer, the switch
#              with K = 3), and
#              so do 2 MiB calls of 2 threads per rank at
#              MPI_THREAD_MULTIPLE, timed by online tuning; with
#              one agent telling half the link rate, stripes and the bytes
#              on the reducer links follow the rates (2:2:1); the fabric with its
#              reducer hosts goes down leaving nothing
#   rails      2 rails (tests/fabric/rails_scenario.sh): 3 hosts with a link
#              on each of 2 switch planes, an agent per plane, a rail pool;
#              exact, bytes even over the rails, bitwise those of one rail,
#              rail 2's link or agent down mid-loop: exact, bounded, named
#   rail_leaders  2 rails, 2 ranks per host, SWITCHAGG_SWITCH_RAIL_LEADERS=on
#              (tests/fabric/rail_leaders_scenario.sh): a rail leader per rail
#              on each host, exact, each member streams its stripe, bytes even
#              over the rails; rail_leaders_fault: rail 2's link down at h2
#              mid-loop: exact (or a clear error), bounded, the rail named
#   routed     3 hosts x 1 rank, the agent on the agent host: MPI_Reduce,
#              MPI_Reduce_scatter(_block), MPI_Allgather and MPI_Bcast through
#              the switch, every dtype x op x count x in place bitwise right
#              across real emulated nodes; then the routes on the wire, from
#              the interface counters: a bcast of N puts ~N on the root's
#              link and next to nothing on the others', an allgather of
#              blocks b puts ~b on each host's link, a reduce-scatter of N
#              (float) puts ~N on each
#   oneshot    3 hosts, the agent on the agent host, 1 and 2 ranks per host:
#              one-round-trip completion across hosts (mpi_oneshot_check
#              --mode ok: no host message of the switch path), the
#              OSU-style validated sweep 8 B - 1 MiB all on the switch, and
#              the links between hosts: 8-byte allreduces and barriers put
#              under 16 bytes a call there (a long and a short run,
#              differenced)
#   tree       2 racks x 3 hosts (leaf-spine), a leaf agent per rack whose
#              parent is the spine agent, one lease over all three
#              (`switchagg-ctl lease create --fabric`): the dtype x op matrix
#              exact through the tree, both leaves sent up; the same floats
#              bitwise over 5 runs; bytes per host per call ~N; a leaf agent,
#              then the spine agent, SIGKILLed mid-loop: every answer right,
#              every call bounded
#   cg         3 hosts x 1 rank, the agent on the agent host, a lease: the CG
#              mini-application's residual histories (tests/mpi/cg_history.sh)
#              across real emulated nodes: ring and recursive doubling each
#              bitwise equal run to run, switchagg off too, and differing from
#              each other in the bits; the switch path twice, bitwise equal,
#              both within 1e-8 of off in as many iterations
# Every scenario asserts at exit that its fabric left nothing behind.
# Prints PASS lines; exits non-zero with the reason on failure.
set -uo pipefail
build=$(cd "$1" && pwd) scenario=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib_agent.sh"
source "$root/scripts/lib_fabric.sh"

# SWITCHAGG_TEST_FABRIC / SWITCHAGG_TEST_SUBNET: another name and subnet,
# to run beside another checkout's run of the same scenario.
name=${SWITCHAGG_TEST_FABRIC:-ft${scenario:0:1}}
[[ $scenario == stripes ]] && name=${SWITCHAGG_TEST_FABRIC:-ftk}
[[ $scenario == reducers ]] && name=${SWITCHAGG_TEST_FABRIC:-ftq}
[[ $scenario == rails ]] && name=${SWITCHAGG_TEST_FABRIC:-ftz}
[[ $scenario == rail_leaders ]] && name=${SWITCHAGG_TEST_FABRIC:-ftw}
[[ $scenario == rail_leaders_fault ]] && name=${SWITCHAGG_TEST_FABRIC:-ftv}
subnet_of() { echo "${SWITCHAGG_TEST_SUBNET:-$1}"; }
work=$(mktemp -d /var/tmp/switchagg-fabric-test.XXXXXX)
die() { echo "FAIL: $*" >&2; [[ -f $work/agent.log ]] && tail -20 "$work/agent.log" >&2; exit 1; }

# Nothing of fabric $1 may remain: bridges/ports by prefix, state, owner.
assert_gone() {
  local left
  left=$(ip -o link show | grep -E "^[0-9]+: $1[sl][0-9]+" || true)
  [[ -z $left ]] || { echo "FAIL: fabric $1 left links: $left" >&2; return 1; }
  [[ ! -e $FABRIC_STATE_ROOT/$1 ]] || { echo "FAIL: $FABRIC_STATE_ROOT/$1 left" >&2; return 1; }
  if pgrep -f "fabric.py _owner $1 " >/dev/null; then
    echo "FAIL: the owner of fabric $1 still runs" >&2
    return 1
  fi
  return 0
}

EXTRA_AGENT_PIDS=()  # stripes: the agents besides AGENT_PID
cleanup() {
  local rc=$?
  agent_stop
  local p
  for p in "${EXTRA_AGENT_PIDS[@]}"; do AGENT_PID=$p; agent_stop; done
  fabric_down
  assert_gone "$name" || rc=1
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The agent on the fabric's agent host and a lease for job $1 (exported).
agent_and_lease() {
  fabric_agent_start "$work" || die "agent start"
  local out
  out=$("$build/bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job "$1" \
    --slots 16 --ttl 10m) || die "lease create: $out"
  eval "$(grep '^export ' <<<"$out")"
}

# fabric_with_lease HOSTS SUBNET JOB: the fabric of HOSTS hosts on SUBNET,
# its agent up and a lease for JOB exported.
fabric_with_lease() {
  fabric_up "$name" --hosts "$1" --subnet "$(subnet_of "$2")" || die "fabric up"
  agent_and_lease "$3"
}

# Every host's bytes within 5% (+64 KiB of MPI and UCX chatter) of $3.
check_bytes() {
  local label=$1 file=$2 want=$3
  awk -v want="$want" -v label="$label" '
    { d = $2 - want; if (d < 0) d = -d
      if (d > want * 0.05 + 65536) { printf "FAIL: %s: %s sent %d bytes, theory %d\n", label, $1, $2, want; bad = 1 }
      else printf "%s: %s sent %d bytes (theory %d)\n", label, $1, $2, want }
    END { exit bad }' "$file"
}

# Every host's bytes in [$3, $4] (routed calls: uneven by design).
check_range() {
  awk -v lo="$3" -v hi="$4" -v label="$1" '
    { ok = $2 >= lo && $2 <= hi; if (!ok) bad = 1
      printf "%s%s: %s sent %d bytes (theory %d..%d)\n", ok ? "" : "FAIL: ", label, $1, $2, lo, hi }
    END { exit bad }' "$2"
}

# sent_during LOG WHAT NP PPN ARGS...: fabric_mpirun NP PPN ARGS with its
# output in LOG (failing: WHAT), and each host's bytes sent meanwhile in
# $work/sent for check_bytes or check_range.
sent_during() {
  local log=$1 what=$2
  shift 2
  fabric_tx_bytes >"$work/b0"
  fabric_mpirun "$@" >"$log" || { cat "$log"; die "$what"; }
  fabric_tx_bytes >"$work/b1"
  fabric_tx_delta "$work/b0" "$work/b1" >"$work/sent"
}

# What an mpirun on the switch path takes: offload on, the agent and lease.
offload_args=(--mca coll_switchagg_offload on -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE)

# kill_when_ready PID: in the background, SIGKILLs PID 0-0.9 s after the
# check program wrote $work/ready (failing if it did not within 30 s) and
# touches $work/fired; $killer is that background job's pid.
kill_when_ready() {
  (
    for _ in $(seq 1 600); do [[ -f $work/ready ]] && break; sleep 0.05; done
    [[ -f $work/ready ]] || exit 1
    sleep 0.$((RANDOM % 10))
    kill -KILL "$1"
    touch "$work/fired"
  ) </dev/null >/dev/null 2>&1 &
  killer=$!
}

# host_check PPN ALG WHAT LAYOUT WHAT_LAYOUT: mpi_allreduce_check on 4
# ranks, PPN a host, with host algorithm ALG: it passed (else WHAT) and the
# component saw the ranks' LAYOUT (else WHAT_LAYOUT).
host_check() {
  local ppn=$1 alg=$2 log="$work/$2.log"
  fabric_mpirun 4 "$ppn" --mca coll_switchagg_allreduce_algorithm "$alg" \
    --mca coll_switchagg_verbose 1 "$build/bin/mpi_allreduce_check" --expect "$alg" \
    --quick >"$log"
  local rc=$?
  cat "$log"
  [[ $rc -eq 0 ]] && grep -q '^PASS' "$log" || die "$3"
  grep -q "$4" "$log" || die "$5"
}

# on_switch NP PPN LOG WHAT PROGRAM ARGS...: PROGRAM across the hosts, PPN
# ranks each, on the switch path; dies naming WHAT.
on_switch() {
  local np=$1 ppn=$2 log=$3 what=$4
  shift 4
  fabric_mpirun "$np" "$ppn" "${offload_args[@]}" "$@" >"$log" 2>&1 ||
    { cat "$log"; die "$what, $ppn rank(s) per host"; }
}

# check_across PPN LOG WHAT PROGRAM ARGS...: a check program across the 3
# hosts, PPN ranks each, offload on: it passed, the ranks joined the agent
# at its fabric address, and at PPN > 1 through node leaders (one a host).
check_across() {
  local ppn=$1 log=$2 what=$3
  local np=$((3 * ppn))
  shift 3
  fabric_mpirun "$np" "$ppn" "${offload_args[@]}" --mca coll_switchagg_verbose 1 "$@" >"$log"
  local rc=$?
  cat "$log"
  [[ $rc -eq 0 ]] && grep -q '^PASS' "$log" || die "$what, $ppn rank(s) per host"
  grep -q "joined switch group .* at ${AGENT_DATA%:*}" "$log" ||
    die "the ranks did not join the agent at its fabric address $AGENT_DATA"
  [[ $ppn -eq 1 ]] || grep -q "3 node leaders for $np ranks" "$log" ||
    die "no node leaders at $ppn ranks per host"
}

case $scenario in
  cg)
    fabric_with_lease 3 10.93 fabric-cg
    # cg_history.sh runs a launcher command: fabric_mpirun of 3 ranks, 1 per host.
    printf '#!/usr/bin/env bash\nroot=%q build=%q FABRIC=%q FABRIC_DIR=%q\n' \
      "$root" "$build" "$FABRIC" "$FABRIC_DIR" >"$work/launch"
    printf 'source "$root/scripts/lib_fabric.sh"\nfabric_mpirun 3 1 "$@"\n' >>"$work/launch"
    chmod +x "$work/launch"
    # Every switchagg run must see 3 nodes (verbose 1's communicator line).
    export CG_EXPECT='3 ranks on 3 nodes \(max 1 per node\)'
    "$root/tests/mpi/cg_history.sh" host:ring,recursive_doubling "$build/bin/switchagg-cg" -- \
      "$work/launch" --mca coll_switchagg_verbose 1 >"$work/host.log"
    rc=$?
    cat "$work/host.log"
    [[ $rc -eq 0 ]] || die "CG histories on host paths across 3 hosts"
    "$root/tests/mpi/cg_history.sh" switch "$build/bin/switchagg-cg" -- "$work/launch" \
      --mca coll_switchagg_offload on --mca coll_switchagg_verbose 1 \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE >"$work/switch.log"
    rc=$?
    cat "$work/switch.log"
    [[ $rc -eq 0 ]] || die "CG histories on the switch across 3 hosts"
    echo "PASS fabric cg"
    ;;
  hosts)
    fabric_up "$name" --hosts 4 --subnet "$(subnet_of 10.81)" || die "fabric up"
    for alg in ring recursive_doubling rabenseifner; do
      host_check 1 "$alg" "$alg across 4 hosts" '4 ranks on 4 nodes (max 1 per node)' \
        "$alg: the component did not see 4 nodes"
    done
    host_check 2 hierarchical "hierarchical, 2 hosts x 2 ranks" \
      '4 ranks on 2 nodes (max 2 per node)' \
      "hierarchical: MPI_COMM_TYPE_SHARED did not see 2 ranks on each of 2 nodes"
    # Bytes: 4 ring calls of 8 MiB, p = 4: 2(p-1)/p N = 1.5 N per call.
    sent_during "$work/bytes.log" "ring byte run" 4 1 \
      --mca coll_switchagg_allreduce_algorithm ring \
      "$build/bin/mpi_liveness_check" --sizes 8388608 --iters 4 --warmup 0 --expect ring
    check_bytes "ring 4 x 8 MiB" "$work/sent" $((4 * 8388608 * 3 / 2)) || die "ring bytes"
    echo "PASS fabric hosts"
    ;;
  switch)
    # Two data-plane threads on fixed ports (thread k listens on the data
    # port minus k) and a lease whose home is thread 1: the ranks on every
    # host reach port 18699 of the agent host across the fabric, and that
    # thread, not thread 0, carries the job (docs/fabric.md "Data-plane
    # threads").
    fabric_up "$name" --hosts 3 --subnet "$(subnet_of 10.82)" || die "fabric up"
    FABRIC_AGENT_PORT=18700 fabric_agent_start "$work" --set data.plane_threads=2 ||
      die "agent start"
    for i in $(seq 1 40); do
      out=$("$build/bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create \
        --job "fabric-switch$i" --slots 8 --ttl 10m) || die "lease create: $out"
      eval "$(grep '^export ' <<<"$out")"
      [[ $SWITCHAGG_AGENT == "${AGENT_DATA%:*}:18699" ]] && break
      "$build/bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease delete \
        --job "fabric-switch$i" >/dev/null || die "lease delete fabric-switch$i"
    done
    [[ $SWITCHAGG_AGENT == "${AGENT_DATA%:*}:18699" ]] ||
      die "no lease of 40 got data-plane thread 1 (port 18699): $SWITCHAGG_AGENT"
    # 1 rank per host, then 2 (node leaders: only each host's lowest rank
    # talks to the agent, which the check asserts from the host names).
    # Exact either way, and each host sends N per call, not ppn x N.
    for ppn in 1 2; do
      check_across $ppn "$work/matrix$ppn.log" "switch path across hosts" \
        "$build/bin/mpi_allreduce_check" --expect switch --quick
      sent_during "$work/bytes.log" "switch byte run, ppn $ppn" $((3 * ppn)) $ppn \
        "${offload_args[@]}" "$build/bin/mpi_liveness_check" --sizes 8388608 --iters 4 \
        --warmup 0 --expect switch
      check_bytes "switch ppn $ppn, 4 x 8 MiB" "$work/sent" $((4 * 8388608)) ||
        die "switch bytes, ppn $ppn"
    done
    "$build/bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" --json status >"$work/status.json"
    /usr/bin/python3 - "$work/status.json" "$SWITCHAGG_AGENT" <<'PY' || die "thread 1 did not carry the job"
import json, sys
s = json.load(open(sys.argv[1]))
t = s["data_threads"]
print("data-plane threads: " + ", ".join("%s %d bytes in" % (x["address"], x["bytes_in"]) for x in t))
assert len(t) == 2 and t[1]["address"] == sys.argv[2], t
assert t[1]["bytes_in"] > 4 * 8388608 and t[0]["bytes_in"] == 0, t
PY
    echo "PASS fabric switch"
    ;;
  negative)
    # The negative control across hosts (tests/mpi/verdict.h): with
    # switchagg's answer broken on purpose the checker must fail, its
    # verdict sent point to point over the fabric.
    fabric_with_lease 3 10.97 fabric-negative
    for fault in skip rank:1; do
      if fabric_mpirun 3 1 "${offload_args[@]}" -x SWITCHAGG_TEST_WRONG_RESULT=$fault \
        "$build/bin/mpi_allreduce_check" --expect switch --quick >"$work/negative.log" 2>&1; then
        cat "$work/negative.log"
        die "the checker passed across hosts with SWITCHAGG_TEST_WRONG_RESULT=$fault"
      fi
      grep -Eq '^FAIL np=3 expect=switch: [0-9]+ cases checked on 3 ranks, [1-9][0-9]* failures' \
        "$work/negative.log" || { cat "$work/negative.log"; die "no FAIL verdict with $fault"; }
      echo "negative $fault: $(grep -m1 '^FAIL np=' "$work/negative.log")"
    done
    echo "PASS fabric negative"
    ;;
  link_down)
    fabric_with_lease 3 10.83 fabric-down
    # A loop of checked switch-path allreduces, back to back (nothing of
    # Open MPI's between them, so every rank is inside a switch call or about
    # to enter one); h2's link flaps (3 s down, over the switch path's
    # 2 s + 1 ms/4 KiB bound) once rank 0 has finished $flap_at of them, as a
    # port reset would. Rank 0 writes its count to a file (--progress), so
    # the flap is timed against calls the test sees, not against the launch.
    flap_at=10 iters=400
    (
      end=$((SECONDS + 120))
      until (($(cat "$work/progress" 2>/dev/null || echo 0) >= flap_at)); do
        ((SECONDS < end)) || exit 0
        sleep 0.05
      done
      echo "$(cat "$work/progress") $(date +%s)" >"$work/flap_start"
      fabric_py exec "$FABRIC" h2 -- ip link set h2-eth0 down
      sleep 3
      fabric_py exec "$FABRIC" h2 -- ip link set h2-eth0 up
      cat "$work/progress" >"$work/flap_end"
    ) </dev/null >"$work/flap.log" 2>&1 &
    flap=$!
    timeout -s KILL 150 bash -c "root='$root' build='$build'
      source '$root/scripts/lib_agent.sh'; source '$root/scripts/lib_fabric.sh'
      FABRIC='$FABRIC' FABRIC_DIR='$FABRIC_DIR'
      fabric_mpirun 3 1 --mca coll_switchagg_offload on --mca coll_switchagg_verbose 1 \
        --mca coll_switchagg_stall_timeout 30 \
        -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
        '$build/bin/mpi_liveness_check' --sizes 1048576 --iters $iters --warmup 0 \
        --between none --progress '$work/progress' --counters" \
      </dev/null >"$work/fault.log" 2>&1
    echo "exit $?" >>"$work/fault.log"
    wait $flap
    cat "$work/fault.log"
    read -r at start <"$work/flap_start" 2>/dev/null ||
      die "the flap never began (rank 0 did not reach $flap_at checked calls)"
    took=$(($(date +%s) - start))
    # The flap landed while calls were in flight: it began after call $at,
    # and the loop was still running when the link came back.
    [[ -s $work/flap_end ]] || die "the flap did not finish"
    after=$(cat "$work/flap_end")
    ((after < iters)) || die "the loop ended ($after calls) before the link came back"
    echo "flap: began after checked call $at, link back at call $after of $iters"
    grep -q '^exit 137' "$work/fault.log" && die "the job hung (killed after 150 s)"
    grep -q 'want' "$work/fault.log" && die "a rank got a wrong answer"
    # What the flap hit, from the component's counters (every rank's): a
    # switch call redone on the host (fallback:switch-failed) or completed
    # from a peer's result (switch:recovered).
    hit=$(grep -o 'fallback:switch-failed=[0-9]*\|switch:recovered=[0-9]*' "$work/fault.log" |
      awk -F= '{ n += $2 } END { print n + 0 }')
    if grep -q '^PASS liveness' "$work/fault.log"; then
      [[ $(grep -c '^counters rank' "$work/fault.log") == 3 ]] || die "not every rank printed its counters"
      ((hit > 0)) || die "the flap hit no call: no switch call failed or was recovered (counters above)"
      echo "every result exact; the flap hit: fallback:switch-failed + switch:recovered = $hit over the 3 ranks; job ended $took s after the flap began"
    else
      grep -q 'switchagg\[coll\] error' "$work/fault.log" ||
        die "the job failed without a switchagg error naming why"
      echo "job failed with a clear error $took s after the flap began (every result before it exact)"
    fi
    ((took <= 120)) || die "the job took $took s to end after the flap"
    echo "PASS fabric link_down"
    ;;
  auto)
    # Large calls must settle on the switch (link-bound: N per link against
    # the ring's 2(p-1)/p N); small ones on whatever measured fastest - since
    # one-round-trip completion the switch path can win them too (one agent
    # round trip against log2(p) host rounds), so no winner is asserted there.
    fabric_with_lease 4 10.85 fabric-auto
    fabric_mpirun 4 1 --mca coll_switchagg_offload auto --mca coll_switchagg_tune online \
      --mca coll_switchagg_verbose 1 -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
      "$build/bin/mpi_tune_check" --sizes 8,1024,2097152,8388608 --warmup 40 --measure 6 \
      --expect 'host<1,switch>=2097152' >"$work/auto.log"
    rc=$?
    cat "$work/auto.log"
    [[ $rc -eq 0 ]] && grep -q '^PASS' "$work/auto.log" || die "auto across 4 hosts"
    grep -q 'joined switch group' "$work/auto.log" || die "auto: the switch path never joined"
    echo "PASS fabric auto"
    ;;
  teardown)
    fabric_up "$name" --hosts 2 --subnet "$(subnet_of 10.84)" || die "fabric up"
    owner=$(/usr/bin/python3 -c "import json; print(json.load(open('$FABRIC_DIR/state.json'))['owner'])")
    kill -KILL "$owner"
    sleep 0.5
    fabric_up "$name" --hosts 2 --subnet "$(subnet_of 10.84)" || die "fabric up after its owner was killed"
    fabric_py exec "$FABRIC" h1 -- sh -c 'test "$(hostname)" = h1' || die "h1 after re-up"
    fabric_py down "$name" || die "down"
    assert_gone "$name" || die "down left something behind"
    # A second down is harmless.
    fabric_py down "$name" >/dev/null || die "second down"
    echo "PASS fabric teardown"
    ;;
  stripes | reducers)
    # stripes: three agents on the agent host (own control sockets, own data
    # ports); reducers: agent a<k> on reducer host r<k>, at a host's rate.
    if [[ $scenario == reducers ]]; then
      # 200 Mbit/s links: a 4 MiB call is link-bound (N/B = 168 ms) even on
      # 2 shared cores running 3 ranks and 3 agents.
      fabric_up "$name" --hosts 3 --reducers 3 --rate 200 --subnet "$(subnet_of 10.89)" ||
        die "fabric up"
    else
      fabric_up "$name" --hosts 3 --subnet "$(subnet_of 10.86)" || die "fabric up"
    fi
    declare -a apid asock
    for a in 1 2 3; do
      mkdir -p "$work/a$a"
      host=agent
      [[ $scenario == reducers ]] && host=r$a
      FABRIC_AGENT_HOST=$host fabric_agent_start "$work/a$a" --set agent.log_level=info ||
        die "agent a$a start on $host"
      apid[$a]=$AGENT_PID asock[$a]=$AGENT_SOCKET
      EXTRA_AGENT_PIDS+=("$AGENT_PID")
    done
    AGENT_PID=
    # map K: K agents share the hosts h1..h3, each at least one.
    agent_entry() { printf '[[agent]]\nname = "a%s"\ncontrol = "unix:%s"\nnodes = "%s"\n\n' "$1" "${asock[$1]}" "$2"; }
    agent_entry 1 'h[1-3]' >"$work/map1.toml"
    { agent_entry 1 'h[1-2]'; agent_entry 2 h3; } >"$work/map2.toml"
    { agent_entry 1 h1; agent_entry 2 h2; agent_entry 3 h3; } >"$work/map3.toml"
    # reducers: one reducer pool of a1..a3 serving h[1-3]; a job takes K of
    # them (--reducers K), every map K is that pool.
    pool_map() {
      for a in 1 2 3; do printf '[[agent]]\nname = "a%s"\ncontrol = "unix:%s"\n\n' "$a" "${asock[$a]}"; done
      printf '[[pool]]\nname = "reducers"\nagents = ["a1", "a2", "a3"]\nnodes = "h[1-3]"\n'
    }
    if [[ $scenario == reducers ]]; then
      for k in 1 2 3; do pool_map >"$work/map$k.toml"; done
    fi
    # lease_k K JOB: the job's lease on the agents of map K (K of the pool), exported.
    lease_k() {
      local out pool=()
      [[ $scenario == reducers ]] && pool=(--reducers "$1")
      out=$("$build/bin/switchagg-ctl" lease create --job "$2" --slots 16 --ttl 10m \
        --nodes 'h[1-3]' --fabric "$work/map$1.toml" "${pool[@]}") || die "lease create, K = $1: $out"
      eval "$(grep '^export ' <<<"$out")"
      local addrs=${SWITCHAGG_AGENT//[^,]/}
      [[ ${#addrs} -eq $(($1 - 1)) ]] || die "K = $1: the lease names $SWITCHAGG_AGENT"
    }
    # lease_gone K JOB: its lease deleted on every agent of map K (each
    # agent's per-user slot limit holds two 16-slot leases, not three).
    lease_gone() {
      "$build/bin/switchagg-ctl" lease delete --job "$2" --fabric "$work/map$1.toml" >/dev/null ||
        die "lease delete, K = $1"
    }
    # stripes_run K PPN LOG PROGRAM ARGS...: PROGRAM on 3 hosts x PPN with the
    # lease of map K, offload on, verbose; asserts PASS and K stripes.
    stripes_run() {
      local k=$1 ppn=$2 log=$3 t0=$SECONDS
      shift 3
      timeout -s KILL 150 bash -c "$(declare -f fabric_py fabric_net fabric_hostfile fabric_mpirun)
        root='$root' build='$build' FABRIC='$FABRIC' FABRIC_DIR='$FABRIC_DIR'
        fabric_mpirun $((3 * ppn)) $ppn --mca coll_switchagg_offload ${STRIPES_OFFLOAD:-on} \
          --mca coll_switchagg_verbose 1 -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
          -x SWITCHAGG_SWITCH_WINDOW=4 $(printf '%q ' "$@")" </dev/null >"$log" 2>&1
      local rc=$?
      cat "$log"
      [[ $rc -eq 0 ]] && grep -q '^PASS' "$log" || die "K = $k, ppn $ppn: $1 failed (exit $rc)"
      echo "K = $k, ppn $ppn: ${1##*/} passed in $((SECONDS - t0)) s"
      grep -q "joined switch group .*($k stripe(s)" "$log" || die "K = $k, ppn $ppn: not $k stripes"
      [[ $ppn -eq 1 ]] || grep -q "3 node leaders for $((3 * ppn)) ranks" "$log" ||
        die "K = $k: no node leaders at $ppn ranks per host"
    }
    if [[ $scenario == reducers ]]; then
      # reducer_rx: bytes each reducer host received so far, "r<k> bytes" lines.
      reducer_rx() { fabric_rx_bytes | grep '^r[0-9]'; }
      lease_k 3 reducers-k3
      stripes_run 3 1 "$work/matrix-k3.log" "$build/bin/mpi_allreduce_check" \
        --expect switch --quick --counts 2,1001
      reducer_rx >"$work/rx0"
      stripes_run 3 1 "$work/repeat-k3.log" "$build/bin/test_switch_check" --repeat 3 \
        --big 1048584
      reducer_rx >"$work/rx1"
      lease_gone 3 reducers-k3
      lease_k 1 reducers-k1
      stripes_run 1 1 "$work/repeat-k1.log" "$build/bin/test_switch_check" --repeat 3 \
        --big 1048584
      # offload=auto: MPI_Iallreduce inherits what the blocking calls of its
      # size measured: with one reducer host (switch/ring theory 2.25 at 3
      # hosts) the switch is no faster than the best host path, mostly (the
      # check computes what was measured: the switch only if it beat every
      # other path), with three (0.75) the switch.
      # MPI_THREAD_MULTIPLE: 2 threads per rank, each on its own
      # communicator, are timed by online tuning (docs/selection.md
      # "Threads") and settle on a host path with one reducer host, on the
      # switch with three.
      for k in 1 3; do
        if ((k == 1)); then inherit=measured final=host; else inherit=switch final=switch; fi
        ((k == 1)) || lease_k "$k" "reducers-k$k"
        STRIPES_OFFLOAD=auto stripes_run "$k" 1 "$work/inherit-k$k.log" \
          "$build/bin/mpi_iallreduce_check" --mode inherit --bytes 4194304 --expect "$inherit"
        STRIPES_OFFLOAD=auto stripes_run "$k" 1 "$work/threads-k$k.log" \
          "$build/bin/mpi_thread_check" --expect auto --threads 2 --iters 40 --bytes 2097152 \
          --tuned --final "$final"
        lease_gone "$k" "reducers-k$k"
      done
      for k in 1 3; do
        sed -n 's/.*int64 hash \([0-9a-f]*\) double hash \([0-9a-f]*\).*/\1 \2/p' \
          "$work/repeat-k$k.log" >"$work/hash$k"
        [[ -s $work/hash$k ]] || die "K = $k: no hashes printed"
      done
      cmp -s "$work/hash1" "$work/hash3" ||
        die "the sums differ between K = 1 and 3: $(cat "$work"/hash[13] | tr '\n' ' ')"
      echo "int64 and double hashes $(cat "$work/hash1") for K = 1 and 3 reducer hosts"
      # Equal reducers, equal stripes: each reducer link's share of the
      # K = 3 run within 10% of the mean (and every one used).
      paste "$work/rx0" "$work/rx1" | awk '
        { d[$1] = $4 - $2; sum += d[$1]; n++ }
        END { mean = sum / n
              for (h in d) { printf "reducer %s received %d bytes (mean %d)\n", h, d[h], mean
                             if (mean < 1048576 || d[h] < 0.9 * mean || d[h] > 1.1 * mean) bad = 1 }
              exit bad }' || die "the reducer links carried unequal shares (or none)"
      # Unequal reducers: a3 restarted telling a link of 100 Mbit/s (its
      # data.link_mbps; the others tell their hosts' 200). Stripes follow the
      # rates (2:2:1), each reducer link's share of the bytes within 10% of
      # its rate's, and the sums bitwise those of K = 1 and 3 equal stripes.
      kill -TERM "${apid[3]}"
      wait "${apid[3]}" 2>/dev/null || true
      mkdir -p "$work/a3-slow"
      FABRIC_AGENT_HOST=r3 fabric_agent_start "$work/a3-slow" --set agent.log_level=info \
        --set data.link_mbps=100 || die "agent a3 restart at 100 Mbit/s"
      asock[3]=$AGENT_SOCKET
      EXTRA_AGENT_PIDS+=("$AGENT_PID")
      AGENT_PID=
      pool_map >"$work/map3.toml"
      lease_k 3 reducers-unequal
      reducer_rx >"$work/rx2"
      stripes_run 3 1 "$work/repeat-unequal.log" "$build/bin/test_switch_check" --repeat 3 \
        --big 1048584
      reducer_rx >"$work/rx3"
      lease_gone 3 reducers-unequal
      sed -n 's/.*int64 hash \([0-9a-f]*\) double hash \([0-9a-f]*\).*/\1 \2/p' \
        "$work/repeat-unequal.log" >"$work/hash-unequal"
      cmp -s "$work/hash1" "$work/hash-unequal" ||
        die "the sums differ between equal and unequal stripes: $(cat "$work"/hash1 "$work"/hash-unequal | tr '\n' ' ')"
      paste "$work/rx2" "$work/rx3" | awk '
        BEGIN { w["r1"] = 2; w["r2"] = 2; w["r3"] = 1 }
        { d[$1] = $4 - $2; sum += d[$1] }
        END { for (h in d) { want = sum * w[h] / 5
                             printf "unequal: reducer %s received %d bytes (its rate'"'"'s share %d)\n", h, d[h], want
                             if (sum < 1048576 || d[h] < 0.9 * want || d[h] > 1.1 * want) bad = 1 }
              exit bad }' || die "the unequal reducers' links did not carry shares in proportion to their rates"
      echo "PASS fabric reducers"
      exit 0
    fi
    for kp in 3:1 2:2 1:3; do
      k=${kp%:*} ppn=${kp#*:}
      lease_k "$k" "stripes-k$k"
      stripes_run "$k" "$ppn" "$work/matrix-k$k.log" "$build/bin/mpi_allreduce_check" \
        --expect switch --quick --counts 2,1001
      lease_gone "$k" "stripes-k$k"
    done
    # ppn 2: 5 runs of each case bitwise alike (checked in the program),
    # and the big double sum's bits the same for K = 1 and 3.
    for k in 1 3; do
      lease_k "$k" "stripes-k$k"
      stripes_run "$k" 2 "$work/repeat-k$k.log" "$build/bin/test_switch_check" --repeat 5 \
        --big 1048584
      sed -n 's/.*int64 hash \([0-9a-f]*\) double hash \([0-9a-f]*\).*/\1 \2/p' \
        "$work/repeat-k$k.log" >"$work/hash$k"
      [[ -s $work/hash$k ]] || die "K = $k: no hashes printed"
      lease_gone "$k" "stripes-k$k"
    done
    cmp -s "$work/hash1" "$work/hash3" ||
      die "the sums differ between K = 1 and 3: $(cat "$work"/hash[13] | tr '\n' ' ')"
    echo "ppn 2: int64 and double hashes $(cat "$work/hash1") for K = 1 and 3"
    # One stripe's agent (a2) SIGKILLed while K = 3 stripes run.
    lease_k 3 stripes-fault
    kill_when_ready "${apid[2]}"
    stripes_run 3 1 "$work/fault.log" "$build/bin/test_switch_check" --fault "$work" \
      --bytes 4194304 --max-call-ms 6000
    wait $killer || die "the switch never served before the kill"
    grep -Eq 'switch allreduce failed .*recomputed on the host' "$work/fault.log" ||
      die "no failure line after the kill"
    kill -0 "${apid[1]}" && kill -0 "${apid[3]}" || die "a surviving agent died"
    echo "PASS fabric stripes"
    ;;
  tree)
    # 2 racks x 3 hosts, a leaf agent per rack (aleaf1, aleaf2), the spine
    # agent on the spine: one lease over leaf1, leaf2 and the spine.
    fabric_up "$name" --topo leaf-spine --racks 2 --hosts 3 --subnet "$(subnet_of 10.88)" ||
      die "fabric up"
    fabric_tree_start "$work" 2 3 --set agent.log_level=info || die "tree agents start"
    EXTRA_AGENT_PIDS+=("${TREE_PIDS[@]}")
    tree_lease() {
      local out
      out=$("$build/bin/switchagg-ctl" lease create --job "$1" --slots 16 --ttl 10m \
        --nodes 'h[1-6]' --fabric "$TREE_MAP") || die "lease create: $out"
      eval "$(grep '^export ' <<<"$out")"
      [[ ${SWITCHAGG_AGENT_NAMES:-} == leaf1,leaf2,spine ]] ||
        die "the lease is not leaf1, leaf2 and the spine: ${SWITCHAGG_AGENT_NAMES:-unset} ($out)"
    }
    tree_gone() {
      "$build/bin/switchagg-ctl" lease delete --job "$1" --fabric "$TREE_MAP" >/dev/null ||
        die "lease delete"
    }
    # tree_run LOG PROGRAM ARGS...: PROGRAM on the 6 hosts x 1 rank.
    tree_run() {
      local log=$1 t0=$SECONDS
      shift
      timeout -s KILL 150 bash -c "$(declare -f fabric_py fabric_net fabric_hostfile fabric_mpirun)
        root='$root' build='$build' FABRIC='$FABRIC' FABRIC_DIR='$FABRIC_DIR'
        fabric_mpirun 6 1 --mca coll_switchagg_offload on \
          --mca coll_switchagg_verbose 1 -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
          -x SWITCHAGG_AGENT_NAMES -x SWITCHAGG_FABRIC -x SWITCHAGG_SWITCH_WINDOW=4 \
          $(printf '%q ' "$@")" </dev/null >"$log" 2>&1
      local rc=$?
      cat "$log"
      [[ $rc -eq 0 ]] && grep -q '^PASS' "$log" || die "tree: ${1##*/} failed (exit $rc)"
      echo "tree: ${1##*/} passed in $((SECONDS - t0)) s"
    }
    tree_lease tree-matrix
    tree_run "$work/matrix.log" "$build/bin/mpi_allreduce_check" --expect switch --quick \
      --counts 2,1001
    grep -q "a tree over 2 leaf agents" "$work/matrix.log" || die "the calls did not use the tree"
    # Both leaves forwarded, the spine reduced: the agents' counters.
    for a in l1 l2; do
      up=$("$build/bin/switchagg-ctl" --agent "unix:$work/$a/agent.sock" --json status |
        sed -n 's/.*"bytes_up": *\([0-9]*\).*/\1/p')
      [[ ${up:-0} -gt 0 ]] || die "leaf $a sent nothing up"
    done
    # Bitwise the same floats over 5 runs for this layout, and the bytes on
    # each host's link per call: N (one contribution up, one result down).
    tree_run "$work/repeat.log" "$build/bin/test_switch_check" --repeat 5 --big 1048584
    fabric_tx_bytes >"$work/tx0"
    fabric_uplink_bytes >"$work/u0"
    tree_run "$work/bytes.log" "$build/bin/mpi_liveness_check" --sizes 4194304 --iters 4 \
      --warmup 0 --expect switch
    fabric_tx_bytes >"$work/tx1"
    fabric_uplink_bytes >"$work/u1"
    tree_gone tree-matrix
    fabric_tx_delta "$work/tx0" "$work/tx1" >"$work/sent"
    check_bytes "tree, 6 hosts x 1 rank, 4 x 4 MiB" "$work/sent" $((4 * 4194304)) ||
      die "tree bytes"
    # Each rack's uplink: one partial up and the result down per call, not
    # its 3 hosts' vectors.
    paste "$work/u0" "$work/u1" | awk '{ print "rack" $1, $5 - $2 }' >"$work/up"
    check_bytes "tree uplinks up, 4 x 4 MiB" "$work/up" $((4 * 4194304)) || die "uplink bytes up"
    paste "$work/u0" "$work/u1" | awk '{ print "rack" $1, $6 - $3 }' >"$work/down"
    check_bytes "tree uplinks down, 4 x 4 MiB" "$work/down" $((4 * 4194304)) ||
      die "uplink bytes down"
    # A leaf agent, then the spine, SIGKILLed mid-loop: right answers,
    # bounded calls, no hang.
    for victim in leaf2 spine; do
      tree_lease "tree-kill-$victim"
      rm -f "$work/ready" "$work/fired"
      pid=${LEAF_PIDS[2]}
      [[ $victim == spine ]] && pid=$SPINE_PID
      kill_when_ready "$pid"
      tree_run "$work/kill-$victim.log" "$build/bin/test_switch_check" --fault "$work" \
        --bytes 4194304 --max-call-ms 8000
      wait $killer || die "$victim: the switch never served before the kill"
      grep -Eq 'switch allreduce failed .*recomputed on the host' "$work/kill-$victim.log" ||
        die "$victim killed: no failure line"
      echo "tree: $victim killed mid-loop: every answer right, every call bounded"
      if [[ $victim == leaf2 ]]; then
        fabric_leaf_start 2 --set agent.log_level=info || die "leaf 2 restart"
        EXTRA_AGENT_PIDS+=("$AGENT_PID")
        AGENT_PID=
        # Its lease died with it; the others' go (and the TTL backstops them).
        "$build/bin/switchagg-ctl" lease delete --job tree-kill-leaf2 --fabric "$TREE_MAP" \
          >/dev/null 2>&1 || true
      fi
    done
    echo "PASS fabric tree"
    ;;
  oneshot)
    fabric_with_lease 3 10.95 fabric-oneshot
    for ppn in 1 2; do
      np=$((3 * ppn))
      # Every successful call one agent round trip, no host message of the
      # switch path (the check's counters), at 1 rank per host and with
      # node leaders.
      check_across $ppn "$work/ok$ppn.log" "one round trip across 3 hosts" \
        "$build/bin/mpi_oneshot_check" --mode ok
      # The OSU-style validated sweep up to the keep limit (1 MiB): every
      # result checked, every size on the switch.
      on_switch $np $ppn "$work/sweep.log" "validated sweep" \
        "$build/bin/switchagg-bench" --check --min 8 --max 1M --iters 20 --min-iters 4 --warmup 2
      rows=$(grep -Ec "^ +[0-9]+ +[0-9]+ .* switch +" "$work/sweep.log")
      [[ $rows -eq 18 ]] || { cat "$work/sweep.log"; die "validated sweep, ppn $ppn: $rows of 18 sizes on the switch"; }
      # Nothing between hosts: the bytes on the links between hosts of a
      # long and a short run of 8-byte calls, differenced, per call (with
      # the per-call agreement it was ~700 B at 4 hosts; MPI's runtime and
      # TCP keepalives are the rest).
      for coll in allreduce barrier; do
        per=()
        for it in 100 1100; do
          b0=$(fabric_host_bytes)
          on_switch $np $ppn "$work/wire.log" "$coll wire run" \
            "$build/bin/switchagg-bench" --coll "$coll" --min 8 --max 8 --iters "$it" --warmup 0
          grep -Eq "^ +[0-9]+ +[0-9]+ .* switch +" "$work/wire.log" ||
            { cat "$work/wire.log"; die "$coll wire run, ppn $ppn: not served by the switch"; }
          per+=($(($(fabric_host_bytes) - b0)))
        done
        awk -v a="${per[0]}" -v b="${per[1]}" -v what="$coll, ppn $ppn" 'BEGIN {
          v = (b - a) / 1000; ok = v < 16
          printf "%sbetween hosts per 8-byte %s: %.1f bytes (bound 16)\n", ok ? "" : "FAIL: ", what, v
          exit !ok }' || die "$coll, ppn $ppn: a successful call put bytes between hosts"
      done
    done
    echo "PASS fabric oneshot"
    ;;
  rails)
    source "$root/tests/fabric/rails_scenario.sh"
    ;;
  rail_leaders | rail_leaders_fault)
    source "$root/tests/fabric/rail_leaders_scenario.sh"
    ;;
  routed)
    fabric_with_lease 3 10.87 fabric-routed
    # 1 rank per host, then 2 (node leaders: each host's lowest rank is the
    # agent's member; the node reduces, gathers, scatters and broadcasts).
    for ppn in 1 2; do
      check_across $ppn "$work/routed$ppn.log" "routed calls across 3 hosts" \
        "$build/bin/mpi_routed_check" --expect switch $( ((ppn > 1)) && echo --quick)
      # Bytes each host sends for 4 calls of 8 MiB (N): the root is rank 0
      # on h1. The same bounds at 2 ranks per host: the leader sends for its
      # node (every rank a member would double the reduce-scatter's).
      N=8388608
      for coll in bcast allgather reduce_scatter_block; do
        sent_during "$work/bytes.log" "$coll byte run, ppn $ppn" $((3 * ppn)) $ppn \
          "${offload_args[@]}" "$build/bin/switchagg-bench" --coll "$coll" --min $N --max $N \
          --iters 4 --min-iters 4 --warmup 0
        grep -Eq "^ +[0-9]+ +4 .* switch +" "$work/bytes.log" ||
          { cat "$work/bytes.log"; die "$coll, ppn $ppn: the byte run was not served by the switch"; }
        # Each host's bytes within [lo, hi]: the payload it must send, plus
        # the TCP acknowledgements of what it receives (~2.5% of that).
        case $coll in
          bcast)  # the root sends N per call; the others only headers and acks
            head -1 "$work/sent" >"$work/root"
            tail -n +2 "$work/sent" >"$work/others"
            check_range "bcast root, ppn $ppn" "$work/root" $((4 * N)) $((4 * N * 21 / 20 + 65536)) &&
              check_range "bcast non-root, ppn $ppn" "$work/others" 0 $((4 * N / 20)) ||
              die "bcast bytes" ;;
          allgather)  # N is the whole result: each host sends its blocks, N/3
            check_range "allgather, ppn $ppn" "$work/sent" $((4 * N / 3)) $((4 * N / 3 * 11 / 10 + 65536)) ||
              die "allgather bytes" ;;
          reduce_scatter_block)  # float32: each member sends its (node's) whole vector
            check_range "reduce_scatter_block, ppn $ppn" "$work/sent" $((4 * N)) $((4 * N * 21 / 20 + 65536)) ||
              die "reduce_scatter_block bytes" ;;
        esac
      done
    done
    echo "PASS fabric routed"
    ;;
  *) die "unknown scenario $scenario" ;;
esac
