#!/usr/bin/env bash
# rules_run.sh SCENARIO BIN RULES -- LAUNCHER...
# Site rules and tune files end to end: real mpirun jobs (LAUNCHER, an
# mpirun command line with -np N up to the program) of mpi_tune_check from
# BIN, which reports per size the one path that served every call after
# warm-up, checked against the component's own per-path counters. RULES is
# the shipped example config/selection.rules. Scenarios:
#
#   rules      tune off, no rules: every size on the cost model's path; the
#              shipped rules file: its first rule (bytes 0-2K,
#              recursive_doubling) changes the 8-byte path and names its
#              line in the verbose log, larger sizes keep the model's path;
#              a site file pinning 4K-64K on ring changes those sizes only
#   tune_file  job 1 tunes online and writes coll_switchagg_tune_file
#              (rules + measured lines for every size); job 2 loads it as
#              coll_switchagg_rules: every size on job 1's settled path, from
#              the first call, with no exploring call and no agreement
#              (tune:explore_calls = tune:agreements = 0), the log naming
#              the file's rule
# Prints PASS, or what differed.
set -uo pipefail
scenario=$1 bin=$2 shipped=$3
shift 4
launch=("$@")
work=$(mktemp -d /tmp/switchagg-rules-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sizes=8,4096,65536

# job NAME MPIRUN_ARGS... -- CHECK_ARGS...: mpi_tune_check, log NAME.log
# (coll_switchagg_verbose VERBOSE, default 1: each path's first call), the
# settled path per size in NAME.paths ("SIZE PATH" lines).
job() {
  local name=$1
  shift
  local args=()
  while [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  # The check's lines (stdout) apart from the ranks' verbose lines
  # (stderr): written to one file they can cut into each other.
  "${launch[@]}" --mca coll_switchagg_verbose "${VERBOSE:-1}" "${args[@]}" "$bin/mpi_tune_check" \
    --sizes "$sizes" --expect any "$@" >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  cat "$work/$name.out" "$work/$name.err" >"$work/$name.log"
  cat "$work/$name.log"
  [[ $rc -eq 0 ]] || fail "job $name failed"
  grep -q '^PASS tune' "$work/$name.out" || fail "job $name did not pass"
  sed -nE 's/^size ([0-9]+): settled on ([a-z_]+) .*/\1 \2/p' "$work/$name.out" >"$work/$name.paths"
  [[ $(wc -l <"$work/$name.paths") -eq 3 ]] || fail "job $name: not one settled path per size"
}
path() { awk -v s="$2" '$1 == s { print $2 }' "$work/$1.paths"; }  # JOB SIZE
# expect_log JOB PATTERN: the job's verbose log has a line matching PATTERN.
expect_log() { grep -Eq -- "$2" "$work/$1.log" || fail "job $1: no line like /$2/"; }

case $scenario in
  rules)
    job model --mca coll_switchagg_tune off -- --warmup 4 --measure 8
    job shipped --mca coll_switchagg_tune off --mca coll_switchagg_rules "$shipped" -- \
      --warmup 4 --measure 8
    # The shipped file's first rule: 0-2K on recursive doubling.
    line=$(grep -n '^allreduce  *bytes=0-2K .*algorithm=recursive_doubling' "$shipped" | cut -d: -f1)
    [[ -n $line ]] || fail "$shipped lost its 0-2K recursive_doubling rule"
    [[ $(path model 8) != recursive_doubling ]] ||
      fail "the cost model already picks recursive_doubling at 8 bytes: the rule changes nothing"
    [[ $(path shipped 8) == recursive_doubling ]] ||
      fail "8 bytes with $shipped: $(path shipped 8), expected recursive_doubling"
    expect_log shipped "allreduce 8 bytes .* -> recursive_doubling \(rule $shipped:$line\)"
    for s in 4096 65536; do
      [[ $(path shipped $s) == "$(path model $s)" ]] ||
        fail "$s bytes: $(path shipped $s) with $shipped, $(path model $s) without (its rule is auto)"
    done
    # A site file: a range pinned on ring, the rest to the model.
    printf '# pin 4K-64K\nallreduce bytes=4K-64K switch=no algorithm=ring\nallreduce bytes=* algorithm=auto\n' \
      >"$work/site.rules"
    job site --mca coll_switchagg_tune off --mca coll_switchagg_rules "$work/site.rules" -- \
      --warmup 4 --measure 8
    for s in 4096 65536; do
      [[ $(path model $s) != ring ]] || fail "the cost model already picks ring at $s bytes"
      [[ $(path site $s) == ring ]] || fail "$s bytes with the site rules: $(path site $s), expected ring"
    done
    [[ $(path site 8) == "$(path model 8)" ]] || fail "8 bytes: the site rules changed a size they do not match"
    expect_log site "allreduce 4096 bytes .* -> ring \(rule $work/site.rules:2\)"
    ;;
  tune_file)
    job learn --mca coll_switchagg_tune_file "$work/learnt.rules" -- --warmup 40 --measure 8
    [[ -s $work/learnt.rules ]] || fail "job 1 wrote no tune file"
    cat "$work/learnt.rules"
    expect_log learn "learnt selection rules written to $work/learnt.rules"
    grep -Eq 'settled on [a-z_]+ after [1-9][0-9]* measuring calls' "$work/learn.log" ||
      fail "job 1 never explored: nothing was learnt"
    for b in 8-15 4096-8191 65536-131071; do
      grep -Eq "^allreduce bytes=$b .*algorithm=[a-z_]+" "$work/learnt.rules" ||
        fail "the tune file has no rule for bytes=$b"
      grep -Eq "^measured bytes=$b .*us:" "$work/learnt.rules" ||
        fail "the tune file has no measured line for bytes=$b"
    done
    # Verbose 2: a line per call, each naming what decided it.
    VERBOSE=2 job load --mca coll_switchagg_rules "$work/learnt.rules" -- --warmup 4 --measure 8 \
      --no-explore
    for s in 8 4096 65536; do
      [[ $(path load $s) == "$(path learn $s)" ]] ||
        fail "$s bytes: job 2 served $(path load $s), job 1 settled on $(path learn $s)"
      # Decided by the file's rule for this size's bucket, on every call.
      line=$(grep -n "^allreduce bytes=$s-" "$work/learnt.rules" | cut -d: -f1)
      calls=$(grep -Ec "DUP FROM 0: allreduce $s bytes \(int64 sum\) -> $(path learn $s) \(rule $work/learnt.rules:$line\)" \
        "$work/load.log")
      [[ $calls -eq 12 ]] || fail "$s bytes: $calls of job 2's 12 calls decided by learnt.rules:$line"
    done
    ! grep -Eq 'settled on [a-z_]+ after [1-9][0-9]* measuring calls' "$work/load.log" ||
      fail "job 2 explored"
    ! grep -Eq -- '-> [a-z_]+ \((tuned|cost model)' "$work/load.log" ||
      fail "job 2 decided a call by tuning or the cost model"
    ;;
  *) fail "scenario must be rules or tune_file, got '$scenario'" ;;
esac
echo "PASS rules $scenario"
