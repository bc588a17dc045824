"""OVN across two chassis joined by Geneve: ovn-controller 23.03 unchanged on each, the
chassis ferrovs and ferrovs, ferrovs and Open vSwitch 3.1 (mixed), and for reference Open
vSwitch and Open vSwitch (userspace datapath). Each scenario is checked with real traffic
between VM namespaces on the two chassis:

(a) one logical switch across the chassis: ping and iperf3 (p1 on A, p2 on B);
(b) a logical router between two switches, ARP for the gateway answered by OVN's flows
    (p1 on A to p3 on B);
(c) stateful ACLs on sw1: p3 accepts ICMP and TCP 8080 (allow-related) and drops the rest of
    IPv4, yet the replies to a connection p3 opens itself come back (they match the connection
    tracker, not an ACL);
(d) a load balancer VIP (30.0.0.1:80 on sw0) spreading p1's TCP connections over a backend on
    each chassis (p4 on A, p2 on B);
(e) OVN's native DHCP answering p2 on chassis B (pinctrl, through `controller(pause)`);
(f) chassis B's ferrovsd restarted: its flows come back the same and traffic resumes.

ovn-controller must log no OpenFlow error from either switch.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BIN, HELPERS, need_root, require, wait_for, wait_listening

sys.path.insert(0, str(HELPERS))
import chassis as ch  # noqa: E402
import ovn  # noqa: E402

VIP = "30.0.0.1"
# name, logical switch, chassis (0 = A, 1 = B), MAC, address, gateway
VMS = [("p1", "sw0", 0, "00:00:00:00:00:01", "10.0.0.1", "10.0.0.254"),
       ("p2", "sw0", 1, "00:00:00:00:00:02", "10.0.0.2", "10.0.0.254"),
       ("p4", "sw0", 0, "00:00:00:00:00:04", "10.0.0.4", "10.0.0.254"),
       ("p3", "sw1", 1, "00:00:00:00:01:03", "10.0.1.3", "10.0.1.254")]

SERVER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", int(sys.argv[2])))
s.listen(64)
while True:
    c, _ = s.accept()
    c.sendall(sys.argv[1].encode())
    c.close()
"""

CLIENT = """
import collections, socket, sys
seen = collections.Counter()
for _ in range(int(sys.argv[3])):
    try:
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
        seen[c.recv(64).decode() or "empty"] += 1
        c.close()
    except OSError as e:
        seen[type(e).__name__] += 1
print(dict(seen))
"""


def topology(c):
    for sw in ("sw0", "sw1"):
        c.nbctl("ls-add", sw)
    for name, sw, _, mac, ip, _ in VMS:
        c.nbctl("lsp-add", sw, name)
        c.nbctl("lsp-set-addresses", name, f"{mac} {ip}")
    c.nbctl("lr-add", "lr0")
    c.nbctl("lrp-add", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.254/24")
    c.nbctl("lrp-add", "lr0", "lr0-sw1", "00:00:00:00:ff:02", "10.0.1.254/24")
    for sw in ("sw0", "sw1"):
        c.nbctl("lsp-add", sw, f"{sw}-lr0", "--", "lsp-set-type", f"{sw}-lr0", "router",
                "--", "lsp-set-addresses", f"{sw}-lr0", "router",
                "--", "lsp-set-options", f"{sw}-lr0", f"router-port=lr0-{sw}")
    c.nbctl("acl-add", "sw1", "to-lport", "1002",
            'outport == "p3" && (icmp4 || tcp.dst == 8080)', "allow-related")
    c.nbctl("acl-add", "sw1", "to-lport", "1001", 'outport == "p3" && ip4', "drop")
    c.nbctl("lb-add", "lb0", f"{VIP}:80", "10.0.0.4:80,10.0.0.2:80", "tcp")
    c.nbctl("ls-lb-add", "sw0", "lb0")
    c.nbctl("dhcp-options-create", "10.0.0.0/24")
    uuid = c.nbctl("--bare", "--columns=_uuid", "find", "dhcp_options", 'cidr="10.0.0.0/24"')
    c.nbctl("dhcp-options-set-options", uuid, "lease_time=3600", "router=10.0.0.254",
            "server_id=10.0.0.254", "server_mac=00:00:00:00:ff:01")
    c.nbctl("lsp-set-dhcpv4-options", "p2", uuid)


class Deployment:
    def __init__(self, kinds):
        self.under = ch.Underlay()
        self.work = self.under.work
        self.central = ovn.Central(self.work)
        self.ctls = []
        self.procs = []
        self.chassis = []
        for i, kind in enumerate(kinds):
            name = "ab"[i]
            if kind == "ferrovs":
                c = ch.FerrovsChassis(self.under, name, i + 1, BIN)
            else:
                c = ch.OvsChassis(self.under, name, i + 1)
            self.chassis.append(c)
        ch.Chassis.cable(*self.chassis)
        for c in self.chassis:
            c.start()
            c.bridges()
        topology(self.central)
        self.vm = {}
        for name, _, where, mac, ip, gw in VMS:
            self.vm[name] = self.chassis[where].vm(name, name, mac, f"{ip}/24", gw)
        for c in self.chassis:
            self.ctls.append(ovn.Controller(self.work, self.central, f"unix:{c.d}/db.sock",
                                            c.rundir, c.system_id, encap_ip=c.ip))
        self.central.nbctl("--wait=hv", "--timeout=120", "sync")

    def ns(self, vm, cmd, check=True, timeout=30):
        return ch.ns_run(self.vm[vm], cmd, check=check, timeout=timeout)

    def spawn(self, vm, *args):
        p = subprocess.Popen(["ip", "netns", "exec", self.vm[vm], *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def serve(self, vm, port, name=None):
        self.spawn(vm, sys.executable, "-c", SERVER, name or vm, str(port))
        wait_listening(self.vm[vm], port)

    def connect(self, vm, host, port, n=1):
        out = self.ns(vm, f"{sys.executable} -c '{CLIENT}' {host} {port} {n}", timeout=120)
        return json.loads(out.stdout.strip().replace("'", '"'))

    def errors(self):
        return [e for ctl in self.ctls for e in ctl.openflow_errors()]

    def diagnostics(self):
        return "\n".join(f"--- {c.system_id}\n{c.logtext()[-3000:]}" for c in self.chassis)

    def close(self):
        for p in self.procs:
            p.kill()
        for ctl in self.ctls:
            ctl.stop()
        self.central.stop()
        self.under.close()


def ping_ok(d, vm, dst):
    return d.ns(vm, f"ping -c 1 -W 1 {dst}", check=False).returncode == 0


def iperf(d, client, server, server_ip):
    srv = d.spawn(server, "iperf3", "-s", "-1", "-p", "5201")
    wait_listening(d.vm[server], 5201)
    r = d.ns(client, f"iperf3 -c {server_ip} -p 5201 -t 2 -f m", check=False, timeout=60)
    srv.wait(timeout=10)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [x for x in r.stdout.splitlines() if "receiver" in x]
    return float(line[-1].split("Mbits/sec")[0].split()[-1])


def converge(d, i):
    """Seconds for chassis `i`'s ovn-controller, started afresh on a switch whose flows were
    all deleted, to compute and install its whole table: from its start until every chassis
    reports the next northbound sequence number (an ovn-controller reports it once its
    switch has acknowledged the flows, with a barrier). Its table is then the one it had."""
    c, ctl = d.chassis[i], d.ctls[i]
    before = c.flows()
    ctl.stop()
    ovn.ofctl(c.rundir, "del-flows", f"unix:{c.rundir}/br-int.mgmt")
    assert not c.flows()
    t = time.monotonic()
    ctl.start()
    d.central.nbctl("--wait=hv", "--timeout=120", "sync")
    took = time.monotonic() - t
    assert c.flows() == before
    return took


@pytest.mark.parametrize("kinds", [("ferrovs", "ferrovs"), ("ferrovs", "ovs"), ("ovs", "ovs")],
                         ids=["ferrovs-ferrovs", "ferrovs-ovs", "ovs-ovs"])
def test_ovn_two_chassis_over_geneve(kinds):
    need_root()
    require("ovn-controller", "ovn-northd", "ovn-nbctl", "ovsdb-server", "ovsdb-tool",
            "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovn-appctl", "iperf3", "ping", "ethtool",
            "busybox")
    d = Deployment(kinds)
    try:
        a, b = d.chassis
        # (a) one switch across the chassis.
        wait_for(lambda: ping_ok(d, "p1", "10.0.0.2"), timeout=30,
                 what=f"p1 -> p2 over Geneve\n{d.diagnostics()}")
        d.ns("p2", "ping -c 3 -i 0.2 -W 2 10.0.0.1")
        mbits = iperf(d, "p1", "p2", "10.0.0.2")
        assert mbits > 1.0
        # (b) through the router: p1 -> gateway (ARP answered by OVN) -> p3 on the other chassis.
        wait_for(lambda: ping_ok(d, "p1", "10.0.1.3"), timeout=20,
                 what=f"p1 -> p3 through lr0\n{d.diagnostics()}")
        neigh = d.ns("p1", "ip neigh show 10.0.0.254").stdout
        assert "00:00:00:00:ff:01" in neigh, neigh
        # (c) stateful ACLs protecting p3.
        d.serve("p3", 8080)
        d.serve("p3", 8081)
        d.serve("p1", 8082)
        assert d.connect("p1", "10.0.1.3", 8080, 3) == {"p3": 3}
        refused = d.connect("p1", "10.0.1.3", 8081, 2)
        assert "p3" not in refused and sum(refused.values()) == 2, refused
        assert d.connect("p3", "10.0.0.1", 8082, 3) == {"p1": 3}
        # (d) the load balancer: backends on both chassis.
        d.serve("p4", 80)
        d.serve("p2", 80)
        spread = d.connect("p1", VIP, 80, 24)
        assert set(spread) == {"p2", "p4"} and sum(spread.values()) == 24, spread
        # (e) DHCP from chassis B's ovn-controller.
        r = d.ns("p2", "busybox udhcpc -i eth0 -n -q -f -t 5 -T 1 -s /bin/true", check=False)
        assert "lease of 10.0.0.2 obtained" in r.stdout + r.stderr, r.stdout + r.stderr
        assert not d.errors(), d.errors()

        counts = [len(c.flows()) for c in d.chassis]
        times = [converge(d, i) for i in range(2)]
        print(f"\n{'-'.join(kinds)}: flows {counts}, from-scratch install s "
              f"{[round(t, 2) for t in times]}, iperf3 p1->p2 {mbits} Mbit/s")

        # (f) chassis B's switch restarted: same flows again, traffic resumes.
        if b.kind == "ferrovs":
            before = b.flows()
            b.restart()
            wait_for(lambda: b.flows() == before, timeout=60,
                     what=f"B's flows re-synced after the restart\n{d.diagnostics()}")
            wait_for(lambda: ping_ok(d, "p1", "10.0.0.2"), timeout=30,
                     what=f"p1 -> p2 after B's restart\n{d.diagnostics()}")
            assert d.connect("p1", "10.0.1.3", 8080, 2) == {"p3": 2}
            assert not d.errors(), d.errors()
        for c in d.chassis:
            if c.kind == "ferrovs":
                warned = [ln for ln in c.logtext().splitlines() if "|WARN|" in ln]
                assert not warned, warned
    finally:
        d.close()
