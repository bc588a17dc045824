"""Connection tracking, the rest of what issue #15 asks to be shown with real traffic in
namespaces (the firewall and SNAT basics are in test_conntrack.py):

* fragmented UDP through the stateful firewall, both ways (h1 may, h2 may not);
* curl through the firewall (h1 fetches from h2's HTTP server; h2 cannot fetch from h1's);
* an ICMP port unreachable answering a SNATed datagram, translated back to h1's socket;
* DNAT load balancing OVN's way: `ct(nat)` on the way in, a select group whose buckets
  commit with `nat(dst=BACKEND)`, the replies un-NATed on the way back.
"""

import subprocess

import pytest

from conftest import PY, require, wait_listening
from test_conntrack import FIREWALL, SNAT_ADDR, appctl, install, peer, server, snat_flows
from test_ofctl import bridge, ofctl


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-ofctl", "ovs-appctl", "curl")


def test_fragmented_udp_through_the_firewall(daemon, net):
    br, (h1, h2) = bridge(daemon, net)
    install(daemon, br, FIREWALL)
    appctl(daemon, "dpctl/flush-conntrack")
    srv2 = server(net, h2, 5211, 20)
    srv1 = server(net, h1, 5212, 20)
    try:
        # 4,000 bytes leave h1 as three fragments (MTU 1500); the tracker reassembles them
        # to decide, and the server sees one datagram from h1.
        r = peer(net, h1, "udp", "10.7.0.2", 5211, 4000)
        assert r.returncode == 0 and r.stdout.startswith("10.7.0.1:"), r.stdout
        # The same from h2 is a new connection h2 may not open: dropped.
        r = peer(net, h2, "udp", "10.7.0.1", 5212, 4000)
        assert r.returncode != 0, r.stdout
        dump = appctl(daemon, "dpctl/dump-conntrack").stdout
        assert "udp,orig=(src=10.7.0.1,dst=10.7.0.2" in dump, dump
        assert "orig=(src=10.7.0.2" not in dump, dump
    finally:
        for p in (srv1, srv2):
            p.kill()
            p.wait()


def test_curl_through_the_firewall(daemon, net):
    br, (h1, h2) = bridge(daemon, net)
    install(daemon, br, FIREWALL)
    appctl(daemon, "dpctl/flush-conntrack")
    servers = [net.spawn(ns, [PY, "-m", "http.server", "8080", "--bind", ip],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for ns, ip in ((h2, "10.7.0.2"), (h1, "10.7.0.1"))]
    try:
        # Both servers listen before the first SYN (a refusal is curl's exit code 7 too).
        for ns in (h2, h1):
            wait_listening(ns, 8080)
        r = net.ns(h1, "curl -sS -m 5 -o /dev/null -w %{http_code} http://10.7.0.2:8080/",
                   check=False, timeout=20)
        assert r.returncode == 0 and r.stdout.strip() == "200", (r.stdout, r.stderr)
        r = net.ns(h2, "curl -s -m 3 -o /dev/null http://10.7.0.1:8080/", check=False,
                   timeout=20)
        assert r.returncode != 0, r.stdout
    finally:
        for p in servers:
            p.kill()
            p.wait()


def test_icmp_error_of_a_snat_flow_translated_back(daemon, net):
    br, (h1, h2) = bridge(daemon, net)
    install(daemon, br,
            snat_flows("table=1,priority=100,ip,in_port=2,ct_state=+trk+rel,actions=output:1"))
    appctl(daemon, "dpctl/flush-conntrack")
    net.ns(h2, f"ip neigh add {SNAT_ADDR} lladdr 02:00:00:00:07:01 dev eth0")
    # Nothing listens on h2's port 5999: h2's kernel answers the NAT address with a port
    # unreachable quoting the translated datagram. h1's connected socket sees the error
    # only if the switch translated the error and the datagram it quotes back.
    r = peer(net, h1, "refused", "10.7.0.2", 5999)
    assert r.returncode == 0 and r.stdout.strip() == "refused", r.stdout
    dump = appctl(daemon, "dpctl/dump-conntrack", "zone=9").stdout
    assert "udp,orig=(src=10.7.0.1,dst=10.7.0.2" in dump and f"dst={SNAT_ADDR}" in dump, dump
    # Without the +rel flow the error stops at the switch and the socket times out.
    ofctl(daemon, "del-flows", br, "table=1,ip,in_port=2,ct_state=+trk+rel")
    r = peer(net, h1, "refused", "10.7.0.2", 5998)
    assert r.returncode != 0 and "timeout" in r.stdout, r.stdout


VIP = "10.7.0.99"
VIP_MAC = "02:00:00:00:07:99"


def test_dnat_load_balancing_with_a_select_group(daemon, net):
    br, (h1, h2, h3) = bridge(daemon, net, n_hosts=3)
    ofctl(daemon, "add-group", br, "group_id=1,type=select,"
          "bucket=actions=ct(commit,zone=5,nat(dst=10.7.0.2:5213),table=2),"
          "bucket=actions=ct(commit,zone=5,nat(dst=10.7.0.3:5213),table=2)")
    flows = [
        "table=0,priority=100,arp,actions=NORMAL",
        "table=0,priority=90,ip,in_port=1,actions=ct(zone=5,nat,table=1)",
        "table=0,priority=90,ip,in_port=2,actions=ct(zone=5,nat,table=3)",
        "table=0,priority=90,ip,in_port=3,actions=ct(zone=5,nat,table=3)",
        f"table=1,priority=100,tcp,ct_state=+trk+new,nw_dst={VIP},tp_dst=80,actions=group:1",
        "table=1,priority=90,ip,ct_state=+trk+est,actions=resubmit(,2)",
        "table=1,priority=10,actions=drop",
        "table=2,priority=100,ip,nw_dst=10.7.0.2,actions=mod_dl_dst:02:00:00:00:07:02,output:2",
        "table=2,priority=100,ip,nw_dst=10.7.0.3,actions=mod_dl_dst:02:00:00:00:07:03,output:3",
        "table=2,priority=10,actions=drop",
        "table=3,priority=100,ip,ct_state=+trk+est+rpl,nw_dst=10.7.0.1,actions=output:1",
        "table=3,priority=10,actions=drop",
    ]
    install(daemon, br, flows)
    appctl(daemon, "dpctl/flush-conntrack")
    net.ns(h1, f"ip neigh replace {VIP} lladdr {VIP_MAC} dev eth0 nud permanent")
    backends = [server(net, ns, 5213, 30) for ns in (h2, h3)]
    try:
        n = 40
        r = peer(net, h1, "tcp", VIP, 80, n, timeout=30)
        assert r.returncode == 0, r.stdout
        # Every backend saw h1's own address (DNAT leaves the source alone).
        seen = r.stdout.split()
        assert len(seen) == n and all(s.startswith("10.7.0.1:") for s in seen), seen
        dump = appctl(daemon, "dpctl/dump-conntrack", "zone=5").stdout
        tcp = [l for l in dump.splitlines() if l.startswith("tcp,")]
        assert len(tcp) == n, dump
        assert all(f"dst={VIP},sport=" in l and "dport=80)" in l for l in tcp), tcp[:3]
        to2 = [l for l in tcp if "reply=(src=10.7.0.2,dst=10.7.0.1,sport=5213" in l]
        to3 = [l for l in tcp if "reply=(src=10.7.0.3,dst=10.7.0.1,sport=5213" in l]
        # The group spreads connections over both backends (all 40 on one: 2^-39).
        assert len(to2) + len(to3) == n and to2 and to3, (len(to2), len(to3))
    finally:
        for p in backends:
            p.kill()
            p.wait()
