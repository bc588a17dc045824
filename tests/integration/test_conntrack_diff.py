"""ferrovs's connection tracking against Debian's OVS 3.1 userspace conntrack (dummy
datapath, `netdev-dummy/receive` on both; helpers/ovsdiff.py runs the two switches): the
same ct rule set, the same packet sequence, and every frame every port sends must be the
same. The rules turn each packet's ct_state into where it goes and the DSCP it leaves with,
so the comparison is of ct_state decisions: new, established in each direction, related
ICMP errors, invalid (out-of-window TCP, bad checksums, replies nobody asked for) and
untracked, over TCP (handshake, data, teardown), UDP, ICMP and IPv6."""

import sys
import time
from pathlib import Path

from conftest import BIN, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

RULES = [
    "table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)",
    "table=0,priority=100,ipv6,ct_state=-trk,actions=ct(table=1)",
    "table=0,priority=0,actions=drop",
    "table=1,priority=100,ct_state=+inv+trk,actions=output:4",
    "table=1,priority=90,ip,ct_state=+rel+trk,actions=set_field:16->ip_dscp,output:4",
    "table=1,priority=90,ipv6,ct_state=+rel+trk,actions=set_field:16->ip_dscp,output:4",
    "table=1,priority=80,ip,ct_state=+new+trk,actions=ct(commit),output:3",
    "table=1,priority=80,ipv6,ct_state=+new+trk,actions=ct(commit),output:3",
    "table=1,priority=70,ip,ct_state=+est+rpl+trk,actions=set_field:8->ip_dscp,output:3",
    "table=1,priority=70,ipv6,ct_state=+est+rpl+trk,actions=set_field:8->ip_dscp,output:3",
    "table=1,priority=60,ip,ct_state=+est-rpl+trk,actions=set_field:4->ip_dscp,output:3",
    "table=1,priority=60,ipv6,ct_state=+est-rpl+trk,actions=set_field:4->ip_dscp,output:3",
    "table=1,priority=0,actions=output:2",
]


def sequence():
    """(in_port, frame, what) for the whole conversation, in order."""
    from scapy.all import ICMP, IP, UDP, Ether, IPv6, TCP, raw

    C, S = "02:00:00:00:00:01", "02:00:00:00:00:02"
    c, s = "10.0.0.1", "10.0.0.2"
    c6, s6 = "fd00::1", "fd00::2"

    def up(p):  # client -> server, port 1
        return 1, raw(Ether(src=C, dst=S) / p)

    def down(p):  # server -> client, port 2
        return 2, raw(Ether(src=S, dst=C) / p)

    udp_query = IP(src=c, dst=s, id=9) / UDP(sport=5000, dport=53) / b"query"
    bad_csum = Ether(src=C, dst=S) / IP(src=c, dst=s) / TCP(sport=40009, dport=80,
                                                             flags="S", seq=1, chksum=0x1234)
    seq = [
        (*up(IP(src=c, dst=s) / TCP(sport=40000, dport=80, flags="S", seq=1000,
                                    window=65535)), "tcp syn"),
        (*down(IP(src=s, dst=c) / TCP(sport=80, dport=40000, flags="SA", seq=5000, ack=1001,
                                      window=65535)), "tcp syn-ack"),
        (*up(IP(src=c, dst=s) / TCP(sport=40000, dport=80, flags="A", seq=1001, ack=5001,
                                    window=65535)), "tcp ack"),
        (*up(IP(src=c, dst=s) / TCP(sport=40000, dport=80, flags="PA", seq=1001, ack=5001,
                                    window=65535) / b"hello"), "tcp data"),
        (*down(IP(src=s, dst=c) / TCP(sport=80, dport=40000, flags="A", seq=5001, ack=1006,
                                      window=65535)), "tcp data ack"),
        (*up(IP(src=c, dst=s) / TCP(sport=40000, dport=80, flags="PA", seq=1001 + 50_000_000,
                                    ack=5001, window=65535) / b"x"), "tcp out of window"),
        (*down(IP(src=s, dst=c) / TCP(sport=81, dport=40001, flags="S", seq=77,
                                      window=65535)), "tcp syn from the server side"),
        (*up(IP(src=c, dst=s) / TCP(sport=40002, dport=80, flags="A", seq=5, ack=5,
                                    window=65535)), "tcp ack, no connection"),
        (1, raw(bad_csum), "tcp syn, bad checksum"),
        (*up(udp_query), "udp query"),
        (*down(IP(src=s, dst=c) / UDP(sport=53, dport=5000) / b"answer"), "udp answer"),
        (*down(IP(src=s, dst=c) / ICMP(type=3, code=3) / raw(udp_query)[:28]),
         "icmp port unreachable for the query"),
        (*up(IP(src=c, dst=s) / ICMP(type=8, id=7, seq=1) / b"ping"), "icmp echo"),
        (*down(IP(src=s, dst=c) / ICMP(type=0, id=7, seq=1) / b"ping"), "icmp echo reply"),
        (*down(IP(src=s, dst=c) / ICMP(type=0, id=99, seq=1) / b"ping"),
         "icmp echo reply nobody asked for"),
        (*up(IPv6(src=c6, dst=s6) / UDP(sport=6000, dport=7000) / b"six"), "udp6"),
        (*down(IPv6(src=s6, dst=c6) / UDP(sport=7000, dport=6000) / b"six"), "udp6 answer"),
        (*up(IP(src=c, dst=s) / TCP(sport=40000, dport=80, flags="FA", seq=1006, ack=5001,
                                    window=65535)), "tcp fin"),
        (*down(IP(src=s, dst=c) / TCP(sport=80, dport=40000, flags="FA", seq=5001, ack=1007,
                                      window=65535)), "tcp fin-ack"),
        (*up(IP(src=c, dst=s) / TCP(sport=40000, dport=80, flags="A", seq=1007, ack=5002,
                                    window=65535)), "tcp last ack"),
    ]
    return seq


def compare(rules, seq):
    """Runs `seq` through OVS and ferrovs with `rules`; the frames that went different ways
    (described), and where each frame went on OVS (what -> {port: frames})."""
    import shutil
    import tempfile

    work = tempfile.mkdtemp(prefix="ctdiff-")
    switches = []
    try:
        switches = [ovsdiff.Ovs(work), ovsdiff.Ferrovs(work, BIN)]
        for sw in switches:
            ok, err = ovsdiff.install(sw, rules, work)
            assert ok, (sw.name, err)
            ovsdiff.outputs(sw)
        bad = []
        forwarded = {}
        for port, frame, what in seq:
            for sw in switches:
                sw.receive(port, frame)
            got = ovsdiff.settled_outputs(switches, quiet=0.25, least=0.4, most=3.0)
            where = {p: len(fs) for p, fs in got[0].items() if fs}
            forwarded[what] = where
            if got[0] != got[1]:
                bad.append(f"{what}: in_port={port} {frame.hex()}\n  OVS: {got[0]}\n"
                           f"  ferrovs: {got[1]}")
        return bad, forwarded
    finally:
        for sw in switches:
            sw.stop()
        shutil.rmtree(work, ignore_errors=True)


def test_ct_state_decisions_match_ovs():
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    bad, forwarded = compare(RULES, sequence())
    assert not bad, "\n".join(bad)
    # Not vacuous: the sequence reached the new/established port and the
    # invalid/related port.
    ports = {p for where in forwarded.values() for p in where}
    assert {3, 4} <= ports, forwarded


def conntrack_timeouts(sw):
    """{zone: seconds left} of the UDP connections `dpctl/dump-conntrack -s` lists."""
    ctl = sw.d / ("vswitchd.ctl" if sw.name == "OVS" else "ferrovsd.ctl")
    out = ovsdiff.run(["ovs-appctl", "-t", str(ctl), "dpctl/dump-conntrack", "-s"]).stdout
    got = {}
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split(",") if "=" in f)
        if line.startswith("udp") and "zone" in fields and "timeout" in fields:
            got[int(fields["zone"])] = int(fields["timeout"])
    return got


def test_zone_timeout_policies_match_ovs():
    """ovs-vsctl's add-zone-tp / del-zone-tp on both switches (the Datapath row is `dummy`
    for OVS's dummy bridges, `netdev` for ferrovs): a UDP packet committed in zone 5 (with a
    policy) and in zone 6 (without) leaves connections whose timeouts agree, and zone 5's
    connection takes the default again once its policy is deleted."""
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    import shutil
    import tempfile

    from scapy.all import IP, UDP, Ether, raw

    work = tempfile.mkdtemp(prefix="cttp-")
    switches = []

    def vsctl(sw, *args):
        return ovsdiff.run(["ovs-vsctl", f"--db=unix:{sw.d}/db.sock", "--timeout=20", *args])

    def udp(sport):
        return raw(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                   / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=sport, dport=53) / b"q")

    try:
        switches = [ovsdiff.Ovs(work), ovsdiff.Ferrovs(work, BIN)]
        rules = ["table=0,priority=100,udp,actions=ct(commit,zone=5),ct(commit,zone=6),"
                 "output:2"]
        for sw, dp in zip(switches, ["dummy", "netdev"]):
            ok, err = ovsdiff.install(sw, rules, work)
            assert ok, (sw.name, err)
            vsctl(sw, "--", "--id=@d", "create", "Datapath", "datapath_version=0", "--",
                  "set", "Open_vSwitch", ".", f"datapaths:{dp}=@d")
            vsctl(sw, "add-zone-tp", dp, "zone=5", "udp_first=17", "udp_single=18",
                  "udp_multiple=19", "tcp_unack=3")
            assert "Zone:5" in vsctl(sw, "list-zone-tp", dp).stdout
        time.sleep(1.5)  # both daemons read the database
        for sw in switches:
            sw.receive(1, udp(5000))
        time.sleep(0.5)
        got = [conntrack_timeouts(sw) for sw in switches]
        for g in got:
            assert set(g) == {5, 6}, got
            assert 14 <= g[5] <= 17 and 56 <= g[6] <= 60, got
        assert abs(got[0][5] - got[1][5]) <= 2 and abs(got[0][6] - got[1][6]) <= 2, got
        # The policy deleted: zone 5 is back on the defaults at its connections' next packet.
        for sw, dp in zip(switches, ["dummy", "netdev"]):
            vsctl(sw, "del-zone-tp", dp, "zone=5")
        time.sleep(1.5)
        for sw in switches:
            sw.receive(1, udp(5000))
        time.sleep(0.5)
        got = [conntrack_timeouts(sw) for sw in switches]
        for g in got:
            assert 56 <= g[5] <= 60, got
    finally:
        for sw in switches:
            sw.stop()
        shutil.rmtree(work, ignore_errors=True)


def fragment_sequence():
    """(in_port, frame, what) for fragmented datagrams through RULES: UDP and ICMP echo over
    IPv4 and IPv6, in order and out of order, the replies established, and one set with a
    duplicate and an overlapping fragment (refused alone, `+inv`, the datagram still made
    whole)."""
    from scapy.all import (ICMP, IP, UDP, Ether, ICMPv6EchoReply, ICMPv6EchoRequest, IPv6,
                           IPv6ExtHdrFragment, fragment, fragment6, raw)

    C, S = "02:00:00:00:00:01", "02:00:00:00:00:02"
    c, s = "10.0.1.1", "10.0.1.2"
    c6, s6 = "fd00:1::1", "fd00:1::2"

    def v4(src, dst, l4, n, ident):
        return [raw(f) for f in fragment(IP(src=src, dst=dst, id=ident) / l4 / (b"x" * n),
                                         fragsize=1480)]

    def v6(src, dst, l4, n, ident):
        p = IPv6(src=src, dst=dst) / IPv6ExtHdrFragment(id=ident) / l4 / (b"y" * n)
        return [raw(f) for f in fragment6(p, 1400)]

    def eth(port, frames, what, order=None):
        src, dst = (C, S) if port == 1 else (S, C)
        order = order or range(len(frames))
        return [(port, raw(Ether(src=src, dst=dst, type=0x86dd if frames[0][0] >> 4 == 6
                                 else 0x800)) + frames[i], f"{what} #{i}") for i in order]

    seq = []
    seq += eth(1, v4(c, s, UDP(sport=5100, dport=53), 4000, 100), "udp frags in order")
    seq += eth(2, v4(s, c, UDP(sport=53, dport=5100), 3000, 200), "udp reply frags reversed",
               order=[2, 1, 0])
    seq += eth(1, v4(c, s, ICMP(type=8, id=11, seq=1), 3000, 101), "icmp echo frags",
               order=[1, 0, 2])
    seq += eth(2, v4(s, c, ICMP(type=0, id=11, seq=1), 3000, 201), "icmp echo reply frags")
    seq += eth(1, v6(c6, s6, UDP(sport=6100, dport=7100), 3000, 300), "udp6 frags",
               order=[2, 0, 1])
    seq += eth(2, v6(s6, c6, UDP(sport=7100, dport=6100), 3000, 400), "udp6 reply frags")
    seq += eth(1, v6(c6, s6, ICMPv6EchoRequest(id=12, seq=1), 3000, 301), "icmp6 echo frags",
               order=[1, 2, 0])
    seq += eth(2, v6(s6, c6, ICMPv6EchoReply(id=12, seq=1), 3000, 401),
               "icmp6 echo reply frags")
    # A duplicate and an overlapping piece (a second cut of the same datagram).
    whole = IP(src=c, dst=s, id=102) / UDP(sport=5101, dport=53) / (b"z" * 4000)
    a = [raw(f) for f in fragment(whole, fragsize=1480)]
    b = [raw(f) for f in fragment(whole, fragsize=1240)]
    ov = eth(1, a, "overlap set")
    seq += [ov[0], (1, ov[0][1], "overlap set: duplicate #0"),
            (*eth(1, b, "overlap set: other cut")[1][:2], "overlap set: overlapping piece"),
            ov[1], ov[2]]
    return seq


def test_fragment_decisions_match_ovs():
    """Fragments through the same rules on both switches (reassembly on, OVS's default):
    every fragment held until its datagram is whole, then out on the datagram's port in
    offset order (OVS sorts them); refused ones `+inv`."""
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    bad, forwarded = compare(RULES, fragment_sequence())
    assert not bad, "\n".join(bad)
    # Not vacuous: 8 datagrams of 3 fragments and the overlap set's 3 on the
    # new/established port, the duplicate and the overlapping piece invalid.
    totals = {}
    for where in forwarded.values():
        for p, n in where.items():
            totals[p] = totals.get(p, 0) + n
    assert totals.get(3) == 27 and totals.get(4) == 2, forwarded


def test_ipf_commands_match_ovs():
    """`dpctl/ipf-*` on both switches: the same answers for the same commands (status
    layout, switches, limits), and the same refusals with OVS's error texts."""
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    import shutil
    import subprocess
    import tempfile

    work = tempfile.mkdtemp(prefix="ipfcmd-")
    switches = []

    def appctl(sw, *args):
        ctl = sw.d / ("vswitchd.ctl" if sw.name == "OVS" else "ferrovsd.ctl")
        return subprocess.run(["ovs-appctl", "-t", str(ctl), *args], capture_output=True,
                              text=True, timeout=20)

    try:
        switches = [ovsdiff.Ovs(work), ovsdiff.Ferrovs(work, BIN)]
        for sw in switches:
            ok, err = ovsdiff.install(sw, RULES, work)
            assert ok, (sw.name, err)
        commands = [
            ["dpctl/ipf-get-status"],
            ["dpctl/ipf-set-disabled", "v4"],
            ["dpctl/ipf-set-enabled", "v6"],
            ["dpctl/ipf-set-min-frag", "v4", "1000"],
            ["dpctl/ipf-set-min-frag", "v6", "1300"],
            ["dpctl/ipf-set-max-nfrags", "500"],
            ["dpctl/ipf-get-status"],
            ["dpctl/ipf-get-status", "-m"],
            ["dpctl/ipf-set-enabled", "v4"],
            ["dpctl/ipf-get-status"],
        ]
        for cmd in commands:
            got = [appctl(sw, *cmd) for sw in switches]
            assert got[0].returncode == 0, (cmd, got[0].stderr)
            assert (got[1].returncode, got[1].stdout) == (0, got[0].stdout), \
                (cmd, got[0].stdout, got[1].stdout, got[1].stderr)
        refused = [
            (["dpctl/ipf-set-enabled", "v5"],
             "parameter missing: 'v4' for IPv4 or 'v6' for IPv6 (Invalid argument)"),
            (["dpctl/ipf-set-min-frag", "v4", "399"],
             "requested minimum fragment size too small; see documentation"),
            (["dpctl/ipf-set-min-frag", "v4", "many"],
             "parameter missing for minimum fragment size (Invalid argument)"),
            (["dpctl/ipf-set-min-frag", "v7", "1000"],
             "parameter missing: v4 for IPv4 or v6 for IPv6 (Invalid argument)"),
            (["dpctl/ipf-set-max-nfrags", "5001"], "setting maximum fragments failed"),
            (["dpctl/ipf-set-max-nfrags", "lots"],
             "parameter missing for maximum fragments (Invalid argument)"),
        ]
        for cmd, text in refused:
            got = [appctl(sw, *cmd) for sw in switches]
            for g in got:
                assert g.returncode != 0 and text in g.stderr, (cmd, g.stderr)
        # Nothing refused changed anything.
        got = [appctl(sw, "dpctl/ipf-get-status").stdout for sw in switches]
        assert got[0] == got[1] and "min v4 frag size: 1000\n" in got[0], got
    finally:
        for sw in switches:
            sw.stop()
        shutil.rmtree(work, ignore_errors=True)


# The helpers: FTP control connections committed with alg=ftp, a TFTP request with
# alg=tftp; related connections committed when new. Each kind of verdict leaves with its
# own DSCP: +new+rel 24 (port 4), +est+rel 20, +est+rel+rpl 28, +inv (port 4, unchanged).
ALG_RULES = [
    "table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)",
    "table=0,priority=100,ipv6,ct_state=-trk,actions=ct(table=1)",
    "table=0,priority=0,actions=drop",
    "table=1,priority=100,ct_state=+inv+trk,actions=output:4",
] + [
    rule for ip in ("ip", "ipv6") for rule in (
        f"table=1,priority=95,{ip},ct_state=+new+rel+trk,"
        "actions=ct(commit),set_field:24->ip_dscp,output:4",
        f"table=1,priority=94,{ip},ct_state=+est+rel+rpl+trk,"
        "actions=set_field:28->ip_dscp,output:4",
        f"table=1,priority=93,{ip},ct_state=+est+rel-rpl+trk,"
        "actions=set_field:20->ip_dscp,output:4",
        f"table=1,priority=70,{ip},ct_state=+est+rpl+trk,actions=set_field:8->ip_dscp,output:3",
        f"table=1,priority=60,{ip},ct_state=+est-rpl+trk,actions=set_field:4->ip_dscp,output:3",
        f"table=1,priority=80,{ip},ct_state=+new+trk,actions=ct(commit),output:3",
    )
] + [
    "table=1,priority=85,tcp,tp_dst=21,ct_state=+new+trk,actions=ct(commit,alg=ftp),output:3",
    "table=1,priority=85,tcp6,tp_dst=21,ct_state=+new+trk,actions=ct(commit,alg=ftp),output:3",
    "table=1,priority=85,udp,tp_dst=69,ct_state=+new+trk,actions=ct(commit,alg=tftp),output:3",
    "table=1,priority=0,actions=output:2",
]


def alg_sequence():
    """An FTP session over IPv4 (passive and active data connections, a bounce attempt, a
    malformed PORT), one over IPv6 (EPRT, 229), and a TFTP read."""
    from scapy.all import IP, UDP, Ether, IPv6, TCP, raw

    C, S = "02:00:00:00:00:01", "02:00:00:00:00:02"

    def frame(port, l3):
        src, dst = (C, S) if port == 1 else (S, C)
        return port, raw(Ether(src=src, dst=dst) / l3)

    def session(net, c, s, msgs):
        """Handshake c:40000 -> s:21, then (from_client, text, what) in order."""
        cs, ss = 1000, 5000
        out = [
            (*frame(1, net(src=c, dst=s) / TCP(sport=40000, dport=21, flags="S", seq=cs - 1,
                                                window=65535)), "ftp syn"),
            (*frame(2, net(src=s, dst=c) / TCP(sport=21, dport=40000, flags="SA",
                                                seq=ss - 1, ack=cs, window=65535)),
             "ftp syn-ack"),
            (*frame(1, net(src=c, dst=s) / TCP(sport=40000, dport=21, flags="A", seq=cs,
                                                ack=ss, window=65535)), "ftp ack"),
        ]
        for from_client, text, what in msgs:
            if from_client:
                t = TCP(sport=40000, dport=21, flags="PA", seq=cs, ack=ss, window=65535)
                out.append((*frame(1, net(src=c, dst=s) / t / text), what))
                cs += len(text)
            else:
                t = TCP(sport=21, dport=40000, flags="PA", seq=ss, ack=cs, window=65535)
                out.append((*frame(2, net(src=s, dst=c) / t / text), what))
                ss += len(text)
        return out

    def syn(net, port, src, dst, sport, dport, what):
        t = TCP(sport=sport, dport=dport, flags="S", seq=77, window=65535)
        return (*frame(port, net(src=src, dst=dst) / t), what)

    def synack(net, port, src, dst, sport, dport, what):
        t = TCP(sport=sport, dport=dport, flags="SA", seq=900, ack=78, window=65535)
        return (*frame(port, net(src=src, dst=dst) / t), what)

    def ack(net, port, src, dst, sport, dport, what):
        t = TCP(sport=sport, dport=dport, flags="A", seq=78, ack=901, window=65535)
        return (*frame(port, net(src=src, dst=dst) / t), what)

    c, s = "10.0.0.1", "10.0.0.2"
    seq = session(IP, c, s, [
        (False, b"220 ready\r\n", "ftp banner"),
        (False, b"227 Entering Passive Mode (10,0,0,2,39,16).\r\n", "227 (port 10000)"),
        (True, b"PORT 10,0,0,1,156,74\r\n", "PORT (port 40010)"),
        (True, b"PORT 10,0,0,9,156,75\r\n", "PORT naming another host"),
        (True, b"PORT 10,0,0,1,999,1\r\n", "PORT malformed"),
        (True, b"RETR f\r\n", "RETR"),
    ])
    seq += [
        syn(IP, 1, c, s, 40001, 10000, "passive data syn"),
        synack(IP, 2, s, c, 10000, 40001, "passive data syn-ack"),
        ack(IP, 1, c, s, 40001, 10000, "passive data ack"),
        syn(IP, 2, s, c, 20, 40010, "active data syn"),
        synack(IP, 1, c, s, 40010, 20, "active data syn-ack"),
        syn(IP, 2, s, c, 20, 40011, "syn to a port nobody announced"),
        syn(IP, 1, c, s, 40002, 10001, "syn to another server port"),
    ]
    c6, s6 = "fd00::1", "fd00::2"
    seq += session(IPv6, c6, s6, [
        (True, b"EPRT |2|fd00::1|40020|\r\n", "EPRT (port 40020)"),
        (False, b"229 Entering Extended Passive Mode (|||10020|)\r\n", "229 (port 10020)"),
        (True, b"EPRT |2|fd00::9|40021|\r\n", "EPRT naming another host"),
    ])
    seq += [
        syn(IPv6, 2, s6, c6, 20, 40020, "active data syn over IPv6"),
        syn(IPv6, 1, c6, s6, 40003, 10020, "passive data syn over IPv6"),
        syn(IPv6, 2, s6, c6, 20, 40021, "syn to the bounced port over IPv6"),
    ]
    seq += [
        (*frame(1, IP(src=c, dst=s) / UDP(sport=5000, dport=69) / b"\x00\x01f\x00octet\x00"),
         "tftp read request"),
        (*frame(2, IP(src=s, dst=c) / UDP(sport=6000, dport=5000) / b"\x00\x03\x00\x01data"),
         "tftp data from a new port"),
        (*frame(1, IP(src=c, dst=s) / UDP(sport=5000, dport=6000) / b"\x00\x04\x00\x01"),
         "tftp ack"),
        (*frame(2, IP(src=s, dst=c) / UDP(sport=6001, dport=5001) / b"x"),
         "udp to another client port"),
    ]
    return seq


def test_helper_decisions_match_ovs():
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    bad, forwarded = compare(ALG_RULES, alg_sequence())
    assert not bad, "\n".join(bad)
    # Not vacuous: OVS made the data connections related (port 4) and the others new.
    for what in ("passive data syn", "passive data syn-ack", "active data syn",
                 "active data syn over IPv6", "passive data syn over IPv6",
                 "tftp data from a new port", "tftp ack", "PORT naming another host"):
        assert forwarded[what] == {4: 1}, (what, forwarded)
    for what in ("syn to a port nobody announced", "syn to another server port",
                 "syn to the bounced port over IPv6", "RETR", "227 (port 10000)"):
        assert forwarded[what] == {3: 1}, (what, forwarded)
