"""W6: VM ports (vhost-user), one switch core. Driven by bench/w6.sh.

The guest side is Debian's dpdk-testpmd on one core with two `net_virtio_user` ports (the
vhost-user frontend, as a VM's virtio-net would be). Its memory (what the switch maps as guest
memory) is on 2 MiB hugepages, as a VM's would be for OVS-DPDK: `GuestMem` asks the kernel for
enough free pages for testpmd and OVS-DPDK (or two testpmds, the floor) and testpmd runs with
`--in-memory --single-file-segments -m 1024` (hugetlbfs memfds, one file per memory segment
list, so the vhost-user memory table stays within its 8 regions). If the kernel refuses the
pages, or with `--no-huge`, testpmd runs with `--no-huge -m 1024` (a plain memfd) and the run
says why. Every configuration's guest uses the same memory. As in
W3 it runs a closed loop (`start tx_first 16`, then io forwarding of whatever comes back), so
that testpmd itself counts what the switch delivered; `txonly` does not receive. The switch
runs on the other core with two `dpdkvhostuser` ports (it is the vhost-user server), forwarding
port 1 <-> port 2. Delivered Mpps = testpmd's received packets (both ports) per second over the
measured window. Frame size: `--size 64` (default) or 1518. `--packed`: testpmd's virtio ports
use packed virtqueues (`packed_vq=1`, VIRTIO_F_RING_PACKED) with every backend, split ones
otherwise. Configurations, in one run:

  ferrovs-patch   ferrovsd, patch module (v0 <-> v1)
  ferrovs-l3_4k   ferrovsd, openflow module, the W1 l3_4k rule set (both directions)
  ovs-patch       OVS-DPDK 3.1 (bench/ovs_dpdk.py; Debian's ovs-vswitchd-dpdk run by its path,
                  so the system's ovs-vswitchd stays as it is), `dpdkvhostuser` ports v0, v1
                  (sockets in its run directory), in_port=1 -> 2 and 2 -> 1
  ovs-l3_4k       OVS-DPDK 3.1, the same l3_4k rule file as ferrovs-l3_4k
  floor           testpmd's own vhost-user backend (`net_vhost`, DPDK's vhost library, which
                  OVS-DPDK uses) io-forwarding on the switch core: the DPDK-to-DPDK floor

A configuration that cannot be set up or does not forward prints FAILED and why. The switch
core's busy share and the derived capacity are read as in W3 (bench/w3_run.py).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ovs_dpdk import FerrovsProbe, Hugepages, Ovs, apply_nice  # noqa: E402
from w3_run import (Pmd, l3_rules, measure, run_all, sh, simple_rules, start_switch,  # noqa: E402
                    stop_switch, summary)


PACKED = False
GUEST_MEM = ("--no-huge", "-m", "1024")
# 2 MiB pages: testpmd -m 1024 (512) + OVS-DPDK's socket-mem 1024 (512), or the floor's two
# testpmds; with room for one more.
GUEST_PAGES_NEED, GUEST_PAGES_WANT = 1100, 1600


class GuestMem:
    """The guest side's memory for every configuration of a run: hugepages (set up by
    ovs_dpdk.Hugepages, undone at exit) or, if refused or not asked for, `--no-huge`."""

    def __init__(self, work, huge):
        self.pages = Hugepages(work, want=GUEST_PAGES_WANT, need=GUEST_PAGES_NEED) if huge \
            else None
        self.mode, self.note = "no-huge", "--no-huge given"

    def __enter__(self):
        global GUEST_MEM
        if self.pages:
            self.pages.__enter__()
            self.mode, self.note = self.pages.mode, self.pages.note
        if self.mode == "hugepages":
            GUEST_MEM = ("--in-memory", "--single-file-segments", "-m", "1024")
        else:
            GUEST_MEM = ("--no-huge", "-m", "1024")
        print(f"guest memory (testpmd): {self.mode} ({self.note})", flush=True)
        return self

    def ensure(self):
        if self.pages and self.mode == "hugepages":
            self.pages.ensure()

    def __exit__(self, *exc):
        if self.pages:
            self.pages.__exit__(*exc)


def guest_vdevs(socks, server):
    return [f"net_virtio_user{i},path={s},server={int(server)},queues=1"
            f",packed_vq={int(PACKED)}" for i, s in enumerate(socks)]


def run_ferrovs(bins, work, module, args):
    rundir = work / f"ferrovs-{module}"
    rundir.mkdir()
    sw, log = start_switch(bins, rundir, args)
    gen = None
    try:
        f = [str(bins / "ferrovs"), "--rundir", str(rundir)]
        sh(f + ["add-br", "brw6", f"module={'patch' if module == 'patch' else 'openflow'}"])
        for i in (0, 1):
            sh(f + ["add-port", "brw6", f"v{i}", "type=dpdkvhostuser", f"ofport={i + 1}"])
        if module == "patch":
            sh(f + ["patch-set", "brw6", "v0", "v1"])
            sh(f + ["patch-set", "brw6", "v1", "v0"])
        else:
            rules = rundir / "l3_4k.flows"
            l3_rules(rules)
            sh(f + ["del-flows", "brw6"])
            sh(f + ["add-flows", "brw6", str(rules)])
        gen = Pmd(work, f"gen-{module}", (args.gen_core, args.gen_core),
                  guest_vdevs([rundir / "v0", rundir / "v1"], False),
                  [f"--txpkts={args.size - 4}"], mem=GUEST_MEM)
        if not gen.links_up():
            raise RuntimeError("vhost-user links did not come up; testpmd: " + gen.tail(8))
        return measure(gen, args.seconds, args.warmup, FerrovsProbe(bins, rundir, sw.pid))
    finally:
        if gen:
            gen.quit()
        stop_switch(sw)
        log.close()


def run_ovs(work, module, args, mem):
    """OVS-DPDK with two dpdkvhostuser ports (it is the vhost-user server), ofport 1 and 2."""
    base = work / f"ovs-{module}"
    ovs = Ovs(base, f"w6ovs{os.getpid()}{module}", args.sw_core, mem.mode, args.nice)
    gen = None
    try:
        mem.ensure()
        ovs.start()
        rules = base / f"{module}.flows"
        (simple_rules if module == "patch" else l3_rules)(rules)
        ovs.flows(rules)
        for i in (0, 1):
            ovs.add_port(f"v{i}", i + 1, "dpdkvhostuser")
        ovs.wait_ports(["v0", "v1"])
        gen = Pmd(work, f"gen-ovs-{module}", (args.gen_core, args.gen_core),
                  guest_vdevs([ovs.run / "v0", ovs.run / "v1"], False),
                  [f"--txpkts={args.size - 4}"], mem=GUEST_MEM)
        if not gen.links_up():
            raise RuntimeError("vhost-user links did not come up: " + ovs.log_errors()
                               + "; testpmd: " + gen.tail(8))
        return measure(gen, args.seconds, args.warmup, ovs)
    finally:
        if gen:
            gen.quit()
        ovs.stop()


def run_floor(work, args):
    socks = [work / "floor-a.sock", work / "floor-b.sock"]
    srv = Pmd(work, "floor-srv", (args.sw_core, args.sw_core),
              [f"net_vhost{i},iface={s},queues=1" for i, s in enumerate(socks)], mem=GUEST_MEM)
    gen = None
    try:
        deadline = time.time() + 30
        while not all(s.exists() for s in socks) and time.time() < deadline:
            time.sleep(0.1)
        srv.cmd("set fwd io")
        srv.cmd("start")
        gen = Pmd(work, "floor-gen", (args.gen_core, args.gen_core), guest_vdevs(socks, False),
                  [f"--txpkts={args.size - 4}"], mem=GUEST_MEM)
        if not gen.links_up():
            raise RuntimeError("vhost-user links did not come up; testpmd: " + gen.tail(8))
        return measure(gen, args.seconds, args.warmup)
    finally:
        if gen:
            gen.quit()
        srv.quit()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bins", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--gen-core", type=int, default=0)
    p.add_argument("--sw-core", type=int, default=1)
    p.add_argument("--size", type=int, default=64, choices=(64, 1518))
    p.add_argument("--only", default="")
    p.add_argument("--json")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--nice", type=int)
    p.add_argument("--packed", action="store_true")
    p.add_argument("--no-huge", action="store_true")
    args = p.parse_args()
    global PACKED
    PACKED = args.packed
    if args.nice is not None:
        apply_nice(args.nice)
    if args.smoke:
        args.seconds, args.warmup = 1, 1
    work = Path(tempfile.mkdtemp(prefix="ferrovs-w6-"))
    bins = Path(args.bins)
    configs = [("ferrovs-patch", lambda: run_ferrovs(bins, work, "patch", args)),
               ("ferrovs-l3_4k", lambda: run_ferrovs(bins, work, "l3_4k", args)),
               ("ovs-patch", lambda mem: run_ovs(work, "patch", args, mem)),
               ("ovs-l3_4k", lambda mem: run_ovs(work, "l3_4k", args, mem)),
               ("floor", lambda: run_floor(work, args))]
    try:
        with GuestMem(work, not args.no_huge) as gmem:
            ran = run_all(args, configs, work)
        out = summary("W6 packed rings" if args.packed else "W6", args, *ran, size=args.size)
        print(f"  guest memory (testpmd, every configuration): {gmem.mode} ({gmem.note})")
        out["guest_memory"], out["guest_memory_note"] = gmem.mode, gmem.note
        if args.json:
            Path(args.json).write_text(json.dumps(out))
        return 3 if None in out["results"].values() else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
