#!/usr/bin/env python3
"""The docs test: runs the commands of one markdown file as a reader would.

  run_doc.py [options] DOC BUILD SRC
    --name NAME         how messages call the doc (default: DOC relative to SRC)
    --spank SO --agent BIN   for the slurm fixture
    --cmd-timeout S     bound of one command (default 300; directive timeout=S)
    --total-timeout S   bound of the whole run, fixtures included (default 900)
    --logs DIR          where fixture logs are kept (default BUILD/tests/docs/logs/NAME)
    --check-only        only check the convention (no fixture, no command runs)

Checks the convention (tests/docs/doc_parse.py), applies the substitution
table (tests/docs/substitutions.py), checks syntax-only blocks (bash -n, first
word of every command resolves), starts the fixtures the sh blocks name, runs
every other sh block in order in ONE `bash` with `set -euo pipefail`, printing
each command before it runs, and on failure or timeout names the doc's
file:line of the command. Stops everything it started, also when killed.
Exit 0 = pass, 1 = a command failed or timed out, 2 = the doc breaks the
convention or a fixture failed.
"""
import argparse
import ctypes
import fnmatch
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_parse import DocError, parse  # noqa: E402
from fixtures import Fixtures, log  # noqa: E402
from substitutions import SUBSTITUTIONS  # noqa: E402


class Interrupted(Exception):
    pass


def onSignal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def substitute(name, text):
    out = text
    for scope, pattern, repl, _why in SUBSTITUTIONS:
        if fnmatch.fnmatch(name, scope):
            out = re.sub(pattern, repl, out, flags=re.M)
    return out


def baseEnv(args, tmp, prefix):
    env = dict(os.environ)
    # Only the fixtures say where an agent, a lease or a cluster is.
    for k in ("SWITCHAGG_CONTROL", "SWITCHAGG_AGENT", "SWITCHAGG_LEASE", "SWITCHAGG_MODE",
              "SLURM_CONF", "OMPI_MCA_mca_base_component_path", "SWITCHAGG_PREFIX"):
        env.pop(k, None)
    user = env.get("USER") or subprocess.run(["id", "-un"], stdout=subprocess.PIPE,
                                             text=True).stdout.strip()
    env.update({
        "PATH": f"{args.build}/bin:{env.get('PATH', '/usr/bin:/bin')}",
        "USER": user, "LOGNAME": env.get("LOGNAME", user), "HOME": env.get("HOME", "/root"),
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        # Docs show rank counts larger than this machine's cores.
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "SWITCHAGG_UCX_WAIT": "blocking",
        # scripts/*.sh build into and run from the build under test.
        "SWITCHAGG_BUILD_DIR": args.build,
        "PREFIX": prefix, "DOCS_BUILD": args.build, "DOCS_TMP": tmp, "DOCS_SRC": args.src,
    })
    return env


def firstWord(cmd):
    """First word of a command after VAR=value assignments, or None."""
    try:
        words = shlex.split(cmd, comments=True)
    except ValueError:
        return None
    for w in words:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            return w
    return None


def checkSyntaxOnly(name, block, env, src):
    """bash -n of the block and every command's first word resolves."""
    text = "\n".join(substitute(name, c.text) for c in block.commands) + "\n"
    r = subprocess.run(["bash", "-n"], input=text, text=True, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise DocError(f"{name}:{block.line}", f"bash -n: {r.stderr.strip()}")
    print(f"--- SYNTAX-ONLY {name}:{block.line} (not run: {block.reason})", flush=True)
    for c in block.commands:
        word = firstWord(substitute(name, c.text))
        if word is None:
            raise DocError(f"{name}:{c.line}", "cannot tell the command's first word")
        if "/" in word:
            ok = os.path.exists(os.path.join(src, os.path.expandvars(word)))
        else:
            ok = subprocess.run(["bash", "-c", 'command -v "$1"', "x", word], env=env,
                                stdout=subprocess.DEVNULL).returncode == 0
        if not ok:
            raise DocError(f"{name}:{c.line}", f"'{word}' does not resolve (syntax-only block)")
        print(f"    checked {name}:{c.line}: {c.text}", flush=True)


def script(name, blocks, fixtures, state):
    """The bash program of all runnable sh blocks of the doc."""
    out = ["set -euo pipefail",
           # A TERM (the runner, or its death) takes the whole group along.
           "trap 'trap - TERM; kill -TERM -- -$$ 2>/dev/null; exit 143' TERM",
           # If the runner dies (SIGKILL leaves it no cleanup), stop the
           # Slurm fixture and this group; bash itself would wait for the
           # running command before its TERM trap.
           f"( while kill -0 $PPID; do sleep 1; done; {slurmStop(fixtures)}"
           f"rm -rf {shlex.quote(os.path.dirname(state))}; kill -TERM -- -$$ ) >/dev/null 2>&1 &",
           "__doc_watch=$!",
           "trap 'kill $__doc_watch 2>/dev/null' EXIT",
           f"__doc_at() {{ printf '%s\\n' \"$1\" >{shlex.quote(state)}; }}"]
    entered = set()
    for b in blocks:
        if b.tag != "sh" or b.syntax_only:
            continue
        out.append(f"printf '\\n--- %s (fixture %s)\\n' {shlex.quote(f'{name}:{b.line}')} "
                   f"{shlex.quote(','.join(b.fixtures))}")
        for fx in b.fixtures:
            if fx in entered:
                continue
            entered.add(fx)
            out.append(f"__doc_at {shlex.quote(f'{name}:{b.line}(fixture-{fx}) 0')}")
            for line in fixtures.envLines(fx):
                out.append(f"printf '[fixture %s] %s\\n' {fx} {shlex.quote(line)}")
                out.append(line)
        for c in b.commands:
            runs = substitute(name, c.text)
            where = f"{name}:{c.line}"
            out.append(f"__doc_at {shlex.quote(f'{where} {b.timeout or 0}')}")
            out.append(f"printf '[%s] $ %s\\n' {shlex.quote(where)} {shlex.quote(runs)}")
            if runs != c.text:
                out.append(f"printf '    (the doc says: %s)\\n' {shlex.quote(c.text)}")
            out.append(runs)
    out.append("__doc_at done")
    return "\n".join(out) + "\n"


def slurmStop(fixtures):
    if not fixtures.slurm_dir:
        return ""
    stop = os.path.join(fixtures.src, "tests/slurm/slurm_cluster.sh")
    return f"{shlex.quote(stop)} stop {shlex.quote(fixtures.slurm_dir)}; "


def dieWithParent():
    """In the child: TERM when the runner dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


def stopGroup(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def runScript(text, env, cwd, state, cmd_timeout, deadline):
    """Runs the doc's bash program; returns (exit code, failure text or None)."""
    path = state + ".sh"
    with open(path, "w") as f:
        f.write(text)
    proc = subprocess.Popen(["bash", path], env=env, cwd=cwd, start_new_session=True,
                            preexec_fn=dieWithParent)
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            where, limit, started = readState(state, cmd_timeout)
            now = time.time()
            if started and now - started > limit:
                stopGroup(proc)
                return 1, f"TIMEOUT after {limit} s at {where}"
            if time.monotonic() > deadline:
                stopGroup(proc)
                return 1, f"TIMEOUT of the whole doc at {where}"
    except BaseException:
        stopGroup(proc)
        raise
    if rc == 0:
        return 0, None
    where, _, _ = readState(state, cmd_timeout)
    return rc, f"FAILED (exit {rc}) at {where}"


def readState(state, cmd_timeout):
    try:
        with open(state) as f:
            words = f.read().split()
        started = os.path.getmtime(state)
    except OSError:
        return "(before the first command)", cmd_timeout, None
    if not words or words[0] == "done":
        return "(after the last command)", cmd_timeout, None
    limit = int(words[1]) if len(words) > 1 and words[1] != "0" else cmd_timeout
    return words[0], limit, started


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("doc")
    ap.add_argument("build")
    ap.add_argument("src")
    ap.add_argument("--name")
    ap.add_argument("--spank")
    ap.add_argument("--agent")
    ap.add_argument("--cmd-timeout", type=int, default=300)
    ap.add_argument("--total-timeout", type=int, default=900)
    ap.add_argument("--logs")
    ap.add_argument("--check-only", action="store_true")
    args = ap.parse_args()
    args.build, args.src = os.path.abspath(args.build), os.path.abspath(args.src)
    # slurmd's prolog dlopens the plugin from another cwd.
    args.spank = args.spank and os.path.abspath(args.spank)
    args.agent = args.agent and os.path.abspath(args.agent)
    name = args.name or os.path.relpath(os.path.abspath(args.doc), args.src)
    logs = args.logs or os.path.join(args.build, "tests/docs/logs", name.replace("/", "_"))
    deadline = time.monotonic() + args.total_timeout
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, onSignal)

    try:
        blocks = parse(args.doc, name)
    except DocError as e:
        print(f"docs test: ERROR {e}", flush=True)
        return 2
    sh = [b for b in blocks if b.tag == "sh"]
    log(f"{name}: {len(blocks)} blocks, {len(sh)} sh "
        f"({sum(b.syntax_only for b in sh)} syntax-only)")
    if args.check_only:
        for b in sh:
            for c in b.commands:
                runs = substitute(name, c.text)
                print(f"[{name}:{c.line}] {'(syntax-only) ' if b.syntax_only else ''}$ {runs}")
        return 0

    tmp = tempfile.mkdtemp(prefix="switchagg-docs-")
    os.chmod(tmp, 0o755)     # Slurm jobs and the agent reach files in it
    os.makedirs(logs, exist_ok=True)
    fixtures = Fixtures(args.src, args.build, tmp, logs, args.spank, args.agent)
    state = os.path.join(tmp, "state")
    env = baseEnv(args, tmp, fixtures.prefix)
    try:
        needed = {f for b in sh if not b.syntax_only for f in b.fixtures}
        fixtures.start(needed)
        # After the install fixture: syntax-only commands may be in $PREFIX/bin.
        check_env = dict(env, PATH=f"{env['PATH']}:{fixtures.prefix}/bin")
        for b in sh:
            if b.syntax_only:
                checkSyntaxOnly(name, b, check_env, args.src)
        rc, failure = runScript(script(name, blocks, fixtures, state), env, args.src, state,
                                args.cmd_timeout, deadline)
        if failure:
            print(f"\ndocs test: {failure}", flush=True)
            agent_log = fixtures.agentLog()
            if agent_log:
                print(f"docs test: agent log (tail):\n{agent_log}", flush=True)
            return 1
        log(f"{name}: PASS")
        return 0
    except DocError as e:
        print(f"docs test: ERROR {e}", flush=True)
        return 2
    except RuntimeError as e:
        print(f"docs test: ERROR {e}", flush=True)
        return 2
    except Interrupted as e:
        print(f"docs test: interrupted ({e}); stopping what it started", flush=True)
        return 130
    finally:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        fixtures.stopAll()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
