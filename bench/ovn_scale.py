"""OVN at scale on one chassis: how long ovn-controller 23.03 takes to program ferrovs, and
Open vSwitch 3.1 for comparison, when the northbound database holds a load balancer with
many VIPs and a stateful ACL over a large address set (the shape of a Kubernetes cluster's
services and network policies).

One central (NB, SB, northd), then one chassis at a time on it with the same logical port
bound: ferrovsd (private rundir, br-int with an internal port) and Debian's ovs-vswitchd
(dummy datapath, a dummy port). For each, in order:

  first     from ovn-controller's start to `ovn-nbctl --wait=hv sync` returning (each
            ovn-controller reports the sequence number once its switch has acknowledged the
            flows with a barrier): the whole table computed and installed;
  scratch   the same after stopping ovn-controller and deleting every flow;
  vip       one more VIP added, until synced (an incremental change);
  acl       one more ACL, until synced;
  dump      `ovs-ofctl dump-flows` of the whole table;
and the flow count, the switch's CPU seconds (utime+stime) spent in `first` and its
resident memory after it.

    bench/ovn_scale.py [--vips N] [--addrs N] [--bin-dir DIR] [--json FILE]

Run as root (ferrovsd's internal port). Prints a table; --json writes the numbers.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "integration" / "helpers"))
import ovn  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def rss_mib(pid):
    for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
        if ln.startswith("VmRSS:"):
            return int(ln.split()[1]) / 1024
    return 0.0


def transact(central, ops):
    r = ovn.run(["ovsdb-client", "transact", f"unix:{central.d}/nb.sock",
                 json.dumps(["OVN_Northbound", *ops])], timeout=300)
    if '"error"' in r.stdout:
        raise AssertionError(r.stdout[:2000])


def northbound(central, vips, addrs):
    """sw0 with vm1 (bound) and vm2, a load balancer of `vips` VIPs (30.x.y.z:80, one
    backend each) and an allow-related ACL whose source is an address set of `addrs`."""
    central.nbctl("ls-add", "sw0")
    for p, mac, ip in [("vm1", "00:00:00:00:00:01", "10.0.0.1"),
                       ("vm2", "00:00:00:00:00:02", "10.0.0.2")]:
        central.nbctl("lsp-add", "sw0", p)
        central.nbctl("lsp-set-addresses", p, f"{mac} {ip}")
    vipmap = [[f"30.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:80", "10.0.0.2:80"]
              for i in range(1, vips + 1)]
    addrset = [f"20.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in range(1, addrs + 1)]
    transact(central, [
        {"op": "insert", "table": "Load_Balancer",
         "row": {"name": "lb0", "protocol": "tcp", "vips": ["map", []]}},
        {"op": "insert", "table": "Address_Set", "row": {"name": "as1"}},
    ])
    # In pieces: one command line holds at most 128 KiB.
    for i in range(0, max(len(vipmap), len(addrset)), 2000):
        transact(central, [
            {"op": "mutate", "table": "Load_Balancer", "where": [["name", "==", "lb0"]],
             "mutations": [["vips", "insert", ["map", vipmap[i:i + 2000]]]]},
            {"op": "mutate", "table": "Address_Set", "where": [["name", "==", "as1"]],
             "mutations": [["addresses", "insert", ["set", addrset[i:i + 2000]]]]},
        ])
    central.nbctl("ls-lb-add", "sw0", "lb0")
    central.nbctl("acl-add", "sw0", "to-lport", "1002",
                  'outport == "vm1" && ip4.src == $as1 && tcp.dst == 80', "allow-related")
    central.nbctl("acl-add", "sw0", "to-lport", "1001", 'outport == "vm1" && ip4', "drop")


def sync(central):
    central.nbctl("--wait=hv", "--timeout=600", "sync")


def count_flows(rundir):
    t = time.monotonic()
    out = ovn.ofctl(rundir, "dump-flows", f"unix:{rundir}/br-int.mgmt").stdout
    took = time.monotonic() - t
    return sum(1 for ln in out.splitlines() if "actions=" in ln), took


class Ferrovs:
    name = "ferrovs"

    def __init__(self, work, bin_dir):
        d = self.rundir = work / "ferrovs"
        d.mkdir()
        self.log = open(d / "ferrovsd.log", "w")
        self.proc = subprocess.Popen([str(Path(bin_dir) / "ferrovsd"), "--rundir", str(d)],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        ovn.wait_path(d / "ferrovsd.ctl")
        self.db = f"unix:{d}/db.sock"
        self.pid = self.proc.pid
        self.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "fail_mode=secure")
        self.vsctl("add-port", "br-int", "fvscale1", "--", "set", "interface", "fvscale1",
                   "type=internal", "external_ids:iface-id=vm1")

    def vsctl(self, *args):
        return ovn.run(["ovs-vsctl", f"--db={self.db}", "--timeout=30", *args]).stdout

    def stop(self):
        ovn.run(["ovs-appctl", "-t", str(self.rundir / "ferrovsd.ctl"), "exit"], check=False)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class Ovs:
    name = "ovs"

    def __init__(self, work):
        self.c = ovn.OvsChassis(work, "ovs")
        self.rundir, self.db = self.c.rundir, self.c.db
        self.pid = int((self.rundir / "vswitchd.pid").read_text())
        self.c.bind("dscale1", "vm1")

    def stop(self):
        self.c.stop()


def measure(central, work, sw):
    r = {}
    ctl = ovn.Controller(work, central, sw.db, sw.rundir, f"{sw.name}-scale")
    cpu0, t = cpu_seconds(sw.pid), time.monotonic()
    sync(central)
    r["first_s"] = time.monotonic() - t
    r["switch_cpu_s"] = cpu_seconds(sw.pid) - cpu0
    r["ovn_controller_cpu_s"] = cpu_seconds(int((ctl.d / "ovn-controller.pid").read_text()))
    r["recomputes"] = ctl.appctl("coverage/read-counter", "lflow_run").strip()
    r["rss_mib"] = rss_mib(sw.pid)
    r["flows"], r["dump_s"] = count_flows(sw.rundir)
    ctl.stop()
    ovn.ofctl(sw.rundir, "del-flows", f"unix:{sw.rundir}/br-int.mgmt")
    t = time.monotonic()
    ctl.start()
    sync(central)
    r["scratch_s"] = time.monotonic() - t
    if count_flows(sw.rundir)[0] != r["flows"]:
        raise AssertionError("the table installed from scratch differs in size")
    t = time.monotonic()
    central.nbctl("lb-add", "lb0", "31.0.0.1:80", "10.0.0.2:80", "tcp")
    sync(central)
    r["vip_s"] = time.monotonic() - t
    t = time.monotonic()
    central.nbctl("acl-add", "sw0", "to-lport", "1003",
                  'outport == "vm1" && ip4.src == 40.0.0.1 && udp.dst == 53', "allow-related")
    sync(central)
    r["acl_s"] = time.monotonic() - t
    errors = ctl.openflow_errors()
    r["openflow_errors"] = len(errors)
    ctl.stop()
    # Undo the two changes for the next switch.
    central.nbctl("lb-del", "lb0", "31.0.0.1:80")
    central.nbctl("acl-del", "sw0", "to-lport", "1003",
                  'outport == "vm1" && ip4.src == 40.0.0.1 && udp.dst == 53')
    central.sbctl("chassis-del", f"{sw.name}-scale")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vips", type=int, default=10000)
    ap.add_argument("--addrs", type=int, default=20000)
    ap.add_argument("--bin-dir", default=os.environ.get(
        "FERROVS_BIN_DIR", os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"),
                                        "release")))
    ap.add_argument("--json")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ferrovs-ovnscale-"))
    central = ovn.Central(work)
    results = {}
    try:
        northbound(central, a.vips, a.addrs)
        for make in (lambda: Ferrovs(work, a.bin_dir), lambda: Ovs(work)):
            sw = make()
            try:
                results[sw.name] = measure(central, work, sw)
            finally:
                sw.stop()
    finally:
        central.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)
    keys = ["flows", "first_s", "scratch_s", "vip_s", "acl_s", "dump_s", "switch_cpu_s",
            "ovn_controller_cpu_s", "recomputes", "rss_mib", "openflow_errors"]
    print(f"OVN scale: {a.vips} VIPs, {a.addrs} addresses")
    print(f"{'':16}" + "".join(f"{n:>12}" for n in results))
    for k in keys:
        print(f"{k:16}" + "".join(
            f"{v[k]:>12.3f}" if isinstance(v[k], float) else f"{v[k]:>12}"
            for v in results.values()))
    if a.json:
        Path(a.json).write_text(json.dumps({"benchmark": "ovn_scale", "vips": a.vips,
                                            "addrs": a.addrs, "load": os.getloadavg(),
                                            "results": results}, indent=1))
    bad = [n for n, v in results.items() if v["openflow_errors"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
