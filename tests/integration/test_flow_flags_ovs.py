"""Flow_mod flags per OpenFlow version, against Debian's OVS 3.1 on the same input.

* OpenFlow 1.0 has no `reset_counts` bit (its bit 2 is `emerg`): an add in 1.0 always resets
  counts, so a flow added over 1.0 shows `reset_counts` when dumped over 1.3 or 1.5, and a
  1.0 modify leaves a flow's flags as they were.
* An add that replaces an identical flow keeps its counters unless it says `reset_counts`.
* Raw flow_mods with `emerg` or bits the version does not define get the error OVS sends
  (in 1.0, Nicira's vendor error for bad flags).
"""

import re
import socket
import struct
import sys
import time
from pathlib import Path

import pytest

from conftest import ovs_beside_ferrovs

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

# An IPv4 frame from port 1 (10.0.0.1 -> 10.0.0.2, protocol 0).
FRAME = bytes.fromhex("ffffffffffff000000000001080045000014000100004000"
                      "7cea0a0000010a000002")


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    yield from ovs_beside_ferrovs(tmp_path_factory.mktemp("flags"),
                                  "OpenFlow10,OpenFlow13,OpenFlow15")


def ofctl(sw, proto, *args):
    return ovsdiff.run(["ovs-ofctl", "-O", proto, *args[:1], f"unix:{sw.mgmt}", *args[1:]]).stdout


def lines(text):
    """Flow lines without durations and ages (the two switches do not run in step)."""
    return sorted(re.sub(r"(idle_age|hard_age)=\d+, ", "",
                         re.sub(r"duration=[0-9.]+s, ", "", ln.strip()))
                  for ln in text.splitlines() if ln.startswith(" cookie="))


def test_flags_read_back_as_ovs_shows_them(switches):
    dumps = {}
    for sw in switches:
        ofctl(sw, "OpenFlow13", "del-flows")
        ofctl(sw, "OpenFlow10", "add-flow", "priority=5,ip,actions=drop")
        ofctl(sw, "OpenFlow10", "add-flow", "priority=6,ip,check_overlap,send_flow_rem,actions=drop")
        ofctl(sw, "OpenFlow13", "add-flow", "priority=7,ip,actions=drop")
        ofctl(sw, "OpenFlow13", "add-flow", "priority=8,ip,reset_counts,no_packet_counts,actions=drop")
        ofctl(sw, "OpenFlow15", "add-flow", "priority=9,ip,no_byte_counts,actions=drop")
        # A 1.0 modify keeps each flow's flags (and implies no reset).
        ofctl(sw, "OpenFlow10", "mod-flows", "--strict", "priority=7,ip,actions=output:2")
        ofctl(sw, "OpenFlow10", "mod-flows", "--strict", "priority=5,ip,actions=output:3")
        dumps[sw.name] = {p: lines(ofctl(sw, p, "dump-flows"))
                          for p in ["OpenFlow10", "OpenFlow13", "OpenFlow15"]}
    ovs, fv = dumps["OVS"], dumps["ferrovs"]
    assert any("reset_counts priority=5" in ln for ln in ovs["OpenFlow13"]), ovs
    assert len(ovs["OpenFlow13"]) == 5, ovs
    for p in ovs:
        assert fv[p] == ovs[p], p


def packets(sw, prio):
    for ln in ofctl(sw, "OpenFlow13", "dump-flows").splitlines():
        if f"priority={prio}," in ln:
            return int(re.search(r"n_packets=(\d+)", ln).group(1))
    raise AssertionError(f"no priority={prio} flow on {sw.name}")


def counted(sw, prio, want, timeout=5.0):
    """Waits for the flow's counter to reach `want` (OVS credits cached flows every 0.5 s)."""
    end = time.time() + timeout
    while packets(sw, prio) < want and time.time() < end:
        time.sleep(0.1)
    return packets(sw, prio)


@pytest.mark.parametrize("readd", ["OpenFlow13 plain", "OpenFlow13 reset_counts,",
                                   "OpenFlow10 plain"])
def test_an_identical_add_keeps_counters_unless_it_resets_them(switches, readd):
    proto, extra = readd.split(" ")
    extra = "" if extra == "plain" else extra
    seen = {}
    for sw in switches:
        ofctl(sw, "OpenFlow13", "del-flows")
        ofctl(sw, "OpenFlow13", "add-flow", "priority=5,ip,actions=output:2")
        sw.receive(1, FRAME)
        assert counted(sw, 5, 1) == 1, sw.name
        ofctl(sw, proto, "add-flow", f"priority=5,ip,{extra}actions=output:3")
        seen[sw.name] = packets(sw, 5)
    assert seen["OVS"] == (1 if proto == "OpenFlow13" and not extra else 0), seen
    assert seen["ferrovs"] == seen["OVS"], seen


def raw_reply(sw, version, msg):
    """Sends `msg` after a hello of `version`; returns the first error's type, code and
    first 8 bytes of data, or None if no error came within 0.5 s of a barrier's reply."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sw.mgmt)
    try:
        s.sendall(struct.pack("!BBHI", version, 0, 8, 1))
        barrier = 18 if version == 1 else 20
        s.sendall(msg + struct.pack("!BBHI", version, barrier, 8, 9))
        buf = b""
        while True:
            while len(buf) < 8 or len(buf) < struct.unpack("!H", buf[2:4])[0]:
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionError(f"{sw.name} closed the connection")
                buf += chunk
            n = struct.unpack("!H", buf[2:4])[0]
            m, buf = buf[:n], buf[n:]
            if m[1] == 1 and struct.unpack("!I", m[4:8])[0] == 7:
                return m[8:12].hex(), m[12:20].hex()
            if m[1] == barrier + 1:
                return None
    finally:
        s.close()


def of10_flow_mod(flags, idle=0):
    body = struct.pack("!I", 0x3fffff) + bytes(36)
    body += struct.pack("!QHHHHIHH", 0, 0, idle, 0, 0x8000, 0xffffffff, 0xffff, flags)
    return struct.pack("!BBHI", 1, 14, 8 + len(body), 7) + body


def of13_flow_mod(flags):
    body = struct.pack("!QQBBHHHIIIHH", 0, 0, 0, 0, 0, 0, 0x8000, 0xffffffff, 0xffffffff,
                       0xffffffff, flags, 0)
    body += struct.pack("!HH", 1, 4) + bytes(4)
    return struct.pack("!BBHI", 4, 14, 8 + len(body), 7) + body


CASES = [(1, of10_flow_mod(f, idle), f"1.0 flags={f:#x} idle={idle}")
         for f in [0x0, 0x3, 0x4, 0x5, 0x8, 0x10, 0x20, 0x8000] for idle in [0, 5]]
CASES += [(4, of13_flow_mod(f), f"1.3 flags={f:#x}") for f in [0x0, 0x1f, 0x20, 0x8000]]


def test_bad_and_emergency_flags_get_ovs_errors(switches):
    got = {sw.name: [raw_reply(sw, v, m) for v, m, _ in CASES] for sw in switches}
    errors = [c for c, r in zip(CASES, got["OVS"]) if r is not None]
    assert len(errors) == 14, got["OVS"]
    for (_, _, what), ovs, fv in zip(CASES, got["OVS"], got["ferrovs"]):
        assert fv == ovs, what
    # Both still answer.
    for sw in switches:
        assert "reply" in ofctl(sw, "OpenFlow13", "dump-flows")
