//! Which rules of a table use which meters, kept as rules come and go.
//!
//! ## What
//! Each table ([`crate::table::Table`]) keeps a [`MeterIndex`]: for every meter some rule
//! uses ([`Rule::meter`]: its meter instruction, else its first meter action), the ids of
//! those rules; and for every such rule, its meter. It answers, in time proportional to
//! the answer and not to the table:
//! * which rules go when a meter is deleted (`del-meters meter=X` removes its flows);
//! * which rules go when every meter is deleted (the rules using any meter);
//! * each meter's flow count for meter statistics.
//!
//! ## How
//! The table files and unfiles rules here wherever it does in its group index (see
//! [`crate::group_index`]), so flow_mods, expiry, bundle rollbacks and the other copy's
//! catch-up keep it exact with no code of their own.
//!
//! ## Cost
//! A rule using no meter costs its insertion one look at its instructions and actions. A
//! rule using a meter costs two map entries and no allocation while it is its meter's only
//! rule; a meter's rule set becomes a hash set from its second rule on.

use crate::group_index::Ids;
use crate::rule::Rule;
use classifier::IdBuild;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct MeterIndex {
    /// Meter id (as a `u64`, for the id hasher) to the rules using it; never empty.
    meters: HashMap<u64, Ids, IdBuild>,
    /// Rule id to its meter; only rules that use one.
    rules: HashMap<u64, u32, IdBuild>,
}

impl MeterIndex {
    /// Files `r`, under an id the index does not hold (a new rule, or one just removed).
    pub fn add(&mut self, r: &Rule) {
        let Some(m) = r.meter() else {
            // Nothing to file; an entry the id had (see below) goes.
            self.remove(r.id);
            return;
        };
        if let Some(stale) = self.rules.insert(r.id, m) {
            // Callers remove an id before filing it again; should one not, the old entry
            // goes now.
            self.unfile(r.id, stale);
        }
        match self.meters.entry(u64::from(m)) {
            Entry::Vacant(e) => {
                e.insert(Ids::One(r.id));
            }
            Entry::Occupied(e) => e.into_mut().insert(r.id),
        }
    }

    /// Takes rule `id` out, if it uses a meter.
    pub fn remove(&mut self, id: u64) {
        if self.rules.is_empty() {
            return;
        }
        if let Some(m) = self.rules.remove(&id) {
            self.unfile(id, m);
        }
    }

    /// Files `r` in place of the rule with its id (a modify, a catch-up).
    pub fn replace(&mut self, r: &Rule) {
        self.remove(r.id);
        self.add(r);
    }

    fn unfile(&mut self, id: u64, m: u32) {
        let Entry::Occupied(mut e) = self.meters.entry(u64::from(m)) else {
            return;
        };
        if e.get_mut().remove(id) {
            e.remove();
        }
    }

    /// Forgets every rule.
    pub fn clear(&mut self) {
        self.meters = HashMap::default();
        self.rules = HashMap::default();
    }

    /// How many rules use some meter.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// True if no rule uses a meter.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The ids of the rules that use some meter, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = u64> + '_ {
        self.rules.keys().copied()
    }

    /// The ids of the rules that use meter `m`, in no particular order.
    pub fn rules_of(&self, m: u32) -> impl Iterator<Item = u64> + '_ {
        self.meters
            .get(&u64::from(m))
            .into_iter()
            .flat_map(Ids::iter)
    }

    /// How many rules use meter `m`.
    pub fn n_rules_of(&self, m: u32) -> usize {
        self.meters.get(&u64::from(m)).map_or(0, Ids::len)
    }

    /// Every meter some rule uses, with its number of rules, in no particular order.
    pub fn counts(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        self.meters.iter().map(|(m, ids)| (*m as u32, ids.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::{Action, FlowModFlags, Instruction, Match};
    use std::sync::Arc;

    fn rule(id: u64, instructions: Vec<Instruction>) -> Rule {
        Rule {
            id,
            table_id: 0,
            priority: 1,
            match_: Match::new(),
            cookie: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: FlowModFlags::empty(),
            instructions,
            created_ms: 0,
            modified_ms: 0,
            stats: Arc::default(),
        }
    }

    /// The index against a scan of the rules it was given (the reference).
    fn check(ix: &MeterIndex, rules: &[Rule]) {
        let mut of: HashMap<u32, Vec<u64>> = HashMap::new();
        for r in rules {
            if let Some(m) = r.meter() {
                of.entry(m).or_default().push(r.id);
            }
        }
        let mut got: Vec<(u32, usize)> = ix.counts().collect();
        got.sort_unstable();
        let mut want: Vec<(u32, usize)> = of.iter().map(|(m, v)| (*m, v.len())).collect();
        want.sort_unstable();
        assert_eq!(got, want);
        let mut all = Vec::new();
        for (m, mut ids) in of {
            ids.sort_unstable();
            let mut got: Vec<u64> = ix.rules_of(m).collect();
            got.sort_unstable();
            assert_eq!(got, ids, "meter {m}");
            assert_eq!(ix.n_rules_of(m), ids.len());
            all.extend(ids);
        }
        all.sort_unstable();
        let mut got: Vec<u64> = ix.rules().collect();
        got.sort_unstable();
        assert_eq!(got, all);
        assert_eq!(ix.len(), all.len());
    }

    #[test]
    fn matches_a_scan_over_random_changes() {
        let mut ix = MeterIndex::default();
        let mut live: Vec<Rule> = Vec::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..3000u64 {
            let id = next() % 64;
            let m = (next() % 5) as u32;
            // A meter instruction, a meter action, both (the instruction counts), or none.
            let insts = match next() % 4 {
                0 => vec![Instruction::Meter(m)],
                1 => vec![Instruction::ApplyActions(vec![
                    Action::output(1),
                    Action::Meter(m),
                ])],
                2 => vec![
                    Instruction::Meter(m),
                    Instruction::ApplyActions(vec![Action::Meter(m + 1)]),
                ],
                _ => vec![Instruction::ApplyActions(vec![Action::output(2)])],
            };
            let r = rule(id, insts);
            if next() % 3 == 0 {
                ix.remove(id);
                live.retain(|r| r.id != id);
            } else if next() % 8 == 0 {
                // Filed again without a removal: counted once.
                ix.add(&r);
                live.retain(|r| r.id != id);
                live.push(r);
            } else {
                ix.replace(&r);
                live.retain(|r| r.id != id);
                live.push(r);
            }
            if step % 50 == 0 {
                check(&ix, &live);
            }
        }
        check(&ix, &live);
        ix.clear();
        check(&ix, &[]);
    }
}
