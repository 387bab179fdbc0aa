#!/bin/sh
# emulate_nodes.sh PPN COMMAND...: puts rank r on emulated node r / PPN (the
# component reads SWITCHAGG_NODE_NAME instead of the host name), so the
# hierarchical algorithm runs with several "nodes" on one machine.
ppn=$1
shift
# Open MPI's rank variable, else MPICH's (PMI_RANK).
SWITCHAGG_NODE_NAME="emu$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / ppn ))"
export SWITCHAGG_NODE_NAME
exec "$@"
