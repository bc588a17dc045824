//! Times a bundle commit of N prepared adds (`priority=100,ip,nw_dst=10.X.Y.Z`, one
//! subtable, as `bench/w5.sh` adds them) into an empty table, apart from the daemon:
//! `cargo run --release -p ofproto --example bundle_commit [N] [ROUNDS] [adopt|each]`.
//! `adopt` (the default) files the adds as a bundle does while they arrive
//! (`BuiltAdds::push`, timed as part of "prepare") and commits them by adoption; `each`
//! commits them one by one, as a bundle whose adds cannot be adopted. The commit runs in a
//! write session of `Versions`, as in the daemon; "catch-up" is the next session's replay
//! of it onto the other copy (see `ofproto::switch::versions`).

use ofproto::switch::{BuiltAdds, MaskCache, PreparedAdd};
use ofproto::{Ofproto, Versions};
use openflow::oxm::Field;
use openflow::{Action, FlowMod, FlowModCommand, Instruction, Match, OfError};
use std::time::Instant;

fn add(i: u32) -> FlowMod {
    let mut fm = FlowMod::new(FlowModCommand::Add);
    fm.priority = 100;
    fm.match_ = Match::new()
        .with(Field::EthType, 0x0800)
        .with(Field::Ipv4Dst, u128::from(0x0a00_0000 | i));
    fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(1)])];
    fm
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let rounds: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let adopt = args.next().is_none_or(|a| a != "each");
    for _ in 0..rounds {
        let v = Versions::new(Ofproto::with_default_flow(0));
        let mut of = v.write();
        let mut masks: MaskCache = None;
        let t0 = Instant::now();
        let staged: Vec<PreparedAdd> = (0..n)
            .filter_map(|i| PreparedAdd::new(add(i), &mut masks).ok())
            .collect();
        let mut built = BuiltAdds::default();
        let staged = if adopt {
            for p in staged {
                assert!(built.push(p).is_ok(), "filed");
            }
            Vec::new()
        } else {
            staged
        };
        let t1 = Instant::now();
        let r: Result<(), OfError> = of.atomically(|of| {
            if adopt {
                assert!(of.adopt_adds(built, 1).is_ok(), "adopted");
                return Ok(());
            }
            if let Some(p) = staged.first() {
                of.reserve_like(p, staged.len());
            }
            for p in staged {
                of.add_prepared(p, 1)?;
            }
            Ok(())
        });
        let t2 = Instant::now();
        assert!(r.is_ok());
        assert_eq!(of.tables()[0].len(), n as usize + 1);
        drop(of);
        let t3 = Instant::now();
        let next = v.write();
        let t4 = Instant::now();
        assert_eq!(next.tables()[0].len(), n as usize + 1);
        drop(next);
        // Not freed: the profile of a run shows the commit, not the teardown.
        std::mem::forget(v);
        println!(
            "prepare {:.1} ms, commit {:.1} ms ({:.0} ns/add), catch-up {:.1} ms",
            (t1 - t0).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e9 / f64::from(n),
            (t4 - t3).as_secs_f64() * 1e3
        );
    }
}
