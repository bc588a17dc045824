"""Real guests on vhost-user ports: QEMU running Debian's kernel with a busybox initramfs built
here (helpers/vm.py), its virtio-net NIC on a ferrovs port. Two guests on one bridge
(`dpdkvhostuser`, the switch listens) ping each other and run iperf3 TCP both ways at once
(`--bidir`): one guest's NIC has split virtqueues, the other's packed ones (`packed=on`), so
both ring layouts carry a real virtio-net driver's traffic in both directions (TSO frames from
the guests, MRG_RXBUF towards them), and each guest must receive TCP super-packets (runs of
segments the switch coalesced: fewer packets in the guest's NIC counters than frames sent).
The switch counts the frames it coalesced (`ovs_tx_coalesced_packets` in `statistics` and
dump-ports). Two guests on `dpdkvhostuserclient` ports (QEMU listens), one on split rings and
one on packed rings, keep pinging a namespace host across ferrovsd stopped with SIGTERM and
killed with SIGKILL, started again each time on the same database with the same QEMU
processes, and then run iperf3 to that host. A guest on a `dpdkvhostuser` port (the switch
listens, QEMU connects again by itself with `reconnect=1`) keeps pinging across a SIGTERM and a
SIGKILL too.

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import Daemon, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from testpmd import stats, vsctl, wait_link, wait_until  # noqa: E402
from vm import (CLIENT_JOB, SERVER_JOB, Guest, iperf3_receivers, iperf3_result,  # noqa: E402
                rx_stats)

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


# Pings its peer throughout, and runs iperf3 to it (port `port`, 2 s) again and again,
# printing each completed run's receiver line after IPERF-OK.
RESTART_JOB = """
ip addr add {ip}/24 dev eth0
ip link set eth0 up
ping -i 0.3 {peer} &
while true; do
    if iperf3 -c {peer} -p {port} -t 2 -f m --connect-timeout 1000 > /tmp/iperf3.out 2>&1; then
        echo "IPERF-OK $(grep receiver /tmp/iperf3.out)"
    fi
    sleep 0.5
done
"""


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


def iperf_runs(g):
    """(bytes, Mbit/s) of each iperf3 run guest `g` completed (RESTART_JOB)."""
    return [iperf3_result(line) for line in re.findall(r"IPERF-OK .*", g.text())]


def test_client_port_guests_keep_working_across_switch_restarts(rundir, net):
    """Two guests on `dpdkvhostuserclient` ports (QEMU listens), one with split rings and
    one with packed rings, ping a namespace host and run iperf3 to it over and over, across
    a ferrovsd stopped with SIGTERM and one killed with SIGKILL while the streams run, each
    time started again on the same database with the same QEMU processes; pings resume and
    iperf3 runs complete again. Packed rings are the hard case: QEMU cannot say where they
    stand (its base is stale), so the switch reads it from the ring
    (crates/netdev/src/vhost/vring/packed/resume.rs)."""
    ns, sw_if = net.host("vmh", ip="10.214.0.1/24")
    guests = []
    iperfs = []
    d = None
    try:
        for i in (1, 2):
            iperfs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, "iperf3", "-s", "-p", str(5200 + i)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for i, packed in ((1, False), (2, True)):
            guests.append(Guest(rundir, f"gc{i}", rundir / f"vmc{i}.sock", mac(2 + i),
                                RESTART_JOB.format(ip=f"10.214.0.{1 + i}", peer="10.214.0.1",
                                                   port=5200 + i),
                                server=True, packed=packed))
        for i in (1, 2):
            wait_until("QEMU's socket", (rundir / f"vmc{i}.sock").exists, BOOT)
        d = Daemon(rundir)
        vsctl(rundir, "add-br", "brvc")
        vsctl(rundir, "add-port", "brvc", sw_if)
        for i in (1, 2):
            vsctl(rundir, "add-port", "brvc", f"vmc{i}", "--", "set", "Interface", f"vmc{i}",
                  "type=dpdkvhostuserclient", f"options:vhost-server-path={rundir}/vmc{i}.sock")
        for i in (1, 2):
            wait_link(rundir, f"vmc{i}", "up", timeout=BOOT)
        assert guests[0].features(BOOT)[PACKED_BIT] == "0"
        assert guests[1].features(BOOT)[PACKED_BIT] == "1"
        for g in guests:
            g.wait_text(r"seq=\d+ ttl=", BOOT, count=5)
            g.wait_text(r"IPERF-OK", BOOT)

        for n, sig in enumerate((signal.SIGTERM, signal.SIGKILL), 1):
            stopped = time.time()
            d.proc.send_signal(sig)
            d.proc.wait(timeout=30)
            time.sleep(1)
            last = [max(replies(g)) for g in guests]
            time.sleep(1)
            # No replies while the switch is away.
            assert [max(replies(g)) for g in guests] == last, sig
            d = restart(d, rundir, n)
            for i in (1, 2):
                wait_link(rundir, f"vmc{i}", "up", timeout=30)
            for g, lst in zip(guests, last):
                wait_until(f"{g.name}'s replies after {sig.name}",
                           lambda: len(replies(g, lst)) >= 5, 60)
            print(f"\n{sig.name}: replies resumed {time.time() - stopped:.1f} s after the"
                  f" switch stopped (split and packed rings)")
        # A run that began before the kill may end after it: two more, so that one ran
        # entirely on the restarted switch.
        done = [len(iperf_runs(g)) for g in guests]
        for g, k in zip(guests, done):
            wait_until(f"{g.name}'s iperf3 after the restarts",
                       lambda: len(iperf_runs(g)) >= k + 2, 120)
            got = iperf_runs(g)[-1]
            assert got and got[0] > 0, g.text()[-3000:]
            print(f"{g.name}: iperf3 to the host {got[0] / 1e6:.1f} MB in 2 s, {got[1]} Mbit/s"
                  f" ({len(iperf_runs(g))} runs in all)")
        for g in guests:
            assert g.proc.poll() is None, f"QEMU {g.name} exited"
    finally:
        for p in iperfs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
        for g in guests:
            g.stop()
        if d:
            d.stop()


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
