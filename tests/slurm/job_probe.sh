#!/usr/bin/env bash
# Runs as a job task (or batch script) under test: prints on one line what
# the SPANK plugin handed over (a hash of the token, never the token), and
# for task 0 the job's lease as the agent lists it during the job.
lease=${SWITCHAGG_LEASE:-}
sum=$(printf %s "$lease" | md5sum | cut -c1-8)
line="task=${SLURM_PROCID:-?} job=${SLURM_JOB_ID:-?} mode=${SWITCHAGG_MODE:-unset}"
line+=" lease_len=${#lease} lease_sum=$sum agent=${SWITCHAGG_AGENT:-unset} "
line+="names=${SWITCHAGG_AGENT_NAMES:-unset} fabric=${SWITCHAGG_FABRIC:-unset} "
if [[ ${SLURM_PROCID:-0} == 0 && -n ${SWITCHAGG_PROBE_CTL:-} ]]; then
  py=/usr/bin/python3
  [[ -x $py ]] || py=python3
  line+=$("$SWITCHAGG_PROBE_CTL" leases --json 2>/dev/null | "$py" -c '
import json, sys
try:
    leases = json.load(sys.stdin).get("leases", [])
except ValueError:
    print("during=unreachable")
    sys.exit(0)
mine = [l for l in leases if str(l.get("job")) == sys.argv[1]]
out = "during=" + ("job:%s uid:%s slots:%s" % (mine[0]["job"], mine[0]["uid"], mine[0]["slots"]) if mine else "none")
print(out + " leases_total=%d" % len(leases))' "${SLURM_JOB_ID:-}")
fi
echo "$line"
