# The 2-rail emulated cluster of the rails scenarios (sourced by
# rails_scenario.sh and rail_leaders_scenario.sh inside fabric_test.sh: its
# helpers, $work, $name, die): fabric.py --rails 2, 3 hosts at 100 Mbit/s
# on subnet ${rails_subnet}, an agent per plane (ar1, ar2), fabric maps of
# both rails (map2) and of rail 1 (map1) as rail pools; rail_lease,
# rail_unlease, bounded, rails_run, rail_bytes and hashes below.
fabric_up "$name" --hosts 3 --rails 2 --rate 100 --subnet "$(subnet_of "$rails_subnet")" ||
  die "fabric up"
declare -a asock apid
for k in 1 2; do
  mkdir -p "$work/a$k"
  FABRIC_AGENT_HOST=ar$k fabric_agent_start "$work/a$k" --set agent.log_level=info ||
    die "the agent of rail $k did not start on ar$k"
  asock[$k]=$AGENT_SOCKET apid[$k]=$AGENT_PID
  EXTRA_AGENT_PIDS+=("$AGENT_PID")
  rail_data[$k]=$AGENT_DATA
done
AGENT_PID=
# rail_map K...: a rail pool of the agents of rails K... over h[1-3].
rail_map() {
  local k list=""
  for k in "$@"; do
    printf '[[agent]]\nname = "rail%s"\ncontrol = "unix:%s"\n\n' "$k" "${asock[$k]}"
    list+="${list:+, }\"rail$k\""
  done
  printf '[[pool]]\nname = "rails"\nagents = [%s]\nnodes = "h[1-3]"\nrails = true\n' "$list"
}
rail_map 1 2 >"$work/map2.toml"
rail_map 1 >"$work/map1.toml"
# rail_lease MAP JOB: the job's lease on every agent of MAP, exported.
rail_lease() {
  local out
  out=$("$build/bin/switchagg-ctl" lease create --job "$2" --slots 16 --ttl 10m \
    --nodes 'h[1-3]' --fabric "$work/$1.toml") || die "lease create on $1: $out"
  eval "$(grep '^export ' <<<"$out")"
}
rail_unlease() {
  "$build/bin/switchagg-ctl" lease delete --job "$2" --fabric "$work/$1.toml" >/dev/null ||
    die "lease delete on $1"
}
# bounded LOG NP PPN ARGS...: fabric_mpirun NP PPN ARGS into LOG, killed
# after 150 s (exit 137); its exit status.
bounded() {
  local log=$1 np=$2 ppn=$3
  shift 3
  timeout -s KILL 150 bash -c "$(declare -f fabric_py fabric_net fabric_hostfile fabric_mpirun)
    root='$root' build='$build' FABRIC='$FABRIC' FABRIC_DIR='$FABRIC_DIR'
    fabric_mpirun $np $ppn $(printf '%q ' "$@")" </dev/null >"$log" 2>&1
}
switch_on=(--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1
  -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE)
# rails_run STRIPES PPN LOG PROGRAM ARGS...: PROGRAM on the 3 hosts, PPN
# ranks each, on the switch path; asserts PASS and STRIPES stripes joined.
rails_run() {
  local k=$1 ppn=$2 log=$3 t0=$SECONDS rc
  shift 3
  bounded "$log" $((3 * ppn)) "$ppn" "${switch_on[@]}" "$@"
  rc=$?
  cat "$log"
  [[ $rc -eq 0 ]] && grep -q '^PASS' "$log" || die "$k rail(s), ppn $ppn: ${1##*/} failed (exit $rc)"
  grep -q "joined switch group .*($k stripe(s)" "$log" || die "$k rail(s), ppn $ppn: not $k stripes"
  echo "$k rail(s), ppn $ppn: ${1##*/} passed in $((SECONDS - t0)) s"
}
# rail_bytes: "name rail1_tx rail2_tx" per compute host, "arK rx" per agent.
rail_bytes() {
  fabric_py counters "$FABRIC" | /usr/bin/python3 -c '
import json, sys
c = json.load(sys.stdin)
for h, v in sorted(c.items()):
    if "rails" in v:
        print(h, v["rails"]["1"]["tx_bytes"], v["rails"]["2"]["tx_bytes"])
    elif h.startswith("ar"):
        print(h, v["rx_bytes"], 0)'
}
hashes() {
  sed -n 's/.*int64 hash \([0-9a-f]*\) double hash \([0-9a-f]*\).*/\1 \2/p' "$1"
}

# rails_even BEFORE AFTER (rail_bytes snapshots): each host's two rails
# carried within 10% of their mean (at least 1 MiB), the agents' too.
rails_even() {
  paste "$1" "$2" | awk '
  { a = $5 - $2; b = $6 - $3; m = (a + b) / 2
    if ($1 ~ /^ar/) { rx[$1] = a; next }
    printf "%s sent %d bytes on rail 1, %d on rail 2\n", $1, a, b
    if (m < 1048576 || a < 0.9 * m || b < 0.9 * m) bad = 1 }
  END { m = (rx["ar1"] + rx["ar2"]) / 2
        printf "rail agents received %d (ar1) and %d (ar2) bytes\n", rx["ar1"], rx["ar2"]
        if (rx["ar1"] < 0.9 * m || rx["ar2"] < 0.9 * m) bad = 1
        exit bad }'
}
# rail2_down CMD...: CMD (taking rail 2 down) once rank 0 created
# $work/ready (test_switch_check --fault), then $work/fired; $killer.
rail2_down() {
  (
    for _ in $(seq 1 600); do [[ -f $work/ready ]] && break; sleep 0.05; done
    [[ -f $work/ready ]] || exit 1
    sleep 0.$((RANDOM % 10))
    "$@"
    touch "$work/fired"
  ) </dev/null >/dev/null 2>&1 &
  killer=$!
}
# rail2_link_down PPN NAMED: h2's rail-2 link down while test_switch_check
# --fault streams 4 MiB calls (PPN ranks on each of the 3 hosts, with
# "${switch_on[@]}"),
# up again after: every result exact (or a clear switchagg error), the job
# bounded, the failure line containing NAMED.
rail2_link_down() {
  rm -f "$work/ready" "$work/fired"
  rail2_down fabric_py exec "$FABRIC" h2 -- ip link set h2-eth1 down
  # The switch path fails over within its bound, naming rail 2; the host
  # path's own UCX lanes between h2 and the others on rail 2 die with it
  # (UCX 1.13 moves no lane to another rail), so the job may end there with a
  # clear error instead: either way no wrong answer and no hang.
  t0=$SECONDS
  # The host path's UCX lanes on rail 2 may stall rather than fail (no RST on
  # a downed link): the stall bound, shortened to 30 s, ends such a wait.
  bounded "$work/link.log" $((3 * $1)) "$1" "${switch_on[@]}" --mca coll_switchagg_stall_timeout 30 \
    "$build/bin/test_switch_check" --fault "$work" --bytes 4194304 --max-call-ms 8000
  rc=$?
  cat "$work/link.log"
  wait $killer || die "the switch never served before rail 2's link went down"
  ((rc != 137)) || die "the job hung after rail 2's link went down (killed after 150 s)"
  grep -Eq 'element [0-9]+ wrong' "$work/link.log" && die "a rank got a wrong answer after rail 2's link went down"
  grep -Eq 'switch allreduce failed .*recomputed on the host' "$work/link.log" ||
    die "no failure line after rail 2's link went down"
  grep -E 'switch allreduce failed' "$work/link.log" | grep -qF "$2" ||
    die "the failure does not name rail 2: no '$2'"
  if [[ $rc -eq 0 ]]; then
    grep -q '^PASS' "$work/link.log" || die "exit 0 without PASS"
    echo "rail 2's link down at h2: every result exact, redone on the host, $((SECONDS - t0)) s"
  else
    grep -q 'switchagg\[coll\] error' "$work/link.log" ||
      die "the job failed without a switchagg error naming why"
    echo "rail 2's link down at h2: the switch call redone on the host named rail 2; the host" \
      "path then failed with a clear error (its lanes on rail 2), $((SECONDS - t0)) s"
  fi
  fabric_py exec "$FABRIC" h2 -- ip link set h2-eth1 up
}
