//! Exact-byte and malformed-input tests for the OpenFlow 1.4/1.5 messages and their
//! OpenFlow 1.3 ONF forms: each new decoder gets a known-good encoding, a round trip, and
//! every truncation of it refused with a typed error.

use openflow::wire::msg::{bct, ONF_EXPERIMENTER_ID, ONFT_BUNDLE_CONTROL};
use openflow::wire::{decode_frame, encode, BundleAdd, BundleControl, DecodeError, Message};
use openflow::wire::{OFP13, OFP14, OFP15};

/// Decodes `bytes`, checks it re-encodes to the same bytes, and that every truncation of
/// the body (with the header's length adjusted) is an error, never a panic.
fn round_trip(bytes: &[u8]) -> Message {
    let (h, m, n) = decode_frame(bytes).expect("decodes");
    assert_eq!(n, bytes.len());
    assert_eq!(encode(&m, h.version, h.xid).expect("encodes"), bytes);
    for cut in 8..bytes.len() {
        let mut b = bytes[..cut].to_vec();
        b[2..4].copy_from_slice(&(cut as u16).to_be_bytes());
        if let Ok((_, m2, _)) = decode_frame(&b) {
            // A shorter valid message is possible (trailing properties); never the same.
            assert_ne!(m2, m, "cut at {cut}");
        }
        assert!(matches!(
            decode_frame(&bytes[..cut]),
            Err(DecodeError::Truncated)
        ));
    }
    m
}

#[test]
fn bundle_control_in_onf_form_for_openflow13() {
    let bc = Message::BundleControl(BundleControl {
        bundle_id: 7,
        ctrl_type: bct::COMMIT_REQUEST,
        flags: 3,
        props: Vec::new(),
    });
    let b13 = encode(&bc, OFP13, 9).expect("1.3");
    assert_eq!(b13[1], 4, "OFPT_EXPERIMENTER");
    assert_eq!(&b13[8..12], &ONF_EXPERIMENTER_ID.to_be_bytes());
    assert_eq!(&b13[12..16], &ONFT_BUNDLE_CONTROL.to_be_bytes());
    assert_eq!(&b13[16..], &[0, 0, 0, 7, 0, 4, 0, 3]);
    assert_eq!(round_trip(&b13), bc);
    let b14 = encode(&bc, OFP14, 9).expect("1.4");
    assert_eq!(b14[1], 33);
    assert_eq!(&b14[8..], &b13[16..]);
    assert!(encode(&bc, 1, 9).is_err(), "no bundles in 1.0");
}

#[test]
fn bundle_add_carries_a_whole_message() {
    let inner = encode(&Message::BarrierRequest, OFP15, 5).expect("inner");
    let add = Message::BundleAdd(BundleAdd {
        bundle_id: 1,
        flags: 1,
        message: inner,
        props: Vec::new(),
    });
    for v in [OFP13, OFP14, OFP15] {
        let b = encode(&add, v, 5).expect("encodes");
        assert_eq!(round_trip(&b), add);
    }
    // An inner length below the header's is refused.
    let mut b = encode(&add, OFP14, 5).expect("encodes");
    b[16 + 2..16 + 4].copy_from_slice(&4u16.to_be_bytes());
    assert!(decode_frame(&b).is_err());
}
