#!/usr/bin/env python3
"""W5's last part: W1 forwarding (pcap replay -> null, one poll thread) while ovs-ofctl adds N
flows to the same bridge; prints the forwarding rate before, during and after the add, sampled
every 0.25 s from the poll thread's packets-sent counter.

Usage: bench/w5_w1.py BIN_DIR PCAP FLOWS plain|bundle
On a machine with two or more cores the poll thread gets the last core to itself
(`pmd-cpu-mask`) and everything else (the daemon's control threads, ovs-ofctl) runs on core
0, as a deployment would dedicate PMD cores; otherwise the poll thread's share of the CPU,
not the switch, would set the rate during the add.
The flows (priority 100, ip, nw_dst=10.100+.x.y -> output:2) do not match the W1 traffic
(10.0.x.y), which a priority-1 in_port=1 -> output:2 rule forwards; their nw_dst prefixes make
the megaflows of that traffic change as they arrive, as OVN's incremental changes do."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def main():
    bindir, pcap, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    d = tempfile.mkdtemp(prefix="w5w1-")
    ncpu = os.cpu_count() or 1
    ctl_cpu = ["taskset", "-c", "0"] if ncpu >= 2 and shutil.which("taskset") else []
    log = open(os.path.join(d, "log"), "w")
    p = subprocess.Popen(ctl_cpu + [f"{bindir}/ferrovsd", "--rundir", d, "--pcap-dir",
                          os.path.dirname(os.path.abspath(pcap))], stdout=log,
                         stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if os.path.exists(os.path.join(d, "ferrovsd.ctl")):
                break
            time.sleep(0.1)
        db = f"--db=unix:{d}/db.sock"
        subprocess.run(
            ["ovs-vsctl", db, "add-br", "br0", "--", "set", "bridge", "br0",
             "protocols=OpenFlow10,OpenFlow13,OpenFlow14",
             "--", "add-port", "br0", "p1", "--", "set", "Interface", "p1", "type=pcap",
             f"options:rx_pcap={os.path.abspath(pcap)}", "options:infinite_rx=true",
             "ofport_request=1",
             "--", "add-port", "br0", "p2", "--", "set", "Interface", "p2", "type=null",
             "ofport_request=2"], check=True)
        if ctl_cpu:
            subprocess.run(["ovs-vsctl", db, "set", "Open_vSwitch", ".",
                            f"other_config:pmd-cpu-mask={1 << (ncpu - 1):#x}"], check=True)
            time.sleep(1)
        mg = f"unix:{d}/br0.mgmt"
        of = ctl_cpu + ["ovs-ofctl", "-O", "OpenFlow14"]
        subprocess.run(of + ["del-flows", mg], check=True)
        subprocess.run(of + ["add-flow", mg, "priority=1,in_port=1,actions=output:2"], check=True)
        flows = os.path.join(d, "flows.txt")
        with open(flows, "w") as f:
            for i in range(n):
                f.write("priority=100,ip,nw_dst=10.%d.%d.%d,actions=output:2\n"
                        % (100 + ((i >> 16) & 127), (i >> 8) & 255, i & 255))

        def tx():
            """(time, packets the poll thread has sent): read through the control socket,
            which the poll thread answers between two batches, stamped at the middle of the
            call."""
            t0 = time.time()
            out = subprocess.run(ctl_cpu + [f"{bindir}/ferrovs", "--rundir", d,
                                            "dpif-netdev/pmd-stats-show", "--json"],
                                 capture_output=True, text=True, check=True).stdout
            t1 = time.time()
            return (t0 + t1) / 2, sum(p["packets_sent"] for p in json.loads(out)["pmds"])

        samples, stop = [], threading.Event()

        def sampler():
            last = tx()
            while not stop.is_set():
                time.sleep(0.25)
                now = tx()
                samples.append((now[0], (now[1] - last[1]) / (now[0] - last[0])))
                last = now

        t = threading.Thread(target=sampler)
        t.start()
        time.sleep(3)
        t0 = time.time()
        args = of + (["--bundle"] if mode == "bundle" else []) + ["add-flows", mg, flows]
        subprocess.run(args, check=True)
        t1 = time.time()
        time.sleep(3)
        stop.set()
        t.join()
        base = [r for ts, r in samples if ts < t0]
        during = [r for ts, r in samples if t0 + 0.25 <= ts <= t1]
        after = [r for ts, r in samples if ts > t1 + 1]

        def avg(v):
            return sum(v) / len(v) if v else 0.0
        # An add shorter than one sample has no sample inside it: "during" is then unknown
        # (None), not zero.
        res = {"mode": mode, "flows": n, "add_s": round(t1 - t0, 3),
               "baseline_mpps": round(avg(base) / 1e6, 3),
               "during_mpps": round(avg(during) / 1e6, 3) if during else None,
               "during_min_mpps": round(min(during) / 1e6, 3) if during else None,
               "after_mpps": round(avg(after) / 1e6, 3)}
        res["during_pct"] = round(100 * avg(during) / avg(base), 1) if base and during else None
        print(json.dumps(res))
    finally:
        p.terminate()
        p.wait(timeout=10)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
