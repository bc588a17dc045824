//! The tables' group indexes (see [`crate::group_index`]) against a scan of the rules (the
//! reference), on both copies of a switch (see [`super::versions`]), through flow adds,
//! modifies, deletes, bundles adopted whole, group deletes and failed transactions; and
//! group deletes that leave a table's other flows alone. The meter indexes (see
//! [`crate::meter_index`]) likewise, through meter deletes.

use super::*;
use crate::switch::versions::Versions;
use crate::switch::{BuiltAdds, PreparedAdd};
use openflow::oxm::Field;
use openflow::{Bucket, GroupType, OfError};
use std::collections::{BTreeMap, HashMap};

/// Group id -> (ref_count, its rules as (table, id)).
type Refs = BTreeMap<u32, (u32, Vec<(u8, u64)>)>;

/// The reference: every rule's group actions, counted.
fn scanned(o: &Ofproto) -> Refs {
    let mut m = Refs::new();
    for t in o.tables() {
        for r in t.iter() {
            r.each_group(|g| {
                let e = m.entry(g).or_default();
                e.0 += 1;
                e.1.push((t.id, r.id));
            });
        }
    }
    for e in m.values_mut() {
        e.1.sort_unstable();
        e.1.dedup();
    }
    m
}

/// The same, from the indexes; checks `group_ref_counts` and `group_ref_count` agree.
fn indexed(o: &Ofproto) -> Refs {
    let mut m = Refs::new();
    for t in o.tables() {
        for (g, _) in t.group_index().ref_counts() {
            m.entry(g)
                .or_default()
                .1
                .extend(t.group_index().rules_of(g).map(|id| (t.id, id)));
        }
    }
    let counts = o.group_ref_counts();
    assert_eq!(counts.len(), m.len());
    for (g, e) in m.iter_mut() {
        e.0 = o.group_ref_count(*g);
        assert_eq!(counts.get(g), Some(&e.0), "group {g}");
        e.1.sort_unstable();
        let n: usize = o
            .tables()
            .iter()
            .map(|t| t.group_index().n_rules_of(*g))
            .sum();
        assert_eq!(n, e.1.len());
    }
    m
}

/// The meter indexes against a scan: each table's rules by meter, and the flow counts.
fn check_meters(o: &Ofproto) {
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for t in o.tables() {
        let mut want: Vec<(u32, u64)> = t
            .iter()
            .filter_map(|r| r.meter().map(|m| (m, r.id)))
            .collect();
        want.sort_unstable();
        for &(m, _) in &want {
            *counts.entry(m).or_default() += 1;
        }
        let ix = t.meter_index();
        let mut got: Vec<(u32, u64)> = ix
            .counts()
            .flat_map(|(m, _)| ix.rules_of(m).map(move |id| (m, id)))
            .collect();
        got.sort_unstable();
        assert_eq!(got, want, "table {}", t.id);
        assert_eq!(ix.len(), want.len());
    }
    assert_eq!(o.meter_flow_counts(), counts);
    for (m, n) in counts {
        assert_eq!(o.meter_flow_count(m), n);
    }
}

fn check(o: &Ofproto) {
    assert_eq!(indexed(o), scanned(o));
    check_meters(o);
    for t in o.tables() {
        let mut any: Vec<u64> = t
            .iter()
            .filter(|r| {
                let mut hit = false;
                r.each_group(|_| hit = true);
                hit
            })
            .map(|r| r.id)
            .collect();
        any.sort_unstable();
        let mut ix: Vec<u64> = t.group_index().rules().collect();
        ix.sort_unstable();
        assert_eq!(ix, any, "table {}", t.id);
    }
}

/// Both copies, each after its catch-up, against the reference; the same rules in each.
fn check_both(v: &Versions) {
    let a = v.write();
    check(&a);
    let ids = |o: &Ofproto| {
        let mut x: Vec<(u8, u64)> = o
            .tables()
            .iter()
            .flat_map(|t| t.iter().map(move |r| (t.id, r.id)))
            .collect();
        x.sort_unstable();
        x
    };
    let first = ids(&a);
    drop(a);
    let b = v.write();
    check(&b);
    assert_eq!(ids(&b), first);
}

fn add_group(o: &mut Ofproto, id: u32) {
    let gm = GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::Select,
        group_id: id,
        buckets: vec![Bucket::new(vec![Action::output(1)])],
    };
    assert!(o.group_mod(&gm, 0).is_ok());
}

fn del_group(o: &mut Ofproto, id: u32) -> Result<(), OfError> {
    let gm = GroupMod {
        command: GroupModCommand::Delete,
        group_type: GroupType::All,
        group_id: id,
        buckets: vec![],
    };
    o.group_mod(&gm, 1)
}

/// `ip,nw_dst=10.0.B.I` in table `table` with actions `acts`.
fn flow(table: u8, b: u32, i: u32, acts: Vec<Action>) -> FlowMod {
    let mut fm = FlowMod::new(FlowModCommand::Add);
    fm.table_id = table;
    fm.priority = 100;
    fm.match_ = Match::new()
        .with(Field::EthType, 0x0800)
        .with(Field::Ipv4Dst, u128::from(0x0a00_0000 | (b << 8) | i));
    fm.instructions = vec![Instruction::ApplyActions(acts)];
    fm.flags = FlowModFlags::SEND_FLOW_REM;
    fm
}

/// Groups of flow `i`: one group, a group twice, one inside a clone, two groups, or none.
fn acts(i: u32) -> Vec<Action> {
    let g = 1 + i % 20;
    match i % 5 {
        0 => vec![Action::Group(g)],
        1 => vec![Action::Group(g), Action::Group(g)],
        2 => vec![Action::output(2), Action::Clone(vec![Action::Group(g)])],
        3 => vec![Action::Group(g), Action::Group(1 + (g % 20))],
        _ => vec![Action::output(3)],
    }
}

#[test]
fn group_indexes_match_a_scan_on_both_copies() {
    let mut o = Ofproto::with_default_flow(0);
    for id in 1..=20 {
        add_group(&mut o, id);
    }
    let v = Versions::new(o);
    // Table 0: flows of every kind; table 2: flows to groups only.
    {
        let mut w = v.write();
        for i in 0..100 {
            assert!(w.flow_mod(&flow(0, 0, i, acts(i)), 0).is_ok());
        }
        for i in 0..10 {
            let fm = flow(2, 0, i, vec![Action::Group(1 + i % 3)]);
            assert!(w.flow_mod(&fm, 0).is_ok());
        }
    }
    check_both(&v);
    // A bundle adopted whole (a new subtable: /24s), rules naming groups among them.
    {
        let mut w = v.write();
        let mut built = BuiltAdds::default();
        for i in 0..50 {
            let mut fm = flow(0, 0, 0, acts(i));
            fm.match_ = Match::new().with(Field::EthType, 0x0800).with_masked(
                Field::Ipv4Dst,
                u128::from(0x0b00_0000 | (i << 8)),
                0xffff_ff00,
            );
            let p = PreparedAdd::new(fm, &mut None).expect("prepared");
            assert!(built.push(p).is_ok());
        }
        let r: Result<bool, OfError> = w.atomically(|o| Ok(o.adopt_adds(built, 0).is_ok()));
        assert_eq!(r, Ok(true), "adopted whole");
    }
    check_both(&v);
    // Modifies: a loose one moves a range of flows to group 7; a strict one to no group;
    // a replacing add names group 9 twice.
    {
        let mut w = v.write();
        let mut fm = flow(0, 0, 0, vec![Action::Group(7)]);
        fm.command = FlowModCommand::Modify;
        fm.match_ = Match::new().with(Field::EthType, 0x0800).with_masked(
            Field::Ipv4Dst,
            0x0a00_0000,
            0xffff_fff0,
        );
        assert!(w.flow_mod(&fm, 0).is_ok());
        let mut fm = flow(0, 0, 21, vec![Action::output(4)]);
        fm.command = FlowModCommand::ModifyStrict;
        assert!(w.flow_mod(&fm, 0).is_ok());
        let fm = flow(0, 0, 24, vec![Action::Group(9), Action::Group(9)]);
        assert!(w.flow_mod(&fm, 0).is_ok());
        // A delete by out_group.
        let mut fm = FlowMod::new(FlowModCommand::Delete);
        fm.table_id = openflow::messages::OFPTT_ALL;
        fm.out_group = 3;
        assert!(w.flow_mod(&fm, 0).is_ok());
        assert_eq!(w.group_ref_count(3), 0);
    }
    check_both(&v);
    // Deleting group 5 takes its flows (table 0 keeps the others).
    {
        let mut w = v.write();
        let before = scanned(&w);
        let n0 = w.tables()[0].len();
        let _ = w.take_removed();
        assert!(del_group(&mut w, 5).is_ok());
        let gone = before.get(&5).map_or(0, |e| e.1.len());
        assert!(gone > 0);
        assert_eq!(w.tables()[0].len(), n0 - gone);
        let removed = w.take_removed();
        assert_eq!(removed.len(), gone);
        assert!(removed
            .iter()
            .all(|r| r.reason == RemovedReason::GroupDelete && r.rule.uses_group(5)));
        assert!(!scanned(&w).contains_key(&5));
        // Deleting a group no rule names (and one that does not exist) removes nothing.
        assert!(del_group(&mut w, 3).is_ok());
        assert!(del_group(&mut w, 99).is_ok());
        assert_eq!(w.tables()[0].len(), n0 - gone);
    }
    check_both(&v);
    // A failed transaction that deleted groups (their flows with them), added flows naming
    // groups and modified one: all undone, indexes included, on both copies.
    {
        let mut w = v.write();
        let before = scanned(&w);
        let n = w.tables()[0].len();
        let r: Result<(), OfError> = w.atomically(|o| {
            del_group(o, 7)?;
            del_group(o, 2)?;
            o.flow_mod(&flow(0, 3, 1, vec![Action::Group(4)]), 0)?;
            let mut fm = flow(0, 0, 30, vec![Action::Group(8)]);
            fm.command = FlowModCommand::ModifyStrict;
            o.flow_mod(&fm, 0)?;
            assert!(!scanned(o).contains_key(&7));
            check(o);
            Err(OfError::bad_request(0))
        });
        assert!(r.is_err());
        assert_eq!(scanned(&w), before);
        assert_eq!(w.tables()[0].len(), n);
        assert!(w.take_removed().is_empty());
        check(&w);
    }
    check_both(&v);
    // Deleting every group: table 2 (flows to groups only) goes whole, table 0 keeps the
    // flows of no group.
    {
        let mut w = v.write();
        let _ = w.take_removed();
        let keep: usize = w.tables()[0]
            .iter()
            .filter(|r| {
                let mut hit = false;
                r.each_group(|_| hit = true);
                !hit
            })
            .count();
        let named = w.tables()[0].group_index().len() + w.tables()[2].len();
        assert!(del_group(&mut w, openflow::actions::OFPG_ALL).is_ok());
        assert_eq!(w.tables()[0].len(), keep);
        assert!(w.tables()[2].is_empty());
        assert_eq!(w.take_removed().len(), named);
        assert!(w.group_ref_counts().is_empty());
    }
    check_both(&v);
}

#[test]
fn a_group_delete_takes_only_its_flows_in_the_order_they_were_added() {
    // Half of table 0's flows go to group 1 or 2, the other half to no group: deleting a
    // group takes its flows only.
    let mut o = Ofproto::with_default_flow(0);
    add_group(&mut o, 1);
    add_group(&mut o, 2);
    for i in 0..20 {
        assert!(o
            .flow_mod(&flow(0, 0, i, vec![Action::Group(1 + i % 2)]), 0)
            .is_ok());
    }
    for i in 0..20 {
        assert!(o
            .flow_mod(&flow(0, 1, i, vec![Action::output(1)]), 0)
            .is_ok());
    }
    assert!(del_group(&mut o, 1).is_ok());
    assert_eq!(o.tables()[0].len(), 31);
    assert!(o.tables()[0].iter().all(|r| !r.uses_group(1)));
    check(&o);
    // Rules are reported in the order they were added.
    let _ = o.take_removed();
    assert!(del_group(&mut o, 2).is_ok());
    let ids: Vec<u64> = o.take_removed().iter().map(|r| r.rule.id).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
    assert_eq!(ids.len(), 10);
    check(&o);
}

/// What a delete by `out_group` selects, by the definition: a scan of every rule (the
/// reference the indexed selection must equal), sorted.
fn scan_select(o: &Ofproto, fm: &FlowMod) -> Vec<(u8, u64)> {
    let mut out = Vec::new();
    for t in o.tables() {
        if fm.table_id != OFPTT_ALL && fm.table_id != t.id {
            continue;
        }
        for r in t.iter() {
            let hit = if fm.command.is_strict() {
                r.match_ == fm.match_ && r.priority == fm.priority
            } else {
                r.match_.refines(&fm.match_)
            };
            if hit
                && (r.cookie & fm.cookie_mask) == (fm.cookie & fm.cookie_mask)
                && (fm.out_port == OFPP_ANY || r.outputs_to(fm.out_port))
                && (fm.out_group == OFPG_ANY || r.uses_group(fm.out_group))
            {
                out.push((t.id, r.id));
            }
        }
    }
    out.sort_unstable();
    out
}

#[test]
fn out_group_selections_through_the_index_match_a_scan_on_random_tables() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut o = Ofproto::with_default_flow(0);
    for g in 1..=21 {
        add_group(&mut o, g);
    }
    // Flows in three tables, over two subnets and two priorities, with cookies 0..4.
    for i in 0..300u32 {
        let mut fm = flow(
            (next() % 3) as u8,
            (next() % 2) as u32,
            i,
            acts(next() as u32),
        );
        fm.priority = 100 + (next() % 2) as u16;
        fm.cookie = next() % 4;
        if next() % 4 == 0 {
            // A group named in write-actions counts too.
            fm.instructions = vec![
                Instruction::ApplyActions(vec![Action::output(4)]),
                Instruction::WriteActions(vec![Action::Group(1 + (next() % 21) as u32)]),
            ];
        }
        let r = o.flow_mod(&fm, 0);
        assert!(r.is_ok(), "{r:?} {fm:?}");
    }
    let mut selected = 0;
    for _ in 0..400 {
        let strict = next() % 5 == 0;
        let cmd = if strict {
            FlowModCommand::DeleteStrict
        } else {
            FlowModCommand::Delete
        };
        let mut fm = match next() % 3 {
            0 => FlowMod::new(cmd),
            1 => {
                let mut f = flow(0, (next() % 2) as u32, 0, vec![]);
                f.command = cmd;
                f.match_ = Match::new().with(Field::EthType, 0x0800);
                f
            }
            _ => {
                let mut f = flow(0, (next() % 2) as u32, (next() % 300) as u32, vec![]);
                f.command = cmd;
                f
            }
        };
        fm.priority = 100 + (next() % 2) as u16;
        fm.table_id = match next() % 4 {
            3 => OFPTT_ALL,
            t => t as u8,
        };
        fm.out_group = 1 + (next() % 22) as u32;
        if next() % 3 == 0 {
            fm.cookie = next() % 4;
            fm.cookie_mask = 1 + next() % 3;
        }
        if next() % 4 == 0 {
            fm.out_port = 2 + (next() % 2) as u32;
        }
        let mut got = o.select(&fm);
        got.sort_unstable();
        let want = scan_select(&o, &fm);
        assert_eq!(got, want, "{fm:?}");
        selected += want.len();
    }
    assert!(selected > 0);
    // Each table's rules of a group, in dump order (priority, then id), as a scan gives.
    for t in o.tables() {
        for g in 0..=22 {
            let got: Vec<u64> = t.rules_of_group(g).map(|r| r.id).collect();
            let want: Vec<u64> = t
                .rules()
                .filter(|r| r.uses_group(g))
                .map(|r| r.id)
                .collect();
            assert_eq!(got, want, "table {} group {g}", t.id);
        }
    }
    // And the delete itself takes exactly those flows.
    let mut fm = FlowMod::new(FlowModCommand::Delete);
    fm.table_id = OFPTT_ALL;
    fm.out_group = 5;
    let want = scan_select(&o, &fm);
    assert!(!want.is_empty());
    let n = o.tables().iter().map(|t| t.len()).sum::<usize>();
    assert!(o.flow_mod(&fm, 1).is_ok());
    assert_eq!(
        o.tables().iter().map(|t| t.len()).sum::<usize>(),
        n - want.len()
    );
    assert!(o
        .tables()
        .iter()
        .all(|t| t.iter().all(|r| !r.uses_group(5))));
    check(&o);
}

fn meter_mod(o: &mut Ofproto, command: MeterModCommand, id: u32) -> Result<(), OfError> {
    let mm = MeterMod {
        command,
        flags: MeterFlags::KBPS,
        meter_id: id,
        bands: vec![MeterBand::Drop {
            rate: 1000,
            burst_size: 0,
        }],
    };
    o.meter_mod(&mm, 1)
}

/// Flow `i` of table `table` through meter `m` (an instruction, or for odd `i` an
/// OpenFlow 1.5 meter action), or through none.
fn metered(table: u8, b: u32, i: u32, m: Option<u32>) -> FlowMod {
    let mut fm = flow(table, b, i, vec![Action::output(1)]);
    match m {
        Some(m) if i.is_multiple_of(2) => fm.instructions.insert(0, Instruction::Meter(m)),
        Some(m) => {
            fm.instructions = vec![Instruction::ApplyActions(vec![
                Action::Meter(m),
                Action::output(1),
            ])]
        }
        None => {}
    }
    fm
}

#[test]
fn meter_deletes_take_only_their_flows_through_the_meter_indexes_on_both_copies() {
    let mut o = Ofproto::with_default_flow(0);
    for m in 1..=10 {
        assert!(meter_mod(&mut o, MeterModCommand::Add, m).is_ok());
    }
    let v = Versions::new(o);
    // Table 0: flows through meters 1..=10 and flows through none; table 3: meter 2 only.
    {
        let mut w = v.write();
        for i in 0..60u32 {
            let m = (!i.is_multiple_of(3)).then_some(1 + i % 10);
            assert!(w.flow_mod(&metered(0, 0, i, m), 0).is_ok());
        }
        for i in 0..5 {
            assert!(w.flow_mod(&metered(3, 0, i, Some(2)), 0).is_ok());
        }
        // A modify moves a flow from meter 5 to meter 6.
        let mut fm = metered(0, 0, 4, Some(6));
        fm.command = FlowModCommand::ModifyStrict;
        assert!(w.flow_mod(&fm, 0).is_ok());
    }
    check_both(&v);
    // A failed transaction deleting meter 1 leaves its flows and the indexes as they were.
    {
        let mut w = v.write();
        let before = w.meter_flow_count(1);
        assert!(before > 0);
        let r: Result<(), OfError> = w.atomically(|o| {
            meter_mod(o, MeterModCommand::Delete, 1)?;
            assert_eq!(o.meter_flow_count(1), 0);
            meter_mod(o, MeterModCommand::Modify, 77)
        });
        assert!(r.is_err());
        assert_eq!(w.meter_flow_count(1), before);
    }
    check_both(&v);
    // Deleting meter 2 empties table 3 and takes only meter 2's flows from table 0, in the
    // order they were added.
    {
        let mut w = v.write();
        let n0 = w.tables()[0].len();
        let of0 = w.tables()[0].meter_index().n_rules_of(2);
        let _ = w.take_removed();
        assert!(meter_mod(&mut w, MeterModCommand::Delete, 2).is_ok());
        assert!(w.tables()[3].is_empty());
        assert_eq!(w.tables()[0].len(), n0 - of0);
        assert!(w
            .tables()
            .iter()
            .all(|t| t.iter().all(|r| r.meter() != Some(2))));
        let gone = w.take_removed();
        assert_eq!(gone.len(), of0 + 5);
        assert!(gone.iter().all(|r| r.reason == RemovedReason::MeterDelete));
        let ids: Vec<u64> = gone
            .iter()
            .filter(|r| r.rule.table_id == 0)
            .map(|r| r.rule.id)
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted);
    }
    check_both(&v);
    // Deleting every meter takes every metered flow and leaves the others.
    {
        let mut w = v.write();
        let unmetered = w.tables()[0].iter().filter(|r| r.meter().is_none()).count();
        assert!(meter_mod(&mut w, MeterModCommand::Delete, OFPM_ALL).is_ok());
        assert_eq!(w.tables()[0].len(), unmetered);
        assert!(w.meter_flow_counts().is_empty());
    }
    check_both(&v);
}
