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
//! as `load:V->F[]` for a whole field; `move:SRC->DST`, `push:SRC` and `pop:DST` name bits in ovs-ofctl's
//! subfield syntax ([`parse_subfield`]) and print them with NXM names as OVS does
//! (`move:NXM_NX_REG0[]->NXM_NX_XXREG1[0..31]`).

use super::fields::{format_port, format_value, parse_port, parse_value_raw};
use super::{need_value, parse_uint, uint_for, TextError, Token, Tokens};
use crate::actions::{
    Action, Instruction, Subfield, MAX_NESTING, OFPCML_NO_BUFFER, OFPP_CONTROLLER, OFPP_MAX,
};
use crate::matches::Match;
use crate::oxm::{ipproto, Field, OFPVID_PRESENT};
use crate::wire::oxm::{field_from_nxm_name, subfield_name};

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

/// Parse one plain action without [`Action::validate`].
fn parse_action_unchecked(tok: &Token<'_>, ctx: Option<&Match>) -> Result<Action, TextError> {
    let key = tok.key;
    let text = tok.text();
    let lower = key.to_ascii_lowercase();
    let a = match lower.as_str() {
        "ct" => return super::ct::parse_ct(tok, ctx),
        "sample" => return super::sample::parse_sample(tok),
        "ct_clear" => {
            no_value(tok)?;
            Action::CtClear
        }
        "nat" => {
            return Err(TextError::new(format!(
                "{text}: nat is only allowed inside ct(...)"
            )))
        }
        "output" => {
            let v = need_value(tok)?;
            // A port, else ovs-ofctl's subfield syntax (`output:reg0[0..15]`).
            match parse_port(v) {
                Some(p) => Action::output(p),
                None => match parse_subfield(v) {
                    Ok(src) => Action::OutputReg {
                        src,
                        max_len: OFPCML_NO_BUFFER,
                    },
                    Err(_) => port_arg(tok, v).map(Action::output)?,
                },
            }
        }
        "note" => Action::Note(parse_note(tok)?),
        "clone" => Action::Clone(parse_nested(tok, ctx)?),
        "controller" => parse_controller(tok)?,
        "learn" => super::learn::parse_learn(tok)?,
        "check_pkt_larger" => super::pktlen::parse_check_pkt_larger(tok)?,
        "in_port" | "normal" | "flood" | "all" | "local" | "table" => {
            no_value(tok)?;
            Action::output(port_arg(tok, key)?)
        }
        "group" => Action::Group(uint_for(tok, 32)? as u32),
        "set_queue" => Action::SetQueue(uint_for(tok, 32)? as u32),
        "push_vlan" => Action::PushVlan(uint_for(tok, 16)? as u16),
        "pop_vlan" | "strip_vlan" => {
            no_value(tok)?;
            Action::PopVlan
        }
        "mod_vlan_vid" => {
            let vid = uint_for(tok, 12)?;
            set_field(Field::VlanVid, vid | u128::from(OFPVID_PRESENT), None)
        }
        "mod_vlan_pcp" => set_field(Field::VlanPcp, uint_for(tok, 3)?, None),
        "push_mpls" => Action::PushMpls(uint_for(tok, 16)? as u16),
        "pop_mpls" => Action::PopMpls(uint_for(tok, 16)? as u16),
        "set_mpls_label" => set_field(Field::MplsLabel, uint_for(tok, 20)?, None),
        "set_mpls_tc" => set_field(Field::MplsTc, uint_for(tok, 3)?, None),
        "set_mpls_ttl" => Action::SetMplsTtl(uint_for(tok, 8)? as u8),
        "dec_mpls_ttl" => {
            no_value(tok)?;
            Action::DecMplsTtl
        }
        "dec_ttl" => match tok.value {
            // `dec_ttl()` is plain `dec_ttl`, as ovs-ofctl reads it.
            None | Some("") => Action::DecNwTtl,
            Some(v) => {
                let ids = v
                    .split(',')
                    .map(|x| {
                        parse_uint(x.trim(), 16).map(|n| n as u16).ok_or_else(|| {
                            TextError::new(format!("{text}: '{x}' is not a controller id"))
                        })
                    })
                    .collect::<Result<Vec<u16>, TextError>>()?;
                Action::DecTtlIds(ids)
            }
        },
        "mod_nw_ttl" => Action::SetNwTtl(uint_for(tok, 8)? as u8),
        "copy_ttl_in" => {
            no_value(tok)?;
            Action::CopyTtlIn
        }
        "copy_ttl_out" => {
            no_value(tok)?;
            Action::CopyTtlOut
        }
        "mod_dl_src" | "mod_dl_dst" => {
            let f = if lower == "mod_dl_src" {
                Field::EthSrc
            } else {
                Field::EthDst
            };
            set_field(f, value_for(tok, f, need_value(tok)?)?, None)
        }
        "mod_nw_src" | "mod_nw_dst" => {
            let f = if lower == "mod_nw_src" {
                Field::Ipv4Src
            } else {
                Field::Ipv4Dst
            };
            set_field(f, value_for(tok, f, need_value(tok)?)?, None)
        }
        "mod_nw_tos" => {
            let tos = uint_for(tok, 8)?;
            if tos & 3 != 0 {
                return Err(TextError::new(format!(
                    "{text}: mod_nw_tos takes a multiple of 4 (use mod_nw_ecn for ECN)"
                )));
            }
            set_field(Field::IpDscp, tos >> 2, None)
        }
        "mod_nw_ecn" => set_field(Field::IpEcn, uint_for(tok, 2)?, None),
        "mod_tp_src" | "mod_tp_dst" => {
            let src = lower == "mod_tp_src";
            let proto = ctx.and_then(|m| m.exact(Field::IpProto)).map(|p| p as u8);
            let f = match (proto, src) {
                (Some(ipproto::TCP), true) => Field::TcpSrc,
                (Some(ipproto::TCP), false) => Field::TcpDst,
                (Some(ipproto::UDP), true) => Field::UdpSrc,
                (Some(ipproto::UDP), false) => Field::UdpDst,
                (Some(ipproto::SCTP), true) => Field::SctpSrc,
                (Some(ipproto::SCTP), false) => Field::SctpDst,
                _ => {
                    return Err(TextError::new(format!(
                        "{text}: {key} needs a flow matching tcp, udp or sctp; \
                         use set_field:PORT->tcp_src (or udp_src, sctp_src)"
                    )))
                }
            };
            set_field(f, uint_for(tok, 16)?, None)
        }
        "set_field" => {
            let v = need_value(tok)?;
            let (val, name) = v.rsplit_once("->").ok_or_else(|| {
                TextError::new(format!("{text}: expected set_field:VALUE->FIELD"))
            })?;
            let f = set_field_target(name, ctx)
                .ok_or_else(|| TextError::new(format!("{text}: unknown field '{name}'")))?;
            let (x, m) =
                parse_value_raw(f, val).map_err(|e| TextError::new(format!("{text}: {e}")))?;
            set_field(f, x, m)
        }
        "push_pbb" => Action::PushPbb(uint_for(tok, 16)? as u16),
        "pop_pbb" => {
            no_value(tok)?;
            Action::PopPbb
        }
        "resubmit" => {
            let v = need_value(tok)?;
            // `resubmit:PORT` or `resubmit([PORT],[TABLE][,ct])`; as ovs-ofctl, anything
            // after a third item is ignored.
            let mut items = v.split(',').map(str::trim);
            let p = items.next().unwrap_or("");
            let t = items.next();
            let ct = match items.next() {
                None | Some("") => false,
                Some("ct") => true,
                Some(other) => {
                    return Err(TextError::new(format!(
                        "{text}: {other}: unknown parameter"
                    )))
                }
            };
            let in_port = if p.is_empty() {
                None
            } else {
                Some(port_arg(tok, p)?)
            };
            let table =
                match t {
                    None | Some("") => None,
                    Some(t) => Some(parse_uint(t, 8).ok_or_else(|| {
                        TextError::new(format!("{text}: '{t}' is not a table number"))
                    })? as u8),
                };
            Action::Resubmit { in_port, table, ct }
        }
        "load" => {
            let v = need_value(tok)?;
            let (value, dst) = v
                .split_once("->")
                .ok_or_else(|| TextError::new(format!("{text}: expected load:VALUE->DST")))?;
            let dst = subfield_arg(tok, dst)?;
            let value = parse_uint(value.trim(), 128)
                .ok_or_else(|| TextError::new(format!("{text}: '{value}' is not a number")))?;
            if value.checked_shr(u32::from(dst.n_bits)).unwrap_or(0) != 0 {
                return Err(TextError::new(format!(
                    "{text}: value {value:#x} does not fit into {} bits",
                    dst.n_bits
                )));
            }
            // The mask stays even when it covers the whole field: a load travels as a
            // register load before OpenFlow 1.5, as OVS sends it.
            Action::SetField {
                field: dst.field,
                value: value << dst.ofs,
                mask: Some(dst.mask()),
            }
        }
        "move" => {
            let v = need_value(tok)?;
            let (src, dst) = v
                .split_once("->")
                .ok_or_else(|| TextError::new(format!("{text}: expected move:SRC->DST")))?;
            let (src, dst) = (subfield_arg(tok, src)?, subfield_arg(tok, dst)?);
            if src.n_bits != dst.n_bits {
                return Err(TextError::new(format!(
                    "{text}: source field is {} bits wide but destination is {} bits wide",
                    src.n_bits, dst.n_bits
                )));
            }
            Action::Move { src, dst }
        }
        "push" => Action::StackPush(subfield_arg(tok, need_value(tok)?)?),
        "pop" => Action::StackPop(subfield_arg(tok, need_value(tok)?)?),
        _ if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) => {
            no_value(tok)?;
            Action::output(port_arg(tok, key)?)
        }
        _ => return Err(TextError::new(format!("unknown action '{key}'"))),
    };
    Ok(a)
}

/// `controller`, `controller:MAX_LEN` or `controller(KEY=VALUE,...)` as ovs-ofctl reads
/// them: `output:CONTROLLER` unless a reason, id, user data (even empty), pause or meter
/// is given. A later key overrides an earlier one; numbers are checked against their width.
fn parse_controller(tok: &Token<'_>) -> Result<Action, TextError> {
    use crate::controller::{reason_from_name, Controller};
    let mut c = Controller::default();
    let mut userdata = false;
    match tok.value {
        None | Some("") => {}
        Some(v) if v.bytes().all(|b| b.is_ascii_digit()) => c.max_len = uint_for(tok, 16)? as u16,
        Some(v) => {
            let mut inner = Tokens::new(v);
            while let Some(t) = inner.next_token() {
                let t = t?;
                let num = |bits: u32| {
                    parse_uint(t.value.unwrap_or(""), bits).ok_or_else(|| {
                        TextError::new(format!("invalid {} \"{}\"", t.key, t.value.unwrap_or("")))
                    })
                };
                match t.key {
                    "reason" => {
                        let r = t.value.unwrap_or("");
                        c.reason = reason_from_name(r)
                            .ok_or_else(|| TextError::new(format!("unknown reason \"{r}\"")))?;
                    }
                    "max_len" => c.max_len = num(16)? as u16,
                    "id" => c.controller_id = num(16)? as u16,
                    "meter_id" => c.meter_id = num(32)? as u32,
                    "pause" => c.pause = true,
                    "userdata" => {
                        userdata = true;
                        c.userdata = parse_userdata(t.value.unwrap_or(""))?;
                    }
                    k => {
                        return Err(TextError::new(format!(
                            "unknown key \"{k}\" parsing controller action"
                        )))
                    }
                }
            }
        }
    }
    // A `userdata=` with no bytes still makes it a controller action (ovs-ofctl encodes it
    // as `NXAST_CONTROLLER` then, though it prints as `CONTROLLER:65535`).
    if c.is_plain() && !userdata {
        return Ok(Action::Output {
            port: OFPP_CONTROLLER,
            max_len: c.max_len,
        });
    }
    c.v2 = c.needs_v2();
    if !c.fits() {
        return Err(TextError::new("input too big".to_string()));
    }
    Ok(Action::Controller(c))
}

/// Hex byte pairs, each optionally preceded by dots or white space.
fn parse_userdata(v: &str) -> Result<Vec<u8>, TextError> {
    let bad = || TextError::new("bad hex digit in `controller' action `userdata'".to_string());
    let mut out = Vec::new();
    let mut rest = v.trim_start_matches([' ', '.', '\t', '\r', '\n']);
    while !rest.is_empty() {
        let pair = rest.get(..2).ok_or_else(bad)?;
        if !pair.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        out.push(u8::from_str_radix(pair, 16).map_err(|_| bad())?);
        rest = rest
            .get(2..)
            .unwrap_or("")
            .trim_start_matches([' ', '.', '\t', '\r', '\n']);
    }
    Ok(out)
}

/// `note:HEX`: hex byte pairs, optionally separated by dots, zero-padded as the action is
/// on the wire (a note of `n` bytes fills `10 + n` rounded up to 8, at least 16).
fn parse_note(tok: &Token<'_>) -> Result<Vec<u8>, TextError> {
    let v = tok.value.unwrap_or("");
    let digits: Vec<u8> = v.bytes().filter(|b| *b != b'.').collect();
    if !digits.len().is_multiple_of(2) {
        return Err(TextError::new(format!(
            "{}: a note is whole hex bytes",
            tok.text()
        )));
    }
    let mut out = digits
        .chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| TextError::new(format!("{}: bad hex digit in note", tok.text())))
        })
        .collect::<Result<Vec<u8>, TextError>>()?;
    let total = (10 + out.len()).div_ceil(8).max(2) * 8;
    out.resize(total - 10, 0);
    Ok(out)
}

thread_local! {
    /// Nested action lists being parsed on this thread (`clone(...)` inside `clone(...)`).
    static NESTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The actions inside `clone(...)`, at most [`MAX_NESTING`] deep (ovs-ofctl: "Action
/// nested too deeply"); each is checked when the outermost action is.
fn parse_nested(tok: &Token<'_>, ctx: Option<&Match>) -> Result<Vec<Action>, TextError> {
    let depth = NESTING.with(|d| d.get());
    if depth >= MAX_NESTING {
        return Err(TextError::new(format!(
            "{}: Action nested too deeply",
            tok.key
        )));
    }
    NESTING.with(|d| d.set(depth + 1));
    let r = (|| {
        let mut out = Vec::new();
        let mut toks = Tokens::new(tok.value.unwrap_or(""));
        while let Some(t) = toks.next_token() {
            let t = t?;
            if is_instruction(t.key) || t.key == "drop" {
                return Err(TextError::new(format!(
                    "{}: '{}' is not allowed inside {}",
                    t.text(),
                    t.key,
                    tok.key
                )));
            }
            out.push(parse_action_unchecked(&t, ctx)?);
        }
        Ok(out)
    })();
    NESTING.with(|d| d.set(depth));
    r
}

/// `controller(...)` as ovs-ofctl prints it: options that differ from the defaults, in a
/// fixed order, or `CONTROLLER:max_len` when only the length could.
fn format_controller(c: &crate::controller::Controller) -> String {
    if c.is_plain() {
        return format!("CONTROLLER:{}", c.max_len);
    }
    let mut v = Vec::new();
    if c.reason != crate::controller::OFPR_ACTION {
        v.push(format!(
            "reason={}",
            crate::controller::reason_name(c.reason)
        ));
    }
    if c.max_len != OFPCML_NO_BUFFER {
        v.push(format!("max_len={}", c.max_len));
    }
    if c.controller_id != 0 {
        v.push(format!("id={}", c.controller_id));
    }
    if !c.userdata.is_empty() {
        let hex: Vec<String> = c.userdata.iter().map(|x| format!("{x:02x}")).collect();
        v.push(format!("userdata={}", hex.join(".")));
    }
    if c.pause {
        v.push("pause".into());
    }
    if c.meter_id != crate::controller::NX_CTLR_NO_METER {
        v.push(format!("meter_id={}", c.meter_id));
    }
    format!("controller({})", v.join(","))
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

/// Format one action as ovs-ofctl does (OpenFlow names; see the module documentation).
pub fn format_action(a: &Action) -> String {
    match *a {
        Action::Ct(ref ct) => super::ct::format_ct(ct),
        Action::Nat(ref n) => super::ct::format_nat(n),
        Action::CtClear => "ct_clear".into(),
        Action::Sample(ref s) => super::sample::format_sample(s),
        Action::Note(ref b) => {
            let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("note:{}", hex.join("."))
        }
        Action::OutputReg { ref src, .. } => format!("output:{}", format_subfield(src)),
        Action::Clone(ref inner) => {
            let v: Vec<String> = inner.iter().map(format_action).collect();
            format!("clone({})", v.join(","))
        }
        Action::DecTtlIds(ref ids) => {
            let v: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
            format!("dec_ttl({})", v.join(","))
        }
        Action::Controller(ref c) => format_controller(c),
        Action::Learn(ref l) => super::learn::format_learn(l),
        Action::CheckPktLarger { pkt_len, ref dst } => {
            super::pktlen::format_check_pkt_larger(pkt_len, dst)
        }
        Action::Output { port, max_len } => {
            if port == OFPP_CONTROLLER {
                format!("CONTROLLER:{max_len}")
            } else if port < OFPP_MAX {
                format!("output:{port}")
            } else {
                let name = format_port(port);
                if name.bytes().all(|b| b.is_ascii_digit()) {
                    format!("output:{name}")
                } else {
                    name
                }
            }
        }
        Action::Group(g) => format!("group:{g}"),
        Action::SetQueue(q) => format!("set_queue:{q}"),
        Action::Meter(m) => format!("meter:{m}"),
        Action::SetMplsTtl(t) => format!("set_mpls_ttl:{t}"),
        Action::DecMplsTtl => "dec_mpls_ttl".into(),
        Action::SetNwTtl(t) => format!("mod_nw_ttl:{t}"),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::CopyTtlOut => "copy_ttl_out".into(),
        Action::CopyTtlIn => "copy_ttl_in".into(),
        Action::PushVlan(t) => format!("push_vlan:0x{t:04x}"),
        Action::PopVlan => "pop_vlan".into(),
        Action::PushMpls(t) => format!("push_mpls:0x{t:04x}"),
        Action::PopMpls(t) => format!("pop_mpls:0x{t:04x}"),
        Action::PushPbb(t) => format!("push_pbb:0x{t:04x}"),
        Action::PopPbb => "pop_pbb".into(),
        Action::SetField {
            field,
            value,
            mask: Some(m),
        } if m == field.max() || field == Field::InPort => match contiguous(m) {
            Some(sf) => {
                let sf = Subfield { field, ..sf };
                let v = value >> sf.ofs;
                let v = if v == 0 {
                    "0".to_string()
                } else {
                    format!("{v:#x}")
                };
                format!("load:{v}->{}", format_subfield(&sf))
            }
            None => format!("set_field:{:#x}/{m:#x}->{}", value, field.name()),
        },
        Action::SetField { field, value, mask } => {
            format!(
                "set_field:{}->{}",
                format_value(field, value, mask),
                field.name()
            )
        }
        Action::Move { src, dst } => {
            format!("move:{}->{}", format_subfield(&src), format_subfield(&dst))
        }
        Action::StackPush(sf) => format!("push:{}", format_subfield(&sf)),
        Action::StackPop(sf) => format!("pop:{}", format_subfield(&sf)),
        // With `ct` and no table OVS prints `resubmit:PORT`, which reads back without
        // `ct`; ferrovs keeps it: `resubmit(PORT,,ct)`.
        Action::Resubmit { in_port, table, ct } => match (in_port, table) {
            (Some(p), None) if !ct => format!("resubmit:{}", format_port(p)),
            (p, t) => format!(
                "resubmit({},{}{})",
                p.map(format_port).unwrap_or_default(),
                t.map(|t| t.to_string()).unwrap_or_default(),
                if ct { ",ct" } else { "" }
            ),
        },
    }
}

/// Format an action list, `drop` when empty.
pub fn format_actions(actions: &[Action]) -> String {
    if actions.is_empty() {
        return "drop".into();
    }
    actions
        .iter()
        .map(format_action)
        .collect::<Vec<_>>()
        .join(",")
}

/// Format instructions as a flow's `actions=` text, `drop` when there are none.
pub fn format_instructions(insts: &[Instruction]) -> String {
    let mut items: Vec<String> = Vec::new();
    for i in insts {
        match i {
            Instruction::Meter(m) => items.push(format!("meter:{m}")),
            Instruction::ApplyActions(a) => items.extend(a.iter().map(format_action)),
            Instruction::ClearActions => items.push("clear_actions".into()),
            Instruction::WriteActions(a) => {
                let inner: Vec<String> = a.iter().map(format_action).collect();
                items.push(format!("write_actions({})", inner.join(",")));
            }
            Instruction::WriteMetadata { value, mask } => {
                if *mask == u64::MAX {
                    items.push(format!("write_metadata:0x{value:x}"));
                } else {
                    items.push(format!("write_metadata:0x{value:x}/0x{mask:x}"));
                }
            }
            Instruction::GotoTable(t) => items.push(format!("goto_table:{t}")),
        }
    }
    if items.is_empty() {
        "drop".into()
    } else {
        items.join(",")
    }
}
