#!/usr/bin/env bash
# Installs the Debian 12 packages switchagg builds and tests with. Idempotent:
# when everything is present it only checks (well under a second).
# Why each package is here: README.md, "Dependencies".
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config   # toolchain
  libucx-dev ucx-utils                           # transport (UCP API) + ucx_perftest/ucx_info
  libibverbs-dev librdmacm-dev                   # GID table via libibverbs on RoCE hosts
  libopenmpi-dev openmpi-bin                     # coll component headers + mpirun
  mpich libmpich-dev                             # PMPI library tests (mpicc.mpich; Open MPI stays the default)
  slurm-wlm libslurm-dev munge libmunge-dev      # SPANK header, test cluster, munge auth
  libgtest-dev libgmock-dev                      # unit tests
  nlohmann-json3-dev                             # control API JSON
  libtomlplusplus-dev                            # agent policy file (TOML)
  gnuplot-nox                                    # benchmark plots
  iproute2                                       # emulated hosts (network namespaces)
  mininet bridge-utils                           # emulated cluster (scripts/fabric.py): hosts, bridges, shaped links
  clang libclang-rt-14-dev                       # libFuzzer targets
  python3 procps                                 # tests/slurm fixture: free ports, JSON checks, pgrep
  curl                                           # docs/control-api.md examples (run by the docs test)
  gfortran                                       # Fortran datatypes test (mpifort)
  python3-mpi4py python3-numpy                   # apps/python example and its tests
  environment-modules                            # config/modulefile-switchagg test (module load)
  mmdebstrap xz-utils                            # Debian 13 root for the Open MPI 5 test (scripts/debian13_root.sh), Debian 12 root for the packages test
  dpkg-dev lintian                               # scripts/package.sh: dpkg-shlibdeps (CPack's DEB dependencies), lintian checks
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "bootstrap: missing packages: ${missing[*]}" >&2
  echo "bootstrap: run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi

echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "bootstrap: done" >&2
