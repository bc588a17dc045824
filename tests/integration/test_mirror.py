"""Port mirroring (OVSDB's Mirror table), driven by OVS's own tools.

* `ovs-tcpdump -i PORT` (Debian's script: it creates a dummy interface, adds it to the bridge
  and a Mirror onto it through OVSDB, then runs tcpdump there) sees the ICMP crossing PORT.
* A Mirror made with `ovs-vsctl` (select_dst_port) copies exactly what leaves by that port,
  the output port receives nothing else, and `statistics` counts the copies."""

import re
import subprocess
import time

from conftest import PY, require, run, two_hosts, wait_for


def test_ovs_tcpdump_sees_the_traffic_of_a_port(daemon, net):
    require("ovs-tcpdump", "tcpdump")
    br = f"mb{net.tag}"[:15]
    daemon.cli("add-br", br)
    (h1, p1), (h2, p2) = two_hosts(daemon, net, br, "m", 9)
    mi = f"mi{p1}"[:15]
    db = f"unix:{daemon.rundir}/db.sock"
    # The venv's Python has the `ovs` package ovs-tcpdump imports.
    dump = subprocess.Popen([PY, "/usr/bin/ovs-tcpdump", "--db-sock", db, "-i", p1,
                             "-n", "-c", "4", "icmp"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        try:
            wait_for(lambda: "_uuid" in run(["ovs-vsctl", f"--db={db}", "list", "Mirror"]).stdout
                     and mi in daemon.cli("show").stdout, timeout=20, what="the mirror")
        except AssertionError:
            dump.kill()
            raise AssertionError("no mirror; ovs-tcpdump said:\n" + dump.communicate()[0])
        # tcpdump starts after the mirror exists: ping until it has seen its 4 packets.
        ping = net.spawn(h1, ["ping", "-c", "150", "-i", "0.2", "10.9.0.2"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            out, _ = dump.communicate(timeout=30)
        finally:
            ping.kill()
            ping.wait()
        assert dump.returncode == 0, out
        lines = [l for l in out.splitlines() if "ICMP echo" in l]
        assert len(lines) == 4, out
        assert any("echo request" in l for l in lines), out
        assert any("echo reply" in l for l in lines), out
        # ovs-tcpdump took its port and mirror away again.
        wait_for(lambda: mi not in daemon.cli("show").stdout, what="the mirror port to go")
        assert run(["ovs-vsctl", f"--db={db}", "list", "Mirror"]).stdout.strip() == ""
    finally:
        if dump.poll() is None:
            dump.kill()
        run(["ip", "link", "del", mi], check=False)


def test_vsctl_mirror_copies_one_side_and_counts(daemon, net):
    br = f"mc{net.tag}"[:15]
    daemon.cli("add-br", br)
    (h1, p1), (h2, p2) = two_hosts(daemon, net, br, "m", 9)
    # The output: a null port counts what it is given.
    out = f"mo{net.tag}"[:15]
    daemon.cli("add-port", br, out, "type=null", "ofport=9")
    db = f"--db=unix:{daemon.rundir}/db.sock"
    run(["ovs-vsctl", db, "--", "--id=@p", "get", "Port", p2, "--", "--id=@o", "get", "Port",
         out, "--", "--id=@m", "create", "Mirror", "name=m0", "select-dst-port=@p",
         "output-port=@o", "--", "set", "Bridge", br, "mirrors=@m"])
    base = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}[out]["tx_packets"]
    def tx():
        ps = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}
        return ps[out]["tx_packets"], ps[p2]["tx_packets"]

    def copies():
        r = run(["ovs-vsctl", db, "get", "Mirror", "m0", "statistics"]).stdout
        m = re.search(r"tx_packets=(\d+)", r)
        return int(m.group(1)) if m else 0

    o0, p0 = tx()
    net.ns(h1, "ping -c 5 -i 0.1 -W 1 10.9.0.2")
    wait_for(lambda: tx()[0] - o0 >= 5, what="mirrored copies")
    time.sleep(0.5)
    o1, p1_ = tx()
    # Exactly what left by p2 (the 5 requests, and whatever else the bridge flooded there,
    # such as IPv6 neighbour discovery) reached the output port, nothing more.
    assert o1 - o0 == p1_ - p0 >= 5, (o1 - o0, p1_ - p0)
    # The row's statistics count every copy since the mirror was made.
    wait_for(lambda: copies() >= o1 - o0 and copies() == tx()[0] - base, timeout=15,
             what="Mirror statistics to match the copies")
    # Without the mirror the output port is an ordinary port again: flooding reaches it.
    run(["ovs-vsctl", db, "clear", "Bridge", br, "mirrors"])
    n = tx()[0]
    net.ns(h1, "ping -c 1 -W 1 10.9.0.99", check=False)  # an ARP broadcast
    wait_for(lambda: tx()[0] > n, what="a broadcast flooded to the former output port")
