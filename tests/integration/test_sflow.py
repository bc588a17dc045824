"""sFlow export (OVSDB's sFlow table), configured with ovs-vsctl and read by two collectors:

* nfdump's `sfcapd` (a real sFlow collector) turns the flow samples into flow records that
  `nfdump` prints: the ICMP between the two hosts is there, with their addresses;
* a decoder carried here checks the datagrams field by field: version 5, the agent address
  the `agent` column names, flow samples with the input port's ifIndex, the output port's
  ifIndex once the bridge knows where the host is, the sampled frame's header, the sampling
  rate and an exact sample pool, and counter samples for every port whose octet counters
  follow the interface statistics.

Then a 1-in-10 rate on a ping flood, and clearing the bridge's `sflow` column stops the export.

The output port against OVS 3.1 (ovs-vswitchd beside ferrovsd, helpers/ovsdiff.py, the same
flows and packets through `netdev-dummy/receive`): one output, two, a drop, FLOOD and NORMAL
flooding, each sample's `output` as OVS sends it. Veth ports carry their ifindex (first
test); the dummy and pcap ports of the comparison have none, hence `0x80000001` for one.
"""

import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from conftest import BIN, need_root, require, run, two_hosts, wait_for

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402


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
            return [dict(s, t=t) for t, d in self.datagrams if t >= since for s in d["samples"]
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
        assert all(s["source"] == s["input"] and s["rate"] == 1 for s in fl)
        # The output is the port the bridge sent the packet to (both hosts are known to its
        # NORMAL table since the first ping). A packet that went to the slow path (a cache
        # miss) has output unknown (0): the first of a flow, or after a revalidation.
        for sent, to in ((reqs, p2), (reps, p1)):
            since = [s["output"] for s in sent if s["t"] >= t0]
            assert set(since) <= {ifindex(to), 0}, [hex(o) for o in since]
            assert since.count(ifindex(to)) >= len(since) - 3, [hex(o) for o in since]
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

        def flood_samples():
            return [s for s in col.samples("flow", t1) if s["input"] == ifindex(p1)]

        # The pool counts every packet the port received since sFlow was turned on, except
        # those after its last sample (a gap is at most 2 * 10 - 1 packets). On a loaded
        # machine the last datagrams may still be on their way: wait for them.
        wait_for(lambda: (m := flood_samples()) and m[-1]["pool"] >= rx1 - rx_on - 19 - 5,
                 timeout=10, what="the flood's last samples")
        mine = flood_samples()
        assert all(s["rate"] == 10 for s in mine)
        n = rx1 - rx0
        assert n >= 3000 and 0.07 * n <= len(mine) <= 0.13 * n, (len(mine), n)
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


# ---- the output port against OVS 3.1 -------------------------------------------------------

# A collector in a child process, so it can live in ferrovsd's network namespace: prints its
# port, then every datagram as a line of hex.
COLLECT = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    print(s.recv(65536).hex(), flush=True)
"""


class ProcCollector:
    def __init__(self, prefix):
        self.p = subprocess.Popen(prefix + [sys.executable, "-u", "-c", COLLECT],
                                  stdout=subprocess.PIPE, text=True)
        self.port = int(self.p.stdout.readline())
        self.datagrams = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        for line in self.p.stdout:
            with self.lock:
                self.datagrams.append(bytes.fromhex(line.strip()))

    def flow_samples(self):
        """(output, sampled header) of every flow sample so far."""
        with self.lock:
            return [x for d in self.datagrams for x in flow_outputs(d)]

    def close(self):
        self.p.kill()
        self.p.wait()
        self.t.join(timeout=2)


def flow_outputs(b):
    """(output, raw header) of each flow sample of an sFlow v5 datagram, compact (format 1)
    or expanded (3), whatever other records it carries (OVS adds an extended switch one)."""
    o = 8 + (4 if w_(b, 4) == 1 else 16) + 16
    out = []
    for _ in range(w_(b, o - 4)):
        fmt, ln = w_(b, o), w_(b, o + 4)
        body = b[o + 8:o + 8 + ln]
        o += 8 + ln
        if fmt == 1:
            output, nrec, at = w_(body, 24), w_(body, 28), 32
        elif fmt == 3:
            output, nrec, at = w_(body, 32) << 30 | w_(body, 36), w_(body, 40), 44
        else:
            continue
        header = b""
        for _ in range(nrec):
            rfmt, rlen = struct.unpack_from(">II", body, at)
            if rfmt == 1:
                hlen = w_(body, at + 8 + 12)
                header = body[at + 8 + 16:at + 8 + 16 + hlen]
            at += 8 + rlen
        out.append((output, header))
    return out


def w_(b, o):
    return struct.unpack_from(">I", b, o)[0]


def udp_frame(dst_ip):
    """An Ethernet/IPv4/UDP frame from 10.0.0.1 to `dst_ip`, to a MAC no one has."""
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 28, 1, 0, 64, 17, 0,
                               socket.inet_aton("10.0.0.1"), socket.inet_aton(dst_ip)))
    c = sum(struct.unpack(">10H", ip))
    c = (c & 0xFFFF) + (c >> 16)
    c = (c & 0xFFFF) + (c >> 16)
    ip[10:12] = struct.pack(">H", ~c & 0xFFFF)
    eth = bytes.fromhex("505400000002" "505400000001" "0800")
    return (eth + bytes(ip) + struct.pack(">HHHH", 1, 2, 8, 0)).ljust(60, b"\0")


# Flow per destination, and the output OVS 3.1 reports for it (ports without ifindex; FLOOD
# and an unknown NORMAL destination reach p2, p3, p4 and the bridge's LOCAL port).
OUTPUT_CASES = [
    ("10.0.0.2", "output:2", 0x80000001),
    ("10.0.0.3", "output:2,output:3", 0x80000002),
    ("10.0.0.4", "drop", 0x40000100),
    ("10.0.0.5", "FLOOD", 0x80000004),
    ("10.0.0.6", "NORMAL", 0x80000004),
]


def test_sflow_output_port_matches_ovs():
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    work = Path(tempfile.mkdtemp(prefix="ferrovs-sflow-ovs-"))
    switches, cols = [], []
    try:
        switches.append(ovsdiff.Ovs(work))
        switches.append(ovsdiff.Ferrovs(work, BIN))
        fv = switches[1]
        run(["ip", "netns", "exec", fv.ns, "ip", "link", "set", "lo", "up"])
        flows = [f"in_port=1,ip,nw_dst={d},actions={a}" for d, a, _ in OUTPUT_CASES]
        for sw, prefix in zip(switches, ([], ["ip", "netns", "exec", fv.ns])):
            ok, err = ovsdiff.install(sw, flows, work)
            assert ok, (sw.name, err)
            col = ProcCollector(prefix)
            cols.append(col)
            run(["ovs-vsctl", f"--db=unix:{sw.d}/db.sock", "--", "--id=@s", "create", "sFlow",
                 "agent=127.0.0.1", f'targets="127.0.0.1:{col.port}"', "header=128",
                 "sampling=1", "polling=0", "--", "set", "Bridge", "br0", "sflow=@s"])
        # Sampling is on once a probe's sample comes back from both.
        probe = udp_frame("10.0.0.99")

        def sampled(col, frame):
            return [o for o, h in col.flow_samples() if h[:len(frame)] == frame]

        def probed():
            for sw in switches:
                sw.receive(1, probe)
            return all(sampled(c, probe) for c in cols)
        wait_for(probed, timeout=20, interval=0.3, what="samples from both switches")
        for dst, actions, want in OUTPUT_CASES:
            frame = udp_frame(dst)
            # Twice: ferrovs sends the first to its slow path (output unknown), the second
            # hits the megaflow the first installed.
            for _ in range(2):
                for sw in switches:
                    sw.receive(1, frame)
                time.sleep(0.3)
            wait_for(lambda: all(len(sampled(c, frame)) >= 2 for c in cols), timeout=10,
                     what=f"two samples of {dst} from both switches")
            ovs_out, fv_out = (sampled(c, frame) for c in cols)
            assert ovs_out == [want, want], (actions, [hex(o) for o in ovs_out])
            assert fv_out[-1] == ovs_out[-1], (actions, [hex(o) for o in fv_out])
            assert fv_out[0] in (0, want), (actions, [hex(o) for o in fv_out])
    finally:
        for c in cols:
            c.close()
        for sw in switches:
            sw.stop()
        run(["rm", "-rf", str(work)], check=False)
