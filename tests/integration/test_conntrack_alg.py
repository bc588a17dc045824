"""The FTP and TFTP helpers (`ct(commit,alg=ftp|tftp)`) with real servers between
namespaces, behind an OVS-style firewall that admits only what the helpers make related:

* h1 may open an FTP control connection to h2 (port 21) and a TFTP request (port 69);
  anything else new is dropped, `+est` passes both ways, `+rel` passes and is committed
  when new (OVN's way);
* an FTP transfer (pyftpdlib server, Python's ftplib client) in passive mode (h1 opens the
  data connection to a port h2 announced) and in active mode (h2 opens it to a port h1
  announced) succeeds, and fails without `alg=ftp`;
* a TFTP read (h2 answers from a new port) succeeds, and fails without `alg=tftp`;
* `dpctl/dump-conntrack` shows the control connection's helper;
* FTP under NAT: passive through SNAT of h1 (nothing in the server's message needs
  translating), active through SNAT of h1 (the client's `PORT` is rewritten to the NAT
  address, the frame grows and the control connection's sequence numbers follow; the
  server's data connection is translated back to h1), and passive to a server behind
  DNAT (the `227` reply is rewritten to the address h1 connected to; h1's data
  connection is translated to the server).
"""

import subprocess

import pytest

from conftest import HELPERS, PY, require
from test_conntrack import SNAT_ADDR, appctl, install
from test_ofctl import bridge

SYS_PY = "/usr/bin/python3"


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl", "ovs-appctl")
    r = subprocess.run([SYS_PY, "-c", "import pyftpdlib"], capture_output=True, check=False)
    if r.returncode != 0:
        pytest.fail("missing python3-pyftpdlib (scripts/env.sh installs it)", pytrace=False)


def firewall(alg):
    """h1 may open FTP (with `alg=ftp` when `alg`) and TFTP (`alg=tftp`) to h2."""
    ftp = "ct(commit,alg=ftp)" if alg else "ct(commit)"
    tftp = "ct(commit,alg=tftp)" if alg else "ct(commit)"
    return [
        "table=0,priority=100,arp,actions=NORMAL",
        "table=0,priority=90,ip,ct_state=-trk,actions=ct(table=1)",
        f"table=1,priority=100,tcp,in_port=1,tp_dst=21,ct_state=+trk+new,actions={ftp},output:2",
        f"table=1,priority=100,udp,in_port=1,tp_dst=69,ct_state=+trk+new,actions={tftp},output:2",
        "table=1,priority=110,ip,ct_state=+trk+new+rel,actions=ct(commit),NORMAL",
        "table=1,priority=100,ip,ct_state=+trk+est,actions=NORMAL",
        "table=1,priority=100,ip,ct_state=+trk+rel,actions=NORMAL",
        "table=1,priority=10,actions=drop",
    ]


@pytest.fixture
def served(tmp_path):
    """A file of 300,000 random bytes in a directory, and its SHA-256."""
    import hashlib
    import os

    data = os.urandom(300_000)
    (tmp_path / "f.bin").write_bytes(data)
    tmp_path.chmod(0o755)
    return tmp_path, hashlib.sha256(data).hexdigest()


def start(net, ns, argv):
    p = net.spawn(ns, argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def ftp_get(net, ns, mode, timeout=5, host="10.7.0.2"):
    cmd = f"{PY} {HELPERS / 'ftp_peer.py'} get {host} f.bin {mode} {timeout}"
    return net.ns(ns, cmd, check=False, timeout=timeout * 4 + 10)


def tftp_get(net, ns, timeout=3):
    cmd = f"{PY} {HELPERS / 'tftp_peer.py'} get 10.7.0.2 f.bin {timeout}"
    return net.ns(ns, cmd, check=False, timeout=timeout * 4 + 10)


@pytest.mark.parametrize("mode", ["passive", "active"])
def test_ftp_through_the_helper(daemon, net, served, mode):
    root, digest = served
    br, (h1, h2) = bridge(daemon, net)
    srv = start(net, h2, [SYS_PY, str(HELPERS / "ftp_peer.py"), "serve", "10.7.0.2",
                          str(root), "60"])
    try:
        # Without the helper the data connection is new, and dropped.
        install(daemon, br, firewall(alg=False))
        appctl(daemon, "dpctl/flush-conntrack")
        r = ftp_get(net, h1, mode, timeout=3)
        assert r.returncode != 0 and r.stdout.startswith("error:"), r.stdout
        # With it the data connection is related: the file comes whole.
        install(daemon, br, firewall(alg=True))
        appctl(daemon, "dpctl/flush-conntrack")
        r = ftp_get(net, h1, mode)
        assert r.returncode == 0 and r.stdout.strip() == digest, (r.stdout, r.stderr)
        dump = appctl(daemon, "dpctl/dump-conntrack").stdout
        control = [l for l in dump.splitlines() if "dport=21)" in l]
        assert control and all(l.endswith(",helper=ftp") for l in control), dump
        # The data connection is tracked too, without a helper of its own; in active mode
        # h2 opened it towards h1.
        data = [l for l in dump.splitlines() if l.startswith("tcp,") and "dport=21)" not in l]
        assert data and not any("helper" in l for l in data), dump
        opener = "10.7.0.1" if mode == "passive" else "10.7.0.2"
        assert any(l.startswith(f"tcp,orig=(src={opener},") for l in data), dump
    finally:
        srv.kill()
        srv.wait()


def test_tftp_through_the_helper(daemon, net, served):
    root, digest = served
    br, (h1, h2) = bridge(daemon, net)
    srv = start(net, h2, [PY, str(HELPERS / "tftp_peer.py"), "serve", "10.7.0.2",
                          str(root), "60"])
    try:
        install(daemon, br, firewall(alg=False))
        appctl(daemon, "dpctl/flush-conntrack")
        r = tftp_get(net, h1, timeout=2)
        assert r.returncode != 0 and r.stdout.startswith("error:"), r.stdout
        install(daemon, br, firewall(alg=True))
        appctl(daemon, "dpctl/flush-conntrack")
        r = tftp_get(net, h1)
        assert r.returncode == 0 and r.stdout.strip() == digest, (r.stdout, r.stderr)
        dump = appctl(daemon, "dpctl/dump-conntrack").stdout
        assert any("dport=69)," in l and l.endswith(",helper=tftp") for l in dump.splitlines()), dump
        # The answer, from h2's new port to h1's, is a connection of its own.
        assert any(l.startswith("udp,orig=(src=10.7.0.2,dst=10.7.0.1,")
                   for l in dump.splitlines()), dump
    finally:
        srv.kill()
        srv.wait()


def snat_firewall(alg):
    nat = f"nat(src={SNAT_ADDR}:30000-30999)"
    helper = "alg=ftp," if alg else ""
    return [
        "table=0,priority=100,arp,actions=NORMAL",
        "table=0,priority=90,ip,actions=ct(zone=9,nat,table=1)",
        "table=1,priority=100,tcp,in_port=1,tp_dst=21,ct_state=+trk+new,"
        f"actions=ct(commit,zone=9,{helper}{nat}),output:2",
        f"table=1,priority=110,ip,in_port=1,ct_state=+trk+new+rel,actions=ct(commit,zone=9,{nat}),"
        "output:2",
        # Active mode: h2 opens the data connection to the NAT address, translated to h1.
        "table=1,priority=110,ip,in_port=2,ct_state=+trk+new+rel,actions=ct(commit,zone=9,nat),"
        "output:1",
        "table=1,priority=100,ip,in_port=1,ct_state=+trk+est,actions=output:2",
        "table=1,priority=100,ip,in_port=2,ct_state=+trk+est+rpl,actions=output:1",
        "table=1,priority=100,ip,in_port=2,ct_state=+trk+est+rel,actions=output:1",
        "table=1,priority=10,actions=drop",
    ]


@pytest.mark.parametrize("mode", ["passive", "active"])
def test_ftp_through_snat(daemon, net, served, mode):
    root, digest = served
    br, (h1, h2) = bridge(daemon, net)
    net.ns(h2, f"ip neigh add {SNAT_ADDR} lladdr 02:00:00:00:07:01 dev eth0")
    srv = start(net, h2, [SYS_PY, str(HELPERS / "ftp_peer.py"), "serve", "10.7.0.2",
                          str(root), "60"])
    try:
        install(daemon, br, snat_firewall(alg=False))
        appctl(daemon, "dpctl/flush-conntrack")
        r = ftp_get(net, h1, mode, timeout=3)
        assert r.returncode != 0 and r.stdout.startswith("error:"), r.stdout
        install(daemon, br, snat_firewall(alg=True))
        appctl(daemon, "dpctl/flush-conntrack")
        r = ftp_get(net, h1, mode)
        assert r.returncode == 0 and r.stdout.strip() == digest, (r.stdout, r.stderr)
        dump = appctl(daemon, "dpctl/dump-conntrack", "zone=9").stdout
        tcp = [l for l in dump.splitlines() if l.startswith("tcp,")]
        control = [l for l in tcp if l.endswith(",helper=ftp")]
        assert len(control) == 1 and control[0].startswith("tcp,orig=(src=10.7.0.1,"), dump
        assert f"dst={SNAT_ADDR}," in control[0], dump
        if mode == "passive":
            # h1's data connection, translated to the NAT address like the control one.
            data = [l for l in tcp if l.startswith("tcp,orig=(src=10.7.0.1,") and "helper" not in l]
            assert data and all(f"dst={SNAT_ADDR}," in l for l in data), dump
        else:
            # h2's data connection to the address the rewritten PORT named, sent on to h1.
            data = [l for l in tcp if l.startswith(f"tcp,orig=(src=10.7.0.2,dst={SNAT_ADDR},")]
            assert data and all("reply=(src=10.7.0.1," in l for l in data), dump
    finally:
        srv.kill()
        srv.wait()


VIP = "10.7.0.200"


def dnat_firewall(alg):
    helper = "alg=ftp," if alg else ""
    return [
        "table=0,priority=100,arp,actions=NORMAL",
        "table=0,priority=90,ip,actions=ct(zone=9,nat,table=1)",
        f"table=1,priority=100,tcp,in_port=1,nw_dst={VIP},tp_dst=21,ct_state=+trk+new,"
        f"actions=ct(commit,zone=9,{helper}nat(dst=10.7.0.2)),output:2",
        "table=1,priority=110,ip,in_port=1,ct_state=+trk+new+rel,actions=ct(commit,zone=9,nat),"
        "output:2",
        "table=1,priority=100,ip,in_port=1,ct_state=+trk+est,actions=output:2",
        "table=1,priority=100,ip,in_port=2,ct_state=+trk+est+rpl,actions=output:1",
        "table=1,priority=10,actions=drop",
    ]


def test_passive_ftp_to_a_dnat_server(daemon, net, served):
    root, digest = served
    br, (h1, h2) = bridge(daemon, net)
    # h1 reaches the address the server is published under through h2's port.
    mac = net.ns(h2, "cat /sys/class/net/eth0/address").stdout.strip()
    net.ns(h1, f"ip neigh add {VIP} lladdr {mac} dev eth0")
    srv = start(net, h2, [SYS_PY, str(HELPERS / "ftp_peer.py"), "serve", "10.7.0.2",
                          str(root), "60"])
    try:
        install(daemon, br, dnat_firewall(alg=False))
        appctl(daemon, "dpctl/flush-conntrack")
        r = ftp_get(net, h1, "passive", timeout=3, host=VIP)
        assert r.returncode != 0 and r.stdout.startswith("error:"), r.stdout
        install(daemon, br, dnat_firewall(alg=True))
        appctl(daemon, "dpctl/flush-conntrack")
        r = ftp_get(net, h1, "passive", host=VIP)
        assert r.returncode == 0 and r.stdout.strip() == digest, (r.stdout, r.stderr)
        dump = appctl(daemon, "dpctl/dump-conntrack", "zone=9").stdout
        tcp = [l for l in dump.splitlines() if l.startswith(f"tcp,orig=(src=10.7.0.1,dst={VIP},")]
        # The control and the data connection, both sent on to the server.
        assert len(tcp) >= 2 and all("reply=(src=10.7.0.2," in l for l in tcp), dump
        assert sum(l.endswith(",helper=ftp") for l in tcp) == 1, dump
    finally:
        srv.kill()
        srv.wait()
