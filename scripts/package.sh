#!/usr/bin/env bash
# Builds switchagg's Debian packages into out/packages/*.deb (docs/admin.md,
# "Install the packages"): bootstraps and builds the tree like
# scripts/build.sh, packs it with CPack's DEB generator
# (cmake/SwitchaggPackage.cmake says what goes where) and checks every
# package with lintian, failing on an error (warnings are printed).
#
#   scripts/package.sh [--no-build] [--out DIR]
#     --no-build  pack the build directory as it is (SWITCHAGG_BUILD_DIR,
#                 default build/) without bootstrapping or building
#     --out DIR   where the .deb files go (default out/packages); the
#                 directory's old .deb files are removed first
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHAGG_BUILD_DIR:-$root/build}
out=$root/out/packages
do_build=1
usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; }
die() {
  echo "package: $*" >&2
  exit 1
}
while (($# > 0)); do
  case $1 in
    --no-build) do_build=0 ;;
    --out)
      (($# >= 2)) || die "--out needs a directory"
      out=$2
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

if ((do_build)); then
  SWITCHAGG_BUILD_DIR=$build "$root/scripts/build.sh"
fi
[[ -f $build/CPackConfig.cmake ]] ||
  die "no CPackConfig.cmake in $build: configure and build it first (or drop --no-build)"
command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps missing (apt-get install dpkg-dev)"

staging=$build/_cpack
rm -rf "$staging"
mkdir -p "$out"
rm -f "$out"/*.deb
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$staging" >"$staging.log" 2>&1 ||
  die "cpack failed (log: $staging.log): $(tail -20 "$staging.log")"
shopt -s nullglob
debs=("$staging"/*.deb)
((${#debs[@]} > 0)) || die "cpack made no package (log: $staging.log)"
cp "${debs[@]}" "$out/"
rm -rf "$staging"

debs=("$out"/*.deb)
if command -v lintian >/dev/null; then
  # Errors fail; warnings are listed (tags and counts).
  report=$(lintian --fail-on error --tag-display-limit 0 "${debs[@]}" 2>&1) || {
    echo "$report" >&2
    die "lintian found errors"
  }
  warnings=$(echo "$report" | awk '$1 == "W:" {print $3}' | sort | uniq -c | sort -rn)
  [[ -z $warnings ]] || echo "package: lintian warnings (count, tag):"$'\n'"$warnings"
else
  die "lintian missing (scripts/bootstrap.sh installs it)"
fi
for d in "${debs[@]}"; do
  echo "$d"
done
