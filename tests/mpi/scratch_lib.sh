# Sourced by the tests/mpi scripts that compare whole runs: a scratch
# directory removed on exit, and fail().
#   scratch_dir NAME  → work=/tmp/switchagg-NAME.XXXXXX, removed on exit
scratch_dir() {
  work=$(mktemp -d "/tmp/switchagg-$1.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}
fail() { echo "FAIL: $*"; exit 1; }
