"""Tiny QEMU guests on vhost-user ports, built at test time from Debian packages: the
distribution kernel (`apt-get download` of the package `linux-image-amd64` points to, unpacked
with `dpkg-deb`) and a busybox initramfs with the virtio-net modules in `modules.dep` order,
plus iperf3 and the libraries `ldd` lists for it. No disk image. The kernel and the base archive
are cached in /var/tmp/ferrovs-vm/<kernel package>/; each guest appends its own job script as a
second archive (the kernel unpacks concatenated archives in order).

The guest's /init loads the modules, prints `VM-BOOTED`, runs /job with busybox sh and powers
off; everything goes to the serial console, a file the tests read. Each job starts by printing
`VM-FEATURES` and the 64 feature bits the NIC's virtio driver negotiated (sysfs, bit 0 first),
so a test sees whether the guest runs split or packed rings (bit 34, `VIRTIO_F_RING_PACKED`).

`Guest(..., packed=True)` gives the NIC packed virtqueues (`virtio-net-pci,...,packed=on`).

Accelerator: TCG unless FERROVS_VM_ACCEL says otherwise. This project's machines expose a
/dev/kvm from `kvm_pvm` (pagetable-based virtualization), which runs only PVM-enabled guest
kernels: Debian's kernel crawls there (minutes in its decompressor), see docs/vhost.md.
The kernel gets `no_timer_check`: on a loaded machine a TCG guest's timer check at boot can
fail ("IO-APIC + timer doesn't work!", a panic; seen under three CPU hogs).
The NIC has no MSI-X (`vectors=0`): QEMU 7.2 under TCG segfaults unmasking the MSI-X vectors of
a vhost-user virtio-net-pci (msix_set_vector_notifiers with no KVM irqfds), INTx works.
"""

import fcntl
import gzip
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

CACHE = Path(os.environ.get("FERROVS_VM_CACHE", "/var/tmp/ferrovs-vm"))
MODULES = ["kernel/drivers/virtio/virtio_pci.ko", "kernel/drivers/net/virtio_net.ko"]

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
while read m; do insmod "/$m" || echo "VM-ERROR insmod $m"; done < /modlist
ip link set lo up
echo VM-BOOTED
sh /job
echo "VM-JOB-EXIT $?"
poweroff -f
"""


# The first line of every job (the base initramfs, cached, stays as it was).
FEATURES = 'echo "VM-FEATURES $(cat /sys/class/net/eth0/device/features)"\n'

# Guest jobs for an iperf3 TCP pair (test_vm.py, bench/w6_vm.py): the server guest prints
# IPERF-SERVER-READY and serves one test; the client pings its peer until it answers, then
# runs iperf3 for `seconds` (with `opts`, e.g. --bidir) and prints the report and IPERF-DONE
# (or PING-FAILED/IPERF-FAILED). Both then print what the guest's NIC received (RXSTATS).
RXSTATS = ('echo "VM-RXSTATS $(cat /sys/class/net/eth0/statistics/rx_packets)'
           ' $(cat /sys/class/net/eth0/statistics/rx_bytes)"\n')

SERVER_JOB = """
ip addr add {ip}/24 dev eth0
ip link set eth0 up
iperf3 -s -1 > /tmp/iperf3.out 2>&1 &
echo IPERF-SERVER-READY
wait
cat /tmp/iperf3.out
""" + RXSTATS

CLIENT_JOB = """
ip addr add {ip}/24 dev eth0
ip link set eth0 up
n=0
until ping -c 1 -W 1 {peer} > /dev/null; do
    n=$((n + 1))
    if [ $n -ge 150 ]; then echo PING-FAILED; exit 1; fi
done
ping -c 5 -i 0.2 {peer}
n=0
until iperf3 -c {peer} -t {seconds} -f m {opts} > /tmp/iperf3.out 2>&1; do
    n=$((n + 1))
    if [ $n -ge 20 ]; then cat /tmp/iperf3.out; echo IPERF-FAILED; exit 1; fi
    sleep 1
done
cat /tmp/iperf3.out
echo IPERF-DONE
""" + RXSTATS


def rx_stats(text):
    """(packets, bytes) the guest's NIC received, from its RXSTATS line, or None."""
    m = re.search(r"VM-RXSTATS (\d+) (\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def iperf3_result(text):
    """(bytes received, Mbit/s) from the receiver line of an iperf3 client's report, or None."""
    m = re.search(r"([\d.]+) (K|M|G)Bytes\s+([\d.]+) Mbits/sec\s+receiver", text)
    if not m:
        return None
    return float(m.group(1)) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)], \
        float(m.group(3))


def iperf3_receivers(text):
    """{role: bytes received} from the receiver lines of an iperf3 client's --bidir report:
    TX-C (client to server) and RX-C (server to client)."""
    return {m.group(1): float(m.group(2)) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(3)]
            for m in re.finditer(r"\[(TX-C|RX-C)\].*?([\d.]+) (K|M|G)Bytes\s+[\d.]+ Mbits/sec"
                                 r"\s+receiver", text)}


def _run(cmd, cwd=None, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"{cmd!r} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def newc(files):
    """A cpio archive (newc format) of [(path, mode, bytes)]; directories have mode
    S_IFDIR, symbolic links S_IFLNK with the target as their bytes."""
    out = bytearray()
    for ino, (name, mode, data) in enumerate([*files, ("TRAILER!!!", 0, b"")], 1):
        nm = name.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(mode) else 1
        fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(nm), 0)
        out += b"070701" + "".join(f"{v:08x}" for v in fields).encode() + nm
        out += bytes(-len(out) % 4) + data
        out += bytes(-len(out) % 4)
    return bytes(out)


def kernel_package():
    """The versioned package Debian's linux-image-amd64 depends on (linux-image-X.Y.Z-N-amd64)."""
    out = _run(["apt-cache", "depends", "linux-image-amd64"])
    m = re.search(r"Depends: (linux-image-[0-9][^\s]*-amd64)\b", out)
    if not m:
        raise AssertionError(f"no kernel package in apt-cache depends linux-image-amd64:\n{out}")
    return m.group(1)


def _module_order(moddir):
    deps = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
    order = []

    def add(mod):
        if mod in order:
            return
        for d in reversed(deps[mod]):
            add(d)
        order.append(mod)

    for m in MODULES:
        add(m)
    return order


def _binary_with_libs(path):
    """[(path in the guest, bytes)] for a dynamically linked host binary and what ldd lists."""
    out = [(path, Path(path).read_bytes())]
    for line in _run(["ldd", path]).splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            lib = m.group(1)
            out.append((lib, Path(os.path.realpath(lib)).read_bytes()))
    return out


def image():
    """(kernel path, base initramfs bytes), built once per kernel package."""
    pkg = kernel_package()
    d = CACHE / pkg
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (d / "initrd.gz").exists():
            _build(pkg, d)
    return d / "vmlinuz", (d / "initrd.gz").read_bytes()


def _build(pkg, d):
    with tempfile.TemporaryDirectory(prefix="ferrovs-vm-") as t:
        t = Path(t)
        _run(["apt-get", "download", pkg], cwd=t)
        deb = next(t.glob(f"{pkg}_*.deb"))
        root = t / "root"
        _run(["dpkg-deb", "-x", str(deb), str(root)])
        kver = pkg.removeprefix("linux-image-")
        _run(["depmod", "-b", str(root), kver])
        moddir = root / "lib" / "modules" / kver

        busybox = shutil.which("busybox")
        r = subprocess.run(["ldd", busybox or "/nonexistent"], capture_output=True, text=True)
        if busybox is None or "not a dynamic" not in r.stdout + r.stderr:
            raise AssertionError("needs a static busybox (Debian's busybox-static)")
        files = [("init", stat.S_IFREG | 0o755, INIT.encode()),
                 ("bin/busybox", stat.S_IFREG | 0o755, Path(busybox).read_bytes())]
        mods = []
        for m in _module_order(moddir):
            name = f"mod/{Path(m).name}"
            files.append((name, stat.S_IFREG | 0o644, (moddir / m).read_bytes()))
            mods.append(name)
        files.append(("modlist", stat.S_IFREG | 0o644, ("\n".join(mods) + "\n").encode()))
        for path, data in _binary_with_libs(shutil.which("iperf3")):
            files.append((path.lstrip("/"), stat.S_IFREG | 0o755, data))
        dirs = {"dev", "proc", "sys", "tmp"}
        for f in files:
            dirs.update(str(p) for p in Path(f[0]).parents if str(p) != ".")
        files = [(p, stat.S_IFDIR | 0o755, b"") for p in sorted(dirs)] + files
        shutil.copy(next(root.glob("boot/vmlinuz-*")), d / "vmlinuz")
        (d / "initrd.gz.tmp").write_bytes(gzip.compress(newc(files), 1))
        os.replace(d / "initrd.gz.tmp", d / "initrd.gz")


class Guest:
    """One QEMU guest with one vhost-user virtio-net NIC on `sock` (QEMU listens there when
    `server`), running `job` (busybox sh) after boot, with packed virtqueues if `packed`.
    A client (`server` false) with `reconnect` set connects again by itself, once a second,
    after the switch went away (`-chardev socket,...,reconnect=1`).
    Its console is `workdir/NAME.log`."""

    def __init__(self, workdir, name, sock, mac, job, server=False, mem_mb=256, packed=False,
                 reconnect=False):
        kernel, base = image()
        self.name = name
        self.log = Path(workdir) / f"{name}.log"
        initrd = Path(workdir) / f"{name}.initrd.gz"
        job = FEATURES + job
        extra = gzip.compress(newc([("job", stat.S_IFREG | 0o755, job.encode())]), 1)
        initrd.write_bytes(base + extra)
        chardev = f"socket,id=c0,path={sock}" + (",server=on,wait=off" if server else "")
        if reconnect and not server:
            chardev += ",reconnect=1"
        accel = os.environ.get("FERROVS_VM_ACCEL", "tcg")
        self.proc = subprocess.Popen(
            ["qemu-system-x86_64", "-accel", accel, "-machine", "pc", "-smp", "1",
             "-m", f"{mem_mb}M", "-nodefaults", "-display", "none", "-no-reboot",
             "-serial", f"file:{self.log}",
             "-kernel", str(kernel), "-initrd", str(initrd),
             "-append", "console=ttyS0 quiet panic=-1 no_timer_check",
             "-object", f"memory-backend-memfd,id=mem,size={mem_mb}M,share=on",
             "-numa", "node,memdev=mem",
             "-chardev", chardev, "-netdev", "vhost-user,id=n0,chardev=c0",
             "-device", f"virtio-net-pci,netdev=n0,mac={mac},vectors=0"
             + (",packed=on" if packed else "")],
            stdout=subprocess.DEVNULL, stderr=open(Path(workdir) / f"{name}.qemu.log", "w"))

    def text(self):
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_text(self, pattern, timeout, count=1):
        """The console's text once `pattern` occurs `count` times; fails early if QEMU exits."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            t = self.text()
            if len(re.findall(pattern, t)) >= count:
                return t
            if self.proc.poll() is not None and len(re.findall(pattern, self.text())) < count:
                raise AssertionError(f"guest exited ({self.proc.returncode}) before "
                                     f"{pattern!r}:\n{t[-3000:]}")
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {pattern!r} on the guest console:\n"
                             f"{self.text()[-3000:]}")

    def features(self, timeout):
        """The feature bits the guest's virtio-net driver negotiated, as sysfs shows them: a
        string of '0'/'1', bit 0 first."""
        t = self.wait_text(r"VM-FEATURES [01]+", timeout)
        return re.search(r"VM-FEATURES ([01]+)", t).group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
