//! Actions and instructions in ovs-ofctl text.
//!
//! In a flow's `actions=` text, plain actions form the apply-actions list and the
//! instruction keywords (`meter:N`, `clear_actions`, `write_actions(...)`,
//! `write_metadata:V[/M]`, `goto_table:N`) add instructions. The result is in execution
//! order; each instruction may appear once, and plain actions may not follow an
//! instruction other than `meter` (they would read as if they ran later). `drop` — or
//! nothing — is the empty list, and `drop` must stand alone.
//!
//! OVS's OpenFlow 1.0-era names map onto OpenFlow 1.3 actions: `mod_dl_src:MAC` is
//! `set_field:MAC->eth_src`, `mod_vlan_vid:N` is `set_field:(0x1000|N)->vlan_vid` (unlike
//! OVS, no tag is pushed when the packet has none), `mod_nw_tos:TOS` writes `ip_dscp`,
//! `mod_tp_src` writes the port of the protocol the flow matches, `strip_vlan` is
//! `pop_vlan`, `mod_nw_ttl` is OpenFlow's set-nw-ttl. Formatting prints OpenFlow names
//! (`set_field:...->eth_src`), which parse back to the same actions. `copy_ttl_in`,
//! `copy_ttl_out`, `push_pbb:ETHERTYPE` and `pop_pbb` are our spellings for the OpenFlow
//! actions OVS has no text for. `load:V->DST` is a masked set-field of DST's bits (the
//! mask kept even when it is the whole field, which marks a load: before OpenFlow 1.5 it
//! travels as Nicira's `reg_load`, as OVS sends it) and prints as `set_field:V/M->F`, or
//! as `load:V->F[]` for a whole field; `move:SRC->DST`, `push:SRC` and `pop:DST` name bits in
//! ovs-ofctl's
//! subfield syntax ([`parse_subfield`]) and print them with NXM names as OVS does
//! (`move:NXM_NX_REG0[]->NXM_NX_XXREG1[0..31]`).
//! OpenFlow 1.0's `enqueue:PORT:QUEUE` (or `enqueue(PORT,QUEUE)`) and Nicira's `pop_queue`
//! read and print as ovs-ofctl's.
//!
//! ## Files
//! This file holds the list parsers (actions, instructions) and their helpers; `parse_one` one
//! action, `format` the printing side.

use super::fields::{format_port, format_value, parse_port, parse_value_raw};
use super::{need_value, parse_uint, uint_for, TextError, Token, Tokens};
use crate::actions::{
    Action, Instruction, Subfield, MAX_NESTING, OFPCML_NO_BUFFER, OFPP_CONTROLLER, OFPP_MAX,
};
use crate::matches::Match;
use crate::oxm::{ipproto, Field, OFPVID_PRESENT};
use crate::wire::oxm::{field_from_nxm_name, subfield_name};

mod format;
mod parse_one;
pub use self::format::*;
use self::parse_one::*;

fn no_value(tok: &Token<'_>) -> Result<(), TextError> {
    match tok.value {
        Some(_) => Err(TextError::new(format!(
            "{}: '{}' takes no argument",
            tok.text(),
            tok.key
        ))),
        None => Ok(()),
    }
}

fn port_arg(tok: &Token<'_>, v: &str) -> Result<u32, TextError> {
    parse_port(v).ok_or_else(|| {
        TextError::new(format!(
            "{}: '{v}' is not a port number or reserved port name",
            tok.text()
        ))
    })
}

/// The field a context-dependent `set_field`/`mod_tp_*` name writes.
fn set_field_target(name: &str, ctx: Option<&Match>) -> Option<Field> {
    if let Some(f) = Field::from_name(name) {
        return Some(f);
    }
    let proto = ctx.and_then(|m| m.exact(Field::IpProto)).map(|p| p as u8);
    let arp = ctx
        .and_then(|m| m.exact(Field::EthType))
        .is_some_and(|t| t == 0x0806 || t == 0x8035);
    Some(match name {
        "nw_src" if arp => Field::ArpSpa,
        "nw_dst" if arp => Field::ArpTpa,
        "nw_src" => Field::Ipv4Src,
        "nw_dst" => Field::Ipv4Dst,
        "nw_proto" => Field::IpProto,
        "tp_src" => match proto {
            Some(ipproto::UDP) => Field::UdpSrc,
            Some(ipproto::SCTP) => Field::SctpSrc,
            _ => Field::TcpSrc,
        },
        "tp_dst" => match proto {
            Some(ipproto::UDP) => Field::UdpDst,
            Some(ipproto::SCTP) => Field::SctpDst,
            _ => Field::TcpDst,
        },
        "icmp_type" if proto == Some(ipproto::ICMPV6) => Field::Icmpv6Type,
        "icmp_code" if proto == Some(ipproto::ICMPV6) => Field::Icmpv6Code,
        "icmp_type" => Field::Icmpv4Type,
        "icmp_code" => Field::Icmpv4Code,
        _ => return None,
    })
}

fn set_field(f: Field, value: u128, mask: Option<u128>) -> Action {
    let max = f.max();
    let mask = mask.map(|m| m & max).filter(|m| *m != max);
    Action::SetField {
        field: f,
        value: value & mask.unwrap_or(max),
        mask,
    }
}

/// A field's bits in ovs-ofctl's subfield syntax: `NAME`, `NAME[]` (the whole field),
/// `NAME[BIT]` or `NAME[LOW..HIGH]`, where NAME is a field name (`reg0`, `xreg1`,
/// `eth_dst`...) or an NXM/OXM header name (`NXM_NX_REG0`, `OXM_OF_PKT_REG1`...).
pub(crate) fn parse_subfield(s: &str) -> Result<Subfield, String> {
    let s = s.trim();
    let (name, range) = match s.split_once('[') {
        Some((n, r)) => (
            n,
            Some(
                r.strip_suffix(']')
                    .ok_or_else(|| format!("'{s}': missing ']'"))?,
            ),
        ),
        None => (s, None),
    };
    let (field, bits) = Field::from_name(name)
        .map(|f| (f, f.bits()))
        .or_else(|| field_from_nxm_name(name))
        .ok_or_else(|| format!("'{name}' is not a known field"))?;
    let (ofs, n_bits) = match range {
        None | Some("") => (0, bits as u16),
        Some(r) => {
            let num = |x: &str| {
                x.trim()
                    .parse::<u16>()
                    .map_err(|_| format!("'{s}': '{x}' is not a bit number"))
            };
            let (lo, hi) = match r.split_once("..") {
                Some((lo, hi)) => (num(lo)?, num(hi)?),
                None => {
                    let b = num(r)?;
                    (b, b)
                }
            };
            if hi < lo {
                return Err(format!("'{s}': the bit range is backwards"));
            }
            if u32::from(hi) >= bits {
                return Err(format!("'{s}': bits beyond the {bits}-bit field {name}"));
            }
            (lo, hi - lo + 1)
        }
    };
    let sf = Subfield { field, ofs, n_bits };
    if !sf.is_valid() || u32::from(ofs) + u32::from(n_bits) > bits {
        return Err(format!("'{s}': bits beyond the {bits}-bit field {name}"));
    }
    Ok(sf)
}

fn subfield_arg(tok: &Token<'_>, s: &str) -> Result<Subfield, TextError> {
    parse_subfield(s).map_err(|e| TextError::new(format!("{}: {e}", tok.text())))
}

/// A subfield as Open vSwitch prints it: `NXM_NX_REG0[]`, `NXM_NX_REG0[8..15]`,
/// `OXM_OF_PKT_REG1[3]`.
pub fn format_subfield(sf: &Subfield) -> String {
    let name = subfield_name(sf);
    let width = if sf.is_port16() { 16 } else { sf.field.bits() };
    if sf.ofs == 0 && u32::from(sf.n_bits) == width {
        format!("{name}[]")
    } else if sf.n_bits == 1 {
        format!("{name}[{}]", sf.ofs)
    } else {
        format!("{name}[{}..{}]", sf.ofs, sf.ofs + sf.n_bits - 1)
    }
}

/// The run of bits a contiguous mask covers (field left as `in_port`, for the caller to
/// replace).
fn contiguous(m: u128) -> Option<Subfield> {
    if m == 0 {
        return None;
    }
    let ofs = m.trailing_zeros();
    let n = (m >> ofs).trailing_ones();
    ((m >> ofs).checked_shr(n).unwrap_or(0) == 0).then_some(Subfield {
        field: Field::InPort,
        ofs: ofs as u16,
        n_bits: n as u16,
    })
}

fn value_for(tok: &Token<'_>, f: Field, v: &str) -> Result<u128, TextError> {
    match parse_value_raw(f, v) {
        Ok((x, None)) => Ok(x),
        Ok((_, Some(_))) => Err(TextError::new(format!(
            "{}: a mask is not allowed here",
            tok.text()
        ))),
        Err(e) => Err(TextError::new(format!("{}: {e}", tok.text()))),
    }
}

/// Parse one plain action.
fn parse_action(tok: &Token<'_>, ctx: Option<&Match>) -> Result<Action, TextError> {
    let a = parse_action_unchecked(tok, ctx)?;
    if matches!(a.written_field(), Some(Field::CtMark | Field::CtLabel)) {
        return Err(TextError::new(format!(
            "{}: cannot set CT fields outside of ct action",
            tok.text()
        )));
    }
    a.validate()
        .map_err(|e| TextError::new(format!("{}: invalid action ({e})", tok.text())))?;
    Ok(a)
}

/// The actions of `ct(exec(...))`: checked as a whole by the `ct` they end up in.
pub(crate) fn parse_ct_exec(text: &str, ctx: Option<&Match>) -> Result<Vec<Action>, TextError> {
    let mut out = Vec::new();
    let mut toks = Tokens::new(text);
    while let Some(tok) = toks.next_token() {
        let tok = tok?;
        // OVS prints a NAT that is not first in the nested list inside `exec(...)`.
        if tok.key == "nat" {
            out.push(Action::Nat(Box::new(super::ct::parse_nat(&tok)?)));
        } else {
            out.push(parse_action_unchecked(&tok, ctx)?);
        }
    }
    Ok(out)
}

/// Parse a plain action list (a group bucket's, or the inside of `write_actions(...)`).
/// `ctx` is the flow's match when there is one (it resolves `mod_tp_src`, `tp_src`...).
pub fn parse_actions(text: &str, ctx: Option<&Match>) -> Result<Vec<Action>, TextError> {
    let mut out = Vec::new();
    let mut saw_drop = false;
    let mut toks = Tokens::new(text);
    while let Some(tok) = toks.next_token() {
        let tok = tok?;
        if tok.key == "drop" {
            no_value(&tok)?;
            saw_drop = true;
            continue;
        }
        if is_instruction(tok.key) {
            return Err(TextError::new(format!(
                "{}: instruction '{}' is not allowed in an action list",
                tok.text(),
                tok.key
            )));
        }
        out.push(parse_action(&tok, ctx)?);
    }
    if saw_drop && !out.is_empty() {
        return Err(TextError::new("'drop' must be the only action"));
    }
    Ok(out)
}

fn is_instruction(key: &str) -> bool {
    matches!(
        key,
        "meter" | "clear_actions" | "write_actions" | "write_metadata" | "goto_table"
    )
}

/// Parse a flow's `actions=` text into instructions in execution order (see the module
/// documentation). `ctx` is the flow's match.
pub fn parse_instructions(text: &str, ctx: Option<&Match>) -> Result<Vec<Instruction>, TextError> {
    let mut slots: [Option<Instruction>; 6] = Default::default();
    let mut apply = Vec::new();
    let mut saw_drop = false;
    let mut after_instruction: Option<String> = None;
    let mut toks = Tokens::new(text);
    while let Some(tok) = toks.next_token() {
        let tok = tok?;
        let text = tok.text();
        let inst = match tok.key {
            "drop" => {
                no_value(&tok)?;
                saw_drop = true;
                continue;
            }
            "meter" => Instruction::Meter(uint_for(&tok, 32)? as u32),
            "clear_actions" => {
                no_value(&tok)?;
                Instruction::ClearActions
            }
            "write_actions" => {
                let acts = parse_actions(tok.value.unwrap_or(""), ctx)?;
                if acts.iter().any(|a| matches!(a, Action::Sample(_))) {
                    return Err(TextError::new(format!(
                        "{}: sample is not allowed in the action set",
                        tok.text()
                    )));
                }
                Instruction::WriteActions(acts)
            }
            "write_metadata" => {
                let v = need_value(&tok)?;
                let (a, m) = match v.split_once('/') {
                    Some((a, m)) => (a, Some(m)),
                    None => (v, None),
                };
                let bad = |s: &str| TextError::new(format!("{text}: '{s}' is not a 64-bit number"));
                let value = parse_uint(a, 64).ok_or_else(|| bad(a))? as u64;
                let mask = match m {
                    Some(m) => parse_uint(m, 64).ok_or_else(|| bad(m))? as u64,
                    None => u64::MAX,
                };
                Instruction::WriteMetadata {
                    value: value & mask,
                    mask,
                }
            }
            "goto_table" => Instruction::GotoTable(uint_for(&tok, 8)? as u8),
            _ => {
                if let Some(prev) = &after_instruction {
                    return Err(TextError::new(format!(
                        "{text}: actions must come before '{prev}'"
                    )));
                }
                apply.push(parse_action(&tok, ctx)?);
                continue;
            }
        };
        if !matches!(inst, Instruction::Meter(_)) && after_instruction.is_none() {
            after_instruction = Some(tok.key.to_string());
        }
        let slot = &mut slots[usize::from(inst.order())];
        if slot.is_some() {
            return Err(TextError::new(format!(
                "{text}: instruction '{}' given twice",
                tok.key
            )));
        }
        *slot = Some(inst);
    }
    if !apply.is_empty() {
        slots[1] = Some(Instruction::ApplyActions(apply));
    }
    let out: Vec<Instruction> = slots.into_iter().flatten().collect();
    if saw_drop && !out.is_empty() {
        return Err(TextError::new("'drop' must be the only action"));
    }
    Ok(out)
}
