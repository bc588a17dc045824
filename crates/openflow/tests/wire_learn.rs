//! Nicira `learn` (`NXAST_LEARN`, `NXAST_LEARN2`): action bytes captured from Debian's
//! `ovs-ofctl` 3.1 `add-flow` (the same in OpenFlow 1.0, 1.3 and 1.5) with the text
//! `ovs-ofctl parse-flow` prints for them: parse, encode byte-exact, decode, print as OVS,
//! parse the print back. Malformed forms fail with OVS's errors.

use openflow::text::{format_actions, parse_actions};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::error::DecodeError as E;
use openflow::wire::{OFP10, OFP13, OFP15};
use openflow::Action;

mod common;
use common::hex;

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// (text given to ovs-ofctl, bytes it sent, text it prints).
const VECTORS: &[(&str, &str, &str)] = &[
    (
        "learn(NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])",
        "ffff003800002320001000000000800000000000000000000000010000000000003000000406000000000206000010100000000200000000",
        "learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])",
    ),
    (
        "learn(table=2,idle_timeout=10,hard_timeout=20,fin_idle_timeout=5,fin_hard_timeout=6,priority=7,send_flow_rem,cookie=0x1234,NXM_NX_REG0[],load:NXM_NX_REG1[]->NXM_NX_REG2[],load:0x5->NXM_NX_REG3[4..7])",
        "ffff0048000023200010000a001400070000000000001234000102000005000600200001000400000001000400000820000102040000000104040000280400050001060400040000",
        "learn(table=2,idle_timeout=10,hard_timeout=20,fin_idle_timeout=5,fin_hard_timeout=6,priority=7,send_flow_rem,cookie=0x1234,NXM_NX_REG0[],load:NXM_NX_REG1[]->NXM_NX_REG2[],load:0x5->NXM_NX_REG3[4..7])",
    ),
    (
        "learn(table=3,limit=10,result_dst=NXM_NX_REG4[5],eth_type=0x800,NXM_NX_REG5[0..7]=0x2a)",
        "ffff004000002320002d000000008000000000000000000000040300000000000000000a0005000000010804201008000000060200002008002a00010a040000",
        "learn(table=3,limit=10,result_dst=NXM_NX_REG4[5],eth_type=0x800,NXM_NX_REG5[0..7]=0x2a)",
    ),
    (
        "learn(table=3,limit=10,NXM_NX_REG0[])",
        "ffff003800002320002d000000008000000000000000000000000300000000000000000a0000000000200001000400000001000400000000",
        "learn(table=3,limit=10,NXM_NX_REG0[])",
    ),
    (
        "learn(delete_learned,in_port=5,eth_dst=01:02:03:04:05:06,load:0->NXM_NX_REG0[])",
        "ffff00480000232000100000000080000000000000000000000201000000000020100005000000020000203001020304050600000206000028200000000000010004000000000000",
        "learn(table=1,delete_learned,in_port=5,eth_dst=01:02:03:04:05:06,load:0->NXM_NX_REG0[])",
    ),
    (
        "learn(table=1,priority=32768)",
        "ffff002000002320001000000000800000000000000000000000010000000000",
        "learn(table=1)",
    ),
    // OVN 23.03's hairpin flow (table 68), captured with its match `tcp,...`.
    (
        "learn(table=69,delete_learned,cookie=0x525475b2,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.100,nw_proto=6,NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],load:0x1->NXM_NX_REG10[7])",
        "ffff007800002320001000000000800000000000525475b20002450000000000004080000408000080000408000020100800000006020000002000000e04000000000e04000020200a0000640000100400002008000600000c01000000100000140200000000120200002801000100011404000700000000",
        "learn(table=69,delete_learned,cookie=0x525475b2,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.100,nw_proto=6,NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],load:0x1->NXM_NX_REG10[7])",
    ),
];

#[test]
fn learn_matches_ovs_ofctl_bytes_and_text() {
    for (text, bytes, printed) in VECTORS {
        let acts = parse_actions(text, None).unwrap_or_else(|e| panic!("{text}: {e}"));
        for v in [OFP10, OFP13, OFP15] {
            let out = encode_action_list(v, &acts).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            assert_eq!(to_hex(&out), *bytes, "{text} in version {v}");
            let back =
                decode_action_list(v, &hex(bytes)).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            // Text and wire give the same action (the fuzz target ofctl_text checks this).
            assert_eq!(back, acts, "{text}: parsed vs decoded in version {v}");
            assert_eq!(
                format_actions(&back),
                *printed,
                "{text} decoded in version {v}"
            );
            let again = parse_actions(printed, None).expect("printed text parses");
            let out2 = encode_action_list(v, &again).expect("encode");
            assert_eq!(to_hex(&out2), *bytes, "{printed} re-encoded");
        }
    }
}

fn decode(h: &str) -> Result<Vec<Action>, E> {
    decode_action_list(OFP13, &hex(h))
}

#[test]
fn malformed_learn_actions_fail_as_in_ovs() {
    // The pad byte after the table.
    let base = "ffff002000002320001000000000800000000000000000000000010000000000";
    assert!(decode(base).is_ok());
    let bad_pad = base.replacen("0000010000000000", "0000010100000000", 1);
    assert_eq!(decode(&bad_pad), Err(E::BadActionArgument));
    // Table 255.
    let t255 = base.replacen("0000010000000000", "0000ff0000000000", 1);
    assert_eq!(decode(&t255), Err(E::BadActionArgument));
    // An unknown flag (write-result in NXAST_LEARN).
    let flag = base.replacen("0000010000000000", "0004010000000000", 1);
    assert_eq!(decode(&flag), Err(E::BadActionArgument));
    // A spec running past the action: a field source needs 6 bytes, 6 more for the match.
    let short =
        "ffff00280000232000100000000080000000000000000000000001000000000000200001000400000000";
    assert!(matches!(decode(short), Err(E::BadActionLen)));
    // Non-zero bytes after the terminating zero header.
    let trailing =
        "ffff0028000023200010000000008000000000000000000000000100000000000000000000000001";
    assert_eq!(decode(trailing), Err(E::BadActionArgument));
    // An immediate output (destination type 2 with an immediate source).
    let imm_out =
        "ffff002800002320001000000000800000000000000000000000010000000000301000050000000000";
    assert_eq!(decode(imm_out), Err(E::BadActionArgument));
    // An unknown field header.
    let bad_field = "ffff003000002320001000000000800000000000000000000000010000000000002000ff04000000ff040000000000000000";
    assert!(matches!(decode(bad_field), Err(E::BadSetType)));
    // LEARN2 with a non-zero pad after the result offset.
    let l2 = "ffff003800002320002d000000008000000000000000000000000300000000000000000a0000000100200001000400000001000400000000";
    assert!(matches!(decode(l2), Err(E::Refused(_))));
}

#[test]
fn learn_text_errors_name_the_problem() {
    for (text, want) in [
        ("learn(table=255)", "table id 255"),
        ("learn(result_dst=NXM_NX_REG0[0..1])", "single bit"),
        ("learn(load:0x1ff->NXM_NX_REG0[0..7])", "does not fit"),
        ("learn(NXM_NX_REG0[0..7]=NXM_NX_REG1[])", "differ"),
        ("learn(load:NXM_NX_REG0[]->NXM_NX_REG1[0..7])", "wide"),
        ("learn(bogus_key=1)", "bogus_key"),
        ("learn(load:0x1)", "missing `->'"),
    ] {
        let e = parse_actions(text, None).expect_err(text);
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
}

#[test]
fn learn_is_refused_in_an_action_set() {
    let insts = openflow::text::parse_instructions("write_actions(learn(NXM_NX_REG0[]))", None);
    let refused = match insts {
        Err(_) => true,
        Ok(i) => openflow::actions::validate_instructions(&i, 0).is_err(),
    };
    assert!(refused);
}
