#!/usr/bin/env bash
# Rebuilds BENCHMARKS.md from the per-part result pages in
# benchmarks/results/ (each written by its benchmark script, which names the
# command that reproduces it). Image links are rewritten relative to the top.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/BENCHMARKS.md
{
  cat "$root/benchmarks/summary.md"
  for part in ucx agent agent_kernels coll ompi5 switch switch_eager barrier barrier_fabric barrier_fabric8 oneshot oneshot_fabric oneshot_fabric8 oneshot_fabric_large routed_fabric routed_fabric_leaders routed_tree routed_tree_ppn2 routed_tree_ppn2_keep iallreduce_overlap iallreduce_overlap_fabric iallreduce_overlap_fabric_large fsdp_fabric fsdp_fabric_ppn2 leaders fabric fabric_leaders tree_fabric agent_memory tune auto_settled progress wait_hook thread_cost thread_domains_cost threads before_after cg cg_fabric slurm reliability isolation mpich mpich_fabric mpich_iallreduce mpich_iallreduce_fabric; do
    f=$root/benchmarks/results/$part.md
    [[ -f $f ]] || continue
    echo
    echo "---"
    echo
    # Demote headings one level and point relative links at benchmarks/results/.
    sed -e 's/^#/##/' -e 's#\](\([a-z_][a-z0-9_./-]*\.\(png\|csv\|md\)\))#](benchmarks/results/\1)#g' "$f"
  done
} >"$out"
echo "wrote $out"
