//! The connection-tracking actions: `ct(...)`, its nested `nat(...)`, and `ct_clear`.
//!
//! [`Ct`] is Nicira's `NXAST_CT` as OVS models it: flags (`commit`, `force`), a zone (an
//! immediate or bits of a field), the table the packet continues in after tracking (or
//! none: it is tracked and the pipeline goes on without the results), an ALG (FTP port 21
//! or TFTP port 69), and a nested action list. The nested list may hold one [`Nat`] and
//! writes of `ct_mark` / `ct_label` (`exec(...)`), in the order given: the text syntax
//! prints a NAT that comes first outside `exec(...)` and everything else inside, so the
//! order is part of the action's identity, as it is in OVS.
//!
//! [`Ct::validate`] holds the checks that need no match: flag and nested-action
//! combinations (a nested action may only write `ct_mark`/`ct_label`, by a set-field or
//! a `move`, only when committing; at most one NAT; NAT ranges ordered; a zone subfield exactly 16 bits). The
//! match-dependent checks (`ct` needs IP, FTP TCP, TFTP UDP) are
//! [`Ct::validate_with`], which `ofproto` and the text parser call with the flow's match.

use crate::actions::{Action, Subfield};
use crate::matches::Match;
use crate::messages::{err::bad_action, OfError};
use crate::oxm::{ethertype, ipproto, Field};

/// `NX_CT_F_COMMIT`: commit the connection.
pub const NX_CT_F_COMMIT: u16 = 1 << 0;
/// `NX_CT_F_FORCE`: a committed connection seen in the reply direction is replaced.
pub const NX_CT_F_FORCE: u16 = 1 << 1;
/// `recirc_table` meaning "do not continue in another table".
pub const NX_CT_RECIRC_NONE: u8 = 0xff;
/// The FTP helper's ALG number (its well-known port).
pub const CT_ALG_FTP: u16 = 21;
/// The TFTP helper's ALG number.
pub const CT_ALG_TFTP: u16 = 69;

/// `NX_NAT_F_SRC`: source NAT.
pub const NX_NAT_F_SRC: u16 = 1 << 0;
/// `NX_NAT_F_DST`: destination NAT.
pub const NX_NAT_F_DST: u16 = 1 << 1;
/// `NX_NAT_F_PERSISTENT`.
pub const NX_NAT_F_PERSISTENT: u16 = 1 << 2;
/// `NX_NAT_F_PROTO_HASH`: choose ports by hash.
pub const NX_NAT_F_PROTO_HASH: u16 = 1 << 3;
/// `NX_NAT_F_PROTO_RANDOM`: choose ports at random.
pub const NX_NAT_F_PROTO_RANDOM: u16 = 1 << 4;
/// All NAT flags.
pub const NX_NAT_F_MASK: u16 = 0x1f;

/// Where a `ct` action's zone comes from.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum CtZone {
    /// A constant zone.
    Imm(u16),
    /// 16 bits of a field (`zone=NXM_NX_REG0[0..15]`).
    Field(Subfield),
}

/// The `ct` action.
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Ct {
    /// `NX_CT_F_*` bits.
    pub flags: u16,
    /// The zone.
    pub zone: CtZone,
    /// Table to continue in after tracking; `None` (wire 255) for none.
    pub table: Option<u8>,
    /// ALG: 0, [`CT_ALG_FTP`] or [`CT_ALG_TFTP`].
    pub alg: u16,
    /// Nested actions: at most one `Action::Nat` and `SetField`s of `ct_mark`/`ct_label`.
    pub actions: Vec<Action>,
}

impl Ct {
    /// Whether `commit` is set.
    pub fn commit(&self) -> bool {
        self.flags & NX_CT_F_COMMIT != 0
    }

    /// Whether `force` is set.
    pub fn force(&self) -> bool {
        self.flags & NX_CT_F_FORCE != 0
    }

    /// The nested NAT, if any.
    pub fn nat(&self) -> Option<&Nat> {
        self.actions.iter().find_map(|a| match a {
            Action::Nat(n) => Some(&**n),
            _ => None,
        })
    }

    /// Checks that need no match (see the module documentation).
    pub fn validate(&self) -> Result<(), OfError> {
        let bad = |c| Err(OfError::bad_action(c));
        if self.flags & !(NX_CT_F_COMMIT | NX_CT_F_FORCE) != 0 {
            return bad(bad_action::BAD_ARGUMENT);
        }
        if self.force() && !self.commit() {
            return bad(bad_action::BAD_ARGUMENT);
        }
        if let CtZone::Field(sf) = self.zone {
            if !sf.is_valid() || sf.n_bits != 16 {
                return bad(bad_action::BAD_SET_LEN);
            }
        }
        if !matches!(self.alg, 0 | CT_ALG_FTP | CT_ALG_TFTP) {
            return bad(bad_action::BAD_ARGUMENT);
        }
        let mut nats = 0;
        for a in &self.actions {
            match a {
                Action::Nat(n) => {
                    nats += 1;
                    n.validate()?;
                    if n.flags & (NX_NAT_F_SRC | NX_NAT_F_DST) != 0 && !self.commit() {
                        return bad(bad_action::BAD_ARGUMENT);
                    }
                }
                Action::SetField { field, value, mask }
                    if matches!(field, Field::CtMark | Field::CtLabel) =>
                {
                    if !self.commit() {
                        return bad(bad_action::BAD_ARGUMENT);
                    }
                    let (value, mask, max) = (*value, *mask, Field::max(*field));
                    if value & !max != 0 || mask.is_some_and(|m| m & !max != 0 || value & !m != 0) {
                        return bad(bad_action::BAD_SET_ARGUMENT);
                    }
                }
                // OVN copies a register into the label (`move:NXM_NX_XXREG0[0..31]->
                // NXM_NX_CT_LABEL[96..127]`); OVS accepts a move into either field.
                Action::Move { src, dst }
                    if matches!(dst.field, Field::CtMark | Field::CtLabel) =>
                {
                    if !self.commit() {
                        return bad(bad_action::BAD_ARGUMENT);
                    }
                    if !src.is_valid() || !dst.is_valid() || src.n_bits != dst.n_bits {
                        return bad(bad_action::BAD_SET_LEN);
                    }
                }
                _ => return bad(bad_action::BAD_ARGUMENT),
            }
        }
        if nats > 1 {
            return bad(bad_action::BAD_ARGUMENT);
        }
        Ok(())
    }

    /// Checks against the flow's match: `ct` needs IPv4/IPv6, FTP needs TCP and TFTP UDP
    /// (`OFPBAC_MATCH_INCONSISTENT` otherwise, as OVS answers).
    pub fn validate_with(&self, m: &Match) -> Result<(), OfError> {
        let inconsistent = Err(OfError::bad_action(bad_action::MATCH_INCONSISTENT));
        let ip = m
            .exact(Field::EthType)
            .is_some_and(|t| t == u128::from(ethertype::IPV4) || t == u128::from(ethertype::IPV6));
        if !ip {
            return inconsistent;
        }
        let proto = m.exact(Field::IpProto);
        match self.alg {
            CT_ALG_FTP if proto != Some(u128::from(ipproto::TCP)) => inconsistent,
            CT_ALG_TFTP if proto != Some(u128::from(ipproto::UDP)) => inconsistent,
            _ => Ok(()),
        }
    }
}

/// NAT addresses of a `nat(...)` range.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum NatAddrs {
    /// No address range (`nat`, `nat(src)`: the connection's own translation).
    None,
    /// IPv4 `min` to `max` (`max` 0: absent on the wire).
    V4 {
        /// First address.
        min: u32,
        /// Last address, 0 when not given.
        max: u32,
    },
    /// IPv6 `min` to `max` (`max` 0: absent on the wire).
    V6 {
        /// First address.
        min: u128,
        /// Last address, 0 when not given.
        max: u128,
    },
}

/// The nested `nat` action.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Nat {
    /// `NX_NAT_F_*` bits.
    pub flags: u16,
    /// The address range.
    pub addrs: NatAddrs,
    /// First port (0: none).
    pub proto_min: u16,
    /// Last port (0: none).
    pub proto_max: u16,
}

impl Nat {
    /// The effective (min, max) addresses as 128-bit numbers, max defaulting to min;
    /// `None` without a range.
    pub fn addr_range(&self) -> Option<(bool, u128, u128)> {
        match self.addrs {
            NatAddrs::None => None,
            NatAddrs::V4 { min, max } => {
                let max = if max == 0 { min } else { max };
                Some((false, u128::from(min), u128::from(max)))
            }
            NatAddrs::V6 { min, max } => Some((true, min, if max == 0 { min } else { max })),
        }
    }

    /// The effective port range, max defaulting to min; `None` without ports.
    pub fn port_range(&self) -> Option<(u16, u16)> {
        (self.proto_min != 0).then(|| {
            let max = if self.proto_max == 0 {
                self.proto_min
            } else {
                self.proto_max
            };
            (self.proto_min, max)
        })
    }

    /// This NAT as ovs-ofctl's text carries it: a range end equal to its start dropped (the
    /// range is that one value either way), and without addresses no `persistent`, `hash`
    /// or `random` (they steer only the choice within a range). Printing then parsing gives
    /// back this value.
    pub fn as_printed(&self) -> Nat {
        let mut n = *self;
        match &mut n.addrs {
            NatAddrs::None => n.flags &= NX_NAT_F_SRC | NX_NAT_F_DST,
            NatAddrs::V4 { min, max } if *max == *min => *max = 0,
            NatAddrs::V6 { min, max } if *max == *min => *max = 0,
            _ => {}
        }
        if n.proto_max == n.proto_min {
            n.proto_max = 0;
        }
        n
    }

    /// Static checks: known flags, not both src and dst, not both hash and random, ranges
    /// in order, ports only with addresses.
    pub fn validate(&self) -> Result<(), OfError> {
        let bad = Err(OfError::bad_action(bad_action::BAD_ARGUMENT));
        let f = self.flags;
        if f & !NX_NAT_F_MASK != 0
            || (f & NX_NAT_F_SRC != 0 && f & NX_NAT_F_DST != 0)
            || (f & NX_NAT_F_PROTO_HASH != 0 && f & NX_NAT_F_PROTO_RANDOM != 0)
        {
            return bad;
        }
        if let Some((_, lo, hi)) = self.addr_range() {
            if lo > hi {
                return bad;
            }
        }
        if let Some((lo, hi)) = self.port_range() {
            if lo > hi {
                return bad;
            }
        }
        if self.proto_min == 0 && self.proto_max != 0 {
            return bad;
        }
        Ok(())
    }
}
