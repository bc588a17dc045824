"""Hypervisors for the multi-chassis OVN tests: each chassis is a network namespace holding a
switch (ferrovsd, or Debian's ovs-vswitchd with its userspace datapath) with OVS's usual
userspace-tunnelling layout: `br-phy` takes the underlay veth and holds the chassis's underlay
address on its internal port, `br-int` (fail_mode=secure) is OVN's integration bridge. "VMs"
are namespaces cabled by a veth to `br-int`, bound to OVN logical ports by
`external_ids:iface-id`. Two chassis share one underlay veth pair (172.31.N.0/24).

Every name carries a per-test tag; `close()` removes what was made.
"""

import itertools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ovn import kill_pidfile, run, wait_path

_ids = itertools.count()
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
VM_MTU = 1400  # Geneve's 50-58 bytes of outer headers fit a 1500-byte underlay


def ns_run(ns, cmd, check=True, timeout=30):
    return run(["ip", "netns", "exec", ns, "sh", "-c", cmd], check=check, timeout=timeout)


class Underlay:
    """The cable between two chassis: a veth pair whose ends go into their namespaces."""

    def __init__(self):
        self.t = f"{os.getpid() % 1000}{next(_ids)}"
        n = int(self.t) % 200 + 20
        self.net = f"172.31.{n}"
        self.work = Path(tempfile.mkdtemp(prefix="ferrovs-ovn2-"))
        self.chassis = []
        self.vms = []

    def close(self):
        for c in self.chassis:
            c.close()
        for vm in self.vms:
            run(["ip", "netns", "del", vm], check=False)
        shutil.rmtree(self.work, ignore_errors=True)


class Chassis:
    """What both switch kinds share: the namespace, the underlay end, the VMs."""

    kind = None

    def __init__(self, under, name, index):
        self.under = under
        self.name = name
        self.ns = f"fvc{under.t}{name}"
        self.ip = f"{under.net}.{index}"
        self.ul = f"fvu{under.t}{name}"[:15]
        self.d = under.work / name
        self.d.mkdir()
        self.rundir = self.d
        self.system_id = f"{self.kind}-{name}"
        run(["ip", "netns", "add", self.ns])
        under.chassis.append(self)
        ns_run(self.ns, "ip link set lo up")

    @staticmethod
    def cable(a, b):
        """The underlay veth between chassis `a` and `b`."""
        run(["ip", "link", "add", a.ul, "netns", a.ns, "type", "veth", "peer", "name", b.ul,
             "netns", b.ns])
        for c in (a, b):
            # An AF_PACKET reader cannot take the UDP-tunnel GSO super-packets of a veth.
            ns_run(c.ns, f"ip link set {c.ul} up && ethtool -K {c.ul} tso off gso off",
                   check=False)

    def vsctl(self, *args, check=True):
        return run(["ovs-vsctl", f"--db=unix:{self.d}/db.sock", "--timeout=20", *args],
                   check=check)

    def bridges(self):
        """br-phy with the underlay address and the underlay veth, and a secure br-int."""
        self.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
                   "--", "add-port", "br-phy", self.ul)
        self.address()
        self.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "fail_mode=secure",
                   "datapath_type=netdev")

    def address(self):
        """The underlay address on br-phy's internal port (again after a restart: the port's
        device goes away with the switch, as with OVS's userspace datapath)."""
        ns_run(self.ns, f"ip addr replace {self.ip}/24 dev br-phy && ip link set br-phy up")

    def vm(self, name, iface_id, mac, ip, gw=None):
        """A VM namespace cabled to br-int as logical port `iface_id`; returns its name."""
        vm = f"fvm{self.under.t}{name}"
        port = f"fvp{self.under.t}{name}"[:15]
        run(["ip", "netns", "add", vm])
        self.under.vms.append(vm)
        run(["ip", "link", "add", port, "netns", self.ns, "type", "veth", "peer", "name",
             "eth0", "netns", vm])
        ns_run(vm, f"ip link set lo up && ip link set eth0 address {mac} mtu {VM_MTU} && "
                   f"ip addr add {ip} dev eth0 && ip link set eth0 up")
        # Segmentation and checksums done by the sender's kernel, as a VM's virtio-net does
        # with offloads off.
        ns_run(vm, "ethtool -K eth0 tx off tso off gso off", check=False)
        if gw:
            ns_run(vm, f"ip route add default via {gw}")
        ns_run(self.ns, f"ip link set {port} up")
        self.vsctl("add-port", "br-int", port, "--", "set", "interface", port,
                   f"external_ids:iface-id={iface_id}")
        return vm

    def flows(self):
        """br-int's flows as `dump-flows --no-stats --no-names` lines."""
        out = run(["ovs-ofctl", "-O", "OpenFlow15", "--no-stats", "--no-names", "dump-flows",
                   f"unix:{self.rundir}/br-int.mgmt"]).stdout
        return sorted(ln.strip() for ln in out.splitlines()
                      if ln.strip() and not ln.strip().startswith(("OFPST_", "NXST_")))

    def close(self):
        self.stop()
        run(["ip", "netns", "del", self.ns], check=False)


class FerrovsChassis(Chassis):
    kind = "ferrovs"

    def __init__(self, under, name, index, bin_dir):
        super().__init__(under, name, index)
        self.bin = Path(bin_dir)
        self.proc = None
        self.log = None

    def start(self):
        self.log = open(self.d / "ferrovsd.log", "a")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, str(self.bin / "ferrovsd"), "--rundir",
             str(self.d)], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while not ((self.d / "db.sock").exists() and (self.d / "ferrovsd.ctl").exists()):
            if self.proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"ferrovsd did not start:\n{self.logtext()}")
            time.sleep(0.05)

    def logtext(self):
        p = self.d / "ferrovsd.log"
        return p.read_text() if p.exists() else ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            run(["ovs-appctl", "-t", str(self.d / "ferrovsd.ctl"), "exit"], check=False,
                timeout=15)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        if self.log:
            self.log.close()
            self.log = None

    def restart(self):
        """Stops ferrovsd and starts it again on the same database."""
        self.stop()
        for s in ("db.sock", "ferrovsd.ctl"):
            (self.d / s).unlink(missing_ok=True)
        self.start()
        wait_path(self.d / "br-int.mgmt")
        deadline = time.time() + 20
        while ns_run(self.ns, "ip link show br-phy", check=False).returncode != 0:
            if time.time() > deadline:
                raise AssertionError(f"br-phy did not come back:\n{self.logtext()}")
            time.sleep(0.1)
        self.address()


class OvsChassis(Chassis):
    """Debian's Open vSwitch 3.1 with its userspace datapath (`netdev`)."""

    kind = "ovs"

    def start(self):
        d = self.d
        run(["ovsdb-tool", "create", f"{d}/conf.db", OVS_SCHEMA])
        run(["ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock",
             f"--pidfile={d}/ovsdb-server.pid", f"--unixctl={d}/ovsdb-server.ctl", "--detach",
             "--no-chdir", f"--log-file={d}/ovsdb-server.log"])
        self.vsctl("--no-wait", "init")
        run(["ip", "netns", "exec", self.ns, "ovs-vswitchd", f"unix:{d}/db.sock",
             f"--pidfile={d}/vswitchd.pid", f"--unixctl={d}/vswitchd.ctl", "--detach",
             "--no-chdir", f"--log-file={d}/vswitchd.log", "--disable-system"],
            env=dict(os.environ, OVS_RUNDIR=str(d)))

    def logtext(self):
        p = self.d / "vswitchd.log"
        return p.read_text() if p.exists() else ""

    def stop(self):
        for p in ("vswitchd.pid", "ovsdb-server.pid"):
            kill_pidfile(self.d / p)
