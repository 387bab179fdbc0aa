# Sourced by scripts/sanitize.sh and scripts/sanitize_thread.sh: the
# sanitized build's configure step, shared by both.

# sanitize_configure ROOT BUILD MODE: bootstraps, then configures ROOT into
# BUILD with -DSWITCHAGG_SANITIZE=MODE (ON: ASan + UBSan; thread: TSan) and
# -Werror; the configure log goes to BUILD.configure.log, shown and fatal
# on failure.
sanitize_configure() {
  local root=$1 build=$2 mode=$3
  "$root/scripts/bootstrap.sh"
  # -O1 -g1 (line tables: whole stacks with file:line in the reports) halves
  # the compile time of -O2 -g under the sanitizers (measured: control_api.cc
  # 52 s -> 27 s, test_data_agent.cc 17 s -> 10 s).
  local flags="-O1 -g1 -DNDEBUG"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWITCHAGG_SANITIZE="$mode" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DSWITCHAGG_WERROR=ON >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; echo "FAIL: configure" >&2; exit 1; }
}
