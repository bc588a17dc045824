"""OVN's `controller(...)` action on a running ferrovsd: pause and resume driven by Debian's
ovs-ofctl (whose `monitor ... resume` answers every paused packet-in with an NXT_RESUME built
by OVS's library, as ovn-controller's pinctrl does), and packet-ins routed by controller id.
"""

import os
import socket
import struct
import subprocess
import time

import pytest

from conftest import require
from test_ofctl import bridge, ofctl, ping


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
