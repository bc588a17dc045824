//! OpenFlow 1.0's `enqueue` and Nicira's `pop_queue`: bytes as Debian's `ovs-ofctl` 3.1
//! sends them (1.0's `OFPAT_ENQUEUE`; to 1.1+ the three actions OVS says it with) and the
//! text it prints; the lengths and ports OVS refuses.

use openflow::actions::{OFPP_IN_PORT, OFPP_LOCAL};
use openflow::messages::err::bad_action;
use openflow::messages::OfError;
use openflow::text::{format_actions, parse_actions};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::error::DecodeError;
use openflow::wire::{OFP10, OFP13, OFP14, OFP15};
use openflow::Action;

mod common;
use common::hex;

/// `enqueue:LOCAL:7,enqueue:3:16` in OpenFlow 1.0 (`ovs-ofctl ofp-print` prints a flow_mod
/// with these actions so).
fn of10_bytes() -> Vec<u8> {
    hex(concat!(
        "000b0010fffe000000000000",
        "00000007",
        "000b0010000300000000000000000010"
    ))
}

#[test]
fn of10_enqueue_decodes_prints_and_encodes_as_ovs() {
    let b = of10_bytes();
    let acts = decode_action_list(OFP10, &b).expect("decodes");
    assert_eq!(
        acts,
        [
            Action::Enqueue {
                port: OFPP_LOCAL,
                queue: 7
            },
            Action::Enqueue { port: 3, queue: 16 }
        ]
    );
    assert_eq!(format_actions(&acts), "enqueue:LOCAL:7,enqueue:3:16");
    assert_eq!(encode_action_list(OFP10, &acts).expect("encodes"), b);
    for text in [
        "enqueue:LOCAL:7,enqueue:3:16",
        "enqueue(LOCAL,7),enqueue(3,0x10)",
        "enqueue:local:7,enqueue:3q16",
    ] {
        assert_eq!(parse_actions(text, None).expect(text), acts, "{text}");
    }
}

/// To 1.1+ peers: `set_queue:Q`, `output:P` with max_len 0xffff, `pop_queue` (bytes as OVS
/// 3.1 sent `write_actions(enqueue:1:2)` with -O OpenFlow13), which read back as three actions.
#[test]
fn of11_says_enqueue_as_set_queue_output_pop_queue() {
    let said = hex(concat!(
        "0015000800000002",
        "0000001000000001ffff000000000000",
        "ffff0010000023200005000000000000"
    ));
    let enq = [Action::Enqueue { port: 1, queue: 2 }];
    for v in [OFP13, OFP14, OFP15] {
        assert_eq!(encode_action_list(v, &enq).expect("encodes"), said, "v{v}");
        let back = decode_action_list(v, &said).expect("decodes");
        assert_eq!(
            back,
            [
                Action::SetQueue(2),
                Action::Output {
                    port: 1,
                    max_len: 0xffff
                },
                Action::PopQueue
            ]
        );
        assert_eq!(format_actions(&back), "set_queue:2,output:1,pop_queue");
    }
}

#[test]
fn pop_queue_is_the_same_in_every_version() {
    let b = hex("ffff0010000023200005000000000000");
    for v in [OFP10, OFP13, OFP15] {
        assert_eq!(
            decode_action_list(v, &b).expect("decodes"),
            [Action::PopQueue]
        );
        assert_eq!(encode_action_list(v, &[Action::PopQueue]).expect("enc"), b);
    }
    assert_eq!(
        parse_actions("pop_queue", None).expect("parses"),
        [Action::PopQueue]
    );
    assert!(parse_actions("pop_queue:1", None).is_err());
    // A pop_queue of 24 bytes is refused, as OVS refuses it (OFPBAC_BAD_LEN).
    let long = hex("ffff0018000023200005000000000000ffffffffffffffff");
    assert_eq!(
        decode_action_list(OFP10, &long),
        Err(DecodeError::BadActionLen)
    );
}

#[test]
fn of10_enqueue_of_another_length_is_bad_len() {
    // 8 bytes (OVS: "length 8 not in valid range [16,16]") and 24 bytes.
    for b in [
        "000b000800030000",
        "000b0018000300000000000000000007ffffffffffffffff",
    ] {
        assert_eq!(
            decode_action_list(OFP10, &hex(b)),
            Err(DecodeError::BadActionLen),
            "{b}"
        );
    }
}

/// Any port decodes; the reserved ones but `IN_PORT` and `LOCAL` and the numbers from
/// 0xff00 are `OFPBAC_BAD_OUT_PORT`, as OVS refuses `enqueue:FLOOD:7` on the wire.
#[test]
fn of10_enqueue_ports_ovs_refuses_are_bad_out_port() {
    let bad = Err(OfError::bad_action(bad_action::BAD_OUT_PORT));
    for (p16, ok) in [
        (0xfffbu16, false),
        (0xfffc, false),
        (0xfffd, false),
        (0xfffa, false),
        (0xfff9, false),
        (0xffff, false),
        (0xff00, false),
        (0xfff8, true),
        (0xfffe, true),
        (0xfeff, true),
        (0, true),
    ] {
        let mut b = hex("000b0010000000000000000000000007");
        b[4..6].copy_from_slice(&p16.to_be_bytes());
        let acts = decode_action_list(OFP10, &b).expect("any port decodes");
        let r = acts[0].validate();
        if ok {
            assert_eq!(r, Ok(()), "{p16:#x}");
        } else {
            assert_eq!(r, bad, "{p16:#x}");
        }
    }
    for text in ["enqueue:FLOOD:1", "enqueue:CONTROLLER:1", "enqueue:NONE:1"] {
        let a = parse_actions(text, None);
        assert!(a.is_err(), "{text}: {a:?}");
    }
    let ok = parse_actions("enqueue:IN_PORT:1", None).expect("IN_PORT");
    assert_eq!(
        ok,
        [Action::Enqueue {
            port: OFPP_IN_PORT,
            queue: 1
        }]
    );
}

#[test]
fn enqueue_text_errors_as_ovs_ofctl() {
    for (text, want) in [
        ("enqueue:1", "\"enqueue\" syntax is"),
        ("enqueue:1:", "\"enqueue\" syntax is"),
        ("enqueue", "\"enqueue\" syntax is"),
        ("enqueue:foo:1", "foo: enqueue to unknown port"),
        ("enqueue:1:5x", "invalid queue"),
        ("enqueue:1:4294967296", "invalid queue"),
    ] {
        let e = parse_actions(text, None).expect_err(text);
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
}

/// A 1.0 enqueue cannot name a port above 16 bits.
#[test]
fn of10_cannot_say_a_wide_port() {
    let a = [Action::Enqueue {
        port: 70000,
        queue: 1,
    }];
    assert!(encode_action_list(OFP10, &a).is_err());
}
