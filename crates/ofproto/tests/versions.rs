//! The two copies of a bridge's OpenFlow state (`Versions`, left-right) after random
//! sequences of adds, modifies, deletes, failed bundles and bundles of adds adopted whole
//! (`Ofproto::adopt_adds`, whose subtables the other copy shares): once a write session has caught
//! its copy up, both copies hold the same rules — the very same classifier rules, shared,
//! not copies — and answer every lookup alike, megaflow mask included.

use ofproto::switch::{BuiltAdds, PreparedAdd};
use ofproto::{Ofproto, Versions};
use openflow::oxm::Field;
use openflow::{Action, FlowMod, FlowModCommand, Instruction, Match, OfError};
use packet::flow::FlowKey;
use proptest::prelude::*;
use std::sync::Arc;

/// One flow_mod of a few match shapes. Each shape has its own priority band, so rules of
/// different masks never tie and the lookup answer (and its mask) is fully determined.
#[derive(Clone, Debug)]
struct Op {
    cmd: u8,
    shape: u8,
    port: u32,
    x: u32,
    prio: u16,
    out: u32,
}

fn flow_mod(op: &Op) -> FlowMod {
    let cmd = match op.cmd {
        0..=3 => FlowModCommand::Add,
        4 => FlowModCommand::Modify,
        5 => FlowModCommand::ModifyStrict,
        6 => FlowModCommand::Delete,
        _ => FlowModCommand::DeleteStrict,
    };
    let mut fm = FlowMod::new(cmd);
    fm.priority = u16::from(op.shape) * 10 + op.prio;
    let mut m = Match::new().with(Field::InPort, u128::from(op.port));
    m = match op.shape {
        0 => m,
        1 => m.with(Field::Reg0, u128::from(op.x)),
        2 => m.with(Field::EthType, 0x0800).with_masked(
            Field::Ipv4Dst,
            u128::from(0x0a00_0000 | (op.x << 8)),
            0xffff_ff00,
        ),
        _ => m.with(Field::Metadata, u128::from(op.x)),
    };
    fm.match_ = m;
    fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(op.out)])];
    fm
}

fn op() -> impl Strategy<Value = Op> {
    (0u8..9, 0u8..4, 1u32..4, 0u32..3, 0u16..3, 1u32..9).prop_map(
        |(cmd, shape, port, x, prio, out)| Op {
            cmd,
            shape,
            port,
            x,
            prio,
            out,
        },
    )
}

/// Every probe key: each in_port, reg0, metadata and /24 of the shapes above, and one more.
fn probes() -> Vec<FlowKey> {
    let mut v = Vec::new();
    for port in 1..5 {
        for x in 0..4u32 {
            for ip in [false, true] {
                let mut k = FlowKey::ZERO;
                k.in_port = port;
                k.regs[0] = x;
                k.metadata = u64::from(x);
                if ip {
                    k.dl_type = 0x0800;
                    k.nw_dst = [10, 0, x as u8, 7];
                }
                v.push(k);
            }
        }
    }
    v
}

/// (rule id, priority, match, instructions) of every rule, sorted.
fn rules(of: &Ofproto) -> Vec<(u64, u16, String)> {
    let mut v: Vec<(u64, u16, String)> = of.tables()[0]
        .iter()
        .map(|r| {
            (
                r.id,
                r.priority,
                format!("{:?} {:?}", r.match_, r.instructions),
            )
        })
        .collect();
    v.sort();
    v
}

fn lookups(of: &Ofproto) -> Vec<(Option<u64>, FlowKey)> {
    probes()
        .iter()
        .map(|k| {
            let mut wc = FlowKey::ZERO;
            let id = of.tables()[0].lookup(k, &mut wc).map(|r| r.id);
            if let Some(id) = id {
                assert!(of.tables()[0].rule_matches(id, k));
            }
            (id, wc)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn both_copies_answer_alike(
        sessions in prop::collection::vec(
            (prop::collection::vec(op(), 1..6), any::<bool>(), any::<bool>(), any::<bool>()),
            1..12),
    ) {
        let v = Versions::new(Ofproto::new());
        for (ops, in_bundle_that_fails, clear_first, adopted) in &sessions {
            let mut w = v.write();
            if *clear_first {
                w.flow_mod(&FlowMod::new(FlowModCommand::Delete), 0).expect("delete all");
            }
            if *adopted {
                // The adds filed apart, adopted whole if the table has none of their masks
                // (else applied one by one), then the rest; in a bundle that may fail.
                let mut built = BuiltAdds::default();
                let mut rest = Vec::new();
                for op in ops {
                    let fm = flow_mod(op);
                    if fm.command != FlowModCommand::Add {
                        rest.push(fm);
                        continue;
                    }
                    let p = PreparedAdd::new(fm.clone(), &mut None).expect("prepared");
                    if built.push(p).is_err() {
                        rest.push(fm);
                    }
                }
                let fail = *in_bundle_that_fails;
                let r: Result<(), OfError> = w.atomically(|o| {
                    if let Err(back) = o.adopt_adds(built, 0) {
                        for p in back.into_adds() {
                            let _ = o.add_prepared(p, 0);
                        }
                    }
                    for fm in &rest {
                        let _ = o.flow_mod(fm, 0);
                    }
                    if fail { Err(OfError::bad_request(0)) } else { Ok(()) }
                });
                prop_assert_eq!(r.is_err(), fail);
            } else if *in_bundle_that_fails {
                let r: Result<(), OfError> = w.atomically(|o| {
                    for op in ops {
                        let _ = o.flow_mod(&flow_mod(op), 0);
                    }
                    Err(OfError::bad_request(0))
                });
                prop_assert!(r.is_err());
            } else {
                for op in ops {
                    let _ = w.flow_mod(&flow_mod(op), 0);
                }
            }
        }
        // This session catches the unpublished copy up; the published one is read beside it.
        let w = v.write();
        let r = v.read();
        prop_assert_eq!(rules(&w), rules(&r));
        prop_assert_eq!(lookups(&w), lookups(&r));
        for rule in r.tables()[0].iter() {
            let a = r.tables()[0].entry(rule.id).expect("entry");
            let b = w.tables()[0].entry(rule.id).expect("entry");
            prop_assert!(Arc::ptr_eq(a, b), "rule {} is not shared", rule.id);
        }
        drop(r);
        drop(w);
    }
}
