# Sourced by the packages tests with their arguments: SRC BUILD.
(($# == 2)) || {
  echo "usage: $0 SRC BUILD" >&2
  exit 2
}
src=$1 build=$2
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
