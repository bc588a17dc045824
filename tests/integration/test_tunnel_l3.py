"""GRE tunnels that carry L3 packets: `packet_type=legacy_l3`, against Open vSwitch 3.1's
userspace datapath and against crafted GRE packets.

(This machine's kernel has no `ip_gre`, so Linux's `ip tunnel ... mode gre` device cannot be
the peer; OVS's legacy_l3 GRE port speaks the same wire format: the IP packet right after the
GRE header, protocol 0x0800.)

As in OVS, a legacy_l3 port sends what the bridge gives it without its Ethernet header (the
GRE protocol is the EtherType), and shows what it receives to the bridge behind an Ethernet
header with zero MACs, so the flows that deliver it to a host set the destination MAC. An
Ethernet-in-GRE packet (protocol 0x6558) goes only to a legacy_l2 port and an L3 one only to
a legacy_l3 port, even with the same remote and key; with no such port it is dropped.
"""

import json
import subprocess
import time

import pytest

from conftest import HELPERS, PY, need_root, require, run, wait_for
from test_tunnel import Site, ping_ok
from test_tunnel6 import Site6
from test_tunnel_ovs import OvsPeer, ferrovs_ofctl


def mac_of(site, ns, dev):
    return site.ns(ns, f"cat /sys/class/net/{dev}/address").stdout.strip()


class Capture:
    """tcpdump of the GRE packets on the peer's eth0."""

    def __init__(self, site):
        self.site = site
        self.pcap = site.tmp / "gre.pcap"
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", site.peer, "tcpdump", "-i", "eth0", "-U", "-n",
             "-w", str(self.pcap), "ip proto 47 or ip6 proto 47"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # tcpdump says "listening on" once its socket is open.
        line = self.proc.stderr.readline()
        assert "listening" in line, line

    def packets(self):
        time.sleep(0.5)
        self.proc.terminate()
        self.proc.wait(timeout=10)
        r = run([PY, str(HELPERS / "greio.py"), "read", str(self.pcap)])
        return json.loads(r.stdout)


def rx_counts(dump):
    """(rx packets, rx bytes) of the one port in `ovs-ofctl dump-ports BR PORT` output."""
    line = next(x for x in dump.splitlines() if "rx pkts=" in x)
    return (int(line.split("rx pkts=")[1].split(",")[0]),
            int(line.split("bytes=")[1].split(",")[0]))


def tun_rx(site, port):
    """The rx packets of ferrovs's port `port` on the integration bridge, as OpenFlow counts
    them now."""
    return rx_counts(ferrovs_ofctl(site, "dump-ports", site.int, port).stdout)[0]


@pytest.fixture
def site_ovs():
    need_root()
    require("ovs-vsctl", "ovs-appctl", "ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ping",
            "ethtool", "tcpdump")
    s = Site()
    o = OvsPeer(s)
    yield s, o
    o.stop()
    s.close()


def test_legacy_l3_gre_interoperates_with_ovs(site_ovs):
    site, ovs = site_ovs
    site.start()
    site.underlay()
    tun = f"t{site.t}"[:15]
    site.overlay("gre", {"remote_ip": site.under[0], "key": 77, "packet_type": "legacy_l3"})
    ovs.configure("gre", 77, ["options:packet_type=legacy_l3"])
    site.ns(site.peer, "ethtool -K eth0 tso off gso off", check=False)
    site.ns(site.sw, f"ethtool -K {site.up} tso off gso off", check=False)
    # No ARP crosses an L3 tunnel: each host has a static neighbour for the other, and each
    # bridge gives what the tunnel brings its host's MAC (it arrives with zero MACs).
    site.ns(site.sw, f"ip neigh replace {site.over[0]} lladdr 02:00:00:00:00:99 dev {site.int}")
    site.ns(site.peer, f"ip neigh replace {site.over[1]} lladdr 02:00:00:00:00:98 dev brint")
    # (NORMAL delivers on each side.)
    for ofctl, br, t, mac in [
            (ovs.ofctl, "brint", "tun0", mac_of(site, site.peer, "brint")),
            (lambda *a, **k: ferrovs_ofctl(site, *a, **k), site.int, tun,
             mac_of(site, site.sw, site.int))]:
        ofctl("del-flows", br)
        ofctl("add-flow", br, f"in_port=LOCAL,ip,actions=output:{t}")
        ofctl("add-flow", br, f"in_port={t},actions=mod_dl_dst:{mac},NORMAL")
    cap = Capture(site)
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
             what=f"ping to OVS over L3 GRE\nOVS: {ovs.appctl('dpctl/dump-flows').stdout}"
                  f"\nferrovs: {site.appctl('dpctl/dump-flows', check=False).stdout}"
                  f"\n{site.logtext()}")
    site.ns(site.peer, f"ping -c 3 -i 0.2 -W 2 {site.over[1]}")
    site.ns(site.sw, f"ping -c 3 -i 0.2 -W 2 {site.over[0]}")
    # Both switches show the stripped Ethernet header and the IPv4 protocol alike.
    ours = site.appctl("dpctl/dump-flows").stdout
    theirs = ovs.appctl("dpctl/dump-flows").stdout
    for flows in (ours, theirs):
        assert "pop_eth,tnl_push(tnl_port(" in flows, flows
        assert "gre((flags=0x2000,proto=0x800),key=0x4d)" in flows, flows
    # On the wire, both ways: GRE protocol 0x0800 and the IPv4 packet right after the header.
    pkts = cap.packets()
    for src in site.under:
        mine = [p for p in pkts if p["src"] == src]
        assert len(mine) >= 3, (src, pkts)
        for p in mine:
            assert (p["proto"], p["key"], p["ip_version"]) == (0x0800, 77, 4), p
        assert {0, 8} <= {p["icmp_type"] for p in mine}, mine
    # Both switches' NORMAL learn the zero source MAC the L3 port shows its packets with
    # (OVS 3.1's translation skips learning from a legacy_l3 port, but its revalidator
    # learns it from the cached NORMAL's statistics).
    for who, show in [("ferrovs", lambda: site.appctl("fdb/show", site.int).stdout),
                      ("OVS", lambda: ovs.appctl("fdb/show", "brint").stdout)]:
        wait_for(lambda: "00:00:00:00:00:00" in show(), timeout=15,
                 what=f"{who} to learn the zero MAC: {show()}")
    # Both count a received packet's bytes without the Ethernet header it is shown with:
    # 84 per ping (IPv4 and ICMP echo with 56 bytes of data).
    for who, dump in [("ferrovs", ferrovs_ofctl(site, "dump-ports", site.int, tun).stdout),
                      ("OVS", ovs.ofctl("dump-ports", "brint", "tun0").stdout)]:
        pkts, nbytes = rx_counts(dump)
        assert pkts >= 6 and nbytes == 84 * pkts, (who, dump)
    # Interface status: the option is taken, no error.
    assert site.vsctl("get", "Interface", tun, "error", check=False).stdout.strip() in ("[]", "")


@pytest.fixture
def site_any(request):
    need_root()
    require("ovs-vsctl", "ovs-appctl", "ovs-ofctl", "tcpdump")
    s = Site6() if request.param == "ipv6" else Site()
    yield s
    s.close()


@pytest.mark.parametrize("site_any", ["ipv4", "ipv6"], indirect=True)
def test_an_l3_port_takes_only_l3_packets_and_an_l2_port_only_ethernet(site_any):
    site = site_any
    site.start()
    site.underlay()
    l3, l2 = f"t{site.t}"[:15], f"e{site.t}"[:15]
    site.overlay("gre", {"remote_ip": site.under[0], "key": 77, "packet_type": "legacy_l3"})
    # A legacy_l2 port with the same remote and key beside it, as OVS allows.
    site.vsctl("add-port", site.int, l2, "--", "set", "Interface", l2, "type=gre",
               f"options:remote_ip={site.under[0]}", "options:key=77")
    int_mac = mac_of(site, site.sw, site.int)
    of = lambda *a: ferrovs_ofctl(site, *a)  # noqa: E731
    of("del-flows", site.int)
    of("add-flow", site.int, f"in_port={l3},actions=mod_dl_dst:{int_mac},LOCAL")
    of("add-flow", site.int, f"in_port={l2},actions=drop")
    of("add-flow", site.int, f"in_port=LOCAL,ip,actions=output:{l3}")
    phy_mac = mac_of(site, site.sw, site.phy)
    # The switch learns the peer's MAC (its own probe) once it has something to send.
    site.ns(site.sw, f"ip neigh replace {site.over[0]} lladdr 02:00:00:00:00:99 dev {site.int}")
    site.ns(site.sw, f"ping -c 1 -W 1 {site.over[0]}", check=False)
    wait_for(lambda: site.under[0] in site.appctl("tnl/neigh/show").stdout, timeout=15,
             what="the peer's MAC")

    def send(teb, ident, key=77):
        spec = [{"dst_mac": phy_mac, "src_ip": site.under[0], "dst_ip": site.under[1],
                 "key": key, "teb": teb, "inner_mac": int_mac, "inner_src": site.over[0],
                 "inner_dst": site.over[1], "id": ident}]
        site.ns(site.peer, f"{PY} {HELPERS / 'greio.py'} send '{json.dumps(spec)}'")

    cap = Capture(site)
    rx3, rx2 = tun_rx(site, l3), tun_rx(site, l2)
    # Ethernet in GRE: the legacy_l2 port's (dropped by its flow), nothing to the L3 one.
    send(True, 501)
    wait_for(lambda: tun_rx(site, l2) == rx2 + 1, timeout=10, what="the L2 port's packet")
    # An L3 packet: the legacy_l3 port's; the host answers through it.
    send(False, 502)
    wait_for(lambda: tun_rx(site, l3) == rx3 + 1, timeout=10, what="the L3 port's packet")
    # Without the legacy_l2 port, Ethernet in GRE goes nowhere (not to the L3 port).
    site.vsctl("del-port", site.int, l2)
    time.sleep(0.5)
    send(True, 503)
    # An L3 packet with a key no port has goes nowhere either.
    send(False, 504, key=78)
    time.sleep(1)
    assert tun_rx(site, l3) == rx3 + 1
    pkts = cap.packets()
    replies = [p for p in pkts if p["src"] == site.under[1]]
    # One echo reply, to the L3 request, sent as an L3 packet with the port's key.
    assert [(p["proto"], p["key"], p["ip_version"], p["icmp_type"], p["icmp_id"])
            for p in replies] == [(0x0800, 77, 4, 0, 502)], pkts
