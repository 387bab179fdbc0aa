# Sourced by the benchmark scripts that start agents or emulated fabrics,
# after their option parsing (which sets root and build):
#   bench_setup NAME [RAW]  → bin, comp_path (the component from the build
#                             first, then Open MPI's own), work (a scratch
#                             dir under /var/tmp: emulated hosts have a
#                             private /tmp), raw (benchmarks/results/RAW,
#                             created) and a trap that stops the agent and
#                             the fabric and removes work on any exit.
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
  fi
  trap 'agent_stop; fabric_down; rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
}
