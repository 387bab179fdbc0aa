#!/usr/bin/env bash
# find_package(switchagg) from an installed tree: `cmake --install` into a
# fresh prefix, the example consumer (examples/agent_client) configured
# against it with CMAKE_PREFIX_PATH alone and built, then run against a
# private agent (it checks its own sum) and against no agent (it must fail).
#
#   run_cmake_package.sh SRC BUILD
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
work=$(mktemp -d)
# shellcheck source=../../scripts/lib_agent.sh
. "$src/scripts/lib_agent.sh"
trap 'agent_stop; rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
  fail "cmake --install: $(tail -5 "$work/install.log")"
[[ -f $work/prefix/lib/cmake/switchagg/switchaggConfig.cmake ]] ||
  fail "no lib/cmake/switchagg/switchaggConfig.cmake in the prefix"
cmake -S "$src/examples/agent_client" -B "$work/example" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" 2>&1 ||
  fail "configuring the example: $(cat "$work/configure.log")"
cmake --build "$work/example" >"$work/build.log" 2>&1 || fail "building the example: $(cat "$work/build.log")"
echo "example built against $work/prefix"

out=$("$work/example/agent_client" "unix:$work/none.sock" 2>&1) && fail "ran with no agent: $out"
echo "no agent: $out"

agent_start "$src/config/agent.toml" "$work"
out=$("$work/example/agent_client" "unix:$AGENT_SOCKET" 2>&1) || fail "the example failed: $out"
echo "$out"
echo "$out" | grep '^allreduce through the agent: 1.5 -2 3.25$' >/dev/null || fail "no sum from the example"
left=$("$build/bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" leases)
[[ $left != *agent-client-example* ]] || fail "the example left its lease: $left"
echo "PASS cmake package"
