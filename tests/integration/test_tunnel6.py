"""Native tunnelling over an IPv6 underlay, against the Linux kernel's `vxlan` device and
against Open vSwitch 3.1's userspace datapath (Geneve; this machine's kernel has no
`geneve`).

The layout is test_tunnel.py's (a switch namespace with an underlay bridge and an integration
bridge, a peer namespace across a veth), with IPv6 underlay addresses (added with `nodad`, so
they are usable at once). Traffic crosses the overlay both ways (ping, then iperf3), which
only works if the switch finds the route in the kernel's IPv6 table, resolves the next hop by
its own Neighbor Solicitation, encapsulates with an outer IPv6 header and decapsulates the
peer's IPv6 packets.

UDP checksums: over IPv6 the switch fills them with `csum=true` and without it, as OVS 3.1
does (its `tnl_push` header marks the field 0xffff either way, compared below); the kernel's
`vxlan` device here has no `udp6zerocsumrx`, so it drops any packet with a zero sum, and
both settings are run against it.
"""

import subprocess

import pytest

from conftest import need_root, require, run, wait_for
from test_tunnel import Site, overlay_traffic, ping_ok
from test_tunnel_ovs import OvsPeer, explicit_flows


class Site6(Site):
    """test_tunnel's site with an IPv6 underlay."""

    def __init__(self):
        super().__init__()
        n = int(self.t) % 60000 + 1
        self.under = (f"fd7e:{n:x}::1", f"fd7e:{n:x}::2")
        self.ns(self.peer, f"ip -6 addr add {self.under[0]}/64 dev eth0 nodad")

    def underlay(self):
        self.vsctl("add-br", self.phy, "--", "add-port", self.phy, self.up)
        self.ns(self.sw, f"ip -6 addr add {self.under[1]}/64 dev {self.phy} nodad")
        self.ns(self.sw, f"ip link set {self.phy} up")

    def peer_vxlan(self, vni):
        self.ns(self.peer, f"ip link add vx type vxlan id {vni} remote {self.under[1]} "
                           f"local {self.under[0]} dstport 4789 dev eth0")
        self.ns(self.peer, "ip link set vx mtu 1400")
        self.ns(self.peer, "ethtool -K eth0 tso off gso off", check=False)
        self.ns(self.peer, f"ip addr add {self.over[0]}/24 dev vx")
        self.ns(self.peer, "ip link set vx up")


@pytest.fixture
def site6():
    require("ovs-vsctl", "ovs-appctl", "ovs-ofctl", "ping", "iperf3", "ethtool")
    s = Site6()
    yield s
    s.close()


@pytest.mark.parametrize("csum", ["true", "false"])
def test_kernel_vxlan_over_ipv6(site6, csum):
    site = site6
    site.start()
    site.underlay()
    site.overlay("vxlan", {"remote_ip": site.under[0], "key": 5101, "csum": csum})
    site.peer_vxlan(5101)
    overlay_traffic(site)
    peer, me = site.under
    # The peer's MAC came from the Neighbor Advertisement answering the switch's own
    # solicitation.
    neigh = site.appctl("tnl/neigh/show").stdout
    assert peer in neigh and site.phy in neigh, neigh
    look = site.appctl("ovs/route/lookup", peer).stdout
    assert look == f"src {me}\ngateway ::\ndev {site.phy}\n", look
    routes = site.appctl("ovs/route/show").stdout
    assert f"Cached: {me}/128 dev {site.phy} SRC {me} local" in routes, routes
    prefix = peer.rsplit("::", 1)[0] + "::"
    assert f"Cached: {prefix}/64 dev {site.phy} SRC {me}" in routes, routes


def test_remote_ip_flow_with_tun_ipv6_dst(site6):
    """remote_ip=flow over IPv6: flows choose the outer destination with
    set_field:IP->tun_ipv6_dst and match received packets on tun_ipv6_src/dst; ovs-ofctl
    dumps them as OVS prints them. Routes and neighbours set by hand take IPv6 too."""
    site = site6
    site.start()
    site.underlay()
    site.overlay("vxlan", {"remote_ip": "flow", "key": 5103, "csum": "true"})
    site.peer_vxlan(5103)
    of = ["ovs-ofctl", "-O", "OpenFlow13"]
    mgmt = f"unix:{site.tmp}/{site.int}.mgmt"
    tport = f"t{site.t}"[:15]
    peer, me = site.under
    run([*of, "del-flows", mgmt])
    run([*of, "add-flow", mgmt,
         f"in_port=LOCAL,actions=set_field:{peer}->tun_ipv6_dst,output:{tport}"])
    run([*of, "add-flow", mgmt,
         f"in_port={tport},tun_ipv6_src={peer},tun_ipv6_dst={me},actions=LOCAL"])
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=15,
             what=f"ping over remote_ip=flow\n{site.appctl('tnl/neigh/show', check=False).stdout}"
                  f"\n{site.logtext()}")
    site.ns(site.peer, f"ping -c 2 -i 0.2 -W 2 {site.over[1]}")
    # The datapath flows match on the IPv6 tunnel addresses and set the remote.
    flows = site.appctl("dpctl/dump-flows").stdout
    assert f"tun_ipv6_src={peer},tun_ipv6_dst={me}," in flows, flows
    assert f"set(tunnel(ipv6_dst={peer}))" in flows, flows
    dump = run([*of, "dump-flows", mgmt, "--no-stats"]).stdout
    assert f"tun_ipv6_src={peer},tun_ipv6_dst={me},in_port=" in dump, dump
    assert f"set_field:{peer}->tun_ipv6_dst" in dump, dump
    # The same flow through OpenFlow 1.0 (ovs-ofctl sends the set_field as NXM loads).
    run(["ovs-ofctl", "-O", "OpenFlow10", "add-flow", mgmt,
         f"priority=5,tun_ipv6_src={peer}/64,actions=drop"])
    dump10 = run(["ovs-ofctl", "-O", "OpenFlow10", "dump-flows", mgmt, "--no-stats"]).stdout
    assert f"priority=5,tun_ipv6_src={peer.rsplit('::', 1)[0]}::/64 actions=drop" in dump10, \
        dump10
    # Another outer source does not take the peer's packets.
    run([*of, "del-flows", mgmt, f"in_port={tport}"])
    run([*of, "add-flow", mgmt, f"in_port={tport},tun_ipv6_src=fd7f::1,actions=LOCAL"])
    assert not ping_ok(site, site.sw, site.over[0])
    # Routes and neighbours by hand.
    assert site.appctl("ovs/route/add", "fd7f:1::/64", site.phy, peer).stdout.strip() == "OK"
    routes = site.appctl("ovs/route/show").stdout
    assert f"User: fd7f:1::/64 dev {site.phy} GW {peer}" in routes, routes
    look = site.appctl("ovs/route/lookup", "fd7f:1::5").stdout
    assert f"gateway {peer}\ndev {site.phy}\n" in look, look
    assert site.appctl("tnl/neigh/set", site.phy, "fd7f:1::99",
                       "aa:bb:cc:00:11:22").stdout.strip() == "OK"
    neigh = site.appctl("tnl/neigh/show").stdout
    assert "fd7f:1::99" in neigh and "aa:bb:cc:00:11:22" in neigh, neigh


def test_ovs_userspace_geneve_over_ipv6():
    """ferrovs and ovs-vswitchd 3.1 (userspace) over Geneve with an IPv6 underlay."""
    need_root()
    require("ovs-vsctl", "ovs-appctl", "ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ping",
            "ethtool")
    site = Site6()
    ovs = None
    try:
        ovs = OvsPeer(site)
        site.start()
        site.underlay()
        peer, me = site.under
        ovs.vsctl("add-br", "brphy", "--", "set", "Bridge", "brphy", "datapath_type=netdev",
                  "--", "add-port", "brphy", "eth0")
        site.ns(site.peer, f"ip -6 addr del {peer}/64 dev eth0")
        site.ns(site.peer, f"ip -6 addr add {peer}/64 dev brphy nodad")
        site.ns(site.peer, "ip link set brphy up")
        ovs.vsctl("add-br", "brint", "--", "set", "Bridge", "brint", "datapath_type=netdev",
                  "--", "add-port", "brint", "tun0", "--", "set", "Interface", "tun0",
                  "type=geneve", f"options:remote_ip={me}", "options:key=4244")
        site.ns(site.peer, "ip link set brint mtu 1400")
        site.ns(site.peer, f"ip addr add {site.over[0]}/24 dev brint")
        site.ns(site.peer, "ip link set brint up")
        # The tunnel port last: its first solicitation must find the address on brphy, not
        # on the veth it was on a moment ago.
        site.overlay("geneve", {"remote_ip": peer, "key": 4244})
        site.ns(site.peer, "ethtool -K eth0 tso off gso off", check=False)
        site.ns(site.sw, f"ethtool -K {site.up} tso off gso off", check=False)
        wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
                 what=f"ping to OVS over IPv6 Geneve\nOVS: "
                      f"{ovs.appctl('tnl/neigh/show').stdout}"
                      f"{ovs.appctl('dpctl/dump-flows').stdout}\nferrovs:"
                      f"{site.appctl('tnl/neigh/show', check=False).stdout}\n{site.logtext()}")
        site.ns(site.peer, f"ping -c 3 -i 0.2 -W 2 {site.over[1]}")
        # OVS popped ferrovs's IPv6 Geneve packets and pushed its own.
        flows = ovs.appctl("dpctl/dump-flows").stdout
        assert "tnl_pop" in flows and "tnl_push" in flows, flows
        assert f"ipv6(src={peer},dst={me}" in flows, flows
        assert me in ovs.appctl("tnl/neigh/show").stdout
        assert peer in site.appctl("tnl/neigh/show").stdout
        # The outer headers each switch pushes, as `tnl_push(...,header(...),...)` shows
        # them: with explicit output to the tunnel port (NORMAL's megaflow shows NORMAL in
        # ferrovs), both headers read the same once each side's own addresses are named
        # alike: OVS is the oracle for the IPv6 header's text.
        explicit_flows(site, ovs, f"t{site.t}"[:15])
        wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
                 what=f"ping with explicit flows\nOVS: {ovs.appctl('dpctl/dump-flows').stdout}"
                      f"\nferrovs: {site.appctl('dpctl/dump-flows', check=False).stdout}")
        site.ns(site.peer, f"ping -c 3 -i 0.2 -W 2 {site.over[1]}")
        mac = lambda ns, dev: site.ns(ns, f"cat /sys/class/net/{dev}/address").stdout.strip()
        ovs_mac, our_mac = mac(site.peer, "brphy"), mac(site.sw, site.phy)

        def header(dump, names):
            lines = [l for l in dump.splitlines() if "tnl_push(" in l and "packets:0," not in l]
            assert lines, dump
            h = lines[0].split("header(", 1)[1].split(",out_port(", 1)[0]
            for value, name in names:
                h = h.replace(value, name)
            return h
        theirs = header(ovs.appctl("dpctl/dump-flows").stdout,
                        [(peer, "SELF"), (me, "OTHER"), (ovs_mac, "SELF_MAC"),
                         (our_mac, "OTHER_MAC")])
        ours = header(site.appctl("dpctl/dump-flows").stdout,
                      [(me, "SELF"), (peer, "OTHER"), (our_mac, "SELF_MAC"),
                       (ovs_mac, "OTHER_MAC")])
        assert ours == theirs, f"\nOVS:     {theirs}\nferrovs: {ours}"
        assert "ipv6(src=SELF,dst=OTHER," in ours and "geneve(vni=0x1094)" in ours, ours
        # Routes by hand, added and removed on both switches with the same commands: the
        # same answers (OVS is the oracle), each switch with its own bridge and gateway.
        both = {"ovs": (lambda *a: ovs.appctl(*a), "brphy", me),
                "ferrovs": (lambda *a: site.appctl(*a, check=False), site.phy, peer)}
        answers = {}
        for who, (appctl, br, gw) in both.items():
            said = []

            def ask(*a):
                r = appctl(*a)
                said.append((a[0], a[1:2], r.returncode,
                             r.stdout.strip() or r.stderr.strip().splitlines()[0]))
                return r
            ask("ovs/route/add", "fd7f:5::9/64", br, gw, "pkt_mark=7")
            shown = appctl("ovs/route/show").stdout
            assert f"User: fd7f:5::/64 MARK 7 dev {br} GW {gw}" in shown, (who, shown)
            ask("ovs/route/del", "fd7f:5::/64")
            ask("ovs/route/del", "fd7f:5::1/64", "pkt_mark=7")
            assert "fd7f:5::" not in appctl("ovs/route/show").stdout, who
            ask("ovs/route/del", "fd7f:5::/64", "pkt_mark=7")
            ask("ovs/route/del", "fd7f:5::/200")
            ask("ovs/route/del", "fd7f:5::/64", "pkt_mark=x")
            answers[who] = said
        assert answers["ferrovs"] == answers["ovs"], answers
        assert [a[2] for a in answers["ovs"]] == [0, 2, 0, 2, 2, 2], answers
    finally:
        if ovs:
            ovs.stop()
        site.close()


def test_ipv6_remote_with_ipv4_local_is_refused(site6):
    site = site6
    site.start()
    port = f"fvz{site.t}"[:15]
    site.vsctl("add-br", f"fvq{site.t}"[:15], "--", "add-port", f"fvq{site.t}"[:15], port,
               "--", "set", "Interface", port, "type=vxlan", "options:remote_ip=fd7e::1",
               "options:local_ip=10.0.0.1")
    wait_for(lambda: site.vsctl("get", "Interface", port, "error").stdout.strip()
             not in ("[]", ""), what="error for mixed families")
    assert "local_ip" in site.vsctl("get", "Interface", port, "error").stdout
    # An IPv6-only port opens without error (it was refused before IPv6 underlays).
    good = f"fvw{site.t}"[:15]
    site.vsctl("add-port", f"fvq{site.t}"[:15], good, "--", "set", "Interface", good,
               "type=gre", "options:remote_ip=fd7e::1")
    wait_for(lambda: site.vsctl("get", "Interface", good, "ofport").stdout.strip()
             not in ("[]", "-1", ""), what="ip6gre port ofport")
    assert site.vsctl("get", "Interface", good, "error").stdout.strip() == "[]"
