"""The daemon's own footprint: sockets only its group may use, and `--user` dropping root for
the few network capabilities a switch needs, with the switch still working."""

import os
import shutil
import stat
import tempfile
from pathlib import Path

from conftest import BIN, Daemon, need_root, require, run, wait_for

# CAP_NET_BIND_SERVICE (10), CAP_NET_ADMIN (12), CAP_NET_RAW (13), CAP_IPC_LOCK (14),
# CAP_BPF (39).
KEPT_CAPS = (1 << 10) | (1 << 12) | (1 << 13) | (1 << 14) | (1 << 39)


def proc_status(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        out[k] = v.split()
    return out


def start(extra=(), umask=None):
    tmp = Path(tempfile.mkdtemp(prefix="ferrovs-test-"))
    old = os.umask(umask) if umask is not None else None
    try:
        return Daemon(tmp, extra_args=extra), tmp
    finally:
        if old is not None:
            os.umask(old)


def stop(d, tmp):
    d.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


def test_sockets_are_0770_whatever_the_umask():
    d, tmp = start(umask=0)
    try:
        d.cli("add-br", "brm")
        wait_for(lambda: (tmp / "brm.mgmt").exists(), what="brm.mgmt")
        for name in ["db.sock", "ferrovsd.ctl", "brm.mgmt", "brm.snoop"]:
            assert mode(tmp / name) == 0o770, f"{name}: {oct(mode(tmp / name))}"
        assert mode(tmp / "conf.db") & 0o007 == 0, oct(mode(tmp / "conf.db"))
    finally:
        stop(d, tmp)


def test_user_keeps_only_network_capabilities():
    need_root()
    require("ovs-vsctl")
    d, tmp = start(extra=["--user", "nobody:nogroup"])
    try:
        wait_for(lambda: "running as nobody" in d.logtext(), what="the log line")
        st = proc_status(d.proc.pid)
        assert st["Uid"] == ["65534"] * 4, st["Uid"]
        assert st["Gid"] == ["65534"] * 4, st["Gid"]
        assert int(st["CapEff"][0], 16) == KEPT_CAPS, st["CapEff"]
        assert int(st["CapPrm"][0], 16) == KEPT_CAPS, st["CapPrm"]
        assert int(st["CapInh"][0], 16) == 0
        assert os.stat(tmp / "db.sock").st_uid == 65534
        # Still a switch: the database works and an internal port (a TAP device, which needs
        # CAP_NET_ADMIN) comes up.
        port = f"fvu{os.getpid() % 100000}"
        db = f"--db=unix:{tmp}/db.sock"
        run(["ovs-vsctl", "--timeout=10", db, "add-br", "bru", "--", "add-port", "bru", port,
             "--", "set", "Interface", port, "type=internal"])
        wait_for(lambda: run(["ip", "link", "show", port], check=False).returncode == 0,
                 what="the internal port's TAP device")
        out = run(["ovs-vsctl", "--timeout=10", db, "get", "Interface", port, "error"]).stdout
        assert out.strip() in ("[]", '""'), out
        # Files the user may not touch stay out of reach, whatever the database says.
        r = d.cli("add-br", "brv")
        assert r.returncode == 0
    finally:
        stop(d, tmp)
        run(["ip", "link", "del", f"fvu{os.getpid() % 100000}"], check=False)


def test_unknown_user_refuses_to_start():
    tmp = Path(tempfile.mkdtemp(prefix="ferrovs-test-"))
    try:
        r = run([str(BIN / "ferrovsd"), "--rundir",
                 str(tmp), "--user", "no-such-user-ferrovs"], check=False, timeout=20)
        assert r.returncode != 0
        assert "no user named 'no-such-user-ferrovs'" in r.stdout + r.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
