#!/usr/bin/env python3
"""W6 with real guests: iperf3 TCP between two QEMU guests on one bridge, through ferrovs and
through OVS-DPDK 3.1, the same guests and the same run.

The guests are the ones `tests/integration/test_vm.py` boots (helpers/vm.py: Debian's kernel and
a busybox initramfs built here, one virtio-net NIC on a vhost-user socket, no MSI-X). Each
switch gets two `dpdkvhostuser` ports on one bridge (the switch is the vhost-user server; QEMU
connects), with its default `NORMAL` flow: ferrovsd pinned to `--sw-core` as in W3/W6, and
OVS-DPDK (bench/ovs_dpdk.py: Debian's ovs-vswitchd-dpdk by its path, a private ovsdb-server,
the PMD on `--sw-core`, 2 MiB hugepages). The guests are not pinned. The server guest runs
`iperf3 -s -1`, the client pings it until it answers, then runs `iperf3 -c -t SECONDS`; the
figure is the receiver's Mbit/s. It is checked against the switch's own counters: the bridge's
flows must have counted at least the bytes iperf3 received (`ovs-ofctl dump-aggregate`).

Configurations, alternated over `--rounds` (a fresh switch and fresh guests each time):

  ferrovs      ferrovsd, openflow module, NORMAL (offloads negotiated: checksum, TSO)
  ovs          OVS-DPDK 3.1 defaults (userspace TSO off, as OVS ships it)
  ovs-tso      OVS-DPDK 3.1 with other_config:userspace-tso-enable=true (only with --only:
               OVS 3.1 then drops the guests' TCP segments, "Packet dropped: No TCP checksum
               support" on the receiving port, and iperf3 never completes)

Accelerator: TCG unless FERROVS_VM_ACCEL says otherwise (helpers/vm.py explains why): the
guests' emulated CPUs, not the switch, set most of the figure, for every switch alike.

`--packed`: both guests' NICs have packed virtqueues (`virtio-net-pci,...,packed=on`), with every
switch; split ones otherwise.

Usage: sudo python3 bench/w6_vm.py --bins target/release [--seconds 10] [--rounds 2]
           [--only ferrovs,ovs,ovs-tso] [--json FILE] [--packed]
A configuration that cannot be set up or does not pass traffic prints FAILED and why.
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "integration" / "helpers"))
from ovs_dpdk import Hugepages, Ovs, ensure_installed  # noqa: E402
from vm import CLIENT_JOB, SERVER_JOB, Guest, iperf3_result  # noqa: E402
from w3_run import sh, start_switch, stop_switch  # noqa: E402

BOOT = 240.0  # seconds for a TCG guest to boot on a loaded machine
PACKED = False  # --packed
IPS = ("10.215.0.1", "10.215.0.2")


def mac(i):
    return f"52:54:00:{os.getpid() >> 8 & 0xff:02x}:{os.getpid() & 0xff:02x}:{i:02x}"


def flow_bytes(target):
    """Bytes the bridge's flows have counted (`ovs-ofctl dump-aggregate`): both directions of
    the guests' traffic through the NORMAL flow. (OVS-DPDK 3.1 reports no OpenFlow port
    counters for vhost-user ports, `?` in dump-ports, so port counters cannot be compared.)"""
    r = sh(["ovs-ofctl", "dump-aggregate", target])
    m = re.search(r"byte_count=(\d+)", r.stdout)
    if not m:
        raise RuntimeError(f"no byte_count in: {r.stdout[-300:]}")
    return int(m.group(1))


def guests_iperf(work, tag, socks, target, seconds):
    """Boots the two guests on `socks`, runs iperf3 between them; returns the result dict."""
    guests = []
    try:
        guests.append(Guest(work, f"{tag}-g1", socks[0], mac(1), SERVER_JOB.format(ip=IPS[0]),
                            packed=PACKED))
        guests.append(Guest(work, f"{tag}-g2", socks[1], mac(2),
                            CLIENT_JOB.format(ip=IPS[1], peer=IPS[0], seconds=seconds,
                                              opts=""), packed=PACKED))
        t0 = time.time()
        guests[0].wait_text(r"IPERF-SERVER-READY", BOOT)
        out = guests[1].wait_text(r"IPERF-DONE|IPERF-FAILED|PING-FAILED|VM-JOB-EXIT",
                                  BOOT + 60 + 3 * seconds)
        if "IPERF-DONE" not in out:
            raise RuntimeError("the client guest did not finish iperf3: " + out[-400:])
        res = iperf3_result(out)
        if not res:
            raise RuntimeError("no iperf3 receiver line: " + out[-400:])
        nbytes, mbits = res
        # What iperf3 counted crossed the switch: its flows counted at least those bytes
        # (flow statistics reach the rules within a revalidation round or two).
        deadline = time.time() + 15
        while (fb := flow_bytes(target)) < nbytes:
            if time.time() > deadline:
                raise RuntimeError(f"the flows counted {fb} bytes, iperf3 received {nbytes:.0f}")
            time.sleep(0.5)
        # Bit 34 of what each guest's driver negotiated: VIRTIO_F_RING_PACKED.
        rings = ["packed" if g.features(10)[34] == "1" else "split" for g in guests]
        if rings != ["packed" if PACKED else "split"] * 2:
            raise RuntimeError(f"the guests' rings are {rings}")
        return {"mbit_s": mbits, "bytes": nbytes, "flow_bytes": fb, "rings": rings,
                "wall_s": round(time.time() - t0, 1)}
    finally:
        for g in guests:
            g.stop()


def run_ferrovs(bins, work, args):
    rundir = work / "ferrovs"
    rundir.mkdir()
    sw, log = start_switch(bins, rundir, args)
    try:
        f = [str(bins / "ferrovs"), "--rundir", str(rundir)]
        sh(f + ["add-br", "brvm"])
        for i in (1, 2):
            sh(f + ["add-port", "brvm", f"vm{i}", "type=dpdkvhostuser", f"ofport={i}"])
        deadline = time.time() + 10
        while not all((rundir / f"vm{i}").exists() for i in (1, 2)):
            if time.time() > deadline:
                raise RuntimeError("vhost-user sockets did not appear")
            time.sleep(0.1)
        return guests_iperf(work, "ferrovs", [rundir / "vm1", rundir / "vm2"],
                            f"unix:{rundir}/brvm.mgmt", args.seconds)
    finally:
        stop_switch(sw)
        log.close()
        shutil.rmtree(rundir, ignore_errors=True)


def run_ovs(work, name, args, mem):
    base = work / name
    oc = {"userspace-tso-enable": "true"} if name == "ovs-tso" else {}
    ovs = Ovs(base, f"w6vm{os.getpid()}{name.replace('-', '')}", args.sw_core, mem.mode,
              other_config=oc)
    try:
        mem.ensure()
        ovs.start()
        for i in (1, 2):
            ovs.add_port(f"vm{i}", i, "dpdkvhostuser")
        ovs.wait_ports(["vm1", "vm2"])
        return guests_iperf(work, name, [ovs.run / "vm1", ovs.run / "vm2"], f"unix:{ovs.run}/br0.mgmt",
                            args.seconds)
    finally:
        ovs.stop()
        shutil.rmtree(base, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bins", required=True)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--sw-core", type=int, default=1)
    p.add_argument("--only", default="")
    p.add_argument("--json")
    p.add_argument("--packed", action="store_true")
    args = p.parse_args()
    global PACKED
    PACKED = args.packed
    # A stop (SIGTERM) unwinds like an error, so switches, guests and hugepages are cleaned up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if os.geteuid() != 0:
        sys.exit("w6_vm: run as root")
    for t in ("qemu-system-x86_64", "busybox", "iperf3", "ovs-vsctl"):
        if not shutil.which(t):
            sys.exit(f"w6_vm: {t} missing (scripts/env.sh installs the test peers)")
    bins = Path(args.bins).resolve()
    only = set(filter(None, args.only.split(",")))
    names = [n for n in ("ferrovs", "ovs", "ovs-tso")
             if n in only or (not only and n != "ovs-tso")]
    work = Path(tempfile.mkdtemp(prefix="ferrovs-w6vm-"))
    results = {n: [] for n in names}
    failed = False
    try:
        with contextlib.ExitStack() as stack:
            mem = None
            for rnd in range(args.rounds):
                for name in names:
                    try:
                        if name.startswith("ovs") and mem is None:
                            ensure_installed()
                            mem = stack.enter_context(Hugepages(work))
                        r = (run_ferrovs(bins, work, args) if name == "ferrovs"
                             else run_ovs(work, name, args, mem))
                        r["load"] = round(os.getloadavg()[0], 2)
                        print(f"round {rnd + 1} {name:8} {r['mbit_s']:8.0f} Mbit/s "
                              f"({r['bytes'] / 1e6:.0f} MB in {args.seconds} s, load "
                              f"{r['load']})", flush=True)
                    except (RuntimeError, AssertionError, OSError,
                            subprocess.SubprocessError) as e:
                        r = {"failed": str(e)[-600:]}
                        failed = True
                        print(f"round {rnd + 1} {name:8} FAILED ({str(e)[-300:]})", flush=True)
                    results[name].append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nW6 guests: iperf3 TCP guest to guest, {args.seconds} s, Mbit/s per round "
          f"({'packed' if args.packed else 'split'} rings, accel {os.environ.get('FERROVS_VM_ACCEL', 'tcg')})")
    for name in names:
        vals = [r.get("mbit_s") for r in results[name]]
        print(f"  {name:8} " + "  ".join("FAILED" if v is None else f"{v:.0f}" for v in vals))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "bench": "W6-guests", "seconds": args.seconds, "rounds": args.rounds,
            "packed": args.packed,
            "accel": os.environ.get("FERROVS_VM_ACCEL", "tcg"),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results},
            indent=1))
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
