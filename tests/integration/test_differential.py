"""ferrovs against Debian's OVS 3.1 on the same random OpenFlow 1.3 rule sets and packets
(tests/integration/helpers/ovsdiff.py): every frame every port sends must be byte-identical.
Fixed seeds here, on both injection paths (packet-out, and the wire: each switch's port
receives the packet, through the datapath's caches); `ovsdiff.py --seeds N [--inject wire]`
for long runs."""

import sys
from pathlib import Path

from conftest import BIN, need_root, require

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
import ovsdiff  # noqa: E402


def reset_stats():
    for k in ovsdiff.STATS:
        ovsdiff.STATS[k] = [] if isinstance(ovsdiff.STATS[k], list) else 0


def test_forwarding_matches_ovs_byte_for_byte():
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    reset_stats()
    seeds, n = range(1, 41), 30
    checked, reports = ovsdiff.session(BIN, seeds, n)
    st = ovsdiff.STATS
    print(f"{checked} rule sets x {n} packets: {len(reports)} mismatches; "
          f"{ {k: v for k, v in st.items() if not isinstance(v, list)} }")
    assert not reports, "\n\n".join(reports[:3])
    # Not a vacuous pass: every rule set was taken by both switches, and a good share of
    # the packets left on some port.
    assert st["rule_sets"] == len(seeds) and st["refused"] == 0, st["refusals"][:3]
    assert st["packets"] == len(seeds) * n
    assert st["forwarded"] >= st["packets"] // 4, st


def test_wire_path_matches_ovs_byte_for_byte():
    """The same comparison with every packet received on a port (`netdev-dummy/receive` on
    both switches): megaflows and upcalls instead of packet-out's direct translation."""
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    reset_stats()
    seeds, n = range(101, 113), 20
    checked, reports = ovsdiff.session(BIN, seeds, n, inject="wire")
    st = ovsdiff.STATS
    print(f"wire: {checked} rule sets x {n} packets: {len(reports)} mismatches; "
          f"{ {k: v for k, v in st.items() if not isinstance(v, list)} }")
    assert not reports, "\n\n".join(reports[:3])
    assert st["rule_sets"] == len(seeds) and st["refused"] == 0, st["refusals"][:3]
    assert st["packets"] == len(seeds) * n
    assert st["forwarded"] >= st["packets"] // 5, st


def test_select_group_reparse_seeds_match_ovs():
    """Rule sets that once differed from OVS, on both paths: a select group makes OVS hash,
    recirculate and parse the packet again, so under vlan-limit=1 tags pushed beyond the
    limit hide the IP header and a later push adds a third tag (2002, 1091)."""
    need_root()
    require("ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
    for inject in ("packet-out", "wire"):
        reset_stats()
        checked, reports = ovsdiff.session(BIN, [2002, 1091], 50, inject=inject)
        st = ovsdiff.STATS
        assert not reports, "\n\n".join(reports[:3])
        assert st["rule_sets"] == 2 and st["packets"] == 100, st
        assert st["forwarded"] >= 50, st
