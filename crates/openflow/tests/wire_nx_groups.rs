//! Groups over OpenFlow 1.0: Nicira's `NXT_GROUP_MOD` and `NXST_GROUP*` vendor statistics,
//! as captured between Debian's `ovs-ofctl` 3.1 (plain, OpenFlow 1.0) and `ovs-vswitchd`
//! 3.1: each message decodes to what it says and encodes back to the same bytes, and the
//! switch's error for an existing group is the Nicira vendor error OVS sent.

use openflow::actions::{OFPG_ALL, OFPG_ANY, OFPP_ANY};
use openflow::messages::err::group_mod_failed;
use openflow::wire::multipart::GroupDesc;
use openflow::wire::{decode_frame, encode, error_reply, Message, MpReply, MpRequest, OFP10};
use openflow::{Action, GroupModCommand, GroupType, OfError};

mod common;
use common::hex;

/// `add-group group_id=2,type=select,bucket=output:1,bucket=weight:5,watch_port:2,
/// actions=mod_vlan_vid:5,output:2`.
const GROUP_MOD: &str = concat!(
    "0104006000000006000023200000001f000001000000000200400000ffffffff",
    "0018000800000000000000080001000000000008000100000028001000000001",
    "0001000800050000000000080002000000000008000500000001000800000002"
);
/// `dump-groups`: the request (all groups) and the reply for the group above.
const DESC_REQUEST: &str = "0110002000000002ffff0000000023200000000800000000fffffffc00000000";
const DESC_REPLY: &str = concat!(
    "0111006800000002ffff00000000232000000008000000000050010000000002",
    "0040000000000000001800080000000000000008000100000000000800010000",
    "0028001000000001000100080005000000000008000200000000000800050000",
    "0001000800000002"
);
/// `dump-group-features`.
const FEATURES_REQUEST: &str = "0110001800000002ffff0000000023200000000900000000";
const FEATURES_REPLY: &str = concat!(
    "0111004000000002ffff00000000232000000009000000000000000f00000007",
    "ffffff00ffffff00ffffff00ffffff0000000fff00000fff00000fff00000fff"
);
/// `dump-group-stats` (all groups) and a reply for one group of two buckets.
const STATS_REQUEST: &str = "0110002000000006ffff0000000023200000000700000000fffffffc00000000";
const STATS_REPLY: &str = concat!(
    "0111006000000006ffff00000000232000000007000000000048000000000002",
    "000000000000000000000000000000000000000000000000000000000b34a700",
    "0000000000000000000000000000000000000000000000000000000000000000"
);
/// The second `add-group group_id=2,type=select,bucket=output:1` and OVS's answer.
const ADD_AGAIN: &str = concat!(
    "0104003800000006000023200000001f000001000000000200180000ffffffff",
    "001800080000000000000008000100000000000800010000"
);
const GROUP_EXISTS: &str = concat!(
    "0101004c00000006b0c200000000232000060000010400380000000600002320",
    "0000001f000001000000000200180000ffffffff001800080000000000000008",
    "000100000000000800010000"
);

/// Decodes `bytes` (OpenFlow 1.0), checks the whole frame was used, and re-encodes it.
fn round_trip(bytes: &[u8]) -> Message {
    let (h, m, n) = decode_frame(bytes).unwrap_or_else(|e| panic!("decode: {e:?}"));
    assert_eq!(n, bytes.len());
    assert_eq!(h.version, OFP10);
    let again = encode(&m, OFP10, h.xid).expect("encodes");
    assert_eq!(again, bytes, "re-encoded bytes differ");
    m
}

#[test]
fn nxt_group_mod_is_a_group_mod() {
    let Message::GroupMod(g) = round_trip(&hex(GROUP_MOD)) else {
        panic!("not a group_mod");
    };
    assert_eq!(g.command, GroupModCommand::Add);
    assert_eq!(g.group_type, GroupType::Select);
    assert_eq!(g.group_id, 2);
    assert_eq!(g.buckets.len(), 2);
    assert_eq!(
        g.buckets[0].actions,
        vec![Action::Output {
            port: 1,
            max_len: 0
        }]
    );
    assert_eq!(
        (g.buckets[0].weight, g.buckets[0].watch_port),
        (1, OFPP_ANY)
    );
    let b = &g.buckets[1];
    assert_eq!(
        (b.bucket_id, b.weight, b.watch_port, b.watch_group),
        (1, 5, 2, OFPG_ANY)
    );
    assert_eq!(b.actions.len(), 2);
}

#[test]
fn nxst_group_desc_request_and_reply() {
    let Message::MultipartRequest(r) = round_trip(&hex(DESC_REQUEST)) else {
        panic!("not a request");
    };
    assert_eq!(r.body, MpRequest::GroupDesc(OFPG_ALL));
    let Message::MultipartReply(r) = round_trip(&hex(DESC_REPLY)) else {
        panic!("not a reply");
    };
    let MpReply::GroupDesc(d) = r.body else {
        panic!("not a group desc reply");
    };
    let [GroupDesc {
        group_type: GroupType::Select,
        group_id: 2,
        buckets,
    }] = &d[..]
    else {
        panic!("{d:?}");
    };
    assert_eq!(buckets[1].weight, 5);
}

#[test]
fn nxst_group_features_and_stats() {
    let Message::MultipartRequest(r) = round_trip(&hex(FEATURES_REQUEST)) else {
        panic!("not a request");
    };
    assert_eq!(r.body, MpRequest::GroupFeatures);
    let Message::MultipartReply(r) = round_trip(&hex(FEATURES_REPLY)) else {
        panic!("not a reply");
    };
    let MpReply::GroupFeatures(f) = r.body else {
        panic!("not features");
    };
    assert_eq!((f.types, f.capabilities, f.actions), (0xf, 7, [0xfff; 4]));
    let Message::MultipartRequest(r) = round_trip(&hex(STATS_REQUEST)) else {
        panic!("not a request");
    };
    assert_eq!(r.body, MpRequest::Group(OFPG_ALL));
    let Message::MultipartReply(r) = round_trip(&hex(STATS_REPLY)) else {
        panic!("not a reply");
    };
    let MpReply::Group(s) = r.body else {
        panic!("not group stats");
    };
    assert_eq!((s.len(), s[0].group_id, s[0].buckets.len()), (1, 2, 2));
}

#[test]
fn group_errors_in_openflow10_are_nicira_vendor_errors() {
    let req = hex(ADD_AGAIN);
    let e = OfError::group_mod_failed(group_mod_failed::GROUP_EXISTS);
    let got = encode(&error_reply(e, OFP10, &req), OFP10, 6).expect("encodes");
    assert_eq!(got, hex(GROUP_EXISTS));
}

#[test]
fn group_mods_with_trailing_or_missing_bytes_are_refused() {
    let b = hex(GROUP_MOD);
    // One bucket length pointing past the bucket list.
    let mut bad = b.clone();
    bad[33] = 0x48;
    assert!(decode_frame(&bad).is_err());
    // The message cut short (header length fixed to match).
    let mut short = b[..b.len() - 8].to_vec();
    let n = short.len() as u16;
    short[2..4].copy_from_slice(&n.to_be_bytes());
    assert!(decode_frame(&short).is_err());
}
