//! A bundle's adds filed into classifier subtables while they arrive, so that its commit
//! adopts each subtable whole instead of inserting rule by rule.
//!
//! [`BuiltAdds::push`] takes a bundle's [`PreparedAdd`]s in order, gives each its position
//! among them as a provisional id, and files it into a `classifier::Prebuilt` per (table,
//! mask): hash table, stage indices and per-priority counts grow while the client is still
//! sending. [`Ofproto::adopt_adds`] applies them at the commit when that gives exactly what
//! applying them one by one ([`Ofproto::add_prepared`], in order) would give:
//!
//! * the bundle holds nothing but these adds (port_mods aside, which touch no table): the
//!   caller stops filing at the first other message;
//! * no add checks overlap, and no two adds have the same match and priority
//!   ([`BuiltAdds::push`] refuses them: the later would replace the earlier);
//! * no table has a subtable with an add's mask, so no add replaces a rule;
//! * every table has room for all of its adds;
//! * every add passes its checks (TLV table, groups, meters and ports its instructions
//!   use): with nothing else in the bundle and nothing replaced, each add's checks see the
//!   same switch whether the adds before it are in or not;
//! * no flow monitor is listening (its events would come out in the subtables' order).
//!
//! Then each rule gets the id it would have had (the counter's value plus its position),
//! the commit's time, and is filed in the table's id index, change record and undo journal
//! (so a transaction that fails later still undoes it); the prefixes are merged at the
//! re-ranking when the transaction ends. Otherwise nothing changes and the adds come back
//! in their order ([`BuiltAdds::into_adds`]) for the one-by-one path, which gives the
//! errors, replacements and events.

use super::*;
use crate::table::{Built, ClsRule};
use classifier::RuleId;
use packet::flow::FLOW_KEY_WORDS;

/// Groups of (table, mask) beyond which a bundle's adds are not filed apart.
const MAX_GROUPS: usize = 64;

/// A bundle's adds filed per (table, mask) (see the module documentation).
#[derive(Default)]
pub struct BuiltAdds {
    groups: Vec<(u8, Built)>,
    /// Each add's rule, by provisional id (its position). Its classifier rule holds `hole`
    /// meanwhile, so that the commit can fill in ids and times in the adds' order (their
    /// memory's order) and only then visit the classifier rules in the subtables' order.
    rules: Vec<Option<Arc<Rule>>>,
    hole: Option<Arc<Rule>>,
    /// Positions of the adds whose checks depend on the switch ([`passes_anywhere`] is
    /// false): only these are checked at the commit.
    to_check: Vec<usize>,
    /// The mask `Arc` of the last add filed and its group: a run of adds sharing one
    /// (`MaskCache`) finds its group without comparing masks.
    last: Option<(Arc<[u64; FLOW_KEY_WORDS]>, usize)>,
}

/// True if `r`, a prepared add (whose match has no `tun_metadata` field), passes the
/// checks against any switch (TLV table, groups, meters, ports; see `Ofproto::check_add`):
/// its instructions use no meter, and its actions are outputs to ports that are always
/// valid. W5's `actions=output:1` is such an add.
fn passes_anywhere(r: &Rule) -> bool {
    r.instructions.iter().all(|i| match i {
        Instruction::Meter(_) => false,
        Instruction::ApplyActions(acts) | Instruction::WriteActions(acts) => acts.iter().all(|a| {
            matches!(a, Action::Output { port, .. } if check::out_port_ok(*port, false))
                && a.validate().is_ok()
        }),
        _ => true,
    })
}

impl std::fmt::Debug for BuiltAdds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltAdds")
            .field("adds", &self.rules.len())
            .field("groups", &self.groups.len())
            .finish()
    }
}

/// The rule a filed classifier rule holds until its own is put back.
fn hole(table_id: u8) -> Arc<Rule> {
    Arc::new(Rule {
        id: 0,
        table_id,
        priority: 0,
        match_: Match::new(),
        cookie: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        flags: FlowModFlags::empty(),
        instructions: Vec::new(),
        created_ms: 0,
        modified_ms: 0,
        stats: Arc::default(),
    })
}

impl BuiltAdds {
    /// Number of adds taken.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// No add taken?
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Files `p` as the next add; hands it back if it cannot be adopted with the others (it
    /// checks overlap, an add taken has its match and priority, too many groups).
    pub fn push(&mut self, p: PreparedAdd) -> Result<(), PreparedAdd> {
        let PreparedAdd { mut rule } = p;
        let (tid, flags) = (rule.payload().table_id, rule.payload().flags);
        if flags.contains(FlowModFlags::CHECK_OVERLAP) {
            return Err(PreparedAdd { rule });
        }
        let mask = Arc::clone(rule.mask_arc());
        let fast = match &self.last {
            Some((m, g)) if Arc::ptr_eq(m, &mask) => {
                Some(*g).filter(|&g| self.groups.get(g).is_some_and(|(t, _)| *t == tid))
            }
            _ => None,
        };
        let g = fast.or_else(|| {
            self.groups
                .iter()
                .rposition(|(t, b)| *t == tid && b.mask() == rule.mask())
        });
        let g = match g {
            Some(g) => g,
            None if self.groups.len() < MAX_GROUPS => {
                let b = Built::new(*rule.mask(), classifier::Config::flow_key());
                self.groups.push((tid, b));
                self.groups.len() - 1
            }
            None => return Err(PreparedAdd { rule }),
        };
        let hole = Arc::clone(self.hole.get_or_insert_with(|| hole(tid)));
        let Some(c) = Arc::get_mut(&mut rule) else {
            return Err(PreparedAdd { rule });
        };
        c.set_id(RuleId::new(self.rules.len() as u64));
        let own = std::mem::replace(c.payload_mut(), hole);
        let Some((_, b)) = self.groups.get_mut(g) else {
            unreachable!("a group just found or made");
        };
        match b.push(rule) {
            Ok(()) => {
                self.last = Some((mask, g));
                if !passes_anywhere(&own) {
                    self.to_check.push(self.rules.len());
                }
                self.rules.push(Some(own));
                Ok(())
            }
            Err(mut rule) => {
                if let Some(c) = Arc::get_mut(&mut rule) {
                    *c.payload_mut() = own;
                }
                Err(PreparedAdd { rule })
            }
        }
    }

    /// The adds taken, in the order they came.
    pub fn into_adds(mut self) -> Vec<PreparedAdd> {
        let mut at: Vec<Option<Arc<ClsRule>>> = (0..self.rules.len()).map(|_| None).collect();
        for (_, b) in std::mem::take(&mut self.groups) {
            for mut r in b.into_rules() {
                let k = r.id().as_u64() as usize;
                let own = self.rules.get_mut(k).and_then(Option::take);
                if let (Some(c), Some(own)) = (Arc::get_mut(&mut r), own) {
                    *c.payload_mut() = own;
                }
                if let Some(slot) = at.get_mut(k) {
                    *slot = Some(r);
                }
            }
        }
        at.into_iter()
            .flatten()
            .map(|rule| PreparedAdd { rule })
            .collect()
    }
}

impl Ofproto {
    /// Applies `adds`, all of a bundle's messages that change tables, in order, if they can
    /// be adopted whole (see the module documentation); otherwise changes nothing and hands
    /// them back.
    pub fn adopt_adds(&mut self, adds: BuiltAdds, now_ms: u64) -> Result<(), BuiltAdds> {
        if adds.is_empty() {
            return Ok(());
        }
        if !self.adoptable(&adds) {
            return Err(adds);
        }
        let BuiltAdds {
            groups,
            mut rules,
            to_check,
            ..
        } = adds;
        let mut unchecked = to_check.iter().copied().peekable();
        let base = self.next_id;
        let n = rules.len() as u64;
        self.next_id += n;
        for (tid, b) in &groups {
            if let Some(t) = self.tables.get_mut(usize::from(*tid)) {
                t.reserve_records(b.len());
            }
        }
        // In the adds' order: ids, times, records, learns.
        for (k, slot) in rules.iter_mut().enumerate() {
            let Some(r) = slot.as_mut().and_then(Arc::get_mut) else {
                unreachable!("every add's rule is there, unshared");
            };
            r.id = base + k as u64;
            r.created_ms = now_ms;
            r.modified_ms = now_ms;
            if let Some(t) = self.tables.get_mut(usize::from(r.table_id)) {
                t.record_adopted(r);
            }
            // Only an add that may not pass anywhere can learn.
            if unchecked.next_if_eq(&k).is_some() {
                for key in learned::learn_refs(r) {
                    *self.learners.entry(key).or_insert(0) += 1;
                }
            }
        }
        // In the subtables' order: each classifier rule takes its id and rule.
        for (tid, b) in groups {
            let Some(t) = self.tables.get_mut(usize::from(tid)) else {
                unreachable!("checked: the table exists");
            };
            let r = t.adopt(b, |c| {
                let k = c.id().as_u64();
                let Some(own) = rules.get_mut(k as usize).and_then(Option::take) else {
                    unreachable!("each add's rule is taken once");
                };
                c.set_id(RuleId::new(base + k));
                *c.payload_mut() = own;
            });
            if r.is_err() {
                unreachable!("checked: the table takes the subtable");
            }
        }
        self.version += n;
        self.flush_learned(now_ms);
        Ok(())
    }

    /// True if every condition of the module documentation holds for `adds` now.
    fn adoptable(&self, adds: &BuiltAdds) -> bool {
        if self.monitoring {
            return false;
        }
        let mut room: BTreeMap<u8, usize> = BTreeMap::new();
        for (tid, b) in &adds.groups {
            let Some(t) = self.tables.get(usize::from(*tid)) else {
                return false;
            };
            if !t.can_adopt(b) {
                return false;
            }
            *room.entry(*tid).or_insert(0) += b.len();
        }
        let fits = room.iter().all(|(&tid, &n)| {
            self.tables
                .get(usize::from(tid))
                .is_some_and(|t| t.len().saturating_add(n) <= t.max_entries)
        });
        fits && adds.to_check.iter().all(|&k| {
            adds.rules.get(k).and_then(Option::as_ref).is_some_and(|r| {
                self.tlv.check_flow(&r.match_, &r.instructions).is_ok()
                    && self.check_instructions(&r.match_, &r.instructions).is_ok()
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::oxm::Field;
    use packet::flow::FlowKey;

    /// `priority=P,ip,nw_dst=10.0.0.I/PLEN,actions=output:1` in table `table`.
    fn add(table: u8, prio: u16, i: u32, plen: u32) -> FlowMod {
        let mut fm = FlowMod::new(FlowModCommand::Add);
        fm.table_id = table;
        fm.priority = prio;
        let mask = if plen == 32 {
            u32::MAX
        } else {
            !(u32::MAX >> plen)
        };
        fm.match_ = Match::new().with(Field::EthType, 0x0800).with_masked(
            Field::Ipv4Dst,
            u128::from(0x0a00_0000 | i),
            u128::from(mask),
        );
        fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(1)])];
        fm
    }

    fn bundle() -> Vec<FlowMod> {
        let mut v: Vec<FlowMod> = (0..200).map(|i| add(0, 100, i, 32)).collect();
        v.extend((0..20).map(|i| add(0, 90, i << 8, 24)));
        v.extend((0..20).map(|i| add(3, 100, i, 32)));
        v.push(add(0, 80, 5, 32));
        v
    }

    fn prep(fm: &FlowMod) -> PreparedAdd {
        PreparedAdd::new(fm.clone(), &mut None).expect("prepared")
    }

    fn built(fms: &[FlowMod]) -> BuiltAdds {
        let mut b = BuiltAdds::default();
        for fm in fms {
            assert!(b.push(prep(fm)).is_ok(), "filed");
        }
        b
    }

    /// Applies `fms` one by one in a transaction, as a commit without adoption does.
    fn one_by_one(of: &mut Ofproto, fms: &[FlowMod], now: u64) -> Result<(), OfError> {
        of.atomically(|of| {
            for fm in fms {
                of.add_prepared(prep(fm), now)?;
            }
            Ok(())
        })
    }

    fn dump(o: &Ofproto) -> Vec<String> {
        o.tables()
            .iter()
            .flat_map(|t| t.rules())
            .map(|r| {
                let (id, p, m, t) = (r.id, r.priority, &r.match_, r.created_ms);
                format!("{} {id} {p} {m:?} {t} {}", r.table_id, r.modified_ms)
            })
            .collect()
    }

    fn hit(of: &Ofproto, table: usize, dst: u32) -> Option<(u64, u16)> {
        let mut k = FlowKey::ZERO;
        k.dl_type = 0x0800;
        k.nw_dst = (0x0a00_0000 | dst).to_be_bytes();
        let mut wc = FlowKey::ZERO;
        of.tables()[table]
            .lookup(&k, &mut wc)
            .map(|r| (r.id, r.priority))
    }

    #[test]
    fn adoption_gives_what_adding_one_by_one_gives() {
        let (mut a, mut b) = (Ofproto::with_default_flow(0), Ofproto::with_default_flow(0));
        let fms = bundle();
        one_by_one(&mut a, &fms, 7).expect("applied");
        let adds = built(&fms);
        assert_eq!(adds.len(), fms.len());
        let r: Result<(), OfError> =
            b.atomically(|b| b.adopt_adds(adds, 7).map_err(|_| OfError::bad_request(0)));
        assert!(r.is_ok(), "adopted");
        assert_eq!(dump(&a), dump(&b), "same rules, ids and times");
        assert_eq!(a.tables()[0].n_subtables(), b.tables()[0].n_subtables());
        for dst in [0, 5, 199, 200, 0x300, 0x1305, 0x1500] {
            assert_eq!(hit(&a, 0, dst), hit(&b, 0, dst), "10.0.0.{dst}");
            assert_eq!(hit(&a, 3, dst), hit(&b, 3, dst));
        }
        assert_eq!(hit(&b, 0, 5).map(|h| h.1), Some(100));
        // Later changes find the adopted rules.
        for o in [&mut a, &mut b] {
            let mut del = add(0, 100, 5, 32);
            del.command = FlowModCommand::DeleteStrict;
            o.flow_mod(&del, 8).expect("deleted");
            o.flow_mod(&add(0, 100, 7, 32), 8).expect("replaced");
        }
        assert_eq!(dump(&a), dump(&b));
        assert_eq!(hit(&b, 0, 5).map(|h| h.1), Some(90), "the /24 under it");
    }

    #[test]
    fn adds_sharing_one_mask_go_to_their_own_tables() {
        let fms: Vec<FlowMod> = (0..40)
            .map(|i| add((i % 2) as u8 * 3, 100, i, 32))
            .collect();
        let (mut a, mut b) = (Ofproto::new(), Ofproto::new());
        one_by_one(&mut a, &fms, 7).expect("applied");
        let mut masks = None;
        let mut adds = BuiltAdds::default();
        for fm in &fms {
            let p = PreparedAdd::new(fm.clone(), &mut masks).expect("prepared");
            assert!(adds.push(p).is_ok());
        }
        let r: Result<(), OfError> =
            b.atomically(|b| b.adopt_adds(adds, 7).map_err(|_| OfError::bad_request(0)));
        assert!(r.is_ok());
        assert_eq!(dump(&a), dump(&b));
        assert_eq!(b.tables()[0].len(), 20);
        assert_eq!(b.tables()[3].len(), 20);
    }

    #[test]
    fn a_mask_the_table_has_falls_back_to_one_by_one() {
        let (mut a, mut b) = (Ofproto::with_default_flow(0), Ofproto::with_default_flow(0));
        let first = add(0, 100, 1000, 32);
        a.flow_mod(&first, 1).expect("added");
        b.flow_mod(&first, 1).expect("added");
        let fms = bundle();
        one_by_one(&mut a, &fms, 7).expect("applied");
        let back = match b.adopt_adds(built(&fms), 7) {
            Ok(()) => panic!("the table has the mask"),
            Err(back) => back,
        };
        let adds = back.into_adds();
        assert_eq!(adds.len(), fms.len(), "every add back, in order");
        for (p, fm) in adds.iter().zip(&fms) {
            assert_eq!(p.rule().match_, fm.match_);
        }
        let r: Result<(), OfError> = b.atomically(|b| {
            for p in adds {
                b.add_prepared(p, 7)?;
            }
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(dump(&a), dump(&b));
    }

    #[test]
    fn identical_adds_and_overlap_checks_are_not_filed() {
        let mut adds = BuiltAdds::default();
        assert!(adds.push(prep(&add(0, 100, 1, 32))).is_ok());
        assert!(
            adds.push(prep(&add(0, 101, 1, 32))).is_ok(),
            "another priority"
        );
        assert!(adds.push(prep(&add(0, 100, 1, 32))).is_err(), "identical");
        let mut over = add(0, 100, 2, 32);
        over.flags = FlowModFlags::CHECK_OVERLAP;
        assert!(adds.push(prep(&over)).is_err(), "checks overlap");
        assert_eq!(adds.len(), 2);
        // The caller then applies all of them one by one: the later identical add replaces.
        let mut of = Ofproto::new();
        let mut identical = add(0, 100, 1, 32);
        identical.instructions = vec![Instruction::ApplyActions(vec![Action::output(9)])];
        let r: Result<(), OfError> = of.atomically(|of| {
            for p in adds.into_adds() {
                of.add_prepared(p, 1)?;
            }
            of.add_prepared(prep(&identical), 1)?;
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(of.tables()[0].len(), 2);
        let r = of.tables()[0]
            .find_strict(&identical.match_, 100, &of.tlv)
            .expect("the later add");
        assert_eq!(r.instructions, identical.instructions);
        assert_eq!(r.id, 3, "ids count every add applied");
    }

    #[test]
    fn a_failing_add_falls_back_and_the_whole_bundle_is_undone() {
        let mut of = Ofproto::with_default_flow(0);
        let before = dump(&of);
        let mut fms = bundle();
        let mut bad = add(0, 100, 77_000, 32);
        bad.instructions = vec![Instruction::ApplyActions(vec![Action::Group(9)])];
        fms.insert(150, bad.clone());
        let want = Ofproto::new().flow_mod(&bad, 0).expect_err("no such group");
        let r: Result<(), OfError> = of.atomically(|of| {
            let Err(back) = of.adopt_adds(built(&fms), 7) else {
                panic!("an add fails its checks");
            };
            for p in back.into_adds() {
                of.add_prepared(p, 7)?;
            }
            Ok(())
        });
        assert_eq!(r, Err(want));
        assert_eq!(dump(&of), before);
        assert_eq!(of.tables()[0].n_subtables(), 1);
        // A transaction that fails after an adoption undoes the adoption too.
        let r: Result<(), OfError> = of.atomically(|of| {
            of.adopt_adds(built(&bundle()), 7)
                .map_err(|_| OfError::bad_request(1))?;
            Err(OfError::bad_request(0))
        });
        assert_eq!(r, Err(OfError::bad_request(0)));
        assert_eq!(dump(&of), before);
        assert_eq!(hit(&of, 0, 5), Some((1, 0)), "the default flow");
        assert_eq!(of.tables()[0].n_subtables(), 1);
        // And ids start where they did.
        of.flow_mod(&add(0, 1, 1, 32), 9).expect("added");
        let r = of.tables()[0].find_strict(&add(0, 1, 1, 32).match_, 1, &of.tlv);
        assert_eq!(r.map(|r| r.id), Some(2));
    }

    #[test]
    fn a_full_table_or_a_flow_monitor_falls_back() {
        let mut of = Ofproto::new();
        if let Some(t) = of.table_mut(3) {
            t.max_entries = 10;
        }
        assert!(
            of.adopt_adds(built(&bundle()), 1).is_err(),
            "table 3 is too small"
        );
        if let Some(t) = of.table_mut(3) {
            t.max_entries = 20;
        }
        of.set_monitoring(true);
        assert!(of.adopt_adds(built(&bundle()), 1).is_err(), "monitored");
        of.set_monitoring(false);
        assert!(
            of.adopt_adds(built(&bundle()), 1).is_ok(),
            "room for exactly 20"
        );
        assert_eq!(of.tables()[3].len(), 20);
        assert_eq!(of.tables()[0].len(), bundle().len() - 20);
    }
}
