"""The openflow module through the daemon: ovs-ofctl-style flows, groups and meters, with
pcap ports for exact packet checks and namespaces for link-state behaviour.

Rules are installed before the pcap source port is added, because a pcap port starts
replaying as soon as it exists.
"""

import json
import time

import pytest
from scapy.all import IP, TCP, UDP, Dot1Q, Ether, Raw, rdpcap, wrpcap

from conftest import run, wait_for

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"


def tx_count(daemon, br, port):
    ports = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}
    return ports[port]["tx_packets"]


def checksums_valid(pkt):
    """True if scapy, recomputing every checksum, gets the values in the packet."""
    fresh = pkt.__class__(bytes(pkt))
    for layer in (IP, TCP, UDP):
        if layer in fresh:
            del fresh[layer].chksum
    rebuilt = fresh.__class__(bytes(fresh))
    for layer in (IP, TCP, UDP):
        if layer in pkt and pkt[layer].chksum != rebuilt[layer].chksum:
            return False
    return True


def replay(daemon, tmp_path, br, frames, outs, flows, groups=(), meters=()):
    """Sets up BR with pcap sinks OUTS (names -> ofports), the flows, then replays FRAMES
    from a pcap source on ofport 1; returns {out name: [scapy packets]}."""
    src = tmp_path / "in.pcap"
    wrpcap(str(src), frames)
    daemon.cli("add-br", br)
    daemon.cli("del-flows", br)
    paths = {}
    for name, ofport in outs.items():
        paths[name] = tmp_path / f"{name}.pcap"
        daemon.cli("add-port", br, name, "type=pcap", f"tx_pcap={paths[name]}", f"ofport={ofport}")
    for m in meters:
        daemon.cli("add-meter", br, m)
    for g in groups:
        daemon.cli("add-group", br, g)
    for f in flows:
        daemon.cli("add-flow", br, f)
    daemon.cli("add-port", br, "src", "type=pcap", f"rx_pcap={src}", "ofport=1")
    wait_for(lambda: {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}["src"]
             ["rx_packets"] == len(frames), what="replay")
    time.sleep(0.2)
    return {n: list(rdpcap(str(p))) for n, p in paths.items()}


def test_set_field_rewrites_keep_checksums_and_vlan_push(daemon, tmp_path):
    frames = [Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=64) /
              TCP(sport=1000 + i, dport=80) / Raw(b"x" * i) for i in range(10)]
    frames += [Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=9) /
               UDP(sport=53, dport=5353) / Raw(b"dns")]
    out = replay(daemon, tmp_path, "brw", frames, {"out": 2}, [
        "priority=10,in_port=1,tcp,tp_dst=80,actions=mod_nw_dst:10.9.9.9,mod_tp_dst:8080,"
        "dec_ttl,push_vlan:0x8100,set_field:4196->vlan_vid,output:2",
        "priority=5,in_port=1,udp,actions=set_field:192.168.7.7->ip_src,set_field:99->udp_src,"
        "mod_dl_dst:02:aa:bb:cc:dd:ee,output:2",
    ])["out"]
    assert len(out) == 11
    for p in out[:10]:
        assert p[Dot1Q].vlan == 100
        assert p[IP].dst == "10.9.9.9" and p[TCP].dport == 8080 and p[IP].ttl == 63
        assert checksums_valid(p), p.show(dump=True)
    u = out[10]
    assert Dot1Q not in u
    assert u[IP].src == "192.168.7.7" and u[UDP].sport == 99 and u[Ether].dst == "02:aa:bb:cc:dd:ee"
    assert checksums_valid(u)
    flows = daemon.json("dump-flows", "brw")
    counts = sorted(f["n_packets"] for f in flows)
    assert counts == [1, 10]


def test_registers_carry_state_between_tables(daemon, tmp_path):
    """reg0..reg7: set in one table, matched in the next (the packet itself never carries
    them, so the cached datapath must forward as the pipeline says)."""
    frames = [Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst=f"10.0.0.{d}") / UDP(dport=9)
              for d in (2, 3, 2, 4, 3, 2)]
    out = replay(daemon, tmp_path, "brr", frames, {"two": 2, "three": 3}, [
        "table=0,priority=10,ip,nw_dst=10.0.0.2,actions=set_field:5->reg0,goto_table:1",
        "table=0,priority=10,ip,nw_dst=10.0.0.3,actions=set_field:6->reg0,"
        "set_field:0xab/0xff->reg7,goto_table:1",
        "table=0,priority=5,ip,actions=goto_table:1",
        "table=1,priority=10,reg0=5,actions=output:2",
        "table=1,priority=10,reg0=6,reg7=0xab/0xff,actions=output:3",
    ])
    assert len(out["two"]) == 3 and all(p[IP].dst == "10.0.0.2" for p in out["two"])
    assert len(out["three"]) == 2 and all(p[IP].dst == "10.0.0.3" for p in out["three"])
    counts = {f["match"]: f["n_packets"] for f in daemon.json("dump-flows", "brr")
              if f["table"] == 1}
    assert sorted(counts.values()) == [2, 3], counts
    # The trace shows the register in the final flow; the megaflow does not need it.
    t = daemon.cli("trace", "brr", "in_port=1,ip,nw_dst=10.0.0.2").stdout
    assert "reg0=0x5" in t and "Datapath actions: 2" in t, t


def test_vlan_pop_and_match_on_vlan(daemon, tmp_path):
    frames = [Ether(src=MAC1, dst=MAC2) / Dot1Q(vlan=v) / IP(dst="10.0.0.2") / UDP(dport=7)
              for v in (10, 20, 10)]
    out = replay(daemon, tmp_path, "brv", frames, {"v10": 2, "v20": 3}, [
        "priority=10,in_port=1,dl_vlan=10,actions=pop_vlan,output:2",
        "priority=10,in_port=1,dl_vlan=20,actions=output:3",
    ])
    assert len(out["v10"]) == 2 and all(Dot1Q not in p for p in out["v10"])
    assert len(out["v20"]) == 1 and out["v20"][0][Dot1Q].vlan == 20


def test_select_group_spreads_flows_and_keeps_each_flow_on_one_bucket(daemon, tmp_path):
    # OVS's select hash (symmetric L3/L4) covers TCP ports but not UDP ports: TCP flows that
    # differ only in their source port spread over the buckets, UDP ones all take one.
    frames = [Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="10.0.0.2") /
              TCP(sport=2000 + (i % 64), dport=9) for i in range(256)]
    frames += [Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="10.0.0.2") /
               UDP(sport=2000 + i, dport=9) for i in range(64)]
    out = replay(daemon, tmp_path, "brs", frames, {"a": 2, "b": 3},
                 ["in_port=1,actions=group:1"],
                 groups=["group_id=1,type=select,bucket=output:2,bucket=output:3"])
    a = {p[TCP].sport for p in out["a"] if TCP in p}
    b = {p[TCP].sport for p in out["b"] if TCP in p}
    assert len(out["a"]) + len(out["b"]) == 256 + 64
    assert a and b, "both buckets are used"
    assert not (a & b), "a flow always takes the same bucket"
    udp = [n for n in ("a", "b") if any(UDP in p for p in out[n])]
    assert len(udp) == 1, "UDP ports are not hashed: every UDP flow takes one bucket"
    groups = daemon.json("dump-groups", "brs")
    assert groups[0]["packet_count"] == 256 + 64


def test_meter_drops_above_the_rate(daemon, tmp_path):
    frames = [Ether(src=MAC1, dst=MAC2) / IP(dst="10.0.0.2") / UDP(sport=i % 1000, dport=9)
              for i in range(3000)]
    out = replay(daemon, tmp_path, "brm", frames, {"out": 2}, ["in_port=1,actions=meter:1,output:2"],
                 meters=["meter=1,pktps,burst,stats,bands=type=drop,rate=100,burst_size=50"])
    passed = len(out["out"])
    # The burst passes, then about 100 packets per second: the replay takes well under a
    # second, so far fewer than 3000 get through.
    assert 50 <= passed < 500, passed
    meters = daemon.json("dump-meters", "brm")
    assert meters[0]["packet_in_count"] == 3000
    assert meters[0]["bands"][0]["packet_count"] == 3000 - passed


def test_flow_text_errors_point_at_the_field_and_batches_are_atomic(daemon, tmp_path):
    daemon.cli("add-br", "bre")
    for flow, needle in [
        ("tcp,tp_dst=abc,actions=drop", "abc"),
        ("tcp,tp_dts=80,actions=drop", "tp_dts"),
        ("tp_dst=80,actions=drop", "tcp"),
        ("ip,actions=output:1,frobnicate", "frobnicate"),
        ("actions=group:42", "unknown group"),
        ("table=3,actions=goto_table:1", "goto_table"),
    ]:
        r = daemon.cli("add-flow", "bre", flow, check=False)
        assert r.returncode == 1, flow
        assert needle in r.stderr, (flow, r.stderr)
    good_then_bad = tmp_path / "flows.txt"
    good_then_bad.write_text("# comment\npriority=7,ip,actions=output:1\n\npriority=8,udp,tp_dst=x,actions=drop\n")
    r = daemon.cli("add-flows", "bre", str(good_then_bad), check=False)
    assert r.returncode == 1 and "line 4" in r.stderr, r.stderr
    # Nothing was added: only the default NORMAL flow is there.
    flows = daemon.json("dump-flows", "bre")
    assert [f["actions"] for f in flows] == ["NORMAL"]
    good = tmp_path / "good.txt"
    good.write_text("priority=7,ip,actions=output:1\npriority=8,udp,tp_dst=53,actions=drop\n")
    daemon.cli("add-flows", "bre", str(good))
    assert len(daemon.json("dump-flows", "bre")) == 3
    text = daemon.cli("dump-flows", "bre").stdout
    assert "priority=8,udp,tp_dst=53 actions=drop" in text
    daemon.cli("del-flows", "bre", "udp")
    assert len(daemon.json("dump-flows", "bre")) == 2
    daemon.cli("mod-flows", "bre", "ip,actions=output:2")
    assert "actions=output:2" in daemon.cli("dump-flows", "bre", "ip").stdout


def test_trace_shows_tables_megaflow_and_datapath_actions(daemon):
    daemon.cli("add-br", "brt")
    daemon.cli("add-flow", "brt", "table=0,priority=100,ip,in_port=1,nw_dst=10.0.0.0/24,"
               "actions=write_metadata:0x1/0xff,goto_table:1")
    daemon.cli("add-flow", "brt", "table=1,priority=10,metadata=0x1,tcp,tp_dst=80,actions=dec_ttl,output:2")
    out = daemon.cli("trace", "brt", "in_port=1,tcp,nw_dst=10.0.0.1,tp_dst=80,nw_ttl=64").stdout
    assert " 0. ip,in_port=1,nw_dst=10.0.0.0/24, priority 100" in out, out
    assert " 1. tcp,metadata=0x1,tp_dst=80, priority 10" in out, out
    assert "Datapath actions: set(ipv4(ttl=63)),2" in out, out
    assert 'bridge("brt")\n-------------\n' in out, out
    mega = [l for l in out.splitlines() if l.startswith("Megaflow:")][0]
    assert "nw_dst=10.0.0.0/24" in mega and "tp_dst=80" in mega and "nw_ttl=64" in mega, mega
    j = json.loads(daemon.cli("trace", "brt", "in_port=2,udp,nw_dst=10.0.0.1", "--json").stdout)
    assert j["datapath_actions"] == "NORMAL"
    r = run(["ovs-appctl", "-t", str(daemon.ctl), "ofproto/trace", "brt",
             "in_port=1,tcp,nw_dst=10.0.0.1,tp_dst=80,nw_ttl=64"])
    assert "Datapath actions: set(ipv4(ttl=63)),2" in r.stdout, r.stdout


def test_fast_failover_follows_link_state(daemon, net, tmp_path):
    src, s_src = net.host("f", mac=MAC1)
    h2, s2 = net.host("g", mac="02:00:00:00:00:22")
    h3, s3 = net.host("h", mac="02:00:00:00:00:33")
    daemon.cli("add-br", "brf")
    # No NORMAL flow: the hosts' own chatter (IPv6 router solicitations...) must not be
    # flooded onto the ports whose counters the test reads.
    daemon.cli("del-flows", "brf")
    daemon.cli("add-port", "brf", s_src, "ofport=1")
    daemon.cli("add-port", "brf", s2, "ofport=2")
    daemon.cli("add-port", "brf", s3, "ofport=3")
    daemon.cli("add-group", "brf",
               "group_id=1,type=ff,bucket=watch_port:2,actions=output:2,bucket=watch_port:3,actions=output:3")
    daemon.cli("add-flow", "brf", "priority=10,in_port=1,actions=group:1")
    daemon.cli("add-flow", "brf", "priority=5,actions=drop")
    frame = (Ether(src=MAC1, dst="02:00:00:00:00:99") / IP(src="10.81.0.1", dst="10.81.0.9") /
             UDP(sport=4000, dport=4001) / Raw(b"ff"))
    pcap = tmp_path / "one.pcap"
    wrpcap(str(pcap), [frame])

    def send(n):
        net.ns(src, f"{sys_py()} -c \"from scapy.all import *; conf.verb=0; "
               f"sendp(list(rdpcap('{pcap}'))*{n}, iface='eth0', inter=0.01)\"")

    base2, base3 = tx_count(daemon, "brf", s2), tx_count(daemon, "brf", s3)
    send(5)
    wait_for(lambda: tx_count(daemon, "brf", s2) >= base2 + 5, what="bucket 1 traffic")
    assert tx_count(daemon, "brf", s3) == base3
    # Take port 2's carrier down (from the far side) and traffic moves to bucket 2.
    net.ns(h2, "ip link set eth0 down")
    wait_for(lambda: json.loads(daemon.cli("show", "--json").stdout) and
             [p for b in daemon.json("show")["bridges"] for p in b["ports"]
              if p["name"] == s2][0]["link_state"] == "down", what="link down")
    time.sleep(0.3)
    send(5)
    wait_for(lambda: tx_count(daemon, "brf", s3) >= base3 + 5, what="bucket 2 traffic")
    before = tx_count(daemon, "brf", s2)
    net.ns(h2, "ip link set eth0 up")
    time.sleep(0.5)
    send(3)
    wait_for(lambda: tx_count(daemon, "brf", s2) >= before + 3, what="back on bucket 1")


def sys_py():
    import sys
    return sys.executable
