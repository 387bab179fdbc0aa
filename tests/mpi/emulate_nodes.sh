#!/bin/sh
# emulate_nodes.sh PPN COMMAND...: puts rank r on emulated node r / PPN (the
# component reads SWITCHAGG_NODE_NAME instead of the host name), so the
# hierarchical algorithm runs with several "nodes" on one machine.
# EMU_LAYOUT=cyclic: rank r on node r mod (size / PPN) instead (a node's
# ranks not adjacent in MPI_COMM_WORLD, as with a round-robin mapping).
ppn=$1
shift
# Open MPI's rank and size variables, else MPICH's (PMI_RANK, PMI_SIZE).
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
case ${EMU_LAYOUT:-block} in
  block) node=$((rank / ppn)) ;;
  cyclic) node=$((rank % (${OMPI_COMM_WORLD_SIZE:-${PMI_SIZE:-1}} / ppn))) ;;
  *) echo "emulate_nodes.sh: EMU_LAYOUT must be block or cyclic, got '$EMU_LAYOUT'" >&2; exit 2 ;;
esac
SWITCHAGG_NODE_NAME="emu$node"
export SWITCHAGG_NODE_NAME
# EMU_RANK_ENV="R:VAR=V": rank R alone gets VAR=V (one rank configured
# unlike the others).
if [ -n "${EMU_RANK_ENV:-}" ] && [ "${EMU_RANK_ENV%%:*}" = "$rank" ]; then
  export "${EMU_RANK_ENV#*:}"
fi
exec "$@"
