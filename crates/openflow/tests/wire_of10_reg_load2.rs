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
    // as that action), and so does one wider than a reg_load (back out as a reg_load2).
    let eth_src = round_trip(OFP10, &reg_load2("800008060200000000010000"));
    assert!(matches!(eth_src[0], Action::SetField { mask: None, .. }));
    let xxreg0 = round_trip(
        OFP10,
        &reg_load2("0001de1000000000000000000000000000000005"),
    );
    assert!(matches!(xxreg0[0], Action::SetField { mask: None, .. }));
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
