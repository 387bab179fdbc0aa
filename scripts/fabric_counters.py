"""What crossed an emulated cluster's links (`fabric.py counters NAME`):
bytes per host interface (by rail with --rails) and, with --agent-queue,
the agent ports' queue drops (an agent host's "port_queue")."""
import subprocess

import fabric_queue
import fabric_rails


def read_counters(st):
    out = {}
    for h in st["hosts"]:
        res = subprocess.run(["nsenter", "-t", str(h["pid"]), "-n", "cat", "/proc/net/dev"],
                             capture_output=True, text=True)
        c = fabric_rails.intf_counters(res.stdout)
        if h["intf"] in c:
            out[h["name"]] = {"rx_bytes": c[h["intf"]][0], "tx_bytes": c[h["intf"]][1]}
        if len(st.get("rails", [])) > 1 and h["role"] == "host":
            rails = {}
            for ifname, ip in h.get("intfs", {}).items():
                k = fabric_rails.rail_of(st["rails"], ip or "")
                if k and ifname in c:
                    rails[str(k)] = {"intf": ifname, "rx_bytes": c[ifname][0],
                                     "tx_bytes": c[ifname][1]}
            out[h["name"]]["rails"] = rails
    # An agent host's switch port under --agent-queue: {"port", "limit",
    # "sent_bytes", "dropped"} as its entry's "port_queue".
    for host, q in fabric_queue.port_stats(st.get("agent_ports", {})).items():
        out.setdefault(host, {})["port_queue"] = q
    return out
