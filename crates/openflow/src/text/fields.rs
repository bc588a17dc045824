//! Field values in ovs-ofctl text, both directions.
//!
//! Every [`ValueFormat`] has one parser and one formatter here, and formatting then parsing
//! yields the same (value, mask) pair once normalised by `Match`. Integers are decimal or
//! `0x` hex (masked integers are printed in hex, as OVS does); addresses accept a `/mask`
//! in address form and IPv4/IPv6 also a `/prefix-length`; ports accept OpenFlow's reserved
//! names (case-insensitive) and map OpenFlow 1.0 reserved numbers (`0xff00..=0xffff`) to
//! their 32-bit equivalents.

use super::{parse_uint, TextError};
use crate::actions::{port_from_of10, PORT_NAMES};
use crate::oxm::{Field, ValueFormat};
use std::net::{Ipv4Addr, Ipv6Addr};

/// TCP flag names, lowest bit first.
const TCP_FLAGS: [(u16, &str); 9] = [
    (0x001, "fin"),
    (0x002, "syn"),
    (0x004, "rst"),
    (0x008, "psh"),
    (0x010, "ack"),
    (0x020, "urg"),
    (0x040, "ece"),
    (0x080, "cwr"),
    (0x100, "ns"),
];

/// `ip_frag` keywords and their (value, mask); mask `3` is the exact match.
const FRAG_NAMES: [(&str, u128, u128); 5] = [
    ("no", 0, 1),
    ("yes", 1, 1),
    ("first", 1, 3),
    ("later", 3, 3),
    ("not_later", 0, 2),
];

/// Parse an OpenFlow port: a number or a reserved port name.
pub fn parse_port(s: &str) -> Option<u32> {
    if let Some((p, _)) = PORT_NAMES.iter().find(|(_, n)| n.eq_ignore_ascii_case(s)) {
        return Some(*p);
    }
    if s.eq_ignore_ascii_case("none") {
        return Some(crate::actions::OFPP_ANY);
    }
    let v = u32::try_from(parse_uint(s, 32)?).ok()?;
    Some(match u16::try_from(v) {
        Ok(p16) => port_from_of10(p16),
        Err(_) => v,
    })
}

/// Format a port: a reserved name or the number.
pub fn format_port(p: u32) -> String {
    match PORT_NAMES.iter().find(|(n, _)| *n == p) {
        Some((_, name)) => (*name).to_string(),
        None => p.to_string(),
    }
}

fn parse_mac(s: &str) -> Option<u128> {
    let mut v = 0u128;
    let mut n = 0;
    for part in s.split(':') {
        if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        v = (v << 8) | u128::from(u8::from_str_radix(part, 16).ok()?);
        n += 1;
    }
    (n == 6).then_some(v)
}

fn format_mac(v: u128) -> String {
    let b = crate::oxm::u128_to_mac(v);
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        b[0], b[1], b[2], b[3], b[4], b[5]
    )
}

/// The prefix length of `mask` if it is a CIDR mask of `bits` bits.
fn prefix_len(mask: u128, bits: u32) -> Option<u32> {
    let n = mask.count_ones();
    let rest = bits.checked_sub(n)?;
    (crate::oxm::ones(bits) & !crate::oxm::ones(rest) == mask).then_some(n)
}

fn prefix_mask(n: u32, bits: u32) -> u128 {
    crate::oxm::ones(bits) & !crate::oxm::ones(bits - n)
}

fn parse_addr_masked(
    s: &str,
    bits: u32,
    addr: fn(&str) -> Option<u128>,
    what: &str,
) -> Result<(u128, Option<u128>), String> {
    let (a, m) = match s.split_once('/') {
        Some((a, m)) => (a, Some(m)),
        None => (s, None),
    };
    let v = addr(a).ok_or_else(|| format!("'{a}' is not {what}"))?;
    let mask = match m {
        None => None,
        Some(m) => {
            if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) {
                let n: u32 = m
                    .parse()
                    .ok()
                    .filter(|n| *n <= bits)
                    .ok_or_else(|| format!("'{m}' is not a prefix length from 0 to {bits}"))?;
                Some(prefix_mask(n, bits))
            } else {
                Some(addr(m).ok_or_else(|| format!("'{m}' is not {what} mask"))?)
            }
        }
    };
    Ok((v, mask))
}

fn ipv4(s: &str) -> Option<u128> {
    s.parse::<Ipv4Addr>().ok().map(crate::oxm::ipv4_to_u128)
}

fn ipv6(s: &str) -> Option<u128> {
    s.parse::<Ipv6Addr>().ok().map(crate::oxm::ipv6_to_u128)
}

fn parse_int_masked(s: &str, bits: u32) -> Result<(u128, Option<u128>), String> {
    let (a, m) = match s.split_once('/') {
        Some((a, m)) => (a, Some(m)),
        None => (s, None),
    };
    let v = parse_uint(a, bits).ok_or_else(|| format!("'{a}' is not a {bits}-bit number"))?;
    let mask = match m {
        None => None,
        Some(m) => {
            Some(parse_uint(m, bits).ok_or_else(|| format!("'{m}' is not a {bits}-bit mask"))?)
        }
    };
    Ok((v, mask))
}

fn parse_tcp_flags(s: &str) -> Result<(u128, Option<u128>), String> {
    if !s.starts_with('+') && !s.starts_with('-') {
        return parse_int_masked(s, 12);
    }
    let (mut value, mut mask) = (0u16, 0u16);
    let mut rest = s;
    while let Some(sign) = rest.chars().next() {
        let body = rest.get(1..).unwrap_or("");
        let end = body.find(['+', '-']).unwrap_or(body.len());
        let name = body.get(..end).unwrap_or("");
        let bit = TCP_FLAGS
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(b, _)| *b)
            .ok_or_else(|| {
                format!("'{name}' is not a TCP flag (fin, syn, rst, psh, ack, urg, ece, cwr, ns)")
            })?;
        if mask & bit != 0 {
            return Err(format!("TCP flag '{name}' given twice"));
        }
        mask |= bit;
        if sign == '+' {
            value |= bit;
        }
        rest = body.get(end..).unwrap_or("");
    }
    Ok((u128::from(value), Some(u128::from(mask))))
}

fn format_tcp_flags(v: u128, mask: Option<u128>) -> String {
    let named: u128 = 0x1ff;
    match mask {
        Some(m) if m & !named == 0 => {
            let mut s = String::new();
            for (bit, name) in TCP_FLAGS {
                let bit = u128::from(bit);
                if m & bit != 0 {
                    s.push(if v & bit != 0 { '+' } else { '-' });
                    s.push_str(name);
                }
            }
            s
        }
        Some(m) => format!("0x{v:03x}/0x{m:03x}"),
        None => format!("0x{v:03x}"),
    }
}

/// `ct_state`: `+trk-inv` (value and mask), `new|trk` or a number (exact, or `V/M`).
/// Bits other than the eight named ones are refused, as ovs-ofctl does; a mask covering
/// all eight is the exact match.
fn parse_ct_state(s: &str) -> Result<(u128, Option<u128>), String> {
    let unknown = || format!("{s}: unknown ct_state flag(s)");
    let name_bit = |name: &str| {
        crate::oxm::CT_STATE_NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(b, _)| *b)
    };
    let (value, mask) = if s.starts_with('+') || s.starts_with('-') {
        let (mut value, mut mask) = (0u8, 0u8);
        let mut rest = s;
        while let Some(sign) = rest.chars().next() {
            let body = rest.get(1..).unwrap_or("");
            let end = body.find(['+', '-']).unwrap_or(body.len());
            let name = body.get(..end).unwrap_or("");
            let bit = name_bit(name).ok_or_else(unknown)?;
            if mask & bit != 0 {
                return Err(format!("ct_state flag '{name}' given twice"));
            }
            mask |= bit;
            if sign == '+' {
                value |= bit;
            }
            rest = body.get(end..).unwrap_or("");
        }
        (u128::from(value), Some(u128::from(mask)))
    } else if s.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        let (v, m) = parse_int_masked(s, 32).map_err(|_| unknown())?;
        if v > 0xff || m.is_some_and(|m| m > 0xff) {
            return Err(unknown());
        }
        (v, m)
    } else {
        let mut v = 0u8;
        for name in s.split('|') {
            v |= name_bit(name).ok_or_else(unknown)?;
        }
        (u128::from(v), None)
    };
    Ok(match mask {
        Some(0xff) => (value, None),
        m => (value, m),
    })
}

/// `ct_state` as ovs-ofctl prints it: exact as `new|trk` (`0` for none), masked as
/// `+trk-inv` with the bits in ascending order.
fn format_ct_state(v: u128, mask: Option<u128>) -> String {
    match mask.filter(|m| m & 0xff != 0xff) {
        None => {
            let names: Vec<&str> = crate::oxm::CT_STATE_NAMES
                .iter()
                .filter(|(b, _)| v & u128::from(*b) != 0)
                .map(|(_, n)| *n)
                .collect();
            if names.is_empty() {
                "0".into()
            } else {
                names.join("|")
            }
        }
        Some(m) => {
            let mut s = String::new();
            for (bit, name) in crate::oxm::CT_STATE_NAMES {
                let bit = u128::from(bit);
                if m & bit != 0 {
                    s.push(if v & bit != 0 { '+' } else { '-' });
                    s.push_str(name);
                }
            }
            if s.is_empty() {
                "0/0".into()
            } else {
                s
            }
        }
    }
}

/// Parse a value (and optional mask) of `f` in ovs-ofctl text. The mask is returned as
/// typed; whether `f` accepts masks is the caller's check.
pub fn parse_value(f: Field, s: &str) -> Result<(u128, Option<u128>), TextError> {
    parse_value_raw(f, s).map_err(TextError)
}

pub(crate) fn parse_value_raw(f: Field, s: &str) -> Result<(u128, Option<u128>), String> {
    let bits = f.bits();
    match f.info().format {
        ValueFormat::Decimal | ValueFormat::Hex => parse_int_masked(s, bits),
        ValueFormat::Mac => parse_addr_masked(s, 48, parse_mac, "an Ethernet address"),
        ValueFormat::Ipv4 => parse_addr_masked(s, 32, ipv4, "an IPv4 address"),
        ValueFormat::Ipv6 => parse_addr_masked(s, 128, ipv6, "an IPv6 address"),
        ValueFormat::Port => parse_port(s)
            .map(|p| (u128::from(p), None))
            .ok_or_else(|| format!("'{s}' is not a port number or reserved port name")),
        ValueFormat::Frag => match FRAG_NAMES.iter().find(|(n, _, _)| *n == s) {
            Some((_, v, m)) => Ok((*v, if *m == 3 { None } else { Some(*m) })),
            None => parse_int_masked(s, bits).map_err(|_| {
                format!("'{s}' is not an ip_frag value (no, yes, first, later, not_later)")
            }),
        },
        ValueFormat::TcpFlags => parse_tcp_flags(s),
        ValueFormat::CtState => parse_ct_state(s),
        ValueFormat::TunFlags => parse_tun_flags(s),
    }
}

/// `tun_flags` as ovs-ofctl 3.1 reads it: `+oam`, `-oam`, `oam` (exact), or a number
/// (with a mask) within the one public bit. Any other flag ("df", "csum", "key" are the
/// datapath's own) is refused as OVS refuses it.
fn parse_tun_flags(s: &str) -> Result<(u128, Option<u128>), String> {
    let unknown = || format!("{s}: unknown tunnel flag(s)");
    match s {
        // The field is one bit wide: a flag named is an exact match.
        "+oam" | "oam" => Ok((1, None)),
        "-oam" => Ok((0, None)),
        _ if s.bytes().next().is_some_and(|b| b.is_ascii_digit()) => {
            let (v, m) = parse_int_masked(s, 16).map_err(|_| unknown())?;
            if v > 1 || m.is_some_and(|m| m > 1) {
                return Err(unknown());
            }
            Ok((v, m.filter(|m| *m != 1)))
        }
        _ => Err(unknown()),
    }
}

fn c_hex(v: u128) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("0x{v:x}")
    }
}

/// Format a value (and mask, `None` for exact) of `f` as ovs-ofctl does.
pub fn format_value(f: Field, value: u128, mask: Option<u128>) -> String {
    let bits = f.bits();
    match (f.info().format, mask) {
        (ValueFormat::Decimal, None) => value.to_string(),
        (ValueFormat::Decimal, Some(m)) => format!("0x{value:x}/0x{m:x}"),
        // OVS prints hexadecimal fields C-style (`%#x`): zero is a bare `0`.
        (ValueFormat::Hex, Some(m)) => format!("{}/{}", c_hex(value), c_hex(m)),
        (ValueFormat::Hex, None) => {
            if f == Field::EthType {
                format!("0x{value:04x}")
            } else {
                c_hex(value)
            }
        }
        (ValueFormat::Mac, None) => format_mac(value),
        (ValueFormat::Mac, Some(m)) => format!("{}/{}", format_mac(value), format_mac(m)),
        (ValueFormat::Ipv4, m) => {
            let a = crate::oxm::u128_to_ipv4(value);
            match m {
                None => a.to_string(),
                Some(m) => match prefix_len(m, bits) {
                    Some(n) => format!("{a}/{n}"),
                    None => format!("{a}/{}", crate::oxm::u128_to_ipv4(m)),
                },
            }
        }
        (ValueFormat::Ipv6, m) => {
            let a = crate::oxm::u128_to_ipv6(value);
            match m {
                None => a.to_string(),
                Some(m) => match prefix_len(m, bits) {
                    Some(n) => format!("{a}/{n}"),
                    None => format!("{a}/{}", crate::oxm::u128_to_ipv6(m)),
                },
            }
        }
        (ValueFormat::Port, _) => format_port(value as u32),
        (ValueFormat::Frag, m) => {
            let m3 = m.unwrap_or(3);
            match FRAG_NAMES
                .iter()
                .find(|(_, v, mm)| *v == value && *mm == m3)
            {
                Some((n, _, _)) => (*n).to_string(),
                None => match m {
                    None => format!("0x{value:x}"),
                    Some(m) => format!("0x{value:x}/0x{m:x}"),
                },
            }
        }
        (ValueFormat::TcpFlags, m) => format_tcp_flags(value, m),
        (ValueFormat::CtState, m) => format_ct_state(value, m),
        // A set_field's value: the flag's name when set (ovs-ofctl's `set_field:oam->`).
        (ValueFormat::TunFlags, None) => if value & 1 != 0 { "oam" } else { "0" }.into(),
        (ValueFormat::TunFlags, Some(m)) if m & 1 == 0 => "0/0".into(),
        (ValueFormat::TunFlags, Some(_)) => if value & 1 != 0 { "+oam" } else { "-oam" }.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(
            parse_value(Field::Ipv4Src, "10.0.0.0/8"),
            Ok((0x0a00_0000, Some(0xff00_0000)))
        );
        assert_eq!(
            parse_value(Field::Ipv4Src, "10.0.0.0/255.255.0.0"),
            Ok((0x0a00_0000, Some(0xffff_0000)))
        );
        assert_eq!(
            format_value(Field::Ipv4Src, 0x0a00_0000, Some(0xff00_0000)),
            "10.0.0.0/8"
        );
        assert_eq!(
            format_value(Field::Ipv4Src, 0x0a00_0000, Some(0xff00_ff00)),
            "10.0.0.0/255.0.255.0"
        );
        assert_eq!(
            parse_value(Field::EthDst, "01:00:00:00:00:00/01:00:00:00:00:00"),
            Ok((0x0100_0000_0000, Some(0x0100_0000_0000)))
        );
        assert_eq!(parse_value(Field::InPort, "LOCAL"), Ok((0xffff_fffe, None)));
        assert_eq!(parse_value(Field::InPort, "65534"), Ok((0xffff_fffe, None)));
        assert_eq!(format_port(0xffff_fffe), "LOCAL");
        assert_eq!(
            parse_value(Field::TcpFlags, "+syn-ack"),
            Ok((2, Some(0x12)))
        );
        assert_eq!(format_value(Field::TcpFlags, 2, Some(0x12)), "+syn-ack");
        // ct_state, as ovs-ofctl 3.1 parses and prints it.
        assert_eq!(
            parse_value(Field::CtState, "+trk-inv"),
            Ok((0x20, Some(0x30)))
        );
        assert_eq!(format_value(Field::CtState, 0x20, Some(0x30)), "-inv+trk");
        assert_eq!(parse_value(Field::CtState, "0x21/0xff"), Ok((0x21, None)));
        assert_eq!(parse_value(Field::CtState, "new|trk"), Ok((0x21, None)));
        assert_eq!(format_value(Field::CtState, 0x21, None), "new|trk");
        assert_eq!(format_value(Field::CtState, 0, None), "0");
        assert_eq!(format_value(Field::CtState, 1, Some(3)), "+new-est");
        assert!(parse_value(Field::CtState, "0x100").is_err());
        assert!(parse_value(Field::CtState, "+bogus").is_err());
        assert_eq!(format_value(Field::CtMark, 0, Some(1)), "0/0x1");
        // tun_flags, as ovs-ofctl 3.1 parses it: the one public flag, `oam`.
        assert_eq!(parse_value(Field::TunFlags, "+oam"), Ok((1, None)));
        assert_eq!(parse_value(Field::TunFlags, "-oam"), Ok((0, None)));
        assert_eq!(parse_value(Field::TunFlags, "oam"), Ok((1, None)));
        assert_eq!(parse_value(Field::TunFlags, "0x1/0x1"), Ok((1, None)));
        assert_eq!(parse_value(Field::TunFlags, "0"), Ok((0, None)));
        assert_eq!(
            parse_value(Field::TunFlags, "+df"),
            Err(TextError("+df: unknown tunnel flag(s)".into()))
        );
        assert!(parse_value(Field::TunFlags, "0x3").is_err());
        assert_eq!(format_value(Field::TunFlags, 1, None), "oam");
        assert_eq!(format_value(Field::TunFlags, 0, Some(1)), "-oam");
        assert_eq!(format_value(Field::TunGbpId, 291, None), "291");
        assert_eq!(
            format_value(Field::TunGbpId, 0x100, Some(0xff00)),
            "0x100/0xff00"
        );
        assert_eq!(format_value(Field::TunGbpFlags, 0x40, None), "0x40");
        assert_eq!(format_value(Field::CtTpSrc, 5, Some(0xff)), "0x5/0xff");
        assert_eq!(parse_value(Field::IpFrag, "later"), Ok((3, None)));
        assert_eq!(format_value(Field::IpFrag, 0, Some(2)), "not_later");
        assert!(parse_value(Field::TcpDst, "65536").is_err());
        assert!(parse_value(Field::Ipv6Src, "2001:db8::/129").is_err());
        assert_eq!(
            format_value(
                Field::Ipv6Src,
                0x2001_0db8 << 96,
                Some(crate::oxm::ones(128) << 96)
            ),
            "2001:db8::/32"
        );
    }
}
