"""`trace` against Debian's OVS 3.1 `ofproto/trace` on the same rules and packets: the bridge
heading and the "Datapath actions:" line must read the same. OVS collects the rewrites made
before an output into one set() per header (only the fields that changed, Ethernet first,
VLAN tags last), and so must ferrovs's trace."""

import sys
from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, TCP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Dot1Q, Ether

from conftest import BIN, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

A, B = "02:00:00:00:00:01", "02:00:00:00:00:02"

# (rules, frame, the datapath actions OVS 3.1 prints for it)
CASES = {
    "ttl_vlan_push_group": (
        ["priority=10,in_port=1,ip,actions=dec_ttl,push_vlan:0x8100,"
         "set_field:4106->vlan_vid,group:1"],
        Ether(src=A, dst=B) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=64) / ICMP(),
        "set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2,3",
    ),
    "rewrites_between_outputs": (
        ["priority=10,in_port=1,tcp,actions=mod_tp_dst:8080,mod_nw_src:10.9.9.9,"
         "mod_nw_tos:16,mod_dl_dst:02:00:00:00:00:aa,output:2,"
         "mod_dl_src:02:00:00:00:00:bb,mod_nw_dst:10.8.8.8,mod_nw_dst:10.8.8.8,output:3,"
         "mod_tp_src:1234,mod_nw_ttl:9"],
        Ether(src=A, dst=B) / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1000, dport=80),
        "set(eth(dst=02:00:00:00:00:aa)),set(ipv4(src=10.9.9.9,tos=0x10/0xfc)),"
        "set(tcp(dst=8080)),2,set(eth(src=02:00:00:00:00:bb)),set(ipv4(dst=10.8.8.8)),3",
    ),
    "ipv6_hlimit_and_destination": (
        ["priority=10,in_port=1,ipv6,actions=dec_ttl,set_field:fd00::99->ipv6_dst,output:2"],
        Ether(src=A, dst=B) / IPv6(src="fd00::1", dst="fd00::2", hlim=64) / ICMPv6EchoRequest(),
        "set(ipv6(dst=fd00::99,hlimit=63)),2",
    ),
    "vid_change_then_pop": (
        ["priority=10,in_port=1,dl_vlan=5,actions=mod_vlan_vid:20,output:2,strip_vlan,output:3"],
        Ether(src=A, dst=B) / Dot1Q(vlan=5) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(),
        "pop_vlan,push_vlan(vid=20,pcp=0),2,pop_vlan,3",
    ),
    "mod_vlan_vid_pushes_on_an_untagged_frame": (
        ["priority=10,in_port=1,ip,actions=mod_vlan_vid:10,output:2"],
        Ether(src=A, dst=B) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(),
        "push_vlan(vid=10,pcp=0),2",
    ),
    "push_on_a_tagged_frame_then_vid": (
        ["priority=10,in_port=1,dl_vlan=7,actions=push_vlan:0x8100,set_field:4106->vlan_vid,"
         "output:2"],
        Ether(src=A, dst=B) / Dot1Q(vlan=7, prio=3) / IP(src="10.0.0.1", dst="10.0.0.2")
        / ICMP(),
        "push_vlan(vid=10,pcp=0),2",
    ),
    "double_tagged_frame_is_not_ip_at_vlan_limit_1": (
        ["priority=10,in_port=1,ip,actions=output:2", "priority=5,in_port=1,dl_vlan=7,"
         "actions=pop_vlan,output:3"],
        Ether(src=A, dst=B) / Dot1Q(vlan=7) / Dot1Q(vlan=8) / IP(src="10.0.0.1", dst="10.0.0.2")
        / ICMP(),
        "pop_vlan,3",
    ),
    "outer_8021ad_tag_on_a_tagged_frame": (
        ["priority=10,in_port=1,dl_vlan=7,actions=push_vlan:0x88a8,set_field:4196->vlan_vid,"
         "output:2"],
        Ether(src=A, dst=B) / Dot1Q(vlan=7) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(),
        "push_vlan(tpid=0x88a8,vid=100,pcp=0),2",
    ),
}


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    work = tmp_path_factory.mktemp("traceovs")
    sws = []
    try:
        sws.append(ovsdiff.Ovs(work))
        sws.append(ovsdiff.Ferrovs(work, BIN))
        yield sws, work
    finally:
        for s in sws:
            s.stop()


def lines(text, prefix):
    return [line for line in text.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_trace_datapath_actions_read_as_ovs(switches, case):
    sws, work = switches
    rules, frame, want = CASES[case]
    traces = {}
    for sw in sws:
        ok, err = ovsdiff.install(sw, rules, work)
        assert ok, f"{sw.name} refused {rules}: {err}"
        traces[sw.name] = sw.trace(1, bytes(frame))
    ovs, fv = traces["OVS"], traces["ferrovs"]
    got = {n: lines(t, "Datapath actions:") for n, t in traces.items()}
    assert got["OVS"] == [f"Datapath actions: {want}"], ovs
    assert got["ferrovs"] == got["OVS"], f"ferrovs:\n{fv}\nOVS:\n{ovs}"
    # The steps are headed by the bridge's name over a rule of its length, as in OVS.
    for name, t in traces.items():
        tl = t.splitlines()
        i = tl.index('bridge("br0")') if 'bridge("br0")' in tl else -1
        assert i >= 0 and tl[i + 1] == "-" * len('bridge("br0")'), f"{name}:\n{t}"
