#!/usr/bin/env bash
# switchagg on Open MPI 5.0.7 + UCX 1.18 (the Debian 13 root of
# scripts/debian13_root.sh) against 5.0's own tuned and han (and ucc when
# that Open MPI has it), side by side with the same table on this host's
# 4.1.4 + UCX 1.13, one node: the same switchagg-bench (built in each), the
# same sizes, ranks and options. Repetitions interleave the two installations
# (rep 1 on 4.1 then 5.0, rep 2 on 5.0 then 4.1, ...), and inside one
# installation every path at every np, each repetition starting at the next
# path; each cell is the median over reps of the per-size p50. Writes benchmarks/results/ompi5.md (+ raw CSVs).
#
#   benchmarks/ompi5_bench.sh [--build DIR] [--np "2 4"] [--reps 3]
#                             [--min 8] [--max 4M] [--iters 100] [--out FILE]
#                             [--report]
#
# --report: no runs; the page again from the kept raw data (after editing
# benchmarks/ompi5_notes.md, the reading of that run, appended to the page).
# DIR is the host's (4.1) build; the 5.0 build is DIR/debian13 (made by
# the ompi5_debian13 test, or here by tests/ompi5/run_debian13.sh --build-only
# when missing). Paths, per installation: switchagg auto with offload off
# (its host algorithms or the previous module, as the cost model picks),
# switchagg ring and recursive doubling forced, the switch path (a private
# agent of that build, a lease, offload on), Open MPI's tuned (--mca coll
# ^switchagg), han (coll_han_priority 100) and, if listed by ompi_info, ucc.
# (--side V --rep R --raw DIR: one installation's part of one repetition;
# the outer run calls it on the host and inside the root.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np_list="2 4" reps=3 min=8 max=4M iters=100 side='' rep=1 raw=''
out=$root/benchmarks/results/ompi5.md
source "$root/benchmarks/lib/bench_args.sh"
report_only=0
bench_args ompi5_bench 2,26 "build np=np_list reps min max iters out side rep raw" \
  "report=report_only=1" "$@"

# One installation, one repetition: every path at every np.
run_side() {
  source "$root/benchmarks/lib/bench_env.sh"
  bench_setup "ompi5-$side"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
  export SWITCHAGG_SWITCH_WINDOW=8 # one communicator: the whole lease
  bench_agent "ompi5-$side" ""
  local paths=(
    "auto|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm auto"
    "recursive_doubling|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm recursive_doubling"
    "ring|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
    "switch|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch"
    "tuned|--mca coll ^switchagg"
    "han|--mca coll ^switchagg --mca coll_han_priority 100"
  )
  if ompi_info | grep 'MCA coll: ucc' >/dev/null; then
    paths+=("ucc|--mca coll ^switchagg --mca coll_ucc_enable 1 --mca coll_ucc_priority 100")
  fi
  # Each repetition starts at another path, so that whatever a run leaves
  # behind (a busy core, the agent's state) does not always precede the same one.
  local n=${#paths[@]} k
  local order=()
  for ((k = 0; k < n; k++)); do order+=("${paths[(k + rep - 1) % n]}"); done
  run() { # NP ARGS...
    local np=$1
    shift
    timeout -s KILL 600 mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
      --mca mca_base_component_path "$comp_path" -np "$np" -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE \
      -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT -x SWITCHAGG_SWITCH_WINDOW "$@"
  }
  local np p name args csv
  if ((rep == 1)); then
    # What serves on one node: han's own verdict on a one-node communicator,
    # and the installation's versions.
    run 2 --mca coll ^switchagg --mca coll_han_priority 100 --mca coll_base_verbose 10 \
      "$bin/switchagg-bench" --min 8 --max 8 --iters 1 >"$work/han.txt" 2>&1 || true
    {
      echo "open_mpi $(ompi_info --version | awk '/Open MPI/ {print $NF; exit}' | tr -d v)"
      echo "ucx $(ucx_info -v | sed -n 's/.*[Vv]ersion:\{0,1\} \([0-9][0-9.]*\).*/\1/p' | sed -n 1p)"
      echo "han_disqualified $(grep -c 'han.*only local processes; disqualifying' "$work/han.txt")"
      echo "paths ${paths[*]%%|*}"
    } >"$raw/$side.info"
  fi
  for np in $np_list; do
    for p in "${order[@]}"; do
      name=${p%%|*} args=${p#*|}
      csv=$raw/${side}_np${np}_${name}_rep${rep}.csv
      echo "ompi5_bench: Open MPI $side rep $rep np=$np $name" >&2
      # shellcheck disable=SC2086
      run "$np" $args "$bin/switchagg-bench" --min "$min" --max "$max" --iters "$iters" \
        --min-iters 5 --warmup 5 --check --label "$name" --csv "$csv" >"$work/run.txt" 2>&1 ||
        { cat "$work/run.txt" >&2; echo "ompi5_bench: $side np=$np $name failed" >&2; exit 1; }
      # The switch column must really have gone through the agent.
      if [[ $name == switch ]] && awk -F, 'NR > 1 && $13 != "switch"' "$csv" | grep . >/dev/null; then
        echo "ompi5_bench: $side np=$np: a switch row not served by the switch" >&2
        exit 1
      fi
    done
  done
}

if [[ -n $side ]]; then
  [[ -n $raw ]] || { echo "ompi5_bench: --side needs --raw" >&2; exit 2; }
  run_side
  exit 0
fi

build=$(cd "$build" && pwd)
d13=$build/debian13
raw=$root/benchmarks/results/ompi5_raw
((report_only)) || [[ -x $build/bin/switchagg-bench ]] ||
  { echo "ompi5_bench: $build not built" >&2; exit 1; }
if ((!report_only)) && [[ ! -x $d13/bin/switchagg-bench ]]; then
  "$root/tests/ompi5/run_debian13.sh" --build-only "$root" "$build"
fi
run_all() {
  mkdir -p "$raw"
  rm -f "$raw"/*.csv "$raw"/*.info
  local opts=(--np "$np_list" --min "$min" --max "$max" --iters "$iters" --raw "$raw") r
  host_side() { "$0" --side 4.1 --rep "$1" --build "$build" "${opts[@]}"; }
  root_side() {
    "$root/scripts/debian13_root.sh" --run \
      "$(printf '%q ' "$root/benchmarks/ompi5_bench.sh" --side 5.0 --rep "$1" --build "$d13" "${opts[@]}")"
  }
  {
    echo "command benchmarks/ompi5_bench.sh --np \"$np_list\" --reps $reps --min $min --max $max --iters $iters"
    echo "started $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "load_start $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "git $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "reps $reps"
    echo "iters $iters"
    echo "np $np_list"
  } >"$raw/run.info"
  for r in $(seq 1 "$reps"); do
    if ((r % 2)); then host_side "$r" && root_side "$r"; else root_side "$r" && host_side "$r"; fi
  done
  {
    echo "ended $(date -u '+%H:%M UTC')"
    echo "load_end $(cut -d' ' -f1-3 /proc/loadavg)"
  } >>"$raw/run.info"
}
((report_only)) || run_all

# Medians over reps of the per-size p50 -> two tables per np. Rows:
# "version label bytes p50_us algorithm check" from every CSV of that np.
rows() { # NP
  local f
  for f in "$raw"/*_np"$1"_*_rep*.csv; do
    awk -F, -v ver="$(basename "$f" | cut -d_ -f1)" '
      $1 == "label" { for (i = 1; i <= NF; i++) col[$i] = i; next }
      { print ver, $col["label"], $col["bytes"], $col["p50_us"], $col["algorithm"], $col["check"] }' "$f"
  done
}
summary() { # NP
  rows "$1" | awk -v paths="$(sed -n 's/^paths //p' "$raw/4.1.info" "$raw/5.0.info" | tr '\n' ' ')" \
    "$(cat "$root/benchmarks/lib/stats.awk")"'
    function cell(x) { return x == "" ? "-" : sprintf("%.1f", median(x)) }
    function ratio(a, b) { return (a == "" || b == "") ? "-" : sprintf("%.2f", median(a) / median(b)) }
    { v[$2, $3, $1] = v[$2, $3, $1] " " $4; sizes[$3] = 1
      if ($2 == "auto") chose[$1, $3] = $5
      if ($6 == "FAILED") bad++ }
    END {
      n = split("auto recursive_doubling ring switch tuned han ucc", name, " ")
      hdr = "| size |"; sep = "|---:|"
      for (i = 1; i <= n; i++) {
        if (index(" " paths " ", " " name[i] " ") == 0) continue
        hdr = hdr " " name[i] " 4.1 | 5.0 |"; sep = sep "---:|---:|"; use[i] = 1
      }
      print "Median p50 (us), 4.1 beside 5.0:\n"
      print hdr " auto chose 4.1 / 5.0 |"; print sep "---|"
      m = sortedKeys(sizes, list)
      for (k = 1; k <= m; k++) {
        s = list[k]; line = "| " human(s) " |"
        for (i = 1; i <= n; i++) if (use[i])
          line = line " " cell(v[name[i], s, "4.1"]) " | " cell(v[name[i], s, "5.0"]) " |"
        print line " " chose["4.1", s] " / " chose["5.0", s] " |"
      }
      print "\nRatios (< 1: the first is faster; best host = the faster of ring and recursive doubling):\n"
      print "| size | tuned 5.0/4.1 | auto/tuned 4.1 | 5.0 | best host/tuned 4.1 | 5.0 | switch/tuned 4.1 | 5.0 | han/tuned 4.1 | 5.0 |"
      print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
      for (k = 1; k <= m; k++) {
        s = list[k]; line = "| " human(s) " | " ratio(v["tuned", s, "5.0"], v["tuned", s, "4.1"])
        for (j = 1; j <= 8; j++) {
          x = j % 2 ? "4.1" : "5.0"; p = j <= 2 ? "auto" : j <= 4 ? "best" : j <= 6 ? "switch" : "han"
          a = v[p, s, x]
          if (p == "best") {
            r = v["ring", s, x]; d = v["recursive_doubling", s, x]
            a = (r == "" || d == "") ? "" : median(r) < median(d) ? r : d
          }
          line = line " | " ratio(a, v["tuned", s, x])
        }
        print line " |"
      }
      if (bad) print "\n**" bad " result rows failed validation.**"
    }'
}
info() { sed -n "s/^$2 //p" "$raw/$1.info"; }
{
  echo "# Open MPI 5.0 beside 4.1: switchagg against each one's own tuned and han"
  echo
  echo "Reproduce (as root, from the source tree, after the host build; the Debian 13"
  echo "root and its build are made when missing):"
  echo
  echo '```sh'
  info run command
  echo '```'
  echo
  echo "Measured $(info run started) to $(info run ended) on $(nproc) shared cores (load"
  echo "$(info run load_start) at the start, $(info run load_end) at the end; other sessions' builds"
  echo "were running), git $(info run git). Open MPI $(info 4.1 open_mpi) + UCX $(info 4.1 ucx) (this"
  echo "Debian 12 host) and Open MPI $(info 5.0 open_mpi) + UCX $(info 5.0 ucx) (the Debian 13 root), each with"
  echo "switchagg built against it; one node, pml ob1 with the shared-memory btl, float32 sum,"
  echo "every result validated (--check), $(info run iters) timed calls per size up to 64 KiB (fewer"
  echo "above). A cell is the median over $(info run reps) interleaved repetitions of the per-size p50."
  echo
  echo "* han: on a communicator whose ranks share one node, han disqualifies itself in both"
  echo "  releases (its comm_query: \"comm has only local processes\"; counted in this run:"
  echo "  $(info 4.1 han_disqualified) times on 4.1, $(info 5.0 han_disqualified) on 5.0, np 2), so the han column is"
  echo "  tuned again: its spread against the tuned column is this run's noise. 5.0 gives"
  echo "  han priority 35 by default (above tuned's 30); 4.1 gives it 0."
  if grep -q ucc "$raw/5.0.info"; then
    echo "* ucc: Debian's 5.0 has coll/ucc; its column is Open MPI's ucc module."
  else
    echo "* ucc: not in Debian 13's Open MPI 5.0.7 build (ompi_info lists no coll/ucc), so"
    echo "  there is no ucc column."
  fi
  echo "* switch: a private agent of the same build on the same 2 cores (UCX shm/TCP"
  echo "  loopback), a lease of 8 slots; every row asserted served by the switch path."
  echo
  echo "What to expect (the theory): on one node every path moves data through"
  echo "shared memory on the same 2 cores, and Open MPI's tuned and its shared-memory"
  echo "transport are the same design in 4.1.4 and 5.0.7, so tuned 5.0/4.1 should be"
  echo "1 and switchagg's ratios to each release's tuned should be alike: the"
  echo "component's core does not know which Open MPI it runs in, and only its UCX"
  echo '(1.13 against 1.18) differs. `auto` (offload off) hands most one-node calls to'
  echo "the previous module (tuned), so auto/tuned is 1 plus the cost of deciding."
  echo "The switch path cannot win here: each rank sends N bytes to an agent"
  echo "process over TCP loopback and receives N back, and the agent adds p vectors"
  echo "on the cores the ranks use, against tuned's in-memory copies; the section"
  echo "\"Switch path on an emulated cluster\" is where links, not cores, set the time."
  echo
  for np in $(info run np); do
    echo "## np=$np"
    echo
    summary "$np"
    echo
  done
  [[ -f $root/benchmarks/ompi5_notes.md ]] && cat "$root/benchmarks/ompi5_notes.md"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "ompi5_bench: wrote $out" >&2
