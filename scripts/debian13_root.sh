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
# mounts) and mmdebstrap (installed here if missing).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
cache=${SWITCHAGG_DEBIAN13_CACHE:-/var/cache/switchagg}
suite=trixie
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libucx-dev ucx-utils libibverbs-dev librdmacm-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev nlohmann-json3-dev libtomlplusplus-dev
  python3 procps gfortran python3-mpi4py python3-numpy
  curl ca-certificates
)

die() {
  echo "debian13_root: $*" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || die "must run as root (mmdebstrap, chroot and bind mounts)"

# The archive this host already uses (deb822 .sources or a classic list).
archive_uri() {
  local f uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    uri=$(awk '/^URIs:/ {print $2; exit}' "$f")
    [[ $uri == *debian-security* ]] && uri=""
    [[ -n $uri ]] && break
  done
  if [[ -z $uri && -f /etc/apt/sources.list ]]; then
    uri=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

hash=$(printf '%s\n' "$suite" "${PACKAGES[@]}" | sha256sum | cut -c1-16)
root=$cache/debian13-$hash

make_root() {
  if ! command -v mmdebstrap >/dev/null; then
    echo "debian13_root: installing mmdebstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends mmdebstrap \
      >/dev/null || die "could not install mmdebstrap"
  fi
  mkdir -p "$cache"
  local tmp="$root.partial" uri
  uri=$(archive_uri)
  rm -rf "$tmp"
  local list
  list=$(
    IFS=,
    echo "${PACKAGES[*]}"
  )
  echo "debian13_root: making $root from $uri ($suite)" >&2
  # A root that stops half-way never becomes $root: a later run starts over.
  timeout 2400 mmdebstrap --variant=apt --include="$list" "$suite" "$tmp" "deb $uri $suite main" \
    >"$cache/debian13-$hash.log" 2>&1 ||
    die "mmdebstrap failed or ran past 40 min (log: $cache/debian13-$hash.log)"
  printf '%s\n' "${PACKAGES[@]}" >"$tmp/etc/switchagg-root-packages"
  mv "$tmp" "$root"
}

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

[[ -f $root/etc/switchagg-root-packages ]] || make_root
source_headers

if [[ ${1:-} != --run ]]; then
  echo "$root"
  exit 0
fi
shift
(($# > 0)) || die "--run needs a command"

# Bind mounts live as long as this call; each is undone on exit.
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() {
  mkdir -p "$root$2"
  mount --bind "$1" "$root$2"
  mounted+=("$root$2")
}
bind /proc /proc
bind /sys /sys
bind /dev /dev
bind /dev/shm /dev/shm
bind "$src" "$src"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
  LANG=C.UTF-8 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  /bin/bash -c "cd '$src' && $*"
