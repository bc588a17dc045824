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
