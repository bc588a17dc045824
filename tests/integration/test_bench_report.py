"""bench/report.py: the benchmark report built from the JSON files the bench scripts write.

The fixtures (fixtures/bench_report/) are the files a real `bench/report.sh --quick` run wrote
on this machine kind (w1.json, w1-peers.json with testpmd and OVS-DPDK, w2.json,
w2-fixed.json, w5.json, runs.json, facts.json, load.tsv) and the JSON of a
real `bench/w1.sh --smoke --json` (w1-smoke.json); w3.json, w6.json and w6-1518.json come from
later `bench/w3.sh` / `w6.sh [--size 1518] --nice -20 --json` runs with OVS-DPDK in them, and
w7.json from a real `bench/w7.sh --smoke --json`.
Cases that need a shape the run did not produce (a load both switches carried, a failed cell)
are made by changing values in those files, keeping their keys. The expected numbers are
computed here from the fixture values, not copied from the report.
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
    (d / "w1-smoke.json").unlink()
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
    assert summary["W4"]["status"] == "not measured (no script yet)"
    assert summary["W4"]["headline ratio (goal)"] == "-"
    for b in ("W1", "W2", "W3", "W5", "W6", "W7", "W8"):
        assert summary[b]["status"] == "measured", summary[b]

    # W7: ferrovs and OVS-DPDK per direction and flow count, and their ratios.
    w7 = load(data, "w7.json")
    t = [x for x in tables(md) if "ferrovs encap" in x[0]]
    assert len(t) == 1, md
    t = rows_by_key(t[0])
    assert list(t) == [format(int(f), ",") for f in sorted(w7["results"], key=int)]
    for f, cells in w7["results"].items():
        row = t[format(int(f), ",")]
        for d in ("encap", "decap"):
            a, o = cells["ferrovs_" + d], cells["ovs_" + d]
            assert row["ferrovs " + d] == "%.2f (%.0f)" % (a["mpps"], a["cycles_per_packet"])
            assert row["OVS-DPDK " + d] == "%.2f (%.0f)" % (o["mpps"], o["cycles_per_packet"])
        assert [v for k, v in row.items() if k == "ferrovs / OVS-DPDK"] == \
            ["%.2fx" % (cells["ferrovs_decap"]["mpps"] / cells["ovs_decap"]["mpps"])]
    assert "w7-ratios.png" in images(md)
    assert summary["W7"]["headline ratio (goal)"].startswith(
        "encap 1 %.2fx" % (w7["results"]["1"]["ferrovs_encap"]["mpps"]
                           / w7["results"]["1"]["ovs_encap"]["mpps"]))

    # W8: ferrovs and OVS-DPDK per connection count, and their ratio.
    w8 = load(data, "w8.json")
    t = rows_by_key(table_with(md, "connections")[0])
    assert list(t) == [format(int(c), ",") for c in sorted(w8["ferrovs"], key=int)]
    for c, f in w8["ferrovs"].items():
        row, o = t[format(int(c), ",")], w8["peers"][c]["ovs_ct_est"]
        assert row["ferrovs"] == "%.2f (%.0f)" % (f["mpps"], f["cycles_per_packet"])
        assert row["OVS-DPDK"] == "%.2f (%.0f)" % (o["mpps"], o["cycles_per_packet"])
        assert row["ferrovs / OVS-DPDK"] == "%.2fx" % (f["mpps"] / o["mpps"])

    # W1: ferrovs's cells and the peers' (with their CPU-share marks), the ratios per flow
    # count, the no-cliff check.
    w1, peers = load(data, "w1.json")["ferrovs"], load(data, "w1-peers.json")["results"]
    t = rows_by_key(table_with(md, "flows")[0])
    assert list(t) == [format(int(f), ",") for f in sorted(w1, key=int)]
    for f, cells in w1.items():
        row = t[format(int(f), ",")]
        c = cells["openflow:l3_4k"]
        assert row["ferrovs OF l3_4k"] == "%.2f (%.0f)" % (c["mpps"], c["cycles_per_packet"])
        o = peers[f]["ovs_l3_4k"]
        mark = " *%.0f%%" % (100 * o["cpu_share"]) if o["cpu_share"] < 0.95 else ""
        assert row["OVS-DPDK l3_4k"] == "%.2f (%.0f)%s" % (o["mpps"], o["cycles_per_packet"], mark)
    ratios = rows_by_key(table_with(md, "flows")[1])
    l3 = []
    for f, cells in w1.items():
        row = ratios[format(int(f), ",")]
        o = peers[f]["ovs_l3_4k"]
        v = cells["openflow:l3_4k"]["mpps"] / o["mpps"]
        l3.append(v)
        # A goal is met (✓) only against a peer that had its core; otherwise the share shows.
        mark = " (peer *%.0f%%)" % (100 * o["cpu_share"]) if o["cpu_share"] < 0.95 else ""
        assert row["OF l3_4k / OVS-DPDK l3_4k (goal >= 2x)"] == "%.2fx" % v + (
            " ✓" if v >= 2 and not mark else "") + mark
        tp = peers[f]["testpmd_io"]
        assert row["patch / testpmd io floor"] == "%.2fx" % (cells["patch"]["mpps"] / tp["mpps"]) \
            + (" (peer *%.0f%%)" % (100 * tp["cpu_share"]) if tp["cpu_share"] < 0.95 else "")
    contended = any(peers[f]["ovs_l3_4k"]["cpu_share"] < 0.95 for f in w1)
    assert summary["W1"]["headline ratio (goal)"] == "OF l3_4k / OVS-DPDK l3_4k: %s (goal >= 2x)%s" \
        % (", ".join("%.2fx" % v for v in l3),
           "; the peer did not have its whole core" if contended else "")
    cliff = w1["100000"]["openflow:l3_4k"]["mpps"] / w1["1"]["openflow:l3_4k"]["mpps"]
    assert "OF l3_4k at 100K flows / at 1 flow = %.2f (goal >= 0.5)" % cliff in md

    # W2: both tables with the CPU per packet columns; the fixed load that was not carried.
    w2 = load(data, "w2.json")
    flood = table_with(md, "switch")[0]
    assert [r[0] for r in flood[1]] == [r["switch"] for r in w2["results"]]
    fa = next(r for r in w2["results"] if r["switch"] == "ferrovs-afxdp")
    oa = next(r for r in w2["results"] if r["switch"] == "ovs-afxdp")
    row = rows_by_key(flood)["ferrovs-afxdp"]
    assert row["delivered Mpps"] == "%.3f" % fa["delivered_mpps"]
    assert row["sw CPU ns/pkt"] == "%.0f" % fa["switch_cpu_ns_per_pkt"]
    assert row["core busy ns/pkt"] == "%.0f" % fa["switch_core_busy_ns_per_pkt"]
    gen = rows_by_key(table_with(md, "generator")[0])["trafgen"]
    assert gen["ferrovs afxdp / OVS afxdp delivered (goal >= 1.5x)"] == "%.2fx" % (
        fa["delivered_mpps"] / oa["delivered_mpps"])
    fx = load(data, "w2-fixed.json")
    fixed = rows_by_key(table_with(md, "ports")[0])
    fxa = next(r for r in fx["results"] if r["switch"] == "ferrovs-afxdp")
    assert fixed["afxdp"]["ferrovs sw CPU ns/pkt"] == "%.0f" % fxa["switch_cpu_ns_per_pkt"]
    assert fixed["afxdp"]["OVS / ferrovs sw CPU"] == "not comparable"
    assert "ferrovs-afxdp delivered %.0f%% of the offered load" % (
        100 * fxa["delivered_mpps"] * 1e6 / fx["rate_pps"]) in fixed["afxdp"]["load carried"]

    # W3 and W6 (64 B, 1518 B): delivered Mpps, the switch core's counters, and the ratios to
    # the floor and to OVS-DPDK with the same rules (delivered: measured; capacity: derived).
    confs = table_with(md, "configuration")
    assert len(confs) == 3
    for t, name in zip(confs, ("w3.json", "w6.json", "w6-1518.json")):
        d = load(data, name)
        res, core = d["results"], d["switch_core"]
        rows = rows_by_key(t)
        assert list(rows) == ["ferrovs-patch", "ferrovs-l3_4k", "ovs-patch", "ovs-l3_4k", "floor"]
        assert rows["ferrovs-patch"]["delivered Mpps"] == "%.2f" % res["ferrovs-patch"]
        assert rows["ferrovs-l3_4k"]["/ floor"] == "%.2fx" % (res["ferrovs-l3_4k"] / res["floor"])
        l3 = rows["ferrovs-l3_4k"]
        assert l3["/ OVS-DPDK (delivered)"] == "%.2fx" % (res["ferrovs-l3_4k"] / res["ovs-l3_4k"])
        assert l3["/ OVS-DPDK (capacity, derived)"] == "%.2fx" % (
            core["ferrovs-l3_4k"]["capacity_mpps"] / core["ovs-l3_4k"]["capacity_mpps"])
        ovs = rows["ovs-patch"]
        assert ovs["switch core busy"] == "%.0f%%" % (100 * core["ovs-patch"]["busy_share"])
        assert ovs["poll thread on CPU"] == "%.0f%%" % (
            100 * core["ovs-patch"]["pmd_oncpu_share"])
        assert ovs["capacity Mpps (derived)"] == "%.2f" % core["ovs-patch"]["capacity_mpps"]
        assert rows["floor"]["generator on CPU"] == "%.0f%%" % (
            100 * core["floor"]["gen_oncpu_share"])
        assert ovs["/ OVS-DPDK (delivered)"] == "-" and rows["floor"]["switch core busy"] == "-"
        assert "%d B frames" % d["size"] in md
    w3 = load(data, "w3.json")["results"]
    assert summary["W3"]["headline ratio (goal)"].endswith(
        "l3_4k %.2fx OVS-DPDK" % (w3["ferrovs-l3_4k"] / w3["ovs-l3_4k"]))
    assert "1518 B: patch" in summary["W6"]["headline ratio (goal)"]

    # W5: seconds, flows/s and OVS / ferrovs per step; the W1-during-add table.
    w5 = load(data, "w5.json")
    steps = rows_by_key(table_with(md, "step")[0])
    add = w5["steps"]["add"]
    assert steps["add"]["ferrovs"] == "%.3f (%s/s)" % (add["ferrovs"], "{:,.0f}".format(
        w5["flows"] / add["ferrovs"]))
    assert steps["add"]["OVS time / ferrovs time"] == "%.2fx" % (add["ovs"] / add["ferrovs"])
    assert steps["add"]["goal"] == ">= 2x" and steps["incr"]["goal"] == "-"
    during = rows_by_key(table_with(md, "add")[0])
    plain = next(w for w in w5["w1_during_add"] if w["mode"] == "plain")
    assert during["plain"]["during / before"] == "%.1f%%" % plain["during_pct"]
    bundle = next(w for w in w5["w1_during_add"] if w["mode"] == "bundle")
    assert bundle["during_mpps"] is None and during["bundle"]["during Mpps"] == "-"

    # Machine facts, load, and the command behind every number with its exit status.
    facts = rows_by_key(table_with(md, "fact")[0])
    assert facts["cores"]["value"] == str(load(data, "facts.json")["cores"])
    runs = load(data, "runs.json")["runs"]
    loads = rows_by_key(table_with(md, "run")[0])
    assert list(loads) == [r["name"] for r in runs]
    for run in runs:
        assert "    %s    # exit %d" % (run["cmd"], run["rc"]) in md
        assert loads[run["name"]]["load before (1/5/15)"] == " ".join(
            "%.2f" % x for x in run["load_before"])

    # Every plot the report shows exists and is a valid PNG, and nothing else was written.
    pngs = images(md)
    assert set(pngs) == {p.name for p in out.glob("*.png")}
    assert set(pngs) == {"w1-ratios.png", "w2-flood-ratios.png", "w2-fixed-ratios.png",
                         "w3-mpps.png", "w5-ratios.png", "w6-mpps.png", "w6-1518-mpps.png",
                         "w7-ratios.png", "w8-ratios.png", "load.png"}
    for p in pngs:
        check_png(out / p)


def test_fixed_load_carried_gives_ratios(data):
    fx = load(data, "w2-fixed.json")
    for r in fx["results"]:
        r["delivered_mpps"] = r["sent_mpps"] = fx["rate_pps"] / 1e6
    save(data, "w2-fixed.json", fx)
    r, out, md = build(data, "--only", "W2")
    assert r.returncode == 0, r.stdout + r.stderr
    cell = {x["switch"]: x for x in fx["results"]}
    rows = rows_by_key(table_with(md, "ports")[0])
    for label, f, o in (("afxdp", "ferrovs-afxdp", "ovs-afxdp"),
                        ("system / AF_PACKET", "ferrovs-system", "ovs-afpacket")):
        assert rows[label]["OVS / ferrovs sw CPU"] == "%.2fx" % (
            cell[o]["switch_cpu_ns_per_pkt"] / cell[f]["switch_cpu_ns_per_pkt"])
        assert rows[label]["OVS / ferrovs core busy"] == "%.2fx" % (
            cell[o]["switch_core_busy_ns_per_pkt"] / cell[f]["switch_core_busy_ns_per_pkt"])
        assert rows[label]["load carried"] == "both carried the load"
    summary = rows_by_key(table_with(md, "benchmark")[0])
    assert list(summary) == ["W2"]
    assert "fixed load: OVS/ferrovs CPU per packet %.2fx" % (
        cell["ovs-afxdp"]["switch_cpu_ns_per_pkt"]
        / cell["ferrovs-afxdp"]["switch_cpu_ns_per_pkt"]) in summary["W2"]["headline ratio (goal)"]
    for p in images(md):
        check_png(out / p)


def test_failures_exit_3_and_still_write(data):
    w3 = load(data, "w3.json")
    w3["results"]["ferrovs-l3_4k"] = None  # what w3_run.py stores for a FAILED configuration
    save(data, "w3.json", w3)
    runs = load(data, "runs.json")
    w6 = next(r for r in runs["runs"] if r["name"] == "w6")
    w6["rc"] = 3
    save(data, "runs.json", runs)
    (data / "w5.json").unlink()  # run, but left no JSON
    r, out, md = build(data)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "FAILED: W3, W5, W6" in r.stdout
    summary = rows_by_key(table_with(md, "benchmark")[0])
    for b in ("W3", "W5", "W6"):
        assert summary[b]["status"] == "FAILED", summary[b]
    assert summary["W1"]["status"] == "measured"
    assert rows_by_key(table_with(md, "configuration")[0])["ferrovs-l3_4k"]["delivered Mpps"] \
        == "FAILED"
    assert "No `w5.json` in the directory: not measured (the run left no JSON)." in md
    assert "**FAILED**: `w6` exited 3" in md
    for p in images(md):
        check_png(out / p)


def test_without_runs_json_and_smoke_w1(data):
    (data / "runs.json").unlink()
    shutil.copy(FIX / "w1-smoke.json", data / "w1.json")
    (data / "w1-peers.json").unlink()
    r, out, md = build(data)
    assert r.returncode == 0, r.stdout + r.stderr
    assert md.count("Commands: not recorded") == 7
    smoke = load(data, "w1.json")
    assert "(smoke run: %s s windows)" % smoke["seconds"] in md
    assert "Peers: not measured in this run (no `w1-peers.json`): no ratio." in md
    t = rows_by_key(table_with(md, "flows")[0])
    assert t["1"]["OVS-DPDK l3_4k"] == "not measured"
    assert "w1-mpps.png" in images(md) and "w1-ratios.png" not in images(md)
    assert rows_by_key(table_with(md, "benchmark")[0])["W1"]["headline ratio (goal)"] == \
        "no OVS-DPDK peer measured"
    for p in images(md):
        check_png(out / p)


def test_requested_but_missing(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    r, out, md = build(d, "--only", "W2,W4")
    assert r.returncode == 3
    assert "No `w2.json` in the directory: not measured." in md
    assert rows_by_key(table_with(md, "benchmark")[0])["W4"]["status"] == \
        "not measured (no script yet)"
    r, out, md = build(d, "--only", "W4")
    assert r.returncode == 0 and "Not measured (no script yet)." in md
    r, out, md = build(d, "--only", "W7")
    assert r.returncode == 3 and "No `w7.json` in the directory: not measured." in md
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


def test_w8_new_connections(data):
    """bench/w8.sh's JSON with (b) and (c): the established table as before, and a table of
    the new-connection cases with OVS-DPDK beside them."""
    old = load(data, "w8.json")
    fv = {"est": old["ferrovs"],
          "new": {"100000": {"mpps": 0.84, "cycles_per_packet": 2896.0}},
          "snat": {"100000": {"mpps": 0.76, "cycles_per_packet": 3210.0}}}
    peers = old["peers"]
    peers.setdefault("100000", {}).update({
        "ovs_ct_new": {"status": "ok", "mpps": 0.32, "cycles_per_packet": 7938.0},
        "ovs_ct_snat": {"status": "ok", "mpps": 0.17, "cycles_per_packet": 14990.0}})
    save(data, "w8.json", dict(old, ferrovs=fv, peers=peers))
    r, out, md = build(data)
    assert r.returncode == 0, r.stdout + r.stderr
    t = rows_by_key(table_with(md, "connections")[0])
    assert list(t) == [format(int(c), ",") for c in sorted(fv["est"], key=int)]
    t = table_with(md, "new connections")[0]
    assert [r[:5] for r in t[1]] == [
        ["(b) ct(commit)", "100,000", "0.84 (2896)", "0.32 (7938)", "%.2fx" % (0.84 / 0.32)],
        ["(c) ct(commit,nat(src=...))", "100,000", "0.76 (3210)", "0.17 (14990)",
         "%.2fx" % (0.76 / 0.17)]]
    summary = rows_by_key(table_with(md, "benchmark")[0])
    assert "(c) 100,000 conns %.2fx" % (0.76 / 0.17) in summary["W8"]["headline ratio (goal)"]
