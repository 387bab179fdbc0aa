#!/usr/bin/python3
"""fabric.py: an emulated cluster on one machine (Mininet + Linux bridges).

Hosts are network namespaces with their own hostname and /tmp, joined by
veth links shaped with htb (Mininet's TCLink) to a chosen rate, so that the
network, not the CPU, is the bottleneck. mpirun, Slurm and the switch agent
run inside the hosts; nothing between two hosts takes a shortcut (every
byte crosses the hosts' shaped links: `counters` shows it).

  fabric.py up NAME [--topo star|leaf-spine] [--hosts H] [--racks R]
                    [--rate MBIT] [--uplink MBIT] [--agent-rate MBIT]
                    [--reducers K] [--reducer-rate MBIT[,MBIT...]] [--rails R]
                    [--agent-queue PACKETS] [--subnet 10.77]
                                            bring a fabric up (returns when ready)
  fabric.py down NAME                       tear it down (also what a dead run left)
  fabric.py status [NAME] [--json]          hosts, addresses, links, owner
  fabric.py exec NAME HOST -- CMD...        run CMD on HOST (its netns, hostname, /tmp)
  fabric.py hostfile NAME [--ppn N]         an Open MPI hostfile of the compute hosts
  fabric.py counters NAME                   bytes sent/received per host interface
                                            (and the agent ports' queue drops)

Reducer hosts (--reducers K, star only): hosts r1..rK on the same switch,
each with a link at --reducer-rate (default: a compute host's rate; a
comma list gives r1, r2, ... their own rates, unequal reducers), for
agents on ordinary hosts (the reduction-server deployment a RoCE site can
run today: a job stripes every call over K of them) beside the agent in the
switch, which stays.

Rails (--rails R, star only; fabric_rails.py): every compute host gets R
links, link k to its own switch plane on its own subnet, and an agent host
ar<k> per plane; `counters` splits the hosts' bytes by rail.

A shallow queue at the agents' ports (--agent-queue N; fabric_queue.py):
the switch's port toward each agent host queues at most N packets (pfifo),
so an incast on that port drops and TCP retransmits.

Topologies:
  star        H hosts h1..hH on one switch; the agent host `agent` on the
              same switch with a link of H x rate (default): it models an
              aggregation engine inside the switch, which takes every
              port's traffic at line rate.
  leaf-spine  R racks x H hosts (h1..hRH, rack by rack), a leaf switch per
              rack, one spine; leaf uplinks at --uplink (default H x rate:
              no oversubscription). Agents: `aleaf<r>` on each leaf and
              `agent` on the spine (agent link as fast as all uplinks).

State lives in /run/switchagg-fabric/NAME/ (state.json, per-host /tmp,
the mpirun launcher `rsh`). The `up` process stays in the background as the
fabric's owner; `down` (or SIGTERM to the owner) stops what still runs
inside the hosts (found by network namespace), the owner, and deletes every
bridge and link it created, by the names recorded in state.json.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_counters  # noqa: E402
import fabric_queue  # noqa: E402
import fabric_rails  # noqa: E402

STATE_ROOT = os.environ.get("SWITCHAGG_FABRIC_STATE", "/run/switchagg-fabric")
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,3}$")
SELF = os.path.abspath(__file__)


def die(msg, code=1):
    print("fabric: " + msg, file=sys.stderr)
    sys.exit(code)


def state_dir(name):
    return os.path.join(STATE_ROOT, name)


def load_state(name):
    path = os.path.join(state_dir(name), "state.json")
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        die("no fabric named '%s' is up (%s missing)" % (name, path))


def pid_alive(pid, marker=None):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read().decode(errors="replace")
    except OSError:
        return False
    return marker is None or marker in cmdline


# ---------------------------------------------------------------- topology

def reducer_rates(args):
    """--reducer-rate as one rate per reducer host ([]: the hosts' rate)."""
    text = str(args.reducer_rate or "")
    if not text:
        return []
    try:
        rates = [int(x) for x in text.split(",")]
    except ValueError:
        die("--reducer-rate takes Mbit/s, or one per reducer host separated by commas: '%s'"
            % text, 2)
    if any(r <= 0 for r in rates):
        die("link rates must be > 0 Mbit/s (--reducer-rate %s)" % text, 2)
    if len(rates) == 1:
        return rates * args.reducers
    if len(rates) != args.reducers:
        die("--reducer-rate lists %d rates for %d reducer hosts (--reducers)"
            % (len(rates), args.reducers), 2)
    return rates


def plan(args):
    """Nodes and links of the topology, independent of Mininet."""
    rate, hosts, racks = args.rate, args.hosts, args.racks
    net = args.subnet
    p = args.name  # prefix of everything that lives in the root namespace
    nodes, links = [], []
    if args.topo == "star":
        sw = [p + "s0"]
        agent_rate = args.agent_rate or hosts * rate
        for i in range(1, hosts + 1):
            nodes.append({"name": "h%d" % i, "ip": "%s.0.%d" % (net, i), "role": "host", "rack": 0})
            links.append(("h%d" % i, sw[0], rate))
        nodes.append({"name": "agent", "ip": "%s.1.1" % net, "role": "agent", "rack": -1})
        links.append(("agent", sw[0], agent_rate))
        for k in range(1, args.reducers + 1):
            nodes.append({"name": "r%d" % k, "ip": "%s.2.%d" % (net, k), "role": "reducer",
                          "rack": -1})
            links.append(("r%d" % k, sw[0], (reducer_rates(args) or [rate] * k)[k - 1]))
    else:
        spine = p + "s0"
        sw = [spine]
        uplink = args.uplink or hosts * rate
        for r in range(1, racks + 1):
            leaf = "%sl%d" % (p, r)
            sw.append(leaf)
            links.append((leaf, spine, uplink))
            for j in range(1, hosts + 1):
                i = (r - 1) * hosts + j
                nodes.append({"name": "h%d" % i, "ip": "%s.0.%d" % (net, i), "role": "host",
                              "rack": r})
                links.append(("h%d" % i, leaf, rate))
            nodes.append({"name": "aleaf%d" % r, "ip": "%s.1.%d" % (net, 10 + r),
                          "role": "leaf-agent", "rack": r})
            links.append(("aleaf%d" % r, leaf, args.agent_rate or hosts * rate))
        nodes.append({"name": "agent", "ip": "%s.1.1" % net, "role": "agent", "rack": -1})
        links.append(("agent", spine, args.agent_rate or racks * uplink))
    fabric_rails.add_rails(args, nodes, sw, links)
    return nodes, sw, links


def owner_main(args):
    """The background owner: builds the Mininet network, records it, and
    holds it until SIGTERM/SIGINT/SIGHUP, then stops it."""
    from mininet.link import TCIntf, TCLink
    from mininet.log import setLogLevel
    from mininet.net import Mininet
    from mininet.nodelib import LinuxBridge

    setLogLevel("error")
    # Mininet refuses rates above 1 Gbit/s by default; the agent's link is
    # the sum of its ports (htb shapes far faster links fine).
    TCIntf.bwParamMax = 1000 * 1000
    d = state_dir(args.name)
    nodes, switches, links = plan(args)
    net = Mininet(topo=None, switch=LinuxBridge, link=TCLink, controller=None,
                  autoSetMacs=False, build=False)
    stopping = {"flag": False}

    def on_signal(signum, _frame):
        stopping["flag"] = True

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        for n in nodes:
            net.addHost(n["name"], ip=n["ip"] + "/16")
        for s in switches:
            net.addSwitch(s, dpid="%016x" % (switches.index(s) + 1))
        made = [(spec, net.addLink(spec[0], spec[1], bw=spec[2],
                                   params1={"ip": spec[3]} if len(spec) > 3 else None))
                for spec in links]
        net.build()
        net.start()
        queued = fabric_queue.limit_agent_ports(args, nodes, made)
        record = {"name": args.name, "owner": os.getpid(), "topo": args.topo,
                  "rate_mbit": args.rate, "subnet": args.subnet + ".0.0/16",
                  "switches": switches, "hosts": [], "links": [],
                  "rails": [fabric_rails.rail_subnet(args.subnet, k)
                            for k in range(1, max(args.rails, 1) + 1)],
                  "agent_queue": args.agent_queue, "agent_ports": queued}
        for n in nodes:
            h = net.get(n["name"])
            os.makedirs(os.path.join(d, "hosts", n["name"], "tmp"), exist_ok=True)
            os.chmod(os.path.join(d, "hosts", n["name"], "tmp"), 0o1777)
            record["hosts"].append(dict(n, pid=h.pid, intf=h.defaultIntf().name,
                                        intfs={i.name: i.IP() for i in h.intfList()
                                               if i.name != "lo"}))
        for a, b, mbit, *_ in links:
            record["links"].append({"a": a, "b": b, "mbit": mbit})
        # Root-namespace interfaces (switch ports) and bridges, for cleanup.
        record["root_intfs"] = sorted(i.name for s in switches for i in net.get(s).intfList()
                                      if i.name != "lo")
        with open(os.path.join(d, "state.json.tmp"), "w") as f:
            json.dump(record, f, indent=1)
        os.rename(os.path.join(d, "state.json.tmp"), os.path.join(d, "state.json"))
        while not stopping["flag"]:
            time.sleep(0.2)
            # A host shell that died means the fabric is broken: stop.
            if any(not pid_alive(h["pid"]) for h in record["hosts"]):
                print("fabric %s: a host process died; stopping" % args.name, file=sys.stderr)
                break
    finally:
        try:
            net.stop()
        finally:
            cleanup_names(args.name, switches)
            shutil.rmtree(d, ignore_errors=True)


def cleanup_names(name, switches=None):
    """Deletes bridges and root-namespace links by the names this fabric
    uses (recorded, or derived from the fabric's prefix)."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    prefix = re.compile(r"^\d+: (%s[sl]\d+)(-eth\d+)?[@:]" % re.escape(name))
    bridges, ports = set(switches or []), set()
    for line in out.splitlines():
        m = prefix.match(line)
        if not m:
            continue
        (ports if m.group(2) else bridges).add(m.group(1) + (m.group(2) or ""))
    for p in sorted(ports):
        subprocess.run(["ip", "link", "del", p], capture_output=True)
    for b in sorted(bridges):
        subprocess.run(["ip", "link", "set", b, "down"], capture_output=True)
        subprocess.run(["ip", "link", "del", b], capture_output=True)


# ---------------------------------------------------------------- commands

def cmd_up(args):
    if not NAME_RE.match(args.name):
        die("fabric name '%s': 1-4 characters, a lowercase letter then letters/digits "
            "(it prefixes the bridges and ports in the root namespace)" % args.name, 2)
    if args.topo == "star" and not 1 <= args.hosts <= 64:
        die("--hosts must be 1..64", 2)
    if args.topo == "leaf-spine" and not (1 <= args.racks <= 16 and 1 <= args.hosts <= 16):
        die("leaf-spine: --racks and --hosts (per rack) must be 1..16", 2)
    if not re.match(r"^\d{1,3}\.\d{1,3}$", args.subnet):
        die("--subnet takes the first two octets, e.g. 10.77", 2)
    if args.rate <= 0 or (args.uplink or 1) <= 0 or (args.agent_rate or 1) <= 0:
        die("link rates must be > 0 Mbit/s", 2)
    reducer_rates(args)
    fabric_rails.check(args, die)
    fabric_queue.check(args, die)
    if not 0 <= args.reducers <= 16:
        die("--reducers must be 0..16", 2)
    if args.reducers and args.topo != "star":
        die("--reducers: reducer hosts are on the star topology only", 2)
    if os.geteuid() != 0:
        die("needs root (network namespaces, bridges, tc)")
    for tool in ("brctl", "tc", "nsenter", "unshare", "mnexec"):
        if shutil.which(tool) is None:
            die("'%s' not found: run scripts/bootstrap.sh (packages mininet, bridge-utils)" % tool)
    d = state_dir(args.name)
    if os.path.exists(os.path.join(d, "state.json")):
        st = json.load(open(os.path.join(d, "state.json")))
        if pid_alive(st["owner"], "fabric.py"):
            die("fabric '%s' is already up (owner pid %d); `fabric.py down %s` first"
                % (args.name, st["owner"], args.name))
    do_down(args.name, quiet=True)  # what a dead run left behind
    os.makedirs(d, exist_ok=True)
    log = open(os.path.join(d, "owner.log"), "w")
    argv = [sys.executable, SELF, "_owner"] + [a for a in sys.argv[2:]]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if os.path.exists(os.path.join(d, "state.json")):
            break
        if proc.poll() is not None:
            die("fabric '%s' failed to come up:\n%s" % (args.name,
                open(os.path.join(d, "owner.log")).read()))
        time.sleep(0.1)
    else:
        proc.terminate()
        die("fabric '%s' not up within 120 s" % args.name)
    write_rsh(args.name)
    st = load_state(args.name)
    if not args.quiet:
        print_status(st)


def write_rsh(name):
    """The launcher mpirun uses instead of ssh: `rsh HOST CMD...`."""
    path = os.path.join(state_dir(name), "rsh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# mpirun's plm_rsh_agent for fabric %s: HOST CMD... (CMD is\n"
                "# a shell command line, as ssh would pass it)\n" % name)
        f.write('host=$1\nshift\nexec %s %s exec %s "$host" -- sh -c "$*"\n'
                % (sys.executable, SELF, name))
    os.chmod(path, 0o755)


def netns_of(pid):
    try:
        return os.readlink("/proc/%d/ns/net" % pid)
    except OSError:
        return None


def kill_in_namespaces(hosts, quiet):
    """Processes started inside the hosts (agents, slurmd, ranks) outlive
    the host shells: find them by network namespace, TERM, then KILL."""
    shells = {h["pid"] for h in hosts}
    spaces = {netns_of(h["pid"]) for h in hosts} - {None}
    if not spaces:
        return
    victims = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in shells or int(entry) == os.getpid():
            continue
        if netns_of(int(entry)) in spaces:
            victims.append(int(entry))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in victims:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.time() + 3
        while time.time() < deadline and any(pid_alive(p) for p in victims):
            time.sleep(0.1)
    if victims and not quiet:
        print("fabric: stopped %d process(es) left inside the hosts" % len(victims))


def do_down(name, quiet=False):
    d = state_dir(name)
    path = os.path.join(d, "state.json")
    switches = None
    if os.path.exists(path):
        try:
            st = json.load(open(path))
            switches = st.get("switches")
            kill_in_namespaces(st.get("hosts", []), quiet)
            owner = st.get("owner", 0)
            if owner and pid_alive(owner, "fabric.py"):
                os.kill(owner, signal.SIGTERM)
                for _ in range(300):
                    if not pid_alive(owner, "fabric.py"):
                        break
                    time.sleep(0.1)
                else:
                    os.kill(owner, signal.SIGKILL)
            # Host shells of a killed owner: by recorded pid and Mininet's tag.
            for h in st.get("hosts", []):
                if pid_alive(h["pid"], "mininet:" + h["name"]):
                    os.kill(h["pid"], signal.SIGKILL)
        except (ValueError, OSError) as e:
            if not quiet:
                print("fabric: %s: %s (cleaning by name)" % (path, e), file=sys.stderr)
    cleanup_names(name, switches)
    shutil.rmtree(d, ignore_errors=True)
    if not quiet:
        print("fabric %s: down" % name)


def cmd_down(args):
    do_down(args.name)


def print_status(st):
    print("fabric %s: %s, %s, links %d Mbit/s, owner pid %d" % (
        st["name"], st["topo"], st["subnet"], st["rate_mbit"], st["owner"]))
    for h in st["hosts"]:
        print("  %-8s %-12s %-10s %s" % (h["name"], h["ip"], h["role"],
                                       "rack %d" % h["rack"] if h["rack"] > 0 else
                                       "rail %d" % h["rail"] if h.get("rail") else ""))
    if len(st.get("rails", [])) > 1:
        print("  rails: %s" % " ".join("%d=%s.0.0/16" % (k, n)
                                       for k, n in enumerate(st["rails"], 1)))
    for l in st["links"]:
        print("  link %s - %s %d Mbit/s" % (l["a"], l["b"], l["mbit"]))
    print("  mpirun launcher: %s" % os.path.join(state_dir(st["name"]), "rsh"))


def cmd_status(args):
    if args.name:
        st = load_state(args.name)
        if not pid_alive(st["owner"], "fabric.py"):
            die("fabric '%s': owner %d is gone (run `fabric.py down %s`)"
                % (args.name, st["owner"], args.name))
        if args.json:
            print(json.dumps(st, indent=1))
        else:
            print_status(st)
        return
    names = sorted(os.listdir(STATE_ROOT)) if os.path.isdir(STATE_ROOT) else []
    for n in names:
        print(n)


def find_host(st, host):
    for h in st["hosts"]:
        if h["name"] == host:
            return h
    die("fabric %s has no host '%s' (hosts: %s)"
        % (st["name"], host, " ".join(h["name"] for h in st["hosts"])))


def host_argv(st, h, cmd):
    """argv that runs cmd inside host h: its network namespace (nsenter), its
    own hostname (UTS), and a private mount namespace with its own /tmp and a
    sysfs of its network namespace (UCX lists network devices from
    /sys/class/net), the cgroup hierarchies carried over (slurmd needs them)."""
    hdir = os.path.join(state_dir(st["name"]), "hosts", h["name"])
    # A checkout (or working directory) under /tmp, such as a CI clone made
    # with mktemp -d, stays visible at the same path on every host: it is
    # bound aside before the private /tmp covers the real one, then back.
    keep = tmp_paths_to_keep()
    hold = "".join('mkdir -p "$1/keep/%d" && mount --bind "%s" "$1/keep/%d" && ' % (i, p, i)
                   for i, p in enumerate(keep))
    back = "".join('mkdir -p "%s" && mount --bind "$1/keep/%d" "%s" && ' % (p, i, p)
                   for i, p in enumerate(keep))
    inner = ('hostname "$0" && ' + hold + 'mount --bind "$1/tmp" /tmp && ' + back +
             'mkdir -p "$1/cg" && '
             'mount --rbind /sys/fs/cgroup "$1/cg" && mount -t sysfs sysfs /sys && '
             'mount --rbind "$1/cg" /sys/fs/cgroup && shift && exec "$@"')
    return (["nsenter", "-t", str(h["pid"]), "-n", "--", "unshare", "--uts", "--mount",
             "--propagation", "private", "--", "sh", "-c", inner, h["name"], hdir] + cmd)


def tmp_paths_to_keep():
    """Directories under /tmp a host must still see: this checkout and the
    working directory (outermost only, shell-safe names only)."""
    cands = [os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
             os.path.realpath(os.getcwd())]
    keep = []
    for p in sorted(set(cands), key=len):
        if not p.startswith("/tmp/") or any(p == k or p.startswith(k + "/") for k in keep):
            continue
        if any(c in p for c in "\"$`\n"):
            continue
        keep.append(p)
    return keep


def cmd_exec(args):
    st = load_state(args.name)
    cmd = args.cmd
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        die("exec: no command given", 2)
    h = find_host(st, args.host)
    if not pid_alive(h["pid"]):
        die("host %s of fabric %s is gone" % (args.host, args.name))
    os.execvp("nsenter", host_argv(st, h, cmd))


def cmd_hostfile(args):
    st = load_state(args.name)
    for h in st["hosts"]:
        if h["role"] == "host":
            print("%s slots=%d" % (h["name"], args.ppn))


def cmd_counters(args):
    print(json.dumps(fabric_counters.read_counters(load_state(args.name)), indent=1,
                     sort_keys=True))


def main():
    ap = argparse.ArgumentParser(prog="fabric.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for verb in ("up", "_owner"):
        p = sub.add_parser(verb, help="bring a fabric up" if verb == "up" else argparse.SUPPRESS)
        p.add_argument("name")
        p.add_argument("--topo", choices=("star", "leaf-spine"), default="star")
        p.add_argument("--hosts", type=int, default=4, help="hosts (per rack for leaf-spine)")
        p.add_argument("--racks", type=int, default=2)
        p.add_argument("--rate", type=int, default=400, help="host link Mbit/s (default 400)")
        p.add_argument("--uplink", type=int, default=0, help="leaf uplink Mbit/s (default hosts x rate)")
        p.add_argument("--agent-rate", type=int, default=0,
                       help="agent link Mbit/s (default: the sum of what feeds it)")
        p.add_argument("--reducers", type=int, default=0,
                       help="reducer hosts r1..rK for agents at a host's rate (star; default 0)")
        p.add_argument("--reducer-rate", default="",
                       help="reducer host link Mbit/s, or one per reducer: 400,400,200 "
                            "(default --rate)")
        p.add_argument("--rails", type=int, default=1,
                       help="links per compute host, each to its own switch plane with an "
                            "agent host ar<k> (star; default 1)")
        fabric_queue.add_argument(p)
        p.add_argument("--subnet", default="10.77", help="first two octets (default 10.77)")
        p.add_argument("--quiet", action="store_true")
    p = sub.add_parser("down", help="tear a fabric down")
    p.add_argument("name")
    p = sub.add_parser("status", help="show a fabric (or list them)")
    p.add_argument("name", nargs="?")
    p.add_argument("--json", action="store_true", help="the recorded state as JSON")
    p = sub.add_parser("exec", help="run a command on a host")
    p.add_argument("name")
    p.add_argument("host")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p = sub.add_parser("hostfile", help="Open MPI hostfile of the compute hosts")
    p.add_argument("name")
    p.add_argument("--ppn", type=int, default=1)
    p = sub.add_parser("counters", help="bytes per host interface (JSON)")
    p.add_argument("name")
    args = ap.parse_args()
    if args.command == "_owner":
        owner_main(args)
    else:
        {"up": cmd_up, "down": cmd_down, "status": cmd_status, "exec": cmd_exec,
         "hostfile": cmd_hostfile, "counters": cmd_counters}[args.command](args)


if __name__ == "__main__":
    main()
