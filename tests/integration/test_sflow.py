"""sFlow export (OVSDB's sFlow table), configured with ovs-vsctl and read by two collectors:

* nfdump's `sfcapd` (a real sFlow collector) turns the flow samples into flow records that
  `nfdump` prints: the ICMP between the two hosts is there, with their addresses;
* a decoder carried here checks the datagrams field by field: version 5, the agent address
  the `agent` column names, flow samples with the input port's ifIndex, the sampled frame's
  header, the sampling rate and an exact sample pool, and counter samples for every port whose
  octet counters follow the interface statistics.

Then a 1-in-10 rate on a ping flood, and clearing the bridge's `sflow` column stops the export.
"""

import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from conftest import require, run, two_hosts, wait_for


class Collector:
    """A UDP socket on loopback that decodes every sFlow v5 datagram it receives."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.datagrams = []
        self.lock = threading.Lock()
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            try:
                b = self.sock.recv(65536)
            except socket.timeout:
                continue
            d = decode(b)
            with self.lock:
                self.datagrams.append((time.time(), d))

    def close(self):
        self.stop = True
        self.t.join(timeout=2)
        self.sock.close()

    def samples(self, kind, since=0.0):
        with self.lock:
            return [s for t, d in self.datagrams if t >= since for s in d["samples"]
                    if s["kind"] == kind]


def decode(b):
    """Decodes an sFlow v5 datagram (enough of it to check what ferrovs writes)."""
    w = lambda o: struct.unpack_from(">I", b, o)[0]
    assert w(0) == 5, "version"
    at = w(4)
    alen = 4 if at == 1 else 16
    agent = socket.inet_ntop(socket.AF_INET if at == 1 else socket.AF_INET6, b[8:8 + alen])
    o = 8 + alen
    sub, seq, uptime, n = struct.unpack_from(">IIII", b, o)
    o += 16
    samples = []
    for _ in range(n):
        fmt, ln = struct.unpack_from(">II", b, o)
        body = b[o + 8:o + 8 + ln]
        o += 8 + ln
        if fmt == 1:
            sseq, src, rate, pool, drops, inp, outp, nrec = struct.unpack_from(">8I", body, 0)
            rfmt, rlen, proto, flen, stripped, hlen = struct.unpack_from(">6I", body, 32)
            assert rfmt == 1 and proto == 1, (rfmt, proto)
            samples.append(dict(kind="flow", seq=sseq, source=src, rate=rate, pool=pool,
                                drops=drops, input=inp, output=outp, frame_len=flen,
                                stripped=stripped, header=body[56:56 + hlen]))
        elif fmt == 2:
            sseq, src, nrec = struct.unpack_from(">III", body, 0)
            rfmt, rlen = struct.unpack_from(">II", body, 12)
            assert rfmt == 1 and rlen == 88, (rfmt, rlen)
            r = body[20:20 + 88]
            ifindex, iftype, speed, direction, status, in_oct = struct.unpack_from(">IIQIIQ", r, 0)
            in_ucast = struct.unpack_from(">I", r, 32)[0]
            out_oct, out_ucast = struct.unpack_from(">QI", r, 56)
            samples.append(dict(kind="counters", seq=sseq, source=src, ifindex=ifindex,
                                status=status, in_octets=in_oct, in_pkts=in_ucast,
                                out_octets=out_oct, out_pkts=out_ucast))
        else:
            raise AssertionError(f"unexpected sample format {fmt}")
    assert o == len(b), "trailing bytes"
    return dict(agent=agent, sub=sub, seq=seq, uptime=uptime, samples=samples)


def ifindex(name):
    return int(Path(f"/sys/class/net/{name}/ifindex").read_text())


def icmp_echo(header, src, dst):
    """Whether an Ethernet header sample is an IPv4 ICMP echo request (from 10.12.0.1) or
    reply (from 10.12.0.2) src -> dst."""
    kind = 8 if src == "10.12.0.1" else 0
    return (len(header) >= 35 and header[12:14] == b"\x08\x00" and header[23] == 1
            and header[26:30] == socket.inet_aton(src) and header[30:34] == socket.inet_aton(dst)
            and header[34] == kind)


def test_sflow_to_sfcapd_and_a_decoder(daemon, net):
    require("sfcapd", "nfdump", "ovs-vsctl")
    br = f"sf{net.tag}"[:15]
    daemon.cli("add-br", br)
    (h1, p1), (h2, p2) = two_hosts(daemon, net, br, "s", 12)
    col = Collector()
    flows = Path(tempfile.mkdtemp(prefix="ferrovs-sfcapd-"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        sport = s.getsockname()[1]
    sfcapd = subprocess.Popen(["sfcapd", "-b", "127.0.0.1", "-p", str(sport), "-w", str(flows),
                               "-t", "3600"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    db = f"--db=unix:{daemon.rundir}/db.sock"
    try:
        rx_on = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}[p1]["rx_packets"]
        run(["ovs-vsctl", db, "--", "--id=@s", "create", "sFlow", "agent=lo",
             f'targets="127.0.0.1:{col.port}","127.0.0.1:{sport}"', "header=128", "sampling=1",
             "polling=1", "--", "set", "Bridge", br, "sflow=@s"])
        # The bridge's sampler is on once a ping's samples come back.
        wait_for(lambda: (net.ns(h1, "ping -c 1 -W 1 10.12.0.2", check=False) and False)
                 or col.samples("flow"), timeout=15, what="the first flow samples")
        t0 = time.time()
        net.ns(h1, "ping -c 20 -i 0.05 -W 1 10.12.0.2")
        wait_for(lambda: len([s for s in col.samples("flow", t0)
                              if icmp_echo(s["header"], "10.12.0.2", "10.12.0.1")
                              or icmp_echo(s["header"], "10.12.0.1", "10.12.0.2")]) >= 40,
                 timeout=10, what="40 sampled echo requests and replies")
        with col.lock:
            dgs = [d for _, d in col.datagrams]
        assert {d["agent"] for d in dgs} == {"127.0.0.1"}
        assert len({d["sub"] for d in dgs}) == 1
        seqs = [d["seq"] for d in dgs]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
        fl = col.samples("flow")
        reqs = [s for s in fl if icmp_echo(s["header"], "10.12.0.1", "10.12.0.2")]
        reps = [s for s in fl if icmp_echo(s["header"], "10.12.0.2", "10.12.0.1")]
        assert len(reqs) >= 20 and len(reps) >= 20, (len(reqs), len(reps))
        assert {s["input"] for s in reqs} == {ifindex(p1)}
        assert {s["input"] for s in reps} == {ifindex(p2)}
        assert all(s["source"] == s["input"] and s["rate"] == 1 and s["output"] == 0
                   for s in fl)
        # 98-byte echo frames: frame_length counts the FCS, which is reported stripped.
        assert all(s["frame_len"] == 102 and s["stripped"] == 4 and len(s["header"]) == 98
                   for s in reqs)
        # At 1 in 1 every packet is a sample: per port, sequence and pool count together.
        for port in (p1, p2):
            mine = [s for s in fl if s["input"] == ifindex(port)]
            assert [s["seq"] for s in mine] == list(range(1, len(mine) + 1))
            assert [s["pool"] for s in mine] == list(range(1, len(mine) + 1))
        assert all(s["drops"] == 0 for s in fl)

        # Counter samples: one per port each second, following the interface statistics.
        wait_for(lambda: {c["ifindex"] for c in col.samples("counters", time.time() - 1.5)}
                 >= {ifindex(p1), ifindex(p2)}, timeout=10, what="counter samples")
        stats = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}
        time.sleep(1.5)
        last = {}
        for c in col.samples("counters"):
            last[c["ifindex"]] = c
        for port in (p1, p2):
            c = last[ifindex(port)]
            assert c["status"] == 3 and c["source"] == ifindex(port)
            assert c["in_pkts"] >= stats[port]["rx_packets"] >= 21, (c, stats[port])
            assert c["in_octets"] >= stats[port]["rx_bytes"] > 0, (c, stats[port])
            assert c["out_pkts"] >= stats[port]["tx_packets"] >= 21, (c, stats[port])

        # sfcapd wrote flow records: nfdump shows the ICMP between the hosts.
        sfcapd.send_signal(signal.SIGTERM)
        out, _ = sfcapd.communicate(timeout=15)
        r = run(["nfdump", "-R", str(flows), "-q", "-o", "fmt:%pr %sa %da %pkt"], check=False)
        assert r.returncode == 0, (r.stdout, r.stderr, out)
        rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
        icmp = [x for x in rows if x[0] == "ICMP"]
        assert any(x[1] == "10.12.0.1" and x[2] == "10.12.0.2" for x in icmp), r.stdout
        assert any(x[1] == "10.12.0.2" and x[2] == "10.12.0.1" for x in icmp), r.stdout
        assert sum(int(x[3]) for x in icmp if x[1] == "10.12.0.1") >= 20, r.stdout

        # 1 in 10 on a flood: about a tenth of the packets, and the pool counts all of them.
        row = run(["ovs-vsctl", db, "get", "Bridge", br, "sflow"]).stdout.strip()
        run(["ovs-vsctl", db, "set", "sFlow", row, "sampling=10", "polling=0"])

        def at_ten():
            net.ns(h1, "ping -c 20 -i 0.02 -W 1 10.12.0.2", check=False)
            recent = col.samples("flow", time.time() - 0.3)
            return recent and all(s["rate"] == 10 for s in recent)
        wait_for(at_ten, timeout=20, what="samples at 1 in 10")
        t1 = time.time()
        rx0 = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}[p1]["rx_packets"]
        net.ns(h1, "ping -f -c 3000 -W 1 10.12.0.2", timeout=60)
        time.sleep(0.5)
        rx1 = {p["name"]: p for p in daemon.json("dump-ports", br)["ports"]}[p1]["rx_packets"]
        mine = [s for s in col.samples("flow", t1) if s["input"] == ifindex(p1)]
        assert all(s["rate"] == 10 for s in mine)
        n = rx1 - rx0
        assert n >= 3000 and 0.07 * n <= len(mine) <= 0.13 * n, (len(mine), n)
        # The pool counts every packet the port received since sFlow was turned on, except
        # those after its last sample (a gap is at most 2 * 10 - 1 packets).
        pool = mine[-1]["pool"]
        assert rx1 - rx_on - 19 - 5 <= pool <= rx1 - rx_on, (pool, rx1, rx_on)

        # No sflow column: no more datagrams.
        run(["ovs-vsctl", db, "clear", "Bridge", br, "sflow"])
        time.sleep(1.0)
        t2 = time.time()
        net.ns(h1, "ping -c 10 -i 0.05 -W 1 10.12.0.2")
        time.sleep(1.0)
        with col.lock:
            late = [d for t, d in col.datagrams if t >= t2]
        assert late == [], late[:2]
    finally:
        if sfcapd.poll() is None:
            sfcapd.kill()
            sfcapd.wait()
        col.close()
        run(["rm", "-rf", str(flows)], check=False)
