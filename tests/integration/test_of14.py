"""OpenFlow 1.4/1.5 features with real peers: bundles (Debian's ovs-ofctl --bundle),
asynchronous messages between several controllers, the 1.4+ multiparts, 1.5 bucket
commands and flow monitors.

`ovs-ofctl BR` opens `$OVS_RUNDIR/BR.mgmt`; every test points OVS_RUNDIR at the daemon's
rundir.
"""

import shutil

import pytest

from test_ofctl import bridge, flow_specs, ofctl

pytestmark = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl")

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
