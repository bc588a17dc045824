"""OVN for the integration tests, from Debian's packages (ovn-central, ovn-host): a central
(the northbound and southbound ovsdb-servers and ovn-northd), chassis (an Open vSwitch 3.1
one, ovs-vswitchd with dummy ports, or a ferrovs one), and an ovn-controller per chassis.
Everything lives in one work directory; nothing listens on the network (unix sockets only),
and `stop()` kills what was started.
"""

import os
import re
import subprocess
import time
from pathlib import Path

OVN_SCHEMAS = Path("/usr/share/ovn")
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"


def run(cmd, check=True, env=None, timeout=60):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd!r} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def wait_path(p, seconds=20):
    deadline = time.time() + seconds
    while not Path(p).exists():
        if time.time() > deadline:
            raise AssertionError(f"{p} did not appear")
        time.sleep(0.05)


def kill_pidfile(p):
    p = Path(p)
    if p.exists():
        subprocess.run(["kill", p.read_text().strip()], check=False, capture_output=True)


class Central:
    """NB and SB databases and ovn-northd under `work/central`."""

    def __init__(self, work):
        d = self.d = Path(work) / "central"
        d.mkdir(parents=True)
        self.pids = []
        for db in ("nb", "sb"):
            run(["ovsdb-tool", "create", f"{d}/{db}.db", f"{OVN_SCHEMAS}/ovn-{db}.ovsschema"])
            run(["ovsdb-server", f"{d}/{db}.db", f"--remote=punix:{d}/{db}.sock",
                 f"--pidfile={d}/{db}.pid", f"--unixctl={d}/{db}.ctl", "--detach",
                 "--no-chdir", f"--log-file={d}/{db}.log"])
            self.pids.append(d / f"{db}.pid")
        run(["ovn-northd", f"--ovnnb-db=unix:{d}/nb.sock", f"--ovnsb-db=unix:{d}/sb.sock",
             f"--pidfile={d}/northd.pid", f"--unixctl={d}/northd.ctl", "--detach",
             "--no-chdir", f"--log-file={d}/northd.log"])
        self.pids.append(d / "northd.pid")
        self.sb = f"unix:{d}/sb.sock"

    def nbctl(self, *args):
        return run(["ovn-nbctl", f"--db=unix:{self.d}/nb.sock", *args]).stdout.strip()

    def sbctl(self, *args):
        return run(["ovn-sbctl", f"--db=unix:{self.d}/sb.sock", *args]).stdout.strip()

    def stop(self):
        for p in self.pids:
            kill_pidfile(p)


def topology(c):
    """Two logical switches behind a logical router, an ACL pair (stateful allow, drop), a
    load balancer and native DHCP: sw0 has p1 (10.0.0.1) and p2 (10.0.0.2), sw1 has p3
    (10.0.1.3); lr0 routes between 10.0.0.254 and 10.0.1.254."""
    c.nbctl("ls-add", "sw0")
    c.nbctl("ls-add", "sw1")
    for sw, p, mac, ip in [("sw0", "p1", "00:00:00:00:00:01", "10.0.0.1"),
                           ("sw0", "p2", "00:00:00:00:00:02", "10.0.0.2"),
                           ("sw1", "p3", "00:00:00:00:01:03", "10.0.1.3")]:
        c.nbctl("lsp-add", sw, p)
        c.nbctl("lsp-set-addresses", p, f"{mac} {ip}")
    c.nbctl("lr-add", "lr0")
    c.nbctl("lrp-add", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.254/24")
    c.nbctl("lrp-add", "lr0", "lr0-sw1", "00:00:00:00:ff:02", "10.0.1.254/24")
    for sw in ("sw0", "sw1"):
        c.nbctl("lsp-add", sw, f"{sw}-lr0", "--", "lsp-set-type", f"{sw}-lr0", "router",
                "--", "lsp-set-addresses", f"{sw}-lr0", "router",
                "--", "lsp-set-options", f"{sw}-lr0", f"router-port=lr0-{sw}")
    c.nbctl("acl-add", "sw0", "from-lport", "1002", "ip4 && tcp.dst == 80", "allow-related")
    c.nbctl("acl-add", "sw0", "from-lport", "1001", "ip4 && udp.dst == 9", "drop")
    c.nbctl("lb-add", "lb0", "10.0.0.100:80", "10.0.0.1:80,10.0.1.3:80", "tcp")
    c.nbctl("ls-lb-add", "sw0", "lb0")
    c.nbctl("dhcp-options-create", "10.0.0.0/24")
    uuid = c.nbctl("--bare", "--columns=_uuid", "find", "dhcp_options", 'cidr="10.0.0.0/24"')
    c.nbctl("dhcp-options-set-options", uuid, "lease_time=3600", "router=10.0.0.254",
            "server_id=10.0.0.254", "server_mac=00:00:00:00:ff:01")
    c.nbctl("lsp-set-dhcpv4-options", "p1", uuid)


class OvsChassis:
    """Debian's ovsdb-server and ovs-vswitchd (dummy datapath, no system devices) with a
    secure `br-int` under `work/NAME`."""

    def __init__(self, work, name):
        d = self.d = Path(work) / name
        d.mkdir(parents=True)
        self.rundir = d
        self.env = dict(os.environ, OVS_RUNDIR=str(d), OVS_DBDIR=str(d), OVS_LOGDIR=str(d))
        run(["ovsdb-tool", "create", f"{d}/conf.db", OVS_SCHEMA])
        run(["ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock",
             f"--pidfile={d}/ovsdb-server.pid", f"--unixctl={d}/ovsdb-server.ctl", "--detach",
             "--no-chdir", f"--log-file={d}/ovsdb-server.log"], env=self.env)
        self.db = f"unix:{d}/db.sock"
        run(["ovs-vsctl", f"--db={self.db}", "--no-wait", "init"])
        run(["ovs-vswitchd", self.db, "--enable-dummy=override", "--disable-system",
             f"--pidfile={d}/vswitchd.pid", f"--unixctl={d}/vswitchd.ctl", "--detach",
             "--no-chdir", f"--log-file={d}/vswitchd.log"], env=self.env)
        self.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=dummy",
                   "fail_mode=secure")
        wait_path(d / "br-int.mgmt")

    def vsctl(self, *args):
        return run(["ovs-vsctl", f"--db={self.db}", *args], env=self.env).stdout.strip()

    def bind(self, port, iface_id):
        """A port of br-int that OVN binds to logical port `iface_id`."""
        self.vsctl("add-port", "br-int", port, "--", "set", "interface", port, "type=dummy",
                   f"external_ids:iface-id={iface_id}")

    def stop(self):
        for p in ("vswitchd.pid", "ovsdb-server.pid"):
            kill_pidfile(self.d / p)


class Controller:
    """ovn-controller for the chassis whose OVSDB is `db` and whose bridges' management
    sockets are in `rundir`, registered as `system_id` with `central`."""

    def __init__(self, work, central, db, rundir, system_id, encap_ip="127.0.0.1"):
        d = self.d = Path(work) / f"ovn-controller-{system_id}"
        d.mkdir(parents=True)
        run(["ovs-vsctl", f"--db={db}", "set", "open", ".",
             f"external_ids:system-id={system_id}", f"external_ids:ovn-remote={central.sb}",
             "external_ids:ovn-encap-type=geneve", f"external_ids:ovn-encap-ip={encap_ip}"])
        self.log = d / "ovn-controller.log"
        self.db, self.rundir = db, rundir
        self.start()

    def start(self):
        d = self.d
        env = dict(os.environ, OVS_RUNDIR=str(self.rundir), OVN_RUNDIR=str(d))
        run(["ovn-controller", self.db, f"--pidfile={d}/ovn-controller.pid", "--detach",
             "--no-chdir", f"--log-file={self.log}"], env=env)

    def openflow_errors(self):
        """The OpenFlow errors the switch sent, as ovn-controller logged them."""
        text = self.log.read_text() if self.log.exists() else ""
        return re.findall(r"OpenFlow error: .*", text)

    def appctl(self, *args, timeout=60):
        pid = (self.d / "ovn-controller.pid").read_text().strip()
        return run(["ovn-appctl", "-t", str(self.d / f"ovn-controller.{pid}.ctl"), *args],
                   timeout=timeout).stdout

    def stop(self):
        """Stops ovn-controller and waits until it is gone."""
        p = self.d / "ovn-controller.pid"
        if not p.exists():
            return
        pid = p.read_text().strip()
        kill_pidfile(p)
        deadline = time.time() + 10
        while Path(f"/proc/{pid}").exists() and time.time() < deadline:
            time.sleep(0.05)


def ofctl(rundir, *args, check=True):
    return run(["ovs-ofctl", "-O", "OpenFlow15", *args], check=check,
               env=dict(os.environ, OVS_RUNDIR=str(rundir)))


def flows(rundir, bridge):
    """`dump-flows --no-stats` of the bridge as sorted lines (reset_counts dropped: it is a
    flag of the flow_mod, which OVS prints and ferrovs does not keep)."""
    out = ofctl(rundir, "--no-stats", "dump-flows", f"unix:{rundir}/{bridge}.mgmt").stdout
    lines = [ln.strip().replace("reset_counts ", "") for ln in out.splitlines()]
    return sorted(ln for ln in lines if ln and not ln.startswith(("OFPST_", "NXST_")))


def settle(rundir, bridge, seconds=60):
    """Waits until the bridge's flow table has been the same for 3 s; returns it."""
    deadline = time.time() + seconds
    last, since = None, time.time()
    while time.time() < deadline:
        now = flows(rundir, bridge)
        if now != last:
            last, since = now, time.time()
        elif now and time.time() - since >= 3:
            return now
        time.sleep(0.5)
    raise AssertionError(f"{bridge}'s flows did not settle in {seconds} s")
