#!/usr/bin/env bash
# Makes (or reuses) a Debian 13 (trixie) root holding Open MPI 5.0 and UCX
# 1.18 plus what switchagg builds with, for building and testing the tree
# against them from a Debian 12 host (docs/openmpi5.md).
#
#   scripts/debian13_root.sh            prints the root's path (makes it first
#                                       if no root for this package list exists)
#   scripts/debian13_root.sh --run CMD  runs CMD (a shell command line) inside
#                                       the root with /proc, /sys, /dev, /dev/shm
#                                       and the source tree bound in; the tree is
#                                       at the same path inside as outside
#
# The root is cached under ${SWITCHAGG_DEBIAN13_CACHE:-/var/cache/switchagg}
# by a hash of the package list and the suite, so a second run (and a CI
# cache) reuses it; a changed list makes a new root. Needs root (chroot,
# mounts) and mmdebstrap (installed here if missing); the helpers are
# scripts/lib_debroot.sh, shared with the packages test (tests/packages).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib_debroot.sh
. "$src/scripts/lib_debroot.sh"
# The cache directory's older name still counts.
export SWITCHAGG_DEBIAN_CACHE=${SWITCHAGG_DEBIAN13_CACHE:-${SWITCHAGG_DEBIAN_CACHE:-/var/cache/switchagg}}
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libucx-dev ucx-utils libibverbs-dev librdmacm-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev nlohmann-json3-dev libtomlplusplus-dev
  python3 procps gfortran python3-mpi4py python3-numpy
  curl ca-certificates
)
debroot_init debian13 trixie "${PACKAGES[@]}"
root=$debroot_root
die() { debroot_die "$@"; }
archive_uri() { debroot_archive_uri; }

# Debian 13's libopenmpi-dev ships Open MPI 5's internal headers only in
# part (opal_config.h includes opal/mca/threads/pthreads/*.h, which are not
# installed). The rest come from the same release's source: Debian's orig
# tarball for the installed version, checked against the .dsc's SHA-256,
# headers only, into /usr/local/src/openmpi-headers (mpi_coll/glue's CMake
# adds that directory after the installed ones).
source_headers() {
  local dest=$root/usr/local/src/openmpi-headers
  [[ -f $dest/.version ]] && return 0
  local ver uri pool dsc sum tmp
  ver=$(chroot "$root" dpkg-query -W -f='${Version}' libopenmpi-dev) ||
    die "libopenmpi-dev is not installed in $root"
  uri=$(archive_uri)
  pool=$uri/pool/main/o/openmpi
  tmp=$(mktemp -d /var/tmp/switchagg-ompi-src.XXXXXX)
  dsc=$tmp/openmpi.dsc
  curl -fsS --max-time 120 -o "$dsc" "$pool/openmpi_${ver#*:}.dsc" ||
    die "could not fetch $pool/openmpi_${ver#*:}.dsc"
  local orig=openmpi_${ver%-*}.orig.tar.xz
  orig=${orig#*:}
  sum=$(awk -v f="$orig" '/^Checksums-Sha256:/ {s=1; next} s && $3 == f {print $1; exit}' "$dsc")
  [[ -n $sum ]] || die "$orig not listed in the .dsc"
  echo "debian13_root: fetching $orig (Open MPI's own headers)" >&2
  curl -fsS --max-time 600 -o "$tmp/$orig" "$pool/$orig" || die "could not fetch $pool/$orig"
  echo "$sum  $tmp/$orig" | sha256sum -c --quiet - || die "$orig: SHA-256 does not match the .dsc"
  mkdir -p "$dest.partial"
  tar -xJf "$tmp/$orig" -C "$dest.partial" --strip-components=1 --wildcards '*/opal/*.h' \
    '*/ompi/*.h' || die "could not unpack the headers of $orig"
  echo "${ver}" >"$dest.partial/.version"
  rm -rf "$tmp" "$dest"
  mv "$dest.partial" "$dest"
}

debroot_make
source_headers

if [[ ${1:-} != --run ]]; then
  echo "$root"
  exit 0
fi
shift
(($# > 0)) || die "--run needs a command"
debroot_run "$root" "$src" "$*"
