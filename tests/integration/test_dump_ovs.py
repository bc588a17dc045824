"""`ovs-ofctl dump-flows` of a few thousand flows against Debian's OVS 3.1: the same flows,
with the same fields (OpenFlow 1.0's Nicira records and OpenFlow 1.5's carry each flow's
idle age), in about as many reply messages: OVS fills each flow statistics reply to 64 KiB
(ferrovs sent 128 flows a message, five times as many messages)."""

import re
import sys
from pathlib import Path

import pytest

from conftest import ovs_beside_ferrovs

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

N_FLOWS = 5000


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    work = tmp_path_factory.mktemp("dumpovs")
    for sws in ovs_beside_ferrovs(work, "OpenFlow10,OpenFlow13,OpenFlow15"):
        yield sws, work


def flow_set(text):
    """The dump's flow lines, sorted, durations left out and ages (present or not) as N:
    the two installs do not take the same time."""
    return sorted(re.sub(r"(idle_age|hard_age)=\d+", r"\1=N",
                         re.sub(r"duration=[0-9.]+s, ", "", ln.strip()))
                  for ln in text.splitlines() if ln.startswith(" cookie="))


@pytest.mark.parametrize("proto", ["OpenFlow10", "OpenFlow13", "OpenFlow15"])
def test_a_large_dump_reads_as_ovs_in_as_many_messages(switches, proto):
    sws, work = switches
    rules = [f"priority=100,ip,nw_dst=10.0.{i >> 8}.{i & 255},actions=output:1"
             for i in range(N_FLOWS)]
    dumps = {}
    for sw in sws:
        ok, err = ovsdiff.install(sw, rules, work)
        assert ok, f"{sw.name} refused the flows: {err}"
        dumps[sw.name] = ovsdiff.run(["ovs-ofctl", "-O", proto, "dump-flows",
                                      f"unix:{sw.mgmt}"]).stdout
    ovs, fv = dumps["OVS"], dumps["ferrovs"]
    assert len(flow_set(ovs)) == N_FLOWS, ovs[:2000]
    assert flow_set(fv) == flow_set(ovs)
    messages = {n: len(re.findall(r"^(?:OFPST|NXST)_FLOW reply", d, re.M)) for n, d in dumps.items()}
    # OVS packs to the byte; ferrovs leaves 1/32 of each message for larger records.
    assert 1 < messages["OVS"] <= messages["ferrovs"] <= messages["OVS"] * 33 // 32 + 1, messages
