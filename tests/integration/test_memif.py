"""memif ports with real peers: Debian's dpdk-testpmd as a memif client exchanging traffic
through ferrovs both ways (exact counts), reconnecting after a testpmd restart and after a
ferrovsd restart; and a hostile client written here (memfd + eventfd passed with SCM_RIGHTS,
then bad descriptors, lying ring indices, a ring it never drains) that costs only its own port
while another port keeps forwarding.

testpmd runs without hugepages or PCI (`--no-huge --no-pci --no-shconf`, a private
`--file-prefix`), with `socket-abstract=no` because DPDK's memif defaults to Linux's abstract
socket namespace while ferrovs binds a socket file, as OVS-DPDK and VPP do.
"""

import mmap
import os
import shutil
import socket
import struct
import sys
import tempfile
import time
import fcntl
from pathlib import Path

import pytest

from conftest import Daemon, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from testpmd import Pmd, iface, stats, vsctl, wait_link, wait_until  # noqa: E402

VERSION = 0x0200
COOKIE = 0x3E31F20


@pytest.fixture(autouse=True)
def _peers():
    need_root()
    require("dpdk-testpmd", "ovs-vsctl")


@pytest.fixture
def rundir():
    d = Path(tempfile.mkdtemp(prefix="ferrovs-memif-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def memif_pmd(rundir, sock, ids=(0, 1)):
    """testpmd with memif client ports on `sock` (ids 0..n-1)."""
    return Pmd(rundir, "memif", [
        f"net_memif{i},role=client,socket={sock},id={i},socket-abstract=no" for i in ids])


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def start_switch(rundir, sock):
    d = Daemon(rundir)
    vsctl(rundir, "--may-exist", "add-br", "brm", "--", "set", "Bridge", "brm",
          "other_config:module=patch")
    for i in (0, 1):
        vsctl(rundir, "--may-exist", "add-port", "brm", f"m{i}", "--", "set", "Interface",
              f"m{i}", "type=memif", f"options:socket={sock}", f"options:id={i}")
    d.cli("patch-set", "brm", "m0", "m1")
    d.cli("patch-set", "brm", "m1", "m0")
    return d


def test_testpmd_both_ways_and_restarts(rundir):
    sock = rundir / "memif.sock"
    d = start_switch(rundir, sock)
    pmd = None
    try:
        assert iface(rundir, "m0", "link_state") == "down"
        pmd = memif_pmd(rundir, sock)
        wait_link(rundir, "m0", "up")
        wait_link(rundir, "m1", "up")
        n = pmd.burst(rundir, ("m0", "m1"), 4, [0, 0])
        fs = pmd.forward_stats()
        assert fs[0] == (n, n) and fs[1] == (n, n), fs
        for i in (0, 1):
            s = stats(rundir, f"m{i}")
            assert s["rx_packets"] == n and s["tx_packets"] == n, s
            assert s["rx_errors"] == 0 and s["tx_dropped"] == 0, s
        # Connected but idle, the ports cost no CPU: the poll thread sleeps on their eventfds.
        time.sleep(0.5)
        c0 = cpu_seconds(d.proc.pid)
        time.sleep(2)
        used = cpu_seconds(d.proc.pid) - c0
        assert used < 0.3, f"idle switch used {used:.2f} s of CPU in 2 s"

        # testpmd restarts: the links go down, then up with the new process.
        pmd.quit()
        wait_link(rundir, "m0", "down")
        pmd = memif_pmd(rundir, sock)
        wait_link(rundir, "m0", "up")
        wait_link(rundir, "m1", "up")
        m = pmd.burst(rundir, ("m0", "m1"), 2, [n, n])
        assert pmd.forward_stats()[0] == (m, m)
        assert stats(rundir, "m0")["rx_packets"] == n + m

        # ferrovsd restarts: testpmd's ports go down; testpmd reconnects when its ports are
        # restarted (DPDK's memif client connects on port start) and traffic flows again.
        d.stop()
        d = start_switch(rundir, sock)
        pmd.cmd("port stop all")
        pmd.cmd("port start all")
        wait_link(rundir, "m0", "up")
        wait_link(rundir, "m1", "up")
        k = pmd.burst(rundir, ("m0", "m1"), 1, [0, 0])
        assert stats(rundir, "m0")["rx_packets"] == k
        assert stats(rundir, "m1")["tx_packets"] == k
    finally:
        if pmd:
            pmd.quit()
        d.stop()
    assert not sock.exists(), "the socket file outlived the switch"


# ---- a hostile client ----------------------------------------------------------------------

def msg(t, body=b""):
    b = struct.pack("<H", t) + body
    return b + bytes(128 - len(b))


def expect(s, t):
    data = s.recv(256)
    got = struct.unpack_from("<H", data)[0]
    if got != t:
        reason = data[6:102].split(b"\0")[0].decode(errors="replace") if got == 8 else ""
        raise AssertionError(f"expected message {t}, got {got} {reason}")
    return data


LOG2 = 4
SLOTS = 1 << LOG2
RING = 128 + 16 * SLOTS
REGION = 1 << 20
BUF0 = 4096


class Hostile:
    """A memif client that follows the handshake and then writes whatever it likes."""

    def __init__(self, sock, id_, seal=True):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(5)
        self.s.connect(str(sock))
        expect(self.s, 2)  # HELLO
        self.s.send(msg(3, struct.pack("<HIB", VERSION, id_, 0) + bytes(24) +
                        b"hostile".ljust(32, b"\0")))
        expect(self.s, 1)
        flags = os.MFD_ALLOW_SEALING if seal else 0
        self.fd = os.memfd_create("hostile", flags)
        os.ftruncate(self.fd, REGION)
        if seal:
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
        self.mem = mmap.mmap(self.fd, REGION)
        for r in (0, 1):
            struct.pack_into("<IHH", self.mem, r * RING, COOKIE, 0, 0)
        socket.send_fds(self.s, [msg(4, struct.pack("<HQ", 0, REGION))], [self.fd])
        self.open = expect_or_disconnect(self.s)
        if not self.open:
            return
        self.efd = [os.eventfd(0, os.EFD_NONBLOCK) for _ in (0, 1)]
        for r, s2m in ((0, 1), (1, 0)):
            socket.send_fds(self.s, [msg(5, struct.pack("<HHHIBH", s2m, 0, 0, r * RING, LOG2,
                                                        0))], [self.efd[r]])
            expect(self.s, 1)
        self.s.send(msg(6, b"hostile".ljust(32, b"\0")))
        expect(self.s, 7)  # CONNECTED

    # ring 0 is S2M (we produce), ring 1 is M2S (the switch fills what we offer)
    def desc(self, ring, slot, region, length, offset, flags=0):
        struct.pack_into("<HHII", self.mem, ring * RING + 128 + 16 * (slot % SLOTS), flags,
                         region, length, offset)

    def head(self, ring, v):
        struct.pack_into("<H", self.mem, ring * RING + 6, v & 0xFFFF)

    def tail(self, ring):
        return struct.unpack_from("<H", self.mem, ring * RING + 64)[0]

    def frame(self, slot, n=60):
        off = BUF0 + slot * 2048
        f = bytes.fromhex("020000000002020000000001") + b"\x88\xb5" + bytes(n - 14)
        self.mem[off:off + n] = f
        return off

    def close(self):
        self.s.close()
        self.mem.close()
        os.close(self.fd)


def expect_or_disconnect(s):
    data = s.recv(256)
    return struct.unpack_from("<H", data)[0] == 1


def pcap_file(path, n=1):
    frame = bytes.fromhex("020000000004020000000003") + b"\x88\xb5" + bytes(46)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for _ in range(n):
            f.write(struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame)


def test_hostile_client_is_contained(rundir):
    sock = rundir / "memif.sock"
    pcap = rundir / "bg.pcap"
    pcap_file(pcap)
    d = Daemon(rundir)
    try:
        vsctl(rundir, "add-br", "brh", "--", "set", "Bridge", "brh", "other_config:module=patch")
        vsctl(rundir, "add-port", "brh", "h0", "--", "set", "Interface", "h0", "type=memif",
              f"options:socket={sock}", "options:id=0")
        # Background traffic between two other ports, at a steady 2000 packets/s.
        vsctl(rundir, "add-port", "brh", "sink", "--", "set", "Interface", "sink", "type=null")
        vsctl(rundir, "add-port", "brh", "bg", "--", "set", "Interface", "bg", "type=pcap",
              f"options:rx_pcap={pcap}", "options:infinite_rx=true", "options:rx_pps=2000")
        d.cli("patch-set", "brh", "bg", "sink")
        # The hostile port's own traffic: a slow source towards it, a sink for what it sends.
        vsctl(rundir, "add-port", "brh", "sink2", "--", "set", "Interface", "sink2", "type=null")
        vsctl(rundir, "add-port", "brh", "src", "--", "set", "Interface", "src", "type=pcap",
              f"options:rx_pcap={pcap}", "options:infinite_rx=true", "options:rx_pps=20")
        d.cli("patch-set", "brh", "src", "h0")
        d.cli("patch-set", "brh", "h0", "sink2")

        # A region that is not sealed against shrinking is refused (it could fault us).
        h = Hostile(sock, 0, seal=False)
        assert not h.open
        h.close()
        # A wrong id is refused.
        with pytest.raises(AssertionError, match="no interface with id 9"):
            Hostile(sock, 9)

        h = Hostile(sock, 0)
        wait_link(rundir, "h0", "up")
        sink0 = stats(rundir, "sink")["tx_packets"]
        t0 = time.time()

        # S2M: five descriptors, one good, four bad (unknown region, offset outside the
        # region, length above the buffer size, offset + length wrapping 32 bits).
        h.desc(0, 0, 0, 60, h.frame(0))
        h.desc(0, 1, 3, 60, BUF0)
        h.desc(0, 2, 0, 60, REGION - 10)
        h.desc(0, 3, 0, 1 << 20, BUF0)
        h.desc(0, 4, 0, 0xFFFF_FFF0, 0x20)
        h.head(0, 5)
        wait_until("the switch consumed the S2M slots", lambda: h.tail(0) == 5)
        wait_until("counters", lambda: stats(rundir, "h0")["rx_errors"] >= 4)
        s = stats(rundir, "h0")
        assert s["rx_packets"] == 1 and s["rx_errors"] == 4, s
        wait_until("the good packet forwarded", lambda: stats(rundir, "sink2")["tx_packets"] == 1)

        # M2S: the switch may fill only what we offer. Offer one good buffer and one whose
        # offset is outside the region: the first packet lands in the good one, the next is
        # refused (tx_errors), and with nothing more offered the rest are dropped, never
        # waited for.
        h.desc(1, 0, 0, 2048, BUF0 + 20 * 2048)
        h.desc(1, 1, 0, 2048, REGION)
        before = stats(rundir, "h0")
        h.head(1, 2)
        wait_until("both M2S slots used", lambda: h.tail(1) == 2)
        got = h.mem[BUF0 + 20 * 2048:BUF0 + 20 * 2048 + 14]
        assert got == bytes.fromhex("020000000004020000000003") + b"\x88\xb5", got.hex()
        wait_until("tx error counted", lambda: stats(rundir, "h0")["tx_errors"] == 1)
        wait_until("tx drops counted",
                   lambda: stats(rundir, "h0")["tx_dropped"] >= before["tx_dropped"] + 5)
        assert stats(rundir, "h0")["tx_packets"] == before["tx_packets"] + 1

        # A head that claims more than the ring holds: refused and counted, nothing read, and
        # the switch ends the connection saying why; the link goes down.
        before = stats(rundir, "h0")
        h.head(0, 5 + 1000)
        wait_link(rundir, "h0", "down")
        s = stats(rundir, "h0")
        assert s["rx_errors"] > before["rx_errors"] and s["rx_packets"] == before["rx_packets"]
        h.s.settimeout(5)
        assert b"ring index out of range" in h.s.recv(256)
        h.close()

        # Garbage on the control channel ends the session too.
        h = Hostile(sock, 0)
        wait_link(rundir, "h0", "up")
        h.s.send(b"\x99" * 128)
        wait_link(rundir, "h0", "down")
        h.close()

        # Meanwhile the other ports kept forwarding at their rate.
        dt = time.time() - t0
        moved = stats(rundir, "sink")["tx_packets"] - sink0
        assert moved >= 2000 * dt * 0.5, (moved, dt)
        assert d.proc.poll() is None, "the switch died"

        # A well-behaved client can use the port again.
        h = Hostile(sock, 0)
        wait_link(rundir, "h0", "up")
        h.close()
        wait_link(rundir, "h0", "down")
    finally:
        d.stop()
