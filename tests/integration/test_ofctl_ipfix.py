"""`ovs-ofctl dump-ipfix-bridge` and `dump-ipfix-flow` against Debian's OVS 3.1 and ferrovs
side by side: Nicira's `NXST_IPFIX_BRIDGE` / `NXST_IPFIX_FLOW` statistics, vendor stats in
OpenFlow 1.0 and experimenter multiparts from 1.3 on. A bridge without IPFIX (or without
a flow collector set) answers `NXST_NOT_CONFIGURED`; with it, the exporter's counters. The
IPFIX rows name a collector on 127.0.0.1 that nobody listens on."""

import re
import sys
import time
from pathlib import Path

import pytest

from conftest import ovs_beside_ferrovs

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

PROTOS = [None, "OpenFlow13", "OpenFlow15"]


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    yield from ovs_beside_ferrovs(tmp_path_factory.mktemp("ofctlipfix"),
                                  "OpenFlow10,OpenFlow13,OpenFlow15")


def vsctl(sw, *args):
    return ovsdiff.run(["ovs-vsctl", f"--db=unix:{sw.d}/db.sock", *args],
                       env=getattr(sw, "env", None)).stdout.strip()


def ofctl(sw, proto, verb):
    cmd = ["ovs-ofctl", "--timeout=10"] + (["-O", proto] if proto else [])
    r = ovsdiff.run(cmd + [verb, f"unix:{sw.mgmt}"], check=False)
    return r.returncode, re.sub(r"xid=0x[0-9a-f]+", "xid=N", r.stdout + r.stderr).strip()


def same_everywhere(switches, verb):
    """`verb` in every version on both switches; returns OVS's answers."""
    out = []
    for proto in PROTOS:
        ovs, fv = (ofctl(sw, proto, verb) for sw in switches)
        assert fv == ovs, f"{verb} {proto}\nOVS:\n{ovs[1]}\nferrovs:\n{fv[1]}"
        out.append(ovs)
    return out


def wait_configured(sw, verb):
    t0 = time.time()
    while "NOT_CONFIGURED" in ofctl(sw, "OpenFlow13", verb)[1]:
        assert time.time() - t0 < 10, f"{verb}: IPFIX never configured"
        time.sleep(0.1)


def test_without_ipfix_both_answer_not_configured(switches):
    for verb in ["dump-ipfix-bridge", "dump-ipfix-flow"]:
        # ovs-ofctl prints the error and exits 0, for both.
        for _, text in same_everywhere(switches, verb):
            assert text.startswith("OFPT_ERROR") and "NXST_NOT_CONFIGURED" in text, text


def test_with_ipfix_both_report_the_exporters(switches):
    for sw in switches:
        vsctl(sw, "--", "set", "Bridge", "br0", "ipfix=@i", "--", "--id=@i", "create", "IPFIX",
              'targets="127.0.0.1:4739"', "obs_domain_id=123")
    try:
        for sw in switches:
            wait_configured(sw, "dump-ipfix-bridge")
        for code, text in same_everywhere(switches, "dump-ipfix-bridge"):
            assert code == 0 and "bridge ipfix: flows=0" in text, text
        # A bridge exporter is not flow-based IPFIX.
        for code, text in same_everywhere(switches, "dump-ipfix-flow"):
            assert "NXST_NOT_CONFIGURED" in text, text
        for sw in switches:
            vsctl(sw, "--", "--id=@br", "get", "Bridge", "br0", "--", "--id=@i", "create",
                  "IPFIX", 'targets="127.0.0.1:4739"', "--", "create",
                  "Flow_Sample_Collector_Set", "id=7", "bridge=@br", "ipfix=@i")
        for sw in switches:
            wait_configured(sw, "dump-ipfix-flow")
        for code, text in same_everywhere(switches, "dump-ipfix-flow"):
            assert code == 0 and "1 ids" in text and "id   7: flows=0" in text, text
    finally:
        for sw in switches:
            vsctl(sw, "clear", "Bridge", "br0", "ipfix")
            for uuid in vsctl(sw, "--bare", "--columns=_uuid", "list",
                              "Flow_Sample_Collector_Set").split():
                vsctl(sw, "destroy", "Flow_Sample_Collector_Set", uuid)


def test_sampled_packets_are_counted(switches):
    """Every packet sampled (`sampling=1`): one IPv4 packet received shows in the
    bridge exporter's counters as OVS's (a sample, an IPv4 one, a flow record)."""
    from scapy.all import Ether, IP, UDP, raw
    frame = raw(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
                / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2))
    for sw in switches:
        ovsdiff.run(["ovs-ofctl", "-O", "OpenFlow13", "add-flow", f"unix:{sw.mgmt}",
                     "actions=drop"])
        vsctl(sw, "--", "set", "Bridge", "br0", "ipfix=@i", "--", "--id=@i", "create", "IPFIX",
              'targets="127.0.0.1:4739"', "sampling=1")
    try:
        for sw in switches:
            wait_configured(sw, "dump-ipfix-bridge")
            sw.receive(1, frame)
        want = "flows=1, current flows=0, sampled pkts=1, ipv4 ok=1, ipv6 ok=0"
        t0 = time.time()
        while True:
            got = [ofctl(sw, "OpenFlow13", "dump-ipfix-bridge")[1] for sw in switches]
            if all(want in g for g in got) or time.time() - t0 > 10:
                break
            time.sleep(0.2)
        for sw, g in zip(switches, got):
            assert want in g, (sw.name, g)
    finally:
        for sw in switches:
            vsctl(sw, "clear", "Bridge", "br0", "ipfix")
            ovsdiff.run(["ovs-ofctl", "-O", "OpenFlow13", "del-flows", f"unix:{sw.mgmt}"])
