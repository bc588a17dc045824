"""What the memif and vhost-user tests share: Debian's dpdk-testpmd driven interactively as the
peer of a shared-memory port, and the port state those tests read back from the switch's
database (link state, statistics).

testpmd runs without hugepages or PCI (`--no-huge --no-pci --no-shconf`) under a private
`--file-prefix`, so several can run at once and none touches the host's DPDK state; its
output goes to a log file in the test's run directory, which the waits below read.
"""

import os
import re
import subprocess
import time

from conftest import run

TIMEOUT = 20.0


def vsctl(rundir, *args, check=True):
    return run(["ovs-vsctl", f"--db=unix:{rundir}/db.sock", "--timeout=20", *map(str, args)],
               check=check)


def iface(rundir, name, col):
    return vsctl(rundir, "get", "Interface", name, col).stdout.strip().strip('"')


def stats(rundir, name):
    s = vsctl(rundir, "get", "Interface", name, "statistics").stdout
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", s)}


def wait_until(what, cond, timeout=TIMEOUT):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def wait_link(rundir, name, state, timeout=TIMEOUT):
    wait_until(f"{name} link {state}", lambda: iface(rundir, name, "link_state") == state,
               timeout)


class Pmd:
    """An interactive dpdk-testpmd with the given `--vdev` devices (ports 0..n-1 in order)
    and extra EAL arguments `eal`."""

    n = 0

    def __init__(self, rundir, tag, vdevs, extra=(), eal=()):
        Pmd.n += 1
        self.out = open(rundir / f"testpmd{Pmd.n}.log", "w+")
        args = []
        for v in vdevs:
            args += ["--vdev", v]
        self.proc = subprocess.Popen(
            ["stdbuf", "-oL", "dpdk-testpmd", "-l", "0-1", "--no-huge", "-m", "512",
             "--no-pci", "--no-shconf", f"--file-prefix=fv{tag}{os.getpid()}x{Pmd.n}", *eal, *args,
             "--", "-i", "--total-num-mbufs=16384", *extra],
            stdin=subprocess.PIPE, stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def cmd(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def text(self):
        self.out.flush()
        self.out.seek(0)
        return self.out.read()

    def wait_text(self, pattern, count=1, timeout=TIMEOUT):
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

    def burst(self, rundir, ports, n_bursts, before, queues=1):
        """Sends n_bursts x 32 packets per queue out of each testpmd port and counts what
        comes back, after the switch's `ports` (the peers of testpmd's ports 0 and 1) have
        forwarded them all; returns how many each port sent."""
        self.cmd("set fwd rxonly")
        self.cmd(f"start tx_first {n_bursts}")
        n = 32 * n_bursts * queues
        wait_until("ferrovs forwarding both ways",
                   lambda: all(stats(rundir, p).get("tx_packets", 0) >= before[i] + n
                               for i, p in enumerate(ports)))
        time.sleep(0.3)
        # Counted before `stop`: testpmd may print the new block before we look.
        seen = self.text().count("Forward statistics for port 1")
        self.cmd("stop")
        self.wait_text(r"Forward statistics for port 1", count=seen + 1)
        return n
