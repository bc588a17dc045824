"""`check_pkt_larger(LEN)->DST` with real traffic: Debian's ovs-ofctl installs the flows
(OpenFlow 1.0, 1.3 and 1.5) and dump-flows prints them as OVS renders them itself; then
pings of two sizes from one host to one address take different ports. Hosts h2 and h3 are
twins (same IP and MAC), so a reply comes back whichever the switch picked, and each
host's count of echo requests says which one did: small packets reach h2, large ones h3, though
they are one flow and share one megaflow.
"""

import pytest

from conftest import require, run
from test_ofctl import bridge, flow_lines, ofctl

PROTOS = [None, "OpenFlow13", "OpenFlow15"]

# 1000 bytes of Ethernet frame: ping -s 100 sends 142, ping -s 1600 sends 1642.
FLOWS = [
    "table=0,priority=100,in_port=1,ip,"
    "actions=check_pkt_larger(1000)->NXM_NX_REG9[1],resubmit(,1)",
    "table=0,priority=100,in_port=2,ip,actions=output:1",
    "table=0,priority=100,in_port=3,ip,actions=output:1",
    "table=1,priority=10,reg9=0x2/0x2,actions=output:3",
    "table=1,priority=5,actions=output:2",
]

TWIN_MAC = "02:00:00:00:07:02"
H1_MAC = "02:00:00:00:07:01"


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl", "ping")


def actions_of(line):
    return line.split(" actions=", 1)[1].strip()


def ovs_actions(flow, proto):
    cmd = ["ovs-ofctl"] + (["-O", proto] if proto else []) + ["parse-flow", flow]
    out = run(cmd).stdout
    return actions_of(next(l for l in out.splitlines() if " ADD " in l))


def rx_packets(net, ns):
    """Echo requests the host has received (its ICMP InEchos counter)."""
    lines = [l.split() for l in net.ns(ns, "cat /proc/net/snmp").stdout.splitlines()
             if l.startswith("Icmp:")]
    return int(lines[1][lines[0].index("InEchos")])


@pytest.mark.parametrize("proto", PROTOS)
def test_check_pkt_larger_installs_prints_and_splits_traffic(daemon, net, proto):
    br, (h1, h2, h3) = bridge(daemon, net, n_hosts=3)
    # The twin of h2 answers as h2 does.
    net.ns(h3, f"ip link set eth0 address {TWIN_MAC}")
    net.ns(h3, "ip addr flush dev eth0")
    net.ns(h3, "ip addr add 10.7.0.2/24 dev eth0")
    # Jumbo frames on every cable, both ends; no ARP (the pipeline carries only IPv4).
    for i, ns in enumerate((h1, h2, h3), start=1):
        net.ns(ns, "ip link set eth0 mtu 2000")
        run(["ip", "link", "set", f"fv{net.tag}h{i}"[:15], "mtu", "2000"])
    net.ns(h1, f"ip neigh replace 10.7.0.2 lladdr {TWIN_MAC} dev eth0 nud permanent")
    for ns in (h2, h3):
        net.ns(ns, f"ip neigh replace 10.7.0.1 lladdr {H1_MAC} dev eth0 nud permanent")

    ofctl(daemon, "del-flows", br, proto=proto)
    for f in FLOWS:
        ofctl(daemon, "add-flow", br, f, proto=proto)
    dump = flow_lines(ofctl(daemon, "dump-flows", br, proto=proto).stdout)
    got = sorted(actions_of(l) for l in dump)
    want = sorted(ovs_actions(f, proto) for f in FLOWS)
    assert got == want
    assert "check_pkt_larger(1000)->NXM_NX_REG9[1],resubmit(,1)" in got

    def ping(size):
        before = rx_packets(net, h2), rx_packets(net, h3)
        net.ns(h1, f"ping -c 3 -i 0.2 -W 2 -s {size} 10.7.0.2", timeout=30)
        after = rx_packets(net, h2), rx_packets(net, h3)
        return after[0] - before[0], after[1] - before[1]

    for _ in range(2):
        small_h2, small_h3 = ping(100)
        assert small_h2 >= 3 and small_h3 == 0, (small_h2, small_h3)
        large_h2, large_h3 = ping(1600)
        assert large_h3 >= 3 and large_h2 == 0, (large_h2, large_h3)
