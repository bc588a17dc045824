"""Groups over OpenFlow 1.0 (plain `ovs-ofctl`, no `-O`), against Debian's OVS 3.1.

OpenFlow 1.0 has no groups; OVS carries them as Nicira extensions (`NXT_GROUP_MOD`, and the
`NXST_GROUP`, `NXST_GROUP_DESC` and `NXST_GROUP_FEATURES` vendor statistics), which is what
`ovs-ofctl add-group BR ...` sends unless told another version. The same commands go to
both switches and must print the same (durations left out); errors must read the same."""

import re
import sys
from pathlib import Path

import pytest

from conftest import ovs_beside_ferrovs

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    yield from ovs_beside_ferrovs(tmp_path_factory.mktemp("groups10"),
                                  "OpenFlow10,OpenFlow13,OpenFlow15")


def ofctl(sw, *args):
    """Plain ovs-ofctl (OpenFlow 1.0): return code and what it printed, durations and
    transaction ids normalised."""
    r = ovsdiff.run(["ovs-ofctl", "--timeout=10", args[0], f"unix:{sw.mgmt}", *args[1:]],
                    check=False)
    text = r.stdout + r.stderr
    text = re.sub(r"duration=[0-9.]+s", "duration=N", text)
    text = re.sub(r"xid=0x[0-9a-f]+", "xid=N", text)
    return r.returncode, text.strip()


def same(sws, *args):
    ovs, fv = (ofctl(sw, *args) for sw in sws)
    assert fv == ovs, f"ovs-ofctl {' '.join(args)}\nOVS:\n{ovs[1]}\nferrovs:\n{fv[1]}"
    return ovs


def sorted_lines(text):
    return sorted(l.strip() for l in text.splitlines())


def test_group_mods_and_dumps_read_as_ovs(switches):
    sws = switches
    for sw in sws:
        ofctl(sw, "del-groups")
    same(sws, "add-group", "group_id=1,type=select,bucket=output:1")
    same(sws, "add-group", "group_id=2,type=select,bucket=output:1,"
         "bucket=weight:5,watch_port:2,actions=mod_vlan_vid:5,output:2")
    same(sws, "add-group", "group_id=3,type=ff,bucket=watch_port:1,output:1,"
         "bucket=watch_port:2,output:2")
    same(sws, "add-group", "group_id=4,type=all,bucket=mod_dl_src:02:00:00:00:00:09,output:3,"
         "bucket=set_field:7->reg3,output:4")
    # Dumps list the groups in the switch's order; compare them as sets of lines.
    rc = []
    for sw in sws:
        code, text = ofctl(sw, "dump-groups")
        assert code == 0, text
        assert text.startswith("NXST_GROUP_DESC reply"), text
        rc.append(sorted_lines(text))
    assert rc[0] == rc[1]
    assert any("group_id=2,type=select,bucket=bucket_id:0,actions=output:1,"
               "bucket=bucket_id:1,weight:5,watch_port:2,actions=mod_vlan_vid:5,output:2" in l
               for l in rc[1]), rc[1]
    same(sws, "dump-groups", "2")
    stats = [sorted_lines(ofctl(sw, "dump-group-stats")[1]) for sw in sws]
    assert stats[0] == stats[1]
    assert stats[1][0] == "NXST_GROUP reply (xid=N):", stats[1]
    # Bucket commands (1.5's, carried by NXT_GROUP_MOD).
    same(sws, "insert-buckets", "group_id=2,command_bucket_id=first,"
         "bucket=bucket_id:7,actions=output:3")
    same(sws, "remove-buckets", "group_id=2,command_bucket_id=1")
    same(sws, "dump-groups", "2")
    same(sws, "mod-group", "group_id=1,type=all,bucket=output:2,bucket=output:3")
    same(sws, "dump-groups", "1")
    # A flow can use a group over 1.0, and deleting the group deletes the flow (OVS's rule).
    same(sws, "add-flow", "priority=5,in_port=1,actions=group:1")
    same(sws, "del-groups", "group_id=1")
    same(sws, "dump-groups", "1")
    assert "group:1" not in ofctl(sws[1], "dump-flows")[1]


def test_group_errors_read_as_ovs(switches):
    sws = switches
    for sw in sws:
        ofctl(sw, "del-groups")
    same(sws, "add-group", "group_id=9,type=all,bucket=output:1")
    code, text = same(sws, "add-group", "group_id=9,type=all,bucket=output:1")
    assert code != 0 and "OFPGMFC_GROUP_EXISTS" in text, text
    code, text = same(sws, "mod-group", "group_id=10,type=all,bucket=output:1")
    assert code != 0 and "OFPGMFC_UNKNOWN_GROUP" in text, text
    code, text = same(sws, "add-flow", "actions=group:99")
    assert code != 0 and "OFPBAC_BAD_OUT_GROUP" in text, text
    # Differs (docs/ovs-equivalence.md): OVS 3.1 accepts a bucket chaining to a group that
    # does not exist (or to itself); ferrovs refuses both, as OpenFlow 1.3 says.
    ovs, fv = (ofctl(sw, "add-group", "group_id=11,type=all,bucket=group:12") for sw in sws)
    assert ovs[0] == 0, ovs
    assert fv[0] != 0 and "OFPGMFC_UNKNOWN_GROUP" in fv[1], fv
    fv = ofctl(sws[1], "add-group", "group_id=13,type=all,bucket=group:13")
    assert fv[0] != 0 and "OFPGMFC_LOOP" in fv[1], fv


def test_group_features_over_openflow10(switches):
    """The features reply is Nicira's and names OpenFlow 1.0 actions (the action bitmap
    is 1.0's numbering)."""
    code, text = ofctl(switches[1], "dump-group-features")
    assert code == 0, text
    assert text.startswith("NXST_GROUP_FEATURES reply"), text
    assert "select group:" in text and "fast failover group:" in text, text
    for name in ["output", "enqueue", "set_vlan_vid", "strip_vlan", "mod_nw_src", "mod_tp_dst"]:
        assert re.search(rf"actions:.* {name}( |$)", text, re.M), (name, text)
