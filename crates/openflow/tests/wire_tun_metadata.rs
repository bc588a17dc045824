//! `tun_metadata0`..`63` on the wire, byte for byte as Debian's `ovs-ofctl` (OVS 3.1) sends
//! them: each vector is `ovs-ofctl -O OpenFlow10|13|15 add-flow` of the flow text next to
//! it, captured by a fake switch on a unix socket. Each must decode to that flow (as ferrovs
//! prints it), encode back to the same bytes, and the text must parse to a flow that
//! encodes to the same bytes.
//!
//! What they pin: the payload is the shortest that holds value and mask (0 bytes for a zero
//! value), `move` and copy-field name the field with OVS's 124-byte bare header, and a
//! write before OpenFlow 1.5 that needs a mask (or any write over 1.0) is a `reg_load2`,
//! never a `reg_load`.

use openflow::text::{format_instructions, format_match, parse_flow};
use openflow::wire::{decode_frame, encode, Message, NxMessage, OFP10, OFP13, OFP15};
use openflow::FlowModCommand;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// OVN's flows: the logical port in a 4-byte Geneve option.
const OVN: &str = "in_port=1,tun_id=0x1,tun_metadata0=0x10002/0x7fffffff,actions=set_field:0x10002/0x7fffffff->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:2";
const OVN10: &str = "0104008800000008000023200000000d00000000000000000000000000008000ffffffffffff0000001e00000000000000000002000100012008000000000000000100015108000100027fffffff0000ffff001800002320002100015108000100027fffffff0000ffff0018000023200006000f0000001000011c040001507c0000000800020000";
const OVN13: &str = "040e00a000000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff0000000000010024800000040000000180004c08000000000000000100015108000100027fffffff000000000004004800000000ffff001800002320002100015108000100027fffffff0000ffff0018000023200006000f0000001000011c040001507c00000010000000020000000000000000";
const OVN15: &str = "060e009800000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff0000000000010024800000040000000180004c08000000000000000100015108000100027fffffff0000000000040040000000000019001000015108000100027fffffff001c0018000f00000010000000011c040001507c0000000000000010000000020000000000000000";

/// Short payloads, the last index, `load` with and without a mask.
const SHORT: &str = "tun_metadata0=0x1/0xff,tun_metadata1=0x1,tun_metadata63=0x123456,actions=set_field:0x1->tun_metadata3,load:0x5->NXM_NX_TUN_METADATA4[0..7],move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14]";
const SHORT10: &str = "0104008000000008000023200000000d00000000000000000000000000008000ffffffffffff000000120000000000000001510201ff00015201010001ce03123456000000000000ffff0010000023200021000156010100ffff00100000232000210001590205ffffff0018000023200006000f001000000001507c00011c04";
const SHORT13: &str = "040e008800000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff00000000000100160001510201ff00015201010001ce031234560000000400400000000000190010000156010100000000000000ffff00100000232000210001590205ffffff0018000023200006000f001000000001507c00011c04";
const SHORT15: &str = "060e008800000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff00000000000100160001510201ff00015201010001ce031234560000000400400000000000190010000156010100000000000000001900100001590205ff000000000000001c0018000f0010000000000001507c00011c0400000000";

/// Zero values (an empty payload) and a 16-byte masked write.
const ZERO: &str = "tun_metadata0=0,tun_metadata2=0/0xff00,actions=set_field:0->tun_metadata1,load:1->NXM_NX_TUN_METADATA4[100..120]";
const ZERO10: &str = "0104008000000008000023200000000d00000000000000000000000000008000ffffffffffff0000000c00000000000000015000000155040000ff0000000000ffff0010000023200021000152000000ffff0030000023200021000159200000001000000000000000000000000001fffff00000000000000000000000000000";
const ZERO13: &str = "040e008000000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001001000015000000155040000ff0000040040000000000019000800015200ffff0030000023200021000159200000001000000000000000000000000001fffff00000000000000000000000000000";
const ZERO15: &str = "060e007800000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001001000015000000155040000ff000004003800000000001900080001520000190028000159200000001000000000000000000000000001fffff0000000000000000000000000";

fn check(text: &str, vectors: [&str; 3], want_match: &str, want_actions: &str) {
    for (v, version) in vectors.into_iter().zip([OFP10, OFP13, OFP15]) {
        let bytes = hex(v);
        let xid = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let (fm, nx) = match decode_frame(&bytes) {
            Ok((_, Message::FlowMod(fm), _)) => (fm, false),
            Ok((_, Message::Nx(NxMessage::FlowMod(fm)), _)) => (fm, true),
            other => panic!("version {version}: not a flow_mod: {other:?}"),
        };
        assert_eq!(
            format_match(&fm.match_, None),
            want_match,
            "version {version}"
        );
        assert_eq!(
            format_instructions(&fm.instructions),
            want_actions,
            "version {version}"
        );
        let wrap = |fm| {
            if nx {
                Message::Nx(NxMessage::FlowMod(fm))
            } else {
                Message::FlowMod(fm)
            }
        };
        assert_eq!(
            encode(&wrap(fm), version, xid).unwrap(),
            bytes,
            "version {version}"
        );
        let parsed = parse_flow(text, FlowModCommand::Add).expect("text parses");
        assert_eq!(
            encode(&wrap(parsed), version, xid).unwrap(),
            bytes,
            "text, version {version}"
        );
    }
}

#[test]
fn ovn_geneve_option_flows_byte_exact() {
    check(
        OVN,
        [OVN10, OVN13, OVN15],
        "tun_id=0x1,tun_metadata0=0x10002/0x7fffffff,in_port=1",
        "set_field:0x10002/0x7fffffff->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:2",
    );
}

#[test]
fn short_payloads_byte_exact() {
    check(
        SHORT,
        [SHORT10, SHORT13, SHORT15],
        "tun_metadata0=0x1/0xff,tun_metadata1=0x1,tun_metadata63=0x123456",
        "set_field:0x1->tun_metadata3,set_field:0x5/0xff->tun_metadata4,move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14]",
    );
}

#[test]
fn zero_values_byte_exact() {
    check(
        ZERO,
        [ZERO10, ZERO13, ZERO15],
        "tun_metadata0=0,tun_metadata2=0/0xff00",
        "set_field:0->tun_metadata1,set_field:0x10000000000000000000000000/0x1fffff0000000000000000000000000->tun_metadata4",
    );
}

#[test]
fn text_round_trips_and_refusals() {
    for text in [
        "tun_metadata0=0x1/0xff,tun_metadata5=0xffffffffffffffffffffffffffffffff,actions=move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],move:NXM_NX_TUN_METADATA1[]->NXM_NX_XXREG0[]",
        "tun_metadata63=0,actions=set_field:0x10002/0x7fffffff->tun_metadata0,push:NXM_NX_TUN_METADATA2[0..31],pop:NXM_NX_TUN_METADATA3[8..15]",
    ] {
        let fm = parse_flow(text, FlowModCommand::Add).expect(text);
        let again = openflow::text::format_flow(&fm);
        assert_eq!(parse_flow(&again, FlowModCommand::Add).expect(&again), fm);
    }
    // As ovs-ofctl: no tun_metadata64; a value must fit (ferrovs: in 16 bytes).
    for bad in [
        "tun_metadata64=1,actions=drop",
        "tun_metadata0=0x102030405060708090a0b0c0d0e0f1011,actions=drop",
        "actions=move:NXM_NX_TUN_METADATA0[0..128]->NXM_NX_XXREG0[]",
    ] {
        assert!(parse_flow(bad, FlowModCommand::Add).is_err(), "{bad}");
    }
}

/// An OpenFlow 1.3 add with this OXM list as its match and no instructions.
fn flow_mod13(tlvs: &[u8]) -> Vec<u8> {
    let mut b = hex(OVN13)[..48].to_vec();
    b.extend_from_slice(&[0, 1]);
    b.extend_from_slice(&(4 + tlvs.len() as u16).to_be_bytes());
    b.extend_from_slice(tlvs);
    while !b.len().is_multiple_of(8) {
        b.push(0);
    }
    let len = b.len() as u16;
    b[2..4].copy_from_slice(&len.to_be_bytes());
    b
}

#[test]
fn payloads_the_model_cannot_hold_are_refused() {
    use openflow::messages::err::bad_match;
    let decode = |tlvs: &[u8]| decode_frame(&flow_mod13(tlvs)).map(|(_, m, _)| m);
    // 17 bytes with a zero first byte: the value fits.
    let mut ok = vec![0x00, 0x01, 0x50, 17];
    ok.extend_from_slice(&[0; 16]);
    ok.push(7);
    match decode(&ok) {
        Ok(Message::FlowMod(fm)) => assert_eq!(format_match(&fm.match_, None), "tun_metadata0=0x7"),
        other => panic!("{other:?}"),
    }
    // A non-zero 17th byte from the right does not.
    let mut wide = ok.clone();
    wide[4] = 1;
    let e = decode(&wide).expect_err("too wide");
    assert_eq!(
        e.to_of_error(),
        openflow::OfError::bad_match(bad_match::BAD_VALUE)
    );
    // 125 bytes is longer than any option.
    let mut long = vec![0x00, 0x01, 0x50, 125];
    long.extend_from_slice(&[0; 125]);
    let e = decode(&long).expect_err("too long");
    assert_eq!(
        e.to_of_error(),
        openflow::OfError::bad_match(bad_match::BAD_LEN)
    );
}

#[test]
fn a_switch_sends_options_at_their_mapped_length() {
    use openflow::tun_metadata::with_map_lengths;
    let fm = parse_flow(
        "tun_metadata0=0x1/0xff,tun_metadata1=0x10002/0xffffffff,tun_metadata2=0x5,actions=drop",
        FlowModCommand::Add,
    )
    .expect("flow");
    let mut lens = [0u8; 64];
    lens[..3].copy_from_slice(&[4, 4, 8]);
    let bytes =
        with_map_lengths(lens, || encode(&Message::FlowMod(fm.clone()), OFP13, 1)).expect("encode");
    // Four bytes masked; a mask over the whole option is no mask; eight bytes exact.
    let want = hex(concat!(
        "0001510800000001000000ff",
        "0001520400010002",
        "000154080000000000000005"
    ));
    let has = |b: &[u8], w: &[u8]| b.windows(w.len()).any(|x| x == w);
    assert!(has(&bytes, &want), "{bytes:02x?}");
    // Outside it, the shortest forms, as ovs-ofctl sends them.
    let plain = encode(&Message::FlowMod(fm), OFP13, 1).expect("encode");
    assert!(has(&plain, &hex("0001510201ff")), "{plain:02x?}");
}
