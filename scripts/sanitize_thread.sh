#!/usr/bin/env bash
# The threaded parts of the tree built with ThreadSanitizer
# (-DSWITCHAGG_SANITIZE=thread, cmake/SwitchaggSanitizers.cmake) into their
# own build directory, then run there (README.md "ThreadSanitizer"):
#   unit   ThreadGate (domains, Hold/TryHold/Release, poll), the host
#          algorithms and node leaders over the in-memory fabric (a thread
#          per rank), the agent's engine with its ReducePool threads
#   agent  the TSan-built agent on 2 and 3 data-plane threads with member
#          processes (DataAgentThreads.*: the matrix, a lease at another
#          thread, a revocation reaching every thread)
#   Open MPI  the component (TSan-built, loaded by mpirun) under the threads
#          checker (mpi_thread_check: ring, four domains, one domain, busy
#          waits, the switch path blocking and nonblocking, a member's
#          recovery with threads), the recovery registry (a member's result
#          recovered at finalize, from retired ledgers) and the nonblocking
#          mix single-threaded
#   MPICH  the PMPI library (preloaded) under the threads checker, the switch
#          path with threads, the layer's progress thread (MPI_Iallreduce,
#          several communicators) and the nonblocking mix with two threads
# The agents the switch-path tests start are TSan-built too. Open MPI, UCX
# and MPICH are not instrumented: tests/sanitize/tsan.supp names what of
# theirs is suppressed and why. Every process writes its reports to
# BUILD_DIR/tsan-reports; any report, or any test failing, fails the run.
#
#   scripts/sanitize_thread.sh [--all] [BUILD_DIR]   (default: build-tsan beside build)
#
# --all adds what is known not to pass yet (README.md says what and
# why): the nonblocking mix with two threads under Open MPI.
# CTest runs it as `sanitize_tsan` (label sanitize). Prints PASS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
all=0
if [[ ${1:-} == --all ]]; then
  all=1
  shift
fi
build=${1:-${SWITCHAGG_BUILD_DIR:-$root/build}-tsan}
# shellcheck source=scripts/lib_sanitize.sh
source "$root/scripts/lib_sanitize.sh"
sanitize_configure "$root" "$build" thread
# Only what runs below (the whole tree under TSan would double the time).
unit_tests=(test_ucx_thread_gate test_host_algorithms test_node_leaders test_data_unit test_engine_alloc)
cmake --build "$build" -j "$(nproc)" --target "${unit_tests[@]}" mca_coll_switchagg mpi_thread_check \
  mpi_nbc_mix_check mpi_oneshot_check mpi_retired_check switchagg_pmpi mpi_thread_check_mpich mpi_nbc_mix_check_mpich \
  mpi_iallreduce_check_mpich mpi_oneshot_check_mpich switchagg-agent switchagg-ctl test_data_agent test_data_member \
  >"$build.build.log" 2>&1 ||
  { tail -50 "$build.build.log"; echo "FAIL: the TSan build" >&2; exit 1; }

# What mpirun loads and MPICH preloads must carry TSan (a stale or plain
# build would pass with nothing checked).
for lib in "$build/lib/openmpi/mca_coll_switchagg.so" "$build/lib/libswitchagg_pmpi.so"; do
  ldd "$lib" | grep libtsan >/dev/null || { echo "FAIL: $lib is not built with TSan" >&2; exit 1; }
done

reports=$build/tsan-reports
rm -rf "$reports"
mkdir -p "$reports"
# UCX's memory hooks (libucm patching madvise/mmap in libc) run inside
# glibc's thread exit after TSan has let the thread go: every program linking
# UCX crashes there. The hooks serve RDMA registration caches, which shared
# memory and TCP (the only transports here) do not use.
export UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no
# history_size=7: the older access of a race keeps its stack (the
# suppressions match on it). Reports go to files (the agents' too), all read
# at the end.
export TSAN_OPTIONS="suppressions=$root/tests/sanitize/tsan.supp:log_path=$reports/tsan:halt_on_error=0:second_deadlock_stack=1:history_size=7"
failed=()

for t in "${unit_tests[@]}"; do
  start=$SECONDS
  if timeout 900 "$build/bin/$t" >"$reports/$t.out" 2>&1; then
    echo "unit $t: passed ($((SECONDS - start)) s)"
  else
    tail -30 "$reports/$t.out"
    failed+=("$t")
  fi
done

start=$SECONDS
if timeout 600 "$build/bin/test_data_agent" --gtest_filter='DataAgentThreads.*' \
  >"$reports/test_data_agent.out" 2>&1; then
  echo "agent DataAgentThreads.*: passed ($((SECONDS - start)) s)"
else
  tail -30 "$reports/test_data_agent.out"
  failed+=("DataAgentThreads")
fi

cd "$build"
subset='mpi_threads_ring_np2|mpi_threads_domains_np2|mpi_threads_one_domain_np2|mpi_threads_ring_busy_np2'
subset+='|mpi_switch_threads_np2|mpi_switch_threads_nonblocking_np3|mpi_switch_fault_oneshot_threads_np3'
subset+='|mpi_switch_fault_oneshot_finalize_np3|mpi_switch_fault_oneshot_retired_np3'
subset+='|mpi_nbc_mix_np4|mpich_threads_ring_np2|mpich_switch_threads_np2|mpich_switch_threads_nonblocking_np2'
subset+='|mpich_switch_iallreduce_np3|mpich_switch_iallreduce_multi_np4|mpich_switch_nbc_mix_threads_np4'
# The PMPI layer's answering thread driving the core beside the program's.
subset+='|mpich_switch_fault_oneshot_handoff_np3'
want=17
if ((all)); then
  subset+='|mpi_nbc_mix_threads_np4'
  want=18
fi
listed=$(ctest -N -R "^($subset)\$" | sed -n 's/^Total Tests: //p')
[[ $listed == "$want" ]] || { echo "FAIL: the MPI subset selects $listed tests, not $want (renamed?)" >&2; exit 1; }
ctest --output-on-failure --timeout 600 -R "^($subset)\$" || failed+=("MPI subset")

shopt -s nullglob
found=("$reports"/tsan.*)
if ((${#found[@]} > 0)); then
  for f in "${found[@]}"; do
    echo "=== $f"
    cat "$f"
  done
  echo "FAIL: ThreadSanitizer reported in ${#found[@]} process(es) (above; $reports)" >&2
  exit 1
fi
if ((${#failed[@]} > 0)); then
  echo "FAIL: ${failed[*]}" >&2
  exit 1
fi
echo "PASS sanitize_thread: ${#unit_tests[@]} unit programs, the agent's data-plane threads and $want MPI tests under TSan, no report"
