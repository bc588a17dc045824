"""IPFIX export configured with ovs-vsctl and collected by nfdump's `nfcapd`.

Per bridge (OVSDB's IPFIX table): `nfdump` shows the ICMP between two hosts with their
addresses, the input interface, and exact packet and octet counts; with a flow cache
(`cache_active_timeout`, `cache_max_flows`) the packets of a flow are aggregated into few
records, without one each sampled packet is a record of its own.

Per flow (the OpenFlow `sample` action and `Flow_Sample_Collector_Set`): the packets a flow's
`sample(probability=65535,...)` sees are all exported to its collector set's targets, those of
a flow without the action are not, and neither are those of a flow whose `sample` names a set
that does not exist; ovs-ofctl's dump-flows shows the action as ovs-ofctl writes it."""

import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from conftest import require, run, two_hosts
from test_ofctl import ofctl


def bridge_row(br, settings):
    """ovs-vsctl arguments that give bridge `br` an IPFIX row for a collector on PORT, and
    those that take it away."""
    return (lambda port: ["--", "--id=@i", "create", "IPFIX", f'targets="127.0.0.1:{port}"',
                          "sampling=1", *settings, "--", "set", "Bridge", br, "ipfix=@i"],
            ["clear", "Bridge", br, "ipfix"])


def collect(daemon, net, h1, dst, rows, pings, linger):
    """Starts nfcapd, applies `rows` (see `bridge_row`), pings `dst`, waits, and returns
    nfdump's rows (protocol, source, destination, packets, bytes, input interface)."""
    on, off = rows
    flows = Path(tempfile.mkdtemp(prefix="ferrovs-nfcapd-"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cap = subprocess.Popen(["nfcapd", "-b", "127.0.0.1", "-p", str(port), "-w", str(flows),
                            "-t", "3600"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    db = f"--db=unix:{daemon.rundir}/db.sock"
    try:
        time.sleep(0.5)
        run(["ovs-vsctl", db, *on(port)])
        net.ns(h1, f"ping -c {pings} -i 0.05 -W 1 {dst}")
        time.sleep(linger)
        run(["ovs-vsctl", db, *off])
        time.sleep(0.5)
        cap.send_signal(signal.SIGTERM)
        out, _ = cap.communicate(timeout=15)
        r = run(["nfdump", "-R", str(flows), "-q", "-o", "fmt:%pr %sa %da %pkt %byt %in"],
                check=False)
        assert r.returncode == 0, (r.stdout, r.stderr, out)
        return [l.split() for l in r.stdout.splitlines() if l.strip()], r.stdout
    finally:
        if cap.poll() is None:
            cap.kill()
            cap.wait()
        run(["rm", "-rf", str(flows)], check=False)


def test_ipfix_to_nfcapd(daemon, net):
    require("nfcapd", "nfdump", "ovs-vsctl")
    br = f"ix{net.tag}"[:15]
    daemon.cli("add-br", br)
    (h1, p1), (h2, p2) = two_hosts(daemon, net, br, "x", 13)
    idx = {p: int(Path(f"/sys/class/net/{p}/ifindex").read_text()) for p in (p1, p2)}

    # With a cache: 20 echo requests (84 IP bytes each) in a record or two per direction,
    # exported by the active timeout (or at the latest when the row goes).
    rows, text = collect(daemon, net, h1, "10.13.0.2",
                         bridge_row(br, ["cache_active_timeout=2", "cache_max_flows=100"]),
                         20, 3)
    req = [x for x in rows if x[0] == "ICMP" and x[1] == "10.13.0.1" and x[2] == "10.13.0.2"]
    rep = [x for x in rows if x[0] == "ICMP" and x[1] == "10.13.0.2" and x[2] == "10.13.0.1"]
    assert sum(int(x[3]) for x in req) == 20, text
    assert sum(int(x[4]) for x in req) == 20 * 84, text
    assert sum(int(x[3]) for x in rep) == 20, text
    assert 1 <= len(req) <= 2 and 1 <= len(rep) <= 2, text
    assert {int(x[5]) for x in req} == {idx[p1]}, text
    assert {int(x[5]) for x in rep} == {idx[p2]}, text

    # Without a cache every sampled packet is a record.
    rows, text = collect(daemon, net, h1, "10.13.0.2", bridge_row(br, []), 5, 1)
    req = [x for x in rows if x[0] == "ICMP" and x[1] == "10.13.0.1" and x[2] == "10.13.0.2"]
    assert len(req) == 5 and all(int(x[3]) == 1 and int(x[4]) == 84 for x in req), text


def test_sample_action_to_nfcapd(daemon, net):
    require("nfcapd", "nfdump", "ovs-vsctl", "ovs-ofctl")
    br = f"fx{net.tag}"[:15]
    daemon.cli("add-br", br)
    (h1, _), _ = two_hosts(daemon, net, br, "f", 14)
    sample = "sample(probability=65535,collector_set_id=7,obs_domain_id=77,obs_point_id=5)"
    ofctl(daemon, "del-flows", br)
    ofctl(daemon, "add-flow", br, f"in_port=1,icmp,actions={sample},output:2")
    # Replies name a set that does not exist: not exported.
    ofctl(daemon, "add-flow", br,
          "in_port=2,icmp,actions=sample(probability=65535,collector_set_id=8),output:1")
    ofctl(daemon, "add-flow", br, "priority=0,actions=NORMAL")
    dump = ofctl(daemon, "dump-flows", br).stdout
    assert f"actions={sample},output:2" in dump, dump
    assert ("actions=sample(probability=65535,collector_set_id=8,obs_domain_id=0,"
            "obs_point_id=0),output:1") in dump, dump

    on = lambda port: [  # noqa: E731
        "--", "--id=@i", "create", "IPFIX", f'targets="127.0.0.1:{port}"',
        "cache_active_timeout=2", "cache_max_flows=100",
        "--", "--id=@b", "get", "Bridge", br,
        "--", "create", "Flow_Sample_Collector_Set", "id=7", "bridge=@b", "ipfix=@i"]
    off = ["--", "--all", "destroy", "Flow_Sample_Collector_Set"]
    rows, text = collect(daemon, net, h1, "10.14.0.2", (on, off), 12, 3)
    req = [x for x in rows if x[0] == "ICMP" and x[1] == "10.14.0.1" and x[2] == "10.14.0.2"]
    rep = [x for x in rows if x[0] == "ICMP" and x[1] == "10.14.0.2"]
    assert sum(int(x[3]) for x in req) == 12, text
    assert sum(int(x[4]) for x in req) == 12 * 84, text
    # A flow sample's input interface is the OpenFlow input port.
    assert {int(x[5]) for x in req} == {1}, text
    assert rep == [], text
