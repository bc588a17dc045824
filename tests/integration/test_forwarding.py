"""Forwarding through ferrovs between network-namespace hosts over `system` (AF_PACKET) ports.

Each test builds its own hosts (namespaces cabled by veth pairs to the switch) and removes them
afterwards. Hosts keep their default offloads (TCP checksum offload, TSO): the switch must
complete partial checksums and segment large sends itself.
"""

import json
import subprocess
import time
from pathlib import Path

import pytest

from conftest import require, run, scapy_helper, wait_for, wait_listening, HELPERS, PY


def ping(net, ns, dst, count=3):
    return net.ns(ns, f"ping -c {count} -i 0.2 -W 2 {dst}", check=False, timeout=30)


def test_learning_bridge_ping_and_iperf3(daemon, net):
    h1, s1 = net.host("a", ip="10.77.0.1/24", mac="02:77:00:00:00:01")
    h2, s2 = net.host("b", ip="10.77.0.2/24", mac="02:77:00:00:00:02")
    daemon.cli("add-br", "brl", "module=learning")
    daemon.cli("add-port", "brl", s1)
    daemon.cli("add-port", "brl", s2)
    r = ping(net, h1, "10.77.0.2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0% packet loss" in r.stdout
    fdb = {e["mac"]: e["port_name"] for e in daemon.json("fdb-show", "brl")}
    assert fdb.get("02:77:00:00:00:01") == s1
    assert fdb.get("02:77:00:00:00:02") == s2

    require("iperf3")
    server = net.spawn(h2, ["iperf3", "-s", "-1", "-B", "10.77.0.2"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_listening(h2, 5201)
        r = net.ns(h1, "iperf3 -c 10.77.0.2 -t 3 -J", check=False, timeout=60)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr
        res = json.loads(r.stdout)
        bps = res["end"]["sum_received"]["bits_per_second"]
        assert bps > 1e6, f"TCP through the switch moved only {bps} bit/s"
        print(f"iperf3 TCP through learning bridge: {bps / 1e9:.2f} Gbit/s")
    finally:
        server.kill()
        server.wait(timeout=10)
    ports = {p["name"]: p for p in daemon.json("dump-ports", "brl")["ports"]}
    assert ports[s1]["rx_packets"] > 100 and ports[s2]["tx_packets"] > 100


def test_default_openflow_bridge_forwards_by_normal(daemon, net):
    h1, s1 = net.host("n", ip="10.76.0.1/24", mac="02:76:00:00:00:01")
    h2, s2 = net.host("o", ip="10.76.0.2/24", mac="02:76:00:00:00:02")
    daemon.cli("add-br", "brn")
    daemon.cli("add-port", "brn", s1)
    daemon.cli("add-port", "brn", s2)
    assert daemon.json("show")["bridges"][0]["module"] == "openflow"
    r = ping(net, h1, "10.76.0.2")
    assert r.returncode == 0, r.stdout + r.stderr
    flows = daemon.json("dump-flows", "brn")
    assert flows[0]["actions"] == "NORMAL" and flows[0]["n_packets"] >= 6
    fdb = {e["mac"] for e in daemon.json("fdb-show", "brn")}
    assert {"02:76:00:00:00:01", "02:76:00:00:00:02"} <= fdb
    # An explicit drop rule above NORMAL stops the ping; deleting it restores it.
    daemon.cli("add-flow", "brn", "priority=100,icmp,actions=drop")
    assert ping(net, h1, "10.76.0.2", count=2).returncode != 0
    daemon.cli("del-flows", "brn", "icmp")
    assert ping(net, h1, "10.76.0.2").returncode == 0


def test_internal_port_pings_a_namespace_host(daemon, net):
    h1, s1 = net.host("c", ip="10.78.0.1/24")
    tapns = f"fvt{net.tag}tap"
    run(["ip", "netns", "add", tapns])
    net.namespaces.append(tapns)
    bridge = f"fvbr{net.tag}"[:15]
    daemon.cli("add-br", bridge)
    daemon.cli("add-port", bridge, s1)
    # The bridge's internal port is a TAP device; move it into its own namespace so the test
    # configures no address in the root namespace.
    run(["ip", "link", "set", bridge, "netns", tapns])
    net.ns(tapns, f"ip addr add 10.78.0.254/24 dev {bridge}")
    net.ns(tapns, f"ip link set {bridge} up")
    r = ping(net, tapns, "10.78.0.1")
    assert r.returncode == 0, r.stdout + r.stderr
    r = ping(net, h1, "10.78.0.254")
    assert r.returncode == 0, r.stdout + r.stderr
    local = {p["name"]: p for p in daemon.json("dump-ports", bridge)["ports"]}[bridge]
    assert local["rx_packets"] >= 3 and local["tx_packets"] >= 3


def _sniffer(net, ns, out):
    """A capture of UDP frames on `ns`'s eth0, running once this returns; `_collect` ends it."""
    stop = Path(f"{out}.stop")
    p = net.spawn(ns, [PY, str(HELPERS / "l2io.py"), "sniff", "60", str(out), str(stop)],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.strip() == "ready", p.stderr.read()
    return p


def _collect(p, out):
    """Ends a capture a second after the test's last send (what the switch forwards has
    arrived by then) and returns the frames it saw."""
    time.sleep(1.0)
    Path(f"{out}.stop").touch()
    p.wait(timeout=60)
    with open(out) as f:
        return json.load(f)


def _frame(src_mac, dst_mac, src_ip, dst_ip, sport, dport, payload, bad=False):
    return {"src_mac": src_mac, "dst_mac": dst_mac, "src_ip": src_ip, "dst_ip": dst_ip,
            "sport": sport, "dport": dport, "payload": payload, "bad_ip_checksum": bad}


MAC_OUT = "02:79:00:00:00:01"
MAC_APP = "02:79:00:00:00:02"


def test_tuple3_forwards_only_registered_tuples(daemon, net, tmp_path):
    outside, s_out = net.host("o", mac=MAC_OUT)
    app, s_app = net.host("p", mac=MAC_APP)
    daemon.cli("add-br", "brt", "module=tuple3")
    daemon.cli("add-port", "brt", s_out)
    daemon.cli("add-port", "brt", s_app)
    daemon.cli("tuple3-add", "brt", s_app, "10.79.0.2", "udp", "7000")
    daemon.cli("tuple3-uplink", "brt", s_out)
    # A second registration of the same tuple by another port is refused.
    r = daemon.cli("tuple3-add", "brt", s_out, "10.79.0.2", "udp", "7000", check=False)
    assert r.returncode == 1 and "already registered" in r.stderr

    at_app = tmp_path / "app.json"
    at_out = tmp_path / "out.json"
    sn_app = _sniffer(net, app, at_app)
    sn_out = _sniffer(net, outside, at_out)
    to_app = [
        _frame(MAC_OUT, MAC_APP, "10.79.0.1", "10.79.0.2", 5555, 7000, "good-in"),
        _frame(MAC_OUT, MAC_APP, "10.79.0.1", "10.79.0.2", 5555, 7000, "bad-csum", bad=True),
        _frame(MAC_OUT, MAC_APP, "10.79.0.1", "10.79.0.2", 5555, 7001, "unregistered"),
    ]
    from_app = [
        _frame(MAC_APP, MAC_OUT, "10.79.0.2", "10.79.0.1", 7000, 5555, "good-out"),
        _frame(MAC_APP, MAC_OUT, "10.79.0.2", "10.79.0.1", 7001, 5555, "spoofed-port"),
        _frame(MAC_APP, MAC_OUT, "10.79.0.9", "10.79.0.1", 7000, 5555, "spoofed-ip"),
    ]
    scapy_helper(net, outside, "l2io.py", "send", f"'{json.dumps(to_app)}'")
    scapy_helper(net, app, "l2io.py", "send", f"'{json.dumps(from_app)}'")
    got_app = [p["payload"] for p in _collect(sn_app, at_app)]
    got_out = [p["payload"] for p in _collect(sn_out, at_out)]
    # Each sniffer also sees what its own host sent; keep what came from the switch.
    assert [x for x in got_app if x in ("good-in", "bad-csum", "unregistered")] == ["good-in"]
    assert [x for x in got_out if x in ("good-out", "spoofed-port", "spoofed-ip")] == ["good-out"]
    st = daemon.json("tuple3-show", "brt")["stats"]
    assert st["forwarded"] == 1 and st["to_uplink"] == 1
    assert st["bad_checksum"] == 1 and st["unregistered"] >= 1 and st["spoofed"] == 2


def test_patch_forwards_one_way_only(daemon, net, tmp_path):
    h1, s1 = net.host("x", mac="02:7a:00:00:00:01")
    h2, s2 = net.host("y", mac="02:7a:00:00:00:02")
    daemon.cli("add-br", "brp", "module=patch")
    daemon.cli("add-port", "brp", s1, "ofport=1")
    daemon.cli("add-port", "brp", s2, "ofport=2")
    daemon.cli("patch-set", "brp", "1", "2")
    assert daemon.json("patch-show", "brp") == [{"from": s1, "to": s2}]
    at2 = tmp_path / "h2.json"
    at1 = tmp_path / "h1.json"
    sn2 = _sniffer(net, h2, at2)
    sn1 = _sniffer(net, h1, at1)
    fwd = [_frame("02:7a:00:00:00:01", "02:7a:00:00:00:02", "10.80.0.1", "10.80.0.2",
                  1000 + i, 2000, f"fwd{i}") for i in range(5)]
    back = [_frame("02:7a:00:00:00:02", "02:7a:00:00:00:01", "10.80.0.2", "10.80.0.1",
                   3000 + i, 4000, f"back{i}") for i in range(5)]
    scapy_helper(net, h1, "l2io.py", "send", f"'{json.dumps(fwd)}'")
    scapy_helper(net, h2, "l2io.py", "send", f"'{json.dumps(back)}'")
    got2 = [p["payload"] for p in _collect(sn2, at2) if p["payload"].startswith("fwd")]
    got1 = [p["payload"] for p in _collect(sn1, at1) if p["payload"].startswith("back")]
    assert got2 == [f"fwd{i}" for i in range(5)]
    # h1's sniffer sees nothing of h2's frames: the patch is one way.
    assert got1 == []
    ports = {p["name"]: p for p in daemon.json("dump-ports", "brp")["ports"]}
    assert ports[s2]["rx_packets"] >= 5 and ports[s1]["tx_packets"] == 0


def test_pmd_trace_records_the_next_packets(daemon, net):
    """`pmd-trace BR N` records the next N packets a bridge receives: in port, the openflow
    module's cache decision with its datapath actions, and where the packet went."""
    h1, s1 = net.host("t", ip="10.79.0.1/24", mac="02:79:00:00:00:01")
    h2, s2 = net.host("u", ip="10.79.0.2/24", mac="02:79:00:00:00:02")
    br = f"ftr{net.tag}"[:15]
    daemon.cli("add-br", br)
    daemon.cli("add-port", br, s1)
    daemon.cli("add-port", br, s2)
    # ICMP gets a rule of its own, so that its megaflows match IPv4 ICMP exactly: no packet
    # a host sent before the trace (ARP, IPv6 neighbour discovery) can cover an echo.
    daemon.cli("add-flow", br, "priority=100,icmp,actions=NORMAL")
    assert daemon.json("pmd-trace-show", br) == []
    decisions = ("upcall", "megaflow hit", "emc hit")
    # The bridge's internal port may send packets of its own too: the budget is large.
    daemon.cli("pmd-trace", br, "1000")
    assert ping(net, h1, "10.79.0.2").returncode == 0
    recs = daemon.json("pmd-trace-show", br)
    assert len(recs) >= 6, recs
    assert [r["seq"] for r in recs] == list(range(len(recs)))
    assert all(r["bridge"] == br and r["in_port"] in (s1, s2, br) for r in recs), recs
    assert all(r["decision"].startswith(decisions) for r in recs), recs
    # h1's first echo request goes to the slow path, and leaves from there.
    assert any(r["in_port"] == s1 and r["decision"].startswith("upcall") and not r["outputs"]
               for r in recs), recs
    # Traced again once the megaflows exist: echo requests hit them and go to h2's port.
    daemon.cli("pmd-trace", br, "0")
    assert daemon.json("pmd-trace-show", br) == []
    daemon.cli("pmd-trace", br, "1000")
    assert ping(net, h1, "10.79.0.2").returncode == 0
    recs = daemon.json("pmd-trace-show", br)
    hits = [r for r in recs if r["decision"].startswith(("megaflow hit", "emc hit"))]
    assert all("actions:" in r["decision"] for r in hits), recs
    assert any(r["in_port"] == s1 and r["outputs"] == [s2] for r in hits), recs
    text = daemon.cli("pmd-trace-show", br).stdout
    assert text.splitlines()[0].startswith(f"#0 bridge {br} in_port "), text
    assert "more packets to trace" in text.splitlines()[-1], text
    daemon.cli("pmd-trace", br, "0")
