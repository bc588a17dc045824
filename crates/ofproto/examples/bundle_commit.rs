//! Times a bundle commit of N prepared adds (`priority=100,ip,nw_dst=10.X.Y.Z`, one
//! subtable, as `bench/w5.sh` adds them) into an empty table, apart from the daemon:
//! `cargo run --release -p ofproto --example bundle_commit [N] [ROUNDS]`.

use ofproto::switch::{MaskCache, PreparedAdd};
use ofproto::Ofproto;
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
    for _ in 0..rounds {
        let mut of = Ofproto::new();
        let mut masks: MaskCache = None;
        let t0 = Instant::now();
        let staged: Vec<PreparedAdd> = (0..n)
            .filter_map(|i| PreparedAdd::new(add(i), &mut masks).ok())
            .collect();
        let t1 = Instant::now();
        let r: Result<(), OfError> = of.atomically(|of| {
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
        assert_eq!(of.tables()[0].len(), n as usize);
        // Not freed: the profile of a run shows the commit, not the teardown.
        std::mem::forget(of);
        println!(
            "prepare {:.1} ms, commit {:.1} ms ({:.0} ns/add)",
            (t1 - t0).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e9 / f64::from(n)
        );
    }
}
