//! Adds made ready before they are applied: what a bundle can do with each flow_mod while
//! the rest of the bundle is still arriving, so that its commit only checks and inserts.
//!
//! [`PreparedAdd::new`] takes an add flow_mod and builds everything that does not depend
//! on the switch's state: the [`Rule`] (its match and instructions moved in, not copied),
//! the masked flow key of its match and the classifier rule around both, allocated once.
//! [`Ofproto::add_prepared`] later applies it exactly as [`Ofproto::flow_mod`] applies the
//! same flow_mod: after the TLV table's check, both hand the rule to one function,
//! `Ofproto::add_rule` (the checks against the switch in one order: table id, groups, meters
//! and ports the instructions use, overlap, table size; the replacement of an identical
//! rule with its counters; the events); only the rule's id and times are filled in then, so
//! ids still follow the order in which adds are applied.
//!
//! A bundle goes one step further with its prepared adds: it files them into classifier
//! subtables as they arrive, and its commit adopts those whole when it can (see
//! [`super::adopt`]); the adds it cannot adopt come back here, to [`Ofproto::add_prepared`].
//!
//! Only adds whose match has no `tun_metadata` field are prepared: those fields are placed
//! in the flow key by the TLV table, which may change before the commit. Others are left
//! as flow_mods ([`PreparedAdd::new`] hands them back).

use super::*;
use crate::table::ClsRule;
use packet::flow::FLOW_KEY_WORDS;

/// The last mask [`PreparedAdd::new`] built, shared by the rules that follow with the same
/// mask (a bundle's adds usually have a handful of masks).
pub type MaskCache = Option<Arc<[u64; FLOW_KEY_WORDS]>>;

/// An add flow_mod built ahead of time (see the module documentation).
#[derive(Debug)]
pub struct PreparedAdd {
    pub(super) rule: Arc<ClsRule>,
}

impl PreparedAdd {
    /// Prepares `fm`, an add that passed [`FlowMod::validate`]; any other flow_mod, or an add
    /// matching `tun_metadata`, is handed back unchanged.
    pub fn new(fm: FlowMod, masks: &mut MaskCache) -> Result<PreparedAdd, FlowMod> {
        if fm.command != FlowModCommand::Add || fm.match_.iter().any(|e| e.field.is_tun_metadata())
        {
            return Err(fm);
        }
        let (key, mask) = crate::fields::match_to_key(&fm.match_);
        let cm: CMatch<FLOW_KEY_WORDS> = CMatch::from_flow(&key, &mask);
        Ok(PreparedAdd {
            rule: flow_mod::cls_rule(Cow::Owned(fm), &cm, masks),
        })
    }

    /// The rule as it will be added (id and times not yet set).
    pub fn rule(&self) -> &Rule {
        self.rule.payload()
    }

    /// True if `other` goes to the same table with the same mask (the same classifier
    /// subtable).
    pub fn same_place(&self, other: &PreparedAdd) -> bool {
        self.rule().table_id == other.rule().table_id && self.rule.mask() == other.rule.mask()
    }
}

impl Ofproto {
    /// Makes room for `n` more rules in the place `p` goes to (a bundle commit about to
    /// apply `n` adds like it), so that the adds do not grow the tables on the way.
    pub fn reserve_like(&mut self, p: &PreparedAdd, n: usize) {
        if let Some(t) = self.tables.get_mut(usize::from(p.rule().table_id)) {
            t.reserve_like(&p.rule, n);
        }
    }

    /// Applies a prepared add: the same checks, effects and errors as [`Ofproto::flow_mod`]
    /// of the flow_mod it was made from (both go through [`Ofproto::add_rule`]).
    pub fn add_prepared(&mut self, p: PreparedAdd, now_ms: u64) -> Result<FlowModResult, OfError> {
        let PreparedAdd { rule } = p;
        let cm = rule.to_match();
        let r = self
            .tlv
            .check_flow(&rule.payload().match_, &rule.payload().instructions)
            .and_then(|()| self.add_rule(rule, &cm, now_ms));
        self.flush_learned(now_ms);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::oxm::Field;
    use packet::flow::FlowKey;

    fn flow(port: u32, out: u32) -> FlowMod {
        let mut fm = FlowMod::new(FlowModCommand::Add);
        fm.priority = 100;
        fm.match_ = Match::new().with(Field::InPort, u128::from(port));
        fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(out)])];
        fm
    }

    fn prep(fm: FlowMod) -> PreparedAdd {
        PreparedAdd::new(fm, &mut None).expect("an add without tun_metadata is prepared")
    }

    fn out_port(of: &Ofproto, in_port: u32) -> Option<u32> {
        let mut k = FlowKey::ZERO;
        k.in_port = in_port;
        let mut wc = FlowKey::ZERO;
        let r = of.tables()[0].lookup(&k, &mut wc)?;
        r.actions().find_map(|a| match a {
            Action::Output { port, .. } => Some(*port),
            _ => None,
        })
    }

    fn dump(o: &Ofproto) -> Vec<String> {
        o.tables()
            .iter()
            .flat_map(|t| t.rules())
            .map(|r| {
                format!(
                    "{} {} {} {:?} {:?} {}",
                    r.table_id, r.id, r.priority, r.match_, r.instructions, r.created_ms
                )
            })
            .collect()
    }

    #[test]
    fn a_prepared_add_does_what_the_flow_mod_does() {
        let mut a = Ofproto::with_default_flow(0);
        let mut b = Ofproto::with_default_flow(0);
        let mut masks = None;
        for (port, out) in [(1, 2), (2, 3), (1, 4)] {
            a.flow_mod(&flow(port, out), 7).expect("add");
            let p = PreparedAdd::new(flow(port, out), &mut masks).expect("prepared");
            b.add_prepared(p, 7).expect("add");
        }
        assert_eq!(dump(&a), dump(&b), "same rules, ids and times");
        assert_eq!(out_port(&b, 1), Some(4), "an identical rule is replaced");
        assert_eq!(out_port(&b, 2), Some(3));
        // The replacement carries the counters over unless it says reset_counts.
        let count = |o: &Ofproto| {
            let r = o.tables()[0]
                .rules()
                .find(|r| r.match_ == flow(1, 0).match_);
            r.map(|r| r.stats.get())
        };
        for o in [&a, &b] {
            let r = o.tables()[0]
                .rules()
                .find(|r| r.match_ == flow(1, 0).match_);
            r.expect("in_port=1").stats.credit(3, 180, 9);
        }
        a.flow_mod(&flow(1, 5), 8).expect("add");
        b.add_prepared(prep(flow(1, 5)), 8).expect("add");
        assert_eq!(count(&a), Some((3, 180, 9)));
        assert_eq!(count(&b), count(&a));
        let mut reset = flow(1, 6);
        reset.flags = FlowModFlags::RESET_COUNTS;
        a.flow_mod(&reset.clone(), 8).expect("add");
        b.add_prepared(prep(reset), 8).expect("add");
        assert_eq!(count(&a), Some((0, 0, 0)));
        assert_eq!(count(&b), count(&a));
    }

    #[test]
    fn a_prepared_add_fails_as_the_flow_mod_does() {
        let mut o = Ofproto::new();
        let mut bad = flow(1, 2);
        bad.instructions = vec![Instruction::ApplyActions(vec![Action::Group(9)])];
        let want = o.flow_mod(&bad, 0).expect_err("no such group");
        assert_eq!(o.add_prepared(prep(bad), 0).expect_err("fails"), want);
        let mut bad = flow(1, 2);
        bad.table_id = 254;
        bad.flags = FlowModFlags::CHECK_OVERLAP;
        o.flow_mod(&bad, 0).expect("table 254 exists");
        let mut over = flow(1, 3);
        over.table_id = 254;
        over.flags = FlowModFlags::CHECK_OVERLAP;
        over.match_ = Match::new();
        let want = o.flow_mod(&over.clone(), 0).expect_err("overlap");
        assert_eq!(o.add_prepared(prep(over), 0).expect_err("overlap"), want);
        assert_eq!(o.tables()[254].len(), 1);
        assert_eq!(o.tables()[0].len(), 0);
    }

    #[test]
    fn only_adds_without_tun_metadata_are_prepared() {
        let mut del = flow(1, 2);
        del.command = FlowModCommand::Delete;
        assert!(PreparedAdd::new(del, &mut None).is_err());
        let mut tun = flow(1, 2);
        tun.match_ = Match::new().with(Field::TunMetadata0, 5);
        assert!(PreparedAdd::new(tun, &mut None).is_err());
    }

    #[test]
    fn prepared_adds_in_a_transaction_are_found_after_it_and_undone_with_it() {
        let mut o = Ofproto::new();
        o.flow_mod(&flow(3, 1), 0).expect("add");
        let before = dump(&o);
        let r: Result<(), OfError> = o.atomically(|o| {
            let p = prep(flow(1, 2));
            o.reserve_like(&p, 2);
            o.add_prepared(p, 1)?;
            o.add_prepared(prep(flow(2, 3)), 1)?;
            Err(OfError::bad_request(0))
        });
        assert!(r.is_err());
        assert_eq!(dump(&o), before);
        assert_eq!(out_port(&o, 1), None);
        let r: Result<(), OfError> = o.atomically(|o| {
            o.add_prepared(prep(flow(1, 2)), 1)?;
            o.add_prepared(prep(flow(2, 3)), 1)?;
            Ok(())
        });
        assert!(r.is_ok());
        // The classifier re-ranked when the transaction ended: the new subtable is looked up.
        assert_eq!(out_port(&o, 1), Some(2));
        assert_eq!(out_port(&o, 2), Some(3));
    }
}
