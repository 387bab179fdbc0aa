"""Fixtures of the docs test: what a doc's sh blocks may ask for.

Each is started once per doc, only if one of its blocks names it, and
stopped by stopAll() (the runner calls it on success, failure, timeout and
signals). install and agent start before the doc's commands run; the Slurm
cluster starts at the first block that names it (inside the doc's shell), so
that commands before it which start their own cluster (scripts/demo.sh
--slurm) never run beside it. envLines() gives the shell lines that put a
fixture's environment into the doc's shell at the first block naming it.
"""
import os
import shlex
import signal
import subprocess
import time


def log(msg):
    print(f"docs test: {msg}", flush=True)


class Fixtures:
    def __init__(self, src, build, tmp, logs, spank, agent_bin):
        self.src, self.build, self.tmp, self.logs = src, build, tmp, logs
        self.spank, self.agent_bin = spank, agent_bin
        self.prefix = os.path.join(tmp, "prefix")
        self.agent_helper = None     # bash running scripts/lib_agent.sh's agent_start
        self.agent_pid = None
        self.agent_dir = None
        self.control = None          # SWITCHAGG_CONTROL for switchagg-ctl
        self.slurm_dir = None

    def start(self, names):
        """Starts the fixtures in names, except slurm (see envLines)."""
        if "install" in names:
            self.startInstall()
        if "agent" in names:
            self.startAgent()
        if "slurm" in names:
            if not self.spank or not self.agent_bin:
                raise RuntimeError("fixture slurm needs --spank SO and --agent BIN")
            self.slurm_dir = os.path.join(self.tmp, "slurm")

    def envLines(self, name):
        """Shell lines a block with fixture name runs before its commands."""
        if name == "agent":
            return [f"export SWITCHAGG_CONTROL={shlex.quote(self.control)}"]
        if name == "slurm":
            d = shlex.quote(self.slurm_dir)
            start = " ".join(shlex.quote(w) for w in [
                os.path.join(self.src, "tests/slurm/slurm_cluster.sh"), "start", self.slurm_dir,
                "--spank", self.spank, "--agent", self.agent_bin])
            return [f"SWITCHAGG_CLUSTER_MAX_S=900 {start}", f". {d}/env.sh"]
        return []

    def startInstall(self):
        log(f"fixture install: cmake --install {self.build} --prefix {self.prefix}")
        r = subprocess.run(["cmake", "--install", self.build, "--prefix", self.prefix],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"fixture install failed:\n{r.stdout[-3000:]}")

    def startAgent(self):
        self.agent_dir = os.path.join(self.tmp, "agent")
        os.makedirs(self.agent_dir)
        log("fixture agent: scripts/lib_agent.sh agent_start config/agent.toml")
        # The helper shell stays with the agent and stops it if the runner
        # dies (even by SIGKILL, which leaves no chance to clean up).
        script = ('build=$1; source "$2/scripts/lib_agent.sh"; '
                  'agent_start "$2/config/agent.toml" "$3" || exit 1; '
                  'echo "$AGENT_PID $AGENT_SOCKET"; exec >/dev/null; '
                  'while kill -0 "$4" && kill -0 "$AGENT_PID"; do sleep 1; done 2>/dev/null; '
                  'agent_stop')
        self.agent_helper = subprocess.Popen(
            ["bash", "-c", script, "agent", self.build, self.src, self.agent_dir,
             str(os.getpid())],
            stdout=subprocess.PIPE, text=True)
        line = self.agent_helper.stdout.readline().split()
        if len(line) != 2:
            self.agent_helper.wait()
            raise RuntimeError("fixture agent did not start (see above)")
        self.agent_pid = int(line[0])
        self.control = f"unix:{line[1]}"

    def stopAll(self):
        """Stops everything start() started; safe to call more than once."""
        if self.agent_pid:
            stopPid(self.agent_pid)
            self.agent_pid = None
        if self.agent_helper:
            try:
                self.agent_helper.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.agent_helper.kill()
                self.agent_helper.wait()
            self.agent_helper = None
        if self.slurm_dir and os.path.isdir(self.slurm_dir):
            log(f"fixture slurm: stop (logs in {self.logs}/slurm)")
            subprocess.run([os.path.join(self.src, "tests/slurm/slurm_cluster.sh"), "stop",
                            self.slurm_dir, "--logs-to", os.path.join(self.logs, "slurm")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.slurm_dir = None

    def agentLog(self):
        path = self.agent_dir and os.path.join(self.agent_dir, "agent.log")
        if path and os.path.exists(path):
            return open(path, errors="replace").read()[-2000:]
        return ""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stopPid(pid, grace=5.0):
    """TERM, then KILL after grace seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    if alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
