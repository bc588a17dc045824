"""OpenFlow 1.0's `enqueue:PORT:QUEUE` against Debian's OVS 3.1, side by side: flows added
with it (and with `set_queue`, `output`, `pop_queue`) dump the same in OpenFlow 1.0, 1.3 and
1.5 (1.1+ peers see `set_queue:Q,output:P,pop_queue`, and a 1.0 dump never folds those back
into `enqueue`), `out_port` selects and deletes the same flows and flow monitors report the
same ones, the ports and lengths OVS refuses on the wire are refused with the same error, a
group bucket keeps an enqueue and leaves it out of the translation, and a packet leaves the
same ports. The queue itself is not observable on a pcap port: ferrovs's trace shows it."""

import os
import re
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ovs_beside_ferrovs

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

ALL = "OpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15"


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    yield from ovs_beside_ferrovs(tmp_path_factory.mktemp("enqueue"), ALL)


def ofctl(sw, proto, verb, *args):
    cmd = ["ovs-ofctl", "--timeout=10", "-O", proto]
    r = ovsdiff.run(cmd + [verb, f"unix:{sw.mgmt}", *args], check=False)
    text = re.sub(r"(duration=[0-9.]+s|idle_age=[0-9]+)", "N", r.stdout + r.stderr)
    return r.returncode, re.sub(r"xid=0x[0-9a-f]+", "xid=N", text).strip()


def sorted_dump(sw, proto, *args):
    code, text = ofctl(sw, proto, "dump-flows", *args)
    return code, sorted(text.splitlines())


# Added with OpenFlow 1.0 (enqueue travels as OFPAT_ENQUEUE) ...
OF10_FLOWS = [
    "priority=1,in_port=1,actions=enqueue:2:5,output:3",
    "priority=2,in_port=2,actions=enqueue(3,7)",
    "priority=3,in_port=3,actions=enqueue:LOCAL:1,enqueue:IN_PORT:2",
    "priority=4,in_port=4,actions=set_queue:3,output:2,pop_queue,output:1",
    "priority=5,ip,actions=clone(enqueue:4:0x10)",
    "priority=6,arp,actions=enqueue:1000:4294967295",
]
# ... and with OpenFlow 1.3 (enqueue travels as set_queue, output, pop_queue).
OF13_FLOWS = [
    "priority=7,udp,actions=enqueue:3:9",
    "priority=8,tcp,actions=set_queue:3,output:2,pop_queue",
]


def add_all(switches):
    for sw in switches:
        ofctl(sw, "OpenFlow13", "del-flows")
        for proto, flows in [("OpenFlow10", OF10_FLOWS), ("OpenFlow13", OF13_FLOWS)]:
            for f in flows:
                code, text = ofctl(sw, proto, "add-flow", f)
                assert code == 0, (sw.name, f, text)


@pytest.mark.parametrize("proto", ["OpenFlow10", "OpenFlow13", "OpenFlow15"])
def test_enqueue_flows_dump_as_ovs(switches, proto):
    add_all(switches)
    ovs, fv = (sorted_dump(sw, proto) for sw in switches)
    assert ovs[0] == 0 and fv == ovs, f"OVS:\n{ovs[1]}\nferrovs:\n{fv[1]}"
    text = "\n".join(fv[1])
    if proto == "OpenFlow10":
        assert "enqueue:2:5,output:3" in text and "set_queue:9,output:3,pop_queue" in text, text
    else:
        assert "enqueue" not in text and "set_queue:5,output:2,pop_queue" in text, text


@pytest.mark.parametrize("proto", ["OpenFlow10", "OpenFlow13"])
def test_out_port_selects_enqueue_flows_as_ovs(switches, proto):
    add_all(switches)
    for q in ["out_port=2", "out_port=3", "out_port=4", "out_port=LOCAL", "out_port=1000"]:
        ovs, fv = (sorted_dump(sw, proto, q) for sw in switches)
        assert fv == ovs, f"{q}\nOVS:\n{ovs[1]}\nferrovs:\n{fv[1]}"
    assert any("priority=6" in l for l in fv[1]), fv
    for sw in switches:
        ofctl(sw, proto, "del-flows", "out_port=3")
    ovs, fv = (sorted_dump(sw, proto) for sw in switches)
    assert fv == ovs, f"after del-flows out_port=3\nOVS:\n{ovs[1]}\nferrovs:\n{fv[1]}"
    assert not any(f"priority={p} " in l for l in fv[1] for p in (1, 2, 7)), fv[1]
    assert len(fv[1]) == 6, fv[1]


def monitor_events(sw, proto, tmp, add):
    """The events `ovs-ofctl monitor watch:out_port=2` prints: the flows there when it
    starts, then those `add` adds (the last one matching `ip`)."""
    out_path = tmp / f"{sw.name}-{proto}.txt"
    env = dict(os.environ, OVS_RUNDIR=str(sw.d))
    with open(out_path, "w+") as out:
        mon = subprocess.Popen(["ovs-ofctl", "-O", proto, "monitor", f"unix:{sw.mgmt}",
                                "watch:out_port=2"], stdout=out, stderr=subprocess.STDOUT,
                               env=env)
        try:
            deadline = time.time() + 10
            while "FLOW_MONITOR reply" not in out_path.read_text():
                assert time.time() < deadline and mon.poll() is None, out_path.read_text()
                time.sleep(0.05)
            for f in add:
                code, text = ofctl(sw, "OpenFlow10", "add-flow", f)
                assert code == 0, (sw.name, f, text)
            while " ip actions=" not in out_path.read_text():
                assert time.time() < deadline and mon.poll() is None, out_path.read_text()
                time.sleep(0.05)
        finally:
            mon.terminate()
            mon.wait(timeout=10)
    text = out_path.read_text()
    return sorted(l.strip() for l in text.splitlines() if l.strip().startswith("event="))


@pytest.mark.parametrize("proto", ["OpenFlow10", "OpenFlow14"])
def test_flow_monitor_out_port_selects_enqueue_flows_as_ovs(switches, proto, tmp_path):
    for sw in switches:
        ofctl(sw, "OpenFlow13", "del-flows")
        for f in ["priority=10,in_port=1,actions=enqueue:2:5",
                  "priority=11,in_port=2,actions=output:3",
                  "priority=12,in_port=3,actions=clone(enqueue:2:1)"]:
            code, text = ofctl(sw, "OpenFlow10", "add-flow", f)
            assert code == 0, (sw.name, f, text)
    add = ["priority=21,in_port=4,actions=enqueue:3:7", "priority=22,ip,actions=enqueue:2:9"]
    ovs, fv = (monitor_events(sw, proto, tmp_path, add) for sw in switches)
    assert fv == ovs, f"OVS:\n{ovs}\nferrovs:\n{fv}"
    assert len(fv) == 3 and not any("in_port=2" in l or "in_port=4" in l for l in fv), fv


# ---- raw OpenFlow 1.0 flow_mods: what ovs-ofctl refuses before sending ------------------

def of10_flow_mod(actions):
    match = struct.pack("!I", 0x3FFFFF) + bytes(36)
    body = match + struct.pack("!QHHHHIHH", 0, 0, 0, 0, 0x8000, 0xFFFFFFFF, 0xFFFF, 0) + actions
    return struct.pack("!BBHI", 1, 14, 8 + len(body), 7) + body


def enqueue(port, queue, length=16):
    return struct.pack("!HHH6xI", 11, length, port, queue)[:length]


def of10_answer(sw, msg):
    """The error (type, code) a switch answers `msg` with, None if only the barrier."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sw.mgmt)

    def read(n):
        out = b""
        while len(out) < n:
            chunk = s.recv(n - len(out))
            assert chunk, "switch closed the connection"
            out += chunk
        return out

    try:
        s.sendall(struct.pack("!BBHI", 1, 0, 8, 1))
        s.sendall(msg + struct.pack("!BBHI", 1, 18, 8, 99))
        err = None
        while True:
            _, t, length, xid = struct.unpack("!BBHI", read(8))
            body = read(length - 8)
            if t == 1 and xid == 7:
                err = struct.unpack("!HH", body[:4])
            elif t == 19 and xid == 99:
                return err
    finally:
        s.close()


BAD_ACTION, BAD_LEN, BAD_OUT_PORT = 2, 1, 4
WIRE = [
    pytest.param(enqueue(0xFFFB, 1), (BAD_ACTION, BAD_OUT_PORT), id="FLOOD"),
    pytest.param(enqueue(0xFFFC, 1), (BAD_ACTION, BAD_OUT_PORT), id="ALL"),
    pytest.param(enqueue(0xFFFD, 1), (BAD_ACTION, BAD_OUT_PORT), id="CONTROLLER"),
    pytest.param(enqueue(0xFFFA, 1), (BAD_ACTION, BAD_OUT_PORT), id="NORMAL"),
    pytest.param(enqueue(0xFFFF, 1), (BAD_ACTION, BAD_OUT_PORT), id="NONE"),
    pytest.param(enqueue(0xFF00, 1), (BAD_ACTION, BAD_OUT_PORT), id="0xff00"),
    pytest.param(enqueue(3, 1, 8), (BAD_ACTION, BAD_LEN), id="8-bytes"),
    pytest.param(struct.pack("!HHH6xI8x", 11, 24, 3, 1), (BAD_ACTION, BAD_LEN), id="24-bytes"),
    pytest.param(enqueue(0xFFF8, 1), None, id="IN_PORT"),
    pytest.param(enqueue(0xFFFE, 1), None, id="LOCAL"),
    pytest.param(enqueue(0, 1), None, id="port-0"),
]


@pytest.mark.parametrize("actions,want", WIRE)
def test_of10_enqueue_on_the_wire_is_refused_as_ovs_refuses_it(switches, actions, want):
    ovs, fv = (of10_answer(sw, of10_flow_mod(actions)) for sw in switches)
    assert ovs == want, ovs
    assert fv == ovs, (ovs, fv)


# ---- packets --------------------------------------------------------------------------------

FRAME = bytes.fromhex("020000000002" "020000000001" "0800"
                      "4500001c00004000401100000a0000010a000002" "04d2003500080000")


def test_packets_leave_the_ports_ovs_sends_them_to(switches):
    """A packet from port 1 leaves ports 2 (queue 5) and 3; from 4, ports 2 (queue 3) and
    1; from 3, only 3 (enqueue to IN_PORT; the same port by number is skipped). ferrovs's
    trace shows the queue around the output."""
    for sw in switches:
        ofctl(sw, "OpenFlow10", "del-flows")
        for f in [
            "in_port=1,actions=enqueue:2:5,output:3",
            "in_port=3,actions=enqueue:3:5,enqueue:IN_PORT:6",
            "in_port=4,actions=set_queue:3,output:2,pop_queue,output:1",
        ]:
            code, text = ofctl(sw, "OpenFlow10", "add-flow", f)
            assert code == 0, (sw.name, f, text)
    ovsdiff.settled_outputs(switches)
    want = {1: {2: 1, 3: 1}, 3: {3: 1}, 4: {2: 1, 1: 1}}
    for in_port, sent in want.items():
        for sw in switches:
            sw.receive(in_port, FRAME)
        got = ovsdiff.settled_outputs(switches, most=3.0)
        for g, sw in zip(got, switches):
            counts = {p: len(fs) for p, fs in g.items() if fs}
            assert counts == sent, (sw.name, in_port, counts)
            assert all(f == FRAME for fs in g.values() for f in fs), sw.name
    trace = switches[1].trace(1, FRAME)
    assert "enqueue:2:5" in trace, trace
    dp = [l for l in trace.splitlines() if l.startswith("Datapath actions:")]
    assert dp == ["Datapath actions: set_queue(5),2,set_queue(0),3"], trace
    for sw in switches:
        ofctl(sw, "OpenFlow10", "del-flows")


def test_enqueue_in_a_group_bucket_as_ovs(switches):
    """A bucket (OpenFlow 1.0's Nicira group_mod) may hold an enqueue, dumped as OVS dumps
    it in 1.0 and 1.3; a bucket runs as an action set, which has no enqueue, so OVS's
    translation leaves it out: the packet leaves only by the other bucket."""
    for sw in switches:
        ofctl(sw, "OpenFlow13", "del-flows")
        ofctl(sw, "OpenFlow13", "del-groups")
        code, text = ofctl(sw, "OpenFlow10", "add-group",
                           "group_id=1,type=all,bucket=enqueue:2:5,bucket=output:3")
        assert code == 0, (sw.name, text)
        code, text = ofctl(sw, "OpenFlow10", "add-flow", "in_port=1,actions=group:1")
        assert code == 0, (sw.name, text)
    for proto in ["OpenFlow10", "OpenFlow13"]:
        ovs, fv = (ofctl(sw, proto, "dump-groups") for sw in switches)
        assert fv == ovs, f"OVS:\n{ovs[1]}\nferrovs:\n{fv[1]}"
    assert "enqueue:2:5" in ofctl(switches[1], "OpenFlow10", "dump-groups")[1]
    ovs, fv = ([l for l in sw.trace(1, FRAME).splitlines() if l.startswith("Datapath")]
               for sw in switches)
    assert fv == ovs == ["Datapath actions: 3"], (ovs, fv)
    for sw in switches:
        ofctl(sw, "OpenFlow13", "del-flows")
        ofctl(sw, "OpenFlow13", "del-groups")
