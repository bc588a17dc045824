"""Registers reg0-reg15 and their xreg/xxreg views, load/set_field/move/push/pop, driven by
Debian's ovs-ofctl over OpenFlow 1.0 (NXM), 1.3 and 1.5 (where OVS encodes register matches as
the 64-bit packet registers OXM_OF_PKT_REG0-7). Every flow must install, and dump-flows must
print it exactly as OVS renders the same flow_mod itself (`ovs-ofctl parse-flow`); then real
traffic goes through a pipeline that only forwards when the register semantics hold.
"""

import pytest

from conftest import require
from test_ofctl import bridge, flow_lines, ofctl, ping

PROTOS = [None, "OpenFlow13", "OpenFlow15"]

# The kinds of flows OVN 23.03 installs: matches on the high registers and the views, loads,
# moves between registers and packet fields, the register stack, zero values.
FLOWS = [
    "priority=100,reg14=0x1,metadata=0x1,actions=load:0x2->NXM_NX_REG15[],resubmit(,1)",
    "priority=90,reg0=0x80/0x80,reg10=0x2/0x2,reg13=0,reg15=0x3,metadata=0x1,"
    "actions=load:0->NXM_NX_REG0[],move:NXM_NX_REG14[]->NXM_NX_REG15[],"
    "push:NXM_NX_REG0[],pop:NXM_NX_REG1[0..15]",
    "priority=80,ip,xxreg0=0x20010db8000000000000000000000001,"
    "actions=move:NXM_NX_XXREG0[96..127]->NXM_OF_IP_DST[],resubmit(,2)",
    "priority=70,ip,reg0=0x8000/0x8000,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],"
    "set_field:0x5->reg12,set_field:0x1/0x1->reg10,load:0x1->NXM_NX_REG10[7]",
    "priority=60,xreg3=0x1/0x1,actions=set_field:0xabcdef->xreg7,"
    "move:OXM_OF_PKT_REG7[0..31]->NXM_NX_REG1[],load:0xff->NXM_NX_XXREG2[120..127]",
    "priority=50,reg8=0xffffffff,reg9=0x1/0xffff,reg11=0x0/0xff000000,actions=drop",
    "priority=40,xreg4=0x1234567800000000/0xffffffff00000000,"
    "actions=push:NXM_NX_XXREG1[],pop:NXM_NX_XXREG3[],set_field:0x1->xxreg0",
]


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl")


def rendering(line):
    """The flow's match (with its priority) and actions, as `ovs-ofctl` prints them, from a
    dump-flows line or a parse-flow line."""
    left, actions = line.split(" actions=", 1)
    return left.split()[-1].rstrip(","), actions.strip()


def ovs_rendering(flow, proto):
    """How OVS itself renders `flow` after encoding it for `proto`."""
    cmd = ["ovs-ofctl"] + (["-O", proto] if proto else []) + ["parse-flow", flow]
    from conftest import run

    out = run(cmd).stdout
    line = next(l for l in out.splitlines() if " ADD " in l)
    return rendering(line.split(" ADD ", 1)[1].replace("ADD ", ""))


@pytest.mark.parametrize("proto", PROTOS)
def test_register_flows_install_and_dump_as_ovs_renders_them(daemon, net, proto):
    br, _ = bridge(daemon, net, n_hosts=1)
    ofctl(daemon, "del-flows", br, proto=proto)
    for f in FLOWS:
        ofctl(daemon, "add-flow", br, f, proto=proto)
    dumped = {rendering(l) for l in flow_lines(ofctl(daemon, "dump-flows", br, proto=proto).stdout)}
    want = {ovs_rendering(f, proto) for f in FLOWS}
    assert dumped == want, f"\nonly in ferrovs: {dumped - want}\nonly in OVS: {want - dumped}"


@pytest.mark.parametrize("proto", ["OpenFlow13", "OpenFlow15"])
def test_traffic_follows_register_semantics(daemon, net, proto):
    """h1 <-> h2 pass only if loads, views, moves and the stack behave: each direction tags
    its packets in registers in table 0 and is forwarded by matching them in table 1."""
    br, (h1, h2) = bridge(daemon, net)
    ofctl(daemon, "del-flows", br, proto=proto)
    flows = [
        # Port 1: reg9 = 1, then swap reg0/reg1 through the stack.
        "table=0,priority=10,in_port=1,actions=load:0x1->NXM_NX_REG9[],load:0x7->NXM_NX_REG0[],"
        "push:NXM_NX_REG0[],pop:NXM_NX_REG1[],resubmit(,1)",
        # Port 2: reg8 = in_port via move, xxreg3's low bits via set_field.
        "table=0,priority=10,in_port=2,actions=move:NXM_OF_IN_PORT[]->NXM_NX_REG8[0..15],"
        "set_field:0x2a->xxreg3,resubmit(,1)",
        # xreg4 = reg8 << 32 | reg9.
        "table=1,priority=10,xreg4=0x1/0xffffffff,reg1=0x7,actions=output:2",
        "table=1,priority=10,xreg4=0x200000000/0xffffffff00000000,reg15=0x2a,actions=output:1",
        "table=1,priority=0,actions=drop",
    ]
    for f in flows:
        ofctl(daemon, "add-flow", br, f, proto=proto)
    ping(net, h1, "10.7.0.2", count=3)
    out = ofctl(daemon, "dump-flows", br, "table=1", proto=proto).stdout
    lines = [l for l in flow_lines(out) if "priority=10" in l]
    assert len(lines) == 2 and all("n_packets=0," not in l for l in lines), out
