"""How many groups a bridge takes: `other_config:max-groups` (262,144 by default), reported
as `max_groups` in the group features; a group_mod that would add one more is refused with
`OFPGMFC_OUT_OF_GROUPS` in every version (OpenFlow 1.0's NXT_GROUP_MOD included), a bundle
that would pass the limit fails whole, and the switch goes on answering. OVS 3.1 has no such
limit below OFPG_MAX (docs/ovs-equivalence.md), so ferrovs runs alone here; the errors'
text is OVS's own ovs-ofctl decoding them."""

import re
import sys
import time
from pathlib import Path

import pytest

from conftest import BIN, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402

VERSIONS = "OpenFlow10,OpenFlow13,OpenFlow14,OpenFlow15"


@pytest.fixture(scope="module")
def fv(tmp_path_factory):
    need_root()
    require("ovs-vsctl", "ovs-ofctl")
    sw = ovsdiff.Ferrovs(tmp_path_factory.mktemp("oflimits"), BIN)
    try:
        vsctl(sw, "set", "bridge", "br0", f"protocols={VERSIONS}")
        yield sw
    finally:
        sw.stop()


def vsctl(sw, *args):
    ovsdiff.run(["ovs-vsctl", f"--db=unix:{sw.d}/db.sock", *args])


def ofctl(sw, proto, verb, *args, stdin=None, bundle=False):
    cmd = ["ovs-ofctl", "--timeout=10"] + (["-O", proto] if proto else [])
    cmd += ["--bundle"] if bundle else []
    r = ovsdiff.run(cmd + [verb, f"unix:{sw.mgmt}", *args], check=False, input=stdin)
    return r.returncode, (r.stdout + r.stderr).strip()


def max_groups(sw, proto="OpenFlow13"):
    code, text = ofctl(sw, proto, "dump-group-features")
    assert code == 0, text
    found = set(re.findall(r"max_groups=(0x[0-9a-f]+)", text))
    assert len(found) == 1, text
    return int(found.pop(), 16)


def set_limit(sw, n):
    if n is None:
        vsctl(sw, "remove", "bridge", "br0", "other_config", "max-groups")
        want = 262144
    else:
        vsctl(sw, "set", "bridge", "br0", f"other_config:max-groups={n}")
        want = n
    t0 = time.time()
    while max_groups(sw) != want:
        assert time.time() - t0 < 10, f"max_groups never became {want}"
        time.sleep(0.1)


def group_ids(sw):
    code, text = ofctl(sw, "OpenFlow13", "dump-groups")
    assert code == 0, text
    return sorted(int(g) for g in re.findall(r"group_id=(\d+)", text))


def test_the_default_limit_is_reported_in_every_version(fv):
    for proto in [None, "OpenFlow13", "OpenFlow15"]:
        assert max_groups(fv, proto) == 262144, proto


def test_adds_beyond_the_limit_are_refused_in_every_version(fv):
    ofctl(fv, "OpenFlow13", "del-groups")
    set_limit(fv, 4)
    try:
        for proto, gid in [(None, 1), ("OpenFlow13", 2), ("OpenFlow14", 3), ("OpenFlow15", 4)]:
            code, text = ofctl(fv, proto, "add-group", f"group_id={gid},type=all,bucket=output:1")
            assert code == 0, (proto, text)
        for proto in [None, "OpenFlow13", "OpenFlow14", "OpenFlow15"]:
            code, text = ofctl(fv, proto, "add-group", "group_id=9,type=select,bucket=output:1")
            assert code != 0 and "OFPGMFC_OUT_OF_GROUPS" in text, (proto, text)
        # OpenFlow 1.0's error is Nicira's vendor error, decoded to the same name.
        assert group_ids(fv) == [1, 2, 3, 4]
        # A modify (even to another type) adds nothing; an existing id is still EXISTS.
        code, text = ofctl(fv, "OpenFlow13", "mod-group", "group_id=1,type=select,bucket=output:2")
        assert code == 0, text
        code, text = ofctl(fv, "OpenFlow13", "add-group", "group_id=2,type=all,bucket=output:1")
        assert code != 0 and "OFPGMFC_GROUP_EXISTS" in text, text
        # A delete makes room.
        assert ofctl(fv, "OpenFlow13", "del-groups", "group_id=4")[0] == 0
        code, text = ofctl(fv, None, "add-group", "group_id=9,type=all,bucket=output:1")
        assert code == 0, text
        assert group_ids(fv) == [1, 2, 3, 9]
        code, text = ofctl(fv, "OpenFlow13", "dump-desc")
        assert code == 0 and "DESC reply" in text, text
    finally:
        set_limit(fv, None)


def test_a_bundle_that_would_pass_the_limit_fails_whole(fv):
    ofctl(fv, "OpenFlow13", "del-groups")
    set_limit(fv, 3)
    try:
        ofctl(fv, "OpenFlow13", "add-group", "group_id=1,type=all,bucket=output:1")
        ofctl(fv, "OpenFlow13", "add-group", "group_id=2,type=all,bucket=output:1")
        groups = "".join(f"group_id={g},type=all,bucket=output:1\n" for g in (10, 11, 12))
        code, text = ofctl(fv, "OpenFlow14", "add-groups", "-", stdin=groups, bundle=True)
        assert code != 0 and "OFPGMFC_OUT_OF_GROUPS" in text, text
        assert group_ids(fv) == [1, 2], "nothing of the bundle stays"
        # One that stays within the limit goes in whole.
        code, text = ofctl(fv, "OpenFlow14", "add-groups", "-", bundle=True,
                           stdin="group_id=10,type=all,bucket=output:1\n")
        assert code == 0, text
        assert group_ids(fv) == [1, 2, 10]
    finally:
        set_limit(fv, None)


def test_a_bad_setting_is_refused_and_the_limit_kept(fv):
    set_limit(fv, 7)
    try:
        vsctl(fv, "set", "bridge", "br0", "other_config:max-groups=0")
        vsctl(fv, "set", "bridge", "br0", "other_config:max-groups=lots")
        time.sleep(0.5)
        assert max_groups(fv) == 7
    finally:
        set_limit(fv, None)
