"""Debian's real ovs-ofctl against ferrovs's per-bridge management socket.

`ovs-ofctl BR` opens `$OVS_RUNDIR/BR.mgmt`; every test points OVS_RUNDIR at the daemon's
rundir. Each command is run plain (OpenFlow 1.0 + Nicira extensions, what users type) and
with `-O OpenFlow13/14/15`, and its output is checked for what OVS would say.
"""

import os
import re
import subprocess
import time

import pytest

from conftest import BIN, require, run, wait_for

PROTOS = [None, "OpenFlow13", "OpenFlow14", "OpenFlow15"]



@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl")


def ofctl(daemon, *args, proto=None, check=True, timeout=20):
    cmd = ["ovs-ofctl", "--timeout=10"]
    if proto:
        cmd += ["-O", proto]
    cmd += [str(a) for a in args]
    env = dict(os.environ, OVS_RUNDIR=str(daemon.rundir))
    return run(cmd, check=check, timeout=timeout, env=env)


def bridge(daemon, net, n_hosts=2):
    """An openflow bridge with N namespace hosts on ofports 1..N (10.7.0.i/24)."""
    br = f"fo{net.tag}"[:15]
    daemon.cli("add-br", br)
    hosts = []
    for i in range(1, n_hosts + 1):
        ns, sw_if = net.host(f"h{i}", ip=f"10.7.0.{i}/24", mac=f"02:00:00:00:07:0{i}")
        daemon.cli("add-port", br, sw_if, f"ofport={i}")
        hosts.append(ns)
    return br, hosts


def ping(net, ns, ip, count=2, check=True):
    return net.ns(ns, f"ping -c {count} -i 0.2 -W 1 {ip}", check=check, timeout=20)


def flow_lines(out):
    return [l.strip() for l in out.splitlines() if "actions=" in l]


def flow_specs(out):
    """Flows without their counters and ages."""
    return [re.sub(r"(duration|n_packets|n_bytes|idle_age|hard_age)=[^,]*, ?", "", l)
            for l in flow_lines(out)]


def n_packets(line):
    m = re.search(r"n_packets=(\d+)", line)
    return int(m.group(1)) if m else None


@pytest.mark.parametrize("proto", PROTOS)
def test_show_features_ports_and_config(daemon, net, proto):
    br, _ = bridge(daemon, net)
    out = ofctl(daemon, "show", br, proto=proto).stdout
    assert "n_tables:254" in out
    m = re.search(r"dpid:([0-9a-f]{16})", out)
    assert m
    local_mac = daemon.json("show")["bridges"][0]["ports"]
    mac = next(p["mac"] for p in local_mac if p["ofport"] == 65534)
    assert m.group(1) == "0000" + mac.replace(":", "")
    assert f" 1(fv{net.tag}h1)" in out and f" 2(fv{net.tag}h2)" in out
    assert f"LOCAL({br})" in out
    assert "miss_send_len=0" in out  # a management connection gets no packet-ins


@pytest.mark.parametrize("proto", PROTOS)
def test_flows_add_mod_del_dump_with_counters(daemon, net, tmp_path, proto):
    br, (h1, h2) = bridge(daemon, net)
    ofctl(daemon, "del-flows", br, proto=proto)
    assert flow_lines(ofctl(daemon, "dump-flows", br, proto=proto).stdout) == []
    ping(net, h1, "10.7.0.2", count=1, check=False)  # no flows: nothing passes
    flows = tmp_path / "flows.txt"
    flows.write_text("priority=10,in_port=1,actions=output:2\n"
                     "priority=10,in_port=2,actions=output:1\n"
                     "table=0,priority=5,ip,nw_dst=10.7.0.99,actions=drop\n")
    ofctl(daemon, "add-flows", br, flows, proto=proto)
    ofctl(daemon, "add-flow", br, "priority=1,arp,actions=NORMAL", proto=proto)
    ping(net, h1, "10.7.0.2", count=3)
    out = ofctl(daemon, "dump-flows", br, proto=proto).stdout
    lines = flow_lines(out)
    assert len(lines) == 4, out
    by_port = {l.split("in_port=")[1].split(",")[0].split(" ")[0]: l
               for l in lines if "in_port=" in l}
    assert n_packets(by_port["1"]) >= 3 and n_packets(by_port["2"]) >= 3, out
    # mod-flows: in_port=1 now drops, ping fails; counters keep (modify keeps stats).
    ofctl(daemon, "mod-flows", br, "in_port=1,actions=drop", proto=proto)
    assert ping(net, h1, "10.7.0.2", count=2, check=False).returncode != 0
    out = ofctl(daemon, "dump-flows", br, "in_port=1", proto=proto).stdout
    assert "actions=drop" in out and len(flow_lines(out)) == 1
    # del-flows with a match removes just that flow; --strict honours priority.
    ofctl(daemon, "--strict", "del-flows", br, "priority=10,in_port=2", proto=proto)
    out = ofctl(daemon, "dump-flows", br, proto=proto).stdout
    assert len(flow_lines(out)) == 3 and "in_port=2" not in out
    ofctl(daemon, "del-flows", br, proto=proto)
    assert flow_lines(ofctl(daemon, "dump-flows", br, proto=proto).stdout) == []


@pytest.mark.parametrize("proto", PROTOS)
def test_dump_ports_desc_tables(daemon, net, proto):
    br, (h1, _) = bridge(daemon, net)
    ping(net, h1, "10.7.0.2", count=2)
    out = ofctl(daemon, "dump-ports", br, proto=proto).stdout
    assert re.search(r"\d+ ports", out)
    m = re.search(r"port +1: rx pkts=(\d+)", out)
    assert m and int(m.group(1)) >= 2, out
    out = ofctl(daemon, "dump-ports", br, "2", proto=proto).stdout
    assert re.search(r"port +2: rx pkts=\d+", out) and "1 ports" in out
    out = ofctl(daemon, "dump-ports-desc", br, proto=proto).stdout
    assert f"1(fv{net.tag}h1)" in out and f"LOCAL({br})" in out
    out = ofctl(daemon, "dump-tables", br, proto=proto).stdout
    assert 'table 0' in out and "active=1" in out


@pytest.mark.parametrize("proto", ["OpenFlow13", "OpenFlow14", "OpenFlow15"])
def test_groups_and_meters(daemon, net, proto):
    br, (h1, _) = bridge(daemon, net)
    ofctl(daemon, "add-group", br, "group_id=7,type=all,bucket=output:1,bucket=output:2",
          proto=proto)
    ofctl(daemon, "add-group", br, "group_id=8,type=select,bucket=weight:5,output:1",
          proto=proto)
    out = ofctl(daemon, "dump-groups", br, proto=proto).stdout
    assert "group_id=7,type=all,bucket=" in out and "group_id=8,type=select" in out
    ofctl(daemon, "add-meter", br, "meter=3,pktps,burst,band=type=drop,rate=50,burst_size=10",
          proto=proto)
    out = ofctl(daemon, "dump-meters", br, proto=proto).stdout
    assert "meter=3 pktps burst" in out and "rate=50" in out
    # (OpenFlow 1.5 says meter:3 with a meter action, 1.3/1.4 with the meter instruction.)
    ofctl(daemon, "add-flow", br, "priority=100,in_port=1,icmp,actions=meter:3,output:2",
          proto=proto)
    out = ofctl(daemon, "dump-flows", br, proto=proto).stdout
    assert "actions=meter:3,output:2" in out, out
    ping(net, h1, "10.7.0.2", count=2)
    out = ofctl(daemon, "meter-stats", br, proto=proto).stdout
    assert "meter:3" in out and "flow_count:1" in out
    m = re.search(r"packet_in_count:(\d+)", out)
    assert m and int(m.group(1)) >= 2, out
    out = ofctl(daemon, "dump-group-stats", br, proto=proto).stdout
    assert "group_id=7" in out
    # A bad group (unknown in a chained group) is refused with OVS's words and changes nothing.
    r = ofctl(daemon, "add-flow", br, "actions=group:99", proto=proto, check=False)
    assert r.returncode != 0 and "OFPBAC_BAD_OUT_GROUP" in r.stderr + r.stdout
    ofctl(daemon, "del-groups", br, proto=proto)
    assert "group_id" not in ofctl(daemon, "dump-groups", br, proto=proto).stdout


def test_plain_dump_lists_flows_openflow10_cannot_fully_express(daemon, net):
    """Over OpenFlow 1.0 (plain ovs-ofctl) every flow is listed, as OVS lists it: goto_table
    as resubmit(,T), write_metadata as the Nicira action, meter and write/clear-actions left
    out (1.0 cannot say them). Before, such flows were missing from the dump altogether."""
    br, _ = bridge(daemon, net)
    ofctl(daemon, "add-meter", br, "meter=3,pktps,band=type=drop,rate=50", proto="OpenFlow13")
    ofctl(daemon, "add-flow", br,
          "priority=5,in_port=1,actions=meter:3,output:2,write_metadata:0x5/0xff,goto_table:3",
          proto="OpenFlow13")
    ofctl(daemon, "add-flow", br, "table=3,priority=7,actions=clear_actions,write_actions(output:1)",
          proto="OpenFlow13")
    out = ofctl(daemon, "dump-flows", br).stdout
    assert "decode error" not in out, out
    specs = flow_specs(out)
    assert "table=0, priority=5,in_port=1 actions=output:2,resubmit(,3),write_metadata:0x5/0xff" \
        in [re.sub(r"cookie=[^,]*, ", "", l) for l in specs], out
    assert any("table=3" in l and "priority=7" in l and l.endswith("actions=drop")
               for l in specs), out
    # The same flows in full over OpenFlow 1.3.
    out = ofctl(daemon, "dump-flows", br, proto="OpenFlow13").stdout
    assert "actions=meter:3,output:2,write_metadata:0x5/0xff,goto_table:3" in out, out
    assert "actions=clear_actions,write_actions(output:1)" in out, out
    # Plain ovs-ofctl sends a group action in its Nicira 1.0 form; push_vlan is implied by
    # 1.0's mod_vlan_vid; set_nw_ttl is a register load to NXM_NX_IP_TTL.
    ofctl(daemon, "add-group", br, "group_id=1,type=all,bucket=output:1", proto="OpenFlow13")
    ofctl(daemon, "add-flow", br, "priority=6,in_port=2,actions=group:1")
    ofctl(daemon, "add-flow", br,
          "priority=6,in_port=1,actions=push_vlan:0x8100,set_field:4097->vlan_vid,output:2",
          proto="OpenFlow13")
    ofctl(daemon, "add-flow", br, "priority=6,ip,in_port=1,actions=mod_nw_ttl:9,output:2",
          proto="OpenFlow13")
    out = ofctl(daemon, "dump-flows", br).stdout
    assert "decode error" not in out, out
    assert "priority=6,in_port=2 actions=group:1" in out, out
    assert "priority=6,in_port=1 actions=mod_vlan_vid:1,output:2" in out, out
    assert "priority=6,ip,in_port=1 actions=load:0x9->NXM_NX_IP_TTL[],output:2" in out, out
    # Nicira registers: matched and loaded, in both forms.
    ofctl(daemon, "add-flow", br, "table=1,priority=3,reg0=0x5,actions=load:0x7->NXM_NX_REG1[],output:2")
    out = ofctl(daemon, "dump-flows", br, "table=1").stdout
    assert "priority=3,reg0=0x5 actions=load:0x7->NXM_NX_REG1[],output:2" in out, out
    # A load stays a load over 1.3 (OVS keeps how an action arrived); 1.5 has only set_field.
    out = ofctl(daemon, "dump-flows", br, "table=1", proto="OpenFlow13").stdout
    assert "priority=3,reg0=0x5 actions=load:0x7->NXM_NX_REG1[],output:2" in out, out
    out = ofctl(daemon, "dump-flows", br, "table=1", proto="OpenFlow15").stdout
    assert "priority=3,reg0=0x5 actions=set_field:0x7->reg1,output:2" in out, out
    out = ofctl(daemon, "dump-flows", br, proto="OpenFlow13").stdout
    assert "priority=6,in_port=2 actions=group:1" in out, out
    assert "actions=push_vlan:0x8100,set_field:4097->vlan_vid,output:2" in out, out
    assert "actions=mod_nw_ttl:9,output:2" in out, out


def test_a_dump_of_large_flows_is_complete(daemon, net, tmp_path):
    """300 flows each with a 1.8 KB `note` do not fit 128 to a 64 KiB reply message: every
    version still lists all of them (the replies are split by size, as OVS splits them;
    before, each over-long message was dropped and the dump held 44 flows)."""
    br, _ = bridge(daemon, net)
    note = ".".join(["ab"] * 600)
    flows = tmp_path / "big.flows"
    flows.write_text("".join(f"priority={i + 1},ip,nw_dst=10.0.{i // 250}.{i % 250},"
                             f"actions=note:{note},output:1\n" for i in range(300)))
    ofctl(daemon, "add-flows", br, flows, proto="OpenFlow15")
    for proto in ("OpenFlow10", "OpenFlow13", "OpenFlow15"):
        out = ofctl(daemon, "dump-flows", br, proto=proto).stdout
        assert len([ln for ln in flow_lines(out) if note in ln]) == 300, (proto, len(out))
    out = ofctl(daemon, "dump-aggregate", br, "ip", proto="OpenFlow13").stdout
    assert "flow_count=300" in out, out


ARP = ("ffffffffffff020000000799080600010800060400010200000007990a070063"
       "0000000000000a070002")


@pytest.mark.parametrize("proto", PROTOS)
def test_packet_out_reaches_the_port(daemon, net, proto):
    br, (h1, h2) = bridge(daemon, net)

    def tx2():
        out = ofctl(daemon, "dump-ports", br, "2").stdout
        return int(re.search(r"tx pkts=(\d+)", out).group(1))

    before = tx2()
    ofctl(daemon, "packet-out", br, "CONTROLLER", "output:2", ARP, proto=proto)
    wait_for(lambda: tx2() >= before + 1, what="packet-out transmitted")
    # TABLE runs the pipeline: a flow for in_port=1 sends it to port 2.
    ofctl(daemon, "add-flow", br, "priority=50,in_port=1,arp,actions=output:2")
    before = tx2()
    ofctl(daemon, "packet-out", br, "1", "TABLE", ARP, proto=proto)
    wait_for(lambda: tx2() >= before + 1, what="packet-out through TABLE")


# 02:00:00:00:07:99 -> 02:00:00:00:07:02, 10.7.0.99 -> 10.7.0.2, ICMP echo.
ICMP4 = ("02000000070202000000079908004500002300010000400166670a0700630a07"
         "00020800f7ff0000000000000000000000")


@pytest.mark.parametrize("proto", ["OpenFlow13", "OpenFlow15"])
def test_packet_out_actions_are_checked_against_the_packet(daemon, net, proto):
    """The packet establishes what a packet-out's actions may use, as in OVS (ovn-controller's
    pinctrl sends its ICMP errors so): moving the IPv4 source into the destination is fine on
    an IPv4 packet and OFPBAC_MATCH_INCONSISTENT on an ARP one. Debian's OVS 3.1 (dummy
    datapath, the same ovs-ofctl packet-outs in OpenFlow 1.5) accepted the first and refused
    the second with that error."""
    br, _ = bridge(daemon, net)
    acts = "move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[],set_field:10.7.0.254->ip_src,output:2"
    ofctl(daemon, "packet-out", br, "CONTROLLER", acts, ICMP4, proto=proto)
    r = ofctl(daemon, "packet-out", br, "CONTROLLER", acts, ARP, proto=proto, check=False)
    assert r.returncode != 0 and "OFPBAC_MATCH_INCONSISTENT" in r.stderr, r.stderr


@pytest.mark.parametrize("proto", [None, "OpenFlow13", "OpenFlow14"])
def test_mod_port_down_and_no_flood(daemon, net, proto):
    br, (h1, _h2, _h3) = bridge(daemon, net, n_hosts=3)
    ofctl(daemon, "mod-port", br, "2", "no-flood", proto=proto)
    def port_desc(n):
        out = ofctl(daemon, "dump-ports-desc", br, proto=proto).stdout
        return re.split(r"\n \S+\(", out.split(f" {n}(", 1)[1])[0]

    if proto is None:
        # NO_FLOOD exists only in OpenFlow 1.0 (OVS's 1.1+ encodings have no such bit).
        assert "NO_FLOOD" in port_desc(2)
    # FLOOD now skips port 2.
    ofctl(daemon, "add-flow", br, "priority=60,in_port=1,actions=FLOOD")
    ping(net, h1, "10.7.0.2", count=1, check=False)
    ofctl(daemon, "mod-port", br, "2", "flood", proto=proto)
    ofctl(daemon, "mod-port", br, "3", "down", proto=proto)
    assert "PORT_DOWN" in port_desc(3)
    assert "NO_FLOOD" not in port_desc(2)
    r = ofctl(daemon, "mod-port", br, "77", "down", proto=proto, check=False)
    assert r.returncode != 0


def test_errors_are_reported_and_change_nothing(daemon, net):
    br, _ = bridge(daemon, net)
    before = ofctl(daemon, "dump-flows", br).stdout
    r = ofctl(daemon, "add-flow", br, "table=1,actions=goto_table:1", proto="OpenFlow13",
              check=False)
    assert r.returncode != 0 and "OFPBIC_BAD_TABLE_ID" in r.stderr + r.stdout
    r = ofctl(daemon, "add-flow", br, "actions=meter:9", proto="OpenFlow13", check=False)
    assert r.returncode != 0 and "OFPMMFC_UNKNOWN_METER" in r.stderr + r.stdout
    assert flow_specs(ofctl(daemon, "dump-flows", br).stdout) == flow_specs(before)


def test_protocols_setting_restricts_versions(daemon, net):
    br, _ = bridge(daemon, net)
    daemon.cli("set-openflow", br, "protocols=OpenFlow13")
    assert "OF1.3" in ofctl(daemon, "-O", "OpenFlow13", "show", br).stdout
    r = ofctl(daemon, "-O", "OpenFlow10", "show", br, check=False)
    assert r.returncode != 0
    assert "protocols=OpenFlow13" in daemon.cli("get-openflow", br).stdout


def test_monitor_and_snoop(daemon, net):
    br, (h1, _) = bridge(daemon, net)
    ofctl(daemon, "add-flow", br, "priority=90,icmp,in_port=1,actions=CONTROLLER:128")
    mon = subprocess.Popen([str(BIN / "ferrovs"), "--rundir", str(daemon.rundir), "monitor", br,
                            "--duration", "15"], stdout=subprocess.PIPE, text=True)
    snoop = subprocess.Popen([str(BIN / "ferrovs"), "--rundir", str(daemon.rundir), "snoop", br,
                              "--duration", "15"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        ping(net, h1, "10.7.0.2", count=2, check=False)
        ofctl(daemon, "add-flow", br, "priority=3,udp,actions=drop")
        ofctl(daemon, "add-flow", br, "priority=4,tcp,actions=drop")
        ofctl(daemon, "--strict", "del-flows", br, "priority=4,tcp")
        time.sleep(1.5)
    finally:
        mon.terminate()
        snoop.terminate()
        mout = mon.communicate(timeout=10)[0]
        sout = snoop.communicate(timeout=10)[0]
    assert "OFPT_PACKET_IN" in mout and "reason=action" in mout and "nw_proto=1" in mout
    assert "OFPT_FLOW_MOD" in sout or "FlowMod" in sout or "Nx(FlowMod" in sout, sout


def test_controller_cli_verbs(daemon, net):
    br, _ = bridge(daemon, net)
    assert daemon.cli("get-fail-mode", br).stdout.strip() == "standalone"
    daemon.cli("set-fail-mode", br, "secure")
    assert daemon.cli("get-fail-mode", br).stdout.strip() == "secure"
    assert daemon.cli("set-fail-mode", br, "bogus", check=False).returncode == 1
    daemon.cli("set-controller", br, "tcp:127.0.0.1:1", "ptcp:0:127.0.0.1")
    out = daemon.cli("get-controller", br).stdout
    assert "tcp:127.0.0.1:1" in out and "ptcp:0:127.0.0.1" in out
    assert daemon.cli("set-controller", br, "bogus:x", check=False).returncode == 1
    daemon.cli("del-controller", br)
    assert daemon.cli("get-controller", br).stdout.strip() == ""
    daemon.cli("del-br", br)
    assert not (daemon.rundir / f"{br}.mgmt").exists()


def test_timeouts_expire_rules_and_traffic_keeps_idle_ones(daemon, net):
    """Hard and idle timeouts remove rules about when they should (the revalidator checks
    once a second); traffic through a rule keeps its idle timeout from firing."""
    br, (h1, h2) = bridge(daemon, net)
    ofctl(daemon, "del-flows", br)
    ofctl(daemon, "add-flow", br, "priority=1,actions=NORMAL")
    ofctl(daemon, "add-flow", br, "priority=9,hard_timeout=2,ip,nw_dst=10.9.9.9,actions=drop")
    ofctl(daemon, "add-flow", br, "priority=9,idle_timeout=2,ip,nw_dst=10.9.9.8,actions=drop")
    ofctl(daemon, "add-flow", br, "priority=9,idle_timeout=2,icmp,actions=NORMAL")
    t0 = time.time()
    pinger = net.spawn(h1, ["ping", "-i", "0.2", "-c", "30", "10.7.0.2"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: "10.9.9.9" not in ofctl(daemon, "dump-flows", br).stdout,
                 timeout=6, what="the hard timeout")
        wait_for(lambda: "10.9.9.8" not in ofctl(daemon, "dump-flows", br).stdout,
                 timeout=6, what="the idle timeout")
        assert time.time() - t0 >= 1.9
        time.sleep(2.5)
        flows = ofctl(daemon, "dump-flows", br).stdout
        assert "icmp" in flows, f"a used rule expired: {flows}"
    finally:
        pinger.kill()
        pinger.wait()
    wait_for(lambda: "icmp" not in ofctl(daemon, "dump-flows", br).stdout, timeout=8,
             what="the idle timeout once traffic stops")
