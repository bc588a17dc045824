"""Hostile configuration: what a database client (ovs-vsctl here, as a remote attacker through
--remote ptcp: would be) or a CLI user may not make the root daemon do to the file system.
Each attack is refused with an error where OVS puts it, nothing outside the daemon's
directories is created, changed or removed, and the daemon keeps answering."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BIN, require, run, wait_for


@pytest.fixture
def victim():
    """A directory outside /tmp (the tests' --pcap-dir) holding a file an attacker targets."""
    d = Path(f"/var/tmp/fv-victim-{os.getpid()}")
    d.mkdir(parents=True, exist_ok=True)
    f = d / "precious.txt"
    f.write_text("do not touch\n")
    yield d, f
    shutil.rmtree(d, ignore_errors=True)


def vsctl(daemon, *args, check=True):
    require("ovs-vsctl")
    return run(["ovs-vsctl", "--timeout=10", f"--db=unix:{daemon.rundir}/db.sock", *args],
               check=check)


def iface_error(daemon, name):
    out = vsctl(daemon, "--if-exists", "get", "Interface", name, "error").stdout.strip()
    return out.strip('"')


def test_bridge_names_cannot_become_paths(daemon, victim):
    d, _ = victim
    evil = f"{d}/evil"
    vsctl(daemon, "--no-wait", "--", "--id=@b", "create", "Bridge", f"name={evil}",
          "--", "add", "Open_vSwitch", ".", "bridges", "@b")
    wait_for(lambda: "invalid name" in daemon.logtext(), what="the refusal in the log")
    assert not Path(f"{evil}.mgmt").exists()
    assert sorted(os.listdir(d)) == ["precious.txt"]
    assert daemon.cli("list-br").stdout.split() == []
    # The CLI refuses such names outright.
    r = daemon.cli("add-br", "../x", check=False)
    assert r.returncode == 1 and "not a valid name" in r.stderr


def test_unix_controllers_stay_inside_the_rundir(daemon, victim):
    d, precious = victim
    daemon.cli("add-br", "brc")
    # From the database: refused with a log line; the file is not replaced by a socket.
    vsctl(daemon, "set-controller", "brc", f"punix:{precious}")
    wait_for(lambda: "refused" in daemon.logtext(), what="the refusal in the log")
    time.sleep(0.3)
    assert precious.is_file() and precious.read_text() == "do not touch\n"
    vsctl(daemon, "del-controller", "brc")
    time.sleep(0.3)
    assert precious.is_file(), "del-controller removed a file it did not create"
    # From the CLI: refused before anything is written.
    for bad in (f"punix:{precious}", f"unix:{d}/sock", f"punix:{daemon.rundir}/../x"):
        r = daemon.cli("set-controller", "brc", bad, check=False)
        assert r.returncode == 1 and "refused" in r.stderr, (bad, r.stderr)
    # The allowed forms still work.
    ok = f"punix:{daemon.rundir}/brc.controller"
    daemon.cli("set-controller", "brc", ok)
    wait_for(lambda: (daemon.rundir / "brc.controller").exists(), what="the passive socket")
    daemon.cli("del-controller", "brc")
    assert daemon.cli("version").returncode == 0


def test_pcap_files_only_in_the_pcap_dir(daemon, victim):
    d, precious = victim
    daemon.cli("add-br", "brp")
    # tx_pcap outside the pcap dir: the Interface error says why; the file is not truncated.
    vsctl(daemon, "add-port", "brp", "p0", "--", "set", "Interface", "p0", "type=pcap",
          f"options:tx_pcap={precious}")
    assert "refused" in iface_error(daemon, "p0")
    assert precious.read_text() == "do not touch\n"
    # rx_pcap of a device that never ends: refused, not read until memory runs out.
    vsctl(daemon, "add-port", "brp", "p1", "--", "set", "Interface", "p1", "type=pcap",
          "options:rx_pcap=/dev/zero")
    assert "refused" in iface_error(daemon, "p1")
    r = daemon.cli("add-port", "brp", "p2", "type=pcap", f"tx_pcap={d}/new.pcap", check=False)
    assert r.returncode == 1 and "refused" in r.stderr
    assert sorted(os.listdir(d)) == ["precious.txt"]
    # Inside the pcap dir it works.
    ok = Path(tempfile.mkdtemp()) / "out.pcap"
    daemon.cli("add-port", "brp", "p3", "type=pcap", f"tx_pcap={ok}")
    assert ok.exists()
    assert daemon.cli("version").returncode == 0


def test_pcap_ports_are_off_without_a_pcap_dir(tmp_path):
    proc = subprocess.Popen([str(BIN / "ferrovsd"), "--rundir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: (tmp_path / "ferrovsd.ctl").exists(), what="the daemon")
        f = [str(BIN / "ferrovs"), "--rundir", str(tmp_path)]
        run(f + ["add-br", "br0"])
        r = run(f + ["add-port", "br0", "p", "type=pcap", f"tx_pcap={tmp_path}/x.pcap"],
                check=False)
        assert r.returncode == 1 and "--pcap-dir" in r.stderr
        assert not (tmp_path / "x.pcap").exists()
        run(f + ["exit"])
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
