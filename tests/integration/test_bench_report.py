"""bench/report.py: the benchmark report built from the JSON files the bench scripts write.

The fixtures (fixtures/bench_report/) are JSON files real runs of the scripts wrote on this
machine kind (`bench/w1.sh --smoke --json`, `w1-peers.sh --only testpmd --json`,
`w2.sh --json`, `w2.sh --rate 200000 --json`, `w3.sh`/`w6.sh --json`, `w5.sh --flows 10000
--w1 --json`, and report.sh's runs.json, facts.json and load.tsv). Cases that need a shape
the runs did not produce (an OVS-DPDK peer cell, a load both switches carried, a failed
cell) are made by changing values in those files, keeping their keys. The expected numbers
are computed here from the fixture values, not copied from the report.
"""

import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import PY, ROOT

FIX = Path(__file__).resolve().parent / "fixtures" / "bench_report"
REPORT = ROOT / "bench" / "report.py"


def build(src, *args, timeout=120):
    out = src / "out"
    r = subprocess.run([PY, str(REPORT), "--from", str(src), "--out", str(out), *args],
                       capture_output=True, text=True, timeout=timeout)
    md = (out / "report.md").read_text() if (out / "report.md").exists() else ""
    return r, out, md


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    shutil.copytree(FIX, d)
    (d / "runs-w3-w6.json").unlink()
    return d


def load(d, name):
    return json.loads((d / name).read_text())


def save(d, name, doc):
    (d / name).write_text(json.dumps(doc))


def tables(md):
    """Every Markdown table: a list of (header cells, [row cells])."""
    out, cur = [], None
    for line in md.splitlines():
        if line.startswith("|") and line.endswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cur is None:
                cur = (cells, [])
                out.append(cur)
            elif not all(set(c) <= set("-") for c in cells):
                cur[1].append(cells)
        else:
            cur = None
    return out


def table_with(md, first_header):
    found = [t for t in tables(md) if t[0][0] == first_header]
    assert found, f"no table starting with {first_header!r} in:\n{md}"
    return found


def rows_by_key(t):
    return {r[0]: dict(zip(t[0], r)) for r in t[1]}


def check_png(path):
    """A valid PNG: signature, IHDR with a non-zero size, CRC-checked chunks, IEND last."""
    b = path.read_bytes()
    assert b[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, kinds = 8, []
    while pos < len(b):
        (n,) = struct.unpack(">I", b[pos:pos + 4])
        kind, body = b[pos + 4:pos + 8], b[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", b[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"{path}: bad CRC in {kind!r}"
        kinds.append(kind)
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
            assert w > 100 and h > 100, (path, w, h)
        pos += 12 + n
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds, (path, kinds)


def images(md):
    return [line.split("](", 1)[1].rstrip(")") for line in md.splitlines()
            if line.startswith("![")]


def test_report_from_real_json(data):
    r, out, md = build(data)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = rows_by_key(table_with(md, "benchmark")[0])
    assert list(summary) == ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"]
    for b in ("W4", "W7", "W8"):
        assert summary[b]["status"] == "not measured (no script yet)"
    for b in ("W1", "W2", "W3", "W5", "W6"):
        assert summary[b]["status"] == "measured", summary[b]

    # W1: ferrovs's cells and the testpmd floor, the ratio patch / floor per flow count.
    w1, peers = load(data, "w1.json"), load(data, "w1-peers.json")
    t = rows_by_key(table_with(md, "flows")[0])
    for f, cells in w1["ferrovs"].items():
        row = t[format(int(f), ",")]
        c = cells["openflow:l3_4k"]
        assert row["ferrovs OF l3_4k"] == "%.2f (%.0f)" % (c["mpps"], c["cycles_per_packet"])
        tp = peers["results"][f]["testpmd_io"]
        assert row["testpmd io"].startswith("%.2f" % tp["mpps"])
        assert row["OVS-DPDK l3_4k"] == "-"
    ratios = rows_by_key(table_with(md, "flows")[1])
    for f, cells in w1["ferrovs"].items():
        row = ratios[format(int(f), ",")]
        want = cells["patch"]["mpps"] / peers["results"][f]["testpmd_io"]["mpps"]
        assert row["patch / testpmd io floor"] == "%.2fx" % want
        assert row["OF l3_4k / OVS-DPDK l3_4k (goal >= 2x)"] == "-"
    assert summary["W1"]["headline ratio (goal)"] == "no OVS-DPDK peer measured"

    # W2: both tables, the CPU per packet columns, and the fixed load not carried.
    w2 = load(data, "w2.json")
    flood = table_with(md, "switch")[0]
    assert [r[0] for r in flood[1]] == [r["switch"] for r in w2["results"]]
    fa = next(r for r in w2["results"] if r["switch"] == "ferrovs-afxdp")
    oa = next(r for r in w2["results"] if r["switch"] == "ovs-afxdp")
    row = rows_by_key(flood)["ferrovs-afxdp"]
    assert row["sw CPU ns/pkt"] == "%.0f" % fa["switch_cpu_ns_per_pkt"]
    gen = rows_by_key(table_with(md, "generator")[0])["trafgen"]
    assert gen["ferrovs afxdp / OVS afxdp delivered (goal >= 1.5x)"] == "%.2fx" % (
        fa["delivered_mpps"] / oa["delivered_mpps"])
    fixed = rows_by_key(table_with(md, "ports")[0])
    assert fixed["afxdp"]["OVS / ferrovs sw CPU"] == "not comparable"
    assert "of the offered load" in fixed["afxdp"]["load carried"]

    # W3 and W6: delivered Mpps and the ratio to the floor.
    for name in ("w3.json", "w6.json"):
        res = load(data, name)["results"]
        t = [t for t in table_with(md, "configuration") if t[1][0][1] == "%.2f" % res["ferrovs-patch"]]
        assert t, name
        rows = rows_by_key(t[0])
        assert rows["ferrovs-l3_4k"]["/ floor"] == "%.2fx" % (res["ferrovs-l3_4k"] / res["floor"])

    # W5: seconds, flows/s and OVS / ferrovs per step; the W1-during-add table.
    w5 = load(data, "w5.json")
    steps = rows_by_key(table_with(md, "step")[0])
    add = w5["steps"]["add"]
    assert steps["add"]["ferrovs"] == "%.3f (%s/s)" % (add["ferrovs"], "{:,.0f}".format(
        w5["flows"] / add["ferrovs"]))
    assert steps["add"]["OVS time / ferrovs time"] == "%.2fx" % (add["ovs"] / add["ferrovs"])
    assert steps["add"]["goal"] == ">= 2x" and steps["incr"]["goal"] == "-"
    during = rows_by_key(table_with(md, "add")[0])
    assert during["bundle"]["during Mpps"] == "-"  # no sample inside a 0.16 s add
    assert during["plain"]["during / before"] == "%.1f%%" % w5["w1_during_add"][0]["during_pct"]

    # Machine facts and load.
    facts = rows_by_key(table_with(md, "fact")[0])
    assert facts["cores"]["value"] == str(load(data, "facts.json")["cores"])
    loads = rows_by_key(table_with(md, "JSON")[0])
    assert loads["w3.json"]["load (1/5/15)"] == " ".join(
        "%.2f" % x for x in load(data, "w3.json")["load"])
    assert "Commands: not recorded" in md

    # Every plot the report shows exists and is a valid PNG, and nothing else was written.
    pngs = images(md)
    assert set(pngs) == {p.name for p in out.glob("*.png")}
    assert {"w1-ratios.png", "w2-flood-ratios.png", "w2-fixed-ratios.png", "w3-mpps.png",
            "w5-ratios.png", "w6-mpps.png", "load.png"} <= set(pngs)
    for p in pngs:
        check_png(out / p)


def test_ovs_dpdk_peer_and_fixed_load_ratios(data):
    # An OVS-DPDK l3_4k cell (the keys w1-peers.sh writes for OVS) beside the testpmd one.
    peers = load(data, "w1-peers.json")
    ovs = {"1": 12.0, "1000": 5.0}
    for f, mpps in ovs.items():
        peers["results"][f]["ovs_l3_4k"] = {
            "status": "ok", "mpps": mpps, "cycles_per_packet": 200.0, "cpu_share": 0.99,
            "packets": 1000, "emc_hits": 0, "megaflow_hits": 1000, "simple_match_hits": 0,
            "avg_subtable_lookups": 1.0, "upcalls_ok": 0, "upcalls_failed": 0, "tx_mpps": mpps}
    peers["columns"].append("ovs_l3_4k")
    save(data, "w1-peers.json", peers)
    # The fixed load carried by all four switches.
    fx = load(data, "w2-fixed.json")
    for r in fx["results"]:
        r["delivered_mpps"] = r["sent_mpps"] = fx["rate_pps"] / 1e6
    save(data, "w2-fixed.json", fx)
    r, out, md = build(data, "--only", "W1,W2")
    assert r.returncode == 0, r.stdout + r.stderr
    w1 = load(data, "w1.json")["ferrovs"]
    ratios = rows_by_key(table_with(md, "flows")[1])
    col = "OF l3_4k / OVS-DPDK l3_4k (goal >= 2x)"
    for f, mpps in ovs.items():
        v = w1[f]["openflow:l3_4k"]["mpps"] / mpps
        assert ratios[format(int(f), ",")][col] == "%.2fx" % v + (" ✓" if v >= 2 else "")
    fa = next(x for x in fx["results"] if x["switch"] == "ferrovs-afxdp")
    oa = next(x for x in fx["results"] if x["switch"] == "ovs-afxdp")
    row = rows_by_key(table_with(md, "ports")[0])["afxdp"]
    assert row["OVS / ferrovs sw CPU"] == "%.2fx" % (
        oa["switch_cpu_ns_per_pkt"] / fa["switch_cpu_ns_per_pkt"])
    assert row["load carried"] == "both carried the load"
    summary = rows_by_key(table_with(md, "benchmark")[0])
    assert list(summary) == ["W1", "W2"]
    for p in images(md):
        check_png(out / p)


def test_failures_exit_3_and_still_write(data):
    w3 = load(data, "w3.json")
    w3["results"]["ferrovs-l3_4k"] = None  # what w3_run.py stores for a FAILED configuration
    save(data, "w3.json", w3)
    runs = load(FIX, "runs-w3-w6.json")
    runs["runs"][1]["rc"] = 3
    save(data, "runs.json", runs)
    r, out, md = build(data)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "FAILED: W3, W6" in r.stdout
    summary = rows_by_key(table_with(md, "benchmark")[0])
    assert list(summary) == runs["requested"]
    assert summary["W3"]["status"] == "FAILED" and summary["W6"]["status"] == "FAILED"
    assert summary["W4"]["status"] == "not measured (no script yet)"
    rows = [rows_by_key(t) for t in table_with(md, "configuration")]
    assert rows[0]["ferrovs-l3_4k"]["delivered Mpps"] == "FAILED"
    # The commands of the run, with their exit status.
    for run in runs["runs"]:
        assert "    %s    # exit %d" % (run["cmd"], run["rc"]) in md
    assert (out / "w3-mpps.png").exists() and (out / "load.png").exists()
    check_png(out / "load.png")


def test_requested_but_missing(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    r, out, md = build(d, "--only", "W2,W4")
    assert r.returncode == 3
    assert "No `w2.json` in the directory: not measured." in md
    assert rows_by_key(table_with(md, "benchmark")[0])["W4"]["status"] == \
        "not measured (no script yet)"
    r, out, md = build(d, "--only", "W7")
    assert r.returncode == 0 and "Not measured (no script yet)." in md
    r = subprocess.run([PY, str(REPORT), "--from", str(d), "--only", "W9"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown benchmark" in r.stderr


def test_report_sh_from(data):
    out = data / "sh-out"
    r = subprocess.run(["bash", str(ROOT / "bench" / "report.sh"), "--from", str(data),
                        "--out", str(out), "--only", "W5"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    md = (out / "report.md").read_text()
    assert set(images(md)) == {"w5-ratios.png", "load.png"}
    for p in images(md):
        check_png(out / p)
