"""The daemon's control socket: the ferrovs CLI and Debian's ovs-appctl against it."""

import json
import os
import pty
import subprocess

import pytest

from conftest import BIN, require, run


def test_errors_name_the_problem_and_change_nothing(daemon):
    daemon.cli("add-br", "brt", "module=patch")
    before = daemon.cli("show").stdout
    r = daemon.cli("add-port", "br9", "p1", "type=null", check=False)
    assert r.returncode == 1
    assert "add-port: no such bridge 'br9'" in r.stderr
    for args, needle in [
        (["add-port", "brt", "p1", "type=bogus"], "unknown port type 'bogus'"),
        (["add-port", "brt", "p1", "type=null", "color=red"], "unknown option 'color'"),
        (["add-port", "brt", "p1", "type=null", "ofport=0"], "ofport"),
        (["add-port", "brt", "p1", "type=pcap", "rx_pcap=/nonexistent.pcap"], "rx_pcap"),
        (["add-port", "brt", "p1", "type=null", "tag=5000"], "tag"),
        (["add-br", "brt"], "already exists"),
        (["add-br", "brx", "module=nosuch"], "unknown module 'nosuch'"),
        (["add-br", "brx", "mac-aging-time=abc"], "mac-aging-time"),
        (["del-br", "nosuch"], "no such bridge 'nosuch'"),
        (["del-port", "brt", "nosuch"], "no port 'nosuch'"),
        (["fdb-show", "brt"], "no command 'fdb-show'"),
        (["patch-set", "brt", "a", "b"], "no such port 'a'"),
    ]:
        r = daemon.cli(*args, check=False)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert needle in r.stderr, (args, r.stderr)
    assert daemon.cli("show").stdout == before
    assert "brx" not in daemon.cli("list-br").stdout
    r = daemon.cli("no-such-verb", check=False)
    assert r.returncode == 1 and "not a valid command" in r.stderr


def test_ports_ofports_and_json(daemon):
    daemon.cli("add-br", "brj", "module=patch")
    daemon.cli("add-port", "brj", "a", "type=null")
    daemon.cli("add-port", "brj", "b", "type=null", "ofport=10")
    daemon.cli("add-port", "brj", "c", "type=null")
    r = daemon.cli("add-port", "brj", "d", "type=null", "ofport=10", check=False)
    assert r.returncode == 1 and "ofport 10 is already used by port 'b'" in r.stderr
    show = daemon.json("show")
    (br,) = [b for b in show["bridges"] if b["name"] == "brj"]
    ofports = {p["name"]: p["ofport"] for p in br["ports"]}
    assert ofports == {"brj": 65534, "a": 1, "b": 10, "c": 2}
    assert daemon.cli("list-ports", "brj").stdout.split() == ["a", "b", "c"]
    assert daemon.cli("port-to-br", "c").stdout.strip() == "brj"
    daemon.cli("del-port", "a")
    daemon.cli("add-port", "brj", "e", "type=null")
    ofports = {p["name"]: p["ofport"] for p in daemon.json("show")["bridges"][0]["ports"]}
    assert ofports["e"] == 1
    ports = daemon.json("dump-ports", "brj")
    assert {p["name"] for p in ports["ports"]} == {"brj", "b", "c", "e"}
    stats = daemon.json("pmd-stats-show")
    assert "packets_received" in stats["pmds"][0]
    assert daemon.json("list-ports", "brj") == ["b", "c", "e"]
    assert daemon.json("list-br") == ["brj"]
    daemon.cli("del-br", "brj")
    assert daemon.json("show") == {"bridges": []}


def test_internal_port_lives_and_dies_with_the_bridge(daemon):
    daemon.cli("add-br", "brlife")
    assert run(["ip", "link", "show", "brlife"], check=False).returncode == 0
    r = daemon.cli("del-port", "brlife", "brlife", check=False)
    assert r.returncode == 1 and "delete the bridge instead" in r.stderr
    # An internal port on request is another TAP device, removed with its port.
    daemon.cli("add-port", "brlife", "brlife-in", "type=internal")
    assert run(["ip", "link", "show", "brlife-in"], check=False).returncode == 0
    show = daemon.json("show")["bridges"][0]["ports"]
    assert {p["name"]: p["type"] for p in show} == {"brlife": "internal", "brlife-in": "internal"}
    daemon.cli("del-port", "brlife-in")
    assert run(["ip", "link", "show", "brlife-in"], check=False).returncode != 0
    daemon.cli("add-port", "brlife", "brlife-in2", "type=internal")
    daemon.cli("del-br", "brlife")
    for dev in ("brlife", "brlife-in2"):
        assert run(["ip", "link", "show", dev], check=False).returncode != 0


def test_ovs_appctl_drives_ferrovsd(daemon):
    require("ovs-appctl")
    ctl = str(daemon.ctl)
    out = run(["ovs-appctl", "-t", ctl, "list-commands"]).stdout
    assert "The available commands are:" in out
    for cmd in ("dpif-netdev/pmd-stats-show", "pmd-stats-show", "add-br", "fdb/show"):
        assert cmd in out
    assert "ferrovsd" in run(["ovs-appctl", "-t", ctl, "version"]).stdout
    run(["ovs-appctl", "-t", ctl, "add-br", "brovs"])
    assert "Bridge brovs" in run(["ovs-appctl", "-t", ctl, "show"]).stdout
    out = run(["ovs-appctl", "-t", ctl, "dpif-netdev/pmd-stats-show"]).stdout
    assert "pmd thread" in out and "packets received:" in out and "processing cycles:" in out
    import re
    import time

    def iterations():
        out = run(["ovs-appctl", "-t", ctl, "pmd-stats-show"]).stdout
        return int(re.search(r"iterations: (\d+)", out).group(1))

    time.sleep(0.5)
    before = iterations()
    run(["ovs-appctl", "-t", ctl, "dpif-netdev/pmd-stats-clear"])
    after = iterations()
    assert before > 100 and after < before
    r = run(["ovs-appctl", "-t", ctl, "fdb/show", "nosuch"], check=False)
    assert r.returncode == 2 and "no such bridge 'nosuch'" in r.stderr
    r = run(["ovs-appctl", "-t", ctl, "bogus/cmd"], check=False)
    assert r.returncode == 2 and "not a valid command" in r.stderr


def test_garbage_on_the_control_socket_does_not_hurt(daemon):
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(daemon.ctl))
    s.sendall(b'{"id": 1, "method": 7}' + b"][" * 10)
    s.settimeout(5)
    data = s.recv(65536)
    s.close()
    assert b"error" in data
    assert daemon.cli("list-br").returncode == 0
    assert daemon.proc.poll() is None


def test_pcap_replay_through_learning_is_readable(daemon, tmp_path):
    require("tcpdump")
    import time

    from scapy.all import IP, UDP, Ether, rdpcap, wrpcap

    src = tmp_path / "in.pcap"
    out = tmp_path / "out.pcap"
    frames = [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") /
              IP(src="10.0.0.1", dst=f"10.0.1.{i}") / UDP(sport=1000 + i, dport=5001)
              for i in range(20)]
    wrpcap(str(src), frames)
    daemon.cli("add-br", "brpc")
    daemon.cli("add-port", "brpc", "out", "type=pcap", f"tx_pcap={out}")
    # Unknown destination: the learning bridge floods every frame to "out" (and LOCAL).
    daemon.cli("add-port", "brpc", "in", "type=pcap", f"rx_pcap={src}")
    deadline = time.time() + 10
    while time.time() < deadline:
        st = {p["name"]: p for p in daemon.json("dump-ports", "brpc")["ports"]}
        if st["out"]["tx_packets"] >= 20:
            break
        time.sleep(0.1)
    assert st["in"]["rx_packets"] == 20
    # The host stack may also send on the internal port (e.g. IPv6 MLD): ignore its frames.
    got = [bytes(p) for p in rdpcap(str(out)) if p[Ether].src == "02:00:00:00:00:01"]
    assert got == [bytes(f) for f in frames]
    r = run(["tcpdump", "-nr", str(out), "udp"])
    assert len(r.stdout.strip().splitlines()) == 20
    fdb = {e["mac"]: e["port_name"] for e in daemon.json("fdb-show", "brpc")}
    assert fdb["02:00:00:00:00:01"] == "in"


def test_group_bucket_commands_from_the_cli(daemon):
    """insert-buckets / remove-buckets, as ovs-ofctl -O OpenFlow15 offers them."""
    daemon.cli("add-br", "brg")
    for p, n in [("n1", 1), ("n2", 2), ("n3", 3)]:
        daemon.cli("add-port", "brg", p, "type=null", f"ofport={n}")
    daemon.cli("add-group", "brg", "group_id=4,type=all,bucket=output:1,bucket=output:2")

    def buckets():
        out = daemon.cli("dump-groups", "brg").stdout
        line = next(l for l in out.splitlines() if "group_id=4" in l)
        line = line.split(" (packet_count")[0]
        return [b.rstrip(",") for b in line.split("bucket=")[1:]]

    assert buckets() == ["bucket_id:0,actions=output:1", "bucket_id:1,actions=output:2"]
    daemon.cli("insert-buckets", "brg",
               "group_id=4,command_bucket_id=first,bucket=bucket_id:9,actions=output:3")
    daemon.cli("insert-buckets", "brg", "group_id=4,bucket=bucket_id:5,actions=drop")
    assert buckets() == ["bucket_id:9,actions=output:3", "bucket_id:0,actions=output:1",
                         "bucket_id:1,actions=output:2", "bucket_id:5,actions=drop"]
    daemon.cli("remove-buckets", "brg", "group_id=4,command_bucket_id=0")
    daemon.cli("remove-buckets", "brg", "group_id=4,command_bucket_id=last")
    assert buckets() == ["bucket_id:9,actions=output:3", "bucket_id:1,actions=output:2"]
    # Refused with the reason, and nothing changes.
    for args, needle in [
        (["remove-buckets", "brg", "group_id=4,command_bucket_id=77"], "unknown bucket"),
        (["insert-buckets", "brg", "group_id=4,bucket=bucket_id:9,actions=drop"],
         "bucket id already in the group"),
        (["insert-buckets", "brg", "group_id=99,bucket=actions=drop"], "unknown group"),
        (["insert-buckets", "brg", "group_id=4"], "at least one bucket"),
    ]:
        r = daemon.cli(*args, check=False)
        assert r.returncode == 1 and needle in r.stderr, (args, r.stderr)
    assert buckets() == ["bucket_id:9,actions=output:3", "bucket_id:1,actions=output:2"]
    daemon.cli("remove-buckets", "brg", "group_id=4")
    assert buckets() == []


def test_cli_dumps_tables_larger_than_a_request(daemon, tmp_path):
    """A dump's reply is far larger than any request: 60,000 flows (about 4.6 MB of text and
    11 MB of JSON, both over the 4 MiB request limit) come back whole, as ovs-appctl gets them."""
    require("ovs-ofctl")
    n = 60_000
    daemon.cli("add-br", "brbig")
    flows = tmp_path / "flows.txt"
    flows.write_text("".join(
        f"priority=100,ip,nw_dst=10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255},actions=output:2\n"
        for i in range(n)))
    env = {"OVS_RUNDIR": str(daemon.rundir), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    run(["ovs-ofctl", "-O", "OpenFlow14", "--bundle", "add-flows", "brbig", str(flows)],
        env=env, timeout=120)
    text = daemon.cli("dump-flows", "brbig", timeout=60).stdout
    lines = [l for l in text.splitlines() if "priority=" in l]
    assert len(lines) == n + 1, len(lines)  # and the default NORMAL flow
    assert "nw_dst=10.0.234.95" in text
    dumped = daemon.json("dump-flows", "brbig")
    assert len(dumped) == n + 1
    out = run(["ovs-appctl", "-t", str(daemon.ctl), "dump-flows", "brbig"], timeout=60).stdout
    assert len([l for l in out.splitlines() if "priority=" in l]) == n + 1


def test_cli_adds_and_dumps_a_million_flows(daemon, tmp_path):
    """`ferrovs add-flows` of 1,000,000 flows (52 MB, far over the 4 MiB request limit) goes in
    as one OpenFlow bundle, next to the default NORMAL flow (tables have no size limit, as in
    OVS), and `ferrovs dump-flows` gives all of them back; table features still report OVS's
    max_entries."""
    require("ovs-ofctl", "ovs-appctl", "busybox")
    n = 1_000_000
    daemon.cli("add-br", "brmil")
    flows = tmp_path / "flows.txt"
    with open(flows, "w") as f:
        for i in range(n):
            f.write(f"priority=100,ip,nw_dst=10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255},"
                    "actions=output:2\n")
    r = daemon.cli("add-flows", "brmil", flows, timeout=300)
    assert r.stderr == "", r.stderr  # no progress line unless stderr is a terminal
    # The dump is printed as it arrives: the CLI never holds the ~100 MB of text (it did,
    # 378 MB resident, before replies were streamed).
    # The peak is measured by busybox's `time`, a small parent: a child forked from this
    # Python process inherits its size in the kernel's account until it execs.
    dump, peak = tmp_path / "dump.txt", tmp_path / "peak_kib"
    with open(dump, "w") as out:
        r = subprocess.run(["busybox", "time", "-f", "%M", "-o", str(peak), str(BIN / "ferrovs"),
                            "--rundir", str(daemon.rundir), "dump-flows", "brmil"], stdout=out,
                           stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    text = dump.read_text()
    lines = [l for l in text.splitlines() if "priority=" in l]
    assert len(lines) == n + 1, len(lines)
    assert "priority=100,ip,nw_dst=10.15.66.63 actions=output:2" in text
    assert "priority=0 actions=NORMAL" in text
    kib = int(peak.read_text().split()[-1])
    assert kib < 64 * 1024, f"CLI peak RSS {kib} KiB for {dump.stat().st_size} bytes"
    # OVS's own client reads the streamed reply too.
    shown = run(["ovs-appctl", "-t", str(daemon.ctl), "dump-flows", "brmil"],
                timeout=300).stdout
    assert shown.count("priority=") == n + 1
    # A reader that stops early ends the CLI quietly, as it would any filter.
    r = subprocess.run(f"{BIN / 'ferrovs'} --rundir {daemon.rundir} dump-flows brmil | head -3",
                       shell=True, capture_output=True, text=True, timeout=300)
    assert r.stdout.count("priority=") == 3 and r.stderr == "", r.stderr
    env = {"OVS_RUNDIR": str(daemon.rundir), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    tables = run(["ovs-ofctl", "-O", "OpenFlow15", "dump-table-features", "brmil"],
                 env=env, timeout=60).stdout
    assert "max_entries=1000000" in tables, tables[:500]


def test_cli_add_flows_is_all_or_none_and_names_the_line(daemon, tmp_path):
    """A parse error, or a flow the switch refuses when the bundle commits, names its line
    and adds nothing; standard input works; a terminal gets a progress line."""
    daemon.cli("add-br", "brbad")
    base = daemon.cli("dump-flows", "brbad").stdout
    bad = tmp_path / "parse.txt"
    bad.write_text("priority=7,ip,actions=output:1\n\n# note\npriority=8,udp,tp_dst=x,actions=drop\n")
    r = daemon.cli("add-flows", "brbad", bad, check=False)
    assert r.returncode == 1 and "line 4: tp_dst=x" in r.stderr, r.stderr
    refused = tmp_path / "refused.txt"
    refused.write_text("priority=7,ip,actions=output:1\npriority=9,ip,actions=group:99\n")
    r = daemon.cli("add-flows", "brbad", refused, check=False)
    assert r.returncode == 1 and "line 2: OFPBAC_BAD_OUT_GROUP" in r.stderr, r.stderr
    assert daemon.cli("dump-flows", "brbad").stdout.count("priority=") == 1, base
    r = run([str(BIN / "ferrovs"), "--rundir", str(daemon.rundir), "add-flows", "brbad", "-"],
            input="priority=7,ip,actions=output:1\n", timeout=30)
    assert "priority=7,ip actions=output:1" in daemon.cli("dump-flows", "brbad").stdout
    r = daemon.cli("add-flows", "nosuch", refused, check=False)
    assert r.returncode == 2 and "nosuch.mgmt" in r.stderr, r.stderr
    # Progress on a terminal, for more than 10,000 flows.
    big = tmp_path / "big.txt"
    big.write_text("".join(f"priority=50,ip,nw_src=10.1.{i >> 8}.{i & 255},actions=drop\n"
                           for i in range(20_000)))
    master, slave = pty.openpty()
    p = subprocess.run([str(BIN / "ferrovs"), "--rundir", str(daemon.rundir), "add-flows",
                        "brbad", str(big)], stderr=slave, stdout=subprocess.PIPE, timeout=60)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert p.returncode == 0, shown
    assert b"flows sent" in shown and b"add-flows: 20000 flows added" in shown, shown
    assert daemon.cli("dump-flows", "brbad").stdout.count("priority=50,") == 20_000


def test_help_lists_every_daemon_verb_and_explains_each(daemon):
    listed = daemon.cli("list-commands").stdout.splitlines()[1:]
    names = [l.split()[0] for l in listed if l.strip()]
    assert len(names) > 40, names
    text = daemon.cli("help").stdout
    for n in names:
        assert f"  {n} " in text or f"  {n}\n" in text, f"'{n}' missing from ferrovs help"
    one = daemon.cli("help", "add-flows").stdout
    assert "ferrovs [OPTIONS] add-flows BR FILE|-" in one, one
    # A verb only the daemon knows is explained from its list-commands line.
    assert "vlog/set" in daemon.cli("help", "vlog/set").stdout
    bad = daemon.cli("help", "no-such-verb", check=False)
    assert bad.returncode == 2 and "no verb 'no-such-verb'" in bad.stderr
    comp = daemon.cli("completions", "bash").stdout
    assert "add-flows" in comp and "complete" in comp
    man = daemon.cli("man").stdout
    assert man.startswith(".ie") or ".TH" in man, man[:200]
    assert "add\\-flows" in man or "add-flows" in man


def _rate(cell):
    """'1.4M' -> 1.4e6."""
    mult = {"k": 1e3, "M": 1e6, "G": 1e9}
    return float(cell[:-1]) * mult[cell[-1]] if cell[-1] in mult else float(cell)


def test_top_shows_live_rates_under_tmux(daemon):
    require("tmux")
    import time

    daemon.cli("add-br", "brtop")
    daemon.cli("add-port", "brtop", "gen0", "type=null", "rx_gen=64")
    daemon.cli("add-port", "brtop", "sink0", "type=null")
    # The text snapshot and dump-ports --rate: the generator's rx equals the sink's tx.
    snap = daemon.cli("top", "brtop", "--once", "--interval", "0.5").stdout
    rows = {l.split()[1]: l.split() for l in snap.splitlines() if l.startswith("brtop")}
    assert _rate(rows["gen0"][2]) > 1000, snap
    assert _rate(rows["sink0"][4]) > 1000, snap
    assert "pmd" in snap and "busy%" in snap
    rate = daemon.cli("dump-ports", "brtop", "--rate", "--interval", "0.5").stdout
    assert "gen0" in rate and "thread" not in rate
    # The terminal UI, refreshing in place: two captures a second apart both show traffic.
    session = f"fvtop{os.getpid()}"
    cmd = f"{BIN / 'ferrovs'} --rundir {daemon.rundir} top brtop --interval 0.3"
    run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "30", cmd])
    try:
        screens = []
        for _ in range(2):
            time.sleep(1.0)
            screens.append(run(["tmux", "capture-pane", "-p", "-t", session]).stdout)
        for screen in screens:
            assert "ferrovs top" in screen and "poll threads" in screen, screen
            gen = [l for l in screen.splitlines() if " gen0 " in l]
            assert gen, screen
            assert _rate(gen[0].strip("│ ").split()[2]) > 1000, screen
        run(["tmux", "send-keys", "-t", session, "q"])
        for _ in range(50):
            if run(["tmux", "has-session", "-t", session], check=False).returncode != 0:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("top did not quit on 'q'")
    finally:
        run(["tmux", "kill-session", "-t", session], check=False)


def test_metrics_endpoint_agrees_with_dump_ports(daemon):
    require("curl", "ovs-vsctl")
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    vsctl = ["ovs-vsctl", f"--db=unix:{daemon.rundir}/db.sock"]
    daemon.cli("add-br", "brm")
    daemon.cli("add-port", "brm", "gen1", "type=null", "rx_gen=64")
    daemon.cli("add-port", "brm", "sink1", "type=null")
    run(vsctl + ["set", "Open_vSwitch", ".", f"other_config:metrics-address=127.0.0.1:{port}"])
    time.sleep(0.5)
    # Stop the traffic so both readings see the same counters.
    daemon.cli("del-port", "brm", "gen1")
    time.sleep(0.3)
    url = f"http://127.0.0.1:{port}/metrics"
    text = ""
    for _ in range(50):
        r = run(["curl", "-s", "--max-time", "2", url], check=False)
        if r.returncode == 0 and "ferrovs_port_tx_packets_total" in r.stdout:
            text = r.stdout
            break
        time.sleep(0.1)
    assert text, "no metrics served"
    ports = {p["name"]: p for p in daemon.json("dump-ports", "brm")["ports"]}
    got = {}
    for line in text.splitlines():
        if line.startswith("ferrovs_port_") and 'bridge="brm"' in line:
            name, value = line.rsplit(" ", 1)
            metric = name.split("{")[0][len("ferrovs_port_"):-len("_total")]
            port_name = name.split('port="')[1].split('"')[0]
            got[(port_name, metric)] = int(value)
    assert ports["sink1"]["tx_packets"] > 1000
    for key in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_dropped"):
        assert got[("sink1", key)] == ports["sink1"][key], (key, got, ports["sink1"])
    assert "# TYPE ferrovs_pmd_packets_received counter" in text
    assert run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                f"http://127.0.0.1:{port}/other"]).stdout == "404"
    # Clearing the setting closes the endpoint.
    run(vsctl + ["remove", "Open_vSwitch", ".", "other_config", "metrics-address"])
    for _ in range(50):
        if run(["curl", "-s", "--max-time", "1", url], check=False).returncode != 0:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("endpoint still up after metrics-address was removed")
