//! `learn(...)` in ovs-ofctl's syntax, both ways.
//!
//! Keys: `table`, `priority`, `idle_timeout`, `hard_timeout`, `fin_idle_timeout`,
//! `fin_hard_timeout`, `cookie`, `send_flow_rem`, `delete_learned`, `limit`, `result_dst`;
//! anything else is a spec:
//! * `DST` or `DST=SRC` (fields or subfields of equal width): the learned flow matches DST
//!   against the packet's SRC (DST's own bits when no SRC);
//! * `DST=VALUE`: it matches a constant (a field's own syntax for a whole field, an integer
//!   for bits of one);
//! * `load:SRC->DST` / `load:VALUE->DST`: its actions load the packet's bits or a constant;
//! * `output:SRC`: it outputs to the port the packet's bits hold.
//!
//! Printing follows ovs-ofctl: `table` always; timeouts, priority, flags, cookie, limit and
//! result only when not the default; a match spec whose source is its destination as `DST`;
//! a whole-field constant in the field's syntax under the field's name.

use super::actions::{format_subfield, parse_subfield};
use super::fields::{format_port, format_value, parse_value_raw};
use super::{parse_uint, TextError, Token, Tokens};
use crate::actions::{field_writable, port_from_of10, port_to_of10, Action, Subfield};
use crate::learn::{
    Learn, LearnDst, LearnSpec, LearnSrc, DEFAULT_PRIORITY, F_DELETE_LEARNED, F_SEND_FLOW_REM,
    F_WRITE_RESULT,
};
use crate::oxm::Field;

/// The names ovs-ofctl knows a field by that are not this crate's (its own field names).
fn alias(name: &str) -> Option<Field> {
    Some(match name {
        "nw_proto" => Field::IpProto,
        "nw_src" => Field::Ipv4Src,
        "nw_dst" => Field::Ipv4Dst,
        "tp_src" => Field::TcpSrc,
        "tp_dst" => Field::TcpDst,
        _ => return None,
    })
}

/// The name a whole-field constant prints under (ovs-ofctl's field names).
fn print_name(f: Field) -> &'static str {
    match f {
        Field::IpProto => "nw_proto",
        f => f.name(),
    }
}

/// A field or subfield as `learn` reads it. `in_port` is the 16-bit port number of OpenFlow
/// 1.0 (`NXM_OF_IN_PORT`), as in OVS.
fn learn_subfield(s: &str) -> Result<Subfield, String> {
    let sf = parse_subfield(s).or_else(|e| alias(s.trim()).map(Subfield::whole).ok_or(e))?;
    Ok(
        if sf.field == Field::InPort && sf.ofs == 0 && sf.n_bits == 32 {
            Subfield { n_bits: 16, ..sf }
        } else {
            sf
        },
    )
}

/// Whether `sf` is a whole field as `learn` names it.
fn is_whole(sf: &Subfield) -> bool {
    if sf.is_port16() {
        sf.ofs == 0 && sf.n_bits == 16
    } else {
        sf.ofs == 0 && u32::from(sf.n_bits) == sf.field.bits()
    }
}

/// A constant's text: `0` or `0x...`, as ovs-ofctl prints bytes.
fn hex(v: u128) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
    }
}

/// Parses the inside of `learn(...)`.
pub(crate) fn parse_learn(tok: &Token<'_>) -> Result<Action, TextError> {
    let orig = tok.value.unwrap_or("");
    let err = |m: String| TextError::new(format!("{}: {m}", tok.text()));
    let mut l = Learn::default();
    let mut inner = Tokens::new(orig);
    while let Some(t) = inner.next_token() {
        let t = t?;
        let value = t.value.unwrap_or("");
        let num = |bits: u32| {
            parse_uint(value, bits).ok_or_else(|| err(format!("invalid {} \"{value}\"", t.key)))
        };
        match t.key {
            "table" => {
                l.table_id = num(8)? as u8;
                if l.table_id == 255 {
                    return Err(err("table id 255 not valid for `learn' action".into()));
                }
            }
            "priority" => l.priority = num(16)? as u16,
            "idle_timeout" => l.idle_timeout = num(16)? as u16,
            "hard_timeout" => l.hard_timeout = num(16)? as u16,
            "fin_idle_timeout" => l.fin_idle_timeout = num(16)? as u16,
            "fin_hard_timeout" => l.fin_hard_timeout = num(16)? as u16,
            "cookie" => l.cookie = num(64)? as u64,
            "send_flow_rem" => l.flags |= F_SEND_FLOW_REM,
            "delete_learned" => l.flags |= F_DELETE_LEARNED,
            "limit" => l.limit = num(32)? as u32,
            "result_dst" => {
                let sf = parse_subfield(value).map_err(err)?;
                if !field_writable(sf.field) {
                    return Err(err(format!("{value} is read-only")));
                }
                if sf.n_bits != 1 {
                    return Err(err(
                        "result_dst in 'learn' action must be a single bit".into()
                    ));
                }
                l.flags |= F_WRITE_RESULT;
                l.result_dst = Some(sf);
            }
            "load" => l.specs.push(parse_load(value).map_err(err)?),
            "output" => {
                let src = learn_subfield(value).map_err(err)?;
                l.specs.push(LearnSpec {
                    n_bits: src.n_bits,
                    src: LearnSrc::Field(src),
                    dst: LearnDst::Output,
                });
            }
            name => l.specs.push(parse_match_spec(name, t.value).map_err(err)?),
        }
    }
    for s in &l.specs {
        if s.n_bits > 128 {
            return Err(err("fields wider than 128 bits cannot be learned".into()));
        }
    }
    // The form it goes out in, as the decoder records it (so text and wire agree).
    l.v2 = l.needs_v2();
    Ok(Action::Learn(Box::new(l)))
}

fn parse_match_spec(name: &str, value: Option<&str>) -> Result<LearnSpec, String> {
    let dst = learn_subfield(name).map_err(|e| format!("unknown keyword {name} ({e})"))?;
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(LearnSpec {
            n_bits: dst.n_bits,
            src: LearnSrc::Field(dst),
            dst: LearnDst::Match(dst),
        });
    };
    if let Ok(src) = learn_subfield(value) {
        if src.n_bits != dst.n_bits {
            return Err(format!(
                "bit widths of {name} ({}) and {value} ({}) differ",
                dst.n_bits, src.n_bits
            ));
        }
        return Ok(LearnSpec {
            n_bits: dst.n_bits,
            src: LearnSrc::Field(src),
            dst: LearnDst::Match(dst),
        });
    }
    let v = if is_whole(&dst) {
        match parse_value_raw(dst.field, value) {
            Ok((v, None)) if dst.is_port16() => port_to_of10(v as u32)
                .map(u128::from)
                .ok_or_else(|| format!("{name}: port {value} has no 16-bit number"))?,
            Ok((v, None)) => v,
            Ok((_, Some(_))) => return Err(format!("{name}: a mask is not allowed here")),
            Err(e) => {
                return Err(format!(
                "{name} value {value} cannot be parsed as a subfield or an immediate value ({e})"
            ))
            }
        }
    } else {
        let v =
            parse_uint(value, 128).ok_or_else(|| format!("{value}: cannot parse integer value"))?;
        if u32::from(dst.n_bits) < 128 && v >> dst.n_bits != 0 {
            return Err(format!(
                "value {value} does not fit into {} bits",
                dst.n_bits
            ));
        }
        v
    };
    Ok(LearnSpec {
        n_bits: dst.n_bits,
        src: LearnSrc::Imm(v),
        dst: LearnDst::Match(dst),
    })
}

fn parse_load(value: &str) -> Result<LearnSpec, String> {
    let (src, dst) = value
        .split_once("->")
        .ok_or_else(|| format!("load: missing `->' in `{value}'"))?;
    if src.trim().is_empty() {
        return Err(format!("load: missing source before `->' in `{value}'"));
    }
    let dst = parse_subfield(dst)?;
    if !field_writable(dst.field) {
        return Err(format!("{} is read-only", dst.field.name()));
    }
    if src.trim().starts_with(|c: char| c.is_ascii_digit()) {
        let v = parse_uint(src.trim(), 128)
            .ok_or_else(|| format!("load: garbage before `->' in `{value}'"))?;
        if u32::from(dst.n_bits) < 128 && v >> dst.n_bits != 0 {
            return Err(format!(
                "{value}: value does not fit into {} bits",
                dst.n_bits
            ));
        }
        return Ok(LearnSpec {
            n_bits: dst.n_bits,
            src: LearnSrc::Imm(v),
            dst: LearnDst::Load(dst),
        });
    }
    let src = learn_subfield(src)?;
    if src.n_bits != dst.n_bits {
        return Err(format!(
            "source field is {} bits wide but destination is {} bits wide",
            src.n_bits, dst.n_bits
        ));
    }
    Ok(LearnSpec {
        n_bits: dst.n_bits,
        src: LearnSrc::Field(src),
        dst: LearnDst::Load(dst),
    })
}

/// `learn(...)` as ovs-ofctl prints it.
pub(crate) fn format_learn(l: &Learn) -> String {
    let mut s = format!("learn(table={}", l.table_id);
    if l.idle_timeout != 0 {
        s += &format!(",idle_timeout={}", l.idle_timeout);
    }
    if l.hard_timeout != 0 {
        s += &format!(",hard_timeout={}", l.hard_timeout);
    }
    if l.fin_idle_timeout != 0 {
        s += &format!(",fin_idle_timeout={}", l.fin_idle_timeout);
    }
    if l.fin_hard_timeout != 0 {
        s += &format!(",fin_hard_timeout={}", l.fin_hard_timeout);
    }
    if l.priority != DEFAULT_PRIORITY {
        s += &format!(",priority={}", l.priority);
    }
    if l.flags & F_SEND_FLOW_REM != 0 {
        s += ",send_flow_rem";
    }
    if l.flags & F_DELETE_LEARNED != 0 {
        s += ",delete_learned";
    }
    if l.cookie != 0 {
        s += &format!(",cookie={:#x}", l.cookie);
    }
    if l.limit != 0 {
        s += &format!(",limit={}", l.limit);
    }
    if let Some(r) = l.result_dst {
        s += &format!(",result_dst={}", format_subfield(&r));
    }
    for spec in &l.specs {
        s.push(',');
        match (spec.src, spec.dst) {
            (LearnSrc::Imm(v), LearnDst::Match(d)) => {
                if d.is_port16() && is_whole(&d) {
                    s += &format!("in_port={}", format_port(port_from_of10(v as u16)));
                } else if is_whole(&d) {
                    // A field's own syntax, except that hexadecimal has no leading zeros
                    // (`eth_type=0x800`, where a match prints `dl_type=0x0800`).
                    let text = format_value(d.field, v, None);
                    let text = if text.starts_with("0x") { hex(v) } else { text };
                    s += &format!("{}={text}", print_name(d.field));
                } else {
                    s += &format!("{}={}", format_subfield(&d), hex(v));
                }
            }
            (LearnSrc::Field(src), LearnDst::Match(d)) => {
                s += &format_subfield(&d);
                if src.field != d.field || src.ofs != d.ofs || src.is_port16() != d.is_port16() {
                    s += &format!("={}", format_subfield(&src));
                }
            }
            (LearnSrc::Imm(v), LearnDst::Load(d)) => {
                s += &format!("load:{}->{}", hex(v), format_subfield(&d));
            }
            (LearnSrc::Field(src), LearnDst::Load(d)) => {
                s += &format!("load:{}->{}", format_subfield(&src), format_subfield(&d));
            }
            (LearnSrc::Field(src), LearnDst::Output) => {
                s += &format!("output:{}", format_subfield(&src));
            }
            // Refused by validation and by the decoder.
            (LearnSrc::Imm(_), LearnDst::Output) => s += "output:?",
        }
    }
    s.push(')');
    s
}
