"""OVS-DPDK 3.1 as a W3/W6 peer, and the switch core's busy share. Used by w3_run.py, w6_run.py.

`Ovs` runs Debian's `ovs-vswitchd-dpdk` (by its path; the system's `ovs-vswitchd` alternative is
left alone) with a private `ovsdb-server`: db, sockets, pidfiles and logs under a directory of
the run (`OVS_RUNDIR`, `OVS_DBDIR`, ... point there), both daemons pinned with `taskset` to the
switch core as ferrovsd is, `pmd-cpu-mask` = that core, `dpdk-extra` with a private
`--file-prefix` and `--no-pci`. Bridge `br0`, `datapath_type=netdev`, OpenFlow 1.0 and 1.3.

Memory: `dpdk-socket-mem=1024` on 2 MiB hugepages. `Hugepages` asks the kernel for more pages
if fewer than 640 are free and mounts hugetlbfs under the run's temp dir if none is mounted,
and undoes both at exit; if the kernel refuses, OVS runs with `--no-huge --legacy-mem -m 2048`
(`--legacy-mem` keeps OVS from adding the `--in-memory` that `--no-huge` refuses) and the
result says `no-huge`.

On-CPU share: how much of the window the poll thread actually ran (`/proc/TID/schedstat`):
below 1, other processes took the switch core (the machines are shared) and the busy cycles
include time the thread was not running.

Busy share: the poll thread's cycles spent in iterations that received packets over all its
polling cycles, over the measured window (`pmd-stats-clear` at its start, `pmd-stats-show` at
its end): OVS's "processing cycles" over processing + idle; ferrovs's `processing_cycles` over
processing + idle + the time it slept. Capacity = delivered Mpps / busy share is *derived*:
what the core would forward if its idle polls were packets at the same cost.
"""

import json
import os
import re
import subprocess
import time
from pathlib import Path

VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
HP_SYSFS = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
HP_WANT, HP_NEED = 1024, 640


def meminfo(key):
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def ensure_installed():
    """Installs openvswitch-switch-dpdk if its vswitchd is missing (as w1-peers.sh does)."""
    if os.access(VSWITCHD, os.X_OK):
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env, timeout=600)
    r = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends",
                        "openvswitch-switch-dpdk"], capture_output=True, text=True, env=env,
                       timeout=900)
    if r.returncode != 0 or not os.access(VSWITCHD, os.X_OK):
        raise RuntimeError("apt-get install openvswitch-switch-dpdk failed: " + r.stderr[-300:])


class Hugepages:
    """2 MiB hugepages for OVS-DPDK: set up on entry if needed, undone on exit.

    Other jobs on the machine may change the page count too (w1-peers.sh does the same), so
    `ensure` runs again before every OVS start, and the exit restores the count only if it is
    still the one set here (otherwise the last writer owns it)."""

    def __init__(self, work, want=HP_WANT, need=HP_NEED):
        self.work, self.orig, self.mine, self.mount = work, None, None, None
        self.want, self.need = want, need
        self.mode, self.note = "hugepages", ""

    def __enter__(self):
        try:
            self.ensure()
            if not any(f.split()[2] == "hugetlbfs" for f in open("/proc/mounts")):
                m = self.work / "hugepages"
                m.mkdir(exist_ok=True)
                subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev",
                                str(m)], check=True, capture_output=True)
                self.mount = m
        except (OSError, subprocess.CalledProcessError) as e:
            self.mode, self.note = "no-huge", str(e)
        return self

    def ensure(self):
        """At least `need` free pages (asks the kernel for `want` free); raises OSError if
        refused."""
        if self.mode != "hugepages":
            return
        free = meminfo("HugePages_Free")
        if free < self.need:
            cur = int(HP_SYSFS.read_text())
            if self.orig is None:
                self.orig = cur
            self.mine = cur + self.want - free
            HP_SYSFS.write_text(str(self.mine))
            free = meminfo("HugePages_Free")
        if free < self.need:
            raise OSError(f"only {free} free 2 MiB hugepages after asking for {self.want}")
        self.note = f"{free} free 2 MiB hugepages"

    def __exit__(self, *exc):
        if self.mount:
            subprocess.run(["umount", str(self.mount)], capture_output=True)
        try:
            if self.orig is not None and int(HP_SYSFS.read_text()) == self.mine:
                HP_SYSFS.write_text(str(self.orig))
        except (OSError, ValueError):
            pass


def apply_nice(n, pid="self"):
    """Runs process `pid` (and what it starts later) at nice `n`, and gives its session's
    scheduler autogroup (kernel.sched_autogroup_enabled) the same nice: with autogroups a
    process's nice only weighs against its own session, so `nice -n -20` alone leaves a poll
    thread sharing its core evenly with every other session's build. Returns what was set."""
    if pid == "self":
        os.setpriority(os.PRIO_PROCESS, 0, n)
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(n))
        return "autogroup"
    except OSError:
        return "process"


def pmd_oncpu_ns(pid, prefixes=("pmd",)):
    """Nanoseconds the process's poll thread (the first thread whose name starts with one of
    `prefixes`: pmd* for both switches) has run on a CPU."""
    for t in sorted(Path(f"/proc/{pid}/task").iterdir()):
        try:
            if (t / "comm").read_text().startswith(prefixes):
                return int((t / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return None


class OnCpu:
    """The poll thread's share of the window it was on a CPU (`/proc/TID/schedstat`): below
    1, something else took the switch core and the cycle counters include that time."""

    def __init__(self, prefixes=("pmd",)):
        self.t0 = self.c0 = None
        self.prefixes = prefixes

    def start(self, pid):
        self.c0, self.t0 = pmd_oncpu_ns(pid, self.prefixes), time.monotonic_ns()

    def share(self, pid):
        c1, t1 = pmd_oncpu_ns(pid, self.prefixes), time.monotonic_ns()
        if self.c0 is None or c1 is None or t1 <= self.t0:
            return None
        return (c1 - self.c0) / (t1 - self.t0)


def busy(processing, idle, other=0.0):
    total = processing + idle + other
    return processing / total if total > 0 else None


class Ovs:
    """A private ovsdb-server + ovs-vswitchd-dpdk with bridge br0 (see the module doc)."""

    def __init__(self, base, tag, core, mem_mode, nice=None, other_config=None):
        self.dir = base
        self.other_config = dict(other_config or {})
        for d in ("run", "db", "log", "etc"):
            (base / d).mkdir(parents=True, exist_ok=True)
        self.run = base / "run"
        self.env = dict(os.environ, OVS_RUNDIR=str(self.run), OVS_DBDIR=str(base / "db"),
                        OVS_LOGDIR=str(base / "log"), OVS_SYSCONFDIR=str(base / "etc"))
        self.core = core
        self.tag = tag
        self.mem_mode = mem_mode
        self.nice = nice
        self.started = False

    def sh(self, *cmd, timeout=60):
        r = subprocess.run(list(cmd), capture_output=True, text=True, env=self.env,
                           timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:3])}: {(r.stderr or r.stdout).strip()[-300:]}")
        return r.stdout

    def vsctl(self, *a):
        return self.sh("ovs-vsctl", f"--db=unix:{self.run}/db.sock", "--timeout=60", *a)

    def appctl(self, *a):
        return self.sh("ovs-appctl", "-t", str(self.run / "ovs-vswitchd.ctl"), "--timeout=60",
                       *a)

    def log_errors(self):
        try:
            t = (self.dir / "log" / "ovs-vswitchd.log").read_text()
        except OSError:
            return ""
        return " ".join(re.findall(r"\|(?:ERR|EMER)\|(.*)", t)[-2:])

    def start(self):
        db = self.dir / "db" / "conf.db"
        self.sh("ovsdb-tool", "create", str(db), SCHEMA)
        pin = ["taskset", "-c", str(self.core)]
        self.started = True
        self.sh(*pin, "ovsdb-server", str(db), f"--remote=punix:{self.run}/db.sock",
                f"--pidfile={self.run}/ovsdb-server.pid",
                f"--unixctl={self.run}/ovsdb-server.ctl",
                f"--log-file={self.dir}/log/ovsdb-server.log", "--detach")
        self.vsctl("--no-wait", "init")
        extra = f"--file-prefix={self.tag} --no-pci"
        cfg = ["other_config:dpdk-init=true", f"other_config:pmd-cpu-mask={1 << self.core:#x}"]
        if self.mem_mode == "no-huge":
            extra += " --no-huge --legacy-mem -m 2048"
        else:
            cfg.append("other_config:dpdk-socket-mem=1024")
        cfg.append(f'other_config:dpdk-extra="{extra}"')
        cfg += [f'other_config:{k}="{v}"' for k, v in self.other_config.items()]
        self.vsctl("--no-wait", "set", "Open_vSwitch", ".", *cfg)
        self.sh(*pin, VSWITCHD, f"unix:{self.run}/db.sock",
                f"--pidfile={self.run}/ovs-vswitchd.pid",
                f"--unixctl={self.run}/ovs-vswitchd.ctl",
                f"--log-file={self.dir}/log/ovs-vswitchd.log", "--detach", timeout=120)
        if self.nice is not None:
            apply_nice(self.nice, self.pid())  # --detach made it a session of its own
        deadline = time.time() + 60
        while self.vsctl("get", "Open_vSwitch", ".", "dpdk_initialized").strip() != "true":
            if time.time() > deadline:
                raise RuntimeError("OVS-DPDK did not initialise DPDK: " + self.log_errors())
            time.sleep(0.1)
        self.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev",
                   "protocols=OpenFlow10,OpenFlow13")

    def add_port(self, name, ofport, typ, **options):
        opts = [f'options:{k}="{v}"' for k, v in options.items()]
        self.vsctl("add-port", "br0", name, "--", "set", "Interface", name, f"type={typ}",
                   f"ofport_request={ofport}", *opts)

    def wait_ports(self, names, timeout=30):
        deadline = time.time() + timeout
        while True:
            for n in names:
                err = self.vsctl("get", "Interface", n, "error").strip()
                if err not in ("", "[]"):
                    raise RuntimeError(f"OVS port {n}: {err}")
            rxq = self.appctl("dpif-netdev/pmd-rxq-show")
            if all(f"port: {n} " in rxq for n in names):
                return
            if time.time() > deadline:
                raise RuntimeError(f"OVS ports {names} not polled after {timeout} s: "
                                   + self.log_errors())
            time.sleep(0.2)

    def flows(self, path):
        """Replaces the flow table with the file's rules (no traffic yet) and checks the count."""
        self.sh("ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "br0", str(path))
        want = sum(1 for line in open(path) if line.strip())
        agg = self.sh("ovs-ofctl", "-O", "OpenFlow13", "dump-aggregate", "br0")
        got = re.search(r"flow_count=(\d+)", agg)
        if not got or int(got.group(1)) != want:
            raise RuntimeError(f"OVS holds {got and got.group(1)} rules, expected {want}")

    def pid(self):
        return int((self.run / "ovs-vswitchd.pid").read_text().strip())

    def stats_clear(self):
        self.appctl("dpif-netdev/pmd-stats-clear")
        self.oncpu = OnCpu()
        self.oncpu.start(self.pid())

    def stats(self):
        """The PMD's counters since the last clear: packets, cycles, busy share."""
        share = self.oncpu.share(self.pid())
        out = self.appctl("dpif-netdev/pmd-stats-show")
        sect = out.split("pmd thread", 1)[1].split("main thread")[0] if "pmd thread" in out \
            else ""

        def num(label):
            m = re.search(r"^\s*" + re.escape(label) + r":\s*([0-9.]+)", sect, re.M)
            return float(m.group(1)) if m else None

        proc, idle = num("processing cycles"), num("idle cycles")
        if proc is None or idle is None:
            raise RuntimeError("no PMD section in pmd-stats-show")
        return {"packets": num("packets received"), "processing_cycles": proc,
                "idle_cycles": idle, "busy_share": busy(proc, idle), "pmd_oncpu_share": share,
                "processing_cycles_per_packet": num("avg processing cycles per packet"),
                "upcalls": num("miss with success upcall"), "megaflow_hits": num("megaflow hits"),
                "emc_hits": num("emc hits"), "simple_match_hits": num("simple match hits")}

    def stop(self):
        if not self.started:
            return
        for d in ("ovs-vswitchd", "ovsdb-server"):
            pidf = self.run / f"{d}.pid"
            try:
                pid = int(pidf.read_text().strip())
            except (OSError, ValueError):
                continue
            # --cleanup: ovs-vswitchd deletes its datapath, and with it the persistent taps
            # of the netdev datapath (ovs-netdev, br0) it made in the root namespace.
            subprocess.run(["ovs-appctl", "-t", str(self.run / f"{d}.ctl"), "--timeout=10",
                            "exit", *(["--cleanup"] if d == "ovs-vswitchd" else [])],
                           capture_output=True, env=self.env, timeout=30)
            for sig in (0, 15, 9):
                if sig:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        break
                deadline = time.time() + 10
                while time.time() < deadline and Path(f"/proc/{pid}").exists():
                    time.sleep(0.1)
                if not Path(f"/proc/{pid}").exists():
                    break
        subprocess.run(["rm", "-rf", f"/var/run/dpdk/{self.tag}"], capture_output=True)


class FerrovsProbe:
    """ferrovsd's poll-thread counters (`pmd-stats-clear`, `pmd-stats-show --json`)."""

    def __init__(self, bins, rundir, pid):
        self.cmd = [str(bins / "ferrovs"), "--rundir", str(rundir)]
        self.pid, self.oncpu = pid, OnCpu()

    def stats_clear(self):
        subprocess.run(self.cmd + ["pmd-stats-clear"], check=True, capture_output=True)
        self.oncpu.start(self.pid)

    def stats(self):
        share = self.oncpu.share(self.pid)
        r = subprocess.run(self.cmd + ["pmd-stats-show", "--json"], check=True,
                           capture_output=True, text=True)
        pmds = [p for p in json.loads(r.stdout)["pmds"] if p.get("packets_received")]
        if not pmds:
            raise RuntimeError("no poll thread received packets")
        proc = sum(p["processing_cycles"] for p in pmds)
        idle = sum(p["idle_cycles"] for p in pmds)
        slept = sum(p["sleep_us"] * p["tsc_hz"] / 1e6 for p in pmds)
        pkts = sum(p["packets_received"] for p in pmds)
        return {"packets": pkts, "processing_cycles": proc, "idle_cycles": idle,
                "sleep_cycles": slept, "busy_share": busy(proc, idle, slept), "threads": len(pmds),
                "pmd_oncpu_share": share,
                "processing_cycles_per_packet": proc / pkts,
                "emc_hits": sum(p["emc_hits"] for p in pmds),
                "megaflow_hits": sum(p["megaflow_hits"] for p in pmds)}
