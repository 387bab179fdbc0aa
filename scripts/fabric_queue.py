"""A shallow queue at the agents' switch ports (`fabric.py up --agent-queue N`).

An aggregating switch's port toward its engine, or a reducer host's switch
port, is where the members' streams converge (incast). By default the
emulated port queues up to the interface's txqueuelen (1000 packets) under
its htb shaper, deep enough to hide an incast. --agent-queue N replaces the
leaf queue of the htb class shaping the switch's port toward every agent
host (agent, aleaf<r>, ar<k>, r<k>) with `pfifo limit N` (packets): what
arrives past N packets is dropped there, and TCP's retransmits show it.
`counters` reports each such port's queue (tc -s: limit, bytes sent,
packets dropped) as the agent host's "port_queue".
"""
import re
import subprocess

AGENT_ROLES = ("agent", "leaf-agent", "rail-agent", "reducer")
# Mininet's TCIntf shapes a link end with `root handle 5:0 htb` and class 5:1.
HTB_CLASS = "5:1"


def add_argument(p):
    p.add_argument("--agent-queue", type=int, default=0,
                   help="pfifo limit (packets) of the switch's port toward each agent "
                        "host (default 0: the interface's own queue)")


def check(args, die):
    if not 0 <= args.agent_queue <= 100000:
        die("--agent-queue must be 0..100000 packets (0: no limit of its own)", 2)


def limit_agent_ports(args, nodes, made):
    """After net.start(): `made` holds (link spec, Mininet Link) pairs; the
    switch end (intf2) of each agent host's link gets the pfifo. Returns
    {agent host: switch port}; raises RuntimeError naming the port when tc
    refuses."""
    ports = {}
    if args.agent_queue <= 0:
        return ports
    roles = {n["name"]: n["role"] for n in nodes}
    for spec, link in made:
        if roles.get(spec[0]) not in AGENT_ROLES:
            continue
        port = link.intf2.name
        cmd = ["tc", "qdisc", "replace", "dev", port, "parent", HTB_CLASS, "handle", "10:",
               "pfifo", "limit", str(args.agent_queue)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError("--agent-queue: '%s' failed on %s (the port toward %s): %s"
                               % (" ".join(cmd), port, spec[0], res.stderr.strip()))
        ports[spec[0]] = port
    return ports


def port_stats(ports):
    """{agent host: {"port", "limit", "sent_bytes", "dropped"}} from tc -s."""
    out = {}
    for host, port in sorted(ports.items()):
        res = subprocess.run(["tc", "-s", "qdisc", "show", "dev", port, "parent", HTB_CLASS],
                             capture_output=True, text=True)
        limit = re.search(r"pfifo 10: .*limit (\d+)p", res.stdout)
        sent = re.search(r"Sent (\d+) bytes \d+ pkt \(dropped (\d+)", res.stdout)
        out[host] = {"port": port, "limit": int(limit.group(1)) if limit else None,
                     "sent_bytes": int(sent.group(1)) if sent else None,
                     "dropped": int(sent.group(2)) if sent else None}
    return out
