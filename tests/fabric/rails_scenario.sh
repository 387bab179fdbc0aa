# Scenario `rails` of fabric_test.sh (sourced there: its helpers, $work,
# $name, die): a 2-rail emulated cluster (fabric.py --rails 2: each of 3
# hosts has a link on each of 2 switch planes at 100 Mbit/s, an agent per
# plane, ar1 and ar2), the agents a rail pool of the fabric map (agent k
# serves rail k of every node: `rails = true`). Asserts: the dtype x op
# matrix exact through both rails (2 stripes) with 1 rank per host; with 2
# ranks per host (node leaders) every host's bytes split evenly over its two
# rails (interface counters, within 10%) and the two rail agents received
# equal shares, while a job on rail 1 alone leaves rail 2 idle; the 1 MiB+8
# int64/double sums bitwise those of one rail; rail 2 down mid-loop (h2's
# rail-2 link): every result exact, the call redone on the host within its
# bound, the failure naming rail 2's agent (the host path may fail too, with
# a clear error). Rail 2's agent killed: see the note at the end.
rails_subnet=10.94
source "$root/tests/fabric/rails_lib.sh"
rail_lease map2 rails-2
[[ $SWITCHAGG_AGENT == *"${rail_data[2]%:*}"* ]] ||
  die "the 2-rail lease does not name rail 2's agent: $SWITCHAGG_AGENT"
rails_run 2 1 "$work/matrix.log" "$build/bin/mpi_allreduce_check" --expect switch --quick \
  --counts 2,1001
rail_bytes >"$work/r0"
rails_run 2 2 "$work/repeat2.log" "$build/bin/test_switch_check" --repeat 3 --big 1048584
rail_bytes >"$work/r1"
grep -q "3 node leaders for 6 ranks" "$work/repeat2.log" || die "no node leaders at 2 ranks per host"
rail_unlease map2 rails-2
rails_even "$work/r0" "$work/r1" || die "the two rails did not carry equal shares"
# One rail: rail 2 stays idle (its bytes under 5% of rail 1's), same sums.
rail_lease map1 rails-1
rail_bytes >"$work/r2"
rails_run 1 2 "$work/repeat1.log" "$build/bin/test_switch_check" --repeat 3 --big 1048584
rail_bytes >"$work/r3"
rail_unlease map1 rails-1
paste "$work/r2" "$work/r3" | awk '
  $1 ~ /^h/ { a = $5 - $2; b = $6 - $3
    printf "one rail: %s sent %d bytes on rail 1, %d on rail 2\n", $1, a, b
    if (a < 1048576 || b > 0.05 * a) bad = 1 }
  END { exit bad }' || die "a job on rail 1 alone put traffic on rail 2"
hashes "$work/repeat1.log" >"$work/hash1"
hashes "$work/repeat2.log" >"$work/hash2"
[[ -s $work/hash1 ]] || die "no hashes printed"
cmp -s "$work/hash1" "$work/hash2" ||
  die "the sums differ between 1 and 2 rails: $(cat "$work"/hash[12] | tr '\n' ' ')"
echo "int64 and double hashes $(cat "$work/hash1") on 1 and on 2 rails"
rail_lease map2 rails-link
rail2_link_down 1 "stripe 1 (rail2 at ${rail_data[2]%:*}"
rail_unlease map2 rails-link
# Rail 2's agent SIGKILLed mid-stream is not run here: with two stripes on
# the emulated cluster UCX 1.13's TCP transport can abort the member whose
# zero-copy send the reset cuts (uct_iface.h:884 "comp->count > 0", seen in
# 1 of 2 runs). A killed stripe agent is covered on one host by
# mpi_switch_stripes_kill_np3.
kill -0 "${apid[1]}" || die "rail 1's agent died"
echo "PASS fabric rails"
