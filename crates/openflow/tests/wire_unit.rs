//! Exact-byte tests of the wire codec's individual decisions: framing, error mapping,
//! OpenFlow 1.0 wildcards, NXM's VLAN TCI, Nicira messages, version-specific layouts.

use openflow::actions::{Action, Instruction, OFPP_CONTROLLER, OFPP_LOCAL};
use openflow::messages::err::flow_mod_failed;
use openflow::messages::err::{bad_action, bad_instruction, bad_match, bad_request};
use openflow::messages::{FlowMod, FlowModCommand, FlowModFlags, OfError};
use openflow::oxm::Field;
use openflow::wire::multipart::{MpRequest, MultipartRequest};
use openflow::wire::{
    decode, decode_frame, encode, error_reply, frame_len, of_error_to_wire, split, DecodeError,
    EncodeError, Hello, Message, NxMessage, OFP10, OFP13, OFP14, OFP15,
};
use openflow::Match;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn framing() {
    assert_eq!(frame_len(&[4, 0, 0]), Ok(None));
    assert_eq!(
        frame_len(&[4, 0, 0, 7, 0, 0, 0, 0]),
        Err(DecodeError::BadLength)
    );
    assert_eq!(frame_len(&[4, 0, 0, 16, 0, 0, 0, 0]), Ok(None));
    let hello = encode(&Message::Hello(Hello::default()), OFP13, 1).unwrap();
    let barrier = encode(&Message::BarrierRequest, OFP13, 2).unwrap();
    let mut buf = hello.clone();
    buf.extend_from_slice(&barrier);
    buf.extend_from_slice(&barrier[..5]);
    let (msgs, used) = split(&buf).unwrap();
    assert_eq!(msgs, vec![&hello[..], &barrier[..]]);
    assert_eq!(used, hello.len() + barrier.len());
    assert_eq!(decode(&buf[used..]), Err(DecodeError::Truncated));
}

#[test]
fn hello_bitmap_and_any_version() {
    let h = Hello::for_versions(&[OFP10, OFP13, OFP15]);
    let b = encode(&Message::Hello(h.clone()), OFP15, 9).unwrap();
    assert_eq!(b, hex("06 00 0010 00000009 0001 0008 00000052"));
    let (hd, m, _) = decode_frame(&b).unwrap();
    assert_eq!((hd.version, hd.xid), (OFP15, 9));
    assert_eq!(m, Message::Hello(h.clone()));
    assert!(h.supports(OFP15, OFP13) && !h.supports(OFP15, OFP14));
    // A hello from a future version still decodes (negotiation needs it).
    let (m, _) = decode(&hex("09 00 0008 00000001")).unwrap();
    assert!(matches!(m, Message::Hello(Hello { bitmap: None })));
    // Anything else from an unknown version is BAD_VERSION.
    let e = decode(&hex("09 05 0008 00000001")).unwrap_err();
    assert_eq!(e, DecodeError::BadVersion(9));
    assert_eq!(
        e.to_of_error(),
        OfError::bad_request(bad_request::BAD_VERSION)
    );
}

#[test]
fn error_mapping() {
    let cases = [
        (
            hex("04 63 0008 00000000"),
            OfError::bad_request(bad_request::BAD_TYPE),
        ),
        (
            hex("04 14 0010 00000000 0000000000000000"),
            OfError::bad_request(bad_request::BAD_LEN),
        ),
        (
            hex("04 12 0010 00000000 0063 0000 00000000"),
            OfError::bad_request(bad_request::BAD_MULTIPART),
        ),
    ];
    for (b, want) in cases {
        assert_eq!(decode(&b).unwrap_err().to_of_error(), want, "{b:02x?}");
    }
    // A flow_mod with an unknown instruction, an unknown action, an unknown field.
    let mut fm = FlowMod::new(FlowModCommand::Add);
    fm.instructions = vec![Instruction::GotoTable(1)];
    let mut b = encode(&Message::FlowMod(fm.clone()), OFP13, 1).unwrap();
    let n = b.len();
    b[n - 8..n - 6].copy_from_slice(&[0, 9]);
    assert_eq!(
        decode(&b).unwrap_err().to_of_error(),
        OfError::bad_instruction(bad_instruction::UNKNOWN_INST)
    );
    fm.instructions = vec![Instruction::ApplyActions(vec![Action::PopVlan])];
    let mut b = encode(&Message::FlowMod(fm.clone()), OFP13, 1).unwrap();
    let n = b.len();
    b[n - 8..n - 6].copy_from_slice(&[0, 99]);
    assert_eq!(
        decode(&b).unwrap_err().to_of_error(),
        OfError::bad_action(bad_action::BAD_TYPE)
    );
    fm.instructions.clear();
    fm.match_ = Match::new().with(Field::EthType, 0x800);
    let mut b = encode(&Message::FlowMod(fm), OFP13, 1).unwrap();
    // The OXM header's field byte: eth_type (5) -> 100.
    b[54] = 100 << 1;
    assert_eq!(
        decode(&b).unwrap_err().to_of_error(),
        OfError::bad_match(bad_match::BAD_FIELD)
    );
    // OpenFlow 1.0 numbering.
    assert_eq!(of_error_to_wire(OfError::bad_action(4), OFP10), (2, 4));
    assert_eq!(of_error_to_wire(OfError::flow_mod_failed(6), OFP10), (3, 4));
    assert_eq!(of_error_to_wire(OfError::bad_match(6), OFP13), (4, 6));
    // The request goes back whole, as OVS sends it; only what would pass 64 KiB is cut.
    let req = [0u8; 100];
    match error_reply(OfError::bad_request(6), OFP13, &req) {
        Message::Error(e) => assert_eq!((e.type_, e.code, e.data.len()), (1, 6, 100)),
        _ => unreachable!(),
    }
    let big = vec![0u8; 65535];
    let m = error_reply(OfError::bad_request(6), OFP13, &big);
    assert!(encode(&m, OFP13, 1).is_ok_and(|b| b.len() <= 65535));
    let m = error_reply(OfError::nx(0), OFP10, &big);
    assert!(encode(&m, OFP10, 1).is_ok_and(|b| b.len() <= 65535));
}

#[test]
fn of10_flow_mod_bytes() {
    let mut fm = FlowMod::new(FlowModCommand::Add);
    fm.priority = 100;
    fm.match_ = Match::new()
        .with(Field::InPort, 1)
        .with(Field::EthType, 0x800)
        .with_masked(Field::Ipv4Dst, 0x0a000000, 0xff000000);
    fm.instructions = vec![Instruction::ApplyActions(vec![
        Action::output(OFPP_LOCAL),
        Action::DecNwTtl,
    ])];
    let b = encode(&Message::FlowMod(fm.clone()), OFP10, 3).unwrap();
    // wildcards: all but IN_PORT and DL_TYPE, nw_src /0 (32), nw_dst /8 (24 wildcarded).
    assert_eq!(&b[8..12], &hex("00 36 20 ee")[..]);
    assert_eq!(&b[72..80], &hex("0000 0008 fffe 0000")[..]);
    assert_eq!(&b[80..96], &hex("ffff 0010 00002320 0012 000000000000")[..]);
    // A 1.0 add always resets counts: it reads back with reset_counts (see below).
    let mut back = fm.clone();
    back.flags = FlowModFlags::RESET_COUNTS;
    assert_eq!(decode(&b).unwrap().0, Message::FlowMod(back));
    // What OpenFlow 1.0 cannot say is an encode error, not a silent loss: a table other
    // than the one the command implies (found by fuzzing: table=5 came back as table 0)...
    let mut other = fm.clone();
    other.table_id = 5;
    assert_eq!(
        encode(&Message::FlowMod(other), OFP10, 3),
        Err(EncodeError::Unrepresentable("table_id"))
    );
    // ... while a modify or delete means every table.
    let mut del = FlowMod::new(FlowModCommand::Delete);
    del.table_id = 0xff;
    let b = encode(&Message::FlowMod(del.clone()), OFP10, 3).unwrap();
    assert_eq!(decode(&b).unwrap().0, Message::FlowMod(del));
    // ... L3/L4 fields OpenFlow 1.0 reads only for IPv4 or ARP (found by fuzzing: `tcp6`
    // came back as `ipv6`)...
    let mut v6 = FlowMod::new(FlowModCommand::Add);
    v6.match_ = Match::new()
        .with(Field::EthType, 0x86dd)
        .with(Field::IpProto, 6);
    assert!(matches!(
        encode(&Message::FlowMod(v6), OFP10, 3),
        Err(EncodeError::Unrepresentable(_))
    ));
    let mut arp = FlowMod::new(FlowModCommand::Add);
    arp.match_ = Match::new()
        .with(Field::EthType, 0x0800)
        .with(Field::ArpOp, 1);
    assert!(matches!(
        encode(&Message::FlowMod(arp), OFP10, 3),
        Err(EncodeError::Unrepresentable(_))
    ));
    // ... or fields it lacks altogether.
    fm.match_ = fm.match_.with(Field::Reg0, 1);
    assert!(matches!(
        encode(&Message::FlowMod(fm), OFP10, 3),
        Err(EncodeError::Unrepresentable(_))
    ));
}

/// OpenFlow 1.0's `set_tp_src/dst` name no protocol: in a UDP or SCTP flow they decode as
/// that protocol's port fields (found by fuzzing the text syntax against the wire: a UDP flow
/// with `mod_tp_dst` came back as `tcp_dst`, which ofproto refuses as inconsistent).
#[test]
fn of10_set_tp_follows_the_flow_protocol() {
    for (proto, src, dst) in [
        (6, Field::TcpSrc, Field::TcpDst),
        (17, Field::UdpSrc, Field::UdpDst),
        (132, Field::SctpSrc, Field::SctpDst),
    ] {
        let mut fm = FlowMod::new(FlowModCommand::Add);
        // Implied by a 1.0 add, so it reads back.
        fm.flags = FlowModFlags::RESET_COUNTS;
        fm.match_ = Match::new()
            .with(Field::EthType, 0x800)
            .with(Field::IpProto, proto);
        fm.instructions = vec![Instruction::ApplyActions(vec![
            Action::set_field(src, 9),
            Action::set_field(dst, 53),
            Action::output(1),
        ])];
        let msg = Message::FlowMod(fm.clone());
        let b = encode(&msg, OFP10, 3).unwrap();
        assert_eq!(decode(&b).unwrap().0, msg, "nw_proto {proto}");
        let nx = Message::Nx(NxMessage::FlowMod(fm));
        let b = encode(&nx, OFP10, 3).unwrap();
        assert_eq!(decode(&b).unwrap().0, nx, "nw_proto {proto}");
    }
    // With no protocol in the match the actions stay TCP's.
    let mut fm = FlowMod::new(FlowModCommand::Add);
    fm.match_ = Match::new().with(Field::EthType, 0x800);
    fm.instructions = vec![Instruction::ApplyActions(vec![Action::set_field(
        Field::UdpSrc,
        9,
    )])];
    let b = encode(&Message::FlowMod(fm), OFP10, 3).unwrap();
    let Message::FlowMod(back) = decode(&b).unwrap().0 else {
        panic!("not a flow_mod");
    };
    assert_eq!(
        back.apply_actions(),
        Some(&[Action::set_field(Field::TcpSrc, 9)][..])
    );
}

#[test]
fn nxm_vlan_tci_mapping() {
    // NXT_FLOW_MOD with vlan_tci=0x1005/0x1fff (VID 5, any PCP) and one resubmit.
    let mut fm = FlowMod::new(FlowModCommand::Add);
    fm.table_id = 3;
    fm.flags = FlowModFlags::RESET_COUNTS;
    fm.match_ = Match::new().with(Field::VlanVid, 0x1005);
    fm.instructions = vec![Instruction::ApplyActions(vec![Action::Resubmit {
        in_port: None,
        table: Some(2),
        ct: false,
    }])];
    let m = Message::Nx(NxMessage::FlowMod(fm.clone()));
    let b = encode(&m, OFP10, 1).unwrap();
    // vendor, subtype 13, cookie, command (table 3 << 8 | ADD)
    assert_eq!(&b[8..16], &hex("00002320 0000000d")[..]);
    assert_eq!(&b[24..26], &hex("0300")[..]);
    // match_len 8: NXM_OF_VLAN_TCI_W = 0x00000904, value 0x1005, mask 0x1fff
    assert_eq!(&b[40..42], &hex("0008")[..]);
    assert_eq!(&b[48..56], &hex("00000904 1005 1fff")[..]);
    assert_eq!(decode(&b).unwrap().0, m);
    // vlan_tci=0 is "no tag"; 0x6000/0xe000|0x1000 is "tag with PCP 3".
    let mk = |tlv: &str| {
        let body = hex(tlv);
        let mut b = hex("01 04 0000 00000000 00002320 0000000d");
        b.extend_from_slice(&hex(
            "0000000000000000 0000 0000 0000 8000 ffffffff ffff 0000",
        ));
        b.extend_from_slice(&(body.len() as u16).to_be_bytes());
        b.extend_from_slice(&[0; 6]);
        b.extend_from_slice(&body);
        while !b.len().is_multiple_of(8) {
            b.push(0);
        }
        let l = (b.len() as u16).to_be_bytes();
        b[2..4].copy_from_slice(&l);
        match decode(&b).unwrap().0 {
            Message::Nx(NxMessage::FlowMod(f)) => f.match_,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(mk("00000802 0000"), Match::new().with(Field::VlanVid, 0));
    assert_eq!(
        mk("00000904 7000 f000"),
        Match::new()
            .with_masked(Field::VlanVid, 0x1000, 0x1000)
            .with(Field::VlanPcp, 3)
    );
}

#[test]
fn nicira_negotiation_messages() {
    let cases = [
        (NxMessage::SetFlowFormat(2), "00000002"),
        (NxMessage::FlowModTableId(true), "0100000000000000"),
        (NxMessage::SetPacketInFormat(1), "00000001"),
        (NxMessage::SetControllerId(7), "000000000000 0007"),
    ];
    for (m, body) in cases {
        let b = encode(&Message::Nx(m.clone()), OFP10, 5).unwrap();
        assert_eq!(&b[16..], &hex(body)[..]);
        assert_eq!(decode(&b).unwrap().0, Message::Nx(m));
    }
    // An unknown Nicira subtype is BAD_EXP_TYPE.
    let b = hex("01 04 0010 00000000 00002320 000000ff");
    assert_eq!(
        decode(&b).unwrap_err().to_of_error(),
        OfError::bad_request(bad_request::BAD_EXP_TYPE)
    );
}

#[test]
fn nx_flow_stats_request() {
    let r = Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MpRequest::NxFlow(openflow::wire::multipart::FlowStatsRequest {
            table_id: 0xff,
            out_port: openflow::actions::OFPP_ANY,
            out_group: openflow::actions::OFPG_ANY,
            cookie: 0,
            cookie_mask: 0,
            match_: Match::new(),
        }),
    });
    let b = encode(&r, OFP10, 1).unwrap();
    assert_eq!(
        b,
        hex("01 10 0020 00000001 ffff 0000 00002320 00000000 00000000 ffff 0000 ff 000000")
    );
    assert_eq!(decode(&b).unwrap().0, r);
}

#[test]
fn packet_out_versions() {
    let p = openflow::wire::PacketOut {
        buffer_id: 0xffff_ffff,
        in_port: OFPP_CONTROLLER,
        match_: Match::new(),
        actions: vec![Action::output(1)],
        data: vec![1, 2, 3],
    };
    let m = Message::PacketOut(p);
    for v in [OFP10, OFP13, OFP14, OFP15] {
        let b = encode(&m, v, 1).unwrap();
        assert_eq!(decode(&b).unwrap().0, m, "version {v}");
    }
}

#[test]
fn not_in_version() {
    let g = openflow::messages::GroupMod {
        command: openflow::messages::GroupModCommand::Add,
        group_type: openflow::messages::GroupType::All,
        group_id: 1,
        buckets: vec![],
    };
    // OpenFlow 1.0 has group_mod only as Nicira's NXT_GROUP_MOD (see wire_nx_groups.rs).
    assert!(matches!(
        encode(&Message::GroupMod(g), OFP10, 1),
        Ok(b) if b[1] == 4 && b[8..16] == [0, 0, 0x23, 0x20, 0, 0, 0, 31]
    ));
    assert!(matches!(
        encode(&Message::TableMod(Default::default()), OFP10, 1),
        Err(EncodeError::NotInVersion(_))
    ));
    assert!(matches!(
        encode(&Message::BarrierRequest, 3, 1),
        Err(EncodeError::BadVersion(3))
    ));
}

/// Found by the openflow_of15 fuzz target: an OpenFlow 1.5 flow_mod with two meter
/// instructions decoded, re-encoded as a leading meter action plus a meter instruction, and
/// came back as a different flow. OpenFlow 1.5 has no meter instruction: refused, as by OVS;
/// and a model with two meters has no OpenFlow 1.5 encoding.
#[test]
fn openflow15_refuses_the_meter_instruction() {
    use openflow::wire::{decode, encode, OFP13, OFP15};
    let mut msg = vec![
        0x04, 0x0e, 0x00, 0x48, 0, 0, 0, 1, // header (length patched below)
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // cookie, cookie mask
        0, 0, 0, 0, 0, 0, 0, 100, // table, command, idle and hard timeouts, priority
        0xff, 0xff, 0xff, 0xff, // buffer id
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0,
        0, // out port/group, flags, pad
        0, 1, 0, 4, 0, 0, 0, 0, // empty OXM match, padded to 8
        0, 6, 0, 8, 0, 0, 0, 1, // meter instruction, meter 1
        0, 6, 0, 8, 0, 0, 0, 2, // meter instruction, meter 2
    ];
    let len = msg.len() as u16;
    msg[2..4].copy_from_slice(&len.to_be_bytes());
    // OpenFlow 1.3: decodes (the validator refuses the duplicate when a switch applies it).
    let (m13, _) = decode(&msg).expect("OpenFlow 1.3 has the meter instruction");
    assert!(
        encode(&m13, OFP15, 1).is_err(),
        "two meters have no OpenFlow 1.5 form"
    );
    // OpenFlow 1.5: refused.
    msg[0] = OFP15;
    assert!(decode(&msg).is_err());
    let _ = OFP13;
}

/// Flow_mod flags per version, as OVS 3.1 decodes them (checked against ovs-vswitchd with raw
/// flow_mods): 1.0's bit 2 is `emerg` (refused: there is no emergency cache), a 1.0 add
/// implies `reset_counts`, and bits a version does not define are BAD_FLAGS (in 1.0 as
/// Nicira's vendor error 3/258, OVS's code for it).
#[test]
fn flow_mod_flags_per_version() {
    let flags_at =
        |b: &mut Vec<u8>, at: usize, f: u16| b[at..at + 2].copy_from_slice(&f.to_be_bytes());
    let refused = |b: &[u8]| decode(b).unwrap_err().to_of_error();
    // OpenFlow 1.0: flags at byte 70.
    let add = FlowMod::new(FlowModCommand::Add);
    let b10 = encode(&Message::FlowMod(add.clone()), OFP10, 3).unwrap();
    assert_eq!(&b10[70..72], &[0, 0]);
    let mut b = b10.clone();
    flags_at(&mut b, 70, 0x3);
    match decode(&b).unwrap().0 {
        Message::FlowMod(f) => assert_eq!(
            f.flags,
            FlowModFlags::SEND_FLOW_REM | FlowModFlags::CHECK_OVERLAP | FlowModFlags::RESET_COUNTS
        ),
        m => panic!("{m:?}"),
    }
    let mut modify = FlowMod::new(FlowModCommand::Modify);
    modify.table_id = 0xff;
    let bm = encode(&Message::FlowMod(modify.clone()), OFP10, 3).unwrap();
    assert_eq!(decode(&bm).unwrap().0, Message::FlowMod(modify));
    for bad in [0x8, 0x10, 0x20, 0x8000] {
        let mut b = b10.clone();
        flags_at(&mut b, 70, bad);
        let e = refused(&b);
        assert_eq!(
            e,
            OfError::flow_mod_failed(flow_mod_failed::BAD_FLAGS),
            "{bad:#x}"
        );
        match error_reply(e, OFP10, &b) {
            Message::Error(m) => {
                assert_eq!((m.type_, m.code), (0xb0c2, 0));
                assert_eq!(&m.data[..8], &hex("00002320 0003 0102")[..]);
            }
            m => panic!("{m:?}"),
        }
    }
    let mut b = b10.clone();
    flags_at(&mut b, 70, 0x4);
    assert_eq!(
        refused(&b),
        OfError::flow_mod_failed(flow_mod_failed::TABLE_FULL)
    );
    assert_eq!(of_error_to_wire(refused(&b), OFP10), (3, 0));
    let mut idle = add.clone();
    idle.idle_timeout = 5;
    let mut b = encode(&Message::FlowMod(idle), OFP10, 3).unwrap();
    flags_at(&mut b, 70, 0x4);
    assert_eq!(of_error_to_wire(refused(&b), OFP10), (3, 3));
    // reset_counts is implied in 1.0; the counting flags cannot be said there.
    let mut counts = add.clone();
    counts.flags = FlowModFlags::RESET_COUNTS;
    let b = encode(&Message::FlowMod(counts.clone()), OFP10, 3).unwrap();
    assert_eq!(&b[70..72], &[0, 0]);
    counts.flags = FlowModFlags::NO_PKT_COUNTS;
    assert!(matches!(
        encode(&Message::FlowMod(counts), OFP10, 3),
        Err(EncodeError::Unrepresentable(_))
    ));
    // OpenFlow 1.3: flags at byte 44; all five defined bits travel as they are.
    let mut b13 = encode(&Message::FlowMod(add.clone()), OFP13, 3).unwrap();
    flags_at(&mut b13, 44, 0x1f);
    match decode(&b13).unwrap().0 {
        Message::FlowMod(f) => assert_eq!(f.flags, FlowModFlags::ALL),
        m => panic!("{m:?}"),
    }
    for bad in [0x20, 0x40, 0x8000] {
        flags_at(&mut b13, 44, bad);
        assert_eq!(
            refused(&b13),
            OfError::flow_mod_failed(flow_mod_failed::BAD_FLAGS)
        );
        assert_eq!(of_error_to_wire(refused(&b13), OFP13), (5, 7));
    }
}

/// Found by the fuzz campaign: an OpenFlow 1.0 flow_mod whose `reg_load2` sets `vlan_pcp`
/// to 8 decoded, and went back out as a `set_vlan_pcp` 8 that does not decode. A value 1.0's
/// own set action cannot say goes back out as the `reg_load2` it came as (the switch refuses
/// it when it checks the flow, `OFPBAC_BAD_SET_ARGUMENT`, as OVS does).
#[test]
fn of10_set_actions_carry_only_values_they_can_say() {
    let b = hex(
        "010e 0060 0000 3a02 0038 20ff 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
         0000 00fc ffff ffff ffff ff00 0000 0000 0000 0000 0000 0000 0000 0000 0000 8000
         ffef ffff ffff 0000 ffff 0018 0000 2320 0021 8000 0e01 0806 2006 0000 ffff ff00",
    );
    let (m, _) = decode(&b).expect("decodes");
    let back = encode(&m, OFP10, 1).expect("encodes");
    assert_eq!(decode(&back).expect("decodes again").0, m);
    for (field, value, own) in [
        (Field::VlanPcp, 7, true),
        (Field::VlanPcp, 8, false),
        (Field::VlanVid, 0x1005, true),
        (Field::VlanVid, 5, false),
        (Field::IpDscp, 63, true),
        (Field::IpDscp, 64, false),
    ] {
        let mut fm = FlowMod::new(FlowModCommand::Add);
        fm.flags = FlowModFlags::RESET_COUNTS;
        fm.instructions = vec![Instruction::ApplyActions(vec![Action::set_field(
            field, value,
        )])];
        let m = Message::FlowMod(fm);
        let b = encode(&m, OFP10, 1).unwrap();
        // OpenFlow 1.0's own actions have types below 12; a vendor action is 0xffff.
        assert_eq!(b[72..74] != [0xff, 0xff], own, "{field:?} {value:#x}");
        assert_eq!(decode(&b).unwrap().0, m, "{field:?} {value:#x}");
    }
}

#[test]
fn queue_errors_in_both_numberings() {
    use openflow::messages::err::queue_op_failed;
    let e = OfError::queue_op_failed(queue_op_failed::BAD_QUEUE);
    assert_eq!(e.to_string(), "OFPQOFC_BAD_QUEUE");
    let req = hex("01 14 0010 00000007 0001 000000000000");
    // OpenFlow 1.0 numbers the queue errors' type 5, later versions 9.
    let got = encode(&error_reply(e, OFP10, &req), OFP10, 7).unwrap();
    assert_eq!(&got[8..12], &[0, 5, 0, 1]);
    let req = hex("04 16 0010 00000007 00000001 00000000");
    let got = encode(&error_reply(e, OFP13, &req), OFP13, 7).unwrap();
    assert_eq!(&got[8..12], &[0, 9, 0, 1]);
}
