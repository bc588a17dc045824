"""VXLAN Group Policy (`options:exts=gbp`) against the Linux kernel's `vxlan ... gbp` device.

The kernel's device maps the packet mark to the VXLAN Group Policy header and back: a packet
it sends carries mark bits 0-15 as the group policy ID and bits 22 and 19 as the D (0x40)
and A (0x08) flags, and a packet it receives gets the same mark. OVS's `tun_gbp_id` and
`tun_gbp_flags` are that ID and that flags byte. So, with the site of test_tunnel.py (the
switch in one namespace, a kernel vxlan device in the peer namespace):

* the peer pings with `ping -m MARK` and the switch's flows let through only the ID and
  flags the mark gives (`tun_gbp_id=`, `tun_gbp_flags=` matched);
* the switch's flows set `tun_gbp_id` (and flags) on what they send, and an nftables
  counter in the peer namespace counts the inner packets arriving with that mark;
* once `exts=gbp` is removed, the port sends no group policy (the peer's packets arrive
  unmarked) and drops the packets that carry one, as OVS does;
* a Group Policy port and a plain one may not share a UDP port (OVS's error text).
"""

import re

import pytest

from conftest import require, run, wait_for
from test_tunnel import Site, ping_ok

VNI = 5011
ID_IN = 0x123      # what the peer sends (its ping's mark)
ID_OUT = 0x2A      # what the switch's flows set
A_FLAG = 0x08      # tun_gbp_flags "policy applied": mark bit 19


@pytest.fixture
def site():
    require("ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ping", "nft")
    s = Site()
    yield s
    s.close()


def peer_gbp_device(site):
    site.ns(site.peer, f"ip link add vx type vxlan id {VNI} remote {site.under[1]} "
                       f"local {site.under[0]} dstport 4789 dev eth0 gbp")
    site.ns(site.peer, "ip link set vx mtu 1400")
    site.ns(site.peer, f"ip addr add {site.over[0]}/24 dev vx")
    site.ns(site.peer, "ip link set vx up")


NFT = """
table inet fvgbp {
    chain pre {
        type filter hook prerouting priority 0;
        iifname "vx" meta mark %d counter
        iifname "vx" meta mark 0 counter
    }
}
"""


def mark_counters(site):
    """Packets the peer's vxlan device received with mark ID_OUT|A, and with no mark."""
    out = site.ns(site.peer, "nft list table inet fvgbp").stdout
    got = [int(x) for x in re.findall(r"counter packets (\d+)", out)]
    assert len(got) == 2, out
    return got[0], got[1]


def tport(site):
    return f"t{site.t}"[:15]


def flows(site, *lines):
    of = ["ovs-ofctl", "-O", "OpenFlow13"]
    mgmt = f"unix:{site.tmp}/{site.int}.mgmt"
    run([*of, "del-flows", mgmt])
    for line in lines:
        run([*of, "add-flow", mgmt, line])
    return of, mgmt


def n_packets(of, mgmt, cookie):
    dump = run([*of, "dump-flows", mgmt, f"cookie={cookie}/-1"]).stdout
    m = re.search(r"n_packets=(\d+)", dump)
    assert m, dump
    return int(m.group(1))


def setup(site):
    site.start()
    site.underlay()
    site.overlay("vxlan", {"remote_ip": site.under[0], "key": VNI, "exts": "gbp"})
    peer_gbp_device(site)
    site.ns(site.peer, f"nft -f - <<'EOF'\n{NFT % ((A_FLAG << 16) | ID_OUT)}\nEOF")


def test_group_policy_crosses_to_and_from_the_kernel(site):
    setup(site)
    t = tport(site)
    mark_in = (A_FLAG << 16) | ID_IN
    of, mgmt = flows(
        site,
        # What the switch's host sends carries group policy ID_OUT with the A flag.
        f"in_port=LOCAL,actions=set_field:{ID_OUT}->tun_gbp_id,"
        f"set_field:{A_FLAG}->tun_gbp_flags,output:{t}",
        # From the peer: ARP (unmarked) and, of IP, only what carries ID_IN with the A flag.
        f"priority=10,in_port={t},arp,actions=LOCAL",
        f"cookie=0x1,priority=10,in_port={t},ip,tun_gbp_id={ID_IN},"
        f"tun_gbp_flags={A_FLAG},actions=LOCAL",
        f"priority=0,actions=drop")
    # The peer's marked ping crosses; its unmarked one (no group policy) does not.
    wait_for(lambda: site.ns(site.peer, f"ping -c 1 -W 1 -m {mark_in} {site.over[1]}",
                             check=False).returncode == 0, timeout=15,
             what=f"marked ping from the kernel\n{site.logtext()}")
    assert n_packets(of, mgmt, "0x1") >= 1
    assert site.ns(site.peer, f"ping -c 2 -i 0.2 -W 1 -m {ID_IN} {site.over[1]}",
                   check=False).returncode != 0, "ID without the A flag was let through"
    assert not ping_ok(site, site.peer, site.over[1]), "an unmarked ping was let through"
    # What the switch sent arrived with the mark its group policy gives.
    before, _ = mark_counters(site)
    site.ns(site.sw, f"ping -c 3 -i 0.2 -W 1 {site.over[0]}", check=False)
    after, _ = mark_counters(site)
    assert after >= before + 3, (before, after)
    # The megaflow pushes the header with the group policy in it, as OVS prints one
    # (G and I bits, the A flag, the ID).
    dp = site.appctl("dpctl/dump-flows").stdout
    want = f"vxlan(flags={0x88000000 | (A_FLAG << 16) | ID_OUT:#x},vni={VNI:#x})"
    assert want in dp, dp

    # Without `exts=gbp` the same flows send no group policy (the peer's packets arrive
    # unmarked), and a packet that carries one is not for the port: dropped, as OVS drops
    # it.
    site.vsctl("remove", "Interface", t, "options", "exts")
    of, mgmt = flows(
        site,
        f"in_port=LOCAL,actions=set_field:{ID_OUT}->tun_gbp_id,"
        f"set_field:{A_FLAG}->tun_gbp_flags,output:{t}",
        f"in_port={t},arp,actions=LOCAL",
        f"cookie=0x2,in_port={t},ip,actions=LOCAL")
    wait_for(lambda: ping_ok(site, site.sw, site.over[0]), timeout=15,
             what=f"ping over the plain tunnel\n{site.logtext()}")
    marked, unmarked = mark_counters(site)
    assert marked == after and unmarked >= 1, (after, marked, unmarked)
    got = n_packets(of, mgmt, "0x2")
    assert site.ns(site.peer, f"ping -c 2 -i 0.2 -W 1 -m {mark_in} {site.over[1]}",
                   check=False).returncode != 0
    assert n_packets(of, mgmt, "0x2") == got
    dp = site.appctl("dpctl/dump-flows").stdout
    assert f"vxlan(flags=0x8000000,vni={VNI:#x})" in dp, dp


def test_gbp_and_plain_vxlan_cannot_share_a_udp_port(site):
    site.start()
    site.vsctl("add-br", site.int, "--", "add-port", site.int, "fvga", "--", "set",
               "Interface", "fvga", "type=vxlan", "options:remote_ip=10.9.9.9",
               "options:exts=gbp")
    site.vsctl("add-port", site.int, "fvgb", "--", "set", "Interface", "fvgb", "type=vxlan",
               "options:remote_ip=10.9.9.8")
    err = wait_for(lambda: site.vsctl("get", "Interface", "fvgb", "error").stdout.strip()
                   not in ("[]", ""), what="error for the plain port")
    text = site.vsctl("get", "Interface", "fvgb", "error").stdout
    assert "VXLAN-GBP, and non-VXLAN-GBP tunnels can't be configured on the same dst_port" \
        in text, text
    # On another UDP port it is fine; an unknown extension is named.
    site.vsctl("add-port", site.int, "fvgc", "--", "set", "Interface", "fvgc", "type=vxlan",
               "options:remote_ip=10.9.9.7", "options:dst_port=4790")
    site.vsctl("add-port", site.int, "fvgd", "--", "set", "Interface", "fvgd", "type=vxlan",
               "options:remote_ip=10.9.9.6", "options:exts=gbp,bogus", "options:dst_port=4791")
    wait_for(lambda: site.vsctl("get", "Interface", "fvgd", "error").stdout.strip()
             not in ("[]", ""), what="error for the bogus extension")
    assert "unknown extension 'bogus'" in site.vsctl("get", "Interface", "fvgd",
                                                     "error").stdout
    assert site.vsctl("get", "Interface", "fvgc", "error").stdout.strip() == "[]"
    assert site.vsctl("get", "Interface", "fvga", "error").stdout.strip() == "[]"
