# Sourced by the benchmark scripts that start agents or emulated fabrics,
# after their option parsing (which sets root and build):
#   bench_setup NAME [RAW [fresh]]
#                           → bin, comp_path (the component from the build
#                             first, then Open MPI's own), work (a scratch
#                             dir under /var/tmp: emulated hosts have a
#                             private /tmp), raw (benchmarks/results/RAW,
#                             created; `fresh`: its *.csv and *.txt of an
#                             earlier run removed, so a page is this run's
#                             alone) and a trap that stops the agent and
#                             the fabric and removes work on any exit.
#   bench_out BASE [SUFFIX] → out, unless given: benchmarks/results/
#                             BASE[_fabric]SUFFIX.md, _fabric with $hosts set
#                             (then np_list=$hosts too: one rank per host)
#   bench_lease JOB [SLOTS] → a 2 h lease of SLOTS (8) on the agent just
#                             started (AGENT_SOCKET) for JOB, exported
#                             (SWITCHAGG_AGENT, _LEASE, _MODE)
#   bench_config HxP@M      → hosts, ppn, mbit of one --configs entry: H
#                             hosts, P ranks each, links at M Mbit/s
#   bench_each_config FN    → FN HOSTS PPN MBIT for each entry of $configs
#   bench_need FILE...      → exits naming the first that is not built
#   bench_mpirun NP ARGS... → one job: with $hosts set across the fabric, one
#                             rank a host; else here (vader, the component
#                             from comp_path), killed after $bench_timeout
#                             seconds (300)
#   bench_ratio A B [DIGITS] → A / B with DIGITS decimals (default 2); "—"
#                             when B is 0
#   bench_median            → the median of the numbers on stdin (blank-
#                             separated; an even count gives the lower middle)
#   bench_value FILE CMD... → CMD's output on FILE (a run's figure); when it
#                             finds nothing, FILE on stderr and a failure
#   bench_agent JOB FABRIC [fabric_up options]
#                           → one agent (agent.log_level=warn) and JOB's
#                             bench_lease: on this machine, or with $hosts
#                             set on the emulated fabric FABRIC of that many
#                             hosts at $rate Mbit/s.
#   bench_tree FABRIC SUBNET → a leaf-spine fabric FABRIC of $racks racks ×
#                             $hosts hosts, links at $rate Mbit/s, uplinks
#                             at $uplink, with its agents (fabric_tree_start:
#                             TREE_MAP, SPINE_SOCKET, …); the exit trap also
#                             stops the tree's agents.
#   bench_notes             → how to read the page (benchmarks/<out's name>
#                             _notes.md, written from one run), after a blank
#                             line, if there is one
bench_setup() {
  build=$(cd "$build" && pwd)
  bin=$build/bin
  comp_path="$build/lib/openmpi:$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')"
  source "$root/scripts/lib_agent.sh"
  source "$root/scripts/lib_fabric.sh"
  work=$(mktemp -d "/var/tmp/switchagg-$1.XXXXXX")
  if [[ -n ${2:-} ]]; then
    raw=$root/benchmarks/results/$2
    mkdir -p "$raw"
    [[ ${3:-} != fresh ]] || rm -f "$raw"/*.csv "$raw"/*.txt
  fi
  trap 'agent_stop; fabric_down; rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
}

bench_out() {
  [[ -z ${hosts:-} ]] || np_list=$hosts
  out=${out:-$root/benchmarks/results/$1${hosts:+_fabric}${2:-}.md}
}

bench_tree() {
  trap 'for p in "${TREE_PIDS[@]}"; do AGENT_PID=$p; agent_stop; done; fabric_down; rm -rf "$work"' EXIT
  fabric_up "$1" --topo leaf-spine --racks "$racks" --hosts "$hosts" --rate "$rate" \
    --uplink "$uplink" --subnet "$2"
  fabric_tree_start "$work" "$racks" "$hosts"
}

bench_notes() {
  local notes
  notes=$root/benchmarks/$(basename "$out" .md)_notes.md
  if [[ -f $notes ]]; then echo; cat "$notes"; fi
}

bench_config() {
  local rest=${1#*x}
  hosts=${1%%x*} ppn=${rest%%@*} mbit=${rest#*@}
}

bench_each_config() {
  local c
  for c in $configs; do
    bench_config "$c"
    "$1" "$hosts" "$ppn" "$mbit"
  done
}

bench_need() {
  local f
  for f in "$@"; do
    [[ -x $f ]] || { echo "$(basename "$0" .sh): $f not built" >&2; exit 1; }
  done
}

bench_mpirun() {
  local np=$1
  shift
  if [[ -n ${hosts:-} ]]; then
    fabric_mpirun "$np" 1 "$@"
  else
    timeout -s KILL "${bench_timeout:-300}" mpirun --oversubscribe --bind-to none \
      --mca btl self,vader --mca mca_base_component_path "$comp_path" -np "$np" "$@"
  fi
}

bench_agent() {
  local job=$1 fabric=$2
  shift 2
  if [[ -n ${hosts:-} ]]; then
    fabric_up "$fabric" --hosts "$hosts" --rate "$rate" "$@"
    fabric_agent_start "$work" --set agent.log_level=warn
  else
    agent_start "$root/config/agent.toml" "$work" --set agent.log_level=warn
  fi
  bench_lease "$job"
}

bench_lease() {
  local out
  out=$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job "$1" \
    --slots "${2:-8}" --ttl 2h) || { echo "lease create $1: $out" >&2; exit 1; }
  eval "$(grep '^export ' <<<"$out")"
}

# bench_mpich_run NP ENV... -- PROG ARGS...: mpiexec.mpich here, or across
# the fabric when $hosts is set (BENCH_PPN ranks per host, default 1,
# Hydra's rsh launcher = the fabric's, UCX over TCP). The lease reaches only the runs given it
# (bench_agent exported it here): ENV K=V pairs are passed with -genv.
# Killed after BENCH_MPICH_TIMEOUT seconds (default 300 across the fabric,
# 900 here).
bench_mpich_run() {
  local np=$1 genv=()
  shift
  while [[ $1 != -- ]]; do genv+=(-genv "${1%%=*}" "${1#*=}"); shift; done
  shift
  local clean=(env -u SWITCHAGG_AGENT -u SWITCHAGG_LEASE -u SWITCHAGG_MODE)
  if [[ -n ${hosts:-} ]]; then
    local hostlist ppn=${BENCH_PPN:-1}
    hostlist=$(fabric_py hostfile "$FABRIC" --ppn "$ppn" |
      awk -v ppn="$ppn" '{ printf "%s%s:%s", (NR > 1 ? "," : ""), $1, ppn }')
    fabric_py exec "$FABRIC" h1 -- "${clean[@]}" timeout -s KILL "${BENCH_MPICH_TIMEOUT:-300}" mpiexec.mpich -launcher rsh \
      -launcher-exec "$FABRIC_DIR/rsh" -hosts "$hostlist" -n "$np" -ppn "$ppn" -iface h1-eth0 \
      -genv UCX_TLS self,tcp "${genv[@]}" "$@"
  else
    "${clean[@]}" timeout -s KILL "${BENCH_MPICH_TIMEOUT:-900}" mpiexec.mpich -n "$np" "${genv[@]}" "$@"
  fi
}

# bench_overlap_fields < LOG: mpi_iallreduce_check --mode overlap's line as
# "alone compute both ratio done/total hidden agreement" (ms, ms, ms, ratio,
# calls completed inside the compute, hidden fraction, agreement ms).
bench_overlap_fields() {
  grep '^overlap:' | sed -E 's/.*alone ([0-9.]+) ms, compute ([0-9.]+) ms, both ([0-9.]+) ms, ratio ([0-9.]+).*hidden (-?[0-9.]+).*during compute ([0-9]+)\/([0-9]+).*agreement ([0-9.]+) ms.*/\1 \2 \3 \4 \6\/\7 \5 \8/'
}

bench_value() {
  local file=$1 v
  shift
  v=$("$@" "$file")
  [[ -n $v ]] || { cat "$file" >&2; return 1; }
  echo "$v"
}

# bench_ratio A B [DIGITS]: A / B with DIGITS decimals (2), "—" when B is 0.
bench_ratio() {
  awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { if (b + 0 == 0) printf "—"; else printf "%." d "f", a / b }'
}
bench_median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
