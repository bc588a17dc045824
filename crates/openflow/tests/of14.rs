//! Exact-byte and malformed-input tests for the OpenFlow 1.4/1.5 messages and their
//! OpenFlow 1.3 ONF forms: each new decoder gets a known-good encoding, a round trip, and
//! every truncation of it refused with a typed error.

use openflow::wire::msg::{bct, ONFT_BUNDLE_CONTROL, ONF_EXPERIMENTER_ID};
use openflow::wire::{decode_frame, encode, BundleAdd, BundleControl, DecodeError, Message};
use openflow::wire::{OFP13, OFP14, OFP15};

/// Decodes `bytes`, checks it re-encodes to the same bytes, and that every truncation of
/// the body (with the header's length adjusted) is an error, never a panic.
fn round_trip(bytes: &[u8]) -> Message {
    let (h, m, n) = decode_frame(bytes).expect("decodes");
    assert_eq!(n, bytes.len());
    assert_eq!(encode(&m, h.version, h.xid).expect("encodes"), bytes);
    for cut in 8..bytes.len() {
        let mut b = bytes[..cut].to_vec();
        b[2..4].copy_from_slice(&(cut as u16).to_be_bytes());
        if let Ok((_, m2, _)) = decode_frame(&b) {
            // A shorter valid message is possible (trailing properties); never the same.
            assert_ne!(m2, m, "cut at {cut}");
        }
        assert!(matches!(
            decode_frame(&bytes[..cut]),
            Err(DecodeError::Truncated)
        ));
    }
    m
}

#[test]
fn bundle_control_in_onf_form_for_openflow13() {
    let bc = Message::BundleControl(BundleControl {
        bundle_id: 7,
        ctrl_type: bct::COMMIT_REQUEST,
        flags: 3,
        props: Vec::new(),
    });
    let b13 = encode(&bc, OFP13, 9).expect("1.3");
    assert_eq!(b13[1], 4, "OFPT_EXPERIMENTER");
    assert_eq!(&b13[8..12], &ONF_EXPERIMENTER_ID.to_be_bytes());
    assert_eq!(&b13[12..16], &ONFT_BUNDLE_CONTROL.to_be_bytes());
    assert_eq!(&b13[16..], &[0, 0, 0, 7, 0, 4, 0, 3]);
    assert_eq!(round_trip(&b13), bc);
    let b14 = encode(&bc, OFP14, 9).expect("1.4");
    assert_eq!(b14[1], 33);
    assert_eq!(&b14[8..], &b13[16..]);
    assert!(encode(&bc, 1, 9).is_err(), "no bundles in 1.0");
}

#[test]
fn bundle_add_carries_a_whole_message() {
    let inner = encode(&Message::BarrierRequest, OFP15, 5).expect("inner");
    let add = Message::BundleAdd(BundleAdd {
        bundle_id: 1,
        flags: 1,
        message: inner,
        props: Vec::new(),
    });
    for v in [OFP13, OFP14, OFP15] {
        let b = encode(&add, v, 5).expect("encodes");
        assert_eq!(round_trip(&b), add);
    }
    // An inner length below the header's is refused.
    let mut b = encode(&add, OFP14, 5).expect("encodes");
    b[16 + 2..16 + 4].copy_from_slice(&4u16.to_be_bytes());
    assert!(decode_frame(&b).is_err());
}

use openflow::wire::multipart::{MpReply, MpRequest, MultipartReply, MultipartRequest, OxsStats};
use openflow::wire::of14::{
    BundleFeatures, ControllerStatus, FlowStats15, QueueDesc, RoleStatus, TableDesc, TableStatus,
};
use openflow::wire::Prop;

fn prop(type_: u16, data: &[u8]) -> Prop {
    Prop {
        type_,
        data: data.to_vec(),
    }
}

#[test]
fn role_status_layout() {
    let m = Message::RoleStatus(RoleStatus {
        role: 3,
        reason: 0,
        generation_id: 0x1234_5678_9abc_def0,
        props: Vec::new(),
    });
    let b = encode(&m, OFP14, 0).expect("encodes");
    assert_eq!(
        &b[8..],
        &[0, 0, 0, 3, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0]
    );
    assert_eq!(round_trip(&b), m);
    assert!(encode(&m, OFP13, 0).is_err(), "1.4+ only");
}

#[test]
fn table_status_and_desc_round_trip() {
    let table = TableDesc {
        table_id: 3,
        config: 8,
        props: vec![prop(3, &[20, 80, 100, 0])],
    };
    let m = Message::TableStatus(TableStatus { reason: 3, table });
    let b = encode(&m, OFP15, 0).expect("encodes");
    assert_eq!(&b[16..18], &[0, 16], "table desc length");
    assert_eq!(round_trip(&b), m);
    // A table desc whose length claims more than is there.
    let mut bad = b.clone();
    bad[16..18].copy_from_slice(&[0, 40]);
    assert!(decode_frame(&bad).is_err());
}

#[test]
fn requestforward_holds_exactly_one_message() {
    let inner = encode(&Message::BarrierRequest, OFP14, 77).expect("inner");
    let m = Message::RequestForward(inner.clone());
    let b = encode(&m, OFP14, 0).expect("encodes");
    assert_eq!(&b[8..], &inner[..]);
    assert_eq!(round_trip(&b), m);
    let mut extra = b.clone();
    extra.extend_from_slice(&[0; 8]);
    extra[2..4].copy_from_slice(&(b.len() as u16 + 8).to_be_bytes());
    assert!(
        decode_frame(&extra).is_err(),
        "bytes after the inner message"
    );
}

#[test]
fn new_multiparts_round_trip_and_refuse_truncation() {
    let reqs = [
        (OFP14, MpRequest::TableDesc),
        (
            OFP14,
            MpRequest::QueueDesc {
                port_no: 7,
                queue_id: 0xffff_ffff,
            },
        ),
        (OFP15, MpRequest::ControllerStatus),
        (
            OFP15,
            MpRequest::BundleFeatures(openflow::wire::of14::BundleFeaturesRequest {
                flags: 3,
                props: vec![prop(1, &[0; 12])],
            }),
        ),
    ];
    for (v, body) in reqs {
        let m = Message::MultipartRequest(MultipartRequest { flags: 0, body });
        round_trip(&encode(&m, v, 4).expect("encodes"));
    }
    let reps = [
        (
            OFP14,
            MpReply::TableDesc(vec![
                TableDesc::default(),
                TableDesc {
                    table_id: 1,
                    config: 4,
                    props: vec![prop(2, &[0, 0, 0, 7])],
                },
            ]),
        ),
        (
            OFP14,
            MpReply::QueueDesc(vec![QueueDesc {
                port_no: 1,
                queue_id: 2,
                props: vec![prop(1, &[1, 44, 0, 0])],
            }]),
        ),
        (
            OFP15,
            MpReply::ControllerStatus(vec![ControllerStatus {
                short_id: 1,
                role: 2,
                reason: 0,
                channel_status: 0,
                props: vec![prop(0, b"ptcp:6653")],
            }]),
        ),
        (
            OFP15,
            MpReply::BundleFeatures(BundleFeatures {
                capabilities: 3,
                props: Vec::new(),
            }),
        ),
        (
            OFP15,
            MpReply::FlowStats15(vec![FlowStats15 {
                table_id: 1,
                reason: 0,
                priority: 9,
                match_: openflow::Match::new(),
                stats: OxsStats {
                    duration_sec: 1,
                    duration_nsec: 2,
                    idle_time: Some((3, 4)),
                    flow_count: None,
                    packet_count: 5,
                    byte_count: 6,
                },
            }]),
        ),
    ];
    for (v, body) in reps {
        let m = Message::MultipartReply(MultipartReply { flags: 0, body });
        round_trip(&encode(&m, v, 4).expect("encodes"));
        assert!(encode(&m, OFP13, 4).is_err());
    }
    let cs = Message::ControllerStatus(ControllerStatus {
        short_id: 0,
        role: 1,
        reason: 1,
        channel_status: 1,
        props: Vec::new(),
    });
    round_trip(&encode(&cs, OFP15, 0).expect("encodes"));
    assert!(encode(&cs, OFP14, 0).is_err(), "1.5 only");
}

#[test]
fn flow_monitors_in_all_three_forms() {
    use openflow::actions::{Action, Instruction, OFPG_ANY, OFPP_ANY};
    use openflow::wire::monitor::{FlowMonitorRequest, FlowUpdate};
    use openflow::wire::OFP10;
    let m = openflow::Match::new().with(openflow::Field::EthType, 0x0800);
    let req = FlowMonitorRequest {
        monitor_id: 3,
        out_port: OFPP_ANY,
        out_group: OFPG_ANY,
        flags: 0x1f,
        table_id: 0xff,
        command: 0,
        match_: m.clone(),
    };
    let full = |event| FlowUpdate::Full {
        event,
        table_id: 1,
        reason: 2,
        idle_timeout: 3,
        hard_timeout: 4,
        priority: 5,
        cookie: 6,
        match_: m.clone(),
        instructions: vec![Instruction::ApplyActions(vec![Action::output(2)])],
    };
    let cases = [
        (
            OFP14,
            MpRequest::FlowMonitor(vec![req.clone(), req.clone()]),
            MpReply::FlowMonitor(vec![
                full(1),
                FlowUpdate::Abbrev { event: 4, xid: 9 },
                FlowUpdate::Marker { event: 5 },
            ]),
        ),
        (
            OFP10,
            MpRequest::NxFlowMonitor(vec![req.clone()]),
            MpReply::NxFlowMonitor(vec![full(0), FlowUpdate::Abbrev { event: 3, xid: 9 }]),
        ),
        (
            OFP13,
            MpRequest::OnfFlowMonitor(vec![req.clone()]),
            MpReply::OnfFlowMonitor(vec![full(2)]),
        ),
    ];
    for (v, rq, rp) in cases {
        let q = Message::MultipartRequest(MultipartRequest { flags: 0, body: rq });
        assert_eq!(round_trip(&encode(&q, v, 7).expect("request")), q);
        let p = Message::MultipartReply(MultipartReply { flags: 0, body: rp });
        assert_eq!(round_trip(&encode(&p, v, 7).expect("reply")), p);
    }
    // The ONF request as Debian's ovs-ofctl 3.1 sends it (`monitor BR watch:`).
    let onf: [u8; 48] = [
        4, 18, 0, 48, 0, 0, 0, 6, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x4f, 0x4e, 0x46, 0, 0, 0, 7, 0x4e,
        0, 0, 0, 0, 0, 63, 0, 4, 255, 255, 255, 255, 255, 0, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0,
    ];
    let Message::MultipartRequest(MultipartRequest {
        body: MpRequest::OnfFlowMonitor(v),
        ..
    }) = round_trip(&onf)
    else {
        panic!("not an ONF flow monitor");
    };
    assert_eq!(
        (v[0].flags, v[0].table_id, v[0].out_port),
        (63, 255, OFPP_ANY)
    );
}

#[test]
fn meter_action_in_openflow15_and_the_meter_instruction_elsewhere() {
    use openflow::actions::{Action, Instruction};
    let flow = |insts| {
        let mut fm = openflow::FlowMod::new(openflow::FlowModCommand::Add);
        fm.instructions = insts;
        Message::FlowMod(fm)
    };
    // The model's "meter first" is the meter instruction: 1.5 says it with a leading
    // OFPAT_METER (type 29, length 8, meter id), 1.3 with OFPIT_METER (type 6).
    let m = flow(vec![
        Instruction::Meter(3),
        Instruction::ApplyActions(vec![Action::output(2)]),
    ]);
    let b15 = encode(&m, OFP15, 1).expect("1.5");
    assert!(
        b15.windows(8).any(|w| w == [0, 29, 0, 8, 0, 0, 0, 3]),
        "{b15:02x?}"
    );
    assert!(!b15.windows(8).any(|w| w == [0, 6, 0, 8, 0, 0, 0, 3]));
    assert_eq!(round_trip(&b15), m);
    let b13 = encode(&m, OFP13, 1).expect("1.3");
    assert!(b13.windows(8).any(|w| w == [0, 6, 0, 8, 0, 0, 0, 3]));
    assert_eq!(round_trip(&b13), m);
    // A meter alone still needs an apply-actions in 1.5.
    let alone = flow(vec![Instruction::Meter(4)]);
    assert_eq!(round_trip(&encode(&alone, OFP15, 1).expect("1.5")), alone);
    // A meter action later in the list stays an action: 1.5 only.
    let mid = flow(vec![Instruction::ApplyActions(vec![
        Action::output(1),
        Action::Meter(3),
        Action::output(2),
    ])]);
    let b = encode(&mid, OFP15, 1).expect("1.5");
    assert_eq!(round_trip(&b), mid);
    assert!(
        encode(&mid, OFP13, 1).is_err(),
        "no meter action before 1.5"
    );
    let mut b13 = b.clone();
    b13[0] = OFP13;
    assert_eq!(
        decode_frame(&b13).err(),
        Some(DecodeError::BadActionType(29))
    );
    assert!(Action::Meter(0).validate().is_err());
}
