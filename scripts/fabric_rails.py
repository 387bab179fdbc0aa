"""Rails of an emulated cluster (`fabric.py up --rails R`, star only).

A training cluster's node has several NICs, one per rail; rail k of every
node goes to switch plane k, and planes meet only through the hosts. Here:
every compute host gets R links at --rate, link k to switch `<name>s<k-1>`
on rail k's own /16 (rail 1 on the fabric's --subnet, rail k on the second
octet + 100 (k - 1): 10.77 -> 10.177), and each plane has an agent host
`ar<k>` (address <rail k subnet>.1.1, a link of hosts x rate: the agent in
that plane's switch). Traffic to ar<k> leaves a host through its rail-k
link by plain routing (the subnet is on that link only), so a job striped
over ar1..arR puts stripe k on rail k; `counters` splits each host's bytes
by rail.
"""


def rail_subnet(subnet, k):
    """The first two octets of rail k's /16 (k = 1: the fabric's)."""
    a, b = subnet.split(".")
    second = int(b) + 100 * (k - 1)
    if second > 255:
        raise ValueError("rail %d of subnet %s.0.0/16 would need %s.%d: give --subnet a "
                         "second octet of at most %d" % (k, subnet, a, second, 255 - 100 * (k - 1)))
    return "%s.%d" % (a, second)


def check(args, die):
    """Validates --rails (0 or 1: no extra rails) before anything is built."""
    if not 0 <= args.rails <= 4:
        die("--rails must be 1..4", 2)
    if args.rails > 1:
        if args.topo != "star":
            die("--rails: rails are on the star topology only", 2)
        try:
            rail_subnet(args.subnet, args.rails)
        except ValueError as e:
            die("--rails %d: %s" % (args.rails, e), 2)


def add_rails(args, nodes, switches, links):
    """Rails 2..R of every compute host (links carry the host side's
    address as a fourth element) and one agent host per rail."""
    if args.rails <= 1:
        return
    hosts = [n for n in nodes if n["role"] == "host"]
    for n in hosts:
        n["rail"] = 1
    for k in range(1, args.rails + 1):
        net = rail_subnet(args.subnet, k)
        sw = switches[0] if k == 1 else "%ss%d" % (args.name, k - 1)
        if k > 1:
            switches.append(sw)
            for n in hosts:
                links.append((n["name"], sw, args.rate, "%s.0.%s/16" % (net, n["ip"].split(".")[3])))
        nodes.append({"name": "ar%d" % k, "ip": "%s.1.%d" % (net, 1 if k > 1 else 101),
                      "role": "rail-agent", "rack": -1, "rail": k})
        links.append(("ar%d" % k, sw, args.agent_rate or len(hosts) * args.rate))


def rail_of(subnets, ip):
    """Rail number of an address, 0 when on none."""
    for k, net in enumerate(subnets, 1):
        if ip.startswith(net + "."):
            return k
    return 0


def intf_counters(proc_net_dev):
    """{interface: (rx_bytes, tx_bytes)} from /proc/net/dev text."""
    out = {}
    for line in proc_net_dev.splitlines():
        if ":" not in line:
            continue
        name, rest = line.split(":", 1)
        f = rest.split()
        out[name.strip()] = (int(f[0]), int(f[8]))
    return out
