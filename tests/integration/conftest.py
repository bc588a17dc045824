"""Shared fixtures for ferrovs integration tests.

Every test that needs a network builds its own: network namespaces and veth pairs with names
unique to this process, removed afterwards even when the test fails. Traffic only ever flows
between those namespaces and the switch. The daemon runs with a private rundir per test.
"""

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("FERROVS_BIN_DIR", ROOT / "target" / "release"))
PY = sys.executable
HELPERS = Path(__file__).resolve().parent / "helpers"

_counter = itertools.count()


def run(cmd, check=True, timeout=30, **kw):
    """Runs a command (list or string), capturing text output."""
    shell = isinstance(cmd, str)
    r = subprocess.run(cmd, shell=shell, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd!r} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def need_root():
    if os.geteuid() != 0:
        pytest.fail("needs root (network namespaces): run scripts/test.sh as root", pytrace=False)


def require(*tools):
    """Fails the test when a peer tool is missing. Never a skip: scripts/test.sh installs every
    peer the suite uses, so a missing one is a broken setup, not a reason to pass."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)} (scripts/test.sh installs it)", pytrace=False)



def ovs_beside_ferrovs(work, protocols=None):
    """For module fixtures: Debian's OVS 3.1 and ferrovs side by side in `work` (yields the
    pair, stops both after; helpers/ovsdiff.both), once root and OVS's tools are checked."""
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    if str(HELPERS) not in sys.path:
        sys.path.insert(0, str(HELPERS))
    import ovsdiff

    yield from ovsdiff.both(work, BIN, protocols)

class Daemon:
    """A ferrovsd with its own rundir."""

    def __init__(self, tmp: Path, extra_args=()):
        self.rundir = tmp
        self.ctl = tmp / "ferrovsd.ctl"
        self.log = open(tmp / "ferrovsd.log", "w+")
        self.proc = subprocess.Popen(
            [str(BIN / "ferrovsd"), "--rundir", str(tmp), "--pcap-dir", tempfile.gettempdir(),
             *extra_args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 10
        while not self.ctl.exists():
            if self.proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"ferrovsd did not start:\n{self.logtext()}")
            time.sleep(0.05)

    def logtext(self):
        self.log.flush()
        return (self.rundir / "ferrovsd.log").read_text()

    def cli(self, *args, check=True, timeout=30):
        """Runs `ferrovs --rundir DIR ARGS...`."""
        return run([str(BIN / "ferrovs"), "--rundir", str(self.rundir), *map(str, args)],
                   check=check, timeout=timeout)

    def json(self, *args):
        return json.loads(self.cli(*args, "--json").stdout)

    def stop(self):
        if self.proc.poll() is None:
            self.cli("exit", check=False, timeout=10)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture
def daemon():
    tmp = Path(tempfile.mkdtemp(prefix="ferrovs-test-"))
    d = Daemon(tmp)
    yield d
    d.stop()
    shutil.rmtree(tmp, ignore_errors=True)


class Net:
    """Namespaces ("hosts") each cabled by a veth pair to an interface left in the root
    namespace for the switch to take as a `system` port."""

    def __init__(self):
        self.tag = f"{os.getpid() % 100000}{next(_counter)}"
        self.namespaces = []
        self.links = []

    def host(self, name, ip=None, mac=None, ip6=None):
        """Creates namespace `h`; returns (namespace, switch-side interface name)."""
        ns = f"fvt{self.tag}{name}"
        sw_if = f"fv{self.tag}{name}"[:15]
        run(["ip", "netns", "add", ns])
        self.namespaces.append(ns)
        run(["ip", "link", "add", sw_if, "type", "veth", "peer", "name", "eth0", "netns", ns])
        self.links.append(sw_if)
        self.ns(ns, "ip link set lo up")
        if mac:
            self.ns(ns, f"ip link set eth0 address {mac}")
        if ip:
            self.ns(ns, f"ip addr add {ip} dev eth0")
        if ip6:
            self.ns(ns, f"ip -6 addr add {ip6} dev eth0 nodad")
        self.ns(ns, "ip link set eth0 up")
        run(["ip", "link", "set", sw_if, "up"])
        return ns, sw_if

    def ns(self, ns, cmd, check=True, timeout=30):
        return run(f"ip netns exec {ns} {cmd}", check=check, timeout=timeout)

    def spawn(self, ns, args, **kw):
        return subprocess.Popen(["ip", "netns", "exec", ns, *args], **kw)

    def cleanup(self):
        for l in self.links:
            run(["ip", "link", "del", l], check=False)
        for ns in self.namespaces:
            run(["ip", "netns", "del", ns], check=False)


@pytest.fixture
def net():
    need_root()
    n = Net()
    yield n
    n.cleanup()


def scapy_helper(net, ns, script, *args, timeout=30, check=True):
    """Runs tests/integration/helpers/SCRIPT inside namespace `ns` with the test Python."""
    return net.ns(ns, " ".join([PY, str(HELPERS / script), *map(str, args)]),
                  timeout=timeout, check=check)


def two_hosts(daemon, net, br, name, subnet):
    """Hosts NAME1 and NAME2 (10.SUBNET.0.1 and .2, MACs 02:00:00:00:SUBNET:01/02, as
    decimal digits) on bridge `br` as ofports 1 and 2, each knowing the other's MAC (no ARP).
    Returns [(namespace, switch-side interface)] for both."""
    hs = []
    for i in (1, 2):
        ns, sw_if = net.host(f"{name}{i}", ip=f"10.{subnet}.0.{i}/24",
                             mac=f"02:00:00:00:{subnet:02d}:0{i}")
        daemon.cli("add-port", br, sw_if, f"ofport={i}")
        hs.append((ns, sw_if))
    for (ns, _), j in zip(hs, (2, 1)):
        net.ns(ns, f"ip neigh replace 10.{subnet}.0.{j} lladdr 02:00:00:00:{subnet:02d}:0{j} "
                   "dev eth0 nud permanent")
    return hs


def wait_for(pred, timeout=10.0, interval=0.1, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def wait_listening(ns, port, timeout=15.0):
    """Returns once a TCP socket listens on `port` in network namespace `ns`. A server
    spawned a moment ago may not have bound yet: a client refused then fails a test for
    nothing the switch did, or passes one that expects a refusal for the wrong reason."""
    wait_for(lambda: run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"],
                         check=False).stdout.strip(),
             timeout=timeout, what=f"a TCP listener on port {port} in {ns}")
