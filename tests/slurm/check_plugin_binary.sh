#!/usr/bin/env bash
# check_plugin_binary.sh SO: switchagg_spank.so exports only the SPANK
# callbacks and plugin_* (everything else would leak into slurmd's symbol
# space), is built hardened (stack protector, fortify, full RELRO, no
# executable stack) and links no UCX, no MPI and no libslurm (slurmd
# provides the slurm_* symbols it calls).
set -euo pipefail
so=${1:?usage: $0 path/to/switchagg_spank.so}
fail=0
bad() { echo "check_plugin_binary: $*" >&2; fail=1; }

exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
[[ -n $exported ]] || bad "no exported symbols at all"
for sym in $exported; do
  [[ $sym == slurm_spank_* || $sym == plugin_* ]] || bad "exports $sym"
done
for sym in plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_job_prolog \
  slurm_spank_user_init slurm_spank_task_init slurm_spank_job_epilog; do
  grep -qx "$sym" <<<"$exported" || bad "does not export $sym"
done

dynamic=$(readelf -dW "$so")
grep -q 'BIND_NOW' <<<"$dynamic" || bad "not linked with -z now"
readelf -lW "$so" | grep GNU_RELRO >/dev/null || bad "no RELRO segment"
readelf -lW "$so" | grep GNU_STACK | grep 'RWE' >/dev/null && bad "executable stack"
undefined=$(nm -D --undefined-only "$so")
grep -q '__stack_chk_fail' <<<"$undefined" || bad "no stack protector"
grep -q '_chk@' <<<"$undefined" || bad "no _FORTIFY_SOURCE checks"
needed=$(grep NEEDED <<<"$dynamic" || true)
grep -Eiq 'ucp|ucs|uct|libmpi|libslurm|pmix' <<<"$needed" && bad "links a forbidden library: $needed"

if ((fail)); then exit 1; fi
echo "check_plugin_binary: $(wc -w <<<"$exported") exported symbols, all slurm_spank_*/plugin_*; hardened; no UCX/MPI"
