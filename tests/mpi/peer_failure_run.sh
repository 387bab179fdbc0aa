#!/usr/bin/env bash
# peer_failure_run.sh NP BOUND_MS -- COMMAND...: the mpi_peer_failure test.
# COMMAND runs mpi_peer_failure_check on NP ranks under mpirun
# --enable-recovery with SWITCHAGG_TEST_EXIT_AFTER_SENDS=1:3 (rank 1
# SIGKILLed inside its 3rd allreduce, after posting its sends) and
# SWITCHAGG_UCX_PEER_TIMEOUT = BOUND_MS. Passes when the fault point fired
# there (its line, with the kill's wall-clock time), every survivor's
# MPI_Allreduce of that call returned an error within BOUND_MS of the kill
# (measured from the two wall-clock times: one machine, one clock), a
# switchagg error line says why, no result was wrong and nothing hung.
set -uo pipefail
np=$1 bound=$2
shift 2
[[ ${1:-} == -- ]] && shift
fail() { echo "FAIL mpi_peer_failure: $*" >&2; exit 1; }

out=$(timeout -s KILL 90 "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
((rc != 137)) || fail "the job hung (killed after 90 s)"
! grep -q WRONG_RESULT <<<"$out" || fail "a survivor got a wrong result"
kill_line=$(grep -m1 'test fault point SWITCHAGG_TEST_EXIT_AFTER_SENDS: rank 1 killed inside host allreduce call 3 after posting [1-9][0-9]* sends' <<<"$out") ||
  fail "the fault did not hit: no rank was killed inside call 3 after posting its sends"
killed_at=$(sed -E 's/.*\(at ([0-9]+) ms\).*/\1/' <<<"$kill_line")
grep -Eq 'switchagg\[coll\] error: comm MPI_COMM_WORLD rank [0-9]+: ring allreduce failed' <<<"$out" ||
  fail "no switchagg error line naming the failed allreduce"
for ((r = 0; r < np; ++r)); do
  ((r == 1)) && continue
  line=$(grep -m1 "^GOT_ERROR rank $r call 2 at " <<<"$out") ||
    fail "rank $r got no error from the call the peer died in"
  at=$(sed -E 's/^GOT_ERROR rank [0-9]+ call 2 at ([0-9]+) ms.*/\1/' <<<"$line")
  took=$((at - killed_at))
  echo "rank $r: error $took ms after the kill (bound $bound ms, SWITCHAGG_UCX_PEER_TIMEOUT)"
  ((took <= bound)) || fail "rank $r took $took ms to see the failure, over the $bound ms bound"
done
echo "PASS mpi_peer_failure: rank 1 killed inside call 3 after posting its sends; every survivor's error within $bound ms"
