//! The FTP control messages the FTP helper reads: `PORT` and the `227` reply over IPv4,
//! `EPRT` and the `229` ("Extended Passive") reply over IPv6, as OVS's userspace helper
//! reads them.
//!
//! Bounded and allocation-free: only the first [`MSG_MAX`] bytes of a segment's payload are
//! looked at, as one message (a command split over two segments is not reassembled: its
//! first part is what is read, like OVS). A message that starts like one of interest but
//! does not parse is [`FtpCtl::Invalid`] (the packet is then `+inv`); anything else is
//! [`FtpCtl::Other`].

/// The bytes of a segment's payload that are read (OVS reads 127: a 128-byte buffer and
/// its terminating NUL).
pub const MSG_MAX: usize = 128;

/// Which side opens the data connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `PORT` / `EPRT`: the server connects to the address the client gave.
    Active,
    /// `227` / `229`: the client connects to the address the server gave.
    Passive,
}

/// What one control segment says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtpCtl {
    /// Nothing the helper acts on.
    Other,
    /// A message of interest that does not parse.
    Invalid,
    /// A data connection announced: the mode, the address in the message (IPv4 in the
    /// first four bytes; `None` for the `229` reply, which has none) and the port.
    Data {
        /// Active or passive.
        mode: Mode,
        /// The address the message gives.
        addr: Option<[u8; 16]>,
        /// The data connection's destination port.
        port: u16,
    },
}

/// The message as OVS's helper sees it: at most `MSG_MAX - 1` bytes, the last byte of a
/// shorter payload dropped (a copy bounded by the payload's length, terminator included),
/// and cut at the first NUL.
fn message(payload: &[u8]) -> &[u8] {
    let n = payload.len().min(MSG_MAX).saturating_sub(1);
    let m = &payload[..n];
    match m.iter().position(|&b| b == 0) {
        Some(i) => &m[..i],
        None => m,
    }
}

fn starts_with_ci(s: &[u8], p: &[u8]) -> bool {
    s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p)
}

fn contains_ci(s: &[u8], p: &[u8]) -> bool {
    s.windows(p.len()).any(|w| w.eq_ignore_ascii_case(p))
}

/// Parses one control segment's TCP payload; `v6`: the connection is IPv6.
pub fn parse(payload: &[u8], v6: bool) -> FtpCtl {
    parse_span(payload, v6).0
}

/// [`parse`], and where the address text of a `PORT`, `227` or `EPRT` message lies in the
/// payload (start and length; `None` for anything else, and for `229`, which has none).
pub fn parse_span(payload: &[u8], v6: bool) -> (FtpCtl, Option<(usize, usize)>) {
    let m = message(payload);
    let (skip, r) = if v6 {
        if starts_with_ci(m, b"EPRT") {
            (4, parse_eprt(&m[4..]))
        } else if contains_ci(m, b"EXTENDED PASSIVE") {
            (0, parse_epsv(m).map(|c| (c, None)))
        } else {
            return (FtpCtl::Other, None);
        }
    } else if starts_with_ci(m, b"PORT") {
        (4, parse_v4(&m[4..], Mode::Active))
    } else if m.starts_with(b"227") {
        (3, parse_v4(&m[3..], Mode::Passive))
    } else {
        return (FtpCtl::Other, None);
    };
    match r {
        Some((c, span)) => (c, span.map(|(at, len)| (at + skip, len))),
        None => (FtpCtl::Invalid, None),
    }
}

/// Index of the first ASCII digit at or after `i` (`s.len()` if none).
fn skip_non_digits(s: &[u8], i: usize) -> usize {
    s[i.min(s.len())..]
        .iter()
        .position(u8::is_ascii_digit)
        .map_or(s.len(), |p| i + p)
}

/// The run of digits at `i`, at most `max` of them: its value (`None` if empty or past
/// `u32`) and the index after it.
fn number(s: &[u8], i: usize, max: usize) -> (Option<u32>, usize) {
    let mut v: u32 = 0;
    let mut j = i;
    while j < s.len() && j - i < max && s[j].is_ascii_digit() {
        v = match v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u32::from(s[j] - b'0')))
        {
            Some(v) => v,
            None => return (None, j),
        };
        j += 1;
    }
    ((j > i).then_some(v), j)
}

/// A strict dotted quad with commas (`h1,h2,h3,h4`): octets of one to three digits, no
/// leading zero, at most 255.
fn quad(s: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split(|&b| b == b',');
    for o in out.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.iter().all(u8::is_ascii_digit) {
            return None;
        }
        if p.len() > 1 && p[0] == b'0' {
            return None;
        }
        let (v, _) = number(p, 0, 3);
        *o = u8::try_from(v?).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// The address text's start and length in the slice parsed.
type Span = Option<(usize, usize)>;

/// `PORT h1,h2,h3,h4,p1,p2` / `227 text (h1,h2,h3,h4,p1,p2)`; `s` follows the verb or code.
fn parse_v4(s: &[u8], mode: Mode) -> Option<(FtpCtl, Span)> {
    let space = s.iter().position(|&b| b == b' ')?;
    let start = skip_non_digits(s, space);
    if start >= s.len() {
        return None;
    }
    // The address ends at the fourth comma.
    let mut commas = 0;
    let mut end = start;
    while end < s.len() {
        if s[end] == b',' {
            commas += 1;
            if commas == 4 {
                break;
            }
        }
        end += 1;
    }
    if commas != 4 {
        return None;
    }
    let a = quad(&s[start..end])?;
    let (hi, after) = number(s, end + 1, 4);
    let hi = hi.filter(|&v| v <= 255)?;
    // One separator (normally a comma), then the low byte.
    let (lo, _) = number(s, after + 1, usize::MAX);
    let lo = lo.filter(|&v| v <= 255)?;
    let mut addr = [0u8; 16];
    addr[..4].copy_from_slice(&a);
    let c = FtpCtl::Data {
        mode,
        addr: Some(addr),
        port: ((hi << 8) | lo) as u16,
    };
    Some((c, Some((start, end - start))))
}

/// `EPRT |2|addr|port|`; `s` follows the verb. Only the IPv6 family (2) is accepted.
fn parse_eprt(s: &[u8]) -> Option<(FtpCtl, Span)> {
    let i = skip_non_digits(s, 0);
    if s.get(i) != Some(&b'2') || s.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let start = i + 2;
    if start > s.len() {
        return None;
    }
    let len = s[start..]
        .iter()
        .position(|b| !(b.is_ascii_hexdigit() || *b == b':' || *b == b'.'))
        .unwrap_or(s.len() - start);
    let text = std::str::from_utf8(&s[start..start + len]).ok()?;
    let ip: std::net::Ipv6Addr = text.parse().ok()?;
    let (port, _) = number(s, start + len + 1, 6);
    let port = u16::try_from(port?).ok()?;
    let c = FtpCtl::Data {
        mode: Mode::Active,
        addr: Some(ip.octets()),
        port,
    };
    Some((c, Some((start, len))))
}

/// `229 Entering Extended Passive Mode (|||port|)`: the first number after the first `(`.
fn parse_epsv(m: &[u8]) -> Option<FtpCtl> {
    let open = m.iter().position(|&b| b == b'(').unwrap_or(m.len());
    let i = skip_non_digits(m, open);
    let (port, _) = number(m, i, 6);
    let port = u16::try_from(port?).ok()?;
    Some(FtpCtl::Data {
        mode: Mode::Passive,
        addr: None,
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> Option<[u8; 16]> {
        let mut x = [0u8; 16];
        x[..4].copy_from_slice(&a);
        Some(x)
    }

    #[test]
    fn port_and_227() {
        assert_eq!(
            parse(b"PORT 10,0,0,1,195,80\r\n", false),
            FtpCtl::Data {
                mode: Mode::Active,
                addr: v4([10, 0, 0, 1]),
                port: 195 * 256 + 80
            }
        );
        assert_eq!(
            parse(b"port 192,168,1,20,0,21\r\n", false),
            FtpCtl::Data {
                mode: Mode::Active,
                addr: v4([192, 168, 1, 20]),
                port: 21
            }
        );
        assert_eq!(
            parse(b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n", false),
            FtpCtl::Data {
                mode: Mode::Passive,
                addr: v4([10, 0, 0, 2]),
                port: 1025
            }
        );
    }

    #[test]
    fn other_messages() {
        for m in [
            &b"USER anonymous\r\n"[..],
            b"226 Transfer complete.\r\n",
            b"EPRT |1|10.0.0.1|6000|\r\n",
            b"229 Entering Extended Passive Mode (|||6446|)\r\n",
            b"",
            b"P",
            b" PORT 10,0,0,1,1,1\r\n",
        ] {
            assert_eq!(parse(m, false), FtpCtl::Other, "{:?}", m);
        }
        assert_eq!(parse(b"PORT 10,0,0,1,1,1\r\n", true), FtpCtl::Other);
        assert_eq!(parse(b"USER x\r\n", true), FtpCtl::Other);
    }

    #[test]
    fn malformed_v4_is_invalid() {
        for m in [
            &b"PORT\r\n"[..],
            b"PORT x\r\n",
            b"PORT 10,0,0,1\r\n",
            b"PORT 10,0,0,1,\r\n",
            b"PORT 10,0,0,1,4\r\n",
            b"PORT 10,0,0,256,4,1\r\n",
            b"PORT 10,0,0,01,4,1\r\n",
            b"PORT 10,0,0,1,256,1\r\n",
            b"PORT 10,0,0,1,4,256\r\n",
            b"PORT 10,0,0,1,4,99999999999\r\n",
            b"PORT 10,0,,1,4,1\r\n",
            b"PORT 10,0,0,1,4,\r\n",
            b"PORT10,0,0,1,4,1\r\n",
            b"227 Entering Passive Mode\r\n",
            b"227 Entering Passive Mode (1.2.3.4)\r\n",
        ] {
            assert_eq!(
                parse(m, false),
                FtpCtl::Invalid,
                "{}",
                String::from_utf8_lossy(m)
            );
        }
    }

    #[test]
    fn truncation_and_nul() {
        // The last byte of a short payload is not read: without its line end, the port's
        // last digit is lost.
        assert_eq!(
            parse(b"PORT 10,0,0,1,4,12", false),
            FtpCtl::Data {
                mode: Mode::Active,
                addr: v4([10, 0, 0, 1]),
                port: 4 * 256 + 1
            }
        );
        // A message cut before its port (the rest in the next segment) is invalid.
        assert_eq!(parse(b"PORT 10,0,0,1,4", false), FtpCtl::Invalid);
        // Only the first 127 bytes count.
        let mut long = b"227 ".to_vec();
        long.resize(124, b'x');
        long.extend_from_slice(b"(10,0,0,2,4,1)\r\n");
        assert_eq!(parse(&long, false), FtpCtl::Invalid);
        // A NUL ends the message.
        assert_eq!(parse(b"PORT \0 10,0,0,1,4,1\r\n", false), FtpCtl::Invalid);
    }

    #[test]
    fn eprt_and_229() {
        let a: std::net::Ipv6Addr = "fd00::1".parse().unwrap();
        assert_eq!(
            parse(b"EPRT |2|fd00::1|6000|\r\n", true),
            FtpCtl::Data {
                mode: Mode::Active,
                addr: Some(a.octets()),
                port: 6000
            }
        );
        assert_eq!(
            parse(b"229 Entering Extended Passive Mode (|||6446|)\r\n", true),
            FtpCtl::Data {
                mode: Mode::Passive,
                addr: None,
                port: 6446
            }
        );
        for m in [
            &b"EPRT |1|10.0.0.1|6000|\r\n"[..],
            b"EPRT |2|zz::1|6000|\r\n",
            b"EPRT |2|fd00::1|70000|\r\n",
            b"EPRT |2|fd00::1||\r\n",
            b"EPRT |22|fd00::1|1|\r\n",
            b"EPRT\r\n",
            b"EPRT 2",
            b"229 Extended Passive Mode ()\r\n",
            b"229 Extended Passive Mode (|||99999|)\r\n",
        ] {
            assert_eq!(
                parse(m, true),
                FtpCtl::Invalid,
                "{}",
                String::from_utf8_lossy(m)
            );
        }
    }

    #[test]
    fn any_bytes_no_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for n in 0..2000usize {
            let mut buf = match n % 4 {
                0 => b"PORT ".to_vec(),
                1 => b"227 ".to_vec(),
                2 => b"EPRT ".to_vec(),
                _ => b"229 Extended Passive (".to_vec(),
            };
            for _ in 0..(n % 150) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let alphabet = b"0123456789,|:.( af\r\n\0";
                buf.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let _ = parse(&buf, false);
            let _ = parse(&buf, true);
        }
    }
}
