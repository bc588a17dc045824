//! Property tests of the wire codec: decoding never panics (arbitrary bytes, and
//! mutations of the os-ken vectors when they are installed), whatever decodes re-encodes
//! to something that decodes to the same message, and random flow/group/meter mods
//! survive encode → decode in every version that can carry them.

use openflow::actions::Subfield;
use openflow::actions::{Action, Instruction};
use openflow::messages::{
    Bucket, FlowMod, FlowModCommand, FlowModFlags, GroupMod, GroupModCommand, GroupType, MeterBand,
    MeterFlags, MeterMod, MeterModCommand,
};
use openflow::oxm::Field;
use openflow::wire::action::split_loads;
use openflow::wire::{decode, decode_frame, encode, Message, OFP13, OFP14, OFP15, VERSIONS};
use openflow::Match;
use proptest::prelude::*;

/// Decode; if it succeeds, re-encode and check the re-encoding decodes to the same thing.
fn check(bytes: &[u8]) {
    if let Ok((h, m, n)) = decode_frame(bytes) {
        assert!(n <= bytes.len());
        if let Ok(enc) = encode(&m, h.version, h.xid) {
            let (m2, n2) = decode(&enc)
                .unwrap_or_else(|e| panic!("re-decode failed: {e:?}\n{m:?}\n{enc:02x?}"));
            assert_eq!(n2, enc.len());
            assert_eq!(m2, m, "re-decoded message differs");
        }
    }
}

fn with_header(version: u8, ty: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![version, ty, 0, 0, 0, 0, 0, 1];
    v.extend_from_slice(body);
    let len = (v.len().min(65535)) as u16;
    v[2..4].copy_from_slice(&len.to_be_bytes());
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        check(&b);
    }

    #[test]
    fn arbitrary_bodies_never_panic(
        vi in 0usize..4,
        ty in 0u8..36,
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        check(&with_header(VERSIONS[vi], ty, &body));
    }

    /// Bodies built from plausible pieces (small TLV-ish lengths) reach deeper code.
    #[test]
    fn structured_bodies_never_panic(
        vi in 0usize..4,
        ty in prop::sample::select(vec![10u8, 11, 13, 14, 15, 16, 17, 18, 19, 28, 29, 4]),
        words in proptest::collection::vec(
            prop_oneof![
                Just(0u16), Just(1), Just(4), Just(8), Just(16), Just(24), Just(0xffff),
                Just(0x8000), Just(0x2320), any::<u16>()
            ], 0..120),
    ) {
        let body: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        check(&with_header(VERSIONS[vi], ty, &body));
    }
}

// ------------------------------------------------------------------ vector mutations

fn vectors() -> Vec<Vec<u8>> {
    let dir = std::env::var("OSKEN_PACKET_DATA").ok().or_else(|| {
        let out = std::process::Command::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../.venv/bin/python"
        ))
        .args([
            "-c",
            "import os,os_ken;print(os.path.dirname(os_ken.__file__))",
        ])
        .output()
        .ok()?;
        out.status.success().then(|| {
            format!(
                "{}/tests/packet_data",
                String::from_utf8_lossy(&out.stdout).trim()
            )
        })
    });
    let Some(dir) = dir else { return Vec::new() };
    let mut v = Vec::new();
    for d in ["of10", "of13", "of14", "of15"] {
        if let Ok(rd) = std::fs::read_dir(format!("{dir}/{d}")) {
            for e in rd.flatten() {
                if let Ok(b) = std::fs::read(e.path()) {
                    v.push(b);
                }
            }
        }
    }
    v
}

#[test]
fn mutated_vectors_never_panic() {
    let vs = vectors();
    assert!(
        !vs.is_empty(),
        "os-ken's packet_data not found: set OSKEN_PACKET_DATA, or install \
         tests/requirements.txt into .venv (scripts/test.sh does)"
    );
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut runs = 0;
    for v in &vs {
        check(v);
        // Every single bit flip of the first 96 bytes.
        for i in 0..v.len().min(96) * 8 {
            let mut m = v.clone();
            m[i / 8] ^= 1 << (i % 8);
            check(&m);
            runs += 1;
        }
        // Random 16-bit overwrites (length fields live at even offsets), keeping or
        // re-fixing the header length, and random truncation + header fix-up.
        for _ in 0..300 {
            let mut m = v.clone();
            if m.len() < 10 {
                break;
            }
            let off = (next() as usize % (m.len() - 1)) & !1;
            let val = match next() % 5 {
                0 => 0u16,
                1 => 4,
                2 => 8,
                3 => 0xffff,
                _ => next() as u16,
            };
            m[off..off + 2].copy_from_slice(&val.to_be_bytes());
            check(&m);
            let cut = 8 + next() as usize % (m.len() - 7);
            m.truncate(cut);
            let l = (cut as u16).to_be_bytes();
            m[2..4].copy_from_slice(&l);
            check(&m);
            runs += 2;
        }
    }
    eprintln!(
        "{} vectors, {runs} mutations decoded without panic",
        vs.len()
    );
}

// ------------------------------------------------------------------ model round trips

fn field_value(f: Field) -> impl Strategy<Value = u128> {
    let max = f.max();
    any::<u128>().prop_map(move |v| v & max)
}

fn any_field() -> impl Strategy<Value = Field> {
    prop::sample::select(Field::ALL.to_vec())
}

fn a_match() -> impl Strategy<Value = Match> {
    proptest::collection::vec(
        (any_field(), any::<u128>(), any::<u128>(), any::<bool>()),
        0..8,
    )
    .prop_map(|es| {
        let mut m = Match::new();
        for (f, v, mask, masked) in es {
            if masked {
                m.set_masked(f, v & f.max(), mask & f.max());
            } else {
                m.set_exact(f, v & f.max());
            }
        }
        m
    })
}

fn writable_field() -> impl Strategy<Value = Field> {
    prop::sample::select(
        Field::ALL
            .iter()
            .copied()
            .filter(|f| openflow::actions::field_writable(*f))
            .collect::<Vec<_>>(),
    )
}

/// Bits of a field: a field from `fields`, then a run inside it at least `min` wide.
fn subfield_of(fields: Vec<Field>, width: Option<u16>) -> impl Strategy<Value = Subfield> {
    prop::sample::select(
        fields
            .into_iter()
            .filter(|f| width.is_none_or(|w| f.bits() >= u32::from(w)))
            .collect::<Vec<_>>(),
    )
    .prop_flat_map(move |field| {
        let bits = field.bits() as u16;
        let n = match width {
            Some(w) => (w..=w).boxed(),
            None => (1..=bits).boxed(),
        };
        n.prop_flat_map(move |n_bits| {
            (0..=bits - n_bits).prop_map(move |ofs| Subfield { field, ofs, n_bits })
        })
    })
}

fn a_bit_action() -> impl Strategy<Value = Action> {
    let writable: Vec<Field> = Field::ALL
        .iter()
        .copied()
        .filter(|f| openflow::actions::field_writable(*f))
        .collect();
    let w2 = writable.clone();
    prop_oneof![
        subfield_of(Field::ALL.to_vec(), None).prop_map(Action::StackPush),
        subfield_of(writable.clone(), None).prop_map(Action::StackPop),
        subfield_of(Field::ALL.to_vec(), None).prop_flat_map(move |src| {
            subfield_of(w2.clone(), Some(src.n_bits)).prop_map(move |dst| Action::Move { src, dst })
        }),
    ]
}

fn an_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        a_bit_action(),
        (any::<u32>(), any::<u16>()).prop_map(|(port, max_len)| Action::Output { port, max_len }),
        any::<u32>().prop_map(Action::Group),
        any::<u32>().prop_map(Action::SetQueue),
        Just(Action::PopQueue),
        (any::<u16>(), any::<u32>()).prop_map(|(p, queue)| Action::Enqueue {
            port: openflow::actions::port_from_of10(p),
            queue
        }),
        any::<u8>().prop_map(Action::SetMplsTtl),
        Just(Action::DecMplsTtl),
        any::<u8>().prop_map(Action::SetNwTtl),
        Just(Action::DecNwTtl),
        Just(Action::CopyTtlOut),
        Just(Action::CopyTtlIn),
        any::<u16>().prop_map(Action::PushVlan),
        Just(Action::PopVlan),
        any::<u16>().prop_map(Action::PushMpls),
        any::<u16>().prop_map(Action::PopMpls),
        any::<u16>().prop_map(Action::PushPbb),
        Just(Action::PopPbb),
        writable_field()
            .prop_flat_map(|f| (Just(f), field_value(f)))
            .prop_map(|(f, v)| Action::set_field(f, v)),
        (writable_field(), any::<u128>(), any::<u128>()).prop_filter_map(
            "mask must be partial",
            |(f, v, m)| {
                let m = m & f.max();
                (m != 0 && m != f.max()).then_some(Action::SetField {
                    field: f,
                    value: v & m,
                    mask: Some(m),
                })
            }
        ),
        (
            proptest::option::of(0u32..0xff00),
            proptest::option::of(0u8..0xff),
            any::<bool>()
        )
            .prop_map(|(in_port, table, ct)| Action::Resubmit {
                in_port,
                table,
                ct: ct && (in_port.is_some() || table.is_some())
            }),
    ]
}

fn actions() -> impl Strategy<Value = Vec<Action>> {
    proptest::collection::vec(an_action(), 0..6)
}

fn instructions() -> impl Strategy<Value = Vec<Instruction>> {
    (
        proptest::option::of(any::<u32>()),
        proptest::option::of(actions()),
        any::<bool>(),
        proptest::option::of(actions()),
        proptest::option::of((any::<u64>(), any::<u64>())),
        proptest::option::of(any::<u8>()),
    )
        .prop_map(|(meter, apply, clear, write, md, goto)| {
            let mut v = Vec::new();
            if let Some(m) = meter {
                v.push(Instruction::Meter(m));
            }
            if let Some(a) = apply {
                v.push(Instruction::ApplyActions(a));
            }
            if clear {
                v.push(Instruction::ClearActions);
            }
            if let Some(a) = write {
                v.push(Instruction::WriteActions(a));
            }
            if let Some((value, mask)) = md {
                v.push(Instruction::WriteMetadata { value, mask });
            }
            if let Some(t) = goto {
                v.push(Instruction::GotoTable(t));
            }
            v
        })
}

fn a_flow_mod() -> impl Strategy<Value = FlowMod> {
    (
        0u8..5,
        any::<u8>(),
        any::<u16>(),
        any::<(u64, u64)>(),
        any::<(u16, u16, u16)>(),
        any::<(u32, u32, u32)>(),
        a_match(),
        instructions(),
    )
        .prop_map(
            |(
                cmd,
                table_id,
                priority,
                (cookie, cookie_mask),
                (idle, hard, flags),
                (op, og, buf),
                m,
                insts,
            )| {
                let mut fm = FlowMod::new(FlowModCommand::from_u8(cmd).unwrap());
                fm.table_id = table_id;
                fm.priority = priority;
                fm.cookie = cookie;
                fm.cookie_mask = cookie_mask;
                fm.idle_timeout = idle;
                fm.hard_timeout = hard;
                // The flags OpenFlow 1.3+ defines (others are BAD_FLAGS).
                fm.flags = FlowModFlags(flags & FlowModFlags::ALL.0);
                fm.out_port = op;
                fm.out_group = og;
                fm.buffer_id = buf;
                fm.match_ = m;
                fm.instructions = insts;
                fm
            },
        )
}

fn a_group_mod() -> impl Strategy<Value = GroupMod> {
    let bucket = (any::<u16>(), any::<u32>(), any::<u32>(), actions()).prop_map(
        |(weight, watch_port, watch_group, actions)| Bucket {
            bucket_id: 0,
            weight,
            watch_port,
            watch_group,
            actions,
        },
    );
    (
        0u8..3,
        0u8..4,
        any::<u32>(),
        proptest::collection::vec(bucket, 0..4),
    )
        .prop_map(|(c, t, group_id, buckets)| GroupMod {
            command: [
                GroupModCommand::Add,
                GroupModCommand::Modify,
                GroupModCommand::Delete,
            ][c as usize],
            group_type: GroupType::from_u8(t).unwrap(),
            group_id,
            buckets,
        })
}

fn a_meter_mod() -> impl Strategy<Value = MeterMod> {
    let band = prop_oneof![
        (any::<u32>(), any::<u32>())
            .prop_map(|(rate, burst_size)| MeterBand::Drop { rate, burst_size }),
        (any::<u32>(), any::<u32>(), any::<u8>()).prop_map(|(rate, burst_size, prec_level)| {
            MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level,
            }
        }),
    ];
    (
        0u8..3,
        any::<u16>(),
        any::<u32>(),
        proptest::collection::vec(band, 0..4),
    )
        .prop_map(|(c, flags, meter_id, bands)| MeterMod {
            command: [
                MeterModCommand::Add,
                MeterModCommand::Modify,
                MeterModCommand::Delete,
            ][c as usize],
            flags: MeterFlags(flags),
            meter_id,
            bands,
        })
}

/// An action list as OpenFlow 1.1+ reads it back: each `enqueue` is `set_queue`, `output`
/// with `max_len` 0xffff, `pop_queue`.
fn enqueue_as_of11(acts: Vec<Action>) -> Vec<Action> {
    acts.into_iter()
        .flat_map(|a| match a {
            Action::Enqueue { port, queue } => vec![
                Action::SetQueue(queue),
                Action::Output {
                    port,
                    max_len: 0xffff,
                },
                Action::PopQueue,
            ],
            a => vec![a],
        })
        .collect()
}

fn round_trip(m: &Message, v: u8) -> Message {
    let b = encode(m, v, 7).unwrap_or_else(|e| panic!("encode {e:?}: {m:?}"));
    let (m2, n) = decode(&b).unwrap_or_else(|e| panic!("decode {e:?}: {m:?}\n{b:02x?}"));
    assert_eq!(n, b.len());
    m2
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn flow_mods_round_trip(fm in a_flow_mod(), vi in 0usize..3) {
        let v = [OFP13, OFP14, OFP15][vi];
        let mut fm = fm;
        if v == OFP15 && fm.instructions.iter().any(|i| matches!(i, Instruction::Meter(_))) {
            // 1.5 says the meter instruction as a meter action leading the apply-actions:
            // an empty apply-actions next to a meter cannot be told from none.
            fm.instructions
                .retain(|i| !matches!(i, Instruction::ApplyActions(a) if a.is_empty()));
        }
        let m = Message::FlowMod(fm.clone());
        // Before 1.5 a wide or scattered masked write travels as several loads; 1.1+ says
        // 1.0's enqueue as three actions.
        for i in &mut fm.instructions {
            if let Instruction::ApplyActions(a) | Instruction::WriteActions(a) = i {
                *a = split_loads(v, enqueue_as_of11(std::mem::take(a)));
            }
        }
        prop_assert_eq!(round_trip(&m, v), Message::FlowMod(fm));
    }

    #[test]
    fn group_mods_round_trip(g in a_group_mod(), vi in 0usize..3) {
        let v = [OFP13, OFP14, OFP15][vi];
        let m = Message::GroupMod(g.clone());
        let mut g = g;
        for b in &mut g.buckets {
            b.actions = split_loads(v, enqueue_as_of11(std::mem::take(&mut b.actions)));
        }
        prop_assert_eq!(round_trip(&m, v), Message::GroupMod(g));
    }

    #[test]
    fn meter_mods_round_trip(mm in a_meter_mod(), vi in 0usize..3) {
        let v = [OFP13, OFP14, OFP15][vi];
        let m = Message::MeterMod(mm);
        prop_assert_eq!(round_trip(&m, v), m);
    }

    /// Nicira flow_mods (OpenFlow 1.0 + NXM) carry any match and apply-actions that
    /// OpenFlow 1.0 can express.
    #[test]
    fn nx_flow_mods_round_trip(fm in a_flow_mod()) {
        let mut fm = fm;
        fm.out_port %= 0xff00;
        fm.out_group = openflow::actions::OFPG_ANY;
        fm.cookie_mask = 0;
        // NXM's TCI cannot say "no tag, PCP p" (a contradiction anyway): the PCP is dropped.
        if fm
            .match_
            .get(Field::VlanVid)
            .is_some_and(|e| e.mask_bits() & 0x1000 != 0 && e.value & 0x1000 == 0)
        {
            fm.match_.remove(Field::VlanPcp);
        }
        let acts: Vec<Action> = fm
            .instructions
            .iter()
            .filter_map(|i| match i { Instruction::ApplyActions(a) => Some(a.clone()), _ => None })
            .flatten()
            .filter(|a| {
                let one = std::slice::from_ref(a);
                openflow::wire::action::encode_action_list(1, one)
                    .ok()
                    .and_then(|b| openflow::wire::action::decode_action_list(1, &b).ok())
                    .as_deref()
                    == Some(one)
            })
            .collect();
        fm.instructions = if acts.is_empty() { vec![] } else { vec![Instruction::ApplyActions(acts)] };
        // 1.0's flags: send_flow_rem and check_overlap travel; reset_counts is implied by
        // an add and cannot be said otherwise.
        fm.flags.remove(FlowModFlags::NO_PKT_COUNTS | FlowModFlags::NO_BYT_COUNTS);
        let m = Message::Nx(openflow::wire::NxMessage::FlowMod(fm.clone()));
        if fm.command == FlowModCommand::Add {
            fm.flags.insert(FlowModFlags::RESET_COUNTS);
        } else {
            fm.flags.remove(FlowModFlags::RESET_COUNTS);
        }
        prop_assert_eq!(round_trip(&m, 1), Message::Nx(openflow::wire::NxMessage::FlowMod(fm)));
    }
}
