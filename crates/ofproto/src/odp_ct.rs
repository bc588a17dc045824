//! The connection-tracking datapath action: what `ct(...)` compiles to.
//!
//! [`CtAction`] carries everything concrete: the zone (a register zone is read at
//! translation time, so the megaflow pins those register bits), commit/force, the NAT in
//! the tracker's own form, the mark and label writes folded into one (value, mask)
//! each, and the helper (`alg=`). The datapath hands it to `conntrack::Conntrack::execute_one` as a request; the
//! `recirc` that usually follows it is a separate [`crate::odp::DpAction::Recirc`].
//!
//! Text follows OVS's datapath action syntax: `ct(commit,zone=5,mark=0x1/0xff,
//! label=0x2a/0xffff,helper=ftp,nat(src=10.0.0.1-10.0.0.9:1024-65535,random))`.

use conntrack::{Nat, NatRange};
use std::net::IpAddr;

/// See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CtAction {
    /// Zone.
    pub zone: u16,
    /// Commit the connection.
    pub commit: bool,
    /// Replace a committed connection seen in the reply direction.
    pub force: bool,
    /// NAT, if any.
    pub nat: Option<Nat>,
    /// `ct_mark` write (value, mask), on commit.
    pub set_mark: Option<(u32, u32)>,
    /// `ct_label` write (value, mask), on commit.
    pub set_label: Option<(u128, u128)>,
    /// The helper (`alg=ftp|tftp`) a committed connection gets.
    pub alg: conntrack::Helper,
}

impl CtAction {
    /// The tracker's request for this action.
    pub fn request(&self) -> conntrack::CtRequest<'_> {
        conntrack::CtRequest {
            zone: self.zone,
            commit: self.commit,
            force: self.force,
            nat: self.nat.as_ref(),
            set_mark: self.set_mark,
            set_label: self.set_label,
            alg: self.alg,
        }
    }
}

/// The tracker's NAT for an OpenFlow `nat(...)`: without `src`/`dst` the connection's own
/// translation is applied; with a range, that range; `src`/`dst` without a range is OVS's
/// all-zero NAT ([`NatRange::keep`]: the address stays, the port only moves to avoid a
/// clash), which OVN commits with when the datapath reports `ct_zero_snat`.
pub fn nat_of(n: &openflow::ct::Nat) -> Option<Nat> {
    use openflow::ct::{
        NX_NAT_F_DST, NX_NAT_F_PERSISTENT, NX_NAT_F_PROTO_HASH, NX_NAT_F_PROTO_RANDOM, NX_NAT_F_SRC,
    };
    let src = n.flags & NX_NAT_F_SRC != 0;
    let dst = n.flags & NX_NAT_F_DST != 0;
    if !src && !dst {
        return Some(Nat::Apply);
    }
    let Some((v6, lo, hi)) = n.addr_range() else {
        let keep = NatRange::keep();
        return Some(if src { Nat::Src(keep) } else { Nat::Dst(keep) });
    };
    let addr = |v: u128| -> IpAddr {
        if v6 {
            IpAddr::V6(v.into())
        } else {
            IpAddr::V4((v as u32).into())
        }
    };
    let mut r = NatRange::new(addr(lo), addr(hi), n.port_range()).ok()?;
    r.persistent = n.flags & NX_NAT_F_PERSISTENT != 0;
    r.random = n.flags & NX_NAT_F_PROTO_RANDOM != 0;
    r.hash = n.flags & NX_NAT_F_PROTO_HASH != 0 || !r.random;
    Some(if src { Nat::Src(r) } else { Nat::Dst(r) })
}

fn fmt_range(f: &mut std::fmt::Formatter<'_>, r: &NatRange) -> std::fmt::Result {
    if r.is_keep() {
        return Ok(());
    }
    write!(f, "=")?;
    write!(f, "{}", r.addr_min)?;
    if r.addr_max != r.addr_min {
        write!(f, "-{}", r.addr_max)?;
    }
    if r.port_max != 0 {
        write!(f, ":{}", r.port_min)?;
        if r.port_max != r.port_min {
            write!(f, "-{}", r.port_max)?;
        }
    }
    if r.persistent {
        write!(f, ",persistent")?;
    }
    if r.random {
        write!(f, ",random")?;
    }
    Ok(())
}

impl std::fmt::Display for CtAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.commit {
            parts.push("commit".into());
        }
        if self.force {
            parts.push("force_commit".into());
        }
        if self.zone != 0 {
            parts.push(format!("zone={}", self.zone));
        }
        if let Some((v, m)) = self.set_mark {
            parts.push(format!("mark={v:#x}/{m:#x}"));
        }
        if let Some((v, m)) = self.set_label {
            parts.push(format!("label={v:#x}/{m:#x}"));
        }
        match self.alg {
            conntrack::Helper::None => {}
            conntrack::Helper::Ftp => parts.push("helper=ftp".into()),
            conntrack::Helper::Tftp => parts.push("helper=tftp".into()),
        }
        write!(f, "ct({}", parts.join(","))?;
        if let Some(nat) = &self.nat {
            if !parts.is_empty() {
                write!(f, ",")?;
            }
            match nat {
                Nat::Apply => write!(f, "nat")?,
                Nat::Src(r) => {
                    write!(f, "nat(src")?;
                    fmt_range(f, r)?;
                    write!(f, ")")?;
                }
                Nat::Dst(r) => {
                    write!(f, "nat(dst")?;
                    fmt_range(f, r)?;
                    write!(f, ")")?;
                }
            }
        }
        write!(f, ")")
    }
}
