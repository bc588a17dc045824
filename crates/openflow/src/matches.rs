//! Flow matches: a canonical set of (field, value, optional mask).
//!
//! A [`Match`] is what a flow entry compares packets against. It holds at most one
//! [`MatchField`] per [`Field`], sorted by field, and each entry is *normalised*:
//!
//! * `value` and `mask` fit in the field's width;
//! * `value & !mask == 0` (bits outside the mask are cleared);
//! * a mask of all ones is stored as `None` (exact match) and a mask of zero removes the
//!   entry (the field is wildcarded).
//!
//! Because of that, two matches that select the same packets field-by-field compare equal
//! with `==`, hash equal, and sort consistently (`Ord`), which is what strict flow_mod
//! commands and flow tables keyed by match need. The builders ([`Match::set_exact`],
//! [`Match::set_masked`]) normalise silently; [`Match::from_entries`] is the strict
//! constructor a wire codec uses: it rejects duplicates, over-wide values and value bits
//! outside the mask with the OpenFlow error the spec names.
//!
//! * the register views `xreg0`..`xreg7` and `xxreg0`..`xxreg3` are never stored: an entry
//!   for one becomes entries for the 32-bit registers it covers (a register whose part of
//!   the mask is zero is left out), so `xreg0=0x100000002` and `reg0=1,reg1=2` are the
//!   same match. A codec that must write views (OpenFlow 1.5's packet registers) folds
//!   them back.
//!
//! Normalisation does *not* check OpenFlow semantics (prerequisites, masks on non-maskable
//! fields, `vlan_vid` without the present bit): [`Match::validate`] does, and returns the
//! `OFPET_BAD_MATCH` error to send back.
//!
//! Set relations: [`Match::refines`] ("every packet this matches, that matches too", used
//! by non-strict modify/delete) and [`Match::overlaps`] ("some packet could match both",
//! used by `CHECK_OVERLAP`) are computed field by field on the masks; they treat fields as
//! independent bits and ignore prerequisites, which is what OpenFlow's definitions ask.

use crate::messages::{err::bad_match, OfError};
use crate::oxm::{Field, Prereq, OFPVID_PRESENT};

/// One field of a match.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct MatchField {
    /// The field.
    pub field: Field,
    /// The value, right-aligned (see [`crate::oxm`]).
    pub value: u128,
    /// The mask, or `None` for an exact match.
    pub mask: Option<u128>,
}

impl MatchField {
    /// The effective mask (all ones of the field width when exact).
    pub fn mask_bits(&self) -> u128 {
        self.mask.unwrap_or_else(|| self.field.max())
    }
    /// Whether the entry is an exact match.
    pub fn is_exact(&self) -> bool {
        self.mask.is_none()
    }
    /// Whether `v` (a packet's value of this field) matches.
    pub fn matches(&self, v: u128) -> bool {
        (v & self.mask_bits()) == self.value
    }
}

/// A canonical set of match fields. See the module documentation.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct Match {
    entries: Vec<MatchField>,
}

impl Match {
    /// The catch-all match.
    pub fn new() -> Match {
        Match::default()
    }

    /// Build from raw entries, as a wire codec sees them. Errors: `DUP_FIELD` for a field
    /// given twice, `BAD_VALUE` / `BAD_MASK` for a value / mask wider than the field,
    /// `BAD_WILDCARDS` for value bits outside the mask. The result is normalised; run
    /// [`Match::validate`] for the semantic checks.
    pub fn from_entries<I: IntoIterator<Item = MatchField>>(entries: I) -> Result<Match, OfError> {
        let entries = entries.into_iter();
        // As many as given (a register view may add some): a rule keeps this match, so
        // no room is left over.
        let mut m = Match {
            entries: Vec::with_capacity(entries.size_hint().0),
        };
        for e in entries {
            if m.get(e.field).is_some() {
                return Err(OfError::bad_match(bad_match::DUP_FIELD));
            }
            let max = e.field.max();
            if e.value & !max != 0 {
                return Err(OfError::bad_match(bad_match::BAD_VALUE));
            }
            if let Some(mask) = e.mask {
                if mask & !max != 0 {
                    return Err(OfError::bad_match(bad_match::BAD_MASK));
                }
                if e.value & !mask != 0 {
                    return Err(OfError::bad_match(bad_match::BAD_WILDCARDS));
                }
            }
            if e.field.reg_view().is_some() {
                for (f, value, mask) in e.field.split_reg_view(e.value, e.mask_bits()) {
                    if m.get(f).is_some() {
                        return Err(OfError::bad_match(bad_match::DUP_FIELD));
                    }
                    m.insert_raw(MatchField {
                        field: f,
                        value,
                        mask: Some(mask),
                    });
                }
                continue;
            }
            m.insert_raw(e);
        }
        Ok(m)
    }

    fn position(&self, f: Field) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| e.field.cmp(&f))
    }

    /// Insert an entry exactly as given (keeps a mask on a non-maskable field so that
    /// `validate` can report it), after normalising value/mask.
    fn insert_raw(&mut self, e: MatchField) {
        if let Some((first, n)) = e.field.reg_view() {
            // Every covered register takes its part; a zero part wildcards it.
            let mask = e.mask_bits();
            for k in 0..n {
                let shift = 32 * (n - 1 - k);
                if let Some(f) = Field::reg(first + k) {
                    self.insert_raw(MatchField {
                        field: f,
                        value: (e.value >> shift) & 0xffff_ffff,
                        mask: Some((mask >> shift) & 0xffff_ffff),
                    });
                }
            }
            return;
        }
        let max = e.field.max();
        let mask = e.mask.map_or(max, |m| m & max);
        if mask == 0 {
            self.remove(e.field);
            return;
        }
        let e = MatchField {
            field: e.field,
            value: e.value & mask,
            mask: if mask == max { None } else { Some(mask) },
        };
        match self.position(e.field) {
            Ok(i) => self.entries[i] = e,
            Err(i) => self.entries.insert(i, e),
        }
    }

    /// Match `f` exactly against `value` (truncated to the field's width), replacing any
    /// earlier entry for `f`.
    pub fn set_exact(&mut self, f: Field, value: u128) -> &mut Match {
        self.insert_raw(MatchField {
            field: f,
            value,
            mask: None,
        });
        self
    }

    /// Match `f` against `value` under `mask`, normalised (see the module documentation),
    /// replacing any earlier entry for `f`.
    pub fn set_masked(&mut self, f: Field, value: u128, mask: u128) -> &mut Match {
        self.insert_raw(MatchField {
            field: f,
            value,
            mask: Some(mask),
        });
        self
    }

    /// Builder form of [`Match::set_exact`].
    pub fn with(mut self, f: Field, value: u128) -> Match {
        self.set_exact(f, value);
        self
    }

    /// Builder form of [`Match::set_masked`].
    pub fn with_masked(mut self, f: Field, value: u128, mask: u128) -> Match {
        self.set_masked(f, value, mask);
        self
    }

    /// Stop matching on `f`; returns the removed entry.
    pub fn remove(&mut self, f: Field) -> Option<MatchField> {
        match self.position(f) {
            Ok(i) => Some(self.entries.remove(i)),
            Err(_) => None,
        }
    }

    /// The entry for `f`.
    pub fn get(&self, f: Field) -> Option<&MatchField> {
        self.position(f).ok().and_then(|i| self.entries.get(i))
    }

    /// The value of `f` if it is matched exactly.
    pub fn exact(&self, f: Field) -> Option<u128> {
        self.get(f).filter(|e| e.is_exact()).map(|e| e.value)
    }

    /// Whether `f` is matched at all.
    pub fn contains(&self, f: Field) -> bool {
        self.get(f).is_some()
    }

    /// The entries, in canonical (field) order.
    pub fn iter(&self) -> impl Iterator<Item = &MatchField> + '_ {
        self.entries.iter()
    }

    /// The entries as a slice, in canonical order.
    pub fn entries(&self) -> &[MatchField] {
        &self.entries
    }

    /// Number of matched fields.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether this is the catch-all match.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether this match meets `f`'s prerequisite (not `f`'s prerequisites' own
    /// prerequisites: those are fields of the match and checked on their own). Also the
    /// check `ofproto` needs for a `set_field` whose field's prerequisite the match must
    /// establish.
    pub fn prereq_met(&self, f: Field) -> bool {
        match f.prereq() {
            Prereq::None => true,
            Prereq::InPort => self.contains(Field::InPort),
            Prereq::VlanPresent => self.get(Field::VlanVid).is_some_and(|e| {
                let p = u128::from(OFPVID_PRESENT);
                e.mask_bits() & p != 0 && e.value & p != 0
            }),
            Prereq::EthType(types) => self
                .exact(Field::EthType)
                .is_some_and(|t| types.iter().any(|x| u128::from(*x) == t)),
            Prereq::IpProto(p) => self.exact(Field::IpProto) == Some(u128::from(p)),
            Prereq::Icmpv6Type(types) => self
                .exact(Field::Icmpv6Type)
                .is_some_and(|t| types.iter().any(|x| u128::from(*x) == t)),
            Prereq::Ct(types) => {
                self.ct_valid()
                    && self
                        .exact(Field::EthType)
                        .is_some_and(|t| types.iter().any(|x| u128::from(*x) == t))
            }
        }
    }

    /// Whether the match says the packet has a valid connection (OVS's test for the
    /// original-tuple fields): one of new, est, rel, rpl, snat, dnat matched set, or
    /// `+trk` matched with `inv` in the mask.
    pub fn ct_valid(&self) -> bool {
        use crate::oxm::{
            CS_DST_NAT, CS_ESTABLISHED, CS_INVALID, CS_NEW, CS_RELATED, CS_REPLY_DIR, CS_SRC_NAT,
            CS_TRACKED,
        };
        let Some(e) = self.get(Field::CtState) else {
            return false;
        };
        let (v, m) = (e.value, e.mask_bits());
        let valid = u128::from(
            CS_NEW | CS_ESTABLISHED | CS_RELATED | CS_REPLY_DIR | CS_SRC_NAT | CS_DST_NAT,
        );
        v & m & valid != 0
            || (v & m & u128::from(CS_TRACKED) != 0 && m & u128::from(CS_INVALID) != 0)
    }

    /// Whether `f` and, recursively, everything its prerequisite depends on are met.
    pub fn prereqs_met_deep(&self, f: Field) -> bool {
        if !self.prereq_met(f) {
            return false;
        }
        match f.prereq() {
            Prereq::None | Prereq::InPort | Prereq::EthType(_) | Prereq::Ct(_) => true,
            Prereq::VlanPresent => true,
            Prereq::IpProto(_) => self.prereqs_met_deep(Field::IpProto),
            Prereq::Icmpv6Type(_) => self.prereqs_met_deep(Field::Icmpv6Type),
        }
    }

    /// OpenFlow semantic checks, with Open vSwitch's maskability
    /// ([`Field::ovs_maskable`]: L4 ports and ND fields may be masked): `BAD_WILDCARDS` for
    /// a mask on a non-maskable field, `BAD_VALUE` for an exact `vlan_vid` other than NONE
    /// without `OFPVID_PRESENT`, and `BAD_PREREQ` for a field whose prerequisite the match
    /// does not establish.
    pub fn validate(&self) -> Result<(), OfError> {
        self.validate_with(Field::ovs_maskable)
    }

    /// [`Match::validate`] with the OpenFlow 1.3 table's maskability ([`Field::maskable`]).
    pub fn validate_strict(&self) -> Result<(), OfError> {
        self.validate_with(Field::maskable)
    }

    fn validate_with(&self, maskable: fn(Field) -> bool) -> Result<(), OfError> {
        for e in &self.entries {
            if e.mask.is_some() && !maskable(e.field) {
                return Err(OfError::bad_match(bad_match::BAD_WILDCARDS));
            }
            if e.field == Field::VlanVid
                && e.is_exact()
                && e.value != 0
                && e.value & u128::from(OFPVID_PRESENT) == 0
            {
                return Err(OfError::bad_match(bad_match::BAD_VALUE));
            }
        }
        for e in &self.entries {
            if !self.prereq_met(e.field) {
                return Err(OfError::bad_match(bad_match::BAD_PREREQ));
            }
        }
        Ok(())
    }

    /// The first field whose prerequisite is not met, for error messages.
    pub fn first_unmet_prereq(&self) -> Option<Field> {
        self.entries
            .iter()
            .map(|e| e.field)
            .find(|f| !self.prereq_met(*f))
    }

    /// Whether `self` is at least as specific as `other`: every packet `self` matches,
    /// `other` matches too (OpenFlow's non-strict modify/delete selection: a flow is
    /// affected when its match refines the flow_mod's).
    pub fn refines(&self, other: &Match) -> bool {
        other.entries.iter().all(|o| match self.get(o.field) {
            None => false,
            Some(s) => {
                let om = o.mask_bits();
                s.mask_bits() & om == om && (s.value & om) == o.value
            }
        })
    }

    /// Whether some packet could match both `self` and `other` (OpenFlow's overlap, for
    /// `CHECK_OVERLAP`; callers compare priorities themselves).
    pub fn overlaps(&self, other: &Match) -> bool {
        self.entries.iter().all(|s| match other.get(s.field) {
            None => true,
            Some(o) => (s.value ^ o.value) & s.mask_bits() & o.mask_bits() == 0,
        })
    }

    /// Whether a packet whose field values `get` returns matches. `get` returns `None`
    /// for a field the packet does not have, which fails any entry on that field.
    pub fn matches_with<F: Fn(Field) -> Option<u128>>(&self, get: F) -> bool {
        self.entries
            .iter()
            .all(|e| get(e.field).is_some_and(|v| e.matches(v)))
    }
}

impl<'a> IntoIterator for &'a Match {
    type Item = &'a MatchField;
    type IntoIter = core::slice::Iter<'a, MatchField>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::err::OFPET_BAD_MATCH;

    fn tcp() -> Match {
        Match::new()
            .with(Field::EthType, 0x0800)
            .with(Field::IpProto, 6)
    }

    #[test]
    fn normalises() {
        let m = Match::new().with_masked(Field::Ipv4Src, 0x0a00_00ff, 0xffff_ff00);
        assert_eq!(m.get(Field::Ipv4Src).map(|e| e.value), Some(0x0a00_0000));
        let m = Match::new().with_masked(Field::Ipv4Src, 1, 0xffff_ffff);
        assert!(m.get(Field::Ipv4Src).is_some_and(|e| e.is_exact()));
        let m = Match::new().with_masked(Field::Ipv4Src, 1, 0);
        assert!(m.is_empty());
        let a = Match::new()
            .with(Field::IpProto, 6)
            .with(Field::EthType, 0x800);
        assert_eq!(a, tcp());
    }

    #[test]
    fn prereqs() {
        let m = tcp().with(Field::TcpDst, 80);
        assert_eq!(m.validate(), Ok(()));
        let m = Match::new().with(Field::TcpDst, 80);
        assert_eq!(
            m.validate(),
            Err(OfError::new(OFPET_BAD_MATCH, bad_match::BAD_PREREQ))
        );
        let m = Match::new()
            .with(Field::EthType, 0x86dd)
            .with(Field::IpProto, 6)
            .with(Field::TcpDst, 80);
        assert_eq!(m.validate(), Ok(()));
        let m = Match::new().with(Field::IpProto, 6);
        assert!(m.validate().is_err());
        let m = Match::new().with(Field::VlanPcp, 3);
        assert!(m.validate().is_err());
        let m = Match::new()
            .with_masked(Field::VlanVid, 0x1000, 0x1000)
            .with(Field::VlanPcp, 3);
        assert_eq!(m.validate(), Ok(()));
        let m = Match::new().with(Field::VlanVid, 5);
        assert_eq!(m.validate(), Err(OfError::bad_match(bad_match::BAD_VALUE)));
        let m = tcp().with_masked(Field::TcpDst, 0, 0xff);
        assert_eq!(m.validate(), Ok(()));
        assert_eq!(
            m.validate_strict(),
            Err(OfError::bad_match(bad_match::BAD_WILDCARDS))
        );
        let m = tcp().with_masked(Field::IpDscp, 0, 0x3);
        assert_eq!(
            m.validate(),
            Err(OfError::bad_match(bad_match::BAD_WILDCARDS))
        );
    }

    #[test]
    fn strict_constructor() {
        let e = |f, value, mask| MatchField {
            field: f,
            value,
            mask,
        };
        assert_eq!(
            Match::from_entries([
                e(Field::EthType, 0x800, None),
                e(Field::EthType, 0x800, None)
            ]),
            Err(OfError::bad_match(bad_match::DUP_FIELD))
        );
        assert_eq!(
            Match::from_entries([e(Field::VlanPcp, 8, None)]),
            Err(OfError::bad_match(bad_match::BAD_VALUE))
        );
        assert_eq!(
            Match::from_entries([e(Field::Ipv4Src, 0x0a000001, Some(0xffffff00))]),
            Err(OfError::bad_match(bad_match::BAD_WILDCARDS))
        );
    }

    #[test]
    fn set_relations() {
        let wide = Match::new().with(Field::EthType, 0x800).with_masked(
            Field::Ipv4Dst,
            0x0a00_0000,
            0xff00_0000,
        );
        let narrow = Match::new()
            .with(Field::EthType, 0x800)
            .with(Field::Ipv4Dst, 0x0a01_0203)
            .with(Field::IpProto, 6);
        assert!(narrow.refines(&wide));
        assert!(!wide.refines(&narrow));
        assert!(narrow.refines(&Match::new()));
        assert!(wide.overlaps(&narrow));
        let other = Match::new().with(Field::EthType, 0x86dd);
        assert!(!other.overlaps(&wide));
        assert!(other.overlaps(&Match::new()));
    }
}
