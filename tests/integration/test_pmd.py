"""Several poll threads (`pmd-cpu-mask`): receive queues spread over them, pinned with
`pmd-rxq-affinity`, traffic forwarded by whichever thread received it, counters summed.
"""

import json
import subprocess

import pytest

from conftest import require, run, wait_for, wait_listening


def appctl(daemon, *args):
    return run(["ovs-appctl", "-t", str(daemon.ctl), *args]).stdout


def vsctl_for(daemon):
    db = f"unix:{daemon.rundir / 'db.sock'}"

    def vsctl(*args, check=True):
        return run(["ovs-vsctl", f"--db={db}", "--timeout=20", *args], check=check)

    return vsctl


def threads(show):
    """pmd-rxq-show text -> {core: [port, ...]}."""
    out, core = {}, None
    for line in show.splitlines():
        if line.startswith("pmd thread"):
            core = line.split("core_id")[1].strip().rstrip(":")
            out[core] = []
        elif line.strip().startswith("port:") and core is not None:
            out[core].append(line.split()[1])
    return out


def ping(net, ns, dst, count=3):
    return net.ns(ns, f"ping -c {count} -i 0.2 -W 2 {dst}", check=False, timeout=30)


def test_two_poll_threads_forward_pin_and_shrink(daemon, net):
    require("ovs-vsctl")
    vsctl = vsctl_for(daemon)
    h1, s1 = net.host("p", ip="10.81.0.1/24", mac="02:81:00:00:00:01")
    h2, s2 = net.host("q", ip="10.81.0.2/24", mac="02:81:00:00:00:02")
    br = f"fp{net.tag}"[:15]
    vsctl("set", "Open_vSwitch", ".", "other_config:pmd-cpu-mask=0x3")
    vsctl("add-br", br)
    vsctl("add-port", br, s1)
    vsctl("add-port", br, s2)

    t = threads(appctl(daemon, "dpif-netdev/pmd-rxq-show"))
    assert set(t) == {"0", "1"}, t
    assert sorted(p for ps in t.values() for p in ps) == sorted([br, s1, s2]), t
    assert all(t.values()), f"a thread got no queue: {t}"
    j = daemon.json("dpif-netdev/pmd-rxq-show")["pmds"]
    assert sorted(p["core_id"] for p in j) == [0, 1]
    assert sorted(q["port"] for p in j for q in p["rxqs"]) == sorted([br, s1, s2]), j

    r = ping(net, h1, "10.81.0.2")
    assert r.returncode == 0, r.stdout + r.stderr
    stats = daemon.json("pmd-stats-show")["pmds"]
    assert sorted(p["core_id"] for p in stats) == [0, 1]
    busy = [p for p in stats if p["packets_received"] > 0]
    assert len(busy) == 2, f"both threads should have received: {stats}"

    require("iperf3")
    server = net.spawn(h2, ["iperf3", "-s", "-1", "-B", "10.81.0.2"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_listening(h2, 5201)
        r = net.ns(h1, "iperf3 -c 10.81.0.2 -t 2 -J", check=False, timeout=60)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr
        bps = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"]
        assert bps > 1e6, bps
    finally:
        server.kill()
        server.wait(timeout=10)

    # Port counters are the sum over both threads' handles: each port received on one
    # thread and transmitted on both.
    ports = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}
    assert ports[s1]["rx_packets"] >= 3 and ports[s2]["rx_packets"] >= 3
    assert ports[s2]["tx_packets"] >= 3 and ports[s1]["tx_packets"] >= 3

    # Pin s2's queue to core 1, then s1's too: core 1 is isolated, everything else on 0.
    vsctl("set", "Interface", s2, "other_config:pmd-rxq-affinity=0:1")
    show = appctl(daemon, "dpif-netdev/pmd-rxq-show")
    t = threads(show)
    assert s2 in t["1"], show
    assert "isolated : true" in show, show
    assert t["1"] == [s2], f"an isolated thread polls only its pinned queues: {show}"
    assert ping(net, h1, "10.81.0.2").returncode == 0
    vsctl("remove", "Interface", s2, "other_config", "pmd-rxq-affinity")
    assert "isolated : true" not in appctl(daemon, "dpif-netdev/pmd-rxq-show")

    # A bad mask keeps the threads and says why.
    vsctl("set", "Open_vSwitch", ".", "other_config:pmd-cpu-mask=zz")
    wait_for(lambda: "not a hexadecimal CPU mask" in daemon.logtext(), what="mask warning")
    assert set(threads(appctl(daemon, "dpif-netdev/pmd-rxq-show"))) == {"0", "1"}

    # Back to one unpinned thread: every queue on it, forwarding still works.
    vsctl("remove", "Open_vSwitch", ".", "other_config", "pmd-cpu-mask")
    t = threads(appctl(daemon, "dpif-netdev/pmd-rxq-show"))
    assert list(t) == ["unpinned"] and sorted(t["unpinned"]) == sorted([br, s1, s2]), t
    r = ping(net, h1, "10.81.0.2")
    assert r.returncode == 0, r.stdout + r.stderr
    appctl(daemon, "dpif-netdev/pmd-rxq-rebalance")


def test_afxdp_ports_on_two_poll_threads(daemon, net):
    require("ovs-vsctl")
    vsctl = vsctl_for(daemon)
    h1, s1 = net.host("x", ip="10.82.0.1/24", mac="02:82:00:00:00:01")
    h2, s2 = net.host("y", ip="10.82.0.2/24", mac="02:82:00:00:00:02")
    # Generic XDP on the namespace side lets native XDP on the switch side redirect frames.
    for ns in (h1, h2):
        net.ns(ns, "ip link set eth0 xdpgeneric off", check=False)
    br = f"fx{net.tag}"[:15]
    vsctl("set", "Open_vSwitch", ".", "other_config:pmd-cpu-mask=0x3")
    vsctl("add-br", br, "--", "set", "Bridge", br, "other_config:module=patch")
    for s in (s1, s2):
        vsctl("add-port", br, s, "--", "set", "Interface", s, "type=afxdp",
              "options:xdp-mode=best-effort")
    daemon.cli("patch-set", br, s1, s2)
    daemon.cli("patch-set", br, s2, s1)
    t = threads(appctl(daemon, "dpif-netdev/pmd-rxq-show"))
    assert set(t) == {"0", "1"}, t
    on = {p: core for core, ps in t.items() for p in ps}
    assert on[s1] != on[s2], f"the two afxdp queues should be on different threads: {t}"
    r = ping(net, h1, "10.82.0.2", count=5)
    assert r.returncode == 0, r.stdout + r.stderr + daemon.logtext()[-2000:]
    stats = daemon.json("pmd-stats-show")["pmds"]
    assert all(p["packets_received"] > 0 for p in stats), stats
    # Remove one port under the two threads, add it back: forwarding resumes.
    vsctl("del-port", br, s2)
    vsctl("add-port", br, s2, "--", "set", "Interface", s2, "type=afxdp")
    daemon.cli("patch-set", br, s1, s2)
    daemon.cli("patch-set", br, s2, s1)
    r = ping(net, h1, "10.82.0.2", count=3)
    assert r.returncode == 0, r.stdout + r.stderr
