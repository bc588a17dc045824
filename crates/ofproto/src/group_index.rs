//! Which rules of a table send to which groups, kept as rules come and go.
//!
//! ## What
//! Each table ([`crate::table::Table`]) keeps a [`GroupIndex`]: for every group some rule's
//! group actions name, the ids of those rules and the group's `ref_count` share (one per
//! group action, nested lists included, as OVS 3.1 counts: a rule naming a group twice
//! counts 2); and for every such rule, the groups it names. It answers, in time
//! proportional to the answer and not to the table:
//! * which rules go when a group is deleted (`del-groups group_id=X` removes its flows, and
//!   only those are visited: OVS keeps a rule list per group for the same reason);
//! * which rules go when every group is deleted (the rules naming any group);
//! * which rules an `out_group` selection (`dump-flows`, `del-flows`, a flow monitor's
//!   initial dump) has to look at: only those naming the group;
//! * each group's `ref_count` for group stats, without reaching into the rules.
//!
//! ## How
//! The table updates the index wherever it updates its other per-rule sets (rules with a
//! timeout, rules asking for flow-removed): insertion, replacement (a modify or a catch-up),
//! removal, emptying, and a subtable adopted whole. So every path that changes a table —
//! flow_mods, expiry, bundle rollbacks replaying the undo journal, the lagging copy's
//! catch-up (see `crate::switch::versions`) — keeps it exact with no code of its own. A
//! removal reads the rule's groups from the index (`rules`), not from the rule: removing a
//! rule that names no group costs one lookup in an empty map or a miss, and the rule's
//! actions are not walked again.
//!
//! ## Cost
//! A rule naming no group costs its insertion one walk over its actions (hot: the rule was
//! just built) and nothing else. A rule naming one group costs two map entries and no
//! allocation (`Named::One`, `Ids::One`); a group's rule set becomes a hash set from its
//! second rule on. Each copy of the table keeps its own index (like its classifier index):
//! 64 bytes of map entries a rule naming one group, per copy (more while a map has room
//! to grow).

use crate::rule::Rule;
use crate::table::IdSet;
use classifier::IdBuild;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// The groups of one rule's group actions, one entry per action (repeats kept).
#[derive(Clone, Debug)]
enum Named {
    One(u32),
    Many(Box<[u32]>),
}

impl Named {
    /// The groups `r` names, or `None` if it names none.
    fn of(r: &Rule) -> Option<Named> {
        let mut first = None;
        let mut all: Vec<u32> = Vec::new();
        r.each_group(|g| match first {
            None => first = Some(g),
            Some(f) => {
                if all.is_empty() {
                    all.push(f);
                }
                all.push(g);
            }
        });
        match (first, all.is_empty()) {
            (None, _) => None,
            (Some(g), true) => Some(Named::One(g)),
            (Some(_), false) => Some(Named::Many(all.into_boxed_slice())),
        }
    }

    fn as_slice(&self) -> &[u32] {
        match self {
            Named::One(g) => std::slice::from_ref(g),
            Named::Many(v) => v,
        }
    }
}

/// The rules that name one group: most groups have one (a load balancer's VIP flow). The
/// set is boxed so that an entry of one rule stays small.
#[derive(Clone, Debug)]
pub(crate) enum Ids {
    One(u64),
    Many(Box<IdSet>),
}

impl Ids {
    /// Adds rule `id` (already there: nothing changes), becoming a set at the second id.
    pub(crate) fn insert(&mut self, id: u64) {
        match self {
            Ids::One(x) if *x == id => {}
            Ids::One(x) => {
                let mut s = IdSet::default();
                s.insert(*x);
                s.insert(id);
                *self = Ids::Many(Box::new(s));
            }
            Ids::Many(s) => {
                s.insert(id);
            }
        }
    }

    /// Takes rule `id` out of a set; true when no id would be left (`One(id)` itself is
    /// left to the caller, which removes the whole entry).
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        match self {
            Ids::One(x) => *x == id,
            Ids::Many(s) => {
                s.remove(&id);
                s.is_empty()
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Ids::One(_) => 1,
            Ids::Many(s) => s.len(),
        }
    }

    /// The ids, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (one, many) = match self {
            Ids::One(x) => (Some(*x), None),
            Ids::Many(s) => (None, Some(s.iter().copied())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

/// One group's entry: its `ref_count` share and its rules.
#[derive(Clone, Debug)]
struct Refs {
    /// Group actions naming the group, over all of `rules`: never 0 (the entry goes).
    count: u64,
    rules: Ids,
}

// An index entry, a group's or a rule's: an 8-byte key and at most 24 bytes of value.
const _: () = assert!(std::mem::size_of::<Refs>() == 24);
const _: () = assert!(std::mem::size_of::<Named>() <= 24);

/// See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct GroupIndex {
    /// Group id (as a `u64`, for the id hasher) to its entry.
    groups: HashMap<u64, Refs, IdBuild>,
    /// Rule id to the groups it names; only rules that name some group.
    rules: HashMap<u64, Named, IdBuild>,
}

impl GroupIndex {
    /// Files `r`, under an id the index does not hold (a new rule, or one just removed).
    pub fn add(&mut self, r: &Rule) {
        let Some(named) = Named::of(r) else {
            // Nothing to file; an entry the id had (see below) goes.
            self.remove(r.id);
            return;
        };
        for &g in named.as_slice() {
            match self.groups.entry(u64::from(g)) {
                Entry::Vacant(e) => {
                    e.insert(Refs {
                        count: 1,
                        rules: Ids::One(r.id),
                    });
                }
                Entry::Occupied(e) => {
                    let refs = e.into_mut();
                    refs.count += 1;
                    refs.rules.insert(r.id);
                }
            }
        }
        if let Some(stale) = self.rules.insert(r.id, named) {
            // Callers remove an id before filing it again; should one not, the old
            // entry's counts go now.
            self.unfile(r.id, &stale);
        }
    }

    /// Takes rule `id` out, if it names some group.
    pub fn remove(&mut self, id: u64) {
        if self.rules.is_empty() {
            return;
        }
        if let Some(named) = self.rules.remove(&id) {
            self.unfile(id, &named);
        }
    }

    /// Files `r` in place of the rule with its id (a modify, a catch-up).
    pub fn replace(&mut self, r: &Rule) {
        self.remove(r.id);
        self.add(r);
    }

    fn unfile(&mut self, id: u64, named: &Named) {
        for &g in named.as_slice() {
            let Entry::Occupied(mut e) = self.groups.entry(u64::from(g)) else {
                continue;
            };
            let refs = e.get_mut();
            refs.count = refs.count.saturating_sub(1);
            if refs.count == 0 {
                e.remove();
                continue;
            }
            // `One(id)` with a count left is this rule's own repeat, gone at count 0.
            refs.rules.remove(id);
        }
    }

    /// Forgets every rule.
    pub fn clear(&mut self) {
        self.groups = HashMap::default();
        self.rules = HashMap::default();
    }

    /// How many rules name some group.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// True if no rule names a group.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The ids of the rules that name some group, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = u64> + '_ {
        self.rules.keys().copied()
    }

    /// The ids of the rules that name group `g`, in no particular order.
    pub fn rules_of(&self, g: u32) -> impl Iterator<Item = u64> + '_ {
        self.groups
            .get(&u64::from(g))
            .into_iter()
            .flat_map(|r| r.rules.iter())
    }

    /// How many rules name group `g`.
    pub fn n_rules_of(&self, g: u32) -> usize {
        self.groups.get(&u64::from(g)).map_or(0, |r| r.rules.len())
    }

    /// Group `g`'s `ref_count` share: its group actions in this table's rules.
    pub fn ref_count(&self, g: u32) -> u64 {
        self.groups.get(&u64::from(g)).map_or(0, |r| r.count)
    }

    /// Every group some rule names, with its `ref_count` share, in no particular order.
    pub fn ref_counts(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.groups.iter().map(|(g, r)| (*g as u32, r.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::{Action, FlowModFlags, Instruction, Match};
    use std::sync::Arc;

    fn rule(id: u64, acts: Vec<Action>) -> Rule {
        Rule {
            id,
            table_id: 0,
            priority: 1,
            match_: Match::new(),
            cookie: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: FlowModFlags::empty(),
            instructions: vec![Instruction::ApplyActions(acts)],
            created_ms: 0,
            modified_ms: 0,
            stats: Arc::default(),
        }
    }

    /// The index against a scan of the rules it was given (the reference).
    fn check(ix: &GroupIndex, rules: &[Rule]) {
        let mut counts: HashMap<u32, u64> = HashMap::new();
        let mut of: HashMap<u32, Vec<u64>> = HashMap::new();
        let mut grouped = Vec::new();
        for r in rules {
            let mut any = false;
            r.each_group(|g| {
                *counts.entry(g).or_default() += 1;
                of.entry(g).or_default().push(r.id);
                any = true;
            });
            if any {
                grouped.push(r.id);
            }
        }
        let mut got: Vec<(u32, u64)> = ix.ref_counts().collect();
        got.sort_unstable();
        let mut want: Vec<(u32, u64)> = counts.into_iter().collect();
        want.sort_unstable();
        assert_eq!(got, want);
        for (g, mut ids) in of {
            ids.sort_unstable();
            ids.dedup();
            let mut got: Vec<u64> = ix.rules_of(g).collect();
            got.sort_unstable();
            assert_eq!(got, ids, "group {g}");
            assert_eq!(ix.n_rules_of(g), ids.len());
        }
        let mut got: Vec<u64> = ix.rules().collect();
        got.sort_unstable();
        grouped.sort_unstable();
        assert_eq!(got, grouped);
        assert_eq!(ix.len(), grouped.len());
    }

    #[test]
    fn follows_rules_with_repeated_and_nested_groups() {
        let mut ix = GroupIndex::default();
        let mut rules = vec![
            rule(1, vec![Action::Group(7)]),
            rule(2, vec![Action::Group(7), Action::Group(7)]),
            rule(
                3,
                vec![
                    Action::output(1),
                    Action::Clone(vec![
                        Action::Group(8),
                        Action::Clone(vec![Action::Group(7)]),
                    ]),
                ],
            ),
            rule(4, vec![Action::output(2)]),
            rule(5, vec![Action::Group(9), Action::Group(9)]),
        ];
        for r in &rules {
            ix.add(r);
        }
        check(&ix, &rules);
        assert_eq!(ix.ref_count(7), 4);
        assert_eq!(ix.ref_count(9), 2);
        assert_eq!(ix.n_rules_of(9), 1);
        // Rule 2 names 7 twice: removing it takes both references and the id once.
        ix.remove(2);
        rules.retain(|r| r.id != 2);
        check(&ix, &rules);
        // A rule naming a group twice, alone in it, goes with its entry.
        ix.remove(5);
        rules.retain(|r| r.id != 5);
        check(&ix, &rules);
        assert_eq!(ix.ref_count(9), 0);
        // A modify: rule 1 now names 8 instead of 7; rule 4 starts naming 9.
        let r1 = rule(1, vec![Action::Group(8)]);
        let r4 = rule(4, vec![Action::Group(9), Action::Group(8)]);
        ix.replace(&r1);
        ix.replace(&r4);
        rules.retain(|r| r.id != 1 && r.id != 4);
        rules.extend([r1, r4]);
        check(&ix, &rules);
        // Removing what is not there changes nothing.
        ix.remove(42);
        check(&ix, &rules);
        // Filing an id twice without removing it counts it once.
        let again = rule(3, vec![Action::Group(10)]);
        ix.add(&again);
        rules.retain(|r| r.id != 3);
        rules.push(again);
        check(&ix, &rules);
        ix.clear();
        check(&ix, &[]);
    }

    #[test]
    fn matches_a_scan_over_random_changes() {
        let mut ix = GroupIndex::default();
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
            let n = next() % 4;
            let acts: Vec<Action> = (0..n)
                .map(|_| match next() % 3 {
                    0 => Action::output(1),
                    1 => Action::Group((next() % 6) as u32),
                    _ => Action::Clone(vec![Action::Group((next() % 6) as u32)]),
                })
                .collect();
            let r = rule(id, acts);
            if next() % 3 == 0 {
                ix.remove(id);
                live.retain(|r| r.id != id);
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
    }
}
