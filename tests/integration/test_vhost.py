"""vhost-user ports with a real peer: Debian's dpdk-testpmd with `net_virtio_user` ports is
the VM side, exchanging traffic through ferrovs both ways with exact counts, as a client of
`dpdkvhostuser` ports (the switch listens on `<rundir>/<name>`) and as a server for
`dpdkvhostuserclient` ports (the switch connects, and reconnects after its own restart);
and a hostile guest written here (helpers/vhostfront.py: a vhost-user frontend that writes
bad descriptors, lies about ring indices and never gives receive buffers) that costs only
its own port while other ports keep forwarding.

testpmd runs without hugepages or PCI (`--no-huge --no-pci --no-shconf`, a private
`--file-prefix`): its memory is then a memfd, which it passes to the switch like QEMU does.
"""

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import Daemon, need_root, require, run

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import vhostfront as vf  # noqa: E402


@pytest.fixture(autouse=True)
def _peers():
    need_root()
    require("dpdk-testpmd", "ovs-vsctl")


@pytest.fixture
def rundir():
    d = Path(tempfile.mkdtemp(prefix="ferrovs-vhost-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def vsctl(rundir, *args, check=True):
    return run(["ovs-vsctl", f"--db=unix:{rundir}/db.sock", "--timeout=20", *map(str, args)],
               check=check)


def iface(rundir, name, col):
    return vsctl(rundir, "get", "Interface", name, col).stdout.strip().strip('"')


def stats(rundir, name):
    s = vsctl(rundir, "get", "Interface", name, "statistics").stdout
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", s)}


def wait_until(what, cond, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def wait_link(rundir, name, state, timeout=20.0):
    wait_until(f"{name} link {state}", lambda: iface(rundir, name, "link_state") == state,
               timeout)


class Pmd:
    """An interactive dpdk-testpmd with one net_virtio_user port per socket path."""

    n = 0

    def __init__(self, rundir, paths, server=False, queues=1):
        Pmd.n += 1
        self.out = open(rundir / f"testpmd{Pmd.n}.log", "w+")
        vdevs = []
        for i, p in enumerate(paths):
            vdevs += ["--vdev", f"net_virtio_user{i},path={p},server={int(server)},"
                                f"queues={queues}"]
        self.proc = subprocess.Popen(
            ["stdbuf", "-oL", "dpdk-testpmd", "-l", "0-1", "--no-huge", "-m", "512",
             "--no-pci", "--no-shconf", f"--file-prefix=fvvhost{os.getpid()}x{Pmd.n}", *vdevs,
             "--", "-i", "--total-num-mbufs=16384", f"--rxq={queues}", f"--txq={queues}"],
            stdin=subprocess.PIPE, stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def cmd(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def text(self):
        self.out.flush()
        self.out.seek(0)
        return self.out.read()

    def wait_text(self, pattern, count=1, timeout=20.0):
        wait_until(f"testpmd output {pattern!r}",
                   lambda: len(re.findall(pattern, self.text())) >= count, timeout)

    def quit(self):
        if self.proc.poll() is None:
            try:
                self.cmd("quit")
                self.proc.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.out.close()

    def forward_stats(self):
        """(RX, TX) per port from the last `stop`."""
        blocks = re.findall(r"Forward statistics for port (\d+).*?\n\s*RX-packets: (\d+).*?\n"
                            r"\s*TX-packets: (\d+)", self.text())
        last = {}
        for port, rx, tx in blocks:
            last[int(port)] = (int(rx), int(tx))
        return last


def start_switch(rundir, kind, paths=None):
    d = Daemon(rundir)
    vsctl(rundir, "--may-exist", "add-br", "brv", "--", "set", "Bridge", "brv",
          "other_config:module=patch")
    for i in (0, 1):
        extra = []
        if paths:
            extra = [f"options:vhost-server-path={paths[i]}"]
        vsctl(rundir, "--may-exist", "add-port", "brv", f"v{i}", "--", "set", "Interface",
              f"v{i}", f"type={kind}", *extra)
    d.cli("patch-set", "brv", "v0", "v1")
    d.cli("patch-set", "brv", "v1", "v0")
    return d


def burst(pmd, rundir, n_bursts, before, queues=1):
    """testpmd sends n_bursts x 32 packets per queue out of each port and counts what comes
    back; returns how many each port sent."""
    pmd.cmd("set fwd rxonly")
    pmd.cmd(f"start tx_first {n_bursts}")
    n = 32 * n_bursts * queues
    wait_until("ferrovs forwarding both ways",
               lambda: all(stats(rundir, f"v{i}").get("tx_packets", 0) >= before[i] + n
                           for i in (0, 1)))
    time.sleep(0.3)
    # Counted before `stop`: testpmd may print the new block before we look.
    seen = pmd.text().count("Forward statistics for port 1")
    pmd.cmd("stop")
    pmd.wait_text(r"Forward statistics for port 1", count=seen + 1)
    return n


def test_server_ports_testpmd_both_ways_multiqueue(rundir):
    d = start_switch(rundir, "dpdkvhostuser")
    pmd = None
    try:
        socks = [rundir / "v0", rundir / "v1"]
        for s in socks:
            wait_until(f"{s} exists", s.exists)
        assert iface(rundir, "v0", "link_state") == "down"
        pmd = Pmd(rundir, socks, server=False, queues=2)
        wait_link(rundir, "v0", "up")
        wait_link(rundir, "v1", "up")
        n = burst(pmd, rundir, 4, [0, 0], queues=2)
        fs = pmd.forward_stats()
        assert fs[0] == (n, n) and fs[1] == (n, n), fs
        for i in (0, 1):
            s = stats(rundir, f"v{i}")
            assert s["rx_packets"] == n and s["tx_packets"] == n, s
            assert s["rx_errors"] == 0 and s["tx_dropped"] == 0 and s["tx_errors"] == 0, s
            assert s["rx_bytes"] == 64 * n, s

        # testpmd goes away: links go down; a new one connects and traffic flows again.
        pmd.quit()
        wait_link(rundir, "v0", "down")
        pmd = Pmd(rundir, socks, server=False, queues=1)
        wait_link(rundir, "v0", "up")
        wait_link(rundir, "v1", "up")
        m = burst(pmd, rundir, 2, [n, n])
        assert pmd.forward_stats()[0] == (m, m)
        assert stats(rundir, "v0")["rx_packets"] == n + m
    finally:
        if pmd:
            pmd.quit()
        d.stop()
    assert not (rundir / "v0").exists(), "the socket file outlived the switch"


def test_client_ports_reconnect_across_switch_restart(rundir):
    paths = [rundir / "vm0.sock", rundir / "vm1.sock"]
    pmd = Pmd(rundir, paths, server=True)
    d = None
    try:
        # testpmd's server-mode ports wait for their backend one after the other while
        # probing: the switch connects to whichever sockets exist, retrying every second.
        d = start_switch(rundir, "dpdkvhostuserclient", paths)
        wait_link(rundir, "v0", "up")
        wait_link(rundir, "v1", "up")
        pmd.wait_text(r"testpmd> ")
        n = burst(pmd, rundir, 4, [0, 0])
        fs = pmd.forward_stats()
        assert fs[0] == (n, n) and fs[1] == (n, n), fs
        for i in (0, 1):
            s = stats(rundir, f"v{i}")
            assert s["rx_packets"] == n and s["tx_packets"] == n, s

        # The switch restarts; testpmd (the VM side) stays. The ports connect again by
        # themselves and traffic flows with no action on the VM side.
        d.stop()
        d = start_switch(rundir, "dpdkvhostuserclient", paths)
        wait_link(rundir, "v0", "up")
        wait_link(rundir, "v1", "up")
        # The database still holds the old process's counters until the new one writes its
        # own (every few seconds): wait for those before counting.
        wait_until("fresh counters", lambda: all(
            stats(rundir, f"v{i}").get("rx_packets", -1) == 0 for i in (0, 1)))
        k = burst(pmd, rundir, 1, [0, 0])
        assert stats(rundir, "v0")["rx_packets"] == k
        assert stats(rundir, "v1")["tx_packets"] == k
        assert pmd.forward_stats()[1] == (k, k)
    finally:
        pmd.quit()
        if d:
            d.stop()


# ---- a hostile guest -----------------------------------------------------------------------

def pcap_file(path, n=1):
    frame = bytes.fromhex("020000000004020000000003") + b"\x88\xb5" + bytes(46)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for _ in range(n):
            f.write(struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame)
    return frame


def test_hostile_guest_is_contained(rundir):
    pcap = rundir / "bg.pcap"
    frame = pcap_file(pcap)
    d = Daemon(rundir)
    h = None
    try:
        vsctl(rundir, "add-br", "brh", "--", "set", "Bridge", "brh", "other_config:module=patch")
        vsctl(rundir, "add-port", "brh", "h0", "--", "set", "Interface", "h0",
              "type=dpdkvhostuser", "options:tx-retries-max=0")
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
        sock = rundir / "h0"
        wait_until("socket", sock.exists)

        h = vf.Frontend(sock)
        wait_link(rundir, "h0", "up")
        sink0 = stats(rundir, "sink")["tx_packets"]
        t0 = time.time()

        # The guest transmits (ring 1): one good frame and six bad chains: a buffer outside
        # guest memory, an absurd length, a loop, a device-writable buffer, a `next` past the
        # table, an indirect table outside guest memory.
        TX = 1
        h.frame_desc(TX, 0, 0, frame)
        h.desc(TX, 1, vf.GPA + vf.REGION + 0x1000, 72)
        h.desc(TX, 2, h.buf(1)[0], 0xFFFF_0000)
        h.desc(TX, 3, h.buf(2)[0], 12, vf.DESC_NEXT, 4)
        h.desc(TX, 4, h.buf(3)[0], 60, vf.DESC_NEXT, 3)
        h.desc(TX, 5, h.buf(4)[0], 72, vf.DESC_WRITE)
        h.desc(TX, 6, h.buf(5)[0], 12, vf.DESC_NEXT, 200)
        h.desc(TX, 7, vf.GPA + vf.REGION + 0x10000, 32, vf.DESC_INDIRECT)
        for head in (0, 1, 2, 3, 5, 6, 7):
            h.offer(TX, head)
        wait_until("every chain returned", lambda: h.used_idx(TX) == 7)
        assert sorted(h.used(TX, k)[0] for k in range(7)) == [0, 1, 2, 3, 5, 6, 7]
        wait_until("counters", lambda: stats(rundir, "h0")["rx_errors"] >= 6)
        s = stats(rundir, "h0")
        assert s["rx_packets"] == 1 and s["rx_errors"] == 6, s
        wait_until("the good frame forwarded",
                   lambda: stats(rundir, "sink2")["tx_packets"] == 1)

        # The guest never offers receive buffers: what the switch sends it is dropped and
        # counted, never waited for.
        wait_until("tx drops counted", lambda: stats(rundir, "h0")["tx_dropped"] >= 5)
        # Then one good buffer and one outside guest memory: the first gets a frame (with
        # its virtio-net header, num_buffers = 1), the next is refused.
        RX = 0
        before = stats(rundir, "h0")
        gpa, off = h.buf(10)
        h.desc(RX, 0, gpa, 2048, vf.DESC_WRITE)
        h.desc(RX, 1, vf.GPA + vf.REGION, 2048, vf.DESC_WRITE)
        h.offer(RX, 0)
        h.offer(RX, 1)
        wait_until("both receive buffers used", lambda: h.used_idx(RX) == 2)
        assert h.used(RX, 0) == (0, 12 + len(frame)), h.used(RX, 0)
        assert h.read(off, 12) == bytes(10) + b"\x01\x00"
        assert h.read(off + 12, len(frame)) == frame
        wait_until("tx error counted", lambda: stats(rundir, "h0")["tx_errors"] == 1)
        assert stats(rundir, "h0")["tx_packets"] == before["tx_packets"] + 1

        # An available index more than a ring ahead: counted once, nothing read, and the
        # ring is left alone (not counted again on every poll).
        before = stats(rundir, "h0")
        h.set_avail_idx(TX, 7 + 1000)
        wait_until("broken ring counted",
                   lambda: stats(rundir, "h0")["rx_errors"] == before["rx_errors"] + 1)
        time.sleep(0.5)
        s = stats(rundir, "h0")
        assert s["rx_errors"] == before["rx_errors"] + 1 and s["rx_packets"] == before[
            "rx_packets"], s
        assert h.used_idx(TX) == 7

        # Garbage on the control channel ends the session; the link goes down.
        h.s.sendall(struct.pack("<III", 9999, 1, 0xFFFFFF) + b"\x99" * 64)
        wait_link(rundir, "h0", "down")
        h.close()
        h = None

        # Meanwhile the other ports kept forwarding at their rate.
        dt = time.time() - t0
        moved = stats(rundir, "sink")["tx_packets"] - sink0
        assert moved >= 2000 * dt * 0.5, (moved, dt)
        assert d.proc.poll() is None, "the switch died"

        # A well-behaved frontend can use the port again.
        h = vf.Frontend(sock)
        wait_link(rundir, "h0", "up")
        h.frame_desc(1, 0, 0, frame)
        h.offer(1, 0)
        wait_until("forwarded again", lambda: stats(rundir, "sink2")["tx_packets"] == 2)
        h.close()
        h = None
        wait_link(rundir, "h0", "down")
    finally:
        if h:
            h.close()
        d.stop()
