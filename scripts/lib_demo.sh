# Sourced by scripts/demo.sh and scripts/demo_fabric.sh (root, build, out and
# do_build set by their options):
#   value OPTION ARGS...  the option's argument, or a usage error naming the
#                         option (exit 2): for "--opt) x=$(value "$@"); shift 2 ;;"
#   say TEXT              one bold "== TEXT" step line
#   demo_prepare          builds (scripts/build.sh) unless --no-build, creates
#                         --out and makes it absolute; sets bin

value() {
  [[ $# -ge 2 && -n $2 && $2 != --* ]] || { echo "demo: $1 needs a value (see --help)" >&2; exit 2; }
  printf '%s' "$2"
}

say() { printf '\033[1m== %s\033[0m\n' "$*"; }

demo_prepare() {
  if ((do_build)); then
    say "build (scripts/build.sh → $build)"
    SWITCHAGG_BUILD_DIR=$build "$root/scripts/build.sh" >/dev/null
  fi
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  bin=$build/bin
}
