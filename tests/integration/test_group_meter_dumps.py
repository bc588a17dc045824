"""Dumps of more groups and meters than one 64 KiB message holds: `dump-groups`,
`dump-group-stats`, `dump-meters` and `meter-stats` of 2,000 groups (select, 4 buckets) and
500 meters of 8 bands arrive whole, split over several multipart replies, with the same
records on ferrovs as on OVS 3.1 (statistics' durations aside). OVS 3.1's ovs-ofctl has no
`add-meters`: the meters go one `add-meter` each."""

import re
import sys
from pathlib import Path

import pytest

from conftest import ovs_beside_ferrovs

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

N = 2000
METERS = 500


@pytest.fixture(scope="module")
def sws(tmp_path_factory):
    yield from ovs_beside_ferrovs(tmp_path_factory.mktemp("gmdumps"), "OpenFlow13")


def ofctl(sw, verb, *args):
    r = ovsdiff.run(["ovs-ofctl", "--timeout=20", "-O", "OpenFlow13", verb,
                     f"unix:{sw.mgmt}", *args], check=False, env=getattr(sw, "env", None))
    assert r.returncode == 0, f"{sw.name} {verb}: {r.stdout}{r.stderr}"
    return r.stdout


def records(text, key):
    """The lines naming `key` (one a group or meter), durations dropped, sorted."""
    lines = [re.sub(r"duration[=:][0-9.]+s,?", "", ln.strip()) for ln in text.splitlines()]
    return sorted(ln for ln in lines if key in ln)


def test_dumps_of_thousands_of_groups_and_meters_arrive_whole(sws, tmp_path):
    groups = tmp_path / "groups.txt"
    groups.write_text("".join(
        f"group_id={i},type=select,"
        + ",".join(f"bucket=weight:100,actions=output:{p}" for p in (1, 2, 3, 4)) + "\n"
        for i in range(1, N + 1)))
    bands = "bands=" + ",".join(f"type=drop,rate={1000 * b}" for b in range(1, 9))
    out = {}
    for sw in sws:
        ofctl(sw, "add-groups", str(groups))
        for i in range(1, METERS + 1):
            ofctl(sw, "add-meter", f"meter={i},kbps,{bands}")
        out[sw.name] = {
            "groups": records(ofctl(sw, "dump-groups"), "group_id="),
            "group-stats": records(ofctl(sw, "dump-group-stats"), "group_id="),
            "meters": records(ofctl(sw, "dump-meters"), "meter="),
            "meter-stats": records(ofctl(sw, "meter-stats"), "meter:"),
        }
    ovs, fv = out["OVS"], out["ferrovs"]
    for k in ovs:
        assert len(fv[k]) == (N if k.startswith("group") else METERS), (k, len(fv[k]))
        assert fv[k] == ovs[k], k
    # The groups' text is the file's, whatever the switch.
    assert "group_id=2000,type=select," in " ".join(fv["groups"])


# Groups referred to by flows in several tables, in apply and write actions, twice in one
# flow, inside nested clones, and by other groups' buckets (chaining).
REF_GROUPS = [f"group_id={g},type=all,bucket=output:1" for g in (1, 2, 4, 5, 7, 8, 9)] + [
    "group_id=3,type=all,bucket=group:2",
    "group_id=6,type=indirect,bucket=group:3",
]
REF_FLOWS = """\
table=0,priority=10,in_port=1,actions=group:1
table=0,priority=10,in_port=2,actions=group:1,group:1
table=1,priority=10,in_port=3,actions=write_actions(group:1)
table=0,priority=10,in_port=4,actions=clone(group:2)
table=5,priority=10,in_port=5,actions=group:4,group:5
table=0,priority=10,in_port=6,actions=group:6
table=0,priority=20,in_port=7,actions=group:7,group:7
table=2,priority=10,in_port=8,actions=write_actions(group:8)
table=0,priority=20,in_port=9,actions=clone(clone(group:9),group:9),group:9
"""


def test_group_ref_counts_are_ovs_s(sws, tmp_path):
    """ref_count counts each group action of each flow, nested ones included, and not
    groups chaining to the group; deleting a group takes the flows that send to it, a
    clone's included; `out_group` selects the same flows."""
    flows = tmp_path / "ref_flows.txt"
    flows.write_text(REF_FLOWS)
    out = {}
    for sw in sws:
        ofctl(sw, "del-flows")
        ofctl(sw, "del-groups")
        for g in REF_GROUPS:
            ofctl(sw, "add-group", g)
        ofctl(sw, "add-flows", str(flows))
        stats = records(ofctl(sw, "dump-group-stats"), "group_id=")
        refs = {int(m.group(1)): int(m.group(2)) for m in
                (re.search(r"group_id=(\d+),ref_count=(\d+)", s) for s in stats) if m}
        sel = {g: len(records(ofctl(sw, "dump-flows", f"out_group={g}"), "actions="))
               for g in (1, 2, 9)}
        one = records(ofctl(sw, "dump-group-stats", "group_id=9"), "group_id=")
        ofctl(sw, "del-groups", "group_id=2")
        left = [re.sub(r"(duration|n_packets|n_bytes)=[0-9.]+s?, ", "", f)
                for f in records(ofctl(sw, "dump-flows"), "actions=")]
        out[sw.name] = (stats, refs, sel, one, left)
    ovs, fv = out["OVS"], out["ferrovs"]
    assert fv[1] == {1: 4, 2: 1, 3: 0, 4: 1, 5: 1, 6: 1, 7: 2, 8: 1, 9: 3}, fv[1]
    assert fv[2] == {1: 3, 2: 1, 9: 1}, fv[2]
    assert len(fv[3]) == 1 and "ref_count=3" in fv[3][0], fv[3]
    assert not any("clone(group:2)" in f for f in fv[4]), fv[4]
    assert len(fv[4]) == 8, fv[4]
    assert fv == ovs
