"""Real guests on vhost-user ports: QEMU running Debian's kernel with a busybox initramfs built
here (helpers/vm.py), its virtio-net NIC on a ferrovs port. Two guests on one bridge
(`dpdkvhostuser`, the switch listens) ping each other and run iperf3 TCP both ways at once
(`--bidir`): one guest's NIC has split virtqueues, the other's packed ones (`packed=on`), so
both ring layouts carry a real virtio-net driver's traffic in both directions (TSO frames from
the guests, MRG_RXBUF towards them), and each guest must receive TCP super-packets (runs of
segments the switch coalesced: fewer packets in the guest's NIC counters than frames sent).
The switch counts the frames it coalesced (`ovs_tx_coalesced_packets` in `statistics` and
dump-ports). A guest on a `dpdkvhostuserclient` port (QEMU listens) keeps pinging a namespace
host across a ferrovsd restart, the same QEMU process throughout; so does one on a
`dpdkvhostuser` port (the switch listens, QEMU connects again by itself with `reconnect=1`)
across a SIGTERM and a SIGKILL.

The guests run under TCG (see helpers/vm.py for why not KVM on this project's machines), so
the iperf3 figure measures the emulated guests more than the switch; it is printed, and the
test asserts that the bytes went through the switch's ports.
"""

import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import Daemon, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from testpmd import stats, vsctl, wait_link, wait_until  # noqa: E402
from vm import CLIENT_JOB, SERVER_JOB, Guest, iperf3_receivers, rx_stats  # noqa: E402

BOOT = 240.0  # seconds for a TCG guest to boot and load its modules on a loaded machine


@pytest.fixture(autouse=True)
def _peers():
    need_root()
    require("qemu-system-x86_64", "busybox", "iperf3", "apt-get", "dpkg-deb", "depmod", "ldd")


@pytest.fixture
def rundir():
    d = Path(tempfile.mkdtemp(prefix="ferrovs-vm-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def mac(i):
    return f"52:54:00:{os.getpid() >> 8 & 0xff:02x}:{os.getpid() & 0xff:02x}:{i:02x}"


PING_JOB = """
ip addr add {ip}/24 dev eth0
ip link set eth0 up
ping -i 0.3 {peer}
"""


PACKED_BIT = 34  # VIRTIO_F_RING_PACKED
# VIRTIO_NET_F_GUEST_CSUM, GUEST_TSO4, GUEST_TSO6: the switch may give the guest TCP
# super-packets (runs of segments coalesced on transmit).
GUEST_OFFLOAD_BITS = (1, 7, 8)
# The custom statistic counting frames the switch gave a guest inside super-packets.
COALESCED = "ovs_tx_coalesced_packets"


def test_two_guests_ping_and_iperf3_split_and_packed_rings(rundir):
    d = Daemon(rundir)
    guests = []
    try:
        vsctl(rundir, "add-br", "brvm")
        for i in (1, 2):
            vsctl(rundir, "add-port", "brvm", f"vm{i}", "--", "set", "Interface", f"vm{i}",
                  "type=dpdkvhostuser")
        for i in (1, 2):
            wait_until(f"socket vm{i}", (rundir / f"vm{i}").exists)
        ips = ["10.213.0.1", "10.213.0.2"]
        # g1 (server) split rings, g2 (client) packed rings.
        guests.append(Guest(rundir, "g1", rundir / "vm1", mac(1),
                            SERVER_JOB.format(ip=ips[0])))
        guests.append(Guest(rundir, "g2", rundir / "vm2", mac(2),
                            CLIENT_JOB.format(ip=ips[1], peer=ips[0], seconds=5, opts="--bidir"),
                            packed=True))
        wait_link(rundir, "vm1", "up", timeout=BOOT)
        wait_link(rundir, "vm2", "up", timeout=BOOT)
        assert guests[0].features(BOOT)[PACKED_BIT] == "0"
        assert guests[1].features(BOOT)[PACKED_BIT] == "1"
        for g in guests:
            f = g.features(BOOT)
            assert [f[b] for b in GUEST_OFFLOAD_BITS] == ["1"] * 3, f
        guests[0].wait_text(r"IPERF-SERVER-READY", BOOT)
        out = guests[1].wait_text(r"IPERF-DONE|IPERF-FAILED|PING-FAILED|VM-JOB-EXIT", 2 * BOOT)
        assert "IPERF-DONE" in out, out[-3000:]
        assert re.search(r"5 packets transmitted, 5 packets received, 0% packet loss", out), out

        got = iperf3_receivers(out)
        assert set(got) == {"TX-C", "RX-C"}, out[-3000:]
        mbits = re.findall(r"\[(TX-C|RX-C)\].*?([\d.]+) Mbits/sec\s+receiver", out)
        print(f"\niperf3 TCP --bidir guest to guest through ferrovs (TCG guests, g2 packed):"
              f" {mbits}, {got['TX-C'] / 1e6:.1f} MB to g1, {got['RX-C'] / 1e6:.1f} MB to g2")
        assert got["TX-C"] > 0 and got["RX-C"] > 0
        # What iperf3 counted went through the switch, both ways: vm2 received the client's
        # stream from g2 (packed) and vm1 gave it to g1 (split); the server's stream the
        # other way round.
        to_g1, to_g2 = got["TX-C"], got["RX-C"]

        def counted():
            s1, s2 = stats(rundir, "vm1"), stats(rundir, "vm2")
            return (s1["tx_bytes"] >= to_g1 and s2["rx_bytes"] >= to_g1
                    and s2["tx_bytes"] >= to_g2 and s1["rx_bytes"] >= to_g2)

        wait_until("counters", counted, 10)

        # Each guest's NIC counted fewer packets than the switch gave it: runs of segments
        # arrived as super-packets (with split rings to g1, packed ones to g2). The switch
        # counts the frames it coalesced (COALESCED in `statistics` and in dump-ports): a
        # super-packet holds at least two, so the guest got at most sent - coalesced / 2
        # packets (both counts only grow after the guest printed its own).
        # (`statistics` is refreshed every 5 s: wait for a snapshot taken after the guest's.)
        for g, port in ((guests[0], "vm1"), (guests[1], "vm2")):
            rx = rx_stats(g.wait_text(r"VM-RXSTATS \d+", BOOT))

            def fits():
                st = stats(rundir, port)
                return (0 < st[COALESCED] <= st["tx_packets"]
                        and 2 * rx[0] <= 2 * st["tx_packets"] - st[COALESCED])

            try:
                wait_until(f"{port}: coalesced frames in its statistics", fits, 12)
            finally:
                st = stats(rundir, port)
                sent, coalesced = st["tx_packets"], st.get(COALESCED)
                print(f"{port}: switch gave {sent} frames ({coalesced} coalesced), guest"
                      f" {g.name} received {rx[0]} packets"
                      f" ({rx[1] / max(rx[0], 1):.0f} bytes on average)")
            assert 0 < rx[0] and 4 * rx[0] < 3 * sent, (rx, sent)
            ports = json.loads(d.cli("dump-ports", "brvm", "--json").stdout)["ports"]
            assert [p[COALESCED] for p in ports if p["name"] == port][0] >= coalesced
        text = d.cli("dump-ports", "brvm").stdout
        assert len(re.findall(rf"^ +{COALESCED}=[1-9]\d*$", text, re.M)) == 2, text
    finally:
        for g in guests:
            g.stop()
        d.stop()


def test_client_port_guest_keeps_pinging_across_switch_restart(rundir, net):
    ns, sw_if = net.host("vmh", ip="10.214.0.1/24")
    sock = rundir / "vmc.sock"

    def switch():
        d = Daemon(rundir)
        vsctl(rundir, "--may-exist", "add-br", "brvc")
        vsctl(rundir, "--may-exist", "add-port", "brvc", sw_if)
        vsctl(rundir, "--may-exist", "add-port", "brvc", "vmc", "--", "set", "Interface",
              "vmc", "type=dpdkvhostuserclient", f"options:vhost-server-path={sock}")
        return d

    g = Guest(rundir, "gc", sock, mac(3), PING_JOB.format(ip="10.214.0.2", peer="10.214.0.1"),
              server=True)
    d = None
    try:
        wait_until("QEMU's socket", sock.exists, BOOT)
        d = switch()
        wait_link(rundir, "vmc", "up", timeout=BOOT)
        g.wait_text(r"seq=\d+ ttl=", BOOT, count=5)

        d.stop()
        d = None
        stopped = time.time()
        time.sleep(2)
        seqs = [int(s) for s in re.findall(r"seq=(\d+) ttl=", g.text())]
        last = max(seqs)
        time.sleep(1)
        # No replies while the switch is away.
        assert max(int(s) for s in re.findall(r"seq=(\d+) ttl=", g.text())) == last

        d = switch()
        wait_link(rundir, "vmc", "up", timeout=30)

        def resumed():
            new = [int(s) for s in re.findall(r"seq=(\d+) ttl=", g.text()) if int(s) > last]
            return len(new) >= 5

        wait_until("replies after the restart", resumed, 60)
        print(f"\nguest replies resumed {time.time() - stopped:.1f} s after the switch stopped")
        assert g.proc.poll() is None, "QEMU exited"
    finally:
        g.stop()
        if d:
            d.stop()


def restart(d, rundir, n):
    """Starts ferrovsd again on the same database after `d` exited; the old log is kept as
    ferrovsd.N.log."""
    d.log.close()
    os.replace(rundir / "ferrovsd.log", rundir / f"ferrovsd.{n}.log")
    # A killed switch leaves its control socket behind; the new one must not be taken for
    # ready before it listens.
    (rundir / "ferrovsd.ctl").unlink(missing_ok=True)
    return Daemon(rundir)


def replies(g, after=-1):
    """The sequence numbers of the ping replies on guest `g`'s console above `after`."""
    return [int(s) for s in re.findall(r"seq=(\d+) ttl=", g.text()) if int(s) > after]


def test_server_port_guest_reconnects_across_switch_restarts(rundir, net):
    """A guest on a `dpdkvhostuser` port (the switch listens on <rundir>/vms, QEMU connects
    with `reconnect=1`) pings a namespace host. ferrovsd is stopped with SIGTERM (it removes
    its socket file), then killed with SIGKILL (the file stays behind, nobody listening),
    and each time started again on the same database: it listens on the same path again,
    QEMU connects by itself (the same process throughout) and the pings resume; the new
    switch's counters for the port account for the replies the guest got."""
    ns, sw_if = net.host("vms", ip="10.215.0.1/24")
    sock = rundir / "vms"
    d = Daemon(rundir)
    g = None
    try:
        vsctl(rundir, "add-br", "brvs")
        vsctl(rundir, "add-port", "brvs", sw_if)
        vsctl(rundir, "add-port", "brvs", "vms", "--", "set", "Interface", "vms",
              "type=dpdkvhostuser")
        wait_until("the port's socket", sock.exists)
        assert stat.S_ISSOCK(sock.lstat().st_mode)
        g = Guest(rundir, "gs", sock, mac(4), PING_JOB.format(ip="10.215.0.2", peer="10.215.0.1"),
                  reconnect=True)
        wait_link(rundir, "vms", "up", timeout=BOOT)
        g.wait_text(r"seq=\d+ ttl=", BOOT, count=5)

        for n, sig in enumerate((signal.SIGTERM, signal.SIGKILL), 1):
            stopped = time.time()
            d.proc.send_signal(sig)
            d.proc.wait(timeout=30)
            if sig == signal.SIGTERM:
                assert not sock.exists(), "a stopped switch leaves its socket file"
            else:
                assert stat.S_ISSOCK(sock.lstat().st_mode)
            time.sleep(1)
            last = max(replies(g))
            time.sleep(1)
            # No replies while the switch is away.
            assert max(replies(g)) == last, sig
            d = restart(d, rundir, n)
            wait_link(rundir, "vms", "up", timeout=30)
            wait_until(f"replies after {sig.name}", lambda: len(replies(g, last)) >= 5, 60)
            print(f"\n{sig.name}: replies resumed {time.time() - stopped:.1f} s after the"
                  " switch stopped")

            # The new switch counted the requests it took from the guest and the replies it
            # gave (`statistics` is refreshed every 5 s). It drops what it sends before QEMU
            # is back (the port is there before the guest's link: a flooded frame or two,
            # counted in tx_dropped), nothing the guest sent.
            got = len(replies(g, last))

            def counted():
                st = stats(rundir, "vms")
                return st.get("rx_packets", 0) >= got and st.get("tx_packets", 0) >= got

            wait_until(f"counters after {sig.name}", counted, 15)
            st = stats(rundir, "vms")
            now = len(replies(g, last))
            print(f"{sig.name}: {got} replies, statistics {st}")
            assert st.get("tx_dropped", 0) <= 3 and st.get("rx_dropped", 0) == 0, st
            # Not much besides the pings either (ARP, the host's IPv6 chatter).
            assert st["tx_packets"] <= now + 20 and st["rx_packets"] <= now + 20, (st, now)
        assert g.proc.poll() is None, "QEMU exited"
        assert "VM-JOB-EXIT" not in g.text()
    finally:
        if g:
            g.stop()
        d.stop()
