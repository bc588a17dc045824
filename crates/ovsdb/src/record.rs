//! Record framing of OVSDB's standard database file (ovsdb(5), "standalone" databases).
//!
//! A database file is a series of records, each two lines of text:
//!
//! ```text
//! OVSDB JSON <length> <sha1>\n
//! <JSON object>\n
//! ```
//!
//! `<length>` is the decimal byte count of the second line *including* its final LF, and
//! `<sha1>` is the SHA-1 of those same bytes as 40 hex digits. The header words are separated
//! by exactly one space. We write the JSON without pretty-printing, so the body is one line
//! (serde_json escapes LF inside strings); when reading we trust the length, not the line
//! structure, and accept any JSON whitespace inside the body, as OVS does.
//!
//! This module only frames and unframes: it knows nothing of schemas or transactions
//! ([`crate::storage`] reads and writes files of records, `filetxn` gives them meaning).
//! [`decode`] never panics on any input and says what is wrong with a bad record, which
//! recovery uses to tell a torn last write from corruption.

use serde_json::Value;
use sha1::{Digest, Sha1};
use std::fmt;

/// The magic of a standalone database record header.
pub const MAGIC: &str = "OVSDB JSON ";
/// The magic of a clustered database record header (recognised only to refuse it clearly).
pub const CLUSTER_MAGIC: &str = "OVSDB CLUSTER ";
/// The longest header we accept: magic, 20 length digits, a space, 40 hex digits, LF.
const MAX_HEADER: usize = 11 + 20 + 1 + 40 + 1;

/// Frames a JSON value as one record.
pub fn encode(v: &Value) -> Vec<u8> {
    frame(v.to_string().as_bytes())
}

/// Frames `json` (one line of JSON text, without its final LF) as one record.
pub fn frame(json: &[u8]) -> Vec<u8> {
    let mut hasher = Sha1::new();
    hasher.update(json);
    hasher.update(b"\n");
    let digest = hasher.finalize();
    let mut out = format!("{MAGIC}{} ", json.len() + 1).into_bytes();
    for b in digest.iter() {
        out.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    out.push(b'\n');
    out.reserve(json.len() + 1);
    out.extend_from_slice(json);
    out.push(b'\n');
    out
}

/// Why the bytes at some offset are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bad {
    /// The file ends inside the header or body: what a torn write leaves.
    Truncated,
    /// The header line is malformed (the text says how).
    Header(String),
    /// The body's SHA-1 differs from the header's.
    Checksum,
    /// The body is not a JSON object (the text says why).
    Json(String),
}

impl fmt::Display for Bad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bad::Truncated => write!(f, "the record is cut short by the end of the file"),
            Bad::Header(s) => write!(f, "bad record header: {s}"),
            Bad::Checksum => write!(f, "the record's SHA-1 does not match its header"),
            Bad::Json(s) => write!(f, "the record is not a JSON object: {s}"),
        }
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Parses a header line (without its LF): the body length and digest.
fn parse_header(line: &[u8]) -> Result<(usize, [u8; 20]), Bad> {
    let rest = line.strip_prefix(MAGIC.as_bytes()).ok_or_else(|| {
        let shown = String::from_utf8_lossy(&line[..line.len().min(24)]).into_owned();
        Bad::Header(format!("expected \"{MAGIC}...\", found {shown:?}"))
    })?;
    let sp = rest
        .iter()
        .position(|&b| b == b' ')
        .ok_or_else(|| Bad::Header("no space after the length".into()))?;
    let (digits, hash) = (&rest[..sp], &rest[sp + 1..]);
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Bad::Header("the length is not a decimal number".into()));
    }
    let len: usize = std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Bad::Header("the length is out of range".into()))?;
    if len == 0 {
        return Err(Bad::Header("the length is zero".into()));
    }
    if hash.len() != 40 {
        return Err(Bad::Header("the SHA-1 is not 40 hex digits".into()));
    }
    let mut digest = [0u8; 20];
    for (i, pair) in hash.chunks(2).enumerate() {
        match (hex_digit(pair[0]), pair.get(1).copied().and_then(hex_digit)) {
            (Some(h), Some(l)) => digest[i] = (h << 4) | l,
            _ => return Err(Bad::Header("the SHA-1 is not 40 hex digits".into())),
        }
    }
    Ok((len, digest))
}

/// Decodes the record starting at `buf[0]`: its JSON object and its size in bytes.
pub fn decode(buf: &[u8]) -> Result<(Value, usize), Bad> {
    let window = &buf[..buf.len().min(MAX_HEADER)];
    let Some(nl) = window.iter().position(|&b| b == b'\n') else {
        if buf.len() < MAX_HEADER && MAGIC.as_bytes().starts_with(&buf[..buf.len().min(11)]) {
            return Err(Bad::Truncated);
        }
        return Err(Bad::Header(if buf.len() < MAX_HEADER {
            "the header line has no end".into()
        } else {
            "the header line is too long".into()
        }));
    };
    let (len, digest) = parse_header(&buf[..nl])?;
    let start = nl + 1;
    let body = start
        .checked_add(len)
        .and_then(|end| buf.get(start..end))
        .ok_or(Bad::Truncated)?;
    if Sha1::digest(body).as_slice() != digest {
        return Err(Bad::Checksum);
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| Bad::Json(e.to_string()))?;
    if !v.is_object() {
        return Err(Bad::Json("not an object".into()));
    }
    Ok((v, start + len))
}

/// Offsets after `from` where a record header could start (the start of a line beginning
/// with the magic): where recovery looks for valid records after a bad one.
pub(crate) fn candidates(buf: &[u8], from: usize) -> impl Iterator<Item = usize> + '_ {
    let magic = MAGIC.as_bytes();
    buf.iter()
        .enumerate()
        .skip(from)
        .filter(|&(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
        .filter(move |&i| buf.get(i..).is_some_and(|rest| rest.starts_with(magic)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_as_ovs_does() {
        // Byte-exact: length and digest cover the body's final LF.
        let rec = frame(br#"{"a":1}"#);
        assert_eq!(
            rec,
            b"OVSDB JSON 8 8a3d961f7fe8ef7b41d461059884a9461be85059\n{\"a\":1}\n".to_vec()
        );
    }

    #[test]
    fn round_trip_and_every_damage_is_caught() {
        let rec = encode(&json!({"T": {"a": "b\nc"}}));
        let (v, n) = decode(&rec).unwrap();
        assert_eq!(v, json!({"T": {"a": "b\nc"}}));
        assert_eq!(n, rec.len());
        for cut in 0..rec.len() {
            assert!(decode(&rec[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..rec.len() {
            for bit in 0..8 {
                let mut bad = rec.clone();
                bad[i] ^= 1 << bit;
                if let Ok((v2, n2)) = decode(&bad) {
                    // Only an upper/lower case flip of a hex digit in the digest keeps meaning.
                    assert_eq!((v2, n2), (v.clone(), n), "flip at {i} bit {bit}");
                }
            }
        }
    }

    #[test]
    fn tolerates_whitespace_and_refuses_non_objects() {
        let rec = frame(b"{\"a\":\n1}");
        assert_eq!(decode(&rec).unwrap().0, json!({"a": 1}));
        assert!(matches!(decode(&frame(b"[1]")), Err(Bad::Json(_))));
        assert!(matches!(decode(&frame(b"{")), Err(Bad::Json(_))));
        assert!(matches!(
            decode(b"OVSDB JSON 99999999999999999999999 x\n"),
            Err(Bad::Header(_))
        ));
        assert!(matches!(decode(b"OVSDB JS"), Err(Bad::Truncated)));
        assert!(matches!(decode(b"12 3456 {}\n"), Err(Bad::Header(_))));
    }
}
