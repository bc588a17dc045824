"""W3: shared-memory virtual ports (memif), one switch core. Driven by bench/w3.sh.

The generator is Debian's dpdk-testpmd on one core, as memif *client* on two interfaces. It
runs a closed loop: `start tx_first 16` puts 16 bursts of 32 64-byte frames on each port, then
testpmd io-forwards whatever comes back on one port out of the other, so the switch always
has frames to move and the loop runs at the pace of the slower side. (testpmd's `txonly` does
not receive, so it cannot count what comes back; `flowgen` spends most of its time building
frames the rings refuse.) The switch runs as memif *server* on the other core and forwards
port 1 <-> port 2. Delivered Mpps = the generator's received packets (both ports) per second
over the measured window, from testpmd's own port counters. With `--pktgen`, ferrovs-pktgen
(one thread, memif client on both sockets, transmitting on port 1 as fast as it can and
counting port 2) is a second generator for the ferrovs-patch configuration.

The generator has two queue pairs (memif rings each way) per interface (`--gen-queues 2`) in
every configuration, because OVS-DPDK's PMD transmits on its own queue, 1 (queue 0 is its main
thread's), and the memif server has only the rings its client brings: with one queue pair
every packet OVS sent was dropped. OVS polls both receive rings (`n_rxq=2`); ferrovs polls both
from its one receive queue and transmits on ring 0; the floor's server testpmd has two queue
pairs too. So the generator polls one ring per interface that stays empty, in every
configuration alike.
Configurations, one after another in the same run:

  ferrovs-patch      ferrovsd, patch module (m0 <-> m1)
  ferrovs-l3_4k      ferrovsd, openflow module, the W1 l3_4k rule set (both directions)
  ovs-patch          OVS-DPDK 3.1 (bench/ovs_dpdk.py), the same two memif sockets as `type=dpdk`
                     ports (`net_memif`, role=server), in_port=1 -> 2 and 2 -> 1
  ovs-l3_4k          OVS-DPDK 3.1, the same l3_4k rule file as ferrovs-l3_4k
  floor              testpmd to testpmd over memif (a server testpmd io-forwarding on the
                     switch core): the generator-to-generator floor
  ferrovs-patch-pktgen  ferrovs-patch with ferrovs-pktgen as the generator (one direction)

A configuration that cannot be set up or does not forward prints FAILED and why, never a number.

For ferrovs and OVS-DPDK the switch core's busy share over the window is read from the poll
thread's own cycle counters (`pmd-stats-clear` / `pmd-stats-show`, see bench/ovs_dpdk.py), and
capacity = delivered / busy share is printed beside the delivered rate, marked derived: when
the generator is the bottleneck the delivered rate understates the switch. `--smoke`: 1 s
windows after 1 s, for tests (no timing meaning).
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from ovs_dpdk import (FerrovsProbe, Hugepages, OnCpu, Ovs, apply_nice,  # noqa: E402
                      ensure_installed)

# testpmd's forwarding lcore thread (DPDK 22.11 names it rte-worker-N; older lcore-worker-N).
GEN_THREADS = ("rte-worker", "lcore-worker")


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: {r.stderr.strip() or r.stdout.strip()}")
    return r


class Pmd:
    """An interactive testpmd whose output goes to a file; `mem`: its EAL memory options."""

    def __init__(self, work, tag, cores, vdevs, extra=(), mem=("--no-huge", "-m", "1024")):
        self.log = open(work / f"{tag}.log", "w+")
        args = ["stdbuf", "-oL", "dpdk-testpmd", f"--lcores=0@{cores[0]},1@{cores[1]}",
                *mem, "--no-pci", "--no-shconf", f"--file-prefix=w3{os.getpid()}{tag}"]
        for v in vdevs:
            args += ["--vdev", v]
        args += ["--", "-i", "--total-num-mbufs=65536", *extra]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=self.log,
                                     stderr=subprocess.STDOUT, text=True)

    def cmd(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def rx_total(self):
        """Sum of RX-packets over both ports, from a fresh `show port stats all`. The
        command is sent again once if no answer came in 10 s (a CI run once saw none);
        if testpmd exited, or still says nothing, the error says so with its last lines."""
        for _ in range(2):
            mark = len(self.text())
            self.cmd("show port stats all")
            deadline = time.time() + 10
            while time.time() < deadline and self.proc.poll() is None:
                t = self.text()[mark:]
                v = re.findall(r"RX-packets:\s+(\d+)", t)
                if len(v) >= 2:
                    return int(v[0]) + int(v[1]), time.time()
                time.sleep(0.005)
            if self.proc.poll() is not None:
                raise RuntimeError(f"testpmd exited ({self.proc.returncode}) before printing "
                                   f"its port stats:\n{self.tail()}")
            print("testpmd printed no port stats in 10 s; asking again", file=sys.stderr)
        raise RuntimeError("testpmd did not print its port stats:\n" + self.tail())

    def wait_for(self, text, timeout):
        """True once `text` is in the output, False after `timeout` s or if testpmd exits."""
        deadline = time.time() + timeout
        while time.time() < deadline and self.proc.poll() is None:
            if text in self.text():
                return True
            time.sleep(0.1)
        return text in self.text()

    def tail(self, lines=15):
        return "\n".join(self.text().splitlines()[-lines:])

    def links_up(self, n=2, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            mark = len(self.text())
            self.cmd("show port info all")
            time.sleep(0.5)
            if len(re.findall(r"Link status: up", self.text()[mark:])) >= n:
                return True
        return False

    def quit(self):
        if self.proc.poll() is None:
            try:
                self.cmd("quit")
                self.proc.wait(timeout=15)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def gen_args(args):
    """The generator's testpmd options: 64 B frames, `--gen-queues` queue pairs per port."""
    q = args.gen_queues
    return ["--txpkts=60", f"--rxq={q}", f"--txq={q}"]


def client_vdevs(sock_a, sock_b):
    return [f"net_memif0,role=client,socket={sock_a},id=0,socket-abstract=no",
            f"net_memif1,role=client,socket={sock_b},id=0,socket-abstract=no"]


# Delivered rate is also read every PEAK_INTERVAL seconds of the window; the best interval is
# printed as "peak" (see bench/README.md: on some VMs the host moves the two vCPUs between a
# near and a far placement every few seconds, and the window's mean mixes the two).
PEAK_INTERVAL = 1.0


def measure(gen, secs, warmup, probe=None):
    """Delivered Mpps over the window, its best PEAK_INTERVAL-second interval and the
    generator's forwarding thread's on-CPU share; with a probe (a switch's counters), those
    too."""
    gen.cmd("set fwd io")
    gen.cmd("start tx_first 16")
    time.sleep(warmup)
    gen_cpu = OnCpu(GEN_THREADS)
    samples = [gen.rx_total()]
    gen_cpu.start(gen.proc.pid)
    if probe:
        probe.stats_clear()
    end = samples[0][1] + secs
    while (left := end - time.time()) > 0:
        time.sleep(min(PEAK_INTERVAL, left))
        samples.append(gen.rx_total())
    st = probe.stats() if probe else {}
    st["gen_oncpu_share"] = gen_cpu.share(gen.proc.pid)
    gen.cmd("stop")
    (a, t0), (b, t1) = samples[0], samples[-1]
    st["mpps"] = (b - a) / (t1 - t0) / 1e6
    st["interval_mpps"] = [(d - c) / (u - t) / 1e6 for (c, t), (d, u) in
                           zip(samples, samples[1:]) if u - t >= PEAK_INTERVAL / 2]
    if st["interval_mpps"]:
        st["peak_mpps"] = max(st["interval_mpps"])
    if st.get("busy_share"):
        st["capacity_mpps"] = st["mpps"] / st["busy_share"]
    return st


def simple_rules(path):
    path.write_text("in_port=1,actions=output:2\nin_port=2,actions=output:1\n")


def l3_rules(path):
    with open(path, "w") as f:
        for a, b in ((1, 2), (2, 1)):
            for i in range(4096):
                f.write(f"priority=100,ip,in_port={a},nw_dst=10.0.{i >> 8}.{i & 255},"
                        f"actions=output:{b}\n")
            f.write(f"priority=1,in_port={a},actions=output:{b}\n")


def run_ferrovs(bins, work, module, args):
    rundir = work / f"ferrovs-{module}"
    rundir.mkdir()
    sw, log = start_switch(bins, rundir, args)
    gen = None
    try:
        f = [str(bins / "ferrovs"), "--rundir", str(rundir)]
        sh(f + ["add-br", "brw3", f"module={'patch' if module == 'patch' else 'openflow'}"])
        socks = [rundir / "a.sock", rundir / "b.sock"]
        for i, s in enumerate(socks):
            sh(f + ["add-port", "brw3", f"m{i}", "type=memif", f"socket={s}", "id=0",
                    f"ofport={i + 1}"])
        if module == "patch":
            sh(f + ["patch-set", "brw3", "m0", "m1"])
            sh(f + ["patch-set", "brw3", "m1", "m0"])
        else:
            rules = rundir / "l3_4k.flows"
            l3_rules(rules)
            sh(f + ["del-flows", "brw3"])
            sh(f + ["add-flows", "brw3", str(rules)])
        gen = Pmd(work, f"gen-{module}", (args.gen_core, args.gen_core), client_vdevs(*socks),
                  gen_args(args))
        if not gen.links_up():
            raise RuntimeError("memif links did not come up")
        return measure(gen, args.seconds, args.warmup, FerrovsProbe(bins, rundir, sw.pid))
    finally:
        if gen:
            gen.quit()
        stop_switch(sw)
        log.close()


def run_ovs(work, module, args, mem):
    """OVS-DPDK with the two memif sockets as DPDK ports, ofport 1 and 2."""
    base = work / f"ovs-{module}"
    ovs = Ovs(base, f"w3ovs{os.getpid()}{module}", args.sw_core, mem.mode, args.nice)
    gen = None
    try:
        mem.ensure()
        ovs.start()
        rules = base / f"{module}.flows"
        (simple_rules if module == "patch" else l3_rules)(rules)
        ovs.flows(rules)
        socks = [base / "a.sock", base / "b.sock"]
        for i, s in enumerate(socks):
            ovs.add_port(f"m{i}", i + 1, "dpdk", n_rxq=args.gen_queues, **{"dpdk-devargs": (
                f"net_memif{i},role=server,socket={s},id=0,socket-abstract=no")})
        ovs.wait_ports(["m0", "m1"])
        gen = Pmd(work, f"gen-ovs-{module}", (args.gen_core, args.gen_core),
                  client_vdevs(*socks), gen_args(args))
        if not gen.links_up():
            raise RuntimeError("memif links did not come up: " + ovs.log_errors())
        return measure(gen, args.seconds, args.warmup, ovs)
    finally:
        if gen:
            gen.quit()
        ovs.stop()


def start_switch(bins, rundir, args):
    log = open(rundir / "ferrovsd.log", "w")
    sw = subprocess.Popen(["taskset", "-c", str(args.sw_core), str(bins / "ferrovsd"),
                           "--rundir", str(rundir), "--pcap-dir", str(rundir)],
                          stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while not (rundir / "ferrovsd.ctl").exists():
        if sw.poll() is not None or time.time() > deadline:
            raise RuntimeError("ferrovsd did not start")
        time.sleep(0.05)
    return sw, log


def stop_switch(sw):
    sw.terminate()
    try:
        sw.wait(timeout=10)
    except subprocess.TimeoutExpired:
        sw.kill()


def run_pktgen(bins, work, args):
    rundir = work / "ferrovs-pktgen"
    rundir.mkdir()
    sw, log = start_switch(bins, rundir, args)
    try:
        f = [str(bins / "ferrovs"), "--rundir", str(rundir)]
        sh(f + ["add-br", "brw3", "module=patch"])
        socks = [rundir / "a.sock", rundir / "b.sock"]
        for i, s in enumerate(socks):
            sh(f + ["add-port", "brw3", f"m{i}", "type=memif", f"socket={s}", "id=0"])
        sh(f + ["patch-set", "brw3", "m0", "m1"])
        r = sh(["taskset", "-c", str(args.gen_core), str(bins / "ferrovs-pktgen"), "txrx",
                "-t", "memif", "-i", "m0", "-o", f"socket={socks[0]}", "-o", "id=0",
                "-o", "role=client", "--rx-iface", "m1", "--rx-option", f"socket={socks[1]}",
                "-d", str(args.seconds + args.warmup), "-q", "--json"],
               timeout=args.seconds + args.warmup + 60)
        out = json.loads(r.stdout[r.stdout.index("{"):])
        return out["rx"]["pps"] / 1e6
    finally:
        stop_switch(sw)
        log.close()


def run_floor(work, args):
    """The floor, set up twice at most: DPDK's memif client does not retry a connection its
    server refused, so a pair that did not link up is started again from scratch (said on
    stderr, with both sides' logs); a second failure is the configuration's."""
    try:
        return floor_once(work, args, "floor")
    except FloorLinkDown as e:
        print(f"floor: {e}; setting the pair up again", file=sys.stderr, flush=True)
        return floor_once(work, args, "floor-retry")


class FloorLinkDown(RuntimeError):
    pass


def floor_once(work, args, tag):
    socks = [work / f"{tag}-a.sock", work / f"{tag}-b.sock"]
    srv = Pmd(work, f"{tag}-srv", (args.sw_core, args.sw_core),
              [f"net_memif0,role=server,socket={socks[0]},id=0,socket-abstract=no",
               f"net_memif1,role=server,socket={socks[1]},id=0,socket-abstract=no"],
              [f"--rxq={args.gen_queues}", f"--txq={args.gen_queues}"])
    gen = None
    try:
        # The server is ready for clients once its prompt is up: its ports are started and
        # its sockets listen.
        if not srv.wait_for("testpmd>", 30) or not all(s.exists() for s in socks):
            raise RuntimeError("the server testpmd did not come up: " + srv.tail())
        srv.cmd("set fwd io")
        srv.cmd("start")
        gen = Pmd(work, f"{tag}-gen", (args.gen_core, args.gen_core), client_vdevs(*socks),
                  gen_args(args))
        if not gen.links_up():
            raise FloorLinkDown(f"memif links did not come up\nserver: {srv.tail()}\n"
                                f"generator: {gen.tail()}")
        return measure(gen, args.seconds, args.warmup)
    finally:
        if gen:
            gen.quit()
        srv.quit()


def run_all(args, configs, work):
    """Runs each configuration in turn; returns (results, details, reasons, memory mode)."""
    only = set(filter(None, args.only.split(",")))
    configs = [(n, f) for n, f in configs if not only or n in only]
    results, details, reasons = {}, {}, {}
    mem = None
    with contextlib.ExitStack() as stack:
        for name, fn in configs:
            try:
                if name.startswith("ovs-") and mem is None:
                    ensure_installed()
                    mem = stack.enter_context(Hugepages(work))
                v = fn(mem) if name.startswith("ovs-") else fn()
                if isinstance(v, dict):
                    details[name] = v
                    v = v["mpps"]
                if v <= 0:
                    raise RuntimeError("nothing delivered")
                results[name] = v
                d = details.get(name, {})
                extra = ("   busy %.0f%%, capacity %.2f Mpps (derived), %.0f cycles/pkt" % (
                    100 * d["busy_share"], d["capacity_mpps"], d["processing_cycles_per_packet"])
                    if d.get("capacity_mpps") else "")
                print(f"{name:16} {v:8.2f} Mpps{extra}", flush=True)
            except Exception as e:  # a failed configuration is reported, never a number
                results[name] = None
                details.pop(name, None)
                reasons[name] = str(e)
                print(f"{name:16}   FAILED ({e})", flush=True)
    return results, details, reasons, (mem.mode if mem else None)


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def summary(bench, args, results, details, reasons, mem_mode, size=64):
    """Prints the table; returns the JSON document."""
    load = os.getloadavg()
    print(f"\n{bench}, {size} B, delivered Mpps (generator core {args.gen_core}, switch core "
          f"{args.sw_core}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
          f"{', OVS-DPDK ' + mem_mode if mem_mode else ''}"
          f"{', nice %d' % args.nice if args.nice is not None else ''})")
    print(f"  {'configuration':20} {'Mpps':>8} {'gen':>5} {'on-cpu':>6} {'busy':>6}"
          f" {'capacity*':>9} {'cyc/pkt':>8}   {'/ floor':>7} {'/ OVS-DPDK':>10}"
          f" {'capacity / OVS*':>15} {'peak':>7} {'peak / OVS':>10}")
    floor = results.get("floor")
    ratios = {}
    for name, v in results.items():
        d = details.get(name, {})
        peer = "ovs-" + name.split("-", 1)[1] if name.startswith("ferrovs-") else None
        vs_ovs = ratio(v, results.get(peer)) if peer in results else "-"
        cap = ratio(d.get("capacity_mpps"), details.get(peer, {}).get("capacity_mpps"))
        peak = d.get("peak_mpps")
        peak_vs = ratio(peak, details.get(peer, {}).get("peak_mpps")) if peer else "-"
        if peer in results and v and results.get(peer):
            ratios[f"{name} / {peer}"] = v / results[peer]
        busy = "%5.0f%%" % (100 * d["busy_share"]) if d.get("busy_share") else "-"
        oncpu = "%5.0f%%" % (100 * d["pmd_oncpu_share"]) if d.get("pmd_oncpu_share") else "-"
        genc = "%4.0f%%" % (100 * d["gen_oncpu_share"]) if d.get("gen_oncpu_share") else "-"
        capv = "%.2f" % d["capacity_mpps"] if d.get("capacity_mpps") else "-"
        cpp = "%.0f" % d["processing_cycles_per_packet"] \
            if d.get("processing_cycles_per_packet") else "-"
        print(f"  {name:20} {('%.2f' % v) if v else 'FAILED':>8} {genc:>5} {oncpu:>6} {busy:>6}"
              f" {capv:>9}"
              f" {cpp:>8}   {ratio(v, floor) if name != 'floor' else '-':>7} {vs_ovs:>10}"
              f" {cap:>15} {('%.2f' % peak) if peak else '-':>7} {peak_vs:>10}")
    print("  gen / on-cpu: share of the window the generator's forwarding thread / the switch's "
          "poll thread ran (schedstat); busy: the poll thread's cycles in iterations that "
          "received packets / all its cycles")
    print("  * derived: capacity = delivered / busy share of the switch core's poll thread")
    print(f"  peak: the best {PEAK_INTERVAL:g}-s interval of the window (bench/README.md, "
          "\"near and far vCPU placements\")")
    return {"benchmark": bench, "results": results, "switch_core": details, "reasons": reasons,
            "peaks": {n: d.get("peak_mpps") for n, d in details.items()},
            "ratios": ratios, "load": load, "size": size, "seconds": args.seconds,
            "warmup": args.warmup, "ovs_memory": mem_mode, "nice": args.nice}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bins", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--gen-core", type=int, default=0)
    p.add_argument("--sw-core", type=int, default=1)
    p.add_argument("--only", default="")
    p.add_argument("--json")
    p.add_argument("--pktgen", action="store_true")
    p.add_argument("--gen-queues", type=int, default=2)
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--nice", type=int)
    args = p.parse_args()
    if args.nice is not None:
        apply_nice(args.nice)
    if args.smoke:
        args.seconds, args.warmup = 1, 1
    work = Path(tempfile.mkdtemp(prefix="ferrovs-w3-"))
    bins = Path(args.bins)
    configs = [("ferrovs-patch", lambda: run_ferrovs(bins, work, "patch", args)),
               ("ferrovs-l3_4k", lambda: run_ferrovs(bins, work, "l3_4k", args)),
               ("ovs-patch", lambda mem: run_ovs(work, "patch", args, mem)),
               ("ovs-l3_4k", lambda mem: run_ovs(work, "l3_4k", args, mem)),
               ("floor", lambda: run_floor(work, args))]
    if args.pktgen:
        configs.append(("ferrovs-patch-pktgen", lambda: run_pktgen(bins, work, args)))
    try:
        out = summary("W3", args, *run_all(args, configs, work))
        if args.json:
            Path(args.json).write_text(json.dumps(out))
        return 3 if None in out["results"].values() else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
