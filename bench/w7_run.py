"""W7: tunnel encapsulation and decapsulation on one core, ferrovs and OVS-DPDK 3.1 in the
same run. Driven by bench/w7.sh; see bench/README.md and docs/benchmarks.md.

  encap:  W1 pcap --> br-int --> tunnel port ==> br-phy (underlay) --> null
  decap:  encapsulated pcap --> br-phy --> LOCAL (tnl_pop) ==> tunnel port --> br-int --> null

Both switches get the same two bridges, the same OpenFlow rules (br-int
`in_port=1,actions=output:2`; br-phy `in_port=LOCAL,actions=output:2` +
`in_port=2,actions=LOCAL` for encap, `in_port=1,actions=LOCAL` for decap), the same tunnel
port (`remote_ip`, `key`), the same underlay address on br-phy's internal port (a TAP device
holding LOCAL_IP/24 in a network namespace of the run's own) and the same input files, and
forward on the same core:

* ferrovs: `ferrovs-bench w7` (the daemon's Switch and poll loop on the calling thread, pinned
  with taskset); the remote's MAC comes from an ARP reply arriving on br-phy's port 2.
* OVS-DPDK: Debian's ovs-vswitchd-dpdk (private ovsdb-server and vswitchd inside the
  namespace, one PMD on the same core), `net_pcap` rx port and `net_null` sink,
  `tnl/neigh/set br-phy REMOTE_IP REMOTE_MAC` for the next hop.

Delivered Mpps = packets the null sink was given per second (a packet crosses two bridges,
so receive counters would count it twice on ferrovs), cycles/packet = cycles of the
forwarding core per packet (ferrovs: TSC over the window / delivered; OVS: the PMD's "avg
cycles per packet"). Before timing, each direction is checked: ferrovs replays the 1,000-flow
input once into a pcap sink and the first frame is parsed (VXLAN/Geneve with the VNI around an
input frame for encap, a bare input frame for decap); OVS must show a datapath flow with
`tnl_push` (encap) or `tnl_pop` (decap). A cell that cannot be measured prints FAILED and why,
never a number.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OVS_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
EP = {"local_ip": "172.31.7.1", "local_mac": "02:00:00:00:07:01",
      "remote_ip": "172.31.7.2", "remote_mac": "02:00:00:00:07:02", "vni": 7}
HUGE_SYSFS = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"


def log(msg):
    print(f"[w7 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(cmd, check=True, timeout=120):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: {(r.stderr or r.stdout).strip()[-400:]}")
    return r


def load():
    return [round(x, 2) for x in os.getloadavg()]


def ep_args(proto):
    return ["--proto", proto, "--local-ip", EP["local_ip"], "--local-mac", EP["local_mac"],
            "--remote-ip", EP["remote_ip"], "--remote-mac", EP["remote_mac"],
            "--vni", str(EP["vni"])]


class Netns:
    """A network namespace with the underlay TAP device br-phy (LOCAL_IP/24, LOCAL_MAC)."""

    def __init__(self, name):
        self.name = name
        sh(["ip", "netns", "add", name])
        self.run("ip link set lo up")
        self.run("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")

    def run(self, cmd, check=True):
        return sh(["ip", "netns", "exec", self.name, *cmd.split()], check=check)

    def tap(self, persistent):
        """Gives br-phy the underlay address; `persistent`: create the TAP device first
        (ferrovs attaches to it), else it is OVS's internal port, already there."""
        if persistent:
            self.run("ip tuntap add dev br-phy mode tap")
        self.run(f"ip link set br-phy address {EP['local_mac']}")
        self.run(f"ip addr replace {EP['local_ip']}/24 dev br-phy")
        self.run("ip link set br-phy up")

    def close(self):
        sh(["ip", "netns", "del", self.name], check=False)


# --- checks of captured frames ---------------------------------------------------------------

def pcap_frames(path, n=1):
    data = Path(path).read_bytes()
    if len(data) < 24:
        return []
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    out, at = [], 24
    while at + 16 <= len(data) and len(out) < n:
        incl = struct.unpack(endian + "I", data[at + 8:at + 12])[0]
        out.append(data[at + 16:at + 16 + incl])
        at += 16 + incl
    return out


def check_encap(frame, proto, inputs):
    """Why `frame` is not `proto` to the remote with the VNI around one of `inputs`, or None."""
    if len(frame) < 50 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return "not IPv4/UDP"
    if frame[0:6] != bytes.fromhex(EP["remote_mac"].replace(":", "")):
        return "outer destination MAC is not the remote's"
    if frame[26:30] != bytes(map(int, EP["local_ip"].split("."))) or \
            frame[30:34] != bytes(map(int, EP["remote_ip"].split("."))):
        return "outer addresses are not local -> remote"
    port = struct.unpack("!H", frame[36:38])[0]
    if port != (6081 if proto == "geneve" else 4789):
        return f"outer UDP port {port}"
    vni = struct.unpack("!I", frame[46:50])[0] >> 8
    if vni != EP["vni"]:
        return f"VNI {vni}"
    if proto == "vxlan" and frame[42] != 0x08:
        return "VXLAN flags"
    if frame[50:] not in inputs:
        return "the inner frame is none of the input frames"
    return None


def verify_ferrovs(args, ns, work, direction, pcap, inputs):
    cap = work / f"ferrovs-{direction}.pcap"
    r = sh(["ip", "netns", "exec", ns.name, args.bins / "ferrovs-bench", "w7", "--dir", direction,
            "--pcap", pcap, "--underlay", "br-phy", "--capture", cap, "--json",
            *ep_args(args.proto)], timeout=60)
    d = json.loads(r.stdout)
    frames = pcap_frames(cap, 1)
    if d["delivered"] == 0 or not frames:
        return {"ok": False, "reason": "nothing delivered to the capture sink"}
    why = check_encap(frames[0], args.proto, inputs) if direction == "encap" else \
        (None if frames[0] in inputs else "the frame is none of the inner input frames")
    return {"ok": why is None, "reason": why, "delivered": d["delivered"],
            "received": d["received"], "first_frame": frames[0].hex()}


# --- ferrovs -----------------------------------------------------------------------------------

def run_ferrovs(args, ns, direction, pcap):
    cmd = ["ip", "netns", "exec", ns.name, "taskset", "-c", str(args.core),
           args.bins / "ferrovs-bench", "w7", "--dir", direction, "--pcap", pcap,
           "--underlay", "br-phy", "--seconds", str(args.seconds), "--json",
           *ep_args(args.proto)]
    l0 = load()
    r = sh(cmd, timeout=args.seconds * 3 + 60)
    d = json.loads(r.stdout)
    if d["delivered"] == 0:
        raise RuntimeError("nothing delivered")
    return {"status": "ok", "mpps": round(d["mpps"], 3),
            "cycles_per_packet": round(d["cycles_per_packet"], 1),
            "delivered": d["delivered"], "received": d["received"],
            "seconds": round(d["seconds"], 3), "load": l0,
            "cpu_share": round(d["cpu_share"], 3) if d.get("cpu_share") is not None else None,
            "counters": {k: v for k, v in d["counters"].items() if v},
            "command": " ".join(map(str, cmd[4:]))}


# --- OVS-DPDK ----------------------------------------------------------------------------------

class Ovs:
    def __init__(self, args, ns, work, mem):
        self.args, self.ns, self.dir = args, ns, work / "ovs"
        for d in ("run", "db", "log", "etc"):
            (self.dir / d).mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ, OVS_RUNDIR=str(self.dir / "run"),
                        OVS_DBDIR=str(self.dir / "db"), OVS_LOGDIR=str(self.dir / "log"),
                        OVS_SYSCONFDIR=str(self.dir / "etc"))
        self.prefix = f"w7ovs-{os.getpid()}"
        self.mem = mem

    def ex(self, *cmd, check=True, timeout=60):
        r = subprocess.run(["ip", "netns", "exec", self.ns.name, *map(str, cmd)], env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, cmd))}: {(r.stderr or r.stdout).strip()[-400:]}")
        return r.stdout

    def vsctl(self, *a, check=True):
        return self.ex("ovs-vsctl", f"--db=unix:{self.dir}/run/db.sock", "--timeout=60", *a,
                       check=check)

    def appctl(self, *a, check=True):
        return self.ex("ovs-appctl", "-t", self.dir / "run/ovs-vswitchd.ctl", "--timeout=60", *a,
                       check=check)

    def start(self):
        d = self.dir
        self.ex("ovsdb-tool", "create", d / "db/conf.db", OVS_SCHEMA)
        self.ex("ovsdb-server", d / "db/conf.db", f"--remote=punix:{d}/run/db.sock",
                f"--pidfile={d}/run/ovsdb-server.pid", f"--unixctl={d}/run/ovsdb-server.ctl",
                f"--log-file={d}/log/ovsdb-server.log", "--detach")
        self.vsctl("--no-wait", "init")
        extra = f"--file-prefix={self.prefix} --no-pci"
        cfg = ["other_config:dpdk-init=true",
               f"other_config:dpdk-lcore-mask={1 << self.args.main_core:#x}",
               f"other_config:pmd-cpu-mask={1 << self.args.core:#x}"]
        if self.mem == "no-huge":
            extra += " --no-huge --legacy-mem -m 2048"
        else:
            cfg.append("other_config:dpdk-socket-mem=1024")
        cfg.append(f'other_config:dpdk-extra="{extra}"')
        self.vsctl("--no-wait", "set", "Open_vSwitch", ".", *cfg)
        self.ex(OVS_VSWITCHD, f"unix:{d}/run/db.sock", f"--pidfile={d}/run/ovs-vswitchd.pid",
                f"--unixctl={d}/run/ovs-vswitchd.ctl", f"--log-file={d}/log/ovs-vswitchd.log",
                "--detach", timeout=120)
        deadline = time.time() + 60
        while self.vsctl("get", "Open_vSwitch", ".", "dpdk_initialized", check=False).strip() != "true":
            if time.time() > deadline:
                raise RuntimeError("OVS-DPDK did not initialise DPDK in 60 s")
            time.sleep(0.1)

    def stop(self):
        for name in ("ovs-vswitchd", "ovsdb-server"):
            pidf = self.dir / f"run/{name}.pid"
            try:
                pid = int(pidf.read_text())
            except (OSError, ValueError):
                continue
            self.ex("ovs-appctl", "-t", self.dir / f"run/{name}.ctl", "--timeout=10", "exit",
                    check=False, timeout=20)
            for _ in range(100):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}", ignore_errors=True)

    def port_error(self, name):
        e = self.vsctl("get", "Interface", name, "error", check=False).strip()
        return None if e in ("", "[]") else e

    def dpdk_port(self, br, name, ofport, devargs):
        self.vsctl("add-port", br, name, "--", "set", "Interface", name, "type=dpdk",
                   f'options:dpdk-devargs="{devargs}"', f"ofport_request={ofport}")
        e = self.port_error(name)
        if e:
            raise RuntimeError(f"port {name}: {e}")

    def flows(self, br, rules):
        f = self.dir / f"{br}.flows"
        f.write_text("\n".join(rules) + "\n")
        self.ex("ovs-ofctl", "replace-flows", br, f)

    def topology(self, direction):
        """Both bridges without the pcap port (added per cell)."""
        for br in ("br-int", "br-phy"):
            self.vsctl("--if-exists", "del-br", br)
        self.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
                   f"other-config:hwaddr={EP['local_mac']}")
        self.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev")
        self.ns.tap(persistent=False)
        tun = ["type=" + self.args.proto, f"options:remote_ip={EP['remote_ip']}",
               f"options:key={EP['vni']}"]
        if direction == "encap":
            self.vsctl("add-port", "br-int", "vx0", "--", "set", "Interface", "vx0", *tun,
                       "ofport_request=2")
            self.dpdk_port("br-phy", "p1", 2, "net_null1,no-rx=1")
            self.flows("br-int", ["in_port=1,actions=output:2"])
            self.flows("br-phy", ["in_port=LOCAL,actions=output:2", "in_port=2,actions=LOCAL"])
        else:
            self.vsctl("add-port", "br-int", "vx0", "--", "set", "Interface", "vx0", *tun,
                       "ofport_request=1")
            self.dpdk_port("br-int", "p1", 2, "net_null1,no-rx=1")
            self.flows("br-int", ["in_port=1,actions=output:2"])
            self.flows("br-phy", ["in_port=1,actions=LOCAL"])
        self.appctl("tnl/neigh/set", "br-phy", EP["remote_ip"], EP["remote_mac"])
        deadline = time.time() + 10
        while "br-phy" not in self.appctl("ovs/route/lookup", EP["remote_ip"], check=False):
            if time.time() > deadline:
                raise RuntimeError("OVS has no route to the remote via br-phy: "
                                   + self.appctl("ovs/route/show", check=False))
            time.sleep(0.1)

    def sink_tx(self, br):
        out = self.ex("ovs-ofctl", "dump-ports", br, "2")
        m = re.search(r"tx pkts=(\d+)", out)
        if not m:
            raise RuntimeError(f"no tx counter for {br} port 2: {out}")
        return int(m.group(1))

    def pmd_tid(self):
        pid = (self.dir / "run/ovs-vswitchd.pid").read_text().strip()
        for t in Path(f"/proc/{pid}/task").iterdir():
            if (t / "comm").read_text().startswith("pmd-c"):
                return t.name
        return None

    def cell(self, direction, pcap):
        src_br, sink_br = ("br-int", "br-phy") if direction == "encap" else ("br-phy", "br-int")
        self.vsctl("--if-exists", "del-port", src_br, "p0")
        self.appctl("revalidator/purge")
        self.dpdk_port(src_br, "p0", 1, f"net_pcap0,rx_pcap={pcap},infinite_rx=1")
        time.sleep(self.args.warmup)
        dp = self.appctl("dpctl/dump-flows", "netdev@ovs-netdev", check=False)
        want = "tnl_push(" if direction == "encap" else "tnl_pop("
        seen = [l for l in dp.splitlines() if want in l]
        if not seen:
            raise RuntimeError(f"no datapath flow with {want}: {dp.strip()[-600:]}")
        tid = self.pmd_tid()
        l0 = load()
        self.appctl("dpif-netdev/pmd-stats-clear")
        tx0, t0 = self.sink_tx(sink_br), time.time()
        c0 = oncpu(tid)
        time.sleep(self.args.seconds)
        tx1, t1 = self.sink_tx(sink_br), time.time()
        c1 = oncpu(tid)
        st = pmd_stats(self.appctl("dpif-netdev/pmd-stats-show"))
        delivered = tx1 - tx0
        if delivered <= 0:
            raise RuntimeError(f"the sink got nothing (PMD: {st})")
        cell = {"status": "ok", "mpps": round(delivered / (t1 - t0) / 1e6, 3),
                "cycles_per_packet": st.get("cycles_per_packet"), "delivered": delivered,
                "seconds": round(t1 - t0, 3), "load": l0, "pmd": st,
                "datapath_flow": seen[0].strip()}
        if c0 is not None and c1 is not None:
            cell["cpu_share"] = round((c1 - c0) / 1e9 / (t1 - t0), 3)
        return cell


def oncpu(tid):
    try:
        return int(Path(f"/proc/{tid}/schedstat").read_text().split()[0])
    except (OSError, TypeError, ValueError, IndexError):
        return None


def pmd_stats(text):
    keys = {"packets received": "packets", "packet recirculations": "recirculations",
            "avg. datapath passes per packet": "passes_per_packet", "emc hits": "emc_hits",
            "smc hits": "smc_hits", "simple match hits": "simple_match_hits",
            "megaflow hits": "megaflow_hits",
            "avg. subtable lookups per megaflow hit": "avg_subtable_lookups",
            "miss with success upcall": "upcalls_ok", "miss with failed upcall": "upcalls_failed",
            "avg cycles per packet": "cycles_per_packet"}
    st, in_pmd = {}, False
    for line in text.splitlines():
        if line.startswith("pmd thread"):
            in_pmd = True
            continue
        if line.startswith("main thread"):
            in_pmd = False
        if not in_pmd or ":" not in line:
            continue
        k, _, v = line.strip().partition(":")
        if k in keys and v.split():
            x = v.split()[0]
            st[keys[k]] = float(x) if "." in x else int(x)
    return st


# --- hugepages ---------------------------------------------------------------------------------

class Huge:
    """At least 640 free 2 MiB pages and hugetlbfs mounted, undone at exit; else no-huge."""

    def __init__(self, no_huge):
        self.orig, self.mounted, self.mode, self.note = None, False, "hugepages", ""
        if no_huge or not os.access(HUGE_SYSFS, os.W_OK):
            self.mode, self.note = "no-huge", "--no-huge or hugepages not writable"
            return
        free = self.free()
        if free < 640:
            self.orig = int(Path(HUGE_SYSFS).read_text())
            try:
                Path(HUGE_SYSFS).write_text(str(self.orig + 1024 - free))
            except OSError:
                pass
            free = self.free()
        if free < 640:
            self.mode, self.note = "no-huge", f"only {free} free 2 MiB hugepages"
            return
        if not any(l.split()[2] == "hugetlbfs" for l in open("/proc/mounts")):
            os.makedirs("/dev/hugepages", exist_ok=True)
            if sh(["mount", "-t", "hugetlbfs", "nodev", "/dev/hugepages"], check=False).returncode:
                self.mode, self.note = "no-huge", "cannot mount hugetlbfs"
                return
            self.mounted = True
        self.note = f"{free} free 2 MiB hugepages"

    @staticmethod
    def free():
        for l in open("/proc/meminfo"):
            if l.startswith("HugePages_Free:"):
                return int(l.split()[1])
        return 0

    def undo(self):
        if self.mounted:
            sh(["umount", "/dev/hugepages"], check=False)
        if self.orig is not None:
            try:
                Path(HUGE_SYSFS).write_text(str(self.orig))
            except OSError:
                pass


# --- the run -----------------------------------------------------------------------------------

def cellstr(c):
    if not c:
        return "not run"
    if c.get("status") != "ok":
        return "FAILED"
    s = f"{c['mpps']:.2f} ({c['cycles_per_packet']:.0f})" if c.get("cycles_per_packet") \
        else f"{c['mpps']:.2f}"
    if isinstance(c.get("cpu_share"), float) and c["cpu_share"] < 0.95:
        s += f" *{100 * c['cpu_share']:.0f}%"
    return s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bins", required=True, type=Path)
    p.add_argument("--flows", default="1 1000 10000")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--proto", default="vxlan", choices=("vxlan", "geneve"))
    p.add_argument("--dirs", default="encap,decap")
    p.add_argument("--only", default="ferrovs,ovs")
    p.add_argument("--core", type=int, default=1)
    p.add_argument("--main-core", type=int, default=0)
    p.add_argument("--pcap-dir", type=Path)
    p.add_argument("--json")
    p.add_argument("--no-huge", action="store_true")
    p.add_argument("--keep-tmp", action="store_true")
    args = p.parse_args()
    flows = [int(f) for f in args.flows.split()]
    dirs = [d for d in args.dirs.split(",") if d]
    only = set(args.only.split(","))
    work = Path(tempfile.mkdtemp(prefix="ferrovs-w7-"))
    pcaps = args.pcap_dir or work / "pcaps"
    pcaps.mkdir(parents=True, exist_ok=True)
    bench = args.bins / "ferrovs-bench"
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t_start = time.time()
    load_before = load()
    res = {str(f): {} for f in flows}
    verified = {}
    failed = False
    inputs = {}
    for f in sorted(set(flows) | {1000}):
        w1, w7 = pcaps / f"w1-{f}.pcap", pcaps / f"w7-{args.proto}-{f}.pcap"
        if not w1.exists():
            sh([bench, "gen-w1", "--flows", f, "--out", w1])
        if not w7.exists():
            sh([bench, "gen-w7", "--flows", f, "--out", w7, *ep_args(args.proto)])
        inputs[f] = {"encap": w1, "decap": w7}
    w1_frames = set(pcap_frames(inputs[1000]["encap"], 10000))
    tag = f"{os.getpid() % 100000}"
    huge = None
    if "ferrovs" in only:
        ns = Netns(f"w7f{tag}")
        try:
            ns.tap(persistent=True)
            for d in dirs:
                try:
                    verified[f"ferrovs_{d}"] = v = verify_ferrovs(
                        args, ns, work, d, inputs[1000][d], w1_frames)
                    log(f"ferrovs {d} check: {'ok' if v['ok'] else 'FAILED: ' + str(v['reason'])}")
                except Exception as e:
                    verified[f"ferrovs_{d}"] = {"ok": False, "reason": str(e)}
                    log(f"ferrovs {d} check FAILED: {e}")
                for f in flows:
                    col = f"ferrovs_{d}"
                    try:
                        if not verified[col]["ok"]:
                            raise RuntimeError("the check before timing failed: "
                                               + str(verified[col]["reason"]))
                        res[str(f)][col] = c = run_ferrovs(args, ns, d, inputs[f][d])
                        log(f"ferrovs {d} {f} flows: {cellstr(c)}")
                    except Exception as e:
                        res[str(f)][col] = {"status": "failed", "reason": str(e)}
                        failed = True
                        log(f"ferrovs {d} {f} flows FAILED: {e}")
        finally:
            ns.close()
    ovs_version = ""
    if "ovs" in only:
        huge = Huge(args.no_huge)
        ns = Netns(f"w7o{tag}")
        ovs = Ovs(args, ns, work, huge.mode)
        try:
            ovs_version = sh([OVS_VSWITCHD, "--version"]).stdout.split("\n")[0].split()[-1]
            ovs.start()
            for d in dirs:
                col = f"ovs_{d}"
                try:
                    ovs.topology(d)
                except Exception as e:
                    for f in flows:
                        res[str(f)][col] = {"status": "failed", "reason": f"set-up: {e}"}
                    failed = True
                    log(f"OVS {d} set-up FAILED: {e}")
                    continue
                for f in flows:
                    try:
                        res[str(f)][col] = c = ovs.cell(d, inputs[f][d])
                        verified.setdefault(col, {"ok": True, "datapath_flow": c["datapath_flow"]})
                        log(f"OVS-DPDK {d} {f} flows: {cellstr(c)}")
                    except Exception as e:
                        res[str(f)][col] = {"status": "failed", "reason": str(e)}
                        failed = True
                        log(f"OVS-DPDK {d} {f} flows FAILED: {e}")
        except Exception as e:
            for f in flows:
                for d in dirs:
                    res[str(f)].setdefault(f"ovs_{d}", {"status": "failed", "reason": str(e)})
            failed = True
            log(f"OVS-DPDK FAILED: {e}")
        finally:
            ovs.stop()
            ns.close()
            huge.undo()
    ratios = {}
    for f in flows:
        for d in dirs:
            a, b = res[str(f)].get(f"ferrovs_{d}"), res[str(f)].get(f"ovs_{d}")
            if a and b and a.get("status") == "ok" and b.get("status") == "ok":
                ratios.setdefault(str(f), {})[d] = round(a["mpps"] / b["mpps"], 2)
    load_after = load()
    print(f"\nW7 ({args.proto}), one core (core {args.core}), delivered Mpps (cycles/packet); "
          f"{args.seconds:g} s windows; load {load_before} -> {load_after}"
          + (f"; DPDK memory: {huge.mode}" if huge else ""))
    cols = [f"{s}_{d}" for d in dirs for s in ("ferrovs", "ovs")]
    head = ["flows"]
    for d in dirs:
        head += [f"ferrovs {d}", f"OVS-DPDK {d}", "ratio"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for f in flows:
        row = [format(f, ",")]
        for d in dirs:
            row += [cellstr(res[str(f)].get(f"ferrovs_{d}")), cellstr(res[str(f)].get(f"ovs_{d}")),
                    f"{ratios[str(f)][d]:.2f}x" if d in ratios.get(str(f), {}) else "-"]
        print("| " + " | ".join(row) + " |")
    for f in flows:
        for c in cols:
            x = res[str(f)].get(c)
            if x and x.get("status") != "ok":
                print(f"FAILED {c} flows={f}: {x.get('reason')}")
    for k, v in verified.items():
        print(f"check {k}: {'ok' if v.get('ok') else 'FAILED'}"
              + (f" ({v['datapath_flow'][:160]})" if v.get("datapath_flow") else "")
              + (f" ({v['reason']})" if v.get("reason") else ""))
    if args.json:
        doc = {"benchmark": "W7", "proto": args.proto, "started": started,
               "duration_s": round(time.time() - t_start), "seconds": args.seconds,
               "warmup_s": args.warmup, "core": args.core, "load": load_before,
               "load_after": load_after, "memory": huge.mode if huge else None,
               "memory_note": huge.note if huge else None,
               "versions": {"ovs": ovs_version}, "endpoints": EP, "columns": cols,
               "results": res, "ratios": ratios, "verified": verified}
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"JSON written to {args.json}")
    if args.keep_tmp or failed:
        log(f"files kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 3 if failed or not all(v.get("ok") for v in verified.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
