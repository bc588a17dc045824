"""TLS for OpenFlow and OVSDB, configured as Open vSwitch configures it, against Debian's OVS.

Certificates are made at test time with `ovs-pki` (a switch CA and a controller CA, as
`ovs-pki init` makes them, plus an unrelated PKI for the refusals). The switch presents
sw-cert.pem and trusts the controller CA; the peers (ovs-ofctl, ovs-vsctl,
ovs-testcontroller) present ctl-cert.pem and trust the switch CA.

* (a) `ovs-ofctl show/add-flow/dump-flows ssl:...` against a `pssl:` controller target, whose
  files come from the SSL row `ovs-vsctl set-ssl` writes (picked up without restarting);
* (b) an active `ssl:` controller target connecting to `ovs-testcontroller pssl:`, with the
  missing-SSL-row error shown first;
* (c) `ovs-vsctl --db=ssl:...` against `--remote=pssl:` with file options, and with the
  `db:Open_vSwitch,SSL,...` forms;
* (d) certificates from another CA are refused, both ways, and the daemon keeps answering;
* (e) garbage, plain OpenFlow and silent connections on the TLS ports hurt nothing.
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BIN, require, run, wait_for


@pytest.fixture(autouse=True)
def _peers():
    require("ovs-pki", "ovs-ofctl", "ovs-vsctl", "ovs-testcontroller")


class Pki:
    """The files of one test PKI (see the module documentation)."""

    def __init__(self, d: Path):
        self.dir = d
        self.sw_key, self.sw_cert = d / "sw-privkey.pem", d / "sw-cert.pem"
        self.ctl_key, self.ctl_cert = d / "ctl-privkey.pem", d / "ctl-cert.pem"
        self.switch_ca = d / "pki" / "switchca" / "cacert.pem"
        self.controller_ca = d / "pki" / "controllerca" / "cacert.pem"
        o = d / "other"
        self.bad_key, self.bad_cert = o / "ctl-privkey.pem", o / "ctl-cert.pem"
        self.bad_switch_key, self.bad_switch_cert = o / "sw-privkey.pem", o / "sw-cert.pem"

    def client(self, bad=False):
        """ovs-ofctl/ovs-vsctl options of a controller (from the other PKI if `bad`)."""
        key, cert = (self.bad_key, self.bad_cert) if bad else (self.ctl_key, self.ctl_cert)
        return ["-p", str(key), "-c", str(cert), "-C", str(self.switch_ca)]

    def switch_files(self):
        return [str(self.sw_key), str(self.sw_cert), str(self.controller_ca)]


@pytest.fixture(scope="module")
def pki():
    require("ovs-pki")
    d = Path(tempfile.mkdtemp(prefix="ferrovs-pki-"))
    other = d / "other"
    other.mkdir()
    for where in (d, other):
        run(["ovs-pki", f"--dir={where / 'pki'}", "init"], cwd=where, timeout=60)
        for name, kind in (("sw", "switch"), ("ctl", "controller")):
            run(["ovs-pki", f"--dir={where / 'pki'}", "-b", "-u", "req+sign", name, kind],
                cwd=where, timeout=60)
    yield Pki(d)
    shutil.rmtree(d, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class Switch:
    """A ferrovsd with its own rundir and extra arguments."""

    def __init__(self, *extra):
        self.rundir = Path(tempfile.mkdtemp(prefix="ferrovs-tls-"))
        self.logf = open(self.rundir / "ferrovsd.log", "w+")
        self.proc = subprocess.Popen([str(BIN / "ferrovsd"), "--rundir", str(self.rundir),
                                      *map(str, extra)],
                                     stdout=self.logf, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while not all((self.rundir / f).exists() for f in ("ferrovsd.ctl", "db.sock")):
            if self.proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"ferrovsd did not start:\n{self.log()}")
            time.sleep(0.05)

    def log(self):
        self.logf.flush()
        return (self.rundir / "ferrovsd.log").read_text()

    def vsctl(self, *args, check=True):
        return run(["ovs-vsctl", f"--db=unix:{self.rundir / 'db.sock'}", "--timeout=20",
                    *map(str, args)], check=check)

    def cli(self, *args, check=True):
        return run([str(BIN / "ferrovs"), "--rundir", str(self.rundir), *map(str, args)],
                   check=check)

    def alive(self):
        assert self.proc.poll() is None, f"ferrovsd died:\n{self.log()}"
        assert "ovs_version" in self.vsctl("show").stdout

    def stop(self):
        if self.proc.poll() is None:
            self.cli("exit", check=False)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.logf.close()
        shutil.rmtree(self.rundir, ignore_errors=True)


@pytest.fixture
def switch():
    s = Switch()
    yield s
    s.stop()


def bridge(tag):
    return f"{tag}{os.getpid() % 100000}"[:15]


def ofctl(pki, *args, bad=False, check=True):
    return run(["ovs-ofctl", *pki.client(bad), *map(str, args)], check=check, timeout=30)


def pssl_bridge(switch, pki, tag):
    """A bridge with a pssl: controller target and the SSL row set; returns (bridge, port)."""
    br, port = bridge(tag), free_port()
    switch.vsctl("add-br", br)
    switch.vsctl("set-ssl", *pki.switch_files())
    switch.vsctl("set-controller", br, f"pssl:{port}:127.0.0.1")
    wait_for(lambda: listening(port), what="the pssl: target to listen")
    return br, port


def test_ovs_ofctl_over_a_pssl_controller_target(switch, pki):
    br, port = bridge("fs"), free_port()
    switch.vsctl("add-br", br)
    switch.vsctl("set-controller", br, f"pssl:{port}:127.0.0.1")
    wait_for(lambda: listening(port), what="the pssl: target to listen")
    target = f"ssl:127.0.0.1:{port}"
    # No SSL row yet: the connection is refused, with the reason in the log.
    assert ofctl(pki, "show", target, check=False).returncode != 0
    wait_for(lambda: "SSL is not configured" in switch.log(), what="the refusal in the log")
    # set-ssl writes the SSL row; the next pass picks the files up, no restart.
    switch.vsctl("set-ssl", *pki.switch_files())
    assert switch.vsctl("get-ssl").stdout.count(".pem") == 3
    out = ofctl(pki, "show", target).stdout
    assert f"LOCAL({br})" in out and "OFPT_FEATURES_REPLY" in out
    ofctl(pki, "add-flow", target, "priority=55,ip,nw_dst=10.1.2.3,actions=drop")
    ofctl(pki, "-O", "OpenFlow13", "add-flow", target, "table=1,priority=7,actions=NORMAL")
    dump = ofctl(pki, "dump-flows", target).stdout
    assert "priority=55,ip,nw_dst=10.1.2.3 actions=drop" in dump
    # OpenFlow 1.0 dumps come as Nicira records, which carry the flow's idle age (as OVS's).
    assert re.search(r"table=1, n_packets=0, n_bytes=0, idle_age=\d+, priority=7 actions=NORMAL",
                     dump), dump
    # The same flows through the management socket: one switch, two ways in.
    assert "nw_dst=10.1.2.3" in switch.cli("dump-flows", br).stdout
    ofctl(pki, "del-flows", target, "ip,nw_dst=10.1.2.3")
    assert "10.1.2.3" not in ofctl(pki, "dump-flows", target).stdout


def test_active_ssl_target_connects_to_ovs_testcontroller(switch, pki, tmp_path):
    br, port = bridge("fa"), free_port()
    flows = tmp_path / "flows.txt"
    flows.write_text("priority=66,ip,nw_dst=10.6.6.6 actions=drop\n")
    # OpenFlow 1.3: Debian's ovs-testcontroller 3.1 segfaults on the first packet-in from its
    # own table-miss flow over 1.5 (`(via no_match)`, what OVS 3.1 sends as well: seen with
    # ovs-vswitchd on a dummy datapath and an MLD frame); over 1.3 it answers with a packet-out.
    tc = subprocess.Popen(["ovs-testcontroller", "-O", "OpenFlow13", *pki.client(),
                           "--with-flows", str(flows),
                           f"--unixctl={tmp_path / 'tc.ctl'}", "--no-chdir",
                           f"pssl:{port}:127.0.0.1"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: listening(port), what="ovs-testcontroller to listen")
        switch.vsctl("add-br", br)
        switch.vsctl("set-controller", br, f"ssl:127.0.0.1:{port}")
        # Without an SSL row the target says why it cannot connect; nothing crashes.
        wait_for(lambda: "SSL is not configured" in switch.cli("get-controller", br).stdout,
                 what="the missing SSL row in the controller status")
        switch.alive()
        switch.vsctl("set-ssl", *pki.switch_files())
        # The target retries with backoff (up to 8 s) and now connects.
        wait_for(lambda: "nw_dst=10.6.6.6" in switch.cli("dump-flows", br).stdout,
                 timeout=20, what="ovs-testcontroller's flow")
        wait_for(lambda: switch.vsctl("get", "Controller", br, "is_connected").stdout.strip()
                 == "true", what="is_connected")
        assert "peer ssl 127.0.0.1" in switch.cli("get-controller", br).stdout
    finally:
        tc.terminate()
        tc.wait(timeout=10)
    # The controller went away: the target goes back to connecting.
    wait_for(lambda: "connecting" in switch.cli("get-controller", br).stdout,
             timeout=20, what="the target to notice the controller left")


def tls_switch(pki, port, *key_cert_ca):
    return Switch(f"--remote=pssl:{port}:127.0.0.1", "--private-key", key_cert_ca[0],
                  "--certificate", key_cert_ca[1], "--ca-cert", key_cert_ca[2])


def vsctl_ssl(pki, port, *args, bad=False, check=True):
    return run(["ovs-vsctl", f"--db=ssl:127.0.0.1:{port}", *pki.client(bad), "--timeout=10",
                *map(str, args)], check=check, timeout=30)


def test_ovs_vsctl_over_a_pssl_ovsdb_remote(pki):
    port = free_port()
    sw = tls_switch(pki, port, *pki.switch_files())
    try:
        assert "ovs_version" in vsctl_ssl(pki, port, "show").stdout
        br = bridge("fv")
        vsctl_ssl(pki, port, "add-br", br)
        assert br in vsctl_ssl(pki, port, "list-br").stdout.split()
        assert br in sw.cli("show").stdout
        vsctl_ssl(pki, port, "del-br", br)
        assert br not in sw.vsctl("list-br").stdout.split()
    finally:
        sw.stop()


def test_ovsdb_tls_files_from_the_database(pki):
    """`--private-key=db:Open_vSwitch,SSL,private_key` etc., as ovsdb-server takes them: read
    for every connection, so `set-ssl` turns the remote on."""
    port = free_port()
    sw = tls_switch(pki, port, "db:Open_vSwitch,SSL,private_key", "db:SSL,certificate",
                    "db:Open_vSwitch,SSL,ca_cert")
    try:
        assert vsctl_ssl(pki, port, "show", check=False).returncode != 0
        wait_for(lambda: "no row of SSL sets private_key" in sw.log(), what="the reason")
        sw.vsctl("set-ssl", *pki.switch_files())
        assert "ovs_version" in vsctl_ssl(pki, port, "show").stdout
    finally:
        sw.stop()


def test_another_cas_certificates_are_refused_both_ways(pki):
    port = free_port()
    sw = tls_switch(pki, port, *pki.switch_files())
    try:
        br, of_port = pssl_bridge(sw, pki, "fd")
        target = f"ssl:127.0.0.1:{of_port}"
        # A client whose certificate another CA signed.
        assert vsctl_ssl(pki, port, "show", bad=True, check=False).returncode != 0
        assert ofctl(pki, "show", target, bad=True, check=False).returncode != 0
        try:
            # rustls names the reason UnknownIssuer, or BadSignature when the other CA's
            # name equals ours (ovs-pki names a CA by the second it was made in).
            wait_for(lambda: sw.log().count("invalid peer certificate") >= 2, timeout=30)
        except AssertionError:
            raise AssertionError("both refusals not logged; log:\n" + sw.log()[-4000:])
        # A switch whose certificate another CA signed: the controller refuses it.
        sw.vsctl("set-ssl", pki.bad_switch_key, pki.bad_switch_cert, pki.controller_ca)
        time.sleep(0.5)
        r = ofctl(pki, "show", target, check=False)
        assert r.returncode != 0, r.stdout
        # Put the right files back: everything answers as before.
        sw.vsctl("set-ssl", *pki.switch_files())
        wait_for(lambda: ofctl(pki, "show", target, check=False).returncode == 0,
                 what="the switch certificate to be restored")
        assert "ovs_version" in vsctl_ssl(pki, port, "show").stdout
        assert f"LOCAL({br})" in ofctl(pki, "show", target).stdout
        sw.alive()
    finally:
        sw.stop()


def test_garbage_and_silence_on_the_tls_ports(pki):
    port = free_port()
    sw = tls_switch(pki, port, *pki.switch_files())
    try:
        br, of_port = pssl_bridge(sw, pki, "fg")
        silent = []
        for p in (port, of_port):
            # A client that connects and says nothing holds up nobody.
            silent.append(socket.create_connection(("127.0.0.1", p)))
            for payload in (os.urandom(4096), b"\x04\x00\x00\x08\x00\x00\x00\x01",
                            b"\x16\x03\x01\xff\xff" + os.urandom(64), b"GET / HTTP/1.0\r\n\r\n"):
                s = socket.create_connection(("127.0.0.1", p))
                s.settimeout(5)
                try:
                    s.sendall(payload)
                    s.shutdown(socket.SHUT_WR)
                    # The daemon answers with at most a TLS alert, then closes.
                    got = s.recv(65536)
                    assert not got.startswith(b"\x04"), "plain OpenFlow answered on pssl:"
                except OSError:
                    pass
                finally:
                    s.close()
        assert f"LOCAL({br})" in ofctl(pki, "show", f"ssl:127.0.0.1:{of_port}").stdout
        assert "ovs_version" in vsctl_ssl(pki, port, "show").stdout
        sw.alive()
        for s in silent:
            s.close()
    finally:
        sw.stop()
