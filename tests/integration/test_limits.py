"""Resource limits on every control-plane listener: a flood of idle sessions, a client that
dribbles a message, and a client that never reads its replies each cost bounded threads and
memory, are logged, and never lock out ovs-vsctl, ovs-appctl or ovs-ofctl."""

import json
import os
import resource
import socket
import time

from conftest import require, run, wait_for


def threads_and_rss(pid):
    """(threads, RSS in MiB) of a process, from /proc."""
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        fields[k] = v.strip()
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) / 1024


def vsctl(daemon, *args):
    require("ovs-vsctl")
    return run(["ovs-vsctl", "--timeout=10", f"--db=unix:{daemon.rundir}/db.sock", *args])


def raise_fd_limit(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def test_idle_db_sessions_are_bounded(daemon):
    """2,000 idle db.sock sessions: at most 1,024 are kept (the longest idle makes room), the
    daemon's threads and memory stay bounded, and ovs-vsctl keeps working throughout."""
    raise_fd_limit(8192)
    vsctl(daemon, "add-br", "brl")
    pid = daemon.proc.pid
    threads0, rss0 = threads_and_rss(pid)
    socks = []
    try:
        for _ in range(2000):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(daemon.rundir / "db.sock"))
            socks.append(s)
        # Every session beyond the limit closed an older idle one.
        wait_for(lambda: daemon.logtext().count("closing the one idle longest") >= 900,
                 timeout=30, what="evictions in the log")
        assert "connections (the limit)" in daemon.logtext()
        wait_for(lambda: threads_and_rss(pid)[0] <= threads0 + 2 * 1024 + 16, timeout=30,
                 what="evicted sessions' threads to end")
        threads, rss = threads_and_rss(pid)
        print(f"threads {threads0} -> {threads}, RSS {rss0:.0f} -> {rss:.0f} MiB")
        assert rss - rss0 < 200, f"RSS grew by {rss - rss0:.0f} MiB"
        # Still answering while the flood is connected.
        assert "brl" in vsctl(daemon, "list-br").stdout
    finally:
        for s in socks:
            s.close()
    wait_for(lambda: threads_and_rss(pid)[0] <= threads0 + 8, timeout=30,
             what="all session threads to end")
    assert "brl" in vsctl(daemon, "list-br").stdout


def test_idle_appctl_clients_cannot_lock_out_ovs_appctl(daemon):
    require("ovs-appctl")
    socks = []
    try:
        for _ in range(200):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(daemon.ctl))
            socks.append(s)
        time.sleep(0.2)
        r = run(["ovs-appctl", "-T", "10", "-t", str(daemon.ctl), "version"])
        assert r.stdout.strip()
        assert daemon.cli("list-br").returncode == 0
        assert "unixctl: 64 connections (the limit)" in daemon.logtext()
    finally:
        for s in socks:
            s.close()


def test_unixctl_request_must_arrive_in_time(daemon):
    """A request dribbled one byte at a time is cut off at the 30 s message deadline."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(daemon.ctl))
    s.settimeout(1)
    msg = b'{"id": 0, "method": "version", "params": []}'
    t0 = time.time()
    got = b""
    for b in msg[:-1]:
        try:
            s.send(bytes([b]))
            got += s.recv(4096)
        except socket.timeout:
            continue
        except OSError:
            break
        if got:
            break
    elapsed = time.time() - t0
    assert b"took too long" in got, got
    assert 29 <= elapsed <= 40, elapsed
    assert daemon.cli("list-br").returncode == 0


def test_openflow_dribbler_is_cut_off(daemon):
    """A management client that sends a message one byte a second is probed and closed once
    the inactivity probe (lowered to 1 s here) expires twice, whatever bytes it sends."""
    require("ovs-ofctl")
    daemon.cli("add-br", "brd")
    daemon.cli("set-openflow", "brd", "inactivity_probe=1000")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(daemon.rundir / "brd.mgmt"))
    s.settimeout(1)
    hello = bytes([4, 0, 0, 8, 0, 0, 0, 1])
    s.sendall(hello)
    echo = bytes([4, 2, 0, 8, 0, 0, 0, 2])  # an echo request, dribbled
    t0 = time.time()
    closed = False
    for i in range(30):
        try:
            s.send(echo[i % 7: i % 7 + 1])
            while True:
                if not s.recv(65536):
                    closed = True
                    break
        except socket.timeout:
            pass
        except OSError:
            closed = True
        if closed:
            break
    assert closed, "the dribbling client is still connected"
    assert time.time() - t0 < 6
    wait_for(lambda: "unfinished message" in daemon.logtext(), what="the log line")
    r = run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", f"unix:{daemon.rundir}/brd.mgmt"])
    assert r.returncode == 0


def test_unread_ovsdb_replies_are_bounded(daemon):
    """A client that asks for large replies and never reads them is disconnected once 64 MiB
    are queued for it, instead of the daemon buffering every reply."""
    vsctl(daemon, "add-br", "brb")
    db = str(daemon.rundir / "db.sock")
    big = "x" * (8 << 20)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(db)
    txn = {"id": 1, "method": "transact", "params": [
        "Open_vSwitch", {"op": "mutate", "table": "Open_vSwitch", "where": [],
                         "mutations": [["external_ids", "insert", ["map", [["big", big]]]]]}]}
    c.sendall(json.dumps(txn).encode())
    c.settimeout(10)
    reply = b""
    while b"}" not in reply:
        reply += c.recv(65536)
    assert b'"error":null' in reply.replace(b" ", b""), reply[:200]
    pid = daemon.proc.pid
    _, rss0 = threads_and_rss(pid)
    hog = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hog.connect(db)
    select = {"method": "transact", "params": [
        "Open_vSwitch", {"op": "select", "table": "Open_vSwitch", "where": []}]}
    for i in range(40):
        try:
            hog.sendall(json.dumps(dict(select, id=i)).encode())
        except OSError:
            break
        time.sleep(0.05)
    wait_for(lambda: "is not reading its messages" in daemon.logtext(), timeout=30,
             what="the backlog disconnect in the log")
    _, rss = threads_and_rss(pid)
    print(f"RSS {rss0:.0f} -> {rss:.0f} MiB")
    assert rss - rss0 < 200, f"RSS grew by {rss - rss0:.0f} MiB for 40 unread 8 MiB replies"
    hog.close()
    c.close()
    assert "brb" in vsctl(daemon, "list-br").stdout
