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

import re
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import Daemon, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import vhostfront as vf  # noqa: E402
from testpmd import Pmd, iface, stats, vsctl, wait_link, wait_until  # noqa: E402


@pytest.fixture(autouse=True)
def _peers():
    need_root()
    require("dpdk-testpmd", "ovs-vsctl")


@pytest.fixture
def rundir():
    d = Path(tempfile.mkdtemp(prefix="ferrovs-vhost-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def virtio_pmd(rundir, paths, server=False, queues=1, packed=False):
    """testpmd with one net_virtio_user port per socket path; `packed`: packed virtqueues
    (`packed_vq=1`), whose use testpmd's virtio driver logs ("using packed ring")."""
    vdevs = [f"net_virtio_user{i},path={p},server={int(server)},queues={queues}"
             f",packed_vq={int(packed)}" for i, p in enumerate(paths)]
    return Pmd(rundir, "vhost", vdevs, [f"--rxq={queues}", f"--txq={queues}"],
               eal=["--log-level=pmd.net.virtio.init:info"])


def assert_ring_layout(pmd, packed, ports=2):
    """testpmd's virtio driver chose the ring layout asked for on every port (a backend
    that does not offer VIRTIO_F_RING_PACKED gets split rings even with packed_vq=1)."""
    n = len(re.findall(r"using packed ring \S+ Tx path on port", pmd.text()))
    assert n >= ports if packed else n == 0, (packed, n)


def assert_in_order(pmd, ports=2):
    """testpmd's virtio driver took its in-order paths on split rings, which it does only
    when the switch offers VIRTIO_F_IN_ORDER (DPDK's vhost library, under OVS-DPDK, does):
    they trust the switch to use chains in the order they were made available."""
    t = pmd.text()
    for d in ("Rx", "Tx"):
        n = len(re.findall(rf"using inorder {d} path on port", t))
        assert n >= ports, (d, n)


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


@pytest.mark.parametrize("packed", [False, True], ids=["split", "packed"])
def test_server_ports_testpmd_both_ways_multiqueue(rundir, packed):
    d = start_switch(rundir, "dpdkvhostuser")
    pmd = None
    try:
        socks = [rundir / "v0", rundir / "v1"]
        for s in socks:
            wait_until(f"{s} exists", s.exists)
        assert iface(rundir, "v0", "link_state") == "down"
        pmd = virtio_pmd(rundir, socks, server=False, queues=2, packed=packed)
        wait_link(rundir, "v0", "up")
        wait_link(rundir, "v1", "up")
        n = pmd.burst(rundir, ("v0", "v1"), 4, [0, 0], queues=2)
        assert_ring_layout(pmd, packed)
        if not packed:
            assert_in_order(pmd)
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
        pmd = virtio_pmd(rundir, socks, server=False, queues=1, packed=packed)
        wait_link(rundir, "v0", "up")
        wait_link(rundir, "v1", "up")
        m = pmd.burst(rundir, ("v0", "v1"), 2, [n, n])
        assert pmd.forward_stats()[0] == (m, m)
        assert stats(rundir, "v0")["rx_packets"] == n + m
    finally:
        if pmd:
            pmd.quit()
        d.stop()
    assert not (rundir / "v0").exists(), "the socket file outlived the switch"


@pytest.mark.parametrize("packed", [False, True], ids=["split", "packed"])
def test_client_ports_reconnect_across_switch_restart(rundir, packed):
    paths = [rundir / "vm0.sock", rundir / "vm1.sock"]
    pmd = virtio_pmd(rundir, paths, server=True, packed=packed)
    d = None
    try:
        # testpmd's server-mode ports wait for their backend one after the other while
        # probing: the switch connects to whichever sockets exist, retrying every second.
        d = start_switch(rundir, "dpdkvhostuserclient", paths)
        wait_link(rundir, "v0", "up")
        wait_link(rundir, "v1", "up")
        pmd.wait_text(r"testpmd> ")
        n = pmd.burst(rundir, ("v0", "v1"), 4, [0, 0])
        assert_ring_layout(pmd, packed)
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
        k = pmd.burst(rundir, ("v0", "v1"), 1, [0, 0])
        assert stats(rundir, "v0")["rx_packets"] == k
        assert stats(rundir, "v1")["tx_packets"] == k
        assert pmd.forward_stats()[1] == (k, k)
    finally:
        pmd.quit()
        if d:
            d.stop()


def test_rings_enabled_before_features_as_qemu_does(rundir):
    """QEMU enables a vhost-user NIC's rings before SET_FEATURES acks protocol features and
    never again once it starts them: the rings must still run (tests/integration/test_vm.py
    does it with QEMU itself)."""
    d = Daemon(rundir)
    h = None
    try:
        vsctl(rundir, "add-br", "brq", "--", "set", "Bridge", "brq", "other_config:module=patch")
        vsctl(rundir, "add-port", "brq", "q0", "--", "set", "Interface", "q0",
              "type=dpdkvhostuser")
        wait_until("socket", (rundir / "q0").exists)
        h = vf.Frontend(rundir / "q0", qemu_order=True)
        wait_link(rundir, "q0", "up")
    finally:
        if h:
            h.close()
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


def test_hostile_guest_on_packed_rings_is_contained(rundir):
    """The hostile guest again, on packed rings (VIRTIO_F_RING_PACKED): each bad chain is
    returned used with length 0 and counted, a chain that never ends breaks its ring once,
    a guest without receive buffers costs drops, and GET_VRING_BASE reports the ring
    positions in the packed encoding (position, wrap counter at bit 15; the used side again
    in bits 16-31)."""
    pcap = rundir / "pk.pcap"
    frame = pcap_file(pcap)
    d = Daemon(rundir)
    h = None
    try:
        vsctl(rundir, "add-br", "brk", "--", "set", "Bridge", "brk", "other_config:module=patch")
        vsctl(rundir, "add-port", "brk", "k0", "--", "set", "Interface", "k0",
              "type=dpdkvhostuser", "options:tx-retries-max=0")
        vsctl(rundir, "add-port", "brk", "ksink", "--", "set", "Interface", "ksink",
              "type=null")
        vsctl(rundir, "add-port", "brk", "ksrc", "--", "set", "Interface", "ksrc", "type=pcap",
              f"options:rx_pcap={pcap}", "options:infinite_rx=true", "options:rx_pps=20")
        d.cli("patch-set", "brk", "ksrc", "k0")
        d.cli("patch-set", "brk", "k0", "ksink")
        sock = rundir / "k0"
        wait_until("socket", sock.exists)
        h = vf.Frontend(sock, packed=True)
        wait_link(rundir, "k0", "up")
        RX, TX = 0, 1
        assert h.device_event_flags(TX) == 1, "the switch polls: kicks disabled"

        # One good frame and five bad chains (seven descriptors in all).
        gpa, off = h.buf(0)
        h.write(off, bytes(vf.HDR) + frame)
        good = h.poffer(TX, [(gpa, vf.HDR + len(frame), 0)])
        bad = [h.poffer(TX, [(vf.GPA + vf.REGION + 0x1000, 72, 0)]),
               h.poffer(TX, [(h.buf(1)[0], 0xFFFF_0000, 0)]),
               h.poffer(TX, [(h.buf(2)[0], 72, vf.DESC_WRITE)]),
               h.poffer(TX, [(h.buf(3)[0], 32, vf.DESC_INDIRECT), (h.buf(4)[0], 60, 0)]),
               h.poffer(TX, [(vf.GPA + vf.REGION + 0x10000, 32, vf.DESC_INDIRECT)])]
        used = []
        wait_until("every chain returned",
                   lambda: used.extend(h.pused(TX)) or len(used) == 6)
        assert sorted(used) == sorted([(good, 0)] + [(b, 0) for b in bad]), used
        wait_until("counters", lambda: stats(rundir, "k0")["rx_errors"] >= 5)
        s = stats(rundir, "k0")
        assert s["rx_packets"] == 1 and s["rx_errors"] == 5, s
        wait_until("the good frame forwarded",
                   lambda: stats(rundir, "ksink")["tx_packets"] == 1)

        # No receive buffers: drops. Then a good buffer and one outside guest memory.
        wait_until("tx drops counted", lambda: stats(rundir, "k0")["tx_dropped"] >= 3)
        before = stats(rundir, "k0")
        gpa, off = h.buf(10)
        ok = h.poffer(RX, [(gpa, 2048, vf.DESC_WRITE)])
        out = h.poffer(RX, [(vf.GPA + vf.REGION, 2048, vf.DESC_WRITE)])
        rused = []
        wait_until("both receive buffers used",
                   lambda: rused.extend(h.pused(RX)) or len(rused) == 2)
        assert rused == [(ok, vf.HDR + len(frame)), (out, 0)], rused
        assert h.read(off, vf.HDR) == bytes(10) + b"\x01\x00"
        assert h.read(off + vf.HDR, len(frame)) == frame
        wait_until("tx error counted", lambda: stats(rundir, "k0")["tx_errors"] == 1)
        assert stats(rundir, "k0")["tx_packets"] == before["tx_packets"] + 1

        # A chain that never ends (NEXT on every descriptor of the ring): the ring is
        # broken, counted once, and left alone.
        before = stats(rundir, "k0")
        pos, wrap = h.pk[TX][0], h.pk[TX][1]
        for k in reversed(range(vf.SLOTS)):
            p, w = pos + k, wrap
            if p >= vf.SLOTS:
                p, w = p - vf.SLOTS, wrap ^ 1
            h.pdesc(TX, p, h.buf(1)[0], 12, 0,
                    vf.DESC_NEXT | (vf.DESC_AVAIL if w else vf.DESC_USED))
        wait_until("broken ring counted",
                   lambda: stats(rundir, "k0")["rx_errors"] == before["rx_errors"] + 1)
        time.sleep(0.5)
        s = stats(rundir, "k0")
        assert s["rx_errors"] == before["rx_errors"] + 1, s
        assert s["rx_packets"] == before["rx_packets"], s
        # Seven descriptors taken on the transmit ring, two on the receive ring.
        assert h.get_vring_base(TX) == 0x8007_8007
        assert h.get_vring_base(RX) == 0x8002_8002
        h.close()
        h = None
        wait_link(rundir, "k0", "down")
        assert d.proc.poll() is None, "the switch died"

        # A well-behaved frontend can use the port again.
        h = vf.Frontend(sock, packed=True)
        wait_link(rundir, "k0", "up")
        gpa, off = h.buf(0)
        h.write(off, bytes(vf.HDR) + frame)
        h.poffer(TX, [(gpa, vf.HDR + len(frame), 0)])
        wait_until("forwarded again", lambda: stats(rundir, "ksink")["tx_packets"] == 2)
    finally:
        if h:
            h.close()
        d.stop()


def test_guest_offloads_are_finished_by_the_switch(rundir):
    """A guest that negotiated CSUM and HOST_TSO4/6 hands over a 10,000-byte TCP
    super-packet (virtio-net header: NEEDS_CSUM, GSO_TCPV4, gso_size 1000) spread over
    several descriptors, and a UDP datagram whose checksum it left to us. The guest on the
    other port receives eleven complete frames: ten MSS-sized TCP segments with correct IP
    and TCP checksums and consecutive sequence numbers, and the datagram with its checksum
    filled in."""
    from scapy.all import IP, TCP, UDP, Ether, raw

    d = Daemon(rundir)
    a = b = None
    try:
        vsctl(rundir, "add-br", "bro", "--", "set", "Bridge", "bro", "other_config:module=patch")
        for n in ("oa", "ob"):
            vsctl(rundir, "add-port", "bro", n, "--", "set", "Interface", n,
                  "type=dpdkvhostuser")
        d.cli("patch-set", "bro", "oa", "ob")
        wait_until("sockets", lambda: (rundir / "oa").exists() and (rundir / "ob").exists())
        feats = vf.F_VERSION_1 | vf.F_MRG_RXBUF | vf.F_CSUM | vf.F_HOST_TSO4 | vf.F_HOST_TSO6
        a = vf.Frontend(rundir / "oa", feats)
        b = vf.Frontend(rundir / "ob")
        wait_link(rundir, "oa", "up")
        wait_link(rundir, "ob", "up")
        RX, TX = 0, 1
        for i in range(vf.SLOTS):
            b.desc(RX, i, b.buf(i)[0], vf.BUFSZ, vf.DESC_WRITE)
            b.offer(RX, i)

        payload = bytes((i * 7 + i // 253) & 0xFF for i in range(10_000))
        tcp = raw(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") /
                  IP(src="10.0.0.1", dst="10.0.0.2", id=100) /
                  TCP(sport=40000, dport=5201, seq=5000, flags="PA") / payload)
        # The chain: header, then the frame in 1,500-byte pieces, one buffer each.
        hdr = struct.pack("<BBHHHHH", 1, 1, 54, 1000, 34, 16, 0)
        pieces = [hdr] + [tcp[k:k + 1500] for k in range(0, len(tcp), 1500)]
        for k, piece in enumerate(pieces):
            gpa, off = a.buf(k)
            a.write(off, piece)
            last = k == len(pieces) - 1
            a.desc(TX, k, gpa, len(piece), 0 if last else vf.DESC_NEXT, k + 1)
        a.offer(TX, 0)
        udp_good = raw(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") /
                       IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) /
                       (b"x" * 100))
        # What a guest leaves in the checksum field: the pseudo-header sum, not complemented.
        pseudo = 0x0A00 + 0x0001 + 0x0A00 + 0x0002 + 17 + 108
        udp_partial = udp_good[:40] + struct.pack("!H", pseudo) + udp_good[42:]
        slot = len(pieces)
        gpa, off = a.buf(slot)
        a.write(off, struct.pack("<BBHHHHH", 1, 0, 0, 0, 34, 6, 0) + udp_partial)
        a.desc(TX, slot, gpa, 12 + len(udp_partial))
        a.offer(TX, slot)

        wait_until("eleven frames received", lambda: b.used_idx(RX) == 11)
        frames = []
        for k in range(11):
            head, n = b.used(RX, k)
            frames.append(b.read(b.buf(head)[1] + 12, n - 12))
        got = b""
        for k, f in enumerate(frames[:10]):
            p = Ether(f)
            assert len(p[TCP].payload) == 1000, k
            assert p[TCP].seq == 5000 + 1000 * k
            assert p[IP].len == 20 + 20 + 1000
            fixed = Ether(raw(p))
            del fixed[IP].chksum
            del fixed[TCP].chksum
            fixed = Ether(raw(fixed))
            assert (p[IP].chksum, p[TCP].chksum) == (fixed[IP].chksum, fixed[TCP].chksum), k
            assert (p[TCP].flags == "PA") == (k == 9), (k, p[TCP].flags)
            got += bytes(p[TCP].payload)
        assert got == payload
        assert frames[10] == udp_good
        wait_until("counted", lambda: stats(rundir, "oa")["rx_packets"] == 11)
        assert stats(rundir, "oa")["rx_errors"] == 0
    finally:
        for f in (a, b):
            if f:
                f.close()
        d.stop()
