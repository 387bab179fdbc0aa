#!/usr/bin/env bash
# Version reporting, all from the build tree and against the project()
# version: switchagg-agent --version, switchagg-ctl --version, the
# component's version in ompi_info and in its first verbose line, and the
# agent's in its metrics (switchagg_build_info) and status.
#
#   check_version.sh SRC BUILD VERSION
set -euo pipefail
version=${3:?usage: $0 SRC BUILD VERSION}
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh" "$1" "$2"
bin=$build/bin
export OMPI_MCA_mca_base_component_path=$build/lib/openmpi:$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')

[[ $("$bin/switchagg-agent" --version) == "switchagg-agent $version" ]] ||
  fail "switchagg-agent --version: $("$bin/switchagg-agent" --version)"
[[ $("$bin/switchagg-ctl" --version) == "switchagg-ctl $version" ]] ||
  fail "switchagg-ctl --version: $("$bin/switchagg-ctl" --version)"
line=$(ompi_info | grep 'MCA coll: switchagg') || fail "ompi_info does not list coll switchagg"
[[ $line == *"Component v$version)" ]] || fail "ompi_info: $line"
first=$(mpirun --allow-run-as-root --oversubscribe -np 1 --mca coll_switchagg_verbose 1 \
  "$bin/switchagg-bench" --max 8 --iters 1 2>&1 | grep -m1 '^switchagg\[') || true
[[ $first == "switchagg[coll] info: coll/switchagg $version" ]] || fail "first verbose line: '$first'"
echo "agent, ctl, ompi_info and the first verbose line say $version"

work=$(mktemp -d)
# shellcheck source=../../scripts/lib_agent.sh
. "$src/scripts/lib_agent.sh"
trap 'agent_stop; rm -rf "$work"' EXIT
agent_start "$src/config/agent.toml" "$work"
metrics=$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" metrics)
grep -qx "switchagg_build_info{version=\"$version\"} 1" <<<"$metrics" ||
  fail "no switchagg_build_info{version=\"$version\"} 1 in the metrics"
"$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" --json status | grep "\"version\": *\"$version\"" >/dev/null ||
  fail "the agent's status does not carry version $version"
echo "the agent's metrics and status say $version"
echo "PASS version"
