# Sourced by the test fixtures that must end exactly the processes they
# started (tests/slurm/slurm_cluster.sh, tests/fabric/slurm_fabric.sh and
# slurm_fabric_test.sh): processes are found by what they carry, never by
# name alone.
#   pids_with_env VAR=VALUE NAMES  pids of processes named NAMES (a pgrep -x
#                                  pattern, e.g. 'srun|salloc') whose environment
#                                  holds exactly VAR=VALUE
#   pids_below PID...              those pids that still run and every process
#                                  below them

pids_with_env() {
  local var=$1 names=$2 pid
  for pid in $(pgrep -x "$names" 2>/dev/null); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "$var"; then
      echo "$pid"
    fi
  done
}

pids_below() {
  (($#)) || return 0
  ps -e -o pid=,ppid= | awk -v roots="$*" '
    { parent[$1] = $2 }
    END {
      n = split(roots, r, " ")
      for (i = 1; i <= n; i++) mine[r[i]] = 1
      do { grew = 0
        for (p in parent) if (!(p in mine) && (parent[p] in mine)) { mine[p] = 1; grew = 1 }
      } while (grew)
      for (p in mine) if (p in parent) print p
    }'
}
