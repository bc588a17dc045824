#!/usr/bin/env python3
"""The benchmark report: turns the JSON files that bench/report.sh collects (each written by a
bench script's --json option) into report.md with one PNG plot per ratio table.

    bench/report.py --from DIR [--out DIR] [--only W1,W3]
    bench/report.py facts                 # machine facts as JSON (report.sh stores them)

What DIR may hold (anything missing is reported as such, never filled in):

  runs.json      written by report.sh: per benchmark run the command, exit status, start,
                 duration and the load average before and after it; the benchmarks requested
  facts.json     machine facts (`report.py facts`)
  load.tsv       "epoch load1 load5 load15" samples taken during the run
  w1.json        bench/w1.sh --json            ferrovs in memory, pcap -> null
  w1-peers.json  bench/w1-peers.sh --json      testpmd io floor, OVS-DPDK simple / l3_4k
  w2.json        bench/w2.sh --json            veth flood, delivered Mpps
  w2-fixed.json  bench/w2.sh --rate PPS --json the same at a fixed offered load: CPU time
                                               per delivered packet
  w3.json, w6.json  bench/w3.sh / w6.sh --json memif / vhost-user, closed testpmd loop:
                 ferrovs, OVS-DPDK, floor; w6-1518.json: w6.sh --size 1518
  w5.json        bench/w5.sh --json            control plane at scale (+ W1 during the add)

The goals are those of /work/shared/BENCHMARKS.md. A ratio is only computed from two
measured numbers; a peer that is not measured gives "-" and says why. Exit status: 0, or 3
when a requested benchmark failed (its script exited non-zero, a cell is FAILED, or it was
run and left no JSON); the report is written either way.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ALL = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"]
TITLES = {
    "W1": "datapath on one core, in memory (pcap replay -> null)",
    "W2": "real kernel I/O over veth (network namespaces)",
    "W3": "shared-memory virtual ports (memif), one switch core",
    "W4": "flow setup (every packet a new flow)",
    "W5": "control plane at scale",
    "W6": "VM ports (vhost-user), one switch core",
    "W7": "tunnels (VXLAN/Geneve encap and decap)",
    "W8": "connection tracking",
}
NO_SCRIPT = {"W4"}
# What exists short of a bench script, so a reader knows where ferrovs-only numbers are.
NO_SCRIPT_NOTE = {
    "W4": "`ferrovs-bench w4` measures ferrovs alone (docs/benchmarks.md, W4); no script runs "
          "it against OVS or writes JSON for this report yet.",
}
FILES = {"W1": ["w1.json", "w1-peers.json"], "W2": ["w2.json", "w2-fixed.json"],
         "W3": ["w3.json"], "W5": ["w5.json"], "W6": ["w6.json", "w6-1518.json"],
         "W7": ["w7.json"], "W8": ["w8.json"]}
# Goals of BENCHMARKS.md, as ratios ferrovs / peer (or the unit given).
GOAL_W1 = 2.0          # OF l3_4k / OVS-DPDK l3_4k, every row
GOAL_W1_CLIFF = 0.5    # 100K flows / 1 flow
GOAL_W2 = 1.5          # ferrovs afxdp / OVS afxdp delivered
GOAL_W3_PATCH = 20.0   # Mpps per switch core with patch
GOAL_W3_OF = 1.5       # x OVS-DPDK with openflow/l3_4k
GOAL_W5 = 2.0          # x OVS on add, bundle, dump, del
GOAL_W5_W1 = 90.0      # % of W1 kept while flows are added
GOAL_W6 = 1.5          # x OVS-DPDK at 64 B with openflow/l3_4k
GOAL_W7 = 2.0          # x OVS-DPDK, encap and decap
GOAL_W8 = 3.0          # x OVS-DPDK, established connections through ct
CARRIED = 0.95         # share of the offered load a switch must deliver to be compared


def fmt(v, spec="%.2f"):
    return "-" if v is None else spec % v


def ratio(a, b):
    return a / b if a and b else None


def rx(v):
    return "-" if v is None else "%.2fx" % v


def table(hdr, rows):
    out = ["| " + " | ".join(hdr) + " |", "|" + "|".join("---" for _ in hdr) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out + [""]


def machine_facts():
    def run(*cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = "%.1f GiB" % (int(line.split()[1]) / 1048576)
    except OSError:
        pass
    osname = ""
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    root = Path(__file__).resolve().parents[1]
    ovs = run("ovs-vswitchd", "--version").splitlines()
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpu": cpu, "cores": os.cpu_count(), "memory": mem, "os": osname,
        "kernel": platform.release(),
        "commit": run("git", "-C", str(root), "rev-parse", "--short", "HEAD"),
        "ovs": ovs[0].split()[-1] if ovs else "",
        "dpdk_testpmd": shutil.which("dpdk-testpmd") or "",
        "load": list(os.getloadavg()),
    }


class Report:
    def __init__(self, src, out, requested, explicit):
        self.src, self.out = Path(src), Path(out)
        self.requested, self.explicit = requested, explicit
        self.md = []
        self.failed = {}
        self.pngs = []
        runs = self.json("runs.json") or {}
        self.runs = runs.get("runs", [])
        self.quick = runs.get("quick")
        self.facts = self.json("facts.json")

    def json(self, name):
        p = self.src / name
        if not p.exists():
            return None
        with open(p) as f:
            return json.load(f)

    def fail(self, bench, why):
        self.failed.setdefault(bench, []).append(why)

    def runs_of(self, bench):
        return [r for r in self.runs if r.get("bench") == bench]

    # ---- plots -------------------------------------------------------------------------
    def bars(self, name, title, labels, series, ylabel, goal=None, goal_label="", flags=None):
        """A grouped bar chart: `series` is [(legend, [value or None per label])]; a None
        bar is left out and marked 'n/m' (not measured). `flags[i][j]`, if given and true,
        draws that bar hatched and labels it with the flag (a number measured under a
        condition that makes it not comparable)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7.5, 4), dpi=100)
        n = max(len(series), 1)
        w = 0.8 / n
        top = max([v for _, vals in series for v in vals if v is not None] + [goal or 0, 0])
        for i, (legend, vals) in enumerate(series):
            xs = [j + (i - (n - 1) / 2) * w for j in range(len(labels))]
            fl = (flags or [[None] * len(vals)] * len(series))[i]
            color = "C%d" % i
            if all(v is None for v in vals):
                legend += " (not measured)"
            ax.bar([x for x, v in zip(xs, vals) if v is not None],
                   [v for v in vals if v is not None], w, label=legend, color=color)
            for x, v, f in zip(xs, vals, fl):
                if v is not None and f:
                    ax.bar([x], [v], w, color="white", edgecolor=color, hatch="//")
                text = "n/m" if v is None else "%.2f" % v + ("\n%s" % f if f else "")
                ax.annotate(text, (x, v or 0), ha="center", va="bottom", fontsize=6.5)
        ax.set_ylim(0, (top or 1) * 1.3)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        if goal is not None:
            ax.axhline(goal, color="red", linestyle="--", linewidth=1.2, label=goal_label)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = self.out / name
        fig.savefig(path, format="png")
        plt.close(fig)
        self.pngs.append(path)
        self.md += ["![%s](%s)" % (title, name), ""]

    def load_plot(self, samples):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        t0 = samples[0][0]
        fig, ax = plt.subplots(figsize=(7.5, 3), dpi=100)
        ax.plot([(s[0] - t0) / 60 for s in samples], [s[1] for s in samples], label="load1")
        ax.plot([(s[0] - t0) / 60 for s in samples], [s[2] for s in samples], label="load5")
        cores = (self.facts or {}).get("cores")
        if cores:
            ax.axhline(cores, color="grey", linestyle=":", label="cores (%d)" % cores)
        for i, r in enumerate(self.runs):
            if r.get("start_epoch") and r.get("elapsed_s") is not None:
                a = (r["start_epoch"] - t0) / 60
                ax.axvspan(a, a + r["elapsed_s"] / 60, alpha=0.15, color="C%d" % (2 + i % 6))
                ax.annotate(r.get("name", ""), (a, 0.05), fontsize=7, rotation=90, va="bottom")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("minutes")
        ax.set_ylabel("load average")
        ax.set_title("Load average during the run (shaded: benchmark runs)", fontsize=10)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = self.out / "load.png"
        fig.savefig(path, format="png")
        plt.close(fig)
        self.pngs.append(path)
        self.md += ["![load average](load.png)", ""]

    # ---- sections ----------------------------------------------------------------------
    def header(self):
        f = self.facts or {}
        self.md += ["# ferrovs benchmark report", ""]
        self.md += ["Built %s from `%s`%s. Workloads, peers and goals: BENCHMARKS.md "
                    "(W1-W8); the method of each script: bench/README.md. Every number below "
                    "was measured in this run; a peer or benchmark that was not measured says "
                    "so." % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), self.src,
                             " (--quick: short windows, for checking the runners, not for "
                             "numbers)" if self.quick else ""), ""]
        self.md += ["## Machine", ""]
        if f:
            self.md += table(["fact", "value"], [
                ["date", f.get("date", "-")], ["CPU", f.get("cpu", "-")],
                ["cores", f.get("cores", "-")], ["memory", f.get("memory", "-")],
                ["OS", f.get("os", "-")], ["kernel", f.get("kernel", "-")],
                ["ferrovs commit", f.get("commit", "-")], ["OVS", f.get("ovs", "-")],
                ["load average at start (1/5/15 min)",
                 " ".join("%.2f" % x for x in f.get("load", []))]])
        else:
            self.md += ["No facts.json in the directory: machine facts not recorded.", ""]
        self.md += ["## Summary", ""]
        self.summary_at = len(self.md)

    def summary(self, rows):
        self.md[self.summary_at:self.summary_at] = table(
            ["benchmark", "status", "headline ratio (goal)"], rows)

    def load_section(self):
        self.md += ["## Load average", ""]
        self.md += ["The machines are shared 2-core VMs: read every number against the load "
                    "it was measured under.", ""]
        rows = []
        for r in self.runs:
            lb, la = r.get("load_before"), r.get("load_after")
            rows.append([r.get("name", "?"), r.get("started", "-"), fmt(r.get("elapsed_s"), "%d"),
                         " ".join("%.2f" % x for x in lb) if lb else "-",
                         " ".join("%.2f" % x for x in la) if la else "-"])
        if rows:
            self.md += table(["run", "started", "seconds", "load before (1/5/15)",
                              "load after (1/5/15)"], rows)
        loads = []
        for name in ("w1.json", "w1-peers.json", "w2.json", "w2-fixed.json", "w3.json",
                     "w5.json", "w6.json", "w6-1518.json"):
            d = self.json(name)
            if d and d.get("load"):
                loads.append([name, " ".join("%.2f" % x for x in d["load"])])
        if loads:
            self.md += ["Load average each script recorded when it finished:", ""]
            self.md += table(["JSON", "load (1/5/15)"], loads)
        p = self.src / "load.tsv"
        samples = []
        if p.exists():
            for line in open(p):
                v = line.split()
                if len(v) == 4:
                    samples.append([float(x) for x in v])
        if len(samples) >= 2:
            self.load_plot(samples)
        elif not rows and not loads:
            self.md += ["Not recorded.", ""]

    def commands(self, bench):
        runs = self.runs_of(bench)
        if not runs:
            self.md += ["Commands: not recorded (the report was built from JSON files alone).",
                        ""]
            return
        self.md += ["Commands (exit status):", ""]
        for r in runs:
            self.md += ["    %s    # exit %s, %s s, started %s" % (
                r.get("cmd", "?"), r.get("rc", "?"), r.get("elapsed_s", "?"),
                r.get("started", "?"))]
        self.md += [""]
        for r in runs:
            if r.get("rc", 0) != 0:
                self.fail(bench, "`%s` exited %s" % (r.get("name"), r.get("rc")))

    def missing(self, bench, name):
        """A script's JSON is absent: a failure if the benchmark was run or asked for."""
        ran = any(name == r.get("json") for r in self.runs_of(bench))
        self.md += ["No `%s` in the directory: not measured%s." % (
            name, " (the run left no JSON)" if ran else "")]
        if ran or bench in self.explicit:
            self.fail(bench, "%s missing" % name)

    def w1(self):
        d, p = self.json("w1.json"), self.json("w1-peers.json")
        head = None
        if d is None:
            self.missing("W1", "w1.json")
            self.md += [""]
            return head
        fv = d.get("ferrovs", {})
        peers = (p or {}).get("results") or d.get("peers") or {}
        flows = sorted(fv, key=int)
        mods = ["patch", "learning", "openflow:simple", "openflow:l3_4k"]
        pcols = [("testpmd_io", "testpmd io"), ("ovs_simple", "OVS-DPDK simple"),
                 ("ovs_l3_4k", "OVS-DPDK l3_4k")]

        def cell(c):
            if not c:
                return "-"
            if c.get("status", "ok") != "ok":
                return "FAILED"
            cpp = c.get("cycles_per_packet")
            share = c.get("cpu_share")
            return "%.2f (%s)%s" % (c["mpps"], "-" if cpp is None else "%.0f" % cpp,
                                    " *%.0f%%" % (100 * share)
                                    if isinstance(share, float) and share < 0.95 else "")

        def mpps(c):
            return c.get("mpps") if c and c.get("status", "ok") == "ok" else None
        smoke = " (smoke run: %s s windows)" % d.get("seconds") if d.get("smoke") else ""
        self.md += ["Mpps on one core (cycles/packet in brackets)%s; `ferrovs-bench w1`, "
                    "pinned to core %s." % (smoke, d.get("core", "?")), ""]
        rows = []
        for f in flows:
            rows.append([format(int(f), ",")] + [cell(fv[f].get(m)) for m in mods]
                        + [cell(peers.get(f, {}).get(c)) if peers else "not measured"
                           for c, _ in pcols])
        self.md += table(["flows"] + ["ferrovs " + m.replace("openflow:", "OF ") for m in mods]
                         + [h for _, h in pcols], rows)
        for f in flows:
            for c, h in pcols:
                pc = peers.get(f, {}).get(c)
                if pc and pc.get("status") == "failed":
                    self.fail("W1", "%s at %s flows: %s" % (h, f, pc.get("reason", "?")))
        if p:
            self.md += ["`*N%`: the peer's forwarding thread was on a CPU only N% of the window "
                        "(other processes took its core; its rate is depressed by about as "
                        "much)." if "*" in "".join(sum(rows, [])) else ""]
            self.md += ["Peers: OVS %s, DPDK %s, memory %s%s, %s s windows after %s s warm-up." % (
                p.get("versions", {}).get("ovs") or "-", p.get("versions", {}).get("dpdk") or "-",
                p.get("memory", "?"), " (not comparable with hugepage runs)"
                if p.get("memory") not in (None, "hugepages") else "", p.get("seconds", "?"),
                p.get("warmup_s", "?")), ""]
        elif not peers:
            self.md += ["Peers: not measured in this run (no `w1-peers.json`): no ratio.", ""]
        self.md += ["### W1 ratios", ""]
        rrows, l3, simple, floor, contended = [], [], [], [], False
        flags = [[], [], []]

        def starved(c):
            """' (peer *N%)' when the peer's thread had less than 95% of its core."""
            share = (c or {}).get("cpu_share")
            return " (peer *%.0f%%)" % (100 * share) if isinstance(share, float) \
                and share < 0.95 else ""
        for f in flows:
            pe = peers.get(f, {})
            a = ratio(mpps(fv[f].get("openflow:l3_4k")), mpps(pe.get("ovs_l3_4k")))
            b = ratio(mpps(fv[f].get("openflow:simple")), mpps(pe.get("ovs_simple")))
            c = ratio(mpps(fv[f].get("patch")), mpps(pe.get("testpmd_io")))
            l3.append(a), simple.append(b), floor.append(c)
            marks = [starved(pe.get(k)) if v else "" for k, v in
                     (("ovs_l3_4k", a), ("ovs_simple", b), ("testpmd_io", c))]
            contended = contended or any(marks[:1])
            for fl, m in zip(flags, marks):
                fl.append(m.strip(" ()").replace("peer ", "") or None)
            rrows.append([format(int(f), ","),
                          rx(a) + (" ✓" if a and a >= GOAL_W1 and not marks[0] else "")
                          + marks[0],
                          rx(b) + marks[1], rx(c) + marks[2]])
        self.md += table(["flows", "OF l3_4k / OVS-DPDK l3_4k (goal >= %.0fx)" % GOAL_W1,
                          "OF simple / OVS-DPDK simple", "patch / testpmd io floor"], rrows)
        if any("(peer *" in c for r in rrows for c in r):
            self.md += ["`(peer *N%)`: the peer ran on only N% of its core in that window, so "
                        "the ratio overstates ferrovs (ferrovs-bench does not report its own "
                        "share): re-run on a quiet machine, or with `w1-peers.sh --rt`.", ""]
        one = mpps(fv.get("1", {}).get("openflow:l3_4k"))
        big = mpps(fv.get("100000", {}).get("openflow:l3_4k"))
        if one and big:
            self.md += ["No cliff: OF l3_4k at 100K flows / at 1 flow = %.2f (goal >= %.1f)." % (
                big / one, GOAL_W1_CLIFF), ""]
        else:
            self.md += ["No-cliff check (100K flows vs 1 flow, goal >= %.1f): not measured "
                        "(needs both flow counts)." % GOAL_W1_CLIFF, ""]
        labels = [format(int(f), ",") for f in flows]
        if any(v is not None for v in l3 + simple + floor):
            self.bars("w1-ratios.png", "W1: ferrovs / peer, Mpps ratio per flow count",
                      labels, [("OF l3_4k / OVS-DPDK l3_4k", l3),
                               ("OF simple / OVS-DPDK simple", simple),
                               ("patch / testpmd io", floor)],
                      "ratio", GOAL_W1, "goal: l3_4k >= %.0fx OVS-DPDK" % GOAL_W1,
                      flags=flags)
            if contended:
                self.md += ["Hatched bars, `*N%`: the peer had N% of its core.", ""]
        else:
            self.bars("w1-mpps.png", "W1: ferrovs Mpps (no peer measured: no ratio)", labels,
                      [(m, [mpps(fv[f].get(m)) for f in flows]) for m in mods], "Mpps")
        if l3 and all(v is not None for v in l3):
            head = "OF l3_4k / OVS-DPDK l3_4k: %s (goal >= %.0fx)%s" % (
                ", ".join("%.2fx" % v for v in l3), GOAL_W1,
                "; the peer did not have its whole core" if contended else "")
        else:
            head = "no OVS-DPDK peer measured"
        return head

    def w2_rows(self, d):
        rows = []
        for r in d.get("results", []):
            if r.get("status") != "ok":
                rows.append([r["switch"], r["generator"], "FAILED: %s" % r.get("reason", "?"),
                             "", "", "", "", ""])
                self.fail("W2", "%s/%s: %s" % (r["switch"], r["generator"], r.get("reason")))
                continue
            rows.append([r["switch"], r["generator"], "%.3f" % r["sent_mpps"],
                         "%.3f" % r["delivered_mpps"],
                         fmt(r.get("switch_process_cpu_pct"), "%.0f%%"),
                         fmt(r.get("switch_core_busy_pct"), "%.0f%%"),
                         fmt(r.get("switch_cpu_ns_per_pkt"), "%.0f"),
                         fmt(r.get("switch_core_busy_ns_per_pkt"), "%.0f")])
        return table(["switch", "generator", "sent Mpps", "delivered Mpps", "sw cpu",
                      "core busy", "sw CPU ns/pkt", "core busy ns/pkt"], rows)

    @staticmethod
    def w2_cell(d, sw, gen=None):
        for r in d.get("results", []):
            if r["switch"] == sw and (gen is None or r["generator"] == gen) \
                    and r.get("status") == "ok":
                return r
        return None

    def w2(self):
        d, fx = self.json("w2.json"), self.json("w2-fixed.json")
        heads = []
        self.md += ["### Flood: delivered Mpps", ""]
        if d is None:
            self.missing("W2", "w2.json")
            self.md += [""]
        else:
            self.md += ["%s s windows after %s s warm-up, generator core %s, switch core %s, "
                        "nice %s, kernel %s. sw cpu = the switch process's utime+stime as a "
                        "share of its core; core busy = the switch core's non-idle share "
                        "(includes softirq and anything else that ran there); ns/pkt = that "
                        "time per packet delivered to h2." % (
                            d.get("seconds"), d.get("warmup"), d.get("gen_core"),
                            d.get("sw_core"), d.get("nice"), d.get("kernel")), ""]
            self.md += self.w2_rows(d)
            gens = sorted({r["generator"] for r in d.get("results", [])})
            rows, ax, sy = [], [], []
            for g in gens:
                def dl(sw):
                    c = self.w2_cell(d, sw, g)
                    return c["delivered_mpps"] if c else None
                a = ratio(dl("ferrovs-afxdp"), dl("ovs-afxdp"))
                b = ratio(dl("ferrovs-system"), dl("ovs-afpacket"))
                ax.append(a), sy.append(b)
                rows.append([g, rx(a), rx(b)])
            self.md += ["#### W2 flood ratios", ""]
            self.md += table(["generator", "ferrovs afxdp / OVS afxdp delivered (goal >= %.1fx)"
                              % GOAL_W2, "ferrovs system / OVS AF_PACKET delivered"], rows)
            self.md += ["One generator core cannot saturate either switch here (BENCHMARKS.md, "
                        "\"W2 on this machine\"): delivered Mpps says how much of the "
                        "generator's output arrived, not what the switch could carry; the "
                        "fixed-load table below compares cost.", ""]
            if gens:
                self.bars("w2-flood-ratios.png", "W2 flood: ferrovs / OVS, delivered Mpps",
                          gens, [("afxdp / OVS afxdp", ax), ("system / OVS AF_PACKET", sy)],
                          "ratio", GOAL_W2, "goal: afxdp >= %.1fx OVS afxdp" % GOAL_W2)
            if ax and ax[0] is not None:
                heads.append("flood afxdp %.2fx (goal >= %.1fx)" % (ax[0], GOAL_W2))
            sc = d.get("w1_scaling")
            if sc:
                self.md += ["W1 scaling (openflow, l3_4k, 10K flows, in memory): 1 poll thread "
                            "%.2f Mpps, 2 threads %.2f Mpps, ratio %.2fx (w2.sh's goal >= "
                            "1.8x)." % (sc["one_thread"]["mpps"], sc["two_threads"]["mpps"],
                                        sc["ratio"]), ""]
        self.md += ["### Fixed offered load: switch CPU time per delivered packet", ""]
        if fx is None:
            self.missing("W2", "w2-fixed.json")
            self.md += [""]
            return "; ".join(heads) or None
        rate = fx.get("rate_pps")
        self.md += ["`ferrovs-pktgen` offers %s packets/s (token bucket) to every switch, %s s "
                    "windows. A switch is compared only if it delivered at least %.0f%% of the "
                    "offered load (otherwise the load was not one it, or the generator, could "
                    "carry on this machine at that moment)." % (
                        "{:,}".format(rate) if rate else "?", fx.get("seconds"),
                        100 * CARRIED), ""]
        self.md += self.w2_rows(fx)
        pairs = [("ferrovs-afxdp", "ovs-afxdp", "afxdp"), ("ferrovs-system", "ovs-afpacket",
                                                          "system / AF_PACKET")]
        rows, sw_r, core_r, labels, flag = [], [], [], [], []
        for f, o, label in pairs:
            a, b = self.w2_cell(fx, f), self.w2_cell(fx, o)
            if not a or not b:
                continue
            notes = []
            for c in (a, b):
                carried = c["delivered_mpps"] * 1e6 / rate if rate else None
                if carried is None or carried < CARRIED:
                    notes.append("%s delivered %s of the offered load" % (
                        c["switch"], "?" if carried is None else "%.0f%%" % (100 * carried)))
            s = ratio(b.get("switch_cpu_ns_per_pkt"), a.get("switch_cpu_ns_per_pkt"))
            k = ratio(b.get("switch_core_busy_ns_per_pkt"), a.get("switch_core_busy_ns_per_pkt"))
            ok = not notes
            rows.append([label, fmt(a.get("switch_cpu_ns_per_pkt"), "%.0f"),
                         fmt(b.get("switch_cpu_ns_per_pkt"), "%.0f"),
                         rx(s) if ok else "not comparable", rx(k) if ok else "not comparable",
                         "; ".join(notes) or "both carried the load"])
            labels.append(label)
            sw_r.append(s)
            core_r.append(k)
            flag.append(None if ok else "load not carried")
            if ok and label == "afxdp" and s:
                heads.append("fixed load: OVS/ferrovs CPU per packet %.2fx" % s)
            elif label == "afxdp":
                heads.append("fixed load not carried by both")
        self.md += ["#### W2 fixed-load ratios (OVS / ferrovs: above 1 means ferrovs spends "
                    "less)", ""]
        self.md += table(["ports", "ferrovs sw CPU ns/pkt", "OVS sw CPU ns/pkt",
                          "OVS / ferrovs sw CPU", "OVS / ferrovs core busy", "load carried"],
                         rows)
        self.md += ["Hatched bars in the plot: measured, but at least one of the two did not "
                    "carry the offered load, so the ratio does not compare equal work. A poll "
                    "thread that does not sleep between packets (OVS's PMD; ferrovs's while "
                    "packets keep arriving) takes its whole core whenever it gets it: on a quiet "
                    "machine its CPU per packet is its core divided by the load, not its work; "
                    "the sw cpu column shows how much of the core each switch actually got. "
                    "BENCHMARKS.md's W2 goal (>= %.1fx) is stated for delivered packets; the "
                    "plot draws it for reference." % GOAL_W2, ""]
        if labels:
            self.bars("w2-fixed-ratios.png", "W2 at %s pps offered: OVS / ferrovs CPU time per "
                      "delivered packet" % ("{:,}".format(rate) if rate else "?"), labels,
                      [("switch process utime+stime", sw_r), ("switch core busy", core_r)],
                      "ratio", GOAL_W2, "W2 goal %.1fx" % GOAL_W2, flags=[flag, flag])
        return "; ".join(heads) or None

    def mem_ports(self, bench, names, goal_note, goal_line=None, goal_label=""):
        """W3/W6: one table per JSON file present (W6: 64 B and 1518 B)."""
        heads = []
        present = [n for n in names if (self.src / n).exists()]
        if not present:
            self.missing(bench, names[0])
            self.md += [""]
            return None
        for name in present:
            heads.append(self.mem_ports_one(bench, name, goal_line, goal_label))
        self.md += [goal_note, ""]
        return "; ".join(h for h in heads if h)

    def mem_ports_one(self, bench, name, goal_line, goal_label):
        d = self.json(name)
        res = d.get("results", {})
        core = d.get("switch_core", {})
        floor = res.get("floor")
        size = d.get("size") or 64

        def peer(k):
            return "ovs-" + k.split("-", 1)[1] if k.startswith("ferrovs-") else None

        def cap(k):
            return (core.get(k) or {}).get("capacity_mpps")

        rows = []
        for k, v in res.items():
            if v is None:
                self.fail(bench, "%s FAILED%s" % (k, (": " + d["reasons"][k])
                                                  if k in d.get("reasons", {}) else ""))
            c = core.get(k) or {}
            pk = peer(k)
            rows.append([k, "FAILED" if v is None else "%.2f" % v,
                         "%.0f%%" % (100 * c["gen_oncpu_share"])
                         if c.get("gen_oncpu_share") else "-",
                         "%.0f%%" % (100 * c["pmd_oncpu_share"])
                         if c.get("pmd_oncpu_share") else "-",
                         "%.0f%%" % (100 * c["busy_share"]) if c.get("busy_share") else "-",
                         fmt(cap(k)),
                         fmt(c.get("processing_cycles_per_packet"), "%.0f"),
                         rx(ratio(v, floor)) if k != "floor" else "-",
                         rx(ratio(v, res.get(pk))) if pk in res else "-",
                         rx(ratio(cap(k), cap(pk))) if pk in res else "-"])
        self.md += ["%d B frames, testpmd's closed io loop; %s%s." % (
            size, "load at the end %s" % " ".join("%.2f" % x for x in d.get("load", [])),
            ", OVS-DPDK memory: %s" % d["ovs_memory"] if d.get("ovs_memory") else ""), ""]
        self.md += table(["configuration", "delivered Mpps", "generator on CPU",
                          "poll thread on CPU",
                          "switch core busy",
                          "capacity Mpps (derived)", "cycles/pkt", "/ floor",
                          "/ OVS-DPDK (delivered)", "/ OVS-DPDK (capacity, derived)"], rows)
        self.md += ["Generator / poll thread on CPU: the share of the window testpmd's "
                    "forwarding thread / the switch's poll thread ran (schedstat); below ~95% "
                    "other processes took its core and its cycle "
                    "counters include that time, so busy and capacity are not comparable. "
                    "Switch core busy: the poll thread's cycles in iterations that received "
                    "packets over all its cycles in the window (OVS's and ferrovs's own "
                    "`pmd-stats-show`); capacity = delivered / busy share, *derived*, not "
                    "measured; cycles/pkt: processing cycles per received packet. "
                    "`-`: not measured (the floor has no such counter; an older JSON has no "
                    "OVS-DPDK).", ""]
        ks = list(res)
        series = [("delivered Mpps", [res[k] for k in ks])]
        if any(cap(k) for k in ks):
            series.append(("capacity Mpps (derived)", [cap(k) for k in ks]))
        stem = name[:-len(".json")]
        self.bars("%s-mpps.png" % stem, "%s, %d B: delivered Mpps and derived capacity" % (
            bench, size), ks, series, "Mpps", goal_line, goal_label)
        p, l3 = res.get("ferrovs-patch"), res.get("ferrovs-l3_4k")
        if "ovs-l3_4k" in res:
            return "%d B: patch %s Mpps (capacity %s derived); l3_4k %s OVS-DPDK" % (
                size, fmt(p), fmt(cap("ferrovs-patch")), rx(ratio(l3, res.get("ovs-l3_4k"))))
        return "%d B: patch %s Mpps, %s floor; OVS-DPDK not measured" % (
            size, fmt(p), rx(ratio(p, floor)))

    def w5(self):
        d = self.json("w5.json")
        if d is None:
            self.missing("W5", "w5.json")
            self.md += [""]
            return None
        n = d.get("flows")
        steps = d.get("steps", {})
        goal_steps = {"add", "bundle", "dump", "del"}
        rows, labels, vals = [], [], []
        for s in ("add", "bundle", "dump", "del", "incr", "del_after_bundle"):
            if s not in steps:
                continue
            f, o = steps[s].get("ferrovs"), steps[s].get("ovs")
            for who, v in (("ferrovs", f), ("OVS", o)):
                if v == "FAILED":
                    self.fail("W5", "%s %s FAILED" % (who, s))

            def c(v):
                if v is None:
                    return "not run"
                if v == "FAILED":
                    return "FAILED"
                rate = " (%s/s)" % "{:,.0f}".format(n / v) if s in ("add", "bundle", "dump") \
                    and v > 0 else ""
                return "%.3f%s" % (v, rate)
            num = lambda v: v if isinstance(v, (int, float)) else None  # noqa: E731
            r = ratio(num(o), num(f))
            rows.append([s, c(f), c(o), rx(r), ">= %.0fx" % GOAL_W5 if s in goal_steps else "-"])
            labels.append(s)
            vals.append(r)
        self.md += ["%s flows (`priority=100,ip,nw_dst=10.X.Y.Z/32`), seconds (flows/s) with "
                    "Debian's `ovs-ofctl -O OpenFlow14`; OVS %s." % (
                        "{:,}".format(n) if n else "?", d.get("ovs_version") or "?"), ""]
        self.md += table(["step", "ferrovs", "OVS", "OVS time / ferrovs time", "goal"], rows)
        wrows = []
        for w in d.get("w1_during_add", []):
            if w.get("status") == "FAILED":
                self.fail("W5", "W1 during %s add FAILED" % w.get("mode"))
                wrows.append([w.get("mode"), "FAILED", "", "", "", ""])
                continue
            wrows.append([w["mode"], "%.2f" % w["add_s"], "%.2f" % w["baseline_mpps"],
                          fmt(w.get("during_mpps")), fmt(w.get("during_min_mpps")),
                          fmt(w.get("during_pct"), "%.1f%%")])
        if wrows:
            self.md += ["W1 (1K flows, pcap -> null, one poll thread) while the flows are "
                        "added (goal: keeps >= %.0f%%):" % GOAL_W5_W1, ""]
            self.md += table(["add", "add s", "before Mpps", "during Mpps", "min Mpps",
                              "during / before"], wrows)
        if labels:
            self.bars("w5-ratios.png", "W5 (%s flows): OVS time / ferrovs time per step" % (
                "{:,}".format(n) if n else "?"), labels, [("OVS / ferrovs", vals)], "ratio",
                GOAL_W5, "goal >= %.0fx OVS" % GOAL_W5)
        got = [("%s %.2fx" % (s, v)) for s, v in zip(labels, vals) if v and s in goal_steps]
        return ", ".join(got) + " (goal >= %.0fx)" % GOAL_W5 if got else None

    def w8(self):
        d = self.json("w8.json")
        if d is None:
            self.missing("W8", "w8.json")
            self.md += [""]
            return None
        fv, peers = d.get("ferrovs", {}), d.get("peers", {})
        if any("mpps" in v for v in fv.values()):
            fv = {"est": fv}  # bench/w8.sh before (b) and (c): established connections only
        rows, labels, vals = [], [], []

        def cells(case, col, c):
            f, o = fv[case][c], (peers.get(c) or {}).get(col)
            if o and o.get("status") != "ok":
                self.fail("W8", "OVS-DPDK %s at %s connections FAILED" % (case, c))
            om = o.get("mpps") if o and o.get("status") == "ok" else None
            r = ratio(f.get("mpps"), om)
            return r, ["%.2f (%.0f)" % (f["mpps"], f["cycles_per_packet"]),
                       "-" if o is None else ("FAILED" if om is None else "%.2f (%.0f)" % (
                           om, o.get("cycles_per_packet") or 0)), rx(r)]

        for c in sorted(fv.get("est", {}), key=int):
            r, row = cells("est", "ovs_ct_est", c)
            rows.append(["{:,}".format(int(c))] + row)
            labels.append("{:,}".format(int(c)))
            vals.append(r)
        self.md += ["(a) established connections through `ct(table=1)` and `ct_state=+trk+est`"
                    " (`bench/w8.sh --print-rules`), one core, pcap -> null; Mpps (cycles per "
                    "packet); load %s." % " ".join("%.2f" % x for x in d.get("load", [])), ""]
        self.md += table(["connections", "ferrovs", "OVS-DPDK", "ferrovs / OVS-DPDK"], rows)
        new_rows = []
        for case, col, name in (("new", "ovs_ct_new", "(b) ct(commit)"),
                                ("snat", "ovs_ct_snat", "(c) ct(commit,nat(src=...))")):
            for c in sorted(fv.get(case, {}), key=int):
                r, row = cells(case, col, c)
                new_rows.append([name, "{:,}".format(int(c))] + row)
                labels.append("%s %s" % (name.split()[0], "{:,}".format(int(c))))
                vals.append(r)
        if new_rows:
            self.md += ["(b) and (c), new connections (`bench/w8.sh`: a SYN and an RST each, so"
                        " new connections per second are half the packet rate), the rules of (a)"
                        " and their SNAT variant (`--print-rules snat`):", ""]
            self.md += table(["new connections", "tuples", "ferrovs", "OVS-DPDK",
                              "ferrovs / OVS-DPDK"], new_rows)
        self.md += ["Goal: >= %.0fx OVS-DPDK." % GOAL_W8, ""]
        if labels:
            self.bars("w8-ratios.png", "W8: ferrovs / OVS-DPDK", labels,
                      [("ferrovs / OVS-DPDK", vals)], "ratio", GOAL_W8,
                      "goal >= %.0fx OVS-DPDK" % GOAL_W8)
        got = ["%s conns %.2fx" % (l, v) for l, v in zip(labels, vals) if v]
        return ", ".join(got) + " (goal >= %.0fx)" % GOAL_W8 if got else None

    def w7(self):
        d = self.json("w7.json")
        if d is None:
            self.missing("W7", "w7.json")
            self.md += [""]
            return None
        res = d.get("results", {})
        dirs = [c[len("ferrovs_"):] for c in d.get("columns", []) if c.startswith("ferrovs_")]
        for k, v in (d.get("verified") or {}).items():
            if not v.get("ok"):
                self.fail("W7", "check %s FAILED: %s" % (k, v.get("reason")))

        def cell(c):
            if not c:
                return "-"
            if c.get("status") != "ok":
                return "FAILED"
            cpp = c.get("cycles_per_packet")
            return "%.2f (%.0f)" % (c["mpps"], cpp) if cpp else "%.2f" % c["mpps"]

        rows, labels, series = [], [], {x: [] for x in dirs}
        for f in sorted(res, key=int):
            row = ["{:,}".format(int(f))]
            for x in dirs:
                a, b = res[f].get("ferrovs_" + x), res[f].get("ovs_" + x)
                for sw, c in (("ferrovs", a), ("OVS-DPDK", b)):
                    if c and c.get("status") != "ok":
                        self.fail("W7", "%s %s at %s flows FAILED" % (sw, x, f))
                r = ratio(a.get("mpps") if a and a.get("status") == "ok" else None,
                          b.get("mpps") if b and b.get("status") == "ok" else None)
                row += [cell(a), cell(b), rx(r)]
                series[x].append(r)
            rows.append(row)
            labels.append("{:,}".format(int(f)))
        self.md += ["%s, one core, delivered Mpps (cycles per packet): pcap -> br-int -> "
                    "tunnel port -> br-phy -> null (encap) and the encapsulated pcap -> br-phy "
                    "-> tunnel port -> br-int -> null (decap); OVS-DPDK %s native tunnelling on "
                    "the same core; load %s." % (
                        (d.get("proto") or "?").upper(), (d.get("versions") or {}).get("ovs", ""),
                        " ".join("%.2f" % x for x in d.get("load", []))), ""]
        hdr = ["flows"]
        for x in dirs:
            hdr += ["ferrovs " + x, "OVS-DPDK " + x, "ferrovs / OVS-DPDK"]
        self.md += table(hdr, rows)
        self.md += ["Goal: >= %.0fx OVS-DPDK on encap and on decap." % GOAL_W7, ""]
        if labels:
            self.bars("w7-ratios.png", "W7: ferrovs / OVS-DPDK, tunnels", labels,
                      [(x, series[x]) for x in dirs], "ratio", GOAL_W7,
                      "goal >= %.0fx OVS-DPDK" % GOAL_W7)
        got = ["%s %s %.2fx" % (x, l, v) for x in dirs for l, v in zip(labels, series[x]) if v]
        return ", ".join(got) + " (goal >= %.0fx)" % GOAL_W7 if got else None

    def build(self):
        self.out.mkdir(parents=True, exist_ok=True)
        self.header()
        summary = []
        for b in ALL:
            if b not in self.requested:
                continue
            self.md += ["## %s — %s" % (b, TITLES[b]), ""]
            if b in NO_SCRIPT:
                self.md += ["Not measured (no script yet). " + NO_SCRIPT_NOTE[b], ""]
                summary.append([b, "not measured (no script yet)", "-"])
                continue
            head = {"W1": self.w1, "W2": self.w2,
                    "W3": lambda: self.mem_ports(
                        "W3", ["w3.json"], "Goals: >= %.0f Mpps per switch core with `patch` "
                        "(line in the plot; compare the derived capacity when the generator "
                        "limits the delivered rate); >= %.1fx OVS-DPDK with `openflow`/l3_4k "
                        "(the l3_4k row's / OVS-DPDK columns)." % (GOAL_W3_PATCH, GOAL_W3_OF),
                        GOAL_W3_PATCH, "goal: patch >= %.0f Mpps" % GOAL_W3_PATCH),
                    "W5": self.w5,
                    "W7": self.w7,
                    "W8": self.w8,
                    "W6": lambda: self.mem_ports(
                        "W6", ["w6.json", "w6-1518.json"], "Goal: >= %.1fx OVS-DPDK at 64 B "
                        "with `openflow`/l3_4k (the l3_4k row's / OVS-DPDK columns); 1518 B "
                        "beside it." % GOAL_W6)}[b]()
            self.commands(b)
            bad = self.failed.get(b)
            if bad:
                self.md += ["**FAILED**: " + "; ".join(bad), ""]
            measured = any((self.src / f).exists() for f in FILES[b])
            status = "FAILED" if bad else ("measured" if measured else "not measured")
            summary.append([b, status, head or "-"])
        self.summary(summary)
        self.load_section()
        (self.out / "report.md").write_text("\n".join(self.md))
        return 3 if self.failed else 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "facts":
        print(json.dumps(machine_facts(), indent=1))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="src", required=True, help="directory of the JSON files")
    ap.add_argument("--out", help="where report.md and the PNGs go (default: --from)")
    ap.add_argument("--only", default="", help="comma-separated subset of W1..W8")
    a = ap.parse_args()
    explicit = [x.strip().upper() for x in a.only.split(",") if x.strip()]
    bad = [x for x in explicit if x not in ALL]
    if bad:
        ap.error("unknown benchmark(s) %s (known: %s)" % (",".join(bad), ",".join(ALL)))
    src = Path(a.src)
    if not src.is_dir():
        ap.error("%s is not a directory" % src)
    runs = {}
    if (src / "runs.json").exists():
        runs = json.loads((src / "runs.json").read_text())
    requested = explicit or runs.get("requested") or ALL
    rep = Report(src, a.out or src, requested, set(explicit))
    rc = rep.build()
    print("report: %s (%d plots)%s" % (rep.out / "report.md", len(rep.pngs),
                                       "; FAILED: " + ", ".join(sorted(rep.failed))
                                       if rep.failed else ""))
    return rc


if __name__ == "__main__":
    sys.exit(main())
