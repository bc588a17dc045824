//! ovs-ofctl's text syntax for flows, groups and meters: parsing and formatting.
//!
//! The syntax is a list of `key`, `key=value`, `key:value` or `key(value)` items separated
//! by commas or white space; parentheses nest, so `write_actions(output:1,pop_vlan)` is one
//! item. In a flow, `actions=` swallows the rest of the line. `Tokens` is that lexer; it
//! reports byte positions so errors can quote what the user typed.
//!
//! Submodules, one job each:
//! * `fields` — values (numbers, MACs, IPv4/IPv6 with prefixes or masks, ports, `ip_frag`
//!   and `tcp_flags` keywords) for every [`Field`], both directions;
//! * `flow` — matches and flow_mods ([`parse_flow`], [`parse_match`], [`format_flow`],
//!   [`format_flow_stats`], [`format_match`]);
//! * `actions` — actions and instructions ([`parse_instructions`], [`parse_actions`],
//!   [`format_instructions`], [`format_action`]);
//! * `group` and `meter` — group and meter mods;
//! * `ct`, `sample` and `pktlen` — the Nicira actions with their own argument lists.
//!
//! Contract: the parsers never panic, whatever the input (a property test feeds them
//! arbitrary strings), and every error message names the offending token. Formatting then
//! parsing gives back an equal value for everything the parsers can produce (the round-trip
//! property tests cover random valid matches and flows). Like OVS, the parser adds no
//! prerequisites: `tcp_dst=80` without `tcp` is an error, but items may come in any order.

mod actions;
mod ct;
mod fields;
mod flow;
mod group;
mod learn;
mod meter;
mod pktlen;
mod sample;

pub use actions::{
    format_action, format_actions, format_instructions, parse_actions, parse_instructions,
};
pub use fields::{format_port, format_value, parse_port, parse_value};
pub use flow::{
    format_flow, format_flow_stats, format_match, parse_flow, parse_match, FlowCounters,
};
pub use group::{format_group, parse_group, parse_group_buckets};
pub use meter::{format_meter, meter_id_text, parse_meter};

use crate::oxm::Field;
use core::fmt;

/// A text syntax error; the message names the offending token.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TextError(pub String);

impl TextError {
    pub(crate) fn new(msg: impl Into<String>) -> TextError {
        TextError(msg.into())
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TextError {}

/// One lexed item.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Token<'a> {
    /// The key (before `=`, `:` or `(`).
    pub key: &'a str,
    /// The value, if any (inside the parentheses for `key(value)`).
    pub value: Option<&'a str>,
    /// Byte offset of the value's first byte in the lexed string (end of key if none).
    pub value_start: usize,
}

impl Token<'_> {
    /// `key=value` or `key` as typed, for error messages.
    pub fn text(&self) -> String {
        match self.value {
            Some(v) => format!("{}={}", self.key, v),
            None => self.key.to_string(),
        }
    }
}

fn is_delim(c: char) -> bool {
    matches!(c, ',' | ' ' | '\t' | '\r' | '\n')
}

/// The lexer (see the module documentation).
pub(crate) struct Tokens<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Tokens<'a> {
    pub fn new(s: &'a str) -> Tokens<'a> {
        Tokens { s, pos: 0 }
    }

    /// The text from byte `at` to the end (trimmed), for `actions=`; consumes it.
    pub fn take_rest_from(&mut self, at: usize) -> &'a str {
        let rest = self.s.get(at..).unwrap_or("");
        self.pos = self.s.len();
        rest.trim()
    }

    /// The next item, `None` at the end. After an error the lexer is at the end.
    pub fn next_token(&mut self) -> Option<Result<Token<'a>, TextError>> {
        let s = self.s;
        let rest = s.get(self.pos..)?;
        let skip = rest.find(|c: char| !is_delim(c))?;
        let start = self.pos + skip;
        let item = s.get(start..)?;
        let key_len = item
            .find(|c: char| is_delim(c) || matches!(c, '=' | ':' | '(' | ')'))
            .unwrap_or(item.len());
        let key = item.get(..key_len)?;
        if key.is_empty() {
            self.pos = s.len();
            return Some(Err(TextError::new(format!(
                "syntax error at '{}': expected a keyword",
                truncate(item)
            ))));
        }
        let value_start = start + key_len + 1;
        let token = match item.get(key_len..).unwrap_or("").chars().next() {
            Some('(') => self.paren_value(key, value_start),
            Some('=') | Some(':') => self.plain_value(key, value_start),
            Some(')') => Err(UNBALANCED),
            _ => {
                self.pos = start + key_len;
                Ok(Token {
                    key,
                    value: None,
                    value_start: start + key_len,
                })
            }
        };
        Some(token.map_err(|why| {
            self.pos = s.len();
            TextError::new(format!("'{}': {why}", truncate(item)))
        }))
    }

    /// `key(value)`, the value starting at byte `inner_start` (after the `(`): up to the
    /// matching `)`, which must end the item. Moves past it.
    fn paren_value(&mut self, key: &'a str, inner_start: usize) -> Result<Token<'a>, &'static str> {
        let s = self.s;
        let inner = s.get(inner_start..).unwrap_or("");
        let close = matching_paren(inner).ok_or(UNBALANCED)?;
        let mut value = inner.get(..close).unwrap_or("");
        self.pos = inner_start + close + 1;
        let mut tail = s.get(self.pos..).unwrap_or("");
        // `key(x)->y`, as `check_pkt_larger(1500)->reg0[0]`: as ovs-ofctl, the value
        // is `x)->y`, up to the next delimiter.
        if tail.starts_with("->") {
            let end = tail.find(is_delim).unwrap_or(tail.len());
            self.pos += end;
            value = inner.get(..close + 1 + end).unwrap_or("");
            tail = s.get(self.pos..).unwrap_or("");
        }
        if tail.chars().next().is_some_and(|c| !is_delim(c)) {
            return Err("unexpected text after ')'");
        }
        Ok(Token {
            key,
            value: Some(value),
            value_start: inner_start,
        })
    }

    /// `key=value` or `key:value`, the value starting at byte `vstart`: up to the next
    /// delimiter outside parentheses. Moves past it.
    fn plain_value(&mut self, key: &'a str, vstart: usize) -> Result<Token<'a>, &'static str> {
        let v = self.s.get(vstart..).unwrap_or("");
        let end = value_end(v)?;
        self.pos = vstart + end;
        Ok(Token {
            key,
            value: Some(v.get(..end).unwrap_or("")),
            value_start: vstart,
        })
    }
}

/// Why an item's parentheses do not pair up.
const UNBALANCED: &str = "unbalanced parentheses";

/// The byte offset of the `)` closing a `(` just before `inner`.
fn matching_paren(inner: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The length of the value at the start of `v`: up to the first delimiter outside
/// parentheses, whose pairs must balance.
fn value_end(v: &str) -> Result<usize, &'static str> {
    let mut depth = 0usize;
    for (i, c) in v.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Err(UNBALANCED),
            ')' => depth -= 1,
            c if depth == 0 && is_delim(c) => return Ok(i),
            _ => {}
        }
    }
    if depth != 0 {
        return Err(UNBALANCED);
    }
    Ok(v.len())
}

/// At most 40 characters of `s`, for quoting in messages.
fn truncate(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => s.get(..i).unwrap_or(s),
        None => s,
    }
}

/// Parse an unsigned number in decimal or `0x` hex that fits in `bits`.
pub(crate) fn parse_uint(s: &str, bits: u32) -> Option<u128> {
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u128::from_str_radix(h, 16).ok()?
    } else {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse::<u128>().ok()?
    };
    (v <= crate::oxm::ones(bits)).then_some(v)
}

/// Parse a number for `key` (whose token text is `tok`), with the standard message.
pub(crate) fn uint_for(tok: &Token<'_>, bits: u32) -> Result<u128, TextError> {
    let v = tok.value.unwrap_or("");
    parse_uint(v, bits).ok_or_else(|| {
        TextError::new(format!(
            "{}: '{}' is not a {}-bit number",
            tok.text(),
            v,
            bits
        ))
    })
}

/// A required value, or an error naming the key.
pub(crate) fn need_value<'a>(tok: &Token<'a>) -> Result<&'a str, TextError> {
    tok.value
        .ok_or_else(|| TextError::new(format!("'{}' needs a value", tok.key)))
}

/// Human description of what a field's prerequisite asks for, for error messages.
pub(crate) fn prereq_text(f: Field) -> String {
    use crate::oxm::Prereq;
    match f.prereq() {
        Prereq::None => String::new(),
        Prereq::InPort => "in_port".into(),
        Prereq::VlanPresent => "a VLAN tag match (dl_vlan or vlan_vid with 0x1000 set)".into(),
        Prereq::EthType(t) => {
            let names: Vec<String> = t.iter().map(|x| format!("0x{x:04x}")).collect();
            let hint = match t {
                [0x0800, 0x86dd] => " (ip or ipv6)",
                [0x0800] => " (ip)",
                [0x86dd] => " (ipv6)",
                [0x0806, 0x8035] => " (arp or rarp)",
                [0x8847, 0x8848] => " (mpls or mplsm)",
                _ => "",
            };
            format!("eth_type={}{}", names.join(" or "), hint)
        }
        Prereq::IpProto(p) => {
            let hint = match p {
                1 => " (icmp)",
                6 => " (tcp or tcp6)",
                17 => " (udp or udp6)",
                58 => " (icmp6)",
                132 => " (sctp or sctp6)",
                _ => "",
            };
            format!("ip_proto={p}{hint}")
        }
        Prereq::Icmpv6Type(t) => {
            let names: Vec<String> = t.iter().map(|x| x.to_string()).collect();
            format!("icmpv6_type={}", names.join(" or "))
        }
        Prereq::Ct(t) => {
            let fam = match t {
                [0x0800] => "ip",
                [0x86dd] => "ipv6",
                _ => "ip or ipv6",
            };
            format!("a valid connection (ct_state +new, +est, +rel, +rpl, +snat, +dnat or +trk-inv) and {fam}")
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tests_meter;
