//! Parsing one plain action, with the actions that have a syntax of their own (`controller(...)`,
//! `note`, `clone(...)`).

use super::*;

/// Parse one plain action without [`Action::validate`].
pub(super) fn parse_action_unchecked(
    tok: &Token<'_>,
    ctx: Option<&Match>,
) -> Result<Action, TextError> {
    let key = tok.key;
    let text = tok.text();
    let lower = key.to_ascii_lowercase();
    let a = match lower.as_str() {
        "ct" => return crate::text::ct::parse_ct(tok, ctx),
        "sample" => return crate::text::sample::parse_sample(tok),
        "ct_clear" => {
            no_value(tok)?;
            Action::CtClear
        }
        "nat" => {
            return Err(TextError::new(format!(
                "{text}: nat is only allowed inside ct(...)"
            )))
        }
        "output" => parse_output(tok)?,
        "note" => Action::Note(parse_note(tok)?),
        "clone" => Action::Clone(parse_nested(tok, ctx)?),
        "controller" => parse_controller(tok)?,
        "learn" => crate::text::learn::parse_learn(tok)?,
        "check_pkt_larger" => crate::text::pktlen::parse_check_pkt_larger(tok)?,
        "in_port" | "normal" | "flood" | "all" | "local" | "table" => {
            no_value(tok)?;
            Action::output(port_arg(tok, key)?)
        }
        "group" => Action::Group(uint_for(tok, 32)? as u32),
        "set_queue" => Action::SetQueue(uint_for(tok, 32)? as u32),
        "pop_queue" => no_value(tok).map(|()| Action::PopQueue)?,
        "enqueue" => parse_enqueue(tok)?,
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
        "dec_ttl" => parse_dec_ttl(tok)?,
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
        "mod_nw_tos" => parse_mod_nw_tos(tok)?,
        "mod_nw_ecn" => set_field(Field::IpEcn, uint_for(tok, 2)?, None),
        "mod_tp_src" | "mod_tp_dst" => parse_mod_tp(tok, ctx, lower == "mod_tp_src")?,
        "set_field" => parse_set_field(tok, ctx)?,
        "push_pbb" => Action::PushPbb(uint_for(tok, 16)? as u16),
        "pop_pbb" => {
            no_value(tok)?;
            Action::PopPbb
        }
        "resubmit" => parse_resubmit(tok)?,
        "load" => parse_load(tok)?,
        "move" => parse_move(tok)?,
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

/// `dec_ttl` or `dec_ttl(ID,...)`.
fn parse_dec_ttl(tok: &Token<'_>) -> Result<Action, TextError> {
    let text = tok.text();
    Ok(match tok.value {
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
    })
}

/// `mod_nw_tos:TOS`, a write of `ip_dscp`.
fn parse_mod_nw_tos(tok: &Token<'_>) -> Result<Action, TextError> {
    let text = tok.text();
    let tos = uint_for(tok, 8)?;
    if tos & 3 != 0 {
        return Err(TextError::new(format!(
            "{text}: mod_nw_tos takes a multiple of 4 (use mod_nw_ecn for ECN)"
        )));
    }
    Ok(set_field(Field::IpDscp, tos >> 2, None))
}

/// `mod_tp_src:PORT` / `mod_tp_dst:PORT`: the port of the protocol the flow matches.
fn parse_mod_tp(tok: &Token<'_>, ctx: Option<&Match>, src: bool) -> Result<Action, TextError> {
    let (key, text) = (tok.key, tok.text());
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
    Ok(set_field(f, uint_for(tok, 16)?, None))
}

/// `set_field:VALUE[/MASK]->FIELD`.
fn parse_set_field(tok: &Token<'_>, ctx: Option<&Match>) -> Result<Action, TextError> {
    let text = tok.text();
    let v = need_value(tok)?;
    let (val, name) = v
        .rsplit_once("->")
        .ok_or_else(|| TextError::new(format!("{text}: expected set_field:VALUE->FIELD")))?;
    let f = set_field_target(name, ctx)
        .ok_or_else(|| TextError::new(format!("{text}: unknown field '{name}'")))?;
    let (x, m) = parse_value_raw(f, val).map_err(|e| TextError::new(format!("{text}: {e}")))?;
    Ok(set_field(f, x, m))
}

/// `resubmit:PORT` or `resubmit([PORT],[TABLE][,ct])`; as ovs-ofctl, anything after a
/// third item is ignored.
fn parse_resubmit(tok: &Token<'_>) -> Result<Action, TextError> {
    let text = tok.text();
    let v = need_value(tok)?;
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
    let table = match t {
        None | Some("") => None,
        Some(t) => Some(
            parse_uint(t, 8)
                .ok_or_else(|| TextError::new(format!("{text}: '{t}' is not a table number")))?
                as u8,
        ),
    };
    Ok(Action::Resubmit { in_port, table, ct })
}

/// `load:VALUE->DST`, a masked set-field of DST's bits.
fn parse_load(tok: &Token<'_>) -> Result<Action, TextError> {
    let text = tok.text();
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
    Ok(Action::SetField {
        field: dst.field,
        value: value << dst.ofs,
        mask: Some(dst.mask()),
    })
}

/// `move:SRC->DST`, both as wide as each other.
fn parse_move(tok: &Token<'_>) -> Result<Action, TextError> {
    let text = tok.text();
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
    Ok(Action::Move { src, dst })
}

/// `enqueue:PORT:QUEUE` or `enqueue(PORT,QUEUE)`, split as ovs-ofctl splits them: the port
/// ends at the first `:`, `,` or `q` (after any of those leading), the queue is the rest.
/// Unlike ovs-ofctl, a queue above 32 bits is refused rather than wrapped.
fn parse_enqueue(tok: &Token<'_>) -> Result<Action, TextError> {
    let syntax = || {
        TextError::new(
            "\"enqueue\" syntax is \"enqueue:PORT:QUEUE\" or \"enqueue(PORT,QUEUE)\"".to_string(),
        )
    };
    let is_sep = |c: char| matches!(c, ':' | ',' | 'q');
    let v = tok.value.ok_or_else(syntax)?.trim_start_matches(is_sep);
    let (port, queue) = v.split_once(is_sep).ok_or_else(syntax)?;
    if queue.is_empty() {
        return Err(syntax());
    }
    let port = parse_port(port)
        .ok_or_else(|| TextError::new(format!("{port}: enqueue to unknown port")))?;
    let queue = parse_uint(queue, 32)
        .ok_or_else(|| TextError::new(format!("{}: invalid queue '{queue}'", tok.text())))?;
    Ok(Action::Enqueue {
        port,
        queue: queue as u32,
    })
}

/// `output:PORT` or `output:SUBFIELD` (ovs-ofctl's `output:reg0[0..15]`).
fn parse_output(tok: &Token<'_>) -> Result<Action, TextError> {
    let v = need_value(tok)?;
    Ok(match parse_port(v) {
        Some(p) => Action::output(p),
        None => match parse_subfield(v) {
            Ok(src) => Action::OutputReg {
                src,
                max_len: OFPCML_NO_BUFFER,
            },
            Err(_) => port_arg(tok, v).map(Action::output)?,
        },
    })
}

/// `controller`, `controller:MAX_LEN` or `controller(KEY=VALUE,...)` as ovs-ofctl reads
/// them: `output:CONTROLLER` unless a reason, id, user data (even empty), pause or meter
/// is given. A later key overrides an earlier one; numbers are checked against their width.
pub(super) fn parse_controller(tok: &Token<'_>) -> Result<Action, TextError> {
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
pub(super) fn parse_userdata(v: &str) -> Result<Vec<u8>, TextError> {
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
pub(super) fn parse_note(tok: &Token<'_>) -> Result<Vec<u8>, TextError> {
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
pub(super) fn parse_nested(tok: &Token<'_>, ctx: Option<&Match>) -> Result<Vec<Action>, TextError> {
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
