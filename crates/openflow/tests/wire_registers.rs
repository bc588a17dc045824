//! Exact bytes of register matches and register actions as Debian's `ovs-ofctl` (OVS 3.1)
//! sends them, captured from `ovs-ofctl -O OpenFlow13|OpenFlow15 add-flow` of
//!
//! ```text
//! priority=40,reg0=0x80/0x80,reg1=5,reg3=0x1/0x1,reg9=7,xxreg3=0x1234,
//! actions=load:0x2->reg15,move:NXM_NX_REG14[]->NXM_NX_REG15[],
//! move:NXM_OF_IN_PORT[]->NXM_NX_REG8[0..15],push:NXM_OF_IN_PORT[],pop:NXM_NX_REG1[0..15],
//! set_field:0x5->xreg2,load:0x1->NXM_NX_REG10[7]
//! ```
//!
//! Over 1.5 the registers travel as packet registers (`OXM_OF_PKT_REG0`.., class 0x8001),
//! `move` as copy-field and `load` as set-field; over 1.3 as `NXM_NX_REG*`, Nicira's
//! `reg_move` and `reg_load`. Each must decode to the same flow and encode back to the
//! same bytes.

use openflow::actions::{Action, Instruction, Subfield};
use openflow::messages::err::bad_match;
use openflow::messages::OfError;
use openflow::oxm::Field;
use openflow::text::{format_instructions, format_match};
use openflow::wire::{decode_frame, encode, DecodeError, Message, OFP13, OFP15};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const OF15: &str = "060e012000000006000000000000000000000000000000000000000000000028\
    ffffffffffffffffffffffff00000000\
    00010058\
    80010110000000800000000500000080ffffffff\
    8001031000000000000000010000000000000001\
    80010910000000000000000700000000ffffffff\
    80010c080000000000000000\
    80010e080000000000001234\
    00040098 00000000\
    0019001000011e040000000200000000\
    001c00180020000000000000 00011c04 00011e04 00000000\
    001c00180010000000000000 00000002 00011004 00000000\
    ffff001800002320001b0000000000020010000000000000\
    ffff001800002320001c0000000102040010000000000000\
    00190010800104080000000000000005\
    00190010000115080000008000000080";

const OF13: &str = "040e012800000006000000000000000000000000000000000000000000000028\
    ffffffffffffffffffffffff00000000\
    0001004c\
    000101080000008000000080\
    0001020400000005\
    000107080000000100000001\
    0001120400000007\
    0001180400000000\
    00011a0400000000\
    00011c0400000000\
    00011e0400001234\
    00000000\
    000400a800000000\
    ffff0018000023200007001f00011e040000000000000002\
    ffff001800002320000600200000000000011c0400011e04\
    ffff00180000232000060010000000000000000200011004\
    ffff001800002320001b0000000000020010000000000000\
    ffff001800002320001c0000000102040010000000000000\
    00190010800104080000000000000005\
    ffff001800002320000701c0000114040000000000000001";

fn flow_mod(bytes: &[u8]) -> openflow::FlowMod {
    match decode_frame(bytes) {
        Ok((_, Message::FlowMod(fm), _)) => fm,
        other => panic!("not a flow_mod: {other:?}"),
    }
}

#[test]
fn openflow15_packet_registers_and_copy_field() {
    let bytes = hex(OF15);
    let fm = flow_mod(&bytes);
    assert_eq!(
        format_match(&fm.match_, None),
        "reg0=0x80/0x80,reg1=0x5,reg3=0x1/0x1,reg9=0x7,reg12=0,reg13=0,reg14=0,reg15=0x1234"
    );
    let Some(Instruction::ApplyActions(acts)) = fm.instructions.first() else {
        panic!("{:?}", fm.instructions)
    };
    assert_eq!(
        acts[2],
        Action::Move {
            src: Subfield {
                field: Field::InPort,
                ofs: 0,
                n_bits: 16
            },
            dst: Subfield {
                field: Field::Reg8,
                ofs: 0,
                n_bits: 16
            }
        }
    );
    assert_eq!(
        format_instructions(&fm.instructions),
        "set_field:0x2->reg15,move:NXM_NX_REG14[]->NXM_NX_REG15[],\
         move:NXM_OF_IN_PORT[]->NXM_NX_REG8[0..15],push:NXM_OF_IN_PORT[],\
         pop:NXM_NX_REG1[0..15],set_field:0x5->xreg2,set_field:0x80/0x80->reg10"
    );
    assert_eq!(encode(&Message::FlowMod(fm), OFP15, 6).unwrap(), bytes);
}

#[test]
fn openflow13_nicira_registers_reg_move_and_reg_load() {
    let bytes = hex(OF13);
    let fm = flow_mod(&bytes);
    assert_eq!(
        format_match(&fm.match_, None),
        "reg0=0x80/0x80,reg1=0x5,reg3=0x1/0x1,reg9=0x7,reg12=0,reg13=0,reg14=0,reg15=0x1234"
    );
    assert_eq!(
        format_instructions(&fm.instructions),
        "load:0x2->NXM_NX_REG15[],move:NXM_NX_REG14[]->NXM_NX_REG15[],\
         move:NXM_OF_IN_PORT[]->NXM_NX_REG8[0..15],push:NXM_OF_IN_PORT[],\
         pop:NXM_NX_REG1[0..15],set_field:0x5->xreg2,set_field:0x80/0x80->reg10"
    );
    assert_eq!(
        encode(&Message::FlowMod(fm.clone()), OFP13, 6).unwrap(),
        bytes
    );
    // The same flow re-encoded for OpenFlow 1.5 is what ovs-ofctl sends over 1.5.
    let of15 = hex(OF15);
    let again = encode(&Message::FlowMod(fm), OFP15, 6).unwrap();
    assert_eq!(again, of15);
}

#[test]
fn a_register_view_and_its_registers_are_one_match() {
    // PKT_REG0 and NXM_NX_REG1 both cover reg1: a duplicate, as OVS says.
    let dup = hex("00010018 80010008 0000000000000001 00010204 00000001");
    let mut m = bytes_to_flow_mod_with_match(&dup);
    assert_eq!(
        decode_frame(&m).err(),
        Some(DecodeError::Match(OfError::bad_match(bad_match::DUP_FIELD)))
    );
    // xxreg0 with a mask on reg2 only is a reg2 match.
    let one =
        hex("0001 0028 0001df20 00000000000000000000000500000000 0000000000000000ffffffff00000000");
    m = bytes_to_flow_mod_with_match(&one);
    let fm = flow_mod(&m);
    assert_eq!(format_match(&fm.match_, None), "reg2=0x5");
}

/// An OpenFlow 1.3 ADD flow_mod with this `ofp_match` (already padded) and no instructions.
fn bytes_to_flow_mod_with_match(m: &[u8]) -> Vec<u8> {
    let mut v = hex("040e0000 00000001 0000000000000000 0000000000000000 00 00 0000 0000 8000 ffffffff ffffffff ffffffff 0000 0000");
    v.extend_from_slice(m);
    let len = v.len() as u16;
    v[2..4].copy_from_slice(&len.to_be_bytes());
    v
}

/// `set_field:...->in_port` travels with the 16-bit `NXM_OF_IN_PORT` header, as OVS writes
/// it: OVS refuses `OXM_OF_IN_PORT` in a set-field (`OFPBAC_BAD_SET_ARGUMENT`), so a
/// dump-flows of OVN's `set_field:ANY->in_port` failed in ovs-ofctl. The bytes are ones
/// `ovs-ofctl ofp-print` decodes to these texts.
#[test]
fn set_field_in_port_uses_the_nxm_header() {
    for (text, action) in [
        (
            "set_field:ANY->in_port",
            "00190010 00000002 ffff0000 00000000",
        ),
        (
            "set_field:5->in_port",
            "00190010 00000002 00050000 00000000",
        ),
    ] {
        for (version, head, flags) in [
            (OFP15, "060e0050", "00000000"),
            (OFP13, "040e0050", "00000000"),
        ] {
            let bytes = hex(&format!(
                "{head}00000001 0000000000000000 0000000000000000 00000000 0000 8000 \
                 ffffffff ffffffff ffffffff {flags} 00010004 00000000 00040018 00000000 {action}"
            ));
            let (h, msg, _) = decode_frame(&bytes).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            let Message::FlowMod(fm) = &msg else {
                panic!("{text}: {msg:?}")
            };
            assert_eq!(format_instructions(&fm.instructions), text);
            assert_eq!(encode(&msg, version, h.xid).unwrap(), bytes, "{text}");
            let parsed = openflow::text::parse_flow(
                &format!("actions={text}"),
                openflow::FlowModCommand::Add,
            )
            .unwrap();
            assert_eq!(
                encode(&Message::FlowMod(parsed), version, 1).unwrap(),
                bytes,
                "{text}"
            );
        }
    }
}
