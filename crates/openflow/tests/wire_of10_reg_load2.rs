//! OpenFlow 1.0 has no set-field: OVS writes every whole-field write without a 1.0 action
//! of its own (`set_field:5->reg0`, `load:5->NXM_NX_REG0[]`) as a Nicira `reg_load`, which
//! decodes as a load with the field's whole mask. An unmasked `reg_load2` of such a field
//! (found by the `openflow_of10` fuzz target with `in_port`) must decode to that same load,
//! or decode -> encode -> decode gives back a different action.

use openflow::oxm::Field;
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::{decode, encode, Message, OFP10, OFP13, OFP15};
use openflow::Action;

mod common;
use common::hex;

/// `reg_load2` of one OXM/NXM TLV, padded to 8.
fn reg_load2(tlv: &str) -> Vec<u8> {
    let n = 10 + tlv.len() / 2;
    let len = n.div_ceil(8) * 8;
    let mut b = hex(&format!("ffff{len:04x}000023200021{tlv}"));
    b.resize(len, 0);
    b
}

fn round_trip(v: u8, bytes: &[u8]) -> Vec<Action> {
    let a = decode_action_list(v, bytes).expect("decodes");
    let enc = encode_action_list(v, &a).expect("encodes");
    assert_eq!(decode_action_list(v, &enc).expect("re-decodes"), a, "v{v}");
    a
}

#[test]
fn an_unmasked_reg_load2_in_openflow10_is_a_whole_field_load() {
    let whole = |field: Field, value| Action::SetField {
        field,
        value,
        mask: Some(field.max()),
    };
    // OXM_OF_IN_PORT and NXM_OF_IN_PORT, reg0, pkt_mark.
    let cases = [
        ("8000000400000005", whole(Field::InPort, 5)),
        ("0000000200050000", whole(Field::InPort, 5)),
        ("0001000400000005", whole(Field::Reg0, 5)),
        ("0001420400000007", whole(Field::PktMark, 7)),
    ];
    for (tlv, want) in cases {
        assert_eq!(
            round_trip(OFP10, &reg_load2(tlv)),
            vec![want.clone()],
            "{tlv}"
        );
        // From OpenFlow 1.2 on a set-field says it: unmasked, as before.
        for v in [OFP13, OFP15] {
            let a = round_trip(v, &reg_load2(tlv));
            assert!(
                matches!(a[0], Action::SetField { mask: None, .. }),
                "{tlv} v{v}: {a:?}"
            );
        }
    }
    // A field with an OpenFlow 1.0 action of its own stays a plain write (it goes back out
    // as that action); one wider than a reg_load is the two loads it goes back out as.
    let eth_src = round_trip(OFP10, &reg_load2("800008060200000000010000"));
    assert!(matches!(eth_src[0], Action::SetField { mask: None, .. }));
    let xxreg0 = round_trip(
        OFP10,
        &reg_load2("0001de1000000000000000000000000000000005"),
    );
    let half = |value, mask| Action::SetField {
        field: Field::Xxreg0,
        value,
        mask: Some(mask),
    };
    assert_eq!(
        xxreg0,
        vec![
            half(5, u128::from(u64::MAX)),
            half(0, u128::from(u64::MAX) << 64)
        ]
    );
}

/// `reg_load` of `value` into bits `ofs..ofs+n` of the field with NXM header `hdr`.
fn reg_load(ofs: u16, n: u16, hdr: &str, value: u64) -> String {
    format!(
        "ffff001800002320 0007{:04x}{hdr}{value:016x}",
        (ofs << 6) | (n - 1)
    )
    .replace(' ', "")
}

/// OVS writes a set-field as one `reg_load` per contiguous run of its bits, at most 64
/// bits each, in OpenFlow 1.0 (and as a masked write in 1.1-1.4): so a whole 128-bit
/// write (`set_field:1->xxreg1` from OpenFlow 1.3) is `load:0x1->NXM_NX_XXREG1[0..63],
/// load:0->NXM_NX_XXREG1[64..127]`, and an 80-bit one two loads of 64 and 16 bits, as
/// ovs-ofctl shows both from ovs-vswitchd 3.1.
#[test]
fn a_wide_or_scattered_write_is_one_reg_load_per_run() {
    let sf = |field, value, mask| Action::SetField { field, value, mask };
    let xxreg1 = "0001e010";
    let ipv6_src = "00012610";
    let reg0 = "00010004";
    let cases = [
        (
            OFP10,
            sf(Field::Xxreg1, 1, None),
            reg_load(0, 64, xxreg1, 1) + &reg_load(64, 64, xxreg1, 0),
        ),
        (
            OFP13,
            sf(
                Field::Xxreg1,
                0xffff_ffff << 40,
                Some(((1u128 << 80) - 1) << 40),
            ),
            reg_load(40, 64, xxreg1, 0xffff_ffff) + &reg_load(104, 16, xxreg1, 0),
        ),
        (
            OFP10,
            sf(Field::Ipv6Src, 1, Some((0xffff << 48) | 1)),
            reg_load(0, 1, ipv6_src, 1) + &reg_load(48, 16, ipv6_src, 0),
        ),
        (
            OFP13,
            sf(Field::Reg0, 5, Some(0xf0f)),
            reg_load(0, 4, reg0, 5) + &reg_load(8, 4, reg0, 0),
        ),
    ];
    for (v, act, want) in cases {
        let enc = encode_action_list(v, std::slice::from_ref(&act)).expect("encodes");
        let got: String = enc.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want, "v{v} {act:?}");
        // Decoded, it is the loads, which encode to the same bytes.
        let back = round_trip(v, &enc);
        assert_eq!(back.len(), 2, "{back:?}");
        assert_eq!(encode_action_list(v, &back).expect("encodes"), enc);
    }
    // OpenFlow 1.5 says it as one set-field.
    let a = sf(Field::Xxreg1, 1, None);
    let enc = encode_action_list(OFP15, std::slice::from_ref(&a)).expect("encodes");
    assert_eq!(decode_action_list(OFP15, &enc).expect("decodes"), vec![a]);
}

/// The fuzz reproducer as a whole flow_mod (ovs-ofctl's OpenFlow 1.0 ADD with the action
/// replaced): decode, encode, decode gives the same message.
#[test]
fn the_flow_mod_round_trips() {
    let head = "010e006000000002003820ff0000000000000000000000000000000000000000\
                0000000000000000000000000000000000000000000000000000000000008000\
                ffffffffffff0000";
    let mut b = hex(head);
    b.extend_from_slice(&reg_load2("8000000400000005"));
    let (m, n) = decode(&b).expect("decodes");
    assert_eq!(n, b.len());
    assert!(matches!(m, Message::FlowMod(_)));
    let enc = encode(&m, OFP10, 2).expect("encodes");
    assert_eq!(decode(&enc).expect("re-decodes").0, m);
}
