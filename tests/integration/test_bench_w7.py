"""bench/w7.sh: the W7 runner (tunnel encap and decap, ferrovs and OVS-DPDK, one core).

A smoke run (1 s windows, 1 and 1,000 flows) of every configuration; no timing is asserted.
Each configuration must deliver packets, and the frames ferrovs hands its sink must really be
tunnel packets: the first frame of the encap direction is parsed with scapy as VXLAN (then
Geneve) to the remote with the VNI around a W1 frame, the first frame of the decap direction
as a bare W1 frame. OVS-DPDK must show a datapath flow with tnl_push / tnl_pop.
"""

import json
import os
import subprocess
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN
from scapy.contrib.geneve import GENEVE

from conftest import BIN, ROOT, need_root, require

W7 = ROOT / "bench" / "w7.sh"
OVS_DPDK = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"


def smoke(tmp, *args, timeout=600):
    out = tmp / "w7.json"
    r = subprocess.run(["bash", str(W7), "--no-build", "--smoke", "--pcap-dir", str(tmp),
                        "--json", str(out), *args],
                       capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, FERROVS_BIN_DIR=str(BIN)))
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text()), r.stdout


def check_inner(f):
    assert f.haslayer(UDP) and f[UDP].dport == 5001, f.show(dump=True)
    assert f[IP].src == "192.168.0.1" and f[IP].dst.startswith("10.0.")


def check_outer(f, doc):
    ep = doc["endpoints"]
    assert f[Ether].dst == ep["remote_mac"] and f[Ether].src == ep["local_mac"]
    assert (f[IP].src, f[IP].dst) == (ep["local_ip"], ep["remote_ip"])


def test_w7_smoke_vxlan_both_switches(tmp_path):
    need_root()
    require("ip", "taskset", "ovs-vsctl", "ovsdb-server", "ovs-appctl")
    assert Path(OVS_DPDK).exists(), f"{OVS_DPDK} missing (openvswitch-switch-dpdk)"
    doc, stdout = smoke(tmp_path)
    assert doc["benchmark"] == "W7" and doc["proto"] == "vxlan"
    cols = ["ferrovs_encap", "ovs_encap", "ferrovs_decap", "ovs_decap"]
    assert sorted(doc["columns"]) == sorted(cols)
    for flows in ("1", "1000"):
        for c in cols:
            cell = doc["results"][flows][c]
            assert cell["status"] == "ok", (flows, c, cell)
            assert cell["delivered"] > 0 and cell["mpps"] > 0, (flows, c, cell)
        assert set(doc["ratios"][flows]) == {"encap", "decap"}
    v = doc["verified"]
    assert all(v[c]["ok"] for c in cols), v
    assert "tnl_push(" in v["ovs_encap"]["datapath_flow"]
    assert "tnl_pop(" in v["ovs_decap"]["datapath_flow"]
    enc = Ether(bytes.fromhex(v["ferrovs_encap"]["first_frame"]))
    assert enc.haslayer(VXLAN), enc.show(dump=True)
    check_outer(enc, doc)
    assert enc[UDP].dport == 4789 and enc[VXLAN].vni == doc["endpoints"]["vni"]
    check_inner(enc[VXLAN].payload)
    dec = Ether(bytes.fromhex(v["ferrovs_decap"]["first_frame"]))
    assert not dec.haslayer(VXLAN) and len(bytes(dec)) == 60
    check_inner(dec)
    assert "ferrovs encap" in stdout and "OVS-DPDK decap" in stdout


def test_w7_smoke_geneve_ferrovs(tmp_path):
    need_root()
    require("ip", "taskset")
    doc, _ = smoke(tmp_path, "--proto", "geneve", "--only", "ferrovs", "--flows", "1000")
    assert doc["results"]["1000"]["ferrovs_encap"]["delivered"] > 0
    assert doc["results"]["1000"]["ferrovs_decap"]["delivered"] > 0
    assert "ovs_encap" not in doc["results"]["1000"] and doc["ratios"] == {}
    enc = Ether(bytes.fromhex(doc["verified"]["ferrovs_encap"]["first_frame"]))
    assert enc.haslayer(GENEVE) and enc[UDP].dport == 6081, enc.show(dump=True)
    check_outer(enc, doc)
    assert enc[GENEVE].vni == doc["endpoints"]["vni"] and enc[GENEVE].proto == 0x6558
    check_inner(enc[GENEVE].payload)
