//! Nicira `note`, `output:SRC` (`output_reg`), `clone` and `dec_ttl(ids)`: action bytes
//! captured from Debian's `ovs-ofctl` 3.1 `add-flow` (OpenFlow 1.0, 1.3 and 1.5 send the
//! same bytes for each) with the text `ovs-ofctl` prints for them: decode, print as OVS,
//! re-encode byte-exact, parse back. Malformed forms fail as OVS fails them.

use openflow::text::{format_actions, parse_actions};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::{OFP10, OFP13, OFP15};
use openflow::Action;

mod common;
use common::hex;

/// (text given to ovs-ofctl, bytes it sent, text it prints).
const SAME_IN_EVERY_VERSION: &[(&str, &str, &str)] = &[
    (
        "note:01.02.03",
        "ffff0010000023200008010203000000",
        "note:01.02.03.00.00.00",
    ),
    (
        "note:",
        "ffff0010000023200008000000000000",
        "note:00.00.00.00.00.00",
    ),
    (
        "note:01.02.03.04.05.06.07",
        "ffff00180000232000080102030405060700000000000000",
        "note:01.02.03.04.05.06.07.00.00.00.00.00.00.00",
    ),
    (
        "output:NXM_NX_REG0[0..15]",
        "ffff001800002320000f000f00010004ffff000000000000",
        "output:NXM_NX_REG0[0..15]",
    ),
    (
        "output:reg0",
        "ffff001800002320000f001f00010004ffff000000000000",
        "output:NXM_NX_REG0[]",
    ),
    (
        "output:NXM_NX_XXREG0[0..15]",
        "ffff001800002320000f000f0001de10ffff000000000000",
        "output:NXM_NX_XXREG0[0..15]",
    ),
    (
        "output:OXM_OF_PKT_REG1[0..15]",
        "ffff001800002320000f000f80010208ffff000000000000",
        "output:OXM_OF_PKT_REG1[0..15]",
    ),
    (
        "output:NXM_NX_REG1[16..31]",
        "ffff001800002320000f040f00010204ffff000000000000",
        "output:NXM_NX_REG1[16..31]",
    ),
    (
        "output:NXM_OF_IN_PORT[]",
        "ffff001800002320000f000f00000002ffff000000000000",
        "output:NXM_OF_IN_PORT[]",
    ),
    ("clone(clone(output:1))", "", "clone(clone(output:1))"),
    ("clone()", "ffff001000002320002a000000000000", "clone()"),
    (
        "dec_ttl(1,2)",
        "ffff00180000232000150002000000000001000200000000",
        "dec_ttl(1,2)",
    ),
    (
        "dec_ttl(1)",
        "ffff00180000232000150001000000000001000000000000",
        "dec_ttl(1)",
    ),
    (
        "dec_ttl(0)",
        "ffff00180000232000150001000000000000000000000000",
        "dec_ttl(0)",
    ),
];

#[test]
fn ovs_vectors_decode_print_encode_parse() {
    common::action_vectors(SAME_IN_EVERY_VERSION, |_, _| {});
}

/// `clone` nests the message version's own actions (captured per version).
#[test]
fn clone_nests_the_versions_actions() {
    let cases: &[(u8, &str, &str, &str)] = &[
        (
            OFP13,
            "clone(set_field:1->reg2,output:3)",
            "ffff003000002320002a0000000000000019001000010404000000010000000000000010000000030000000000000000",
            "clone(set_field:0x1->reg2,output:3)",
        ),
        (
            OFP15,
            "clone(set_field:1->reg2,output:3)",
            "ffff003000002320002a0000000000000019001000010404000000010000000000000010000000030000000000000000",
            "clone(set_field:0x1->reg2,output:3)",
        ),
        (
            OFP10,
            "clone(clone(output:1))",
            "ffff002800002320002a000000000000ffff001800002320002a0000000000000000000800010000",
            "clone(clone(output:1))",
        ),
        (
            OFP13,
            "clone(clone(output:1))",
            "ffff003000002320002a000000000000ffff002000002320002a00000000000000000010000000010000000000000000",
            "clone(clone(output:1))",
        ),
        (
            OFP15,
            "clone(note:01,set_field:1->reg2)",
            "ffff003000002320002a000000000000ffff001000002320000801000000000000190010000104040000000100000000",
            "clone(note:01.00.00.00.00.00,set_field:0x1->reg2)",
        ),
    ];
    for (v, given, bytes, printed) in cases {
        let b = hex(bytes);
        let acts = decode_action_list(*v, &b).unwrap_or_else(|e| panic!("{given}: {e:?}"));
        assert_eq!(format_actions(&acts), *printed, "{given} v{v}");
        assert_eq!(
            encode_action_list(*v, &acts).expect("encodes"),
            b,
            "{given} v{v}"
        );
        assert_eq!(parse_actions(given, None).expect("parses"), acts, "{given}");
    }
}

#[test]
fn plain_dec_ttl_stays_openflows_action() {
    let a = parse_actions("dec_ttl", None).expect("parses");
    assert_eq!(a, vec![Action::DecNwTtl]);
    assert_eq!(parse_actions("dec_ttl()", None).expect("parses"), a);
    assert_eq!(
        encode_action_list(OFP13, &a).expect("enc"),
        hex("0018000800000000")
    );
    assert_eq!(
        encode_action_list(OFP10, &a).expect("enc"),
        hex("ffff0010000023200012000000000000")
    );
    // An empty id list is valid on the wire (OVS prints it `dec_ttl()`).
    let b = hex("ffff00100000232000150000000000000000");
    let b = &b[..16];
    assert_eq!(
        decode_action_list(OFP13, b).expect("decodes"),
        vec![Action::DecTtlIds(vec![])]
    );
}

#[test]
fn malformed_forms_fail_as_ovs() {
    use openflow::wire::error::DecodeError as E;
    // Five ids announced, room for four bytes: OFPBAC_BAD_LEN.
    let b = hex("ffff00180000232000150005000000000001000000000000");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadActionLen));
    // Non-zero "zeros": NXBRC_MUST_BE_ZERO in OVS (here BAD_ARGUMENT).
    let b = hex("ffff00180000232000150001000100000001000000000000");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadActionArgument));
    let b = hex("ffff001800002320000f000f00010004ffff000000000001");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadActionArgument));
    // Bits beyond the field: OFPBAC_BAD_SET_LEN.
    let b = hex("ffff001800002320000f080f00010004ffff000000000000");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadSetLen));
    // Unknown field header: OFPBAC_BAD_SET_TYPE.
    let b = hex("ffff001800002320000f000f7fff0004ffff000000000000");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadSetType));
    // A note shorter than 16 bytes.
    let b = hex("ffff000800002320");
    assert!(decode_action_list(OFP13, &b).is_err());
    // Text: odd hex digits, bad digits.
    assert!(parse_actions("note:012", None).is_err());
    assert!(parse_actions("note:zz", None).is_err());
    assert!(parse_actions("output:nosuchfield[0..3]", None).is_err());
    assert!(parse_actions("output:reg0[0..40]", None).is_err());
    assert!(parse_actions("dec_ttl(70000)", None).is_err());
}

/// ovs-ofctl accepts `clone` nested 99 deep and refuses 100 ("Action nested too deeply");
/// the decoder refuses deeper nesting too, without recursing further.
#[test]
fn clone_nesting_limit() {
    let text = |n: usize| format!("{}output:1{}", "clone(".repeat(n), ")".repeat(n));
    assert!(parse_actions(&text(99), None).is_ok());
    let e = parse_actions(&text(100), None).expect_err("too deep");
    assert!(e.to_string().contains("nested too deeply"), "{e}");
    let wire = |n: usize| {
        let mut b = hex("00000010000000010000000000000000");
        for _ in 0..n {
            let mut c = hex("ffff000000002320002a000000000000");
            let len = (16 + b.len()) as u16;
            c[2..4].copy_from_slice(&len.to_be_bytes());
            c.extend_from_slice(&b);
            b = c;
        }
        b
    };
    let ok = decode_action_list(OFP13, &wire(99)).expect("99 decode");
    assert_eq!(format_actions(&ok), text(99));
    assert!(decode_action_list(OFP13, &wire(100)).is_err());
    assert!(decode_action_list(OFP13, &wire(3000)).is_err());
}
