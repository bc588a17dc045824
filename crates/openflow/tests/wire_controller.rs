//! Nicira `controller(...)` (`NXAST_CONTROLLER`, `NXAST_CONTROLLER2`): action bytes captured
//! from Debian's `ovs-ofctl` 3.1 `add-flow` (OpenFlow 1.0, 1.3 and 1.5 send the same bytes
//! for each) with the text `ovs-ofctl parse-flow` prints for them: decode, print as OVS,
//! re-encode byte-exact, parse back. Malformed forms fail with OVS's errors.

use openflow::controller::Controller;
use openflow::messages::err::{bad_property, nx_tlv, OFPET_BAD_PROPERTY};
use openflow::messages::OfError;
use openflow::text::{format_actions, parse_actions};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::error::DecodeError as E;
use openflow::wire::{OFP10, OFP13, OFP15};
use openflow::{Action, Instruction};

mod common;
use common::hex;

/// (text given to ovs-ofctl, bytes it sent, text it prints).
const VECTORS: &[(&str, &str, &str)] = &[
    (
        "controller(userdata=01.02,meter_id=3)",
        "ffff002000002320002500000000000000030006010200000005000800000003",
        "controller(userdata=01.02,meter_id=3)",
    ),
    (
        "controller(pause)",
        "ffff00180000232000250000000000000004000400000000",
        "controller(pause)",
    ),
    (
        "controller(pause=1)",
        "ffff00180000232000250000000000000004000400000000",
        "controller(pause)",
    ),
    (
        "controller(reason=no_match,max_len=123,id=5)",
        "ffff0010000023200014007b00050000",
        "controller(reason=no_match,max_len=123,id=5)",
    ),
    (
        "controller(id=1)",
        "ffff0010000023200014ffff00010100",
        "controller(id=1)",
    ),
    (
        "controller(reason=invalid_ttl)",
        "ffff0010000023200014ffff00000200",
        "controller(reason=invalid_ttl)",
    ),
    (
        "controller(reason=action_set)",
        "ffff0010000023200014ffff00000300",
        "controller(reason=action_set)",
    ),
    (
        "controller(reason=group)",
        "ffff0010000023200014ffff00000400",
        "controller(reason=group)",
    ),
    (
        "controller(reason=packet_out)",
        "ffff0010000023200014ffff00000500",
        "controller(reason=packet_out)",
    ),
    (
        "controller(reason=no_match)",
        "ffff0010000023200014ffff00000000",
        "controller(reason=no_match)",
    ),
    (
        "controller(max_len=0,id=65535,reason=group)",
        "ffff00100000232000140000ffff0400",
        "controller(reason=group,max_len=0,id=65535)",
    ),
    (
        "controller(id=0x10)",
        "ffff0010000023200014ffff00100100",
        "controller(id=16)",
    ),
    (
        "controller(userdata=01)",
        "ffff00180000232000250000000000000003000501000000",
        "controller(userdata=01)",
    ),
    (
        "controller(userdata=0102030405)",
        "ffff002000002320002500000000000000030009010203040500000000000000",
        "controller(userdata=01.02.03.04.05)",
    ),
    (
        "controller(userdata=010203040506070809)",
        "ffff00200000232000250000000000000003000d010203040506070809000000",
        "controller(userdata=01.02.03.04.05.06.07.08.09)",
    ),
    (
        "controller(userdata=01..02)",
        "ffff00180000232000250000000000000003000601020000",
        "controller(userdata=01.02)",
    ),
    (
        "controller(userdata=AbCd)",
        "ffff001800002320002500000000000000030006abcd0000",
        "controller(userdata=ab.cd)",
    ),
    (
        "controller(userdata=01,userdata=02)",
        "ffff00180000232000250000000000000003000502000000",
        "controller(userdata=02)",
    ),
    (
        "controller(meter_id=4294967295)",
        "ffff001800002320002500000000000000050008ffffffff",
        "controller(meter_id=4294967295)",
    ),
    (
        "controller(max_len=10,pause)",
        "ffff002000002320002500000000000000000008000a00000004000400000000",
        "controller(max_len=10,pause)",
    ),
    (
        "controller(reason=no_match,max_len=10,pause)",
        "ffff002800002320002500000000000000000008000a000000020005000000000004000400000000",
        "controller(reason=no_match,max_len=10,pause)",
    ),
    (
        "controller(id=7,userdata=ff)",
        "ffff0020000023200025000000000000000100080007000000030005ff000000",
        "controller(id=7,userdata=ff)",
    ),
    (
        "controller(reason=packet_out,userdata=00.00.00.02)",
        "ffff002000002320002500000000000000020005050000000003000800000002",
        "controller(reason=packet_out,userdata=00.00.00.02)",
    ),
    (
        "controller(pause,userdata=00.00.00.01.00.00.00.00,max_len=10,id=3,reason=no_match,meter_id=7)",
        "ffff004800002320002500000000000000000008000a0000000100080003000000020005000000000003000c00000001000000000000000000040004000000000005000800000007",
        "controller(reason=no_match,max_len=10,id=3,userdata=00.00.00.01.00.00.00.00,pause,meter_id=7)",
    ),
    (
        "controller(userdata=00.00.00.0d.00.00.00.00.00.01.de.10.80.00.3e.04.00.00.00.00,pause,meter_id=1)",
        "ffff0038000023200025000000000000000300180000000d000000000001de1080003e040000000000040004000000000005000800000001",
        "controller(userdata=00.00.00.0d.00.00.00.00.00.01.de.10.80.00.3e.04.00.00.00.00,pause,meter_id=1)",
    ),
    (
        "clone(controller(userdata=01,pause))",
        "ffff003000002320002a000000000000ffff002000002320002500000000000000030005010000000004000400000000",
        "clone(controller(userdata=01,pause))",
    ),
];

#[test]
fn ovs_vectors_decode_print_encode_parse() {
    common::action_vectors(VECTORS, |_, _| {});
}

/// What ovs-ofctl sends as OpenFlow's output to CONTROLLER, and prints `CONTROLLER:N`.
#[test]
fn plain_forms_stay_output() {
    let out = |max_len| {
        vec![Action::Output {
            port: openflow::actions::OFPP_CONTROLLER,
            max_len,
        }]
    };
    for (text, max_len) in [
        ("controller", 65535),
        ("controller()", 65535),
        ("CONTROLLER:12", 12),
        ("controller:12", 12),
        ("controller(max_len=12)", 12),
        ("controller(max_len=0x10)", 16),
        ("controller(reason=action)", 65535),
        ("controller(meter_id=0)", 65535),
        ("controller(max_len=0)", 0),
    ] {
        let a = parse_actions(text, None).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(a, out(max_len), "{text}");
        assert_eq!(format_actions(&a), format!("CONTROLLER:{max_len}"));
    }
    // Captured: OpenFlow 1.0 and 1.3+ output actions.
    let a = parse_actions("controller(max_len=12)", None).expect("parses");
    assert_eq!(
        encode_action_list(OFP10, &a).expect("enc"),
        hex("00000008fffd000c")
    );
    assert_eq!(
        encode_action_list(OFP13, &a).expect("enc"),
        hex("00000010fffffffd000c000000000000")
    );
    assert_eq!(
        encode_action_list(OFP15, &a).expect("enc"),
        hex("00000010fffffffd000c000000000000")
    );
}

/// Forms that print as `CONTROLLER:N` but are Nicira's action on the wire, and keep their
/// form when they go back out (OVS re-encodes what it decoded in the form it came in).
#[test]
fn default_nicira_forms_keep_their_encoding() {
    // `userdata=` with no bytes: ovs-ofctl sends NXAST_CONTROLLER with reason action.
    let a = parse_actions("controller(userdata=)", None).expect("parses");
    assert_eq!(a, vec![Action::Controller(Controller::default())]);
    assert_eq!(format_actions(&a), "CONTROLLER:65535");
    let b = hex("ffff0010000023200014ffff00000100");
    for v in [OFP10, OFP13, OFP15] {
        assert_eq!(encode_action_list(v, &a).expect("enc"), b);
        assert_eq!(decode_action_list(v, &b).expect("dec"), a);
    }
    // OVS neither checks nor prints NXAST_CONTROLLER's last byte.
    let odd = hex("ffff0010000023200014ffff00000101");
    assert_eq!(decode_action_list(OFP13, &odd).expect("dec"), a);
    // NXAST_CONTROLLER2 with no properties, or only default-valued ones: printed as
    // OVS's ofp-print prints it, re-encoded as CONTROLLER2 with only what differs.
    let empty2 = hex("ffff0010000023200025000000000000");
    let a2 = decode_action_list(OFP13, &empty2).expect("dec");
    assert_eq!(format_actions(&a2), "CONTROLLER:65535");
    assert_eq!(encode_action_list(OFP13, &a2).expect("enc"), empty2);
    let explicit = hex("ffff002000002320002500000000000000000006ffff00000002000501000000");
    let a3 = decode_action_list(OFP13, &explicit).expect("dec");
    assert_eq!(a3, a2);
    // ovs-ofctl ofp-print: a 3-byte max_len property reads its first two bytes.
    let long = hex("ffff00180000232000250000000000000000000700000000");
    let a4 = decode_action_list(OFP13, &long).expect("dec");
    assert_eq!(format_actions(&a4), "CONTROLLER:0");
    // A flag with a value, a property's padding: ignored (ofp-print: controller(pause),
    // controller(userdata=01)).
    let flag = hex("ffff00180000232000250000000000000004000501000000");
    assert_eq!(
        format_actions(&decode_action_list(OFP13, &flag).expect("dec")),
        "controller(pause)"
    );
    let pad = hex("ffff00180000232000250000000000000003000501ffffff");
    assert_eq!(
        format_actions(&decode_action_list(OFP13, &pad).expect("dec")),
        "controller(userdata=01)"
    );
}

/// Reasons OVS has no name for print as it prints them (ovs-ofctl ofp-print).
#[test]
fn unnamed_reasons_print_as_ovs() {
    for (r, text) in [
        ("06", "controller(reason=)"),
        ("07", "controller(reason=)"),
        ("08", "controller(reason=8)"),
        ("ff", "controller(reason=255)"),
        ("c8", "controller(reason=200)"),
    ] {
        let b = hex(&format!("ffff0010000023200014ffff0000{r}00"));
        let a = decode_action_list(OFP13, &b).expect("dec");
        assert_eq!(format_actions(&a), text);
        assert_eq!(encode_action_list(OFP13, &a).expect("enc"), b);
    }
}

#[test]
fn malformed_forms_fail_as_ovs() {
    let prop = |c| E::Refused(OfError::new(OFPET_BAD_PROPERTY, c));
    let cases: &[(&str, E)] = &[
        // NXAST_CONTROLLER of 24 bytes: OFPBAC_BAD_LEN.
        (
            "ffff0018000023200014ffff000000000000000000000000",
            E::BadActionLen,
        ),
        // CONTROLLER2's padding not zero: NXBRC_MUST_BE_ZERO.
        (
            "ffff0010000023200025000000000001",
            E::Refused(OfError::nx(nx_tlv::MUST_BE_ZERO)),
        ),
        // Unknown property 6: OFPBPC_BAD_TYPE.
        (
            "ffff00180000232000250000000000000006000400000000",
            prop(bad_property::BAD_TYPE),
        ),
        // Property lengths 0 and beyond the action: OFPBPC_BAD_LEN.
        (
            "ffff00180000232000250000000000000004000000000000",
            prop(bad_property::BAD_LEN),
        ),
        (
            "ffff00180000232000250000000000000004001000000000",
            prop(bad_property::BAD_LEN),
        ),
        // A max_len of one byte, a reason of none, a meter id of 2 bytes.
        (
            "ffff0018000023200025000000000000000000050a000000",
            prop(bad_property::BAD_LEN),
        ),
        (
            "ffff00180000232000250000000000000002000400000000",
            prop(bad_property::BAD_LEN),
        ),
        (
            "ffff00180000232000250000000000000005000600010000",
            prop(bad_property::BAD_LEN),
        ),
        // Experimenter properties: id 0, an unknown one, too short.
        (
            "ffff0020000023200025000000000000ffff000c000000000000000100000000",
            prop(bad_property::BAD_EXPERIMENTER),
        ),
        (
            "ffff0020000023200025000000000000ffff000c000023200000000100000000",
            prop(bad_property::BAD_EXP_TYPE),
        ),
        (
            "ffff0018000023200025000000000000ffff000800002320",
            prop(bad_property::BAD_LEN),
        ),
    ];
    for (bytes, want) in cases {
        for v in [OFP10, OFP13, OFP15] {
            assert_eq!(
                decode_action_list(v, &hex(bytes)),
                Err(want.clone()),
                "{bytes} v{v}"
            );
        }
    }
    // Text: ovs-ofctl's refusals.
    for (text, msg) in [
        ("controller(reason=bogus)", "unknown reason \"bogus\""),
        ("controller(reason=6)", "unknown reason \"6\""),
        ("controller(reason=explicit_miss)", "unknown reason"),
        (
            "controller(foo=1)",
            "unknown key \"foo\" parsing controller action",
        ),
        ("controller(userdata=0g)", "bad hex digit"),
        ("controller(userdata=1)", "bad hex digit"),
        ("controller(id=65536)", "invalid id \"65536\""),
        ("controller(max_len=65536)", "invalid max_len \"65536\""),
        ("controller(max_len=-1)", "invalid max_len"),
        ("controller(meter_id=4294967296)", "invalid meter_id"),
        ("controller:0x10", "unknown key \"0x10\""),
    ] {
        let e = parse_actions(text, None).expect_err(text);
        assert!(e.to_string().contains(msg), "{text}: {e}");
    }
}

/// The action set has no slot for it: OFPBAC_BAD_TYPE ("disallowed action in action set"),
/// as OVS refuses `write_actions(controller(...))` (plain CONTROLLER output is allowed).
#[test]
fn refused_in_action_sets() {
    use openflow::actions::validate_instructions;
    use openflow::messages::err::bad_action;
    for text in [
        "controller(pause)",
        "controller(id=3)",
        "controller(userdata=)",
    ] {
        let acts = parse_actions(text, None).expect("parses");
        let e =
            validate_instructions(&[Instruction::WriteActions(acts.clone())], 0).expect_err(text);
        assert_eq!(e, OfError::bad_action(bad_action::BAD_TYPE), "{text}");
        validate_instructions(&[Instruction::ApplyActions(acts)], 0).expect("apply ok");
    }
    let plain = parse_actions("controller", None).expect("parses");
    validate_instructions(&[Instruction::WriteActions(plain)], 0).expect("plain ok");
}

/// Property errors go out in each version's numbering, as OVS sends them: OpenFlow 1.4+'s
/// `OFPET_BAD_PROPERTY`, 1.3's (and Nicira 1.0's) table-features codes 2-4, the
/// experimenter ones as ONF experimenter errors in 1.3.
#[test]
fn property_errors_in_each_versions_numbering() {
    use openflow::wire::{error_reply, of_error_to_wire, Message, OFP14};
    let e = |c| OfError::new(OFPET_BAD_PROPERTY, c);
    assert_eq!(of_error_to_wire(e(bad_property::BAD_TYPE), OFP15), (14, 0));
    assert_eq!(of_error_to_wire(e(bad_property::BAD_LEN), OFP14), (14, 1));
    assert_eq!(of_error_to_wire(e(bad_property::BAD_TYPE), OFP13), (13, 2));
    assert_eq!(of_error_to_wire(e(bad_property::BAD_LEN), OFP13), (13, 3));
    assert_eq!(of_error_to_wire(e(bad_property::BAD_LEN), OFP10), (13, 3));
    assert_eq!(
        of_error_to_wire(e(bad_property::BAD_EXP_TYPE), OFP10),
        (14, 6)
    );
    match error_reply(e(bad_property::BAD_EXP_TYPE), OFP13, &[]) {
        Message::Error(m) => {
            assert_eq!((m.type_, m.code), (0xffff, 4446));
            assert_eq!(m.experimenter, Some(0x4f4e_4600));
        }
        other => panic!("{other:?}"),
    }
    // NXBRC_MUST_BE_ZERO: Nicira code 4, OpenFlow 1.0's 515.
    assert_eq!(nx_tlv::nx10(nx_tlv::MUST_BE_ZERO), 515);
    assert_eq!(nx_tlv::nx10(nx_tlv::RESUME_STALE), 534);
}

/// User data that would make the action longer than 65528 bytes is refused in text ("input
/// too big", as ovs-ofctl), by validation and by the encoder; the longest that fits goes.
#[test]
fn user_data_bounded_by_the_action_length() {
    let text = |n: usize| format!("controller(userdata={})", "ab".repeat(n));
    // 16 + pad8(4 + n) <= 65528.
    let a = parse_actions(&text(65508), None).expect("fits");
    let b = encode_action_list(OFP13, &a).expect("encodes");
    assert_eq!(b.len(), 65528);
    assert_eq!(decode_action_list(OFP13, &b).expect("decodes"), a);
    let e = parse_actions(&text(65509), None).expect_err("too big");
    assert!(e.to_string().contains("input too big"), "{e}");
    let big = Action::Controller(Controller {
        userdata: vec![0; 65509],
        v2: true,
        ..Controller::default()
    });
    assert!(big.validate().is_err());
    assert!(encode_action_list(OFP13, &[big]).is_err());
}
