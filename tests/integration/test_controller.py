"""Controllers: os-ken's simple_switch_13 driving ferrovs over TCP (ping, iperf3, fail-mode
secure/standalone, reconnect), hostile bytes on a controller connection, roles and
packet-in rate limiting. Every process started here is stopped in a finally/fixture."""

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

from conftest import PY, require, run, wait_for, wait_listening

RUNNER = r'''
# A MAC-learning controller app in the manner of os-ken's simple_switch_13 (which this
# os-ken wheel does not ship): table-miss to the controller, learn the source port, install
# in_port/eth_src/eth_dst flows at priority 1 once the destination is known, packet-out.
import os, sys
os.environ["OSKEN_HUB_TYPE"] = "eventlet"
from os_ken.lib import hub
hub.patch(thread=False)
from os_ken import cfg
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import ethernet, packet
from os_ken.ofproto import ofproto_v1_3


class Learner(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.where = {}

    def flow(self, dp, prio, match, actions):
        p = dp.ofproto_parser
        inst = [p.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(p.OFPFlowMod(datapath=dp, priority=prio, match=match, instructions=inst))

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        p, o = dp.ofproto_parser, dp.ofproto
        self.flow(dp, 0, p.OFPMatch(), [p.OFPActionOutput(o.OFPP_CONTROLLER, o.OFPCML_NO_BUFFER)])

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        m = ev.msg
        dp = m.datapath
        p, o = dp.ofproto_parser, dp.ofproto
        in_port = m.match["in_port"]
        eth = packet.Packet(m.data).get_protocols(ethernet.ethernet)[0]
        table = self.where.setdefault(dp.id, {})
        table[eth.src] = in_port
        out = table.get(eth.dst, o.OFPP_FLOOD)
        actions = [p.OFPActionOutput(out)]
        if out != o.OFPP_FLOOD:
            self.flow(dp, 1, p.OFPMatch(in_port=in_port, eth_dst=eth.dst, eth_src=eth.src),
                      actions)
        dp.send_msg(p.OFPPacketOut(datapath=dp, buffer_id=o.OFP_NO_BUFFER, in_port=in_port,
                                   actions=actions, data=m.data))


cfg.CONF(args=["--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", sys.argv[1]],
         project="os_ken")
sys.modules["learner_app"] = sys.modules[__name__]
app_manager.AppManager.run_apps(["learner_app"])
'''


def have_osken():
    return subprocess.run([PY, "-c", "import os_ken"], capture_output=True).returncode == 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Controller:
    def __init__(self, tmp, port):
        self.script = tmp / "osken_run.py"
        self.script.write_text(RUNNER)
        self.port = port
        self.log = tmp / f"osken-{port}.log"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([PY, str(self.script), str(self.port)],
                                     stdout=open(self.log, "a"), stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


def hosts(daemon, net, br, n):
    out = []
    for i in range(1, n + 1):
        ns, sw_if = net.host(f"c{i}", ip=f"10.8.0.{i}/24", mac=f"02:00:00:00:08:0{i}")
        net.ns(ns, "ethtool -K eth0 tx off", check=False)
        daemon.cli("add-port", br, sw_if, f"ofport={i}")
        out.append(ns)
    # Static neighbours: the test controls exactly which frames cross the switch.
    for i, ns in enumerate(out, 1):
        for j in range(1, n + 1):
            if j != i:
                net.ns(ns, f"ip neigh replace 10.8.0.{j} lladdr 02:00:00:00:08:0{j} "
                           "dev eth0 nud permanent")
    return out


def pings(net, ns, ip, count=3):
    return net.ns(ns, f"ping -c {count} -i 0.2 -W 1 {ip}", check=False, timeout=30).returncode == 0


def connected(daemon, br):
    return "version 0x04" in daemon.cli("get-controller", br).stdout


@pytest.mark.parametrize("mode", ["secure", "standalone"])
def test_simple_switch_13_ping_iperf_fail_mode_and_reconnect(daemon, net, tmp_path, mode):
    assert have_osken(), "os-ken is not importable (scripts/test.sh installs it)"
    require("iperf3")
    br = f"fc{net.tag}"[:15]
    daemon.cli("add-br", br)
    h1, h2, h3 = hosts(daemon, net, br, 3)
    port = free_port()
    ctl = Controller(tmp_path, port)
    daemon.cli("set-openflow", br, "inactivity_probe=1000", "max_backoff=1000",
               f"fail_mode={mode}", "protocols=OpenFlow13")
    daemon.cli("set-controller", br, f"tcp:127.0.0.1:{port}")
    iperf = None
    try:
        ctl.start()
        wait_for(lambda: connected(daemon, br), timeout=20, what="controller connection")
        wait_for(lambda: pings(net, h1, "10.8.0.2", count=2), timeout=20, what="ping via os-ken")
        assert pings(net, h2, "10.8.0.1")
        iperf = net.spawn(h2, ["iperf3", "-s", "-1", "-p", "5301"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(h2, 5301)
        r = net.ns(h1, "iperf3 -c 10.8.0.2 -p 5301 -t 2 -J", check=False, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
        assert '"bits_per_second"' in r.stdout
        flows = daemon.cli("dump-flows", br).stdout
        assert "priority=1" in flows and "dl_dst=02:00:00:00:08:02" in flows, flows
        # The controller dies.
        ctl.stop()
        wait_for(lambda: not connected(daemon, br), timeout=10, what="disconnection")
        if mode == "secure":
            assert pings(net, h1, "10.8.0.2"), "installed flows must keep working"
            assert not pings(net, h3, "10.8.0.1", count=2), "new flows must be dropped"
            assert "fail_open=false" in daemon.cli("get-openflow", br).stdout
        else:
            wait_for(lambda: "fail_open=true" in daemon.cli("get-openflow", br).stdout,
                     timeout=10, what="fail-open")
            assert pings(net, h3, "10.8.0.1"), "standalone must fall back to learning"
            assert pings(net, h1, "10.8.0.2")
        # It comes back: the switch reconnects and the controller takes over again.
        ctl.start()
        wait_for(lambda: connected(daemon, br), timeout=20, what="reconnection")
        wait_for(lambda: "fail_open=false" in daemon.cli("get-openflow", br).stdout,
                 timeout=5, what="fail-open released")
        wait_for(lambda: pings(net, h3, "10.8.0.1", count=2), timeout=20,
                 what="new flow through the restarted controller")
        assert pings(net, h1, "10.8.0.2")
    finally:
        ctl.stop()
        if iperf and iperf.poll() is None:
            iperf.kill()
            iperf.wait(timeout=5)


# --- raw OpenFlow 1.3 over a passive controller target ---------------------------------

def msg(type_, body=b"", xid=1, version=4):
    return struct.pack("!BBHI", version, type_, 8 + len(body), xid) + body


class Raw:
    """A minimal OpenFlow peer (the test acts as the controller), OpenFlow 1.3 unless told
    otherwise."""

    def __init__(self, port, version=4):
        deadline = time.time() + 10
        while True:
            try:
                self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.buf = b""
        # Hello with a version bitmap holding only `version`.
        self.s.sendall(msg(0, struct.pack("!HHI", 1, 8, 1 << version), version=version))
        h = self.recv()
        assert h[1] == 0, h

    def recv(self, timeout=5.0):
        deadline = time.time() + timeout
        while True:
            if len(self.buf) >= 8:
                n = struct.unpack("!H", self.buf[2:4])[0]
                if len(self.buf) >= n:
                    m, self.buf = self.buf[:n], self.buf[n:]
                    return m
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no message")
            self.s.settimeout(left)
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("closed")
            self.buf += d

    def recv_type(self, t, timeout=5.0):
        deadline = time.time() + timeout
        while True:
            m = self.recv(max(0.05, deadline - time.time()))
            if m[1] == t:
                return m

    def error_for(self, data, xid):
        self.s.sendall(data)
        m = self.recv_type(1)
        assert struct.unpack("!I", m[4:8])[0] == xid, m
        return struct.unpack("!HH", m[8:12])

    def close(self):
        self.s.close()


def flow_mod13(oxms=b"", xid=1, instructions=b""):
    body = struct.pack("!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 100, 0xffffffff, 0xffffffff,
                       0xffffffff, 0)
    mlen = 4 + len(oxms)
    match = struct.pack("!HH", 1, mlen) + oxms
    match += b"\0" * ((8 - len(match) % 8) % 8)
    return msg(14, body + match + instructions, xid=xid)


def passive(daemon, net, br, n_hosts=2):
    daemon.cli("add-br", br)
    hs = hosts(daemon, net, br, n_hosts)
    port = free_port()
    daemon.cli("set-controller", br, f"ptcp:{port}:127.0.0.1")
    # Setting a controller empties the table (as in OVS); what a controller would install:
    daemon.cli("add-flow", br, "priority=0,actions=NORMAL")
    return port, hs


def test_hostile_input_gets_errors_and_changes_nothing(daemon, net):
    br = f"fh{net.tag}"[:15]
    port, (h1, h2) = passive(daemon, net, br)
    before = daemon.cli("dump-flows", br).stdout
    c = Raw(port)
    try:
        cases = [
            # (bytes, expected (type, code))
            (struct.pack("!BBHI", 4, 2, 4, 11), (1, 6)),           # length below the header
            (msg(99, xid=12), (1, 1)),                             # unknown type
            (msg(5, xid=13, version=1), (1, 0)),                   # wrong version
            (msg(14, b"\0" * 8, xid=14), (1, 6)),                  # truncated flow_mod
            (flow_mod13(struct.pack("!IH", 0x8000c802, 5), xid=15), (4, 6)),  # unknown OXM field
            (flow_mod13(struct.pack("!IH", 0x80001c02, 80), xid=16), (4, 9)),  # tcp_dst, no prereq
            (flow_mod13(struct.pack("!IB", 0x80000a02, 8), xid=17), (4, 1)),  # OXM cut short
            (msg(18, struct.pack("!HH4x", 0x77, 0), xid=18), (1, 2)),         # unknown multipart
            (msg(4, struct.pack("!II", 0x12345678, 1), xid=19), (1, 3)),      # unknown experimenter
            (flow_mod13(xid=20, instructions=struct.pack("!HH4x", 0x55, 8)), (3, 0)),  # bad inst
        ]
        for data, want in cases:
            xid = struct.unpack("!I", data[4:8])[0]
            got = c.error_for(data, xid)
            assert got == want, (xid, got, want)
        # Still alive: echo works, nothing was added, the datapath still forwards.
        c.s.sendall(msg(2, b"ping", xid=99))
        m = c.recv_type(3)
        assert m[8:] == b"ping"
        assert daemon.cli("dump-flows", br).stdout.count("actions") == before.count("actions")
        assert pings(net, h1, "10.8.0.2")
        # A random burst of garbage does not kill the daemon either.
        import random
        rnd = random.Random(5)
        for _ in range(200):
            n = rnd.randrange(8, 64)
            b = bytearray(rnd.getrandbits(8) for _ in range(n))
            b[0] = 4
            b[2:4] = struct.pack("!H", n)
            c.s.sendall(bytes(b))
        c.s.sendall(msg(2, b"alive", xid=100))
        m = c.recv_type(3, timeout=10)
        assert m[8:] == b"alive"
        assert pings(net, h1, "10.8.0.2")
    finally:
        c.close()


def packet_out13(port, data, xid):
    act = struct.pack("!HHIH6x", 0, 16, port, 0xffff)
    return msg(13, struct.pack("!IIH6x", 0xffffffff, 0xfffffffd, len(act)) + act + data, xid=xid)


def test_packet_out_burst_runs_in_order_before_the_barrier(daemon):
    """Thousands of packet-outs in one go (as the os-ken switch tester sends for its meter
    cases): all of them are out of the port when the barrier is answered, a refused one in
    the middle gets its own error first, and the burst is handled at a controller's pace."""
    br = f"fo{os.getpid() % 100000}"[:15]
    daemon.cli("add-br", br)
    daemon.cli("add-port", br, f"{br}n"[:15], "type=null", "ofport=1")
    # Only packet-outs may reach port 1: no table-miss NORMAL flooding what the bridge's own
    # interface sends (the kernel's IPv6 router solicitations and MLD reports).
    daemon.cli("set-fail-mode", br, "secure")
    daemon.cli("del-flows", br)
    port = free_port()
    daemon.cli("set-controller", br, f"ptcp:{port}:127.0.0.1")

    def tx():
        ports = daemon.json("dump-ports", br)["ports"]
        return next(p["tx_packets"] for p in ports if p["port"] == 1)

    c = Raw(port)
    try:
        before = tx()
        frame = bytes.fromhex("222222222222121111111111" "0800") + b"\x45" + b"\x11" * 985
        n = 2000
        burst = [packet_out13(1, frame, 1000 + i) for i in range(n)]
        burst.insert(n // 2, packet_out13(0, frame, 77))  # output to port 0: refused
        t0 = time.time()
        c.s.sendall(b"".join(burst) + msg(20, xid=78))
        err = c.recv_type(1, timeout=20)
        assert struct.unpack("!I", err[4:8])[0] == 77, err
        reply = c.recv_type(21, timeout=20)
        elapsed = time.time() - t0
        assert struct.unpack("!I", reply[4:8])[0] == 78
        assert tx() - before == n
        assert elapsed < 8, f"{n} packet-outs took {elapsed:.1f}s"
        # The connection is still in order: echo answers.
        c.s.sendall(msg(2, b"after", xid=79))
        assert c.recv_type(3)[8:] == b"after"
    finally:
        c.close()


def role_req(role, gen, xid):
    return msg(24, struct.pack("!I4xQ", role, gen), xid=xid)


def test_roles_and_generation_id(daemon, net):
    br = f"fr{net.tag}"[:15]
    port, _ = passive(daemon, net, br)
    a, b = Raw(port), Raw(port)
    try:
        a.s.sendall(role_req(2, 10, 1))
        r = a.recv_type(25)
        assert struct.unpack("!I4xQ", r[8:24]) == (2, 10)
        assert b.error_for(role_req(2, 5, 2), 2) == (11, 0)   # stale generation id
        b.s.sendall(role_req(2, 11, 3))
        r = b.recv_type(25)
        assert struct.unpack("!I", r[8:12])[0] == 2
        # A is now a slave: state changes are refused.
        match_all = flow_mod13(xid=4)
        assert a.error_for(match_all, 4) == (1, 10)
        a.s.sendall(role_req(0, 0, 5))
        r = a.recv_type(25)
        assert struct.unpack("!I", r[8:12])[0] == 3
        # Unknown role.
        assert a.error_for(role_req(7, 0, 6), 6) == (11, 2)
    finally:
        a.close()
        b.close()


def test_packet_in_rate_limit(daemon, net):
    br = f"fp{net.tag}"[:15]
    daemon.cli("add-br", br)
    daemon.cli("set-openflow", br, "controller_rate_limit=20", "controller_burst_limit=5")
    h1, h2 = hosts(daemon, net, br, 2)
    port = free_port()
    daemon.cli("set-controller", br, f"ptcp:{port}:127.0.0.1")
    daemon.cli("add-flow", br, "priority=0,actions=NORMAL")
    daemon.cli("add-flow", br, "priority=100,icmp,actions=CONTROLLER:64")
    c = Raw(port)
    try:
        t0 = time.time()
        net.ns(h1, "ping -c 300 -i 0.002 -W 1 10.8.0.2", check=False, timeout=30)
        n = 0
        try:
            while True:
                m = c.recv(timeout=1.0)
                if m[1] == 10:
                    n += 1
        except TimeoutError:
            pass
        elapsed = time.time() - t0
        assert n >= 5, n
        assert n <= 5 + 20 * elapsed + 5, (n, elapsed)
        out = daemon.cli("get-controller", br).stdout
        limited = int(re.search(r"rate-limited (\d+)", out).group(1))
        assert limited >= 300 - n - 20, out
        # The switch is fine: other traffic still flows by the NORMAL flow.
        daemon.cli("del-flows", br, "icmp")
        assert pings(net, h1, "10.8.0.2")
    finally:
        c.close()
