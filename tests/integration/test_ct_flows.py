"""Connection-tracking flows (issue #15, the OpenFlow side): `ct(...)` with commit, zones
(immediate and from a register), table, force, nat(src|dst=range, persistent, hash, random),
exec(set_field/load -> ct_mark/ct_label) and alg=ftp|tftp, `ct_clear`, `resubmit(,,ct)`, and the ct_* and
recirc_id/dp_hash matches, installed with Debian's ovs-ofctl over OpenFlow 1.0 (NXM), 1.3 and
1.5. dump-flows must print each exactly as OVS renders the same flow_mod itself
(`ovs-ofctl parse-flow`), and what ovs-ofctl refuses must be refused by the switch too.
"""

import pytest

from conftest import require
from test_ofctl import bridge, flow_lines, ofctl
from test_registers import ovs_rendering, rendering

PROTOS = [None, "OpenFlow13", "OpenFlow15"]

# The shapes OVN's and OpenStack's firewall and load-balancer flows take.
FLOWS = [
    "table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1,zone=NXM_NX_REG13[0..15])",
    "table=1,priority=100,ct_state=+trk+est-rel-inv,ct_zone=5,ip,actions=output:2",
    "table=1,priority=90,tcp,ct_state=+new+trk,tp_dst=80,"
    "actions=ct(commit,zone=5,exec(set_field:0x1->ct_mark,"
    "load:0x2a->NXM_NX_CT_LABEL[0..63]),table=2)",
    "table=1,priority=80,ct_state=+inv+trk,actions=drop",
    "table=1,priority=70,ct_mark=0x1/0x1,ct_label=0x2a/0xff,ct_state=+est+trk,ip,actions=ct_clear,"
    "resubmit(,3)",
    "table=2,priority=50,udp,actions=ct(commit,nat(src=10.0.0.1-10.0.0.9:1024-65535,random),"
    "alg=tftp)",
    "table=2,priority=40,tcp,nw_dst=10.0.0.100,tp_dst=21,"
    "actions=ct(commit,force,zone=7,nat(dst=192.168.1.2:2121,persistent),alg=ftp)",
    "table=2,priority=30,tcp6,actions=ct(commit,nat(dst=[fe80::1]-[fe80::2]:80-81,hash))",
    "table=3,priority=20,recirc_id=0x2,dp_hash=0x1/0xf,ct_state=+est+rpl,ct_nw_src=10.0.0.2,"
    "ct_nw_dst=10.0.0.0/24,ct_nw_proto=6,ct_tp_src=0x400/0xfc00,ct_tp_dst=80,ip,actions=output:1",
    "table=3,priority=10,ct_state=+new-est+trk,ipv6,ct_ipv6_src=fe80::/64,actions=ct(nat)",
    "table=4,priority=10,ct_state=+est+trk,ip,actions=resubmit(,5,ct),resubmit(1,6,ct),"
    "resubmit(LOCAL,254,ct)",
]

# ovs-ofctl sends these, and the switch must refuse them as OVS's own decoder does: NAT
# that translates without commit, ct_mark written without commit.
REFUSED = [
    "ip,actions=ct(nat(src=10.0.0.1))",
    "ip,actions=ct(exec(set_field:1->ct_mark))",
]


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl")


@pytest.mark.parametrize("proto", PROTOS)
def test_ct_flows_install_and_dump_as_ovs_renders_them(daemon, net, proto):
    br, _ = bridge(daemon, net, n_hosts=1)
    ofctl(daemon, "del-flows", br, proto=proto)
    for f in FLOWS:
        ofctl(daemon, "add-flow", br, f, proto=proto)
    lines = flow_lines(ofctl(daemon, "dump-flows", br, proto=proto).stdout)
    dumped = {rendering(l) for l in lines}
    want = {ovs_rendering(f, proto) for f in FLOWS}
    assert dumped == want, f"\nonly in ferrovs: {dumped - want}\nonly in OVS: {want - dumped}"


def test_what_ovs_ofctl_refuses_stays_refused(daemon, net):
    br, _ = bridge(daemon, net, n_hosts=1)
    ofctl(daemon, "del-flows", br)
    for f in REFUSED:
        r = ofctl(daemon, "add-flow", br, f, check=False)
        assert r.returncode != 0, f"the switch accepted {f}"
        assert "OFPBAC_BAD_ARGUMENT" in r.stderr, r.stderr
    assert flow_lines(ofctl(daemon, "dump-flows", br).stdout) == []
