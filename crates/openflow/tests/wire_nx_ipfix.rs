//! Nicira's IPFIX statistics, `NXST_IPFIX_BRIDGE` and `NXST_IPFIX_FLOW`, as captured between
//! a client and Debian's `ovs-vswitchd` 3.1: OpenFlow 1.0 vendor stats and 1.3/1.5
//! experimenter multiparts decode to what they say and encode back to the same bytes, and
//! the `NXST_NOT_CONFIGURED` error of a bridge without IPFIX is OVS's in both forms.

use openflow::messages::err::nx_tlv;
use openflow::wire::multipart::IpfixStats;
use openflow::wire::{decode_frame, encode, error_reply, Message, MpReply, MpRequest};
use openflow::wire::{OFP10, OFP13, OFP15};
use openflow::OfError;

mod common;
use common::hex;

const BRIDGE_REQ_10: &str = "0110001800000002ffff0000000023200000000300000000";
const FLOW_REQ_10: &str = "0110001800000002ffff0000000023200000000400000000";
const BRIDGE_REQ_13: &str = "0412001800000002ffff0000000000000000232000000003";
const FLOW_REQ_13: &str = "0412001800000002ffff0000000000000000232000000004";
const BRIDGE_REQ_15: &str = "0612001800000002ffff0000000000000000232000000003";
/// A bridge with IPFIX and nothing sampled yet.
const BRIDGE_REPLY_10: &str = concat!(
    "0111007000000002ffff00000000232000000003000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000",
);
const BRIDGE_REPLY_13: &str = concat!(
    "0413007000000002ffff00000000000000002320000000030000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000",
);
/// Collector set 7, nothing sampled yet.
const FLOW_REPLY_13: &str = concat!(
    "0413007000000002ffff00000000000000002320000000040000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000700000000",
);
/// OVS's answer to `BRIDGE_REQ_10` and `BRIDGE_REQ_13` on a bridge without IPFIX.
const NOT_CONFIGURED_10: &str = concat!(
    "0101002c00000002b0c2000000002320000102170110001800000002ffff0000",
    "000023200000000300000000"
);
const NOT_CONFIGURED_13: &str = concat!(
    "0401002800000002ffff0024000023200412001800000002ffff000000000000",
    "0000232000000003"
);

/// Decodes `bytes`, checks the whole frame was used, and re-encodes it.
fn round_trip(bytes: &[u8], version: u8) -> Message {
    let (h, m, n) = decode_frame(bytes).unwrap_or_else(|e| panic!("decode: {e:?}"));
    assert_eq!((n, h.version), (bytes.len(), version));
    let again = encode(&m, version, h.xid).expect("encodes");
    assert_eq!(again, bytes, "re-encoded bytes differ");
    m
}

fn request(bytes: &str, version: u8) -> MpRequest {
    let Message::MultipartRequest(r) = round_trip(&hex(bytes), version) else {
        panic!("not a request");
    };
    r.body
}

fn reply(bytes: &[u8], version: u8) -> MpReply {
    let Message::MultipartReply(r) = round_trip(bytes, version) else {
        panic!("not a reply");
    };
    r.body
}

#[test]
fn requests_in_every_version() {
    assert_eq!(request(BRIDGE_REQ_10, OFP10), MpRequest::IpfixBridge);
    assert_eq!(request(FLOW_REQ_10, OFP10), MpRequest::IpfixFlow);
    assert_eq!(request(BRIDGE_REQ_13, OFP13), MpRequest::IpfixBridge);
    assert_eq!(request(FLOW_REQ_13, OFP13), MpRequest::IpfixFlow);
    assert_eq!(request(BRIDGE_REQ_15, OFP15), MpRequest::IpfixBridge);
}

#[test]
fn replies_in_every_version() {
    let zero = IpfixStats::default();
    assert_eq!(
        reply(&hex(BRIDGE_REPLY_10), OFP10),
        MpReply::IpfixBridge(zero)
    );
    assert_eq!(
        reply(&hex(BRIDGE_REPLY_13), OFP13),
        MpReply::IpfixBridge(zero)
    );
    let set7 = IpfixStats {
        collector_set_id: 7,
        ..zero
    };
    assert_eq!(
        reply(&hex(FLOW_REPLY_13), OFP13),
        MpReply::IpfixFlow(vec![set7])
    );
}

#[test]
fn every_counter_has_its_place() {
    let s = IpfixStats {
        total_flows: 1,
        current_flows: 2,
        pkts: 3,
        ipv4_pkts: 4,
        ipv6_pkts: 5,
        error_pkts: 6,
        ipv4_error_pkts: 7,
        ipv6_error_pkts: 8,
        tx_pkts: 9,
        tx_errors: 10,
        collector_set_id: 0x0a0b_0c0d,
    };
    let mut bytes = hex(FLOW_REPLY_13);
    bytes.truncate(24);
    for c in 1..=10u64 {
        bytes.extend_from_slice(&c.to_be_bytes());
    }
    bytes.extend_from_slice(&[10, 11, 12, 13, 0, 0, 0, 0]);
    // Two records: the length says so.
    bytes.extend_from_within(24..);
    let len = bytes.len() as u16;
    bytes[2..4].copy_from_slice(&len.to_be_bytes());
    assert_eq!(reply(&bytes, OFP13), MpReply::IpfixFlow(vec![s, s]));
}

#[test]
fn not_configured_is_the_nicira_error_ovs_sends() {
    let e = OfError::nx(nx_tlv::NOT_CONFIGURED);
    assert_eq!(e.to_string(), "NXST_NOT_CONFIGURED");
    for (req, v, want) in [
        (BRIDGE_REQ_10, OFP10, NOT_CONFIGURED_10),
        (BRIDGE_REQ_13, OFP13, NOT_CONFIGURED_13),
    ] {
        let got = encode(&error_reply(e, v, &hex(req)), v, 2).expect("encodes");
        assert_eq!(got, hex(want));
    }
}

#[test]
fn bodies_of_the_wrong_size_are_refused() {
    for (bytes, what) in [
        (
            BRIDGE_REQ_13.to_string() + "00000000",
            "a request with a body",
        ),
        (
            BRIDGE_REQ_10.to_string() + "00000000",
            "a 1.0 request with a body",
        ),
        (
            BRIDGE_REPLY_13[..BRIDGE_REPLY_13.len() - 8].to_string(),
            "a record cut short",
        ),
        (
            FLOW_REPLY_13.to_string() + "0000000000000000",
            "a flow reply of 96 bytes",
        ),
        (
            BRIDGE_REPLY_13.to_string() + BRIDGE_REPLY_13.get(48..).unwrap_or(""),
            "two bridge records",
        ),
    ] {
        let mut b = hex(&bytes);
        let len = b.len() as u16;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        assert!(decode_frame(&b).is_err(), "{what} decoded");
    }
}
