"""ferrovsd run as ovs-vswitchd is run: --detach returns when every socket listens, a locked
pidfile that ovs-appctl finds, OVS's names, a log file that vlog/reopen reopens, --monitor
restarting a crashed daemon, and exit --cleanup."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BIN, require, run


@pytest.fixture
def rundir():
    d = Path(tempfile.mkdtemp(prefix="ferrovs-daemon-"))
    yield d
    ctl = d / "ferrovsd.ctl"
    if ctl.exists():
        run([str(BIN / "ferrovs"), "-t", str(ctl), "exit"], check=False, timeout=10)
        time.sleep(0.5)
    pid = d / "ferrovsd.pid"
    if pid.exists():
        try:
            os.kill(int(pid.read_text().strip()), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass
    shutil.rmtree(d, ignore_errors=True)


def ferrovsd(rundir, *extra, check=True):
    return run([str(BIN / "ferrovsd"), "--rundir", str(rundir), *extra], check=check, timeout=60)


def cli(rundir, *args, check=True):
    return run([str(BIN / "ferrovs"), "--rundir", str(rundir), *args], check=check)


def wait_gone(path, timeout=10):
    deadline = time.time() + timeout
    while path.exists() and time.time() < deadline:
        time.sleep(0.05)
    return not path.exists()


def test_detach_returns_when_every_socket_listens(rundir):
    require("ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    # A bridge in the database, so the next start must create its OpenFlow socket.
    ferrovsd(rundir, "--detach")
    cli(rundir, "add-br", "brd")
    cli(rundir, "exit")
    assert wait_gone(rundir / "ferrovsd.ctl")
    assert not (rundir / "brd.mgmt").exists()

    r = ferrovsd(rundir, "--detach", "--log-file")
    assert r.returncode == 0
    # No waiting: the moment --detach returns, every tool works.
    for sock in ("db.sock", "ferrovsd.ctl", "brd.mgmt"):
        assert (rundir / sock).exists(), sock
    env = dict(os.environ, OVS_RUNDIR=str(rundir))
    run(["ovs-vsctl", f"--db=unix:{rundir}/db.sock", "br-exists", "brd"])
    assert "NORMAL" in run(["ovs-ofctl", "dump-flows", "brd"], env=env).stdout
    # The pidfile holds the daemon's pid and OVS's control socket name points at it.
    pid = int((rundir / "ferrovsd.pid").read_text())
    assert (rundir / f"ferrovsd.{pid}.ctl").is_symlink()
    assert "ferrovs" in run(["ovs-appctl", "-t", "ferrovsd", "version"], env=env).stdout
    # The log file got the start-up lines; a second daemon is refused by the pidfile lock.
    assert "ready: control socket" in (rundir / "ferrovsd.log").read_text()
    second = ferrovsd(rundir, check=False)
    assert second.returncode != 0
    assert "pidfile" in second.stderr and str(pid) in second.stderr, second.stderr
    assert cli(rundir, "list-br").stdout.split() == ["brd"]
    # vlog/reopen after a rotation: later lines go to a new file.
    (rundir / "ferrovsd.log").rename(rundir / "ferrovsd.log.1")
    run(["ovs-appctl", "-t", "ferrovsd", "vlog/reopen"], env=env)
    assert "Logging to file" in run(["ovs-appctl", "-t", "ferrovsd", "vlog/list"], env=env).stdout
    assert cli(rundir, "exit", "--bogus", check=False).returncode == 1
    cli(rundir, "exit", "--cleanup")
    assert wait_gone(rundir / "ferrovsd.pid")
    # OVS's line format: UTC timestamp, sequence number, module, level, message.
    last = [l for l in (rundir / "ferrovsd.log").read_text().splitlines() if "exiting" in l]
    assert last and re.match(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|\d{5}\|vswitchd\|INFO\|exiting", last[0]
    ), last
    for name in ("ferrovsd.ctl", f"ferrovsd.{pid}.ctl", "brd.mgmt"):
        assert not (rundir / name).exists(), name


def test_ovs_names_let_a_bare_ovs_appctl_find_the_daemon(rundir):
    require("ovs-appctl")
    ferrovsd(rundir, "--detach", "--ovs-names")
    env = dict(os.environ, OVS_RUNDIR=str(rundir))
    out = run(["ovs-appctl", "version"], env=env).stdout
    assert "ferrovs" in out
    pid = int((rundir / "ferrovsd.pid").read_text())
    assert (rundir / "ovs-vswitchd.pid").is_symlink()
    assert (rundir / f"ovs-vswitchd.{pid}.ctl").is_symlink()
    cli(rundir, "exit")
    assert wait_gone(rundir / f"ovs-vswitchd.{pid}.ctl")
    assert not (rundir / "ovs-vswitchd.pid").exists()


def test_monitor_restarts_a_crashed_daemon(rundir):
    ferrovsd(rundir, "--detach", "--monitor", "--log-file")
    cli(rundir, "add-br", "brmon")
    pid = int((rundir / "ferrovsd.pid").read_text())
    os.kill(pid, signal.SIGABRT)  # (a kill(SIGSEGV) does not stop a Rust process)
    deadline = time.time() + 20
    new = None
    while time.time() < deadline:
        try:
            new = int((rundir / "ferrovsd.pid").read_text())
        except (OSError, ValueError):
            new = None
        if new and new != pid and cli(rundir, "version", check=False).returncode == 0:
            break
        time.sleep(0.2)
    assert new and new != pid, "the monitor did not restart the daemon"
    # The configuration came back from the database.
    assert cli(rundir, "list-br").stdout.split() == ["brmon"]
    assert "restarting" in (rundir / "ferrovsd.log").read_text()
    # A normal exit ends the monitor too.
    monitors = run(["pgrep", "-f", f"ferrovsd --rundir {rundir} --detach --monitor"],
                   check=False).stdout.split()
    cli(rundir, "exit")
    assert wait_gone(rundir / "ferrovsd.pid")
    deadline = time.time() + 5
    while time.time() < deadline and any(Path(f"/proc/{m}").exists() for m in monitors):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{m}/status").exists() and "zombie" not in
                   Path(f"/proc/{m}/status").read_text() for m in monitors), monitors
