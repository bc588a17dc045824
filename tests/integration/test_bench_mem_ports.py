"""bench/w3_run.py and bench/w6_run.py (split and packed rings) in --smoke mode (1 s windows):
every configuration, OVS-DPDK 3.1 included, sets up and forwards through the closed testpmd loop, and the JSON holds
the switch core's busy share for ferrovs and OVS-DPDK. No timing is asserted: the numbers of a
1 s window on a shared machine mean nothing; only that each configuration delivered packets.
"""

import json
import subprocess
import sys

from conftest import BIN, ROOT, need_root, require

CONFIGS = ("ferrovs-patch", "ferrovs-l3_4k", "ovs-patch", "ovs-l3_4k", "floor")


def smoke(tmp_path, script, *extra):
    need_root()
    require("dpdk-testpmd", "ovs-vsctl", "ovsdb-server")
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--bins", str(BIN),
                        "--smoke", "--json", str(out), *extra],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(out.read_text())
    for name in CONFIGS:
        assert d["results"][name] and d["results"][name] > 0, (name, r.stdout)
        if name != "floor":
            share = d["switch_core"][name]["busy_share"]
            assert 0 < share <= 1, (name, share)
            assert d["switch_core"][name]["packets"] > 0, name
    # The report's ratios come from two measured numbers of this run.
    assert set(d["ratios"]) == {"ferrovs-patch / ovs-patch", "ferrovs-l3_4k / ovs-l3_4k"}
    return d


def test_w3_smoke_every_configuration_forwards(tmp_path):
    d = smoke(tmp_path, "w3_run.py")
    assert d["benchmark"] == "W3" and d["size"] == 64


def test_w6_smoke_every_configuration_forwards(tmp_path):
    d = smoke(tmp_path, "w6_run.py", "--size", "1518")
    assert d["benchmark"] == "W6" and d["size"] == 1518
    # The guest side's memory: 2 MiB hugepages unless the kernel refused them (then why).
    assert d["guest_memory"] in ("hugepages", "no-huge") and d["guest_memory_note"], d


def test_w6_smoke_packed_rings_on_4k_pages_every_configuration_forwards(tmp_path):
    # The guest's virtio ports ask for packed virtqueues (packed_vq=1) from ferrovs, OVS-DPDK
    # and the floor alike; 64 B frames, the size W6's goal is set at. With --no-huge the
    # guest side runs on a memfd of 4 KiB pages (the split-ring test above has hugepages), so
    # one run covers both options and the JSON says which memory the guest had.
    d = smoke(tmp_path, "w6_run.py", "--packed", "--no-huge")
    assert d["benchmark"] == "W6 packed rings" and d["size"] == 64
    assert d["guest_memory"] == "no-huge" and d["guest_memory_note"] == "--no-huge given", d
