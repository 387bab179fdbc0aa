# Sourced by the agent benchmarks: a private agent for one run.
#   bench_agent_tmp NAME
# makes the private folder `tmp` (/tmp/NAME.XXXXXX), removed at exit with the
# agent of the run still going (if any) stopped; UCX over TCP unless the
# caller's UCX_TLS says otherwise.
#   bench_stop_agent
# stops the agent bench_start_agent started.
#   bench_start_agent AGENT_BIN DIR [UCX_TLS]
# writes DIR/agent.toml (256 KiB slots, 128 pool slots, 16 slots a job,
# default threads: one per core), starts AGENT_BIN with it (UCX_TLS set when
# given; more agent arguments from BENCH_AGENT_ARGS, e.g. "--data-threads
# 2"), waits for "ready" and sets agent_pid and data (its data address);
# exits naming the agent's stderr if it did not start.
#   bench_interleave NAME VALUES SIDE=DIR...
# side by side on a noisy machine: for each of $reps repetitions and each of
# VALUES (blank-separated), the caller's `run SIDE DIR VALUE REP` for every
# side, appended to $raw; the sides' order rotates rep by rep, so which side
# goes first moves.
bench_interleave() {
  local name=$1 values=$2 rep v k s
  shift 2
  for rep in $(seq "$reps"); do
    for v in $values; do
      for ((k = 0; k < $#; ++k)); do
        s=${*:$(((k + rep) % $# + 1)):1}
        echo "$name: rep $rep, $v, ${s%%=*}" >&2
        run "${s%%=*}" "${s#*=}" "$v" "$rep" >>"$raw"
      done
    done
  done
}
bench_start_agent() {
  local bin=$1 dir=$2 tls=${3:-}
  cat >"$dir/agent.toml" <<EOF
[control]
unix_socket = "$dir/agent.sock"
listen = "127.0.0.1:0"
[data]
listen = "127.0.0.1:0"
slot_bytes = 262144
[pool]
slots = 128
[policy]
max_slots_per_job = 16
max_slots_per_user = 128
EOF
  rm -f "$dir/agent.out"
  env ${tls:+UCX_TLS=$tls} "$bin" --config "$dir/agent.toml" ${BENCH_AGENT_ARGS:-} >"$dir/agent.out" 2>"$dir/agent.err" &
  agent_pid=$!
  for _ in $(seq 100); do grep -q ready "$dir/agent.out" 2>/dev/null && break; sleep 0.1; done
  data=$(sed -n 's/.* data=\([^ ]*\).*/\1/p' "$dir/agent.out")
  [[ -n $data ]] || { echo "bench_start_agent: $bin did not start:" >&2; cat "$dir/agent.err" >&2; exit 1; }
}

bench_agent_tmp() {
  export UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-error} UCX_TLS=${UCX_TLS:-tcp}
  tmp=$(mktemp -d "/tmp/$1.XXXXXX")
  agent_pid=""
  trap 'bench_stop_agent; rm -rf "$tmp"' EXIT
}

bench_stop_agent() {
  [[ -n $agent_pid ]] || return 0
  kill "$agent_pid" 2>/dev/null || true
  wait "$agent_pid" 2>/dev/null || true
  agent_pid=""
}
