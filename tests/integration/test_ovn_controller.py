"""OVN's `controller(...)` action on a running ferrovsd: pause and resume driven by Debian's
ovs-ofctl (whose `monitor ... resume` answers every paused packet-in with an NXT_RESUME built
by OVS's library, as ovn-controller's pinctrl does), packet-ins routed by controller id, and
ovn-controller itself: the table it installs for one logical switch with native DHCP, as on
an Open vSwitch chassis, and a DHCP lease from pinctrl through pause and resume.
"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import HELPERS, require, run
from test_ofctl import bridge, ofctl, ping

sys.path.insert(0, str(HELPERS))
import ovn  # noqa: E402


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl", "ping")


def monitor(daemon, br, *args):
    env = dict(os.environ, OVS_RUNDIR=str(daemon.rundir))
    return subprocess.Popen(["ovs-ofctl", "-O", "OpenFlow15", "-P", "nxt_packet_in2", "monitor",
                             br, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)


def stop(mon):
    mon.terminate()
    return mon.communicate(timeout=10)[0]


def test_pause_holds_the_packet_until_resumed(daemon, net):
    """h1's pings go through `controller(userdata=...,pause)`: nothing reaches h2 until a
    controller resumes each one; the actions after the pause then run (a register set, a
    resubmit to a table that outputs only with it)."""
    br, (h1, _) = bridge(daemon, net)
    for f in ["priority=100,icmp,in_port=1,"
              "actions=controller(userdata=01.02,pause),set_field:0x5->reg0,resubmit(,1)",
              "table=1,priority=100,reg0=5,actions=output:2"]:
        ofctl(daemon, "add-flow", br, f, proto="OpenFlow15")
    # Nobody resumes: the requests stay paused.
    assert ping(net, h1, "10.7.0.2", count=2, check=False).returncode != 0
    mon = monitor(daemon, br, "resume")
    try:
        time.sleep(1.0)
        r = ping(net, h1, "10.7.0.2", count=3, check=False)
    finally:
        out = stop(mon)
    assert r.returncode == 0, out
    assert "NXT_PACKET_IN2" in out and "userdata=01.02" in out, out
    assert "send: NXT_RESUME" in out, out
    dump = ofctl(daemon, "dump-flows", br, "table=1").stdout
    assert "n_packets=0" not in dump, dump


def test_stale_or_bad_continuations_get_errors(daemon, net):
    """A continuation ferrovsd did not make, or one that is not one, is refused with OVS's
    errors and the connection stays up."""
    br, _ = bridge(daemon, net)
    s = connect(daemon, br)
    try:
        pkt = bytes(range(60))
        meta = bytes.fromhex("8000000400000001")
        for cont, want in [(b"", (0xffff, 35)),  # NXR_STALE: none at all
                           (prop(0x8100, bytes(16)), (0xffff, 35)),  # another key
                           (prop(0x8200, b""), (14, 0)),  # OFPBPC_BAD_TYPE
                           (struct.pack("!HH", 0x8100, 60), (14, 1))]:  # OFPBPC_BAD_LEN
            body = (prop(0, pkt) + prop(5, b"\x01") + prop(6, meta)
                    + prop(8, b"\0" * 4 + cont))
            send_nx(s, 28, body, xid=7)
            err = read_until(s, lambda t, b: t == 1)
            typ, code = struct.unpack("!HH", err[8:12])
            assert (typ, code) == want, (cont, err.hex())
        send(s, 2, b"ping", xid=9)  # echo: still connected
        assert read_until(s, lambda t, b: t == 3)[8:] == b"ping"
    finally:
        s.close()


def test_packet_ins_go_to_the_connections_with_their_controller_id(daemon, net):
    """`controller(id=5,...)` reaches only connections that set controller id 5 with
    NXT_SET_CONTROLLER_ID; `controller(...)` without an id only those with id 0 (ovs-ofctl's
    monitor), as OVS routes them."""
    br, (h1, _) = bridge(daemon, net)
    ofctl(daemon, "add-flow", br,
          "priority=100,icmp,in_port=1,"
          "actions=controller(id=5,userdata=05),controller(userdata=00),output:2",
          proto="OpenFlow15")
    s = connect(daemon, br, controller_id=5)
    mon = monitor(daemon, br, "65535")
    try:
        time.sleep(1.0)
        ping(net, h1, "10.7.0.2", count=2)
        got = []
        s.settimeout(2)
        try:
            while True:
                m = read_msg(s)
                if m[1] == 4 and m[12:16] == b"\0\0\0\x1e":  # NXT_PACKET_IN2
                    got.append(userdata(m))
        except (socket.timeout, TimeoutError):
            pass
    finally:
        s.close()
        out = stop(mon)
    assert got and set(got) == {b"\x05"}, got
    assert "userdata=00" in out and "userdata=05" not in out, out


def test_packet_in_reports_the_connection_tracking_fields(daemon, net):
    """A packet-in after `ct(commit,...,table=1)` carries the connection's state, zone, mark
    and original tuple in its metadata, as OVS's does (pinctrl reads them); the registers
    as the pipeline set them."""
    br, (h1, _) = bridge(daemon, net)
    for f in ["priority=100,icmp,in_port=1,actions=set_field:0x9->reg13,"
              "ct(commit,zone=7,exec(set_field:0x5->ct_mark),table=1)",
              "table=1,priority=100,icmp,actions=controller(userdata=0a),output:2"]:
        ofctl(daemon, "add-flow", br, f, proto="OpenFlow15")
    # A management connection gets packet-ins once it sets a miss length, as with OVS.
    mon = monitor(daemon, br, "65535")
    try:
        time.sleep(1.0)
        ping(net, h1, "10.7.0.2", count=1)
        time.sleep(0.5)
    finally:
        out = stop(mon)
    assert "NXT_PACKET_IN2" in out, out
    for want in ["ct_state=new|trk", "ct_zone=7", "ct_mark=0x5", "ct_nw_src=10.7.0.1",
                 "ct_nw_dst=10.7.0.2", "ct_nw_proto=1", "ct_tp_src=8", "ct_tp_dst=0",
                 "reg13=0x9", "in_port=1"]:
        assert want in out, (want, out)


# A raw OpenFlow 1.5 client on the bridge's management socket.

def prop(ty, value):
    n = 4 + len(value)
    return struct.pack("!HH", ty, n) + value + b"\0" * (-n % 8)


def send(s, ty, body, xid=1):
    s.sendall(struct.pack("!BBHI", 6, ty, 8 + len(body), xid) + body)


def send_nx(s, subtype, body, xid=1):
    send(s, 4, struct.pack("!II", 0x2320, subtype) + body, xid)


def read_msg(s):
    h = b""
    while len(h) < 8:
        d = s.recv(8 - len(h))
        if not d:
            raise EOFError
        h += d
    n = struct.unpack("!H", h[2:4])[0]
    b = h
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b


def read_until(s, want, timeout=5):
    s.settimeout(timeout)
    while True:
        m = read_msg(s)
        if want(m[1], m):
            return m


def connect(daemon, br, controller_id=0):
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(daemon.rundir / f"{br}.mgmt"))
    send(s, 0, struct.pack("!HHI", 1, 8, 1 << 6))  # hello, version bitmap: 1.5
    read_until(s, lambda t, b: t == 0)
    if controller_id:
        send_nx(s, 20, b"\0" * 6 + struct.pack("!H", controller_id))
    send_nx(s, 16, struct.pack("!I", 2))  # NXT_PACKET_IN2
    send(s, 9, struct.pack("!HH", 0, 0xffff))  # miss_send_len: async messages wanted
    send(s, 20, b"", xid=99)  # barrier
    read_until(s, lambda t, b: t == 21)
    return s


def userdata(m):
    """The NXPINT_USERDATA of an NXT_PACKET_IN2."""
    rest = m[16:]
    while len(rest) >= 4:
        ty, n = struct.unpack("!HH", rest[:4])
        if ty == 7:
            return rest[4:n]
        rest = rest[(n + 7) // 8 * 8:]
    return None


def one_switch(c):
    """sw0 with p1 (00:00:00:00:00:01, 10.0.0.1, native DHCP) and p2 (10.0.0.2)."""
    c.nbctl("ls-add", "sw0")
    for p, mac, ip in [("p1", "00:00:00:00:00:01", "10.0.0.1"),
                       ("p2", "00:00:00:00:00:02", "10.0.0.2")]:
        c.nbctl("lsp-add", "sw0", p)
        c.nbctl("lsp-set-addresses", p, f"{mac} {ip}")
    c.nbctl("dhcp-options-create", "10.0.0.0/24")
    uuid = c.nbctl("--bare", "--columns=_uuid", "find", "dhcp_options", 'cidr="10.0.0.0/24"')
    c.nbctl("dhcp-options-set-options", uuid, "lease_time=3600", "router=10.0.0.254",
            "server_id=10.0.0.254", "server_mac=00:00:00:00:ff:01")
    c.nbctl("lsp-set-dhcpv4-options", "p1", uuid)


def no_names(rundir):
    out = ovn.ofctl(rundir, "--no-stats", "--no-names", "dump-flows",
                    f"unix:{rundir}/br-int.mgmt").stdout
    lines = [ln.strip().replace("reset_counts ", "") for ln in out.splitlines()]
    return sorted(ln for ln in lines if ln and not ln.startswith(("OFPST_", "NXST_")))


@pytest.mark.parametrize("build", [one_switch, ovn.topology], ids=["one_switch", "router_acl_lb"])
def test_ovn_controller_programs_ferrovs_as_ovs_and_dhcp_answers(daemon, net, build):
    """ovn-controller 23.03 for one logical switch with native DHCP, and for the whole
    `helpers.ovn.topology` (two switches behind a router, stateful ACLs, a load balancer whose
    hairpin flows `learn`, DHCP): on ferrovs it logs no OpenFlow error and installs the table
    it installs on an Open vSwitch 3.1 chassis (same ports, same ofports); a VM then gets its
    address from OVN's DHCP (pinctrl answers through `controller(userdata=...,pause)` and
    NXT_RESUME) and pings its neighbour."""
    require("ovn-controller", "ovn-northd", "ovn-nbctl", "ovn-sbctl", "ovsdb-server",
            "ovsdb-tool", "ovs-vswitchd", "ovs-vsctl", "busybox")
    work = Path(tempfile.mkdtemp(prefix="ferrovs-ovnctl-"))
    central = ovn.Central(work)
    chassis = ctl = None
    try:
        build(central)
        # The reference: an OVS chassis with the two ports, until its table settles.
        chassis = ovn.OvsChassis(work, "ovs")
        for i in (1, 2):
            chassis.vsctl("add-port", "br-int", f"op{i}", "--", "set", "interface", f"op{i}",
                          "type=dummy", f"ofport_request={i}", f"external_ids:iface-id=p{i}")
        ctl = ovn.Controller(work, central, chassis.db, chassis.rundir, "ovs-chassis")
        ovn.settle(chassis.rundir, "br-int")
        want = no_names(chassis.rundir)
        ctl.stop()
        chassis.stop()
        central.sbctl("chassis-del", "ovs-chassis")

        # ferrovs, the same ports as veths into two namespaces.
        vsctl = ["ovs-vsctl", f"--db=unix:{daemon.rundir}/db.sock"]
        run(vsctl + ["add-br", "br-int", "--", "set", "bridge", "br-int", "fail_mode=secure"])
        h1, if1 = net.host("v1", mac="00:00:00:00:00:01")
        h2, if2 = net.host("v2", ip="10.0.0.2/24", mac="00:00:00:00:00:02")
        for i, sw_if in ((1, if1), (2, if2)):
            run(vsctl + ["add-port", "br-int", sw_if, "--", "set", "interface", sw_if,
                         f"ofport_request={i}", f"external_ids:iface-id=p{i}"])
        ctl = ovn.Controller(work, central, f"unix:{daemon.rundir}/db.sock", daemon.rundir,
                             "fo-chassis")
        got = ovn.settle(daemon.rundir, "br-int")
        assert not ctl.openflow_errors(), ctl.openflow_errors()
        got = no_names(daemon.rundir)
        assert len(got) == len(want) and len(got) > 50, (len(got), len(want))
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        assert not missing and not extra, (
            "OVS:\n" + "\n".join(missing[:20]) + "\nferrovs:\n" + "\n".join(extra[:20]))

        r = net.ns(h1, "busybox udhcpc -i eth0 -n -q -f -t 5 -T 1 -s /bin/true", check=False)
        assert "lease of 10.0.0.1 obtained" in r.stdout + r.stderr, r.stdout + r.stderr
        net.ns(h1, "ip addr add 10.0.0.1/24 dev eth0")
        ping(net, h1, "10.0.0.2", count=2)
        assert not ctl.openflow_errors(), ctl.openflow_errors()
    finally:
        if ctl:
            ctl.stop()
        if chassis:
            chassis.stop()
        central.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)


def test_gateway_mtu_answers_frag_needed(daemon, net):
    """OVN's gateway MTU end to end: `helpers.ovn.topology` with lr0 made a gateway router on
    this chassis and `options:gateway_mtu=1300` on its port to sw1. ovn-northd then checks
    every packet routed out of that port with `check_pkt_larger(1314)` and answers one too
    big with `icmp4_error`, which ovn-controller's pinctrl builds from the packet-in and hands
    back through NXT_RESUME. A VM sending 1,428-byte datagrams with DF set gets "fragmentation
    needed, MTU 1300" from the router's address and its kernel takes that MTU for the route;
    datagrams that fit cross as before."""
    require("ovn-controller", "ovn-northd", "ovn-nbctl", "ovn-sbctl", "ovsdb-server",
            "ovsdb-tool", "ovs-vsctl", "ping")
    work = Path(tempfile.mkdtemp(prefix="ferrovs-ovnmtu-"))
    central = ovn.Central(work)
    ctl = None
    try:
        ovn.topology(central)
        central.nbctl("set", "logical_router", "lr0", "options:chassis=fo-chassis")
        central.nbctl("set", "logical_router_port", "lr0-sw1", "options:gateway_mtu=1300")
        vsctl = ["ovs-vsctl", f"--db=unix:{daemon.rundir}/db.sock"]
        run(vsctl + ["add-br", "br-int", "--", "set", "bridge", "br-int", "fail_mode=secure"])
        h1, if1 = net.host("m1", ip="10.0.0.1/24", mac="00:00:00:00:00:01")
        h3, if3 = net.host("m3", ip="10.0.1.3/24", mac="00:00:00:00:01:03")
        net.ns(h1, "ip route add default via 10.0.0.254")
        net.ns(h3, "ip route add default via 10.0.1.254")
        for i, sw_if, lsp in ((1, if1, "p1"), (3, if3, "p3")):
            run(vsctl + ["add-port", "br-int", sw_if, "--", "set", "interface", sw_if,
                         f"ofport_request={i}", f"external_ids:iface-id={lsp}"])
        ctl = ovn.Controller(work, central, f"unix:{daemon.rundir}/db.sock", daemon.rundir,
                             "fo-chassis")
        got = ovn.settle(daemon.rundir, "br-int")
        assert any("check_pkt_larger(1314)" in ln for ln in got), "no gateway MTU flow"
        # Routed across lr0 while the datagrams fit.
        ping(net, h1, "10.0.1.3", count=2)
        net.ns(h1, "ip route flush cache", check=False)
        r = net.ns(h1, "ping -c 3 -i 0.3 -W 2 -M do -s 1400 10.0.1.3", check=False)
        text = r.stdout + r.stderr
        assert r.returncode != 0, text
        dp = run(["ovs-appctl", "-t", str(daemon.rundir / "ferrovsd.ctl"), "dpctl/dump-flows"],
                 check=False).stdout
        assert "From 10.0.0.254" in text and "mtu = 1300" in text, (
            f"{text}\ndatapath:\n{dp}\novn-controller:\n{ctl.log.read_text()[-3000:]}\n"
            f"ferrovsd:\n{daemon.logtext()[-2000:]}")
        route = net.ns(h1, "ip route get 10.0.1.3").stdout
        assert "mtu 1300" in route, route
        # A datagram of 1,300 bytes in all still crosses.
        net.ns(h1, "ping -c 2 -i 0.3 -W 2 -M do -s 1272 10.0.1.3")
        assert not ctl.openflow_errors(), ctl.openflow_errors()
    finally:
        if ctl:
            ctl.stop()
        central.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)
