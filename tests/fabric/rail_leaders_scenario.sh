# Scenario `rail_leaders` of fabric_test.sh (sourced there: its helpers,
# $work, $name, die): the 2-rail emulated cluster of rails_lib.sh (3 hosts,
# a link on each of 2 switch planes at 100 Mbit/s, an agent per plane, a
# rail pool) at 2 ranks per host with SWITCHAGG_SWITCH_RAIL_LEADERS=on:
# each host's lowest rank is rail 1's member, the other rail 2's. Asserts:
# the join says 2 rail leaders on each of 3 nodes; the dtype x op matrix
# exact through them (mpi_allreduce_check --expect switch, which works out
# from the node names and the lease which ranks are members, each sending);
# counts 1, 3, 1001, 65537 and 1 MiB+8 of int32/int64/float/double, in
# place and not: every member's switch:bytes_sent grows by exactly its
# rail's stripe (test_switch_check, stripes computed there; count 1 leaves
# rail 2's stripe empty), and each host's two rails carried within 10% of
# half its bytes (the interface counters), the two agents too. About 60 s.
# Scenario `rail_leaders_fault`, on the same fabric: rail 2's link down at
# h2 while 4 MiB calls stream: every result exact, each call within 8 s,
# the failure naming h2's rail-2 leader's agent (rail2 at its address),
# or a clear switchagg error when the host path's lanes on rail 2 fail too.
rails_subnet=10.98
source "$root/tests/fabric/rails_lib.sh"
switch_on+=(-x SWITCHAGG_SWITCH_RAIL_LEADERS=on)
if [[ $scenario == rail_leaders_fault ]]; then
  # Rail 2's link down at h2 mid-loop: h2's rail-2 leader fails its stripe
  # and, waiting for it, every rail-2 leader at the call's bound; the
  # agreement makes every rank redo the call on the host.
  rail_lease map2 rail-leaders-link
  rail2_link_down 2 "rail leader of stripe 1 (rail2 at ${rail_data[2]%:*}"
  grep -q "2 rail leaders on each of 3 nodes for 6 ranks" "$work/link.log" ||
    die "no rail leaders at 2 ranks per host"
  rail_unlease map2 rail-leaders-link
else
  rail_lease map2 rail-leaders
  rails_run 2 2 "$work/matrix.log" "$build/bin/mpi_allreduce_check" \
    --expect switch --quick --counts 1001
  grep -q "2 rail leaders on each of 3 nodes for 6 ranks" "$work/matrix.log" ||
    die "no rail leaders at 2 ranks per host"
  rail_bytes >"$work/r0"
  rails_run 2 2 "$work/rails.log" "$build/bin/test_switch_check" --repeat 3 \
    --big 1048584
  rail_bytes >"$work/r1"
  rails_even "$work/r0" "$work/r1" || die "the rail leaders' rails did not carry equal shares"
  rail_unlease map2 rail-leaders
fi
kill -0 "${apid[1]}" && kill -0 "${apid[2]}" || die "a rail's agent died"
echo "PASS fabric $scenario"
