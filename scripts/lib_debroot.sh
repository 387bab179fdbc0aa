# Debian roots made with mmdebstrap, cached by a hash of their suite and
# package list (sourced by scripts/debian13_root.sh and
# tests/packages/run_packages.sh; needs bash, root and set -euo pipefail).
#
#   debroot_init NAME SUITE PKG...   sets debroot_root: the cached root's path
#                                    under ${SWITCHAGG_DEBIAN_CACHE:-/var/cache/switchagg}
#   debroot_make                     makes it unless it exists
#   debroot_run ROOT SRC CMD         runs the shell command line CMD in ROOT with
#                                    /proc, /sys, /dev, /dev/shm and SRC bound in
#                                    (SRC at the same path inside), as root, with
#                                    a clean environment; the mounts go on return
# Messages are prefixed with NAME.

debroot_die() {
  echo "${debroot_name:-debroot}: $*" >&2
  exit 1
}

# The archive this host already uses (deb822 .sources or a classic list).
debroot_archive_uri() {
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

debroot_init() {
  debroot_name=$1 debroot_suite=$2
  shift 2
  debroot_packages=("$@")
  [[ $(id -u) -eq 0 ]] || debroot_die "must run as root (mmdebstrap, chroot and bind mounts)"
  debroot_cache=${SWITCHAGG_DEBIAN_CACHE:-/var/cache/switchagg}
  debroot_hash=$(printf '%s\n' "$debroot_suite" "${debroot_packages[@]}" | sha256sum | cut -c1-16)
  debroot_root=$debroot_cache/$debroot_name-$debroot_hash
}

debroot_make() {
  [[ -f $debroot_root/etc/switchagg-root-packages ]] && return 0
  if ! command -v mmdebstrap >/dev/null; then
    echo "$debroot_name: installing mmdebstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends mmdebstrap \
      >/dev/null || debroot_die "could not install mmdebstrap"
  fi
  mkdir -p "$debroot_cache"
  local tmp="$debroot_root.partial" uri list log="$debroot_root.log"
  uri=$(debroot_archive_uri)
  rm -rf "$tmp"
  list=$(
    IFS=,
    echo "${debroot_packages[*]}"
  )
  echo "$debroot_name: making $debroot_root from $uri ($debroot_suite)" >&2
  # A root that stops half-way never becomes the root: a later run starts over.
  timeout 2400 mmdebstrap --variant=apt ${list:+--include="$list"} "$debroot_suite" "$tmp" \
    "deb $uri $debroot_suite main" >"$log" 2>&1 ||
    debroot_die "mmdebstrap failed or ran past 40 min (log: $log)"
  printf '%s\n' "${debroot_packages[@]}" >"$tmp/etc/switchagg-root-packages"
  mv "$tmp" "$debroot_root"
}

debroot_run() {
  local root=$1 src=$2 cmd=$3
  # Bind mounts live as long as this call; each is undone on return.
  local mounted=() rc=0 i
  _debroot_bind() {
    mkdir -p "$root$2"
    mount --bind "$1" "$root$2" && mounted+=("$root$2")
  }
  _debroot_bind /proc /proc && _debroot_bind /sys /sys && _debroot_bind /dev /dev &&
    _debroot_bind /dev/shm /dev/shm && _debroot_bind "$src" "$src" || rc=1
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  if ((rc == 0)); then
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
      LANG=C.UTF-8 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      /bin/bash -c "cd '$src' && $cmd" || rc=$?
  fi
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  return "$rc"
}
