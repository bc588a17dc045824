"""The Nicira messages ovn-controller sends first, driven by Debian's ovs-ofctl. The TLV table
(tun_metadata maps): add-tlv-map, dump-tlv-map
and del-tlv-map over OpenFlow 1.0 (Nicira), 1.3 and 1.5, with OVS's limits (256 bytes of
option space, 64 fields) and OVS's errors for bad maps. ovn-controller's first exchange is
this request and mod (class 0x0102, type 0x80, len 4 -> tun_metadata0) over OpenFlow 1.5.
NXT_CT_FLUSH_ZONE is accepted. Then packet-ins as ovn-controller's pinctrl reads them:
NXT_PACKET_IN2 with the pipeline's registers and tunnel options, and OVS's reasons.
"""

import os
import subprocess
import time

import pytest

from conftest import require
from test_ofctl import bridge, ofctl, ping

PROTOS = [None, "OpenFlow13", "OpenFlow15"]


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl")


def mapping_rows(out):
    """The rows of dump-tlv-map's mapping table: (class, type, length, field)."""
    rows = []
    seen_rule = False
    for line in out.splitlines():
        if line.strip().startswith("------"):
            seen_rule = True
            continue
        if seen_rule and line.strip():
            rows.append(tuple(line.split()))
    return rows


@pytest.mark.parametrize("proto", PROTOS)
def test_add_dump_delete_as_ovs(daemon, net, proto):
    br, _ = bridge(daemon, net, n_hosts=1)
    out = ofctl(daemon, "dump-tlv-map", br, proto=proto).stdout
    assert "max option space=256 max fields=64" in out, out
    assert "allocated option space=0" in out, out
    assert mapping_rows(out) == []

    ofctl(daemon, "add-tlv-map", br, "{class=0x0102,type=0x80,len=4}->tun_metadata0",
          proto=proto)
    ofctl(daemon, "add-tlv-map", br,
          "{class=0xffff,type=0,len=8}->tun_metadata5,{class=0xffff,type=1,len=124}->tun_metadata63",
          proto=proto)
    out = ofctl(daemon, "dump-tlv-map", br, proto=proto).stdout
    assert "allocated option space=136" in out, out
    assert mapping_rows(out) == [
        ("0x102", "0x80", "4", "tun_metadata0"),
        ("0xffff", "0", "8", "tun_metadata5"),
        ("0xffff", "0x1", "124", "tun_metadata63"),
    ], out

    ofctl(daemon, "del-tlv-map", br, "{class=0xffff,type=0,len=8}->tun_metadata5", proto=proto)
    out = ofctl(daemon, "dump-tlv-map", br, proto=proto).stdout
    assert [r[3] for r in mapping_rows(out)] == ["tun_metadata0", "tun_metadata63"], out
    ofctl(daemon, "del-tlv-map", br, proto=proto)  # no maps: clear
    out = ofctl(daemon, "dump-tlv-map", br, proto=proto).stdout
    assert mapping_rows(out) == [] and "allocated option space=0" in out, out


@pytest.mark.parametrize("proto", PROTOS)
def test_bad_maps_get_ovs_errors_and_change_nothing(daemon, net, proto):
    br, _ = bridge(daemon, net, n_hosts=1)
    ofctl(daemon, "add-tlv-map", br, "{class=0x0102,type=0x80,len=4}->tun_metadata0",
          proto=proto)
    cases = [
        ("{class=0xffff,type=1,len=4}->tun_metadata0", "NXTTMFC_ALREADY_MAPPED"),
        ("{class=0x0102,type=0x80,len=4}->tun_metadata1", "NXTTMFC_DUP_ENTRY"),
        ("{class=0xffff,type=2,len=6}->tun_metadata2", "NXTTMFC_BAD_OPT_LEN"),
        ("{class=0xffff,type=3,len=4}->tun_metadata64", "NXTTMFC_BAD_FIELD_IDX"),
        ("{class=1,type=0,len=124}->tun_metadata10,{class=2,type=0,len=124}->tun_metadata11,"
         "{class=3,type=0,len=8}->tun_metadata12", "NXTTMFC_TABLE_FULL"),
    ]
    for spec, err in cases:
        r = ofctl(daemon, "add-tlv-map", br, spec, proto=proto, check=False)
        assert r.returncode != 0 and err in r.stderr, (spec, r.stdout, r.stderr)
    out = ofctl(daemon, "dump-tlv-map", br, proto=proto).stdout
    assert mapping_rows(out) == [("0x102", "0x80", "4", "tun_metadata0")], out


@pytest.mark.parametrize("proto", PROTOS)
def test_ct_flush_zone_is_accepted(daemon, net, proto):
    br, _ = bridge(daemon, net, n_hosts=1)
    for zone in (0, 7, 65535):
        ofctl(daemon, "ct-flush-zone", br, zone, proto=proto)


def packet_ins_of_a_ping(daemon, net, br, host, proto, fmt):
    """What `ovs-ofctl monitor` (packet-in format `fmt`) prints while `host` pings
    10.7.0.2 twice."""
    env = dict(os.environ, OVS_RUNDIR=str(daemon.rundir))
    mon = subprocess.Popen(["ovs-ofctl", "-O", proto, "-P", fmt, "monitor", br, "65535"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        time.sleep(1.0)
        ping(net, host, "10.7.0.2", count=2, check=False)
        time.sleep(1.0)
    finally:
        mon.terminate()
        out = mon.communicate(timeout=10)[0]
    return out


@pytest.mark.parametrize("proto", ["OpenFlow13", "OpenFlow15"])
def test_packet_in2_format(daemon, net, proto):
    """ovn-controller asks for NXT_PACKET_IN2 (NXT_SET_PACKET_IN_FORMAT 2): packet-ins then
    come in Nicira's format, which ovs-ofctl decodes, with the pipeline's registers."""
    br, (h1, _) = bridge(daemon, net)
    ofctl(daemon, "add-flow", br,
          "table=0,priority=90,icmp,in_port=1,actions=load:0x2a->NXM_NX_REG3[],resubmit(,4)",
          proto=proto)
    ofctl(daemon, "add-flow", br, "table=4,cookie=0x77,priority=1,actions=CONTROLLER:200",
          proto=proto)
    out = packet_ins_of_a_ping(daemon, net, br, h1, proto, "nxt_packet_in2")
    assert "NXT_PACKET_IN2" in out, out
    assert "cookie=0x77" in out and "table_id=4" in out and "in_port=1" in out, out
    # The registers as they were at the controller action (OVN's pinctrl reads them).
    assert "reg3=0x2a" in out, out
    assert "reason=action" in out or "(via action)" in out, out


@pytest.mark.parametrize("proto,fmt,via", [
    ("OpenFlow10", "standard", "(via action)"),
    ("OpenFlow10", "nxt_packet_in2", "(via action)"),
    ("OpenFlow13", "standard", "(via no_match)"),
    ("OpenFlow13", "nxt_packet_in2", "(via no_match)"),
])
def test_table_miss_flow_packet_in_reason(daemon, net, proto, fmt, via):
    """A controller output from a table-miss flow (priority 0, matching everything) is an
    explicit table miss: `action` in OpenFlow 1.0, `no_match` from 1.3, in both packet-in
    formats. Debian's OVS 3.1 (dummy datapath, the same flow and ovs-ofctl monitor, an ICMP
    packet received on port 1) printed exactly these: `OFPT_PACKET_IN ... (via action)` and
    `NXT_PACKET_IN2 ... (via action)` over 1.0, `(via no_match)` for both over 1.3."""
    br, (h1, _) = bridge(daemon, net)
    ofctl(daemon, "add-flow", br, "priority=0,actions=CONTROLLER:200", proto=proto)
    out = packet_ins_of_a_ping(daemon, net, br, h1, proto, fmt)
    pins = [ln for ln in out.splitlines() if "PACKET_IN" in ln]
    assert pins, out
    assert all(via in ln for ln in pins), out


@pytest.mark.parametrize("proto", ["OpenFlow13", "OpenFlow15"])
def test_packet_in_reports_tunnel_options(daemon, net, proto):
    """The options a packet has (here set by the pipeline) come back in its packet-in's
    metadata, a zero value too, at their mapped lengths. Debian's OVS 3.1 (dummy datapath,
    the same map, flow and ovs-ofctl monitor, an ICMP packet received on port 1) printed
    `tun_metadata0=0x10002,tun_metadata1=0,in_port=1` over 1.3 and 1.5."""
    br, (h1, _) = bridge(daemon, net)
    ofctl(daemon, "add-tlv-map", br, "{class=0x102,type=0x80,len=4}->tun_metadata0,"
                                     "{class=0x102,type=0x81,len=8}->tun_metadata1")
    ofctl(daemon, "add-flow", br, "priority=90,icmp,in_port=1,actions=set_field:0x10002->"
                                  "tun_metadata0,set_field:0->tun_metadata1,CONTROLLER:200",
          proto=proto)
    out = packet_ins_of_a_ping(daemon, net, br, h1, proto, "nxt_packet_in2")
    pins = [ln for ln in out.splitlines() if "PACKET_IN" in ln]
    assert pins, out
    assert all("tun_metadata0=0x10002,tun_metadata1=0,in_port=1" in ln for ln in pins), out
