//! Nicira `check_pkt_larger(LEN)->DST` (`NXAST_CHECK_PKT_LARGER`, subtype 49): action bytes
//! captured from Debian's `ovs-ofctl` 3.1 `add-flow` over OpenFlow 1.0, 1.3 and 1.5 (a
//! fake switch on a unix socket printing the flow_mod; every version sends the same bytes,
//! the destination named by its NXM header, or its OXM one when it has no NXM header) with
//! the text `ovs-ofctl` prints: decode, print as OVS, re-encode byte-exact, parse back.
//! Malformed forms fail as `ovs-ofctl ofp-print` fails them.

use openflow::actions::validate_actions;
use openflow::text::{format_actions, parse_actions};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::error::DecodeError as E;
use openflow::wire::{OFP10, OFP13, OFP15};

mod common;
use common::hex;

/// (text given to ovs-ofctl, bytes it sent in every version, text it prints).
const VECTORS: &[(&str, &str, &str)] = &[
    (
        "check_pkt_larger(1500)->NXM_NX_REG0[0]",
        "ffff001800002320003105dc000000010004000000000000",
        "check_pkt_larger(1500)->NXM_NX_REG0[0]",
    ),
    // What OVN writes for a gateway MTU of 1500.
    (
        "check_pkt_larger(1514)->NXM_NX_REG9[1]",
        "ffff001800002320003105ea000100011204000000000000",
        "check_pkt_larger(1514)->NXM_NX_REG9[1]",
    ),
    (
        "check_pkt_larger(0)->reg0[31]",
        "ffff00180000232000310000001f00010004000000000000",
        "check_pkt_larger(0)->NXM_NX_REG0[31]",
    ),
    (
        "check_pkt_larger(0x10)->reg0[1]",
        "ffff00180000232000310010000100010004000000000000",
        "check_pkt_larger(16)->NXM_NX_REG0[1]",
    ),
    (
        "check_pkt_larger(65535)->NXM_NX_XXREG0[127]",
        "ffff0018000023200031ffff007f0001de10000000000000",
        "check_pkt_larger(65535)->NXM_NX_XXREG0[127]",
    ),
    (
        "check_pkt_larger(100)->metadata[0]",
        "ffff00180000232000310064000080000408000000000000",
        "check_pkt_larger(100)->OXM_OF_METADATA[0]",
    ),
    (
        "check_pkt_larger(100)->OXM_OF_PKT_REG0[5]",
        "ffff00180000232000310064000580010008000000000000",
        "check_pkt_larger(100)->OXM_OF_PKT_REG0[5]",
    ),
    (
        "check_pkt_larger(1500)->in_port[0]",
        "ffff001800002320003105dc000000000002000000000000",
        "check_pkt_larger(1500)->NXM_OF_IN_PORT[0]",
    ),
];

#[test]
fn ovs_vectors_decode_print_encode_parse() {
    common::action_vectors(VECTORS, |given, acts| {
        validate_actions(acts).unwrap_or_else(|e| panic!("{given}: {e:?}"));
    });
}

/// The actions after it are their own items (ovs-ofctl's value runs to the next comma).
#[test]
fn followed_by_other_actions() {
    let cases: &[(u8, &str, &str)] = &[
        (
            OFP10,
            "check_pkt_larger(1500)->NXM_NX_REG0[0],output:1",
            "ffff001800002320003105dc0000000100040000000000000000000800010000",
        ),
        (
            OFP13,
            "check_pkt_larger(1500)->NXM_NX_REG0[0],output:1",
            "ffff001800002320003105dc00000001000400000000000000000010000000010000000000000000",
        ),
        (
            OFP15,
            "check_pkt_larger(1514)->NXM_NX_REG9[1],resubmit(,9)",
            "ffff001800002320003105ea000100011204000000000000ffff001000002320000efff809000000",
        ),
    ];
    for (v, text, bytes) in cases {
        let acts = parse_actions(text, None).expect("parses");
        assert_eq!(acts.len(), 2, "{text}");
        assert_eq!(
            encode_action_list(*v, &acts).expect("enc"),
            hex(bytes),
            "{text}"
        );
        assert_eq!(decode_action_list(*v, &hex(bytes)).expect("dec"), acts);
        assert_eq!(format_actions(&acts), *text);
    }
}

#[test]
fn malformed_forms_fail_as_ovs() {
    // 16 bytes: "length 16 not in valid range [24,65528]", OFPBAC_BAD_LEN.
    let b = hex("ffff001000002320003105dc00000001");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadActionLen));
    // Longer, zero-padded: accepted, and written back in 24 bytes.
    let b = hex("ffff002000002320003105dc0000000100040000000000000000000000000000");
    let acts = decode_action_list(OFP13, &b).expect("decodes");
    assert_eq!(
        format_actions(&acts),
        "check_pkt_larger(1500)->NXM_NX_REG0[0]"
    );
    // Non-zero padding: NXBRC_MUST_BE_ZERO in OVS (here BAD_ARGUMENT).
    let b = hex("ffff001800002320003105dc000000010004000000000001");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadActionArgument));
    // Bit 32 of reg0: OFPBAC_BAD_SET_LEN.
    let b = hex("ffff001800002320003105dc002000010004000000000000");
    assert_eq!(decode_action_list(OFP13, &b), Err(E::BadSetLen));
    // An unknown header and a masked one are refused (OVS: OFPBMC_BAD_FIELD/BAD_MASK).
    for h in ["00000c02", "00010104", "00010108"] {
        let b = hex(&format!("ffff001800002320003105dc0000{h}000000000000"));
        assert!(decode_action_list(OFP13, &b).is_err(), "{h}");
    }
    // A read-only destination: OFPBAC_BAD_SET_ARGUMENT, as OVS refuses `ip_frag`.
    let acts = parse_actions("check_pkt_larger(1500)->reg0[0]", None).expect("parses");
    let mut bad = acts.clone();
    if let openflow::Action::CheckPktLarger { dst, .. } = &mut bad[0] {
        dst.field = openflow::oxm::Field::TcpFlags;
    }
    let e = validate_actions(&bad).expect_err("read-only");
    assert_eq!(e.to_string(), validate_err_text(), "{e}");
    // Text, with ovs-ofctl's words where it has them.
    let err = |t: &str| parse_actions(t, None).expect_err(t).to_string();
    assert!(err("check_pkt_larger(1500)").contains("missing `->'"));
    assert!(err("check_pkt_larger(1500)->reg0").contains("Only 1-bit destination"));
    assert!(err("check_pkt_larger(1500)->NXM_NX_REG0[0..1]").contains("Only 1-bit destination"));
    assert!(err("check_pkt_larger(70000)->reg0[0]").contains("70000"));
    assert!(err("check_pkt_larger()->reg0[0]").contains("16-bit"));
    assert!(err("check_pkt_larger(1500)->nosuch[0]").contains("nosuch"));
    // Not in an action set (OVS: no slot for it).
    let insts = openflow::text::parse_instructions(
        "write_actions(check_pkt_larger(1500)->reg0[0],output:1)",
        None,
    )
    .expect("parses");
    assert!(openflow::actions::validate_instructions(&insts, 0).is_err());
}

fn validate_err_text() -> String {
    openflow::messages::OfError::bad_action(openflow::messages::err::bad_action::BAD_SET_ARGUMENT)
        .to_string()
}
