"""The Debian package (scripts/package.sh, cargo-deb): its contents, its systemd unit checked
by systemd-analyze, and the unit's own ExecStart/ExecStop starting and stopping the daemon
from the unpacked package under a private prefix (systemd does not run here)."""

import gzip
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import BIN, ROOT, require, run, wait_for

FILES = [
    "usr/sbin/ferrovsd",
    "usr/bin/ferrovs",
    "usr/lib/systemd/system/ferrovs.service",
    "etc/default/ferrovs",
    "usr/share/man/man8/ferrovsd.8.gz",
    "usr/share/man/man1/ferrovs.1.gz",
    "usr/share/bash-completion/completions/ferrovs",
    "usr/share/zsh/vendor-completions/_ferrovs",
    "usr/share/fish/vendor_completions.d/ferrovs.fish",
]


@pytest.fixture(scope="module")
def deb():
    require("dpkg-deb", "systemd-analyze")
    env = dict(os.environ, CARGO_TARGET_DIR=str(BIN.parent))
    r = run([str(ROOT / "scripts" / "package.sh"), "--no-build"], env=env, timeout=900)
    path = Path(r.stdout.strip().splitlines()[-1])
    assert path.suffix == ".deb" and path.exists(), r.stdout
    return path


@pytest.fixture
def prefix(deb):
    d = Path(tempfile.mkdtemp(prefix="ferrovs-pkg-"))
    run(["dpkg-deb", "-x", str(deb), str(d)])
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_package_metadata_and_contents(deb, prefix):
    info = run(["dpkg-deb", "-f", str(deb), "Package", "Depends", "Section"]).stdout
    assert "Package: ferrovs" in info and "iproute2" in info and "Section: net" in info
    assert "etc/default/ferrovs" in run(["dpkg-deb", "-I", str(deb), "conffiles"]).stdout
    for f in FILES:
        assert (prefix / f).is_file(), f
    assert os.access(prefix / "usr/sbin/ferrovsd", os.X_OK)
    page = gzip.decompress((prefix / "usr/share/man/man8/ferrovsd.8.gz").read_bytes()).decode()
    assert ".TH ferrovsd 8" in page and "\\-\\-rundir" in page
    page = gzip.decompress((prefix / "usr/share/man/man1/ferrovs.1.gz").read_bytes()).decode()
    assert ".TH ferrovs 1" in page
    comp = prefix / "usr/share/bash-completion/completions/ferrovs"
    out = run(["bash", "-c", f"source {comp} && complete -p ferrovs"]).stdout
    assert "ferrovs" in out
    # The maintainer scripts register the unit (and do nothing where systemd is not running).
    assert "deb-systemd-helper" in run(["dpkg-deb", "-I", str(deb), "postinst"]).stdout


def unit_commands(unit_text, prefix, rundir):
    """ExecStart and ExecStop of the unit, pointed at the unpacked binaries and a private
    rundir (as FERROVSD_OPTS from /etc/default/ferrovs would)."""
    cmds = {}
    for line in unit_text.splitlines():
        m = re.match(r"(ExecStart|ExecStop)=(.*)", line)
        if m:
            argv = shlex.split(m.group(2))
            argv[0] = str(prefix / argv[0].lstrip("/"))
            out = []
            for a in argv:
                if a == "$FERROVSD_OPTS":
                    out += ["--rundir", str(rundir)]
                elif a == "/run/ferrovs":
                    out.append(str(rundir))
                else:
                    out.append(a)
            cmds[m.group(1)] = out
    return cmds


def test_unit_verifies_and_starts_the_daemon(prefix):
    require("ovs-vsctl")
    unit = (prefix / "usr/lib/systemd/system/ferrovs.service").read_text()
    # systemd-analyze checks the unit with its binaries where the package puts them.
    checked = Path(tempfile.mkdtemp(prefix="ferrovs-unit-")) / "ferrovs.service"
    checked.write_text(unit.replace("/usr/sbin/", f"{prefix}/usr/sbin/")
                       .replace("/usr/bin/", f"{prefix}/usr/bin/"))
    r = run(["systemd-analyze", "verify", "--man=no", str(checked)], check=False)
    shutil.rmtree(checked.parent, ignore_errors=True)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr
    assert "Type=forking" in unit and "PIDFile=/run/ferrovs/ferrovsd.pid" in unit

    rundir = Path(tempfile.mkdtemp(prefix="ferrovs-unit-run-"))
    cmds = unit_commands(unit, prefix, rundir)
    try:
        # Type=forking: ExecStart returns once the daemon is ready and has written its pidfile.
        run(cmds["ExecStart"], timeout=30)
        pid = int((rundir / "ferrovsd.pid").read_text().split()[0])
        assert Path(f"/proc/{pid}").exists()
        db = f"--db=unix:{rundir}/db.sock"
        run(["ovs-vsctl", "--timeout=10", db, "add-br", "brpkg"])
        assert "brpkg" in run(["ovs-vsctl", "--timeout=10", db, "list-br"]).stdout
        assert (rundir / "ferrovsd.log").exists()
        run(cmds["ExecStop"], timeout=30)
        wait_for(lambda: not Path(f"/proc/{pid}").exists(), timeout=15,
                 what="the daemon to exit on ExecStop")
    finally:
        pidfile = rundir / "ferrovsd.pid"
        if pidfile.exists():
            subprocess.run(["kill", pidfile.read_text().split()[0]], check=False)
        shutil.rmtree(rundir, ignore_errors=True)
