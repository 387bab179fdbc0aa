# Sourced by scripts and tests: start/stop a private switchagg-agent.
#   agent_start CONFIG WORKDIR [--set K=V ...]  → AGENT_PID AGENT_SOCKET AGENT_DATA
#   agent_stop                                    (idempotent)
# The agent gets a Unix control socket in WORKDIR, a free data port, no TCP
# control listener, and logs to WORKDIR/agent.log. AGENT_LAUNCH (an array:
# a command prefix, e.g. entering an emulated host) and AGENT_DATA_LISTEN
# (default 127.0.0.1:0) place it elsewhere (scripts/lib_fabric.sh).
agent_start() {
  local config=$1 dir=$2; shift 2
  local bin=${build:?}/bin
  AGENT_SOCKET=$dir/agent.sock
  "${AGENT_LAUNCH[@]}" "$bin/switchagg-agent" --config "$config" \
    --set "control.unix_socket=$AGENT_SOCKET" --set 'control.listen=' \
    --set "data.listen=${AGENT_DATA_LISTEN:-127.0.0.1:0}" "$@" >"$dir/agent.log" 2>&1 &
  AGENT_PID=$!
  local i
  for i in $(seq 1 100); do
    if AGENT_DATA=$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" --json status 2>/dev/null |
                    sed -n 's/.*"data_address": *"\([^"]*\)".*/\1/p') && [[ -n $AGENT_DATA ]]; then
      return 0
    fi
    kill -0 "$AGENT_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "agent did not start; log:" >&2
  cat "$dir/agent.log" >&2
  return 1
}

agent_stop() {
  if [[ -n ${AGENT_PID:-} ]] && kill -0 "$AGENT_PID" 2>/dev/null; then
    kill -TERM "$AGENT_PID" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$AGENT_PID" 2>/dev/null || true
    wait "$AGENT_PID" 2>/dev/null || true
  fi
  AGENT_PID=
}
