"""The Debian package (scripts/package.sh, cargo-deb), installed for real: dpkg installs it
into a private root (`dpkg --root=R --force-script-chrootless`, so its maintainer scripts
run with DPKG_ROOT=R), the installed unit's ExecStart/ExecStop start and stop the daemon
(systemd does not run here: the test does what the unit asks of systemd, under R), and
`dpkg --purge` removes every file again.

The maintainer scripts run as if systemd were running (a private mount namespace shows them
an empty /run/systemd/system) with `systemctl` and `deb-systemd-invoke` replaced by stubs
that record their calls: under DPKG_ROOT they must act only on R, never on the running
system, and the host's dpkg database and systemd configuration must stay as they were."""

import gzip
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import BIN, ROOT, need_root, require, run, wait_for

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
WANTS_LINK = "etc/systemd/system/multi-user.target.wants/ferrovs.service"

# What an installation elsewhere must leave alone on the host.
HOST_STATE = [
    "/var/lib/dpkg/status",
    "/var/lib/dpkg/available",
    "/var/lib/dpkg/info",
    "/etc/systemd",
    "/var/lib/systemd/deb-systemd-helper-enabled",
    "/var/lib/systemd/deb-systemd-helper-masked",
    "/etc/default/ferrovs",
    "/usr/lib/systemd/system/ferrovs.service",
    "/lib/systemd/system/ferrovs.service",
    "/var/lib/ferrovs",
    "/var/log/ferrovs",
]

# Commands that act on the running service manager; the stubs record each call.
STUBBED = ["systemctl", "deb-systemd-invoke"]
STUB = """#!/bin/sh
echo "$(basename "$0") $* (DPKG_ROOT=${DPKG_ROOT:-})" >> "$FERROVS_TEST_CALLS"
"""


@pytest.fixture(scope="module")
def deb():
    require("dpkg-deb", "systemd-analyze")
    env = dict(os.environ, CARGO_TARGET_DIR=str(BIN.parent))
    r = run([str(ROOT / "scripts" / "package.sh"), "--no-build"], env=env, timeout=900)
    path = Path(r.stdout.strip().splitlines()[-1])
    assert path.suffix == ".deb" and path.exists(), r.stdout
    return path


def test_package_metadata(deb):
    info = run(["dpkg-deb", "-f", str(deb), "Package", "Depends", "Section"]).stdout
    assert "Package: ferrovs" in info and "iproute2" in info and "Section: net" in info
    assert "etc/default/ferrovs" in run(["dpkg-deb", "-I", str(deb), "conffiles"]).stdout
    listing = run(["dpkg-deb", "-c", str(deb)]).stdout
    for f in FILES:
        assert f"./{f}" in listing, f


def host_state():
    """Every path under HOST_STATE with its type, mode, mtime and contents (or link target)."""
    state = {}

    def note(p):
        st = os.lstat(p)
        if os.path.islink(p):
            what = os.readlink(p)
        elif os.path.isfile(p):
            what = hashlib.sha256(Path(p).read_bytes()).hexdigest()
        else:
            what = "dir"
        state[p] = (st.st_mode, st.st_mtime_ns, what)

    for top in HOST_STATE:
        if not os.path.lexists(top):
            continue
        note(top)
        for d, dirs, files in os.walk(top):
            for n in dirs + files:
                note(os.path.join(d, n))
    return state


def tree(root, skip=()):
    """Relative paths of everything under root, but those under the `skip` prefixes."""
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            rel = os.path.relpath(os.path.join(d, n), root)
            if not any(rel == s or rel.startswith(s + "/") for s in skip):
                out.add(rel)
    return out


class Root:
    """A private root for dpkg: the administrative directory dpkg needs, and /run and
    /var/log, where systemd would create the unit's directories (dpkg makes and removes
    everything else). Beside it, the stubs and the call log of the maintainer scripts."""

    ADMIN = "var/lib/dpkg"

    def __init__(self):
        self.path = Path(tempfile.mkdtemp(prefix="ferrovs-root-"))
        admin = self.path / self.ADMIN
        for d in ("info", "updates"):
            (admin / d).mkdir(parents=True)
        for f in ("status", "available"):
            (admin / f).touch()
        for d in ("run", "var/log"):
            (self.path / d).mkdir(parents=True)
        self.aux = Path(tempfile.mkdtemp(prefix="ferrovs-dpkg-"))
        self.stubs = self.aux / "bin"
        self.stubs.mkdir()
        for name in STUBBED:
            (self.stubs / name).write_text(STUB)
            (self.stubs / name).chmod(0o755)
        self.calls = self.aux / "calls"
        self.calls.touch()
        self.skeleton = tree(self.path)

    def dpkg(self, *args, check=True):
        """dpkg on this root, its maintainer scripts run without chroot (DPKG_ROOT set) and
        shown a running systemd: /run is a private tmpfs with /run/systemd/system in it."""
        cmd = ["dpkg", f"--root={self.path}", "--force-script-chrootless", "--force-depends",
               f"--log={self.aux / 'dpkg.log'}", *args]
        script = ('mount -t tmpfs ferrovs-test /run && mkdir -p /run/systemd/system '
                  '&& exec "$@"')
        env = dict(os.environ, PATH=f"{self.stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                   FERROVS_TEST_CALLS=str(self.calls))
        return run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                    script, "sh", *cmd], env=env, check=check, timeout=120)

    def status(self):
        r = run(["dpkg", f"--root={self.path}", "-s", "ferrovs"], check=False)
        return r.returncode, r.stdout + r.stderr

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)
        shutil.rmtree(self.aux, ignore_errors=True)


def systemd_dirs(unit):
    """What systemd creates for the unit before ExecStart: RuntimeDirectory= under /run,
    StateDirectory= under /var/lib, LogsDirectory= under /var/log, with their modes."""
    keys = {"RuntimeDirectory": "run", "StateDirectory": "var/lib", "LogsDirectory": "var/log"}
    dirs = {}
    for line in unit.splitlines():
        m = re.match(r"(\w+)=(.*)", line)
        if m and m.group(1) in keys:
            mode = re.search(rf"^{m.group(1)}Mode=(\d+)", unit, re.M)
            dirs[m.group(1)] = (f"{keys[m.group(1)]}/{m.group(2)}",
                                int(mode.group(1), 8) if mode else 0o755)
    return dirs


def unit_commands(unit, root):
    """ExecStart and ExecStop of the installed unit with every path under root: the binaries,
    /run/ferrovs, and what ferrovsd derives from the default rundir (the database in the
    StateDirectory, the log in the LogsDirectory), then FERROVSD_OPTS from root's
    /etc/default/ferrovs as systemd's EnvironmentFile= gives it."""
    env = (root / "etc/default/ferrovs").read_text()
    m = re.search(r'^FERROVSD_OPTS="(.*)"$', env, re.M)
    assert m, env
    opts = shlex.split(m.group(1))
    dirs = {k: root / v for k, (v, _) in systemd_dirs(unit).items()}
    cmds = {}
    for line in unit.splitlines():
        m = re.match(r"(ExecStart|ExecStop)=(.*)", line)
        if not m:
            continue
        argv = shlex.split(m.group(2))
        out = [str(root / argv[0].lstrip("/"))]
        for a in argv[1:]:
            if a == "$FERROVSD_OPTS":
                out += ["--rundir", str(dirs["RuntimeDirectory"]),
                        "--dbdir", str(dirs["StateDirectory"]), *opts]
            elif a == "--log-file":
                out.append(f"--log-file={dirs['LogsDirectory'] / 'ferrovsd.log'}")
            elif a == "/run/ferrovs":
                out.append(str(dirs["RuntimeDirectory"]))
            else:
                out.append(a)
        cmds[m.group(1)] = out
    return cmds, dirs


def check_installed(root):
    code, status = root.status()
    assert code == 0 and "Status: install ok installed" in status, status
    for f in FILES:
        assert (root.path / f).is_file(), f
    assert os.access(root.path / "usr/sbin/ferrovsd", os.X_OK)
    conffiles = run(["dpkg-query", f"--root={root.path}", "-W", "-f=${Conffiles}",
                     "ferrovs"]).stdout
    assert "/etc/default/ferrovs" in conffiles, conffiles
    page = gzip.decompress((root.path / "usr/share/man/man8/ferrovsd.8.gz").read_bytes())
    assert ".TH ferrovsd 8" in page.decode() and "\\-\\-rundir" in page.decode()
    page = gzip.decompress((root.path / "usr/share/man/man1/ferrovs.1.gz").read_bytes())
    assert ".TH ferrovs 1" in page.decode()
    comp = root.path / "usr/share/bash-completion/completions/ferrovs"
    assert "ferrovs" in run(["bash", "-c", f"source {comp} && complete -p ferrovs"]).stdout
    # Enabled, as openvswitch-switch enables its service: the [Install] WantedBy= link.
    link = root.path / WANTS_LINK
    assert link.is_symlink(), "the unit is not enabled under the root"
    assert os.readlink(link) == "/usr/lib/systemd/system/ferrovs.service"


def check_unit(root, unit):
    """systemd-analyze checks the installed unit with its binaries where they were installed."""
    checked = Path(tempfile.mkdtemp(prefix="ferrovs-unit-")) / "ferrovs.service"
    checked.write_text(unit.replace("/usr/sbin/", f"{root}/usr/sbin/")
                       .replace("/usr/bin/", f"{root}/usr/bin/"))
    r = run(["systemd-analyze", "verify", "--man=no", str(checked)], check=False)
    shutil.rmtree(checked.parent, ignore_errors=True)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr
    assert "Type=forking" in unit and "PIDFile=/run/ferrovs/ferrovsd.pid" in unit


def start_and_stop(root, unit):
    """Does what systemd does for the unit: creates its directories, runs ExecStart (forking:
    it returns once the daemon is ready and has written PIDFile=), then ExecStop, and removes
    the RuntimeDirectory once the daemon is gone."""
    cmds, dirs = unit_commands(unit, root)
    for rel, mode in systemd_dirs(unit).values():
        (root / rel).mkdir(mode=mode, parents=True)
    rundir = dirs["RuntimeDirectory"]
    pidfile = rundir / "ferrovsd.pid"
    br = f"brpkg{os.getpid() % 10000}"
    try:
        run(cmds["ExecStart"], timeout=30)
        pid = int(pidfile.read_text().split()[0])
        assert Path(f"/proc/{pid}").exists()
        db = f"--db=unix:{rundir}/db.sock"
        run(["ovs-vsctl", "--timeout=10", db, "add-br", br])
        assert br in run(["ovs-vsctl", "--timeout=10", db, "list-br"]).stdout
        assert br in run([str(root / "usr/bin/ferrovs"), "--rundir", str(rundir), "show"]).stdout
        # The database and the log are where the unit's StateDirectory= and LogsDirectory= say.
        assert (dirs["StateDirectory"] / "conf.db").is_file()
        assert (dirs["LogsDirectory"] / "ferrovsd.log").is_file()
        run(cmds["ExecStop"], timeout=30)
        wait_for(lambda: not Path(f"/proc/{pid}").exists(), timeout=15,
                 what="the daemon to exit on ExecStop")
    finally:
        if pidfile.exists():
            subprocess.run(["kill", pidfile.read_text().split()[0]], check=False)
    shutil.rmtree(rundir)


def check_no_calls(root):
    calls = root.calls.read_text()
    assert not calls, f"the maintainer scripts acted on the running system:\n{calls}"


def test_install_start_stop_purge(deb):
    need_root()
    require("dpkg", "dpkg-query", "unshare", "ovs-vsctl")
    root = Root()
    before = host_state()
    try:
        root.dpkg("-i", str(deb))
        check_no_calls(root)
        check_installed(root)
        unit = (root.path / "usr/lib/systemd/system/ferrovs.service").read_text()
        check_unit(root.path, unit)
        start_and_stop(root.path, unit)

        root.dpkg("--purge", "ferrovs")
        code, status = root.status()
        assert code != 0 and "not installed" in status, status
        assert not (root.path / "etc/default/ferrovs").exists(), "the conffile outlived --purge"
        assert not (root.path / WANTS_LINK).is_symlink(), "the unit is still enabled"
        left = tree(root.path, skip=[Root.ADMIN]) - root.skeleton
        assert not left, f"left behind by --purge: {sorted(left)}"
        # dpkg's own records of the package are gone too.
        assert not list((root.path / Root.ADMIN / "info").glob("ferrovs.*"))

        check_no_calls(root)
        after = host_state()
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        assert not changed, f"installing into {root.path} changed the host: {changed}"
    finally:
        root.remove()
