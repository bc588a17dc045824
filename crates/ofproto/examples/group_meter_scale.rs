//! Times adding N select groups (4 buckets each) and N meters one at a time, each change in
//! its own write session of `Versions` as the daemon applies a group_mod or meter_mod
//! (the next session's catch-up included), apart from the daemon:
//! `cargo run --release -p ofproto --example group_meter_scale [N...]`.

use ofproto::{Ofproto, Versions};
use openflow::{
    Action, Bucket, GroupMod, GroupModCommand, GroupType, MeterBand, MeterFlags, MeterMod,
    MeterModCommand,
};
use std::time::Instant;

fn group(id: u32) -> GroupMod {
    let buckets = (1..=4u32)
        .map(|p| {
            let mut b = Bucket::new(vec![Action::output(p)]);
            b.weight = 100;
            b
        })
        .collect();
    GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::Select,
        group_id: id,
        buckets,
    }
}

fn meter(id: u32) -> MeterMod {
    MeterMod {
        command: MeterModCommand::Add,
        flags: MeterFlags::KBPS,
        meter_id: id,
        bands: vec![MeterBand::Drop {
            rate: 1000,
            burst_size: 0,
        }],
    }
}

fn main() {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 50_000, 100_000]
    } else {
        sizes
    };
    for n in sizes {
        let v = Versions::new(Ofproto::new());
        let t = Instant::now();
        for id in 1..=n {
            assert!(v.write().group_mod(&group(id), 0).is_ok(), "group {id}");
        }
        drop(v.write());
        let g = t.elapsed();
        assert_eq!(v.read().groups().len(), n as usize);
        let v = Versions::new(Ofproto::new());
        let t = Instant::now();
        for id in 1..=n {
            assert!(v.write().meter_mod(&meter(id), 0).is_ok(), "meter {id}");
        }
        drop(v.write());
        let m = t.elapsed();
        assert_eq!(v.read().meter_specs().len(), n as usize);
        println!(
            "{n} groups {:.3} s ({:.1} us each), {n} meters {:.3} s ({:.1} us each)",
            g.as_secs_f64(),
            g.as_secs_f64() * 1e6 / f64::from(n),
            m.as_secs_f64(),
            m.as_secs_f64() * 1e6 / f64::from(n)
        );
    }
}
