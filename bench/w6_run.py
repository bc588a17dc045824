"""W6: VM ports (vhost-user), one switch core. Driven by bench/w6.sh.

The guest side is Debian's dpdk-testpmd on one core with two `net_virtio_user` ports (the
vhost-user frontend, as a VM's virtio-net would be), memory from a memfd (`--no-huge`). As in
W3 it runs a closed loop (`start tx_first 16`, then io forwarding of whatever comes back), so
that testpmd itself counts what the switch delivered; `txonly` does not receive. The switch
runs on the other core with two `dpdkvhostuser` ports (it is the vhost-user server), forwarding
port 1 <-> port 2. Delivered Mpps = testpmd's received packets (both ports) per second over the
measured window. Frame size: `--size 64` (default) or 1518. Configurations, in one run:

  ferrovs-patch   ferrovsd, patch module (v0 <-> v1)
  ferrovs-l3_4k   ferrovsd, openflow module, the W1 l3_4k rule set (both directions)
  floor           testpmd's own vhost-user backend (`net_vhost`, DPDK's vhost library, which
                  OVS-DPDK uses) io-forwarding on the switch core: the DPDK-to-DPDK floor

OVS-DPDK itself is not in the run: Debian's openvswitch-switch-dpdk replaces the
ovs-vswitchd that the test suite's OVS peers use, so it cannot be installed beside them here.
A configuration that cannot be set up or does not forward prints FAILED and why.
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
from w3_run import Pmd, l3_rules, measure, sh, start_switch, stop_switch  # noqa: E402


def guest_vdevs(socks, server):
    return [f"net_virtio_user{i},path={s},server={int(server)},queues=1"
            for i, s in enumerate(socks)]


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
                  [f"--txpkts={args.size - 4}"])
        if not gen.links_up():
            raise RuntimeError("vhost-user links did not come up")
        return measure(gen, args.seconds, args.warmup)
    finally:
        if gen:
            gen.quit()
        stop_switch(sw)
        log.close()


def run_floor(work, args):
    socks = [work / "floor-a.sock", work / "floor-b.sock"]
    srv = Pmd(work, "floor-srv", (args.sw_core, args.sw_core),
              [f"net_vhost{i},iface={s},queues=1" for i, s in enumerate(socks)])
    gen = None
    try:
        time.sleep(2)
        srv.cmd("set fwd io")
        srv.cmd("start")
        gen = Pmd(work, "floor-gen", (args.gen_core, args.gen_core), guest_vdevs(socks, False),
                  [f"--txpkts={args.size - 4}"])
        if not gen.links_up():
            raise RuntimeError("vhost-user links did not come up")
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
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ferrovs-w6-"))
    only = set(filter(None, args.only.split(",")))
    results = {}
    try:
        for name, fn in (("ferrovs-patch", lambda: run_ferrovs(Path(args.bins), work, "patch", args)),
                         ("ferrovs-l3_4k", lambda: run_ferrovs(Path(args.bins), work, "l3_4k", args)),
                         ("floor", lambda: run_floor(work, args))):
            if only and name not in only:
                continue
            try:
                v = fn()
                if v <= 0:
                    raise RuntimeError("nothing delivered")
                results[name] = v
                print(f"{name:16} {v:8.2f} Mpps", flush=True)
            except Exception as e:  # a failed configuration is reported, never a number
                results[name] = None
                print(f"{name:16}   FAILED ({e})", flush=True)
        load = os.getloadavg()
        print(f"\nW6, {args.size} B, delivered Mpps (generator core {args.gen_core}, switch core "
              f"{args.sw_core}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
        floor = results.get("floor")
        for name in ("ferrovs-patch", "ferrovs-l3_4k"):
            v = results.get(name)
            if name in results:
                ratio = f"{v / floor:.2f}x floor" if v and floor else "-"
                print(f"  {name:20} {('%.2f' % v) if v else 'FAILED':>8}   {ratio}")
        if args.json:
            Path(args.json).write_text(json.dumps({"results": results, "load": load,
                                                   "size": args.size}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
