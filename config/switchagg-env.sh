# switchagg environment for an install prefix: source it (sh, bash, zsh).
#   . P/etc/switchagg/switchagg-env.sh
# Sets PATH and LD_LIBRARY_PATH for P, and OMPI_MCA_mca_base_component_path
# so that mpirun loads P/lib/openmpi/mca_coll_switchagg.so next to Open
# MPI's own components. The prefix is SWITCHAGG_PREFIX if set, else derived
# from this file's location (P/etc/switchagg/).
if [ -z "${SWITCHAGG_PREFIX:-}" ]; then
  if [ -n "${BASH_SOURCE:-}" ]; then
    _sa_here=$(dirname -- "${BASH_SOURCE}")
  elif [ -n "${ZSH_VERSION:-}" ]; then
    _sa_here=$(dirname -- "${(%):-%x}")
  else
    _sa_here=$(dirname -- "$0")
  fi
  SWITCHAGG_PREFIX=$(cd -- "${_sa_here}/../.." && pwd)
  unset _sa_here
fi
export SWITCHAGG_PREFIX
if [ ! -e "${SWITCHAGG_PREFIX}/lib/openmpi/mca_coll_switchagg.so" ]; then
  echo "switchagg-env.sh: no lib/openmpi/mca_coll_switchagg.so under ${SWITCHAGG_PREFIX};" \
       "set SWITCHAGG_PREFIX to the install prefix (plain sh cannot tell where this file is)" >&2
fi

PATH="${SWITCHAGG_PREFIX}/bin${PATH:+:${PATH}}"
LD_LIBRARY_PATH="${SWITCHAGG_PREFIX}/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
export PATH LD_LIBRARY_PATH

# The MCA variable replaces Open MPI's default list: keep its own directory.
_sa_ompi=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed 's/^path:pkglibdir://')
[ -n "${_sa_ompi}" ] || _sa_ompi=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
OMPI_MCA_mca_base_component_path="${SWITCHAGG_PREFIX}/lib/openmpi:${_sa_ompi}"
export OMPI_MCA_mca_base_component_path
unset _sa_ompi
