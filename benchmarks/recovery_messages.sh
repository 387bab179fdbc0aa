#!/usr/bin/env bash
# Recovery messages per failure against p (issue 43 §3): one node, every
# rank a member (PPN=1), the agent's fault point revokes the lease between
# two chunks of one allreduce (revoke_chunk: every member fails that call
# at once, nobody has its result, the path goes off), counted from
# switch:host_messages less switch:agreements summed over the ranks
# (mpi_oneshot_check). Both protocols of one build, interleaved per
# repetition: the exchange (default) and every member asking every other
# (SWITCHAGG_TEST_RECOVERY_ASK_ALL=1, the protocol before it). Theory:
# 2 p ceil(log2 p) against 2 p (p - 1), plus re-asks of members answering
# "pending". Writes benchmarks/results/recovery_messages.md.
#
#   benchmarks/recovery_messages.sh [--build DIR] [--nps "4 16 32"] [--reps 3] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build nps="4 16 32" reps=3 out=$root/benchmarks/results/recovery_messages.md
# shellcheck source=benchmarks/lib/bench_args.sh
source "$root/benchmarks/lib/bench_args.sh"
bench_args recovery_messages 2,13 "build nps reps out" "" "$@"
build=$(cd "$build" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=$work/raw.txt
: >"$raw"

# one NP SIDE: "side np messages fallbacks seconds" (the runner's own checks:
# every answer exact, every call bounded, the revocation between chunks).
one() {
  local np=$1 side=$2 all= log=$work/run.log t0 t1
  [[ $side == ask_all ]] && all=1
  t0=$(date +%s.%N)
  PPN=1 FAULT_AT=90 ONESHOT_ITERS=6 MAX_CALL_MS=60000 SWITCHAGG_TEST_RECOVERY_ASK_ALL=$all \
    "$root/tests/mpi/test_switch_run.sh" "$build" oneshot "$np" revoke_chunk 0 >"$log" 2>&1 ||
    { tail -40 "$log" >&2; echo "recovery_messages: np $np $side failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  local m f
  m=$(grep -ho 'recovery messages (all ranks) [0-9]*' "$log" | sed -n 1p | awk '{print $NF}')
  f=$(grep -ho 'fallbacks (all ranks) [0-9]*' "$log" | sed -n 1p | awk '{print $NF}')
  echo "$side $np $m $f $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >>"$raw"
}

for ((r = 1; r <= reps; r++)); do
  for np in $nps; do
    # Which side runs first alternates.
    if ((r % 2)); then one "$np" exchange; one "$np" ask_all
    else one "$np" ask_all; one "$np" exchange; fi
  done
done
load=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# Recovery messages per failure vs p: one node, every rank a member, lease revoked mid-call"
  echo
  echo "Produced by \`benchmarks/recovery_messages.sh --nps \"$nps\" --reps $reps\` on"
  echo "$(date -u +%Y-%m-%d) ($(nproc) cores, load average at the end: $load; other"
  echo "engineers' builds and tests ran). Deployment: one node, the agent a"
  echo "process on the ranks' cores; the count is the same wherever the agent"
  echo "runs (it is what the members send one another)."
  echo
  echo "Each run: \`tests/mpi/test_switch_run.sh BUILD oneshot NP revoke_chunk\` with"
  echo "PPN=1 (every rank a member) and the agent's fault point \`revoke:90\`: the"
  echo "lease is revoked between two chunks of one allreduce, so every member's"
  echo "call fails at once and nobody has the result (one failure: the path then"
  echo "goes off; \`fallbacks (all ranks)\` = p). Counted: \`switch:host_messages\`"
  echo "less \`switch:agreements\`, summed over the ranks (questions and answers"
  echo "of the recovery). Both protocols from one build, interleaved per"
  echo "repetition; medians of $reps."
  echo
  echo "| p | exchange | theory 2·p·⌈log2 p⌉ | ask every member | theory 2·p·(p−1) | ratio | run s (exch / all) |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for np in $nps; do
    med() { awk -v s="$1" -v n="$np" -v c="$2" '$1 == s && $2 == n { print $c }' "$raw" | sort -n |
      awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    lg=$(awk -v p="$np" 'BEGIN { r = 0; while (2 ^ r < p) r++; print r }')
    e=$(med exchange 3) a=$(med ask_all 3)
    echo "| $np | $e | $((2 * np * lg)) | $a | $((2 * np * (np - 1))) | $(awk -v e="$e" -v a="$a" 'BEGIN { printf "%.2f", e / a }') | $(printf '%.1f / %.1f' "$(med exchange 5)" "$(med ask_all 5)") |"
  done
  echo
  echo "## Reading"
  echo
  echo "The exchange sends exactly its theory at every p: each member asks"
  echo "⌈log2 p⌉ questions and answers as many, and no member is asked before it"
  echo "can answer (a member still inside the call, or behind in its rounds,"
  echo "answers when it gets there instead of saying \"pending\"). Asking every"
  echo "member sends more than its own theory, increasingly with p: the members"
  echo "fail within a few milliseconds of one another, and each question to a"
  echo "member still inside the call is answered \"pending\" and asked again"
  echo "(1 ms, doubling), which adds more the more members there are. The run times are"
  echo "whole jobs (start-up, agent, checks), shown only to say that the"
  echo "exchange costs no time here; the recovery itself is milliseconds on one"
  echo "node. The counts carry over to any deployment; between hosts each"
  echo "message is a network packet of 48 header bytes plus at most p bytes."
  echo
  echo "Raw rows (side, p, messages, fallbacks over the ranks, seconds of the whole run):"
  echo
  echo '```'
  cat "$raw"
  echo '```'
} >"$out"
cat "$out"
