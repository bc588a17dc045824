//! `ct(...)`, `nat(...)` and `ct_clear` in ovs-ofctl text, both directions.
//!
//! Parsing takes `ct`'s arguments in any order: `commit`, `force`, `table=N`, `zone=N` or
//! `zone=FIELD[a..b]` (16 bits), `alg=ftp|tftp`, `nat` or `nat(...)`, and `exec(ACTIONS)`.
//! `nat` and the `exec` actions go into one nested list in the order written, as OVS keeps
//! them. Inside `nat(...)`: `src` or `dst`, optionally `=ADDR[-ADDR][:PORT[-PORT]]` (IPv6
//! addresses in brackets when a port follows), and the flags `persistent`, `hash`,
//! `random`, all kept as written so the flow_mod carries what ovs-ofctl's would; anything
//! after a bracketed address other than `:PORTS` is an error.
//!
//! Formatting is ovs-ofctl's: `ct(commit,force,table=N,zone=...,nat(...),exec(...),alg=..)`
//! with a NAT that comes first in the nested list printed outside `exec(...)`, `table`
//! before `zone`, zone 0 and no table omitted; `nat(src=..)` prints the flags only with an
//! address range, ranges whose end equals their start print once, and IPv6 addresses take
//! brackets only when a port follows. Those two rules lose what the parser kept, exactly as
//! ovs-ofctl's printing does: [`Nat::as_printed`] is the value that survives.

use super::actions::{format_actions, format_subfield, parse_ct_exec, parse_subfield};
use super::{need_value, uint_for, TextError, Token, Tokens};
use crate::actions::Action;
use crate::ct::{
    Ct, CtZone, Nat, NatAddrs, CT_ALG_FTP, CT_ALG_TFTP, NX_CT_F_COMMIT, NX_CT_F_FORCE,
    NX_NAT_F_DST, NX_NAT_F_PERSISTENT, NX_NAT_F_PROTO_HASH, NX_NAT_F_PROTO_RANDOM, NX_NAT_F_SRC,
};
use crate::matches::Match;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Parse `ct`'s argument text (what is inside `ct(...)`; `None` for a bare `ct`).
pub(crate) fn parse_ct(tok: &Token<'_>, ctx: Option<&Match>) -> Result<Action, TextError> {
    let text = tok.text();
    let err = |m: String| TextError::new(format!("{text}: {m}"));
    let mut ct = Ct {
        flags: 0,
        zone: CtZone::Imm(0),
        table: None,
        alg: 0,
        actions: Vec::new(),
    };
    let mut toks = Tokens::new(tok.value.unwrap_or(""));
    while let Some(t) = toks.next_token() {
        let t = t?;
        match t.key {
            "commit" => ct.flags |= NX_CT_F_COMMIT,
            "force" => ct.flags |= NX_CT_F_FORCE,
            "table" => ct.table = Some(uint_for(&t, 8)? as u8),
            "zone" => {
                let v = need_value(&t)?;
                ct.zone = if v.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
                    CtZone::Imm(uint_for(&t, 16)? as u16)
                } else {
                    let sf = parse_subfield(v).map_err(&err)?;
                    if sf.n_bits != 16 {
                        return Err(err(format!("zone {v} is not 16 bits wide")));
                    }
                    CtZone::Field(sf)
                };
            }
            "alg" => {
                ct.alg = match need_value(&t)? {
                    "ftp" => CT_ALG_FTP,
                    "tftp" => CT_ALG_TFTP,
                    other => return Err(err(format!("invalid conntrack helper \"{other}\""))),
                }
            }
            "nat" => ct.actions.push(Action::Nat(Box::new(parse_nat(&t)?))),
            "exec" => {
                let acts = parse_ct_exec(need_value(&t)?, ctx)?;
                ct.actions.extend(acts);
            }
            other => return Err(err(format!("unknown ct argument '{other}'"))),
        }
    }
    if let Some(m) = ctx {
        ct.validate_with(m)
            .map_err(|e| err(format!("actions are invalid with specified match ({e})")))?;
    }
    let a = Action::Ct(Box::new(ct));
    a.validate()
        .map_err(|e| err(format!("invalid action ({e})")))?;
    Ok(a)
}

pub(crate) fn parse_nat(tok: &Token<'_>) -> Result<Nat, TextError> {
    let text = tok.text();
    let err = |m: String| TextError::new(format!("{text}: {m}"));
    let mut nat = Nat {
        flags: 0,
        addrs: NatAddrs::None,
        proto_min: 0,
        proto_max: 0,
    };
    let mut toks = Tokens::new(tok.value.unwrap_or(""));
    while let Some(t) = toks.next_token() {
        let t = t?;
        match t.key {
            "src" | "dst" => {
                if nat.flags & (NX_NAT_F_SRC | NX_NAT_F_DST) != 0 {
                    return Err(err("at most one of \"src\" and \"dst\"".into()));
                }
                nat.flags |= if t.key == "src" {
                    NX_NAT_F_SRC
                } else {
                    NX_NAT_F_DST
                };
                if let Some(v) = t.value {
                    parse_range(v, &mut nat).map_err(&err)?;
                }
            }
            "persistent" => nat.flags |= NX_NAT_F_PERSISTENT,
            "hash" => nat.flags |= NX_NAT_F_PROTO_HASH,
            "random" => nat.flags |= NX_NAT_F_PROTO_RANDOM,
            other => return Err(err(format!("unknown nat argument '{other}'"))),
        }
    }
    if nat.flags & NX_NAT_F_PROTO_HASH != 0 && nat.flags & NX_NAT_F_PROTO_RANDOM != 0 {
        return Err(err("Both \"hash\" and \"random\" are not allowed.".into()));
    }
    nat.validate()
        .map_err(|e| err(format!("invalid nat ({e})")))?;
    Ok(nat)
}

/// `ADDR[-ADDR][:PORT[-PORT]]`, IPv6 addresses bracketed when ports follow.
fn parse_range(s: &str, nat: &mut Nat) -> Result<(), String> {
    let (addrs, ports) = split_ports(s)?;
    let (lo, hi) = match addrs.split_once('-') {
        Some((a, b)) => (a, Some(b)),
        None => (addrs, None),
    };
    let unbracket = |a: &str| match (a.strip_prefix('['), a.strip_suffix(']')) {
        (Some(_), Some(_)) if a.len() >= 2 => Ok(a[1..a.len() - 1].to_string()),
        (None, None) => Ok(a.to_string()),
        _ => Err(format!("unbalanced brackets in '{a}'")),
    };
    let lo = unbracket(lo)?;
    let hi = hi.map(unbracket).transpose()?;
    if let Ok(a) = lo.parse::<Ipv4Addr>() {
        let max = match &hi {
            Some(h) => u32::from(
                h.parse::<Ipv4Addr>()
                    .map_err(|_| format!("'{h}' is not an IPv4 address"))?,
            ),
            None => 0,
        };
        nat.addrs = NatAddrs::V4 {
            min: u32::from(a),
            max,
        };
    } else if let Ok(a) = lo.parse::<Ipv6Addr>() {
        let max = match &hi {
            Some(h) => u128::from(
                h.parse::<Ipv6Addr>()
                    .map_err(|_| format!("'{h}' is not an IPv6 address"))?,
            ),
            None => 0,
        };
        nat.addrs = NatAddrs::V6 {
            min: u128::from(a),
            max,
        };
    } else {
        return Err(format!("'{lo}' is not an IP address"));
    }
    if let Some(p) = ports {
        let num = |x: &str| {
            x.parse::<u16>()
                .map_err(|_| format!("'{x}' is not a port number"))
        };
        match p.split_once('-') {
            Some((a, b)) => {
                nat.proto_min = num(a)?;
                nat.proto_max = num(b)?;
            }
            None => nat.proto_min = num(p)?,
        }
    }
    Ok(())
}

/// Splits `ADDRS[:PORTS]`: the port part follows the `:` right after the last `]`, or the
/// only `:` of an IPv4 range; anything else after a `]` is an error.
fn split_ports(s: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(close) = s.rfind(']') {
        let (a, rest) = s.split_at(close + 1);
        if rest.is_empty() {
            return Ok((a, None));
        }
        return match rest.strip_prefix(':') {
            Some(p) => Ok((a, Some(p))),
            None => Err(format!("garbage ({rest}) after nat range \"{s}\"")),
        };
    }
    if s.matches(':').count() == 1 {
        if let Some((a, p)) = s.split_once(':') {
            return Ok((a, Some(p)));
        }
    }
    Ok((s, None))
}

/// `ct(...)` as ovs-ofctl prints it.
pub(crate) fn format_ct(ct: &Ct) -> String {
    let mut s = String::from("ct(");
    if ct.commit() {
        s.push_str("commit,");
    }
    if ct.force() {
        s.push_str("force,");
    }
    if let Some(t) = ct.table {
        s.push_str(&format!("table={t},"));
    }
    match ct.zone {
        CtZone::Field(sf) => s.push_str(&format!("zone={},", format_subfield(&sf))),
        CtZone::Imm(0) => {}
        CtZone::Imm(z) => s.push_str(&format!("zone={z},")),
    }
    let mut rest: &[Action] = &ct.actions;
    if let Some((Action::Nat(n), tail)) = rest.split_first() {
        s.push_str(&format_nat(n));
        s.push(',');
        rest = tail;
    }
    if !rest.is_empty() {
        s.push_str(&format!("exec({}),", format_actions(rest)));
    }
    match ct.alg {
        0 => {}
        CT_ALG_FTP => s.push_str("alg=ftp,"),
        CT_ALG_TFTP => s.push_str("alg=tftp,"),
        n => s.push_str(&format!("alg={n},")),
    }
    if s.ends_with(',') {
        s.pop();
    }
    s.push(')');
    s
}

/// `nat(...)` as ovs-ofctl prints it.
pub(crate) fn format_nat(n: &Nat) -> String {
    let mut s = String::from("nat");
    if n.flags & (NX_NAT_F_SRC | NX_NAT_F_DST) == 0 {
        return s;
    }
    s.push('(');
    s.push_str(if n.flags & NX_NAT_F_SRC != 0 {
        "src"
    } else {
        "dst"
    });
    if n.addrs != NatAddrs::None {
        s.push('=');
        let port = n.proto_min != 0;
        match n.addrs {
            NatAddrs::V4 { min, max } => {
                s.push_str(&Ipv4Addr::from(min).to_string());
                if max != 0 && max != min {
                    s.push_str(&format!("-{}", Ipv4Addr::from(max)));
                }
            }
            NatAddrs::V6 { min, max } => {
                let fmt6 = |a: u128| {
                    let a = Ipv6Addr::from(a);
                    if port {
                        format!("[{a}]")
                    } else {
                        a.to_string()
                    }
                };
                s.push_str(&fmt6(min));
                if max != 0 && max != min {
                    s.push('-');
                    s.push_str(&fmt6(max));
                }
            }
            NatAddrs::None => {}
        }
        if port {
            s.push_str(&format!(":{}", n.proto_min));
            if n.proto_max != 0 && n.proto_max != n.proto_min {
                s.push_str(&format!("-{}", n.proto_max));
            }
        }
        s.push(',');
        if n.flags & NX_NAT_F_PERSISTENT != 0 {
            s.push_str("persistent,");
        }
        if n.flags & NX_NAT_F_PROTO_HASH != 0 {
            s.push_str("hash,");
        }
        if n.flags & NX_NAT_F_PROTO_RANDOM != 0 {
            s.push_str("random,");
        }
        s.pop();
    }
    s.push(')');
    s
}
