"""ferrovsd configured through OVSDB: Debian's ovs-vsctl, ovsdb-client and the Python IDL against
the embedded database, the same against Debian's own ovsdb-server (`ferrovsd --db`), restarts
after kill -9 and a torn log, and OVS's unixctl names through ovs-appctl.

Every test uses its own rundir, namespaces and names, and removes them afterwards. Traffic must
follow the configuration: hosts attached with `ovs-vsctl add-port` ping each other.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BIN, ROOT, require, run, wait_for



@pytest.fixture(autouse=True)
def _peers():
    require("ovs-vsctl", "ovsdb-client")

DEBIAN_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")


def ping(net, ns, dst, count=3):
    return net.ns(ns, f"ping -c {count} -i 0.2 -W 2 {dst}", check=False, timeout=30)


class Switch:
    """A ferrovsd with its own rundir and extra arguments (`--db`, `--remote`)."""

    def __init__(self, rundir: Path, *extra):
        self.rundir = rundir
        self.ctl = rundir / "ferrovsd.ctl"
        self.extra = [str(e) for e in extra]
        self.start()

    def start(self):
        self.log = open(self.rundir / "ferrovsd.log", "a+")
        self.proc = subprocess.Popen([str(BIN / "ferrovsd"), "--rundir", str(self.rundir),
                                      "--pcap-dir", tempfile.gettempdir(), *self.extra],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        # The control socket is bound last, once the database listens.
        ready = [self.ctl] + ([] if "--db" in self.extra else [self.rundir / "db.sock"])
        while not all(p.exists() for p in ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"ferrovsd did not start:\n{self.logtext()}")
            time.sleep(0.05)

    def logtext(self):
        self.log.flush()
        return (self.rundir / "ferrovsd.log").read_text()

    def cli(self, *args, check=True):
        return run([str(BIN / "ferrovs"), "--rundir", str(self.rundir), *map(str, args)],
                   check=check)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.log.close()
        # A killed daemon leaves its sockets behind, as any crashed process does; remove them
        # here only so that start() can tell when the new daemon has bound its own.
        for name in ("ferrovsd.ctl", "db.sock"):
            (self.rundir / name).unlink(missing_ok=True)

    def stop(self):
        if self.proc.poll() is None:
            self.cli("exit", check=False)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()


def vsctl_for(db):
    def vsctl(*args, check=True, timeout=30):
        return run(["ovs-vsctl", f"--db={db}", "--timeout=20", *map(str, args)],
                   check=check, timeout=timeout)
    return vsctl


@pytest.fixture
def rundir():
    d = Path(tempfile.mkdtemp(prefix="ferrovs-ovsdb-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def switch(rundir):
    s = Switch(rundir)
    yield s
    s.stop()


def exercise_vsctl(vsctl, net, sw):
    """The ovs-vsctl scenario shared by the embedded and the external database."""
    t = net.tag
    br = f"fb{t}"[:15]
    h1, s1 = net.host("a", ip="10.79.0.1/24", mac="02:79:00:00:00:01")
    h2, s2 = net.host("b", ip="10.79.0.2/24", mac="02:79:00:00:00:02")
    internal = f"fi{t}"[:15]
    bad = f"fx{t}"[:15]

    # No --no-wait anywhere: each command returns once ferrovsd raised cur_cfg.
    vsctl("add-br", br)
    vsctl("--may-exist", "add-br", br)
    r = vsctl("add-br", br, check=False)
    assert r.returncode != 0 and "already exists" in r.stderr
    vsctl("add-port", br, s1)
    vsctl("add-port", br, s2, "--", "set", "Interface", s2, "ofport_request=7")
    vsctl("--may-exist", "add-port", br, s1)
    root = vsctl("get", "Open_vSwitch", ".", "cur_cfg", "next_cfg").stdout.split()
    assert root[0] == root[1], root
    assert vsctl("get", "Interface", s1, "ofport").stdout.strip() == "1"
    assert vsctl("get", "Interface", s2, "ofport").stdout.strip() == "7"
    assert vsctl("get", "Interface", s1, "link_state").stdout.strip() == "up"
    assert vsctl("get", "Interface", s1, "admin_state").stdout.strip() == "up"
    assert int(vsctl("get", "Interface", s1, "ifindex").stdout) > 0
    mac = vsctl("get", "Interface", s1, "mac_in_use").stdout.strip().strip('"')
    assert len(mac.split(":")) == 6
    dpid = vsctl("get", "Bridge", br, "datapath_id").stdout.strip().strip('"')
    assert len(dpid) == 16 and int(dpid, 16) > 0

    # Traffic follows the configuration.
    r = ping(net, h1, "10.79.0.2")
    assert r.returncode == 0, r.stdout + r.stderr + sw.logtext()

    # An internal interface appears as a kernel device; a bad name reports an error.
    vsctl("add-port", br, internal, "--", "set", "Interface", internal, "type=internal")
    assert run(["ip", "link", "show", internal], check=False).returncode == 0
    r = vsctl("add-port", br, bad, check=False)
    assert "could not open network device" in r.stderr, r.stderr
    err = vsctl("get", "Interface", bad, "error").stdout
    assert f"could not open network device {bad} (No such device)" in err, err
    assert vsctl("get", "Interface", bad, "ofport").stdout.strip() == "-1"
    # ... and everything else still works.
    assert ping(net, h2, "10.79.0.1").returncode == 0

    # Options reach the netdev (a pcap interface with an output file).
    pcap_if = f"fp{t}"[:15]
    out = Path(tempfile.gettempdir()) / f"fv-{t}.pcap"
    vsctl("add-port", br, pcap_if, "--", "set", "Interface", pcap_if, "type=pcap",
          f"options:tx_pcap={out}")
    assert vsctl("get", "Interface", pcap_if, "error").stdout.strip() == "[]"
    vsctl("del-port", br, pcap_if)
    out.unlink(missing_ok=True)

    # Controllers, fail mode, bridge settings, list/find/get/remove/clear.
    vsctl("set-controller", br, "ptcp:0:127.0.0.1")
    assert vsctl("get-controller", br).stdout.strip() == "ptcp:0:127.0.0.1"
    vsctl("set-fail-mode", br, "secure")
    assert vsctl("get-fail-mode", br).stdout.strip() == "secure"
    vsctl("set", "Bridge", br, "other-config:mac-aging-time=30",
          "other-config:datapath-id=00000000000000ab", "protocols=OpenFlow10,OpenFlow13")
    wait_for(lambda: vsctl("get", "Bridge", br, "datapath_id").stdout.strip()
             == '"00000000000000ab"', what="datapath_id written back")
    listed = vsctl("list", "Bridge", br).stdout
    assert "mac-aging-time" in listed and "OpenFlow13" in listed
    found = vsctl("--columns=name", "find", "Interface", "type=internal").stdout
    assert internal in found and br in found
    vsctl("remove", "Bridge", br, "other_config", "mac-aging-time")
    assert "mac-aging-time" not in vsctl("get", "Bridge", br, "other_config").stdout
    vsctl("clear", "Bridge", br, "protocols")
    assert vsctl("get", "Bridge", br, "protocols").stdout.strip() == "[]"
    vsctl("del-fail-mode", br)
    vsctl("del-controller", br)
    vsctl("remove", "Bridge", br, "other_config", "datapath-id")
    assert ping(net, h1, "10.79.0.2").returncode == 0

    # Statistics are refreshed periodically.
    def rx():
        v = vsctl("get", "Interface", s1, "statistics:rx_packets", check=False).stdout
        return v.strip().isdigit() and int(v) > 0
    wait_for(rx, timeout=15, interval=0.5, what="statistics refresh")

    # Removal.
    vsctl("del-port", br, internal)
    assert run(["ip", "link", "show", internal], check=False).returncode != 0
    vsctl("--if-exists", "del-port", br, internal)
    r = vsctl("del-port", br, internal, check=False)
    assert r.returncode != 0
    vsctl("del-port", br, bad)
    vsctl("del-br", br)
    vsctl("--if-exists", "del-br", br)
    assert br not in vsctl("list-br").stdout
    assert ping(net, h1, "10.79.0.2", count=1).returncode != 0


def test_ovs_vsctl_against_the_embedded_database(switch, net):
    vsctl = vsctl_for(f"unix:{switch.rundir / 'db.sock'}")
    exercise_vsctl(vsctl, net, switch)
    # ferrovs's own CLI and the database agree: the CLI verbs are transactions.
    switch.cli("add-br", "fcli", "module=learning")
    assert "fcli" in vsctl("list-br").stdout
    assert vsctl("get", "Bridge", "fcli", "other_config:module").stdout.strip() == "learning"
    r = switch.cli("add-port", "fcli", "p1", "type=bogus", check=False)
    assert r.returncode == 1 and "unknown port type 'bogus'" in r.stderr
    assert "p1" not in vsctl("list-ports", "fcli").stdout
    switch.cli("add-port", "fcli", "p2", "type=null", "ofport=5", "tag=10")
    assert vsctl("get", "Interface", "p2", "ofport").stdout.strip() == "5"
    assert vsctl("get", "Port", "p2", "tag").stdout.strip() == "10"
    switch.cli("set-bridge", "fcli", "mac-aging-time=60")
    assert vsctl("get", "Bridge", "fcli", "other_config:mac-aging-time").stdout.strip() \
        == '"60"'
    switch.cli("del-br", "fcli")
    assert "fcli" not in vsctl("list-br").stdout
    assert "Open_vSwitch other_config" not in switch.logtext()
    vsctl("set", "Open_vSwitch", ".", "other_config:pmd-cpu-mask=0x3")
    assert "pmd-cpu-mask" in switch.logtext()


def test_ovsdb_client_and_python_idl(switch):
    sock = f"unix:{switch.rundir / 'db.sock'}"
    vsctl = vsctl_for(sock)
    monitor = subprocess.Popen(["ovsdb-client", "monitor", sock, "Open_vSwitch", "Bridge",
                                "name", "--format=csv"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(0.5)
        vsctl("add-br", "fidl")
        time.sleep(0.5)
    finally:
        monitor.terminate()
        out = monitor.communicate(timeout=10)[0]
    assert "fidl" in out and "insert" in out, out
    dump = run(["ovsdb-client", "dump", sock]).stdout
    assert "Bridge table" in dump and "fidl" in dump and "Interface table" in dump

    script = f"""
import sys, time
import ovs.db.idl, ovs.poller
helper = ovs.db.idl.SchemaHelper(location={str(ROOT / 'schema' / 'vswitch.ovsschema')!r})
helper.register_all()
idl = ovs.db.idl.Idl({sock!r}, helper)
deadline = time.time() + 10
while not idl.has_ever_connected() or not idl.tables['Bridge'].rows:
    if time.time() > deadline:
        sys.exit('IDL never got the contents')
    idl.run()
    p = ovs.poller.Poller(); idl.wait(p); p.timer_wait(100); p.block()
names = sorted(r.name for r in idl.tables['Bridge'].rows.values())
print('bridges', names)
txn = ovs.db.idl.Transaction(idl)
br = [r for r in idl.tables['Bridge'].rows.values() if r.name == 'fidl'][0]
br.external_ids = {{'owner': 'idl'}}
status = txn.commit_block()
print('commit', status)
sys.exit(0 if status == ovs.db.idl.Transaction.SUCCESS else 1)
"""
    r = run([str(ROOT / ".venv" / "bin" / "python"), "-c", script], check=False, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fidl" in r.stdout
    assert vsctl("get", "Bridge", "fidl", "external_ids:owner").stdout.strip() == "idl"
    vsctl("del-br", "fidl")


def test_ovs_vsctl_against_debians_ovsdb_server(rundir, net):
    require("ovsdb-server")
    assert DEBIAN_SCHEMA.exists(), f"{DEBIAN_SCHEMA} missing (package openvswitch-common)"
    dbdir = rundir / "ovsdb"
    dbdir.mkdir()
    db = dbdir / "conf.db"
    sock = dbdir / "db.sock"
    run(["ovsdb-tool", "create", str(db), str(DEBIAN_SCHEMA)])
    server = subprocess.Popen(["ovsdb-server", str(db), f"--remote=punix:{sock}", "--no-chdir",
                               f"--pidfile={dbdir / 'ovsdb-server.pid'}",
                               f"--unixctl={dbdir / 'ovsdb-server.ctl'}",
                               f"--log-file={dbdir / 'ovsdb-server.log'}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sw = None
    try:
        wait_for(lambda: sock.exists(), what="ovsdb-server socket")
        vsctl = vsctl_for(f"unix:{sock}")
        vsctl("--no-wait", "init")
        sw = Switch(rundir, "--db", f"unix:{sock}")
        assert not (rundir / "db.sock").exists()
        exercise_vsctl(vsctl, net, sw)
        # ferrovsd holds the lock ovs-vswitchd takes: another client cannot.
        ver = run(["ovs-appctl", "-t", str(sw.ctl), "version"]).stdout
        assert "ferrovs" in ver
        assert "ferrovs" in vsctl("get", "Open_vSwitch", ".", "ovs_version").stdout
    finally:
        if sw is not None:
            sw.stop()
        server.terminate()
        server.wait(timeout=10)


def test_restart_keeps_config_and_ofports_and_drops_a_torn_write(rundir, net):
    sw = Switch(rundir)
    try:
        vsctl = vsctl_for(f"unix:{rundir / 'db.sock'}")
        h1, s1 = net.host("r", ip="10.78.0.1/24", mac="02:78:00:00:00:01")
        h2, s2 = net.host("s", ip="10.78.0.2/24", mac="02:78:00:00:00:02")
        br = f"fr{net.tag}"[:15]
        vsctl("add-br", br)
        vsctl("add-port", br, "fvdummy", "--", "set", "Interface", "fvdummy", "type=null")
        vsctl("add-port", br, s1)
        vsctl("add-port", br, s2)
        vsctl("del-port", br, "fvdummy")
        ofports = {p: vsctl("get", "Interface", p, "ofport").stdout.strip() for p in (s1, s2)}
        assert ofports == {s1: "2", s2: "3"}, ofports
        assert ping(net, h1, "10.78.0.2").returncode == 0

        sw.kill9()
        sw.start()
        # Fresh numbering would give 1 and 2: the previous numbers win.
        assert {p: vsctl("get", "Interface", p, "ofport").stdout.strip()
                for p in (s1, s2)} == ofports
        assert ping(net, h1, "10.78.0.2").returncode == 0, sw.logtext()

        sw.stop()
        with open(rundir / "conf.db", "ab") as f:
            # A record cut short mid-write: the length promises more than is there.
            f.write(b'OVSDB JSON 300 ' + b'0b' * 20 + b'\n{"Bridge": {"')
        sw.start()
        assert "dropped" in sw.logtext()
        assert br in vsctl("list-br").stdout
        assert vsctl("get", "Interface", s2, "ofport").stdout.strip() == ofports[s2]
        assert ping(net, h2, "10.78.0.1").returncode == 0, sw.logtext()
        vsctl("add-port", br, "fvdummy2", "--", "set", "Interface", "fvdummy2", "type=null")
        vsctl("del-br", br)
    finally:
        sw.stop()


def test_cli_controller_and_fail_mode_live_in_the_database(rundir):
    """`ferrovs set-controller / set-fail-mode / set-openflow` write the Bridge's columns as
    ovs-vsctl does, so they show in the database and survive a restart; the `del-` verbs
    clear them (and delete the Controller rows)."""
    sw = Switch(rundir)
    try:
        vsctl = vsctl_for(f"unix:{rundir / 'db.sock'}")
        br = f"fk{os.getpid() % 100000}"[:15]
        sw.cli("add-br", br)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        passive = f"ptcp:{port}:127.0.0.1"
        targets = sorted([passive, "tcp:127.0.0.1:1"])
        sw.cli("set-controller", br, *targets)
        sw.cli("set-fail-mode", br, "secure")
        sw.cli("set-openflow", br, "protocols=OpenFlow13", "datapath_id=ab",
               "inactivity_probe=3000")
        # The database holds what the verbs set, in ovs-vsctl's terms.
        assert sorted(vsctl("get-controller", br).stdout.split()) == targets
        assert vsctl("get-fail-mode", br).stdout.strip() == "secure"
        assert vsctl("get", "Bridge", br, "protocols").stdout.strip() == "[OpenFlow13]"
        assert vsctl("get", "Bridge", br, "other_config:datapath-id").stdout.strip() \
            == '"00000000000000ab"'
        # A refused verb changes nothing.
        assert sw.cli("set-controller", br, "bogus:x", check=False).returncode == 1
        assert sw.cli("set-fail-mode", br, "bogus", check=False).returncode == 1
        assert sorted(vsctl("get-controller", br).stdout.split()) == targets

        sw.stop()
        sw.start()
        # ovs-vsctl returns once a reconfiguration after the start has completed.
        vsctl("set", "Open_vSwitch", ".", "external_ids:fk-test=1")
        out = sw.cli("get-controller", br).stdout
        assert all(t in out for t in targets), out
        assert sw.cli("get-fail-mode", br).stdout.strip() == "secure"
        of = sw.cli("get-openflow", br).stdout
        assert "datapath_id=00000000000000ab" in of and "protocols=OpenFlow13" in of, of
        # The passive target listens again after the restart.
        def listening():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(listening, timeout=10, what="the passive controller target listening")

        sw.cli("del-controller", br)
        sw.cli("del-fail-mode", br)
        sw.cli("set-openflow", br, "datapath_id=auto")
        assert vsctl("get-controller", br).stdout.strip() == ""
        assert vsctl("get-fail-mode", br).stdout.strip() == ""
        assert vsctl("--columns=target", "list", "Controller").stdout.strip() == ""
        sw.stop()
        sw.start()
        vsctl("set", "Open_vSwitch", ".", "external_ids:fk-test=2")
        assert sw.cli("get-controller", br).stdout.strip() == ""
        assert sw.cli("get-fail-mode", br).stdout.strip() == "standalone"
        assert "datapath_id=00000000000000ab" not in sw.cli("get-openflow", br).stdout
        sw.cli("del-br", br)
    finally:
        sw.stop()


def test_ovs_appctl_names(switch):
    ctl = str(switch.ctl)
    vsctl = vsctl_for(f"unix:{switch.rundir / 'db.sock'}")
    vsctl("add-br", "fapp")
    vsctl("add-port", "fapp", "fnull", "--", "set", "Interface", "fnull", "type=null")

    def appctl(*args, check=True):
        return run(["ovs-appctl", "-t", ctl, *args], check=check)

    cmds = appctl("list-commands").stdout
    for c in ["list-commands", "version", "exit", "vlog/list", "vlog/set", "dpif/show",
              "dpctl/dump-flows", "ofproto/trace", "fdb/show", "fdb/flush",
              "dpif-netdev/pmd-stats-show", "dpif-netdev/pmd-stats-clear",
              "dpif-netdev/pmd-rxq-show", "coverage/show", "memory/show"]:
        assert c in cmds, c
    assert "ferrovs" in appctl("version").stdout
    assert "console" in appctl("vlog/list").stdout
    appctl("vlog/set", "bridge:console:dbg")
    line = [l for l in appctl("vlog/list").stdout.splitlines() if l.startswith("bridge")][0]
    assert "DBG" in line
    appctl("vlog/set", "ANY:console:info")
    assert appctl("vlog/set", "nosuchmodule:dbg", check=False).returncode != 0
    show = appctl("dpif/show").stdout
    assert "fapp:" in show and "fnull 1/" in show and "fapp 65534/" in show
    assert "port: fapp" in appctl("dpif-netdev/pmd-rxq-show").stdout
    assert "bridge_reconfigure" in appctl("coverage/show").stdout
    mem = appctl("memory/show").stdout
    assert "bridges:1" in mem and "ports:2" in mem and "rules:" in mem
    appctl("dpctl/dump-flows")
    # Without a bridge it empties every bridge's cache, as OVS's single datapath.
    appctl("dpctl/del-flows")
    appctl("dpif-netdev/pmd-stats-clear")
    assert "pmd thread" in appctl("dpif-netdev/pmd-stats-show").stdout


def test_conf_db_is_an_ovsdb_file_both_ways(rundir):
    """ferrovsd's conf.db is read by Debian's ovsdb-tool (show-log, query, db-name), and a
    conf.db made by ovsdb-tool from Debian's schema opens in ferrovsd with its data."""
    require("ovsdb-tool")
    assert DEBIAN_SCHEMA.exists(), f"{DEBIAN_SCHEMA} missing (package openvswitch-common)"
    db = rundir / "conf.db"
    br = f"ft{os.getpid() % 100000}"
    sw = Switch(rundir)
    try:
        vsctl = vsctl_for(f"unix:{rundir / 'db.sock'}")
        vsctl("add-br", br, "--", "set", "Bridge", br, "external_ids:owner=pytest",
              "other_config:module=learning")
        vsctl("set", "Bridge", br, "external_ids:step=2")
        assert run(["ovsdb-tool", "db-name", str(db)]).stdout.strip() == "Open_vSwitch"
        log = run(["ovsdb-tool", "-mm", "show-log", str(db)]).stdout
        assert f'table Bridge insert row "{br}"' in log, log
        assert "external_ids" in log, log
        q = json.loads(run(["ovsdb-tool", "query", str(db), json.dumps(
            ["Open_vSwitch", {"op": "select", "table": "Bridge", "where": [["name", "==", br]],
                              "columns": ["external_ids"]}])]).stdout)
        assert q[0]["rows"][0]["external_ids"] == ["map", [["owner", "pytest"], ["step", "2"]]]
        vsctl("del-br", br)
    finally:
        sw.stop()

    shutil.rmtree(rundir)
    rundir.mkdir()
    run(["ovsdb-tool", "create", str(db), str(DEBIAN_SCHEMA)])
    run(["ovsdb-tool", "transact", str(db), json.dumps(
        ["Open_vSwitch",
         {"op": "insert", "table": "Open_vSwitch", "row": {"bridges": ["named-uuid", "b"]}},
         {"op": "insert", "table": "Bridge", "uuid-name": "b",
          "row": {"name": br, "other_config": ["map", [["module", "learning"]]],
                  "external_ids": ["map", [["made-by", "ovsdb-tool"]]]}}])])
    run(["ovsdb-tool", "transact", str(db), json.dumps(
        ["Open_vSwitch", {"op": "mutate", "table": "Bridge", "where": [],
                          "mutations": [["external_ids", "insert", ["map", [["k", "v"]]]]]}])])
    sw = Switch(rundir)
    try:
        vsctl = vsctl_for(f"unix:{rundir / 'db.sock'}")
        assert br in vsctl("list-br").stdout.split(), sw.logtext()
        ids = vsctl("get", "Bridge", br, "external_ids").stdout.strip()
        assert ids == '{k=v, made-by=ovsdb-tool}', ids
        vsctl("del-br", br)
    finally:
        sw.stop()
    # What ferrovsd appended is still an OVSDB file.
    assert run(["ovsdb-tool", "db-name", str(db)]).stdout.strip() == "Open_vSwitch"
