"""Connection tracking through the datapath (issue #15): flows in ovs-ofctl syntax installed
with Debian's ovs-ofctl, real TCP/UDP/ICMP between namespaces, the tracker's state read back
with OVS's `ovs-appctl dpctl/*` commands.

* A stateful firewall: h1 may open TCP, UDP and ICMP to h2; h2 may not open anything to h1;
  replies pass. iperf3 runs through it.
* SNAT of h1 behind one address: many concurrent connections, each seen by the server from
  the NAT address with its own port inside the configured range.
* `resubmit(,TABLE,ct)` after a DNAT: the table matches the connection's original
  destination (the virtual address h1 pinged), which the packet no longer carries.
"""

import os
import subprocess

import pytest

from conftest import HELPERS, PY, require, run, wait_for, wait_listening
from test_ofctl import bridge, ofctl, ping

FIREWALL = [
    "table=0,priority=100,arp,actions=NORMAL",
    "table=0,priority=90,ip,ct_state=-trk,actions=ct(table=1)",
    "table=1,priority=100,ip,in_port=1,ct_state=+trk+new,actions=ct(commit),output:2",
    "table=1,priority=100,ip,ct_state=+trk+est,actions=NORMAL",
    "table=1,priority=100,ip,ct_state=+trk+rel,actions=NORMAL",
    "table=1,priority=50,ip,in_port=2,ct_state=+trk+new,actions=drop",
    "table=1,priority=10,actions=drop",
]


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl", "ovs-appctl", "ping", "iperf3")


def appctl(daemon, *args, check=True):
    return run(["ovs-appctl", "-t", str(daemon.rundir / "ferrovsd.ctl"), *args], check=check)


def peer(net, ns, *args, check=False, timeout=20):
    return net.ns(ns, " ".join([PY, str(HELPERS / "ct_peer.py"), *map(str, args)]),
                  check=check, timeout=timeout)


def server(net, ns, port, seconds):
    p = net.spawn(ns, [PY, str(HELPERS / "ct_peer.py"), "serve", str(port), str(seconds)],
                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def install(daemon, br, flows):
    ofctl(daemon, "del-flows", br)
    for f in flows:
        ofctl(daemon, "add-flow", br, f)


def test_stateful_firewall(daemon, net):
    br, (h1, h2) = bridge(daemon, net)
    install(daemon, br, FIREWALL)
    appctl(daemon, "dpctl/flush-conntrack")
    srv2 = server(net, h2, 5201, 20)
    srv1 = server(net, h1, 5202, 20)
    try:
        # h1 -> h2: new connections are allowed, the replies come back.
        assert ping(net, h1, "10.7.0.2", count=2, check=False).returncode == 0
        r = peer(net, h1, "tcp", "10.7.0.2", 5201)
        assert r.returncode == 0 and r.stdout.startswith("10.7.0.1:"), r.stdout
        r = peer(net, h1, "udp", "10.7.0.2", 5201)
        assert r.returncode == 0, r.stdout
        # h2 -> h1: nothing new passes.
        assert ping(net, h2, "10.7.0.1", count=2, check=False).returncode != 0
        assert peer(net, h2, "tcp", "10.7.0.1", 5202).returncode != 0
        assert peer(net, h2, "udp", "10.7.0.1", 5202).returncode != 0
        # The tracker knows h1's connections, in OVS's dump format.
        dump = appctl(daemon, "dpctl/dump-conntrack").stdout
        assert "icmp,orig=(src=10.7.0.1,dst=10.7.0.2" in dump, dump
        assert "tcp,orig=(src=10.7.0.1,dst=10.7.0.2" in dump, dump
        assert "udp,orig=(src=10.7.0.1,dst=10.7.0.2" in dump, dump
        assert "src=10.7.0.2,dst=10.7.0.1,sport=" in dump  # reply tuples
        assert "orig=(src=10.7.0.2" not in dump, dump  # h2 opened nothing
        stats = appctl(daemon, "dpctl/ct-stats-show").stdout
        assert "TCP: " in stats and "UDP: 1" in stats and "ICMP: 1" in stats, stats
    finally:
        srv1.kill()
        srv2.kill()
        srv1.wait()
        srv2.wait()
    # Real bulk TCP through the firewall.
    iperf = net.spawn(h2, ["iperf3", "-s", "-1", "-p", "5301"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(h2, 5301)
        r = net.ns(h1, "iperf3 -c 10.7.0.2 -p 5301 -t 2", check=False, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        iperf.kill()
        iperf.wait()
    # h2 cannot open iperf3 to h1 either.
    iperf = net.spawn(h1, ["iperf3", "-s", "-1", "-p", "5302"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(h1, 5302)
        r = net.ns(h2, "iperf3 -c 10.7.0.1 -p 5302 -t 1 --connect-timeout 1000",
                   check=False, timeout=30)
        assert r.returncode != 0
    finally:
        iperf.kill()
        iperf.wait()
    # Flushing forgets the connections.
    appctl(daemon, "dpctl/flush-conntrack")
    assert appctl(daemon, "dpctl/dump-conntrack").stdout.strip() == ""
    assert appctl(daemon, "dpctl/ct-get-maxconns").stdout.strip().isdigit()


SNAT_ADDR = "10.7.0.100"


def snat_flows(*extra):
    """h1 (port 1) SNATed to SNAT_ADDR in zone 9, h2's established replies back, and
    `extra` table-1 flows before the drop."""
    return [
        "table=0,priority=100,arp,actions=NORMAL",
        "table=0,priority=90,ip,in_port=1,"
        f"actions=ct(commit,zone=9,nat(src={SNAT_ADDR}:20000-20999),table=1)",
        "table=0,priority=90,ip,in_port=2,actions=ct(zone=9,nat,table=1)",
        "table=1,priority=100,ip,in_port=1,actions=output:2",
        "table=1,priority=100,ip,in_port=2,ct_state=+trk+est+rpl,actions=output:1",
        *extra,
        "table=1,priority=10,actions=drop",
    ]


def test_snat_many_connections(daemon, net):
    br, (h1, h2) = bridge(daemon, net)
    install(daemon, br, snat_flows())
    appctl(daemon, "dpctl/flush-conntrack")
    # h2 answers the NAT address at h1's port: the switch translates it back.
    net.ns(h2, f"ip neigh add {SNAT_ADDR} lladdr 02:00:00:00:07:01 dev eth0")
    srv = server(net, h2, 5203, 30)
    try:
        n = 60
        r = peer(net, h1, "tcp", "10.7.0.2", 5203, n, timeout=30)
        assert r.returncode == 0, r.stdout
        seen = [l.split(":") for l in r.stdout.split()]
        assert len(seen) == n
        assert {ip for ip, _ in seen} == {SNAT_ADDR}, seen
        ports = [int(p) for _, p in seen]
        assert len(set(ports)) == n, "NAT gave two connections one port"
        assert all(20000 <= p <= 20999 for p in ports), ports
        u = peer(net, h1, "udp", "10.7.0.2", 5203)
        assert u.returncode == 0 and u.stdout.startswith(SNAT_ADDR + ":"), u.stdout
        # ICMP through the NAT as well.
        assert ping(net, h1, "10.7.0.2", count=2, check=False).returncode == 0
        dump = appctl(daemon, "dpctl/dump-conntrack", "zone=9").stdout
        tcp = [l for l in dump.splitlines() if l.startswith("tcp,")]
        assert len(tcp) == n, dump
        assert all(f"dst={SNAT_ADDR}" in l and "zone=9" in l for l in tcp), tcp[:3]
        # Nothing in another zone, and flushing another zone leaves this one alone.
        assert appctl(daemon, "dpctl/dump-conntrack", "zone=8").stdout.strip() == ""
        appctl(daemon, "dpctl/flush-conntrack", "zone=8")
        dump = appctl(daemon, "dpctl/dump-conntrack", "zone=9").stdout
        assert len([l for l in dump.splitlines() if l.startswith("tcp,")]) == n
        # A controller's NXT_CT_FLUSH_ZONE (ovs-ofctl ct-flush-zone) empties the zone.
        ofctl(daemon, "ct-flush-zone", br, 9)
        assert appctl(daemon, "dpctl/dump-conntrack", "zone=9").stdout.strip() == ""
    finally:
        srv.kill()
        srv.wait()


def test_trace_follows_recirculation(daemon, net):
    br, _ = bridge(daemon, net)
    install(daemon, br, FIREWALL)
    out = appctl(daemon, "ofproto/trace", br, "in_port=1,tcp,nw_src=10.7.0.1,nw_dst=10.7.0.2,"
                 "tp_dst=80").stdout
    assert "recirc(0x" in out, out
    assert "resume conntrack with default ct_state=trk|new" in out, out
    # The resumed pass matches the +trk+new flow of table 1 and commits.
    tail = out.split("resume conntrack", 1)[1]
    assert "ct(commit)" in tail and "Datapath actions: ct(commit),2" in tail, tail


VIP = "10.7.0.99"


def resubmit_ct_flows(ct):
    """h1 pings VIP, DNATed to h2; table 4 forwards only what was sent to VIP."""
    r = "resubmit(,4,ct)" if ct else "resubmit(,4)"
    return [
        "table=0,priority=100,arp,actions=NORMAL",
        "table=0,priority=90,in_port=1,ip,ct_state=-trk,actions=ct(table=1,nat)",
        "table=0,priority=90,in_port=2,ip,ct_state=-trk,actions=ct(table=3,nat)",
        f"table=1,priority=100,ip,ct_state=+trk+new,nw_dst={VIP},"
        "actions=ct(commit,nat(dst=10.7.0.2),table=2)",
        "table=1,priority=90,ip,ct_state=+trk+est,actions=resubmit(,2)",
        f"table=2,priority=10,ip,ct_state=+trk-inv,actions={r}",
        f"table=4,priority=100,icmp,nw_dst={VIP},actions=output:2",
        "table=4,priority=0,actions=drop",
        "table=3,priority=10,ip,ct_state=+trk+est,actions=output:1",
    ]


def test_resubmit_ct_matches_the_original_tuple(daemon, net):
    br, (h1, h2) = bridge(daemon, net)
    h2_mac = "02:00:00:00:07:02"
    net.ns(h1, f"ip neigh replace {VIP} lladdr {h2_mac} dev eth0 nud permanent")
    for ct in (True, False):
        install(daemon, br, resubmit_ct_flows(ct))
        appctl(daemon, "dpctl/flush-conntrack")
        r = ping(net, h1, VIP, count=2, check=False)
        if ct:
            assert r.returncode == 0, r.stdout + r.stderr
            dump = appctl(daemon, "dpctl/dump-conntrack").stdout
            assert f"icmp,orig=(src=10.7.0.1,dst={VIP}" in dump, dump
        else:
            # The packet's own destination is h2's: table 4 drops it.
            assert r.returncode != 0, r.stdout
