"""Native tunnelling against Open vSwitch: ferrovs and Debian's ovs-vswitchd (userspace
datapath, private rundir, in the peer namespace) joined by Geneve, VXLAN and GRE.

Each side has the same configuration: an underlay bridge holding the host's underlay address
on its internal port, with the veth to the other side as its physical port, and an
integration bridge with the tunnel port and the overlay address on its internal port. Each
resolves the other's MAC by its own ARP request; traffic crosses both ways (ping, iperf3).

Over Geneve, both sides also carry OVN's tunnel option (class 0x0102, type 0x80, 4 bytes,
mapped to `tun_metadata0` with a TLV map): each sets its own value on what it sends and
forwards only packets carrying the other's, so a ping crosses only if each side matches the
option the other set.
"""

import os

import subprocess

import pytest

from conftest import need_root, require, run, wait_for, wait_listening
from test_tunnel import Site, ping_ok


class OvsPeer:
    """ovs-vswitchd and ovsdb-server for the peer namespace of `site`."""

    def __init__(self, site):
        self.site = site
        self.d = site.tmp / "ovs"
        self.d.mkdir()
        d = self.d
        run(["ovsdb-tool", "create", f"{d}/conf.db", "/usr/share/openvswitch/vswitch.ovsschema"])
        run(["ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock",
             f"--pidfile={d}/ovsdb-server.pid", f"--unixctl={d}/ovsdb-server.ctl", "--detach",
             f"--log-file={d}/ovsdb-server.log"])
        self.vsctl("--no-wait", "init")
        # Its bridges' OpenFlow sockets (`BR.mgmt`) go to the private rundir too.
        run(["ip", "netns", "exec", site.peer, "ovs-vswitchd", f"unix:{d}/db.sock",
             f"--pidfile={d}/vswitchd.pid", f"--unixctl={d}/vswitchd.ctl", "--detach",
             f"--log-file={d}/vswitchd.log", "--disable-system"],
            env=dict(os.environ, OVS_RUNDIR=str(d)))

    def vsctl(self, *args):
        return run(["ovs-vsctl", f"--db=unix:{self.d}/db.sock", "--timeout=20", *args])

    def ofctl(self, *args, check=True):
        return run(["ovs-ofctl", "--timeout=10", *map(str, args)], check=check,
                   env=dict(os.environ, OVS_RUNDIR=str(self.d)))

    def appctl(self, *args):
        return run(["ovs-appctl", "-t", f"{self.d}/vswitchd.ctl", *args], check=False)

    def configure(self, kind, vni, extra=()):
        s = self.site
        self.vsctl("add-br", "brphy", "--", "set", "Bridge", "brphy", "datapath_type=netdev",
                   "--", "add-port", "brphy", "eth0")
        s.ns(s.peer, f"ip addr del {s.under[0]}/24 dev eth0")
        s.ns(s.peer, f"ip addr add {s.under[0]}/24 dev brphy")
        s.ns(s.peer, "ip link set brphy up")
        self.vsctl("add-br", "brint", "--", "set", "Bridge", "brint", "datapath_type=netdev",
                   "--", "add-port", "brint", "tun0", "--", "set", "Interface", "tun0",
                   f"type={kind}", f"options:remote_ip={s.under[1]}", f"options:key={vni}",
                   *extra)
        s.ns(s.peer, "ip link set brint mtu 1400")
        s.ns(s.peer, f"ip addr add {s.over[0]}/24 dev brint")
        s.ns(s.peer, "ip link set brint up")

    def stop(self):
        for f in ["vswitchd.pid", "ovsdb-server.pid"]:
            p = self.d / f
            if p.exists():
                subprocess.run(["kill", p.read_text().strip()], check=False)


@pytest.fixture
def site_ovs():
    need_root()
    require("ovs-vsctl", "ovs-appctl", "ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ping",
            "iperf3", "ethtool")
    s = Site()
    o = OvsPeer(s)
    yield s, o
    o.stop()
    s.close()


@pytest.mark.parametrize("kind", ["geneve", "vxlan", "gre"])
def test_ovs_userspace_tunnel_interoperates(site_ovs, kind):
    site, ovs = site_ovs
    site.start()
    site.underlay()
    site.overlay(kind, {"remote_ip": site.under[0], "key": 4242})
    ovs.configure(kind, 4242)
    # The veth cannot carry UDP-tunnel GSO super-packets to an AF_PACKET reader on either side.
    site.ns(site.peer, "ethtool -K eth0 tso off gso off", check=False)
    site.ns(site.sw, f"ethtool -K {site.up} tso off gso off", check=False)
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
             what=f"ping to OVS over {kind}\nOVS: {ovs.appctl('tnl/neigh/show').stdout}"
                  f"{ovs.appctl('dpctl/dump-flows').stdout}\nferrovs:"
                  f"{site.appctl('tnl/neigh/show', check=False).stdout}\n{site.logtext()}")
    site.ns(site.peer, f"ping -c 3 -i 0.2 -W 2 {site.over[1]}")
    # OVS decapsulated ferrovs's packets in its datapath and learned ferrovs's MAC.
    flows = ovs.appctl("dpctl/dump-flows").stdout
    assert "tnl_pop" in flows and "tnl_push" in flows, flows
    assert site.under[1] in ovs.appctl("tnl/neigh/show").stdout
    srv = subprocess.Popen(["ip", "netns", "exec", site.peer, "iperf3", "-s", "-1", "-p", "5222",
                            "-B", site.over[0]],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(site.peer, 5222)
        r = site.ns(site.sw, f"iperf3 -c {site.over[0]} -p 5222 -t 2 -f m", check=False,
                    timeout=40)
        assert r.returncode == 0, r.stdout + r.stderr
        line = [x for x in r.stdout.splitlines() if "receiver" in x]
        assert line, r.stdout
        mbits = float(line[-1].split("Mbits/sec")[0].split()[-1])
        assert mbits > 1.0, r.stdout
        print(f"iperf3 ferrovs -> OVS over {kind}: {mbits} Mbit/s")
    finally:
        srv.kill()
        srv.wait(timeout=10)


def ferrovs_ofctl(site, *args, check=True):
    return run(["ovs-ofctl", "--timeout=10", *map(str, args)], check=check,
               env=dict(os.environ, OVS_RUNDIR=str(site.tmp)))


def start_pair(site, ovs, kind, vni, extra=()):
    """Both switches up, joined by a `kind` tunnel with key `vni` (`extra`: more Interface
    options, `options:K=V`, given to both), the veths without offloads an AF_PACKET reader
    cannot take; the name of ferrovs's tunnel port."""
    site.start()
    site.underlay()
    options = {"remote_ip": site.under[0], "key": vni}
    options.update(x.split(":", 1)[1].split("=", 1) for x in extra)
    site.overlay(kind, options)
    ovs.configure(kind, vni, extra)
    site.ns(site.peer, "ethtool -K eth0 tso off gso off", check=False)
    site.ns(site.sw, f"ethtool -K {site.up} tso off gso off", check=False)
    return f"t{site.t}"[:15]


def explicit_flows(site, ovs, tun):
    """Each integration bridge sends its host's packets to the tunnel and the tunnel's to
    its host (OVN's way: NORMAL resolves its port only when a packet is forwarded in
    ferrovs, so its megaflow shows NORMAL, not `tnl_push`)."""
    for ofctl, br, t in [(ovs.ofctl, "brint", "tun0"),
                         (lambda *a, **k: ferrovs_ofctl(site, *a, **k), site.int, tun)]:
        ofctl("del-flows", br)
        ofctl("add-flow", br, f"in_port=LOCAL,actions=output:{t}")
        ofctl("add-flow", br, f"in_port={t},actions=LOCAL")


OVN_OPTION = "{class=0x102,type=0x80,len=4}->tun_metadata0"


def option_flows(ofctl, br, tun, send, accept):
    """`br` sends what its host sends with option value `send` and delivers to its host only
    what arrives with `accept`."""
    ofctl("del-flows", br)
    ofctl("add-flow", br, f"priority=10,in_port=LOCAL,"
                          f"actions=set_field:{send:#x}->tun_metadata0,output:{tun}")
    ofctl("add-flow", br, f"priority=10,in_port={tun},tun_metadata0={accept:#x},actions=LOCAL")
    ofctl("add-flow", br, f"priority=5,in_port={tun},actions=drop")


def test_ovs_geneve_option_matched_both_ways(site_ovs):
    site, ovs = site_ovs
    tun = start_pair(site, ovs, "geneve", 4243)
    # A flow naming an unmapped tun_metadata field is refused, as by OVS.
    r = ferrovs_ofctl(site, "add-flow", site.int, "tun_metadata0=1,actions=drop", check=False)
    assert r.returncode != 0 and "NXFMFC_INVALID_TLV_FIELD" in r.stderr, r.stderr
    for ofctl, br in [(ovs.ofctl, "brint"), (lambda *a, **k: ferrovs_ofctl(site, *a, **k),
                                             site.int)]:
        ofctl("add-tlv-map", br, OVN_OPTION)
    assert "0x102" in ferrovs_ofctl(site, "dump-tlv-map", site.int).stdout
    # OVS sends 0x10002 and takes 0x20001; ferrovs the reverse.
    option_flows(ovs.ofctl, "brint", "tun0", 0x10002, 0x20001)
    option_flows(lambda *a, **k: ferrovs_ofctl(site, *a, **k), site.int, tun, 0x20001, 0x10002)
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
             what=f"ping to OVS with the Geneve option\nOVS: "
                  f"{ovs.appctl('dpctl/dump-flows').stdout}\nferrovs: "
                  f"{site.appctl('dpctl/dump-flows', check=False).stdout}\n{site.logtext()}")
    site.ns(site.peer, f"ping -c 3 -i 0.2 -W 2 {site.over[1]}")
    # OVS decapsulated ferrovs's option and matched it; ferrovs matched OVS's.
    ovs_flows = ovs.appctl("dpctl/dump-flows").stdout
    assert "class=0x102,type=0x80,len=4,0x20001" in ovs_flows, ovs_flows
    ours = site.appctl("dpctl/dump-flows").stdout
    assert "tun_metadata0=0x10002" in ours, ours
    assert "set(tunnel(geneve({class=0x102,type=0x80,len=4,0x20001})))" in ours, ours
    # Both switches keep and report matches on the option alike: at its mapped length, a mask
    # over all of it made exact (ovs-ofctl dump-flows of the same flows, text compared).
    same = ["priority=3,tun_metadata0=0x1/0xff,actions=drop",
            "priority=2,tun_metadata0=0x10002/0xffffffff,actions=drop",
            "priority=1,tun_metadata0=0x5,actions=drop"]
    for f in same:
        ovs.ofctl("add-flow", "brint", f)
        ferrovs_ofctl(site, "add-flow", site.int, f)

    def listed(text):
        return sorted(l.strip() for l in text.splitlines()
                      if l.strip().startswith(("priority=1,", "priority=2,", "priority=3,")))
    theirs = listed(ovs.ofctl("dump-flows", "--no-stats", "brint").stdout)
    assert len(theirs) == 3, theirs
    assert listed(ferrovs_ofctl(site, "dump-flows", "--no-stats", site.int).stdout) == theirs
    # A mapping in use cannot be deleted.
    r = ferrovs_ofctl(site, "del-tlv-map", site.int, OVN_OPTION, check=False)
    assert r.returncode != 0 and "NXTTMFC_INVALID_TLV_DEL" in r.stderr, r.stderr
    # With another value from ferrovs, OVS no longer delivers: the option is what it matched.
    option_flows(lambda *a, **k: ferrovs_ofctl(site, *a, **k), site.int, tun, 0x20009, 0x10002)
    site.appctl("dpctl/del-flows")
    ovs.appctl("dpctl/del-flows")
    ovs.appctl("fdb/flush")
    site.ns(site.sw, f"ip neigh flush dev {site.int}", check=False)
    assert not ping_ok(site, site.sw, site.over[0])
    # And the other way: OVS sending another value is not delivered by ferrovs.
    option_flows(lambda *a, **k: ferrovs_ofctl(site, *a, **k), site.int, tun, 0x20001, 0x10002)
    option_flows(ovs.ofctl, "brint", "tun0", 0x10009, 0x20001)
    site.appctl("dpctl/del-flows")
    ovs.appctl("dpctl/del-flows")
    site.ns(site.peer, f"ip neigh flush dev brint", check=False)
    r = site.ns(site.peer, f"ping -c 2 -i 0.2 -W 1 {site.over[1]}", check=False)
    assert r.returncode != 0, r.stdout


def dp_lines(text, needle):
    return [l for l in text.splitlines() if needle in l]


def packets(line):
    return int(line.split("packets:")[1].split(",")[0])


# Each tunnel kind's outer headers as both switches print them in `tnl_push`: (the port type,
# extra Interface options, tnl_pop's number, header size, header type, the text after the
# IPv4 header with `{vni}`). `vxlan-csum` is VXLAN with `csum=true`: the UDP checksum field
# of the template is 0xffff (filled per packet), where it is 0 without the option.
MEGAFLOW_KINDS = {
    "vxlan": ("vxlan", (), 4789, 50, 4, 17,
              "udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni={vni:#x})"),
    "geneve": ("geneve", (), 6081, 50, 5, 17, "udp(src=0,dst=6081,csum=0x0),geneve(vni={vni:#x})"),
    "gre": ("gre", (), 47, 42, 3, 47, "gre((flags=0x2000,proto=0x6558),key={vni:#x})"),
    "vxlan-csum": ("vxlan", ("options:csum=true",), 4789, 50, 4, 17,
                   "udp(src=0,dst=4789,csum=0xffff),vxlan(flags=0x8000000,vni={vni:#x})"),
}


@pytest.mark.parametrize("variant", list(MEGAFLOW_KINDS))
def test_megaflows_pop_and_push_tunnels_as_ovs(site_ovs, variant):
    """The megaflows carry the tunnel work, as OVS's userspace datapath's do: the underlay
    bridge's megaflow for tunnel packets to the switch's own address is `tnl_pop(PORT)`
    (matching the outer IP destination, protocol and, for UDP tunnels, the port), the
    decapsulated packets' megaflow on the integration bridge matches their key and outer
    addresses, and output to the tunnel port is `tnl_push(...)` with the outer headers sent.
    Both switches run the same setup and ping; their dumps are compared field by field, and
    both headers must read exactly as the table above says (GRE and `csum=true` included)."""
    site, ovs = site_ovs
    kind, extra, port, size, vtype, proto_nr, l4 = MEGAFLOW_KINDS[variant]
    vni = 4244
    tun = start_pair(site, ovs, kind, vni, extra)
    l4 = l4.format(vni=vni)
    explicit_flows(site, ovs, tun)
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
             what=f"ping to OVS\nOVS: {ovs.appctl('dpctl/dump-flows').stdout}\nferrovs:"
                  f"{site.appctl('dpctl/dump-flows', check=False).stdout}\n{site.logtext()}")
    site.ns(site.sw, f"ping -c 5 -i 0.2 -W 2 {site.over[0]}")
    site.ns(site.peer, f"ping -c 5 -i 0.2 -W 2 {site.over[1]}")
    theirs = ovs.appctl("dpctl/dump-flows").stdout
    ours = site.appctl("dpctl/dump-flows").stdout
    why = f"OVS:\n{theirs}\nferrovs:\n{ours}"
    local, remote = site.under[1], site.under[0]
    # Decapsulation: OVS's underlay megaflow pops; so does ferrovs's, with the same match.
    o_pop = dp_lines(theirs, "actions:tnl_pop(")
    o_match = (f"ipv4(dst={remote},proto=17,frag=no),udp(dst={port})" if proto_nr == 17
               else f"ipv4(dst={remote},proto=47,frag=no)")
    assert any(o_match in l and packets(l) >= 5 for l in o_pop), why
    f_pop = dp_lines(ours, f"actions:tnl_pop({port})")
    f_match = ["udp", f"tp_dst={port}"] if proto_nr == 17 else ["nw_proto=47"]
    assert any(f"nw_dst={local}" in l and all(m in l for m in f_match)
               and "nw_frag=0x0" in l and packets(l) >= 5 for l in f_pop), why
    # The decapsulated packets' megaflows match the tunnel key and outer addresses.
    o_tun = dp_lines(theirs, f"tunnel(tun_id={vni:#x},src={local},dst={remote},")
    assert any(packets(l) >= 5 for l in o_tun), why
    f_tun = dp_lines(ours, f"tun_id={vni:#x},tun_src={remote},tun_dst={local}")
    assert any(packets(l) >= 5 for l in f_tun), why
    # Encapsulation: the outer headers pushed, as OVS prints them.
    mac = lambda ns, dev: site.ns(ns, f"cat /sys/class/net/{dev}/address").stdout.strip()
    peer_mac, our_mac = mac(site.peer, "brphy"), mac(site.sw, site.phy)
    want = (f"header(size={size},type={vtype},eth(dst={peer_mac},src={our_mac},"
            f"dl_type=0x0800),ipv4(src={local},dst={remote},proto={proto_nr},tos=0,ttl=64,"
            f"frag=0x4000),{l4})")
    f_push = dp_lines(ours, f"actions:tnl_push(tnl_port({port}),{want},out_port({site.phy}))")
    assert any(packets(l) >= 5 for l in f_push), why
    # OVS's header to ferrovs reads the same (its addresses the other way round).
    theirs_want = (f"header(size={size},type={vtype},eth(dst={our_mac},src={peer_mac},"
                   f"dl_type=0x0800),ipv4(src={remote},dst={local},proto={proto_nr},tos=0,"
                   f"ttl=64,frag=0x4000),{l4})")
    assert any(theirs_want in l for l in dp_lines(theirs, "tnl_push(")), why
    # A neighbour change reaches the megaflows (revalidated, as OVS's are): with another
    # MAC set for the peer, the next packets get a megaflow pushing it.
    fake = "02:00:00:00:0f:0e"
    assert site.appctl("tnl/neigh/set", site.phy, remote, fake).stdout.strip() == "OK"

    def pushes_fake():
        site.ns(site.sw, f"ping -c 1 -W 1 {site.over[0]}", check=False)
        return f"eth(dst={fake},src={our_mac}" in site.appctl("dpctl/dump-flows").stdout
    wait_for(pushes_fake, timeout=15, what=f"a megaflow pushing {fake}\n"
                                           f"{site.appctl('dpctl/dump-flows').stdout}")
    flows = site.appctl("dpctl/dump-flows").stdout
    assert not [l for l in dp_lines(flows, f"eth(dst={peer_mac},src={our_mac}")
                if "tnl_push" in l], flows


# The tunnel commands, each answered by ovs-vswitchd 3.1 and ferrovsd in turn ({br}: each
# one's underlay bridge, which has 10.9.0.1/24 and fd7f:9::1/64 on its internal port).
TUNNEL_COMMANDS = [
    "ovs/route/add 10.8.0.0/16 {br} 10.9.0.254",
    "ovs/route/add 10.8.0.0/16 {br}",
    "ovs/route/add 10.6.0.0/16 nosuch9 10.9.0.254",
    "ovs/route/add 10.6.0.0/16 {br} 10.5.0.1",
    "ovs/route/add 10.6.0.0/33 {br}",
    "ovs/route/add bogus {br}",
    "ovs/route/add 10.6.0.0/16",
    "ovs/route/add 10.6.0.0/16 {br} bogus",
    "ovs/route/add 10.6.0.0/16 {br} fd7f:9::2",
    "ovs/route/add fd7f:8::/64 {br} fd7f:9::2",
    "ovs/route/add fd7f:8::/64 {br} 10.9.0.254",
    "ovs/route/add 10.4.0.0/16 {br} pkt_mark=7 10.9.0.254",
    "ovs/route/add 10.6.0.0/16 {br} 10.9.0.254 pkt_mark=0x10",
    "ovs/route/add 10.3.0.0/16 {br} 0.0.0.0",
    "ovs/route/add 10.9.0.77/24 {br}",
    "ovs/route/add 10.7.0.5 {br} 10.9.0.254",
    "ovs/route/add 10.6.0.0/16 {br} 10.9.0.254 a b",
    "ovs/route/lookup 10.7.0.5",
    "ovs/route/lookup 10.8.1.1",
    "ovs/route/lookup 10.9.0.5",
    "ovs/route/lookup 10.9.0.5/32",
    "ovs/route/lookup fd7f:8::5",
    "ovs/route/lookup 10.6.0.5 pkt_mark=16",
    "ovs/route/lookup 10.6.0.5",
    "ovs/route/lookup 10.9.0.5 pkt_mark=x",
    "ovs/route/lookup 10.9.0.0/24",
    "ovs/route/lookup",
    "ovs/route/show x",
    "ovs/route/del 10.6.0.0/16 pkt_mark=16",
    "ovs/route/del 10.6.0.0/16",
    "ovs/route/del a b c",
    "tnl/neigh/set {br} 10.9.0.7 zz",
    "tnl/neigh/set {br} bogus 00:11:22:33:44:55",
    "tnl/neigh/set a b",
    "tnl/arp/set {br} 10.9.0.7 00:11:22:33:44:55",
    "tnl/neigh/show",
    "tnl/neigh/aging",
    "tnl/neigh/aging 0",
    "tnl/neigh/aging 3601",
    "tnl/arp/aging 120",
    "tnl/neigh/aging",
    "tnl/arp/flush",
    "tnl/arp/show",
    "tnl/neigh/flush x",
    "tnl/egress_port_range",
    "tnl/egress_port_range 0 70000",
    "tnl/egress_port_range 9 x",
    "tnl/egress_port_range 300 200",
    "tnl/egress_port_range",
    "tnl/ports/show x y",
    # The source address is looked for with the prefix's address as typed.
    "ovs/route/add 10.9.0.77/8 {br}",
    "ovs/route/add 10.0.0.0/8 {br}",
]


def test_tunnel_commands_answer_as_ovs_vswitchd():
    """The route, neighbour and tunnel settings commands: the same answers (and the same
    success or failure) from ferrovsd as from ovs-vswitchd 3.1, on bridges with the same
    addresses; and the routes added end up the same in `ovs/route/show`."""
    need_root()
    require("ovs-vsctl", "ovs-appctl", "ovs-vswitchd", "ovsdb-server", "ovsdb-tool")
    site = Site()
    ovs = None
    try:
        ovs = OvsPeer(site)
        site.start()
        site.vsctl("add-br", site.phy)
        ovs.vsctl("add-br", "brphy", "--", "set", "Bridge", "brphy", "datapath_type=netdev")
        for ns, br in ((site.sw, site.phy), (site.peer, "brphy")):
            site.ns(ns, f"ip addr add 10.9.0.1/24 dev {br}")
            site.ns(ns, f"ip -6 addr add fd7f:9::1/64 dev {br} nodad")
            site.ns(ns, f"ip link set {br} up")
        both = {"ovs": (ovs.appctl, "brphy"),
                "ferrovs": (lambda *a: site.appctl(*a, check=False), site.phy)}
        answers = {}
        for who, (appctl, br) in both.items():
            said = []
            for c in TUNNEL_COMMANDS:
                r = appctl(*c.format(br=br).split())
                text = r.stdout if r.returncode == 0 else r.stderr.splitlines()[0]
                said.append((c, r.returncode == 0, text.strip().replace(br, "BR")))
            shown = appctl("ovs/route/show").stdout.replace(br, "BR")
            said.append(("User routes", True,
                          sorted(l for l in shown.splitlines() if l.startswith("User:"))))
            answers[who] = said
        for mine, theirs in zip(answers["ferrovs"], answers["ovs"]):
            assert mine == theirs, (mine, theirs)
        assert len(answers["ferrovs"]) == len(answers["ovs"])
        # What OVS answered, in short: 5 routes stayed, and both kinds of answer were seen.
        assert len(answers["ovs"][-1][2]) == 5, answers["ovs"][-1]
        assert sum(1 for a in answers["ovs"] if not a[1]) >= 25, answers["ovs"]
    finally:
        if ovs:
            ovs.stop()
        site.close()


def oam_flows(ofctl, br, tun, send_oam, want_oam):
    """`br` sends with the OAM flag (Geneve's O bit) when `send_oam`, and delivers only what
    arrives with the flag set (`want_oam`) or clear."""
    ofctl("del-flows", br)
    load = "load:1->NXM_NX_TUN_FLAGS[0]," if send_oam else ""
    ofctl("add-flow", br, f"priority=10,in_port=LOCAL,actions={load}output:{tun}")
    flag = "+oam" if want_oam else "-oam"
    ofctl("add-flow", br, f"priority=10,in_port={tun},tun_flags={flag},actions=LOCAL")
    ofctl("add-flow", br, f"priority=5,in_port={tun},actions=drop")


def test_ovs_geneve_oam_flag_matched(site_ovs):
    """`tun_flags`: OVS sets the OAM flag on what it sends (Geneve's O bit), ferrovs matches
    `tun_flags=+oam` on what it receives, and without the flag nothing is delivered; then
    ferrovs sets it and OVS matches it; the flows read back through ovs-ofctl as OVS's own
    do."""
    site, ovs = site_ovs
    tun = start_pair(site, ovs, "geneve", 4245)
    ours = lambda *a, **k: ferrovs_ofctl(site, *a, **k)
    oam_flows(ovs.ofctl, "brint", "tun0", send_oam=True, want_oam=False)
    oam_flows(ours, site.int, tun, send_oam=False, want_oam=True)
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
             what=f"ping to OVS with OAM replies\nOVS: "
                  f"{ovs.appctl('dpctl/dump-flows').stdout}\nferrovs: "
                  f"{site.appctl('dpctl/dump-flows', check=False).stdout}\n{site.logtext()}")
    flows = site.appctl("dpctl/dump-flows").stdout
    assert any("tun_flags=+oam" in l and packets(l) >= 1 for l in flows.splitlines()), flows
    # The same flows read back alike from both switches.
    same = ["priority=3,tun_flags=+oam,actions=drop", "priority=2,tun_flags=-oam,actions=drop",
            "priority=1,tun_gbp_id=291,tun_gbp_flags=0x40,actions=drop",
            "priority=4,in_port=99,actions=set_field:0x8->tun_gbp_flags,load:1->NXM_NX_TUN_FLAGS[0],"
            "set_field:7->tun_gbp_id,output:LOCAL"]

    def listed(text):
        lines = (l.strip().removeprefix("reset_counts ") for l in text.splitlines())
        return sorted(l for l in lines if l.startswith(("priority=1,", "priority=2,",
                                                          "priority=3,", "priority=4,")))
    for f in same:
        ovs.ofctl("add-flow", "brint", f)
        ours("add-flow", site.int, f)
    for v in ["OpenFlow10", "OpenFlow13", "OpenFlow15"]:
        theirs = listed(ovs.ofctl("-O", v, "dump-flows", "--no-stats", "brint").stdout)
        assert len(theirs) == 4, (v, theirs)
        assert listed(ours("-O", v, "dump-flows", "--no-stats", site.int).stdout) == theirs, v
    # The other way: ferrovs sets the flag on what it sends (Geneve's O bit, so the output
    # is not a `tnl_push` of the plain header) and OVS delivers only what carries it.
    oam_flows(ovs.ofctl, "brint", "tun0", send_oam=True, want_oam=True)
    oam_flows(ours, site.int, tun, send_oam=True, want_oam=True)
    site.appctl("dpctl/del-flows")
    ovs.appctl("dpctl/del-flows")
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=20,
             what=f"ping to OVS, OAM both ways\nOVS: "
                  f"{ovs.appctl('dpctl/dump-flows').stdout}\nferrovs: "
                  f"{site.appctl('dpctl/dump-flows', check=False).stdout}\n{site.logtext()}")
    site.ns(site.sw, f"ping -c 3 -i 0.2 -W 2 {site.over[0]}")
    flows = site.appctl("dpctl/dump-flows").stdout
    assert any("set(tunnel(flags(+oam)))" in l and packets(l) >= 1
               for l in flows.splitlines()), flows
    theirs = ovs.appctl("dpctl/dump-flows").stdout
    assert any("tunnel(" in l and "oam" in l and "actions:" in l and packets(l) >= 1
               for l in theirs.splitlines() if "tnl_push" not in l), theirs
    # Without the flag from OVS, ferrovs delivers nothing.
    oam_flows(ovs.ofctl, "brint", "tun0", send_oam=False, want_oam=False)
    site.appctl("dpctl/del-flows")
    ovs.appctl("dpctl/del-flows")
    site.ns(site.sw, f"ip neigh flush dev {site.int}", check=False)
    assert not ping_ok(site, site.sw, site.over[0])
