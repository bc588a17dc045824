"""OpenFlow 1.4/1.5 features with real peers: bundles (Debian's ovs-ofctl --bundle),
asynchronous messages between several controllers, the 1.4+ multiparts, 1.5 bucket
commands and flow monitors.

`ovs-ofctl BR` opens `$OVS_RUNDIR/BR.mgmt`; every test points OVS_RUNDIR at the daemon's
rundir.
"""

import os
import re
import struct
import subprocess

import pytest

from conftest import require, wait_for
from test_controller import Raw, free_port, msg
from test_ofctl import bridge, flow_specs, ofctl



@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl")

BUNDLE_PROTOS = [None, "OpenFlow13", "OpenFlow14", "OpenFlow15"]


def specs(daemon, br, proto=None):
    return sorted(flow_specs(ofctl(daemon, "dump-flows", br, proto=proto).stdout))


@pytest.mark.parametrize("proto", BUNDLE_PROTOS)
def test_bundle_add_and_replace_flows(daemon, net, tmp_path, proto):
    br, _ = bridge(daemon, net)
    f = tmp_path / "flows.txt"
    f.write_text("priority=10,in_port=1,actions=output:2\n"
                 "priority=10,in_port=2,actions=output:1\n"
                 "table=1,priority=5,ip,actions=drop\n")
    ofctl(daemon, "--bundle", "add-flows", br, f, proto=proto)
    got = specs(daemon, br)
    assert any("in_port=1" in l and "actions=output:2" in l for l in got), got
    assert any("table=1" in l and "priority=5,ip" in l for l in got), got
    assert len(got) == 4  # with the bridge's NORMAL flow
    f.write_text("priority=20,udp,actions=drop\n"
                 "priority=10,in_port=1,actions=output:2\n")
    ofctl(daemon, "--bundle", "replace-flows", br, f, proto=proto)
    got = specs(daemon, br)
    assert len(got) == 2, got
    assert any("priority=20,udp" in l for l in got), got
    assert any("in_port=1" in l and "actions=output:2" in l for l in got), got


@pytest.mark.parametrize("proto", ["OpenFlow13", "OpenFlow14", "OpenFlow15"])
def test_bundle_with_a_failing_flow_changes_nothing(daemon, net, tmp_path, proto):
    br, _ = bridge(daemon, net)
    before = specs(daemon, br)
    f = tmp_path / "flows.txt"
    # The third flow refers to a group that does not exist: only the switch can tell.
    f.write_text("priority=10,in_port=1,actions=output:2\n"
                 "priority=11,in_port=2,actions=output:1\n"
                 "priority=12,in_port=1,tcp,actions=group:77\n"
                 "priority=13,in_port=2,udp,actions=drop\n")
    # ovs-ofctl prints the switch's errors but exits 0 (only transport errors are fatal).
    r = ofctl(daemon, "--bundle", "add-flows", br, f, proto=proto, check=False)
    out = r.stdout + r.stderr
    assert "OFPGMFC_UNKNOWN_GROUP" in out or "OFPBAC_BAD_OUT_GROUP" in out, out
    assert "OFPBFC_MSG_FAILED" in out, out
    assert specs(daemon, br) == before
    # A message the switch refuses when it is added: ovs-ofctl discards, nothing changes.
    f.write_text("priority=10,in_port=1,actions=output:2\n"
                 "table=1,actions=goto_table:1\n")
    r = ofctl(daemon, "--bundle", "add-flows", br, f, proto=proto, check=False)
    out = r.stdout + r.stderr
    assert "OFPBIC_BAD_TABLE_ID" in out, out
    assert specs(daemon, br) == before


def test_a_large_bundle_of_adds_is_all_or_nothing_and_looked_up(daemon, net, tmp_path):
    """A bundle of adds only is filed into subtables while it arrives and adopted whole at
    the commit when its mask is new to the table; a failing add still fails it all, and a
    later bundle into the same subtable is applied add by add."""
    br, _ = bridge(daemon, net)
    before = specs(daemon, br, "OpenFlow14")
    f = tmp_path / "flows.txt"
    lines = [f"priority=100,ip,nw_dst=10.2.{i >> 8}.{i & 255},actions=output:2"
             for i in range(300)]
    bad = lines[:150] + ["priority=100,ip,nw_dst=10.3.0.1,actions=group:77"] + lines[150:]
    f.write_text("\n".join(bad) + "\n")
    r = ofctl(daemon, "--bundle", "add-flows", br, f, proto="OpenFlow14", check=False)
    out = r.stdout + r.stderr
    assert "OFPBAC_BAD_OUT_GROUP" in out and "OFPBFC_MSG_FAILED" in out, out
    assert specs(daemon, br, "OpenFlow14") == before
    f.write_text("\n".join(lines) + "\n")
    ofctl(daemon, "--bundle", "add-flows", br, f, proto="OpenFlow14")
    got = [l for l in specs(daemon, br, "OpenFlow14") if "nw_dst" in l]
    assert len(got) == 300, len(got)
    out = daemon.cli("trace", br, "in_port=1,ip,nw_dst=10.2.1.7").stdout
    hit = [l for l in out.splitlines() if l.lstrip().startswith("0. ")]
    assert hit and "nw_dst=10.2.1.7" in hit[0], out
    # The same subtable again, with an identical flow whose actions change.
    more = [f"priority=100,ip,nw_dst=10.4.{i >> 8}.{i & 255},actions=output:2"
            for i in range(300)]
    more.append("priority=100,ip,nw_dst=10.2.1.7,actions=drop")
    f.write_text("\n".join(more) + "\n")
    ofctl(daemon, "--bundle", "add-flows", br, f, proto="OpenFlow14")
    got = [l for l in specs(daemon, br, "OpenFlow14") if "nw_dst" in l]
    assert len(got) == 600, len(got)
    assert any("nw_dst=10.2.1.7" in l and "actions=drop" in l for l in got), got


def test_bundle_applies_adds_deletes_and_modifies_in_order(daemon, net, tmp_path):
    """The adds of a bundle are built while it is received and applied at the commit,
    in order with the bundle's other flow_mods; the flows are then looked up at once."""
    br, _ = bridge(daemon, net)
    f = tmp_path / "flows.txt"
    f.write_text("add priority=10,ip,nw_dst=10.1.0.1,actions=output:2\n"
                 "add priority=10,ip,nw_dst=10.1.0.2,actions=output:2\n"
                 "delete_strict priority=10,ip,nw_dst=10.1.0.1\n"
                 "add priority=10,ip,nw_dst=10.1.0.2,actions=mod_vlan_vid:3,output:2\n"
                 "modify ip,nw_dst=10.1.0.2,actions=mod_vlan_vid:4,output:2\n"
                 "add priority=10,ip,nw_dst=10.1.0.3,actions=mod_vlan_vid:5,output:2\n"
                 "add priority=10,ip,nw_dst=10.1.0.3,actions=mod_vlan_vid:6,output:2\n")
    ofctl(daemon, "--bundle", "add-flows", br, f, proto="OpenFlow14")
    got = [l for l in specs(daemon, br, "OpenFlow14") if "nw_dst" in l]
    assert len(got) == 2, got
    # OpenFlow 1.4 carries mod_vlan_vid:N as push_vlan and set_field:(0x1000|N).
    assert any("nw_dst=10.1.0.2" in l and "set_field:4100->vlan_vid" in l for l in got), got
    assert any("nw_dst=10.1.0.3" in l and "set_field:4102->vlan_vid" in l for l in got), got
    for dst, vid in (("10.1.0.2", "vid=4"), ("10.1.0.3", "vid=6")):
        out = daemon.cli("trace", br, f"in_port=1,ip,nw_dst={dst}").stdout
        dp = [l for l in out.splitlines() if l.startswith("Datapath actions:")]
        assert dp and vid in dp[0], out
    # The deleted flow is gone: the bridge's NORMAL flow takes the packet.
    out = daemon.cli("trace", br, "in_port=1,ip,nw_dst=10.1.0.1").stdout
    hit = [l for l in out.splitlines() if l.lstrip().startswith("0. ")]
    assert hit and "nw_dst" not in hit[0], out


def test_bundle_group_and_flows_commit_together(daemon, net, tmp_path):
    br, _ = bridge(daemon, net)
    f = tmp_path / "groups.txt"
    f.write_text("group_id=5,type=all,bucket=output:1,bucket=output:2\n")
    ofctl(daemon, "--bundle", "add-groups", br, f, proto="OpenFlow14")
    out = ofctl(daemon, "dump-groups", br, proto="OpenFlow14").stdout
    assert "group_id=5,type=all" in out, out
    f = tmp_path / "flows.txt"
    f.write_text("priority=12,in_port=1,tcp,actions=group:5\n")
    ofctl(daemon, "--bundle", "add-flows", br, f, proto="OpenFlow14")
    assert any("group:5" in l for l in specs(daemon, br, "OpenFlow14"))


# ---------------------------------------------------------------- raw controllers

class Peer(Raw):
    """A minimal OpenFlow controller speaking one version (the test is the controller)."""

    def __init__(self, port, version):
        self.v = version
        super().__init__(port, version)

    def send(self, type_, body=b"", xid=1):
        self.s.sendall(msg(type_, body, xid, version=self.v))

    def none_of_type(self, t, wait=1.0):
        try:
            m = self.recv_type(t, timeout=wait)
        except TimeoutError:
            return True
        raise AssertionError(f"unexpected message {m!r}")

    def role(self, role, gen, xid=1):
        self.send(24, struct.pack("!I4xQ", role, gen), xid=xid)
        m = self.recv_type(25)
        return struct.unpack("!I4xQ", m[8:24])

    def close(self):
        self.s.close()


def group_mod14(group_id, port, xid):
    bucket = struct.pack("!HHII4x", 32, 0, 0xffffffff, 0xffffffff)
    bucket += struct.pack("!HHIH6x", 0, 16, port, 0xffff)
    return struct.pack("!HBxI", 0, 0, group_id) + bucket, xid


def test_role_status_and_requestforward_between_two_controllers(daemon, net):
    br, _ = bridge(daemon, net)
    port = free_port()
    daemon.cli("set-controller", br, f"ptcp:{port}:127.0.0.1")
    c1 = Peer(port, 5)
    c2 = Peer(port, 5)
    try:
        assert c1.role(2, 1) == (2, 1)  # master
        assert c2.role(2, 2) == (2, 2)  # master: c1 is demoted
        m = c1.recv_type(30)  # OFPT_ROLE_STATUS
        role, reason, gen = struct.unpack("!IB3xQ", m[8:24])
        assert (role, reason, gen) == (3, 0, 2)
        c2.none_of_type(30, wait=0.5)
        # c1 (now a slave) asks for forwarded group and meter mods (OFPACPT_REQUESTFORWARD_SLAVE).
        c1.send(28, struct.pack("!HHI", 10, 8, 0x3), xid=5)
        # The two connections are served by different threads: c1's set_async must be in
        # effect before c2's group_mod is handled, so wait for c1's barrier reply.
        c1.send(20, b"", xid=6)
        c1.recv_type(21)
        body, xid = group_mod14(9, 1, 0x77)
        c2.send(15, body, xid=xid)
        m = c1.recv_type(32)  # OFPT_REQUESTFORWARD
        inner = m[8:]
        assert inner[0] == 5 and inner[1] == 15, inner  # a 1.4 group_mod
        assert struct.unpack("!I", inner[4:8])[0] == 0x77  # the original xid
        assert inner[8:] == body
        c2.none_of_type(32, wait=0.5)  # not back to its sender
        # A slave may not change groups.
        c1.send(15, group_mod14(10, 1, 3)[0], xid=3)
        m = c1.recv_type(1)
        assert struct.unpack("!HH", m[8:12]) == (1, 10)  # BAD_REQUEST / IS_SLAVE
        # Controller status (1.5) lists both controllers with their roles and target.
        c3 = Peer(port, 6)
        c3.send(18, struct.pack("!HH4x", 18, 0), xid=9)
        m = c3.recv_type(19)
        body = m[16:]
        recs = []
        while body:
            n = struct.unpack("!H", body[:2])[0]
            recs.append(body[:n])
            body = body[n:]
        roles = sorted(struct.unpack("!I", r[4:8])[0] for r in recs)
        assert roles == [1, 2, 3], roles  # c3 equal, c2 master, c1 slave
        assert all(f"ptcp:{port}:127.0.0.1".encode() in r for r in recs)
        c3.close()
    finally:
        c1.close()
        c2.close()


def test_table_desc_vacancy_config_and_queue_desc(daemon, net):
    br, _ = bridge(daemon, net)
    out = ofctl(daemon, "dump-table-desc", br, proto="OpenFlow14").stdout
    assert "table 0:" in out and "table 253:" in out, out
    ofctl(daemon, "mod-table", br, "3", "vacancy:20,80", proto="OpenFlow14")
    out = ofctl(daemon, "dump-table-desc", br, proto="OpenFlow14").stdout
    t3 = out.split("table 3:")[1].split("table 4:")[0]
    assert "vacancy=on" in t3 and "vacancy_down=20%" in t3 and "vacancy_up=80%" in t3, t3
    t2 = out.split("table 2:")[1].split("table 3:")[0]
    assert "vacancy=on" not in t2, t2
    r = ofctl(daemon, "mod-table", br, "3", "vacancy:90,80", proto="OpenFlow14", check=False)
    assert r.returncode != 0
    ofctl(daemon, "mod-table", br, "3", "novacancy", proto="OpenFlow14")
    out = ofctl(daemon, "dump-table-desc", br, proto="OpenFlow14").stdout
    assert "vacancy=on" not in out.split("table 3:")[1].split("table 4:")[0]
    out = ofctl(daemon, "queue-get-config", br, proto="OpenFlow14").stdout
    assert "OFPST_QUEUE_DESC reply" in out, out
    assert "queue" not in out.split("reply", 1)[1].lower().replace("queue_desc", ""), out


def bucket_ids(out):
    return [int(x) for x in re.findall(r"bucket=bucket_id:(\d+)", out)]


def test_insert_and_remove_buckets_change_forwarding(daemon, net):
    from test_ofctl import ping
    br, (h1, h2) = bridge(daemon, net)
    p15 = "OpenFlow15"
    ofctl(daemon, "add-group", br,
          "group_id=1,type=all,bucket=bucket_id:10,output:2", proto=p15)
    ofctl(daemon, "add-flow", br, "priority=10,in_port=1,actions=group:1", proto=p15)
    ofctl(daemon, "add-flow", br, "priority=10,in_port=2,actions=output:1", proto=p15)
    ping(net, h1, "10.7.0.2")
    ofctl(daemon, "insert-buckets", br,
          "group_id=1,command_bucket_id=first,bucket=bucket_id:5,actions=drop", proto=p15)
    ofctl(daemon, "insert-buckets", br,
          "group_id=1,command_bucket_id=last,bucket=bucket_id:20,actions=drop", proto=p15)
    ofctl(daemon, "insert-buckets", br,
          "group_id=1,command_bucket_id=10,bucket=bucket_id:7,actions=drop", proto=p15)
    out = ofctl(daemon, "dump-groups", br, proto=p15).stdout
    assert bucket_ids(out) == [5, 7, 10, 20], out
    assert "type=all" in out
    r = ofctl(daemon, "insert-buckets", br,
              "group_id=1,command_bucket_id=99,bucket=bucket_id:8,actions=drop", proto=p15,
              check=False)
    assert r.returncode != 0 and "OFPGMFC_UNKNOWN_BUCKET" in r.stderr, r.stderr
    ofctl(daemon, "remove-buckets", br, "group_id=1,command_bucket_id=7", proto=p15)
    ofctl(daemon, "remove-buckets", br, "group_id=1,command_bucket_id=first", proto=p15)
    ofctl(daemon, "remove-buckets", br, "group_id=1,command_bucket_id=last", proto=p15)
    assert bucket_ids(ofctl(daemon, "dump-groups", br, proto=p15).stdout) == [10]
    ping(net, h1, "10.7.0.2")
    # Without buckets the group drops: cached datapath flows must see it.
    ofctl(daemon, "remove-buckets", br, "group_id=1,command_bucket_id=all", proto=p15)
    assert bucket_ids(ofctl(daemon, "dump-groups", br, proto=p15).stdout) == []
    assert ping(net, h1, "10.7.0.2", check=False).returncode != 0
    ofctl(daemon, "insert-buckets", br,
          "group_id=1,command_bucket_id=last,bucket=bucket_id:1,output:2", proto=p15)
    ping(net, h1, "10.7.0.2")


@pytest.mark.parametrize("proto", [None, "OpenFlow13", "OpenFlow14", "OpenFlow15"])
def test_monitor_watch_reports_initial_added_modified_deleted(daemon, net, tmp_path, proto):
    br, _ = bridge(daemon, net)
    ofctl(daemon, "add-flow", br, "priority=5,ip,actions=drop")
    cmd = ["ovs-ofctl"] + (["-O", proto] if proto else []) + ["monitor", br, "watch:"]
    env = dict(os.environ, OVS_RUNDIR=str(daemon.rundir))
    out = open(tmp_path / "monitor.txt", "w+")
    mon = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for(lambda: "FLOW_MONITOR reply" in (tmp_path / "monitor.txt").read_text(),
                 what="the initial monitor reply")
        ofctl(daemon, "add-flow", br, "priority=7,udp,actions=output:1")
        ofctl(daemon, "mod-flows", br, "udp,actions=output:2")
        ofctl(daemon, "--strict", "del-flows", br, "priority=7,udp")
        # A bundle's flows are reported once committed.
        f = tmp_path / "flows.txt"
        f.write_text("priority=8,tcp,actions=drop\n")
        ofctl(daemon, "--bundle", "add-flows", br, f, proto="OpenFlow14")
        wait_for(lambda: "tcp" in (tmp_path / "monitor.txt").read_text(),
                 what="the bundle's flow")
    finally:
        mon.terminate()
        mon.wait(timeout=10)
        out.close()
    text = (tmp_path / "monitor.txt").read_text()
    lines = [l.strip() for l in text.splitlines() if l.strip().startswith("event=")]
    first = "INITIAL" if proto in ("OpenFlow14", "OpenFlow15") else "ADDED"
    assert f"event={first} table=0 cookie=0 ip" in lines, text
    assert f"event={first} table=0 cookie=0 actions=NORMAL" in lines, text
    assert "event=ADDED table=0 cookie=0 udp actions=output:1" in lines, text
    assert "event=MODIFIED table=0 cookie=0 udp actions=output:2" in lines, text
    assert "event=DELETED reason=delete table=0 cookie=0 udp actions=output:2" in lines, text
    assert "event=ADDED table=0 cookie=0 tcp" in lines, text
    order = [lines.index(x) for x in (
        "event=ADDED table=0 cookie=0 udp actions=output:1",
        "event=MODIFIED table=0 cookie=0 udp actions=output:2",
        "event=DELETED reason=delete table=0 cookie=0 udp actions=output:2")]
    assert order == sorted(order), text


def test_meter_flows_read_the_same_in_13_14_15(daemon, net):
    br, _ = bridge(daemon, net)
    ofctl(daemon, "add-meter", br, "meter=3,pktps,band=type=drop,rate=50", proto="OpenFlow13")
    # 1.3 sends the meter instruction, 1.5 the meter action.
    ofctl(daemon, "add-flow", br, "priority=9,ip,actions=meter:3,output:2", proto="OpenFlow13")
    ofctl(daemon, "add-flow", br, "priority=8,udp,actions=meter:3,output:2", proto="OpenFlow15")
    for proto in ["OpenFlow13", "OpenFlow14", "OpenFlow15"]:
        r = ofctl(daemon, "dump-flows", br, proto=proto)
        got = flow_specs(r.stdout)
        assert "WARN" not in r.stderr, r.stderr
        assert any("priority=9,ip actions=meter:3,output:2" in l for l in got), (proto, got)
        assert any("priority=8,udp actions=meter:3,output:2" in l for l in got), (proto, got)
    out = ofctl(daemon, "meter-stats", br, proto="OpenFlow15").stdout
    assert "flow_count:2" in out, out
    r = ofctl(daemon, "add-flow", br, "actions=meter:9,output:1", proto="OpenFlow15", check=False)
    assert r.returncode != 0 and "OFPMMFC_UNKNOWN_METER" in r.stderr, r.stderr
