//! Checked byte cursors for the codec.
//!
//! [`Rd`] is the only way the decoder touches input bytes. Every read is bounds-checked and
//! fails with the [`DecodeError`] the cursor was created with (a cursor over an action
//! fails with `BadActionLen`, one over a match with `BadMatchLen`, and so on), so a
//! truncated structure reports the error its enclosing structure's spec names. Sub-cursors
//! ([`Rd::sub`]) are carved out of a parent after checking that the parent really holds
//! that many bytes, which is how every length field in a message is checked against the
//! bytes actually present before anything is allocated for it.
//!
//! The writer side is a handful of big-endian `put_*` helpers on `Vec<u8>` ([`W`]) plus
//! length back-patching, which cannot fail: encoders build from typed values.

use super::error::DecodeError;

/// A bounds-checked big-endian reader over a byte slice.
#[derive(Clone, Debug)]
pub(crate) struct Rd<'a> {
    b: &'a [u8],
    short: DecodeError,
}

impl<'a> Rd<'a> {
    /// A reader over `b` that fails with `short` when asked for bytes it lacks.
    pub(crate) fn new(b: &'a [u8], short: DecodeError) -> Rd<'a> {
        Rd { b, short }
    }

    /// The same bytes, failing with another error from now on.
    pub(crate) fn with_err(self, short: DecodeError) -> Rd<'a> {
        Rd { b: self.b, short }
    }

    /// The error a short read yields.
    pub(crate) fn short(&self) -> DecodeError {
        self.short.clone()
    }

    /// Bytes left.
    pub(crate) fn len(&self) -> usize {
        self.b.len()
    }

    /// Whether nothing is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.b.is_empty()
    }

    /// The next `n` bytes, consumed.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.b.len() {
            return Err(self.short.clone());
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }

    /// A reader over the next `n` bytes (consumed here), failing with `short`.
    pub(crate) fn sub(&mut self, n: usize, short: DecodeError) -> Result<Rd<'a>, DecodeError> {
        Ok(Rd::new(self.bytes(n)?, short))
    }

    /// Everything left, consumed.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let r = self.b;
        self.b = &[];
        r
    }

    /// The next bytes without consuming them.
    pub(crate) fn peek(&self) -> &'a [u8] {
        self.b
    }

    /// Skip `n` bytes (padding).
    pub(crate) fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        self.bytes(n).map(|_| ())
    }

    /// A fixed-size array.
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// A NUL-padded fixed-width string field: the bytes up to the first NUL (or all
    /// `n`). Invalid UTF-8 is replaced byte for byte by `?` (so the string never grows
    /// past `n` bytes and re-encodes to the same width).
    pub(crate) fn string(&mut self, n: usize) -> Result<String, DecodeError> {
        let s = self.bytes(n)?;
        let end = s.iter().position(|c| *c == 0).unwrap_or(s.len());
        let s = s.get(..end).unwrap_or_default();
        Ok(match core::str::from_utf8(s) {
            Ok(v) => v.to_owned(),
            Err(_) => s
                .iter()
                .map(|c| if c.is_ascii() { char::from(*c) } else { '?' })
                .collect(),
        })
    }

    /// Peek a big-endian u16 at `off` bytes ahead without consuming.
    pub(crate) fn peek_u16(&self, off: usize) -> Option<u16> {
        let s = self.b.get(off..off.checked_add(2)?)?;
        Some(u16::from_be_bytes([s[0], s[1]]))
    }
}

/// Big-endian writers on a byte vector.
pub(crate) trait W {
    fn u8(&mut self, v: u8);
    fn u16(&mut self, v: u16);
    fn u32(&mut self, v: u32);
    fn u64(&mut self, v: u64);
    fn zeros(&mut self, n: usize);
    /// A string in a NUL-padded field of `n` bytes (truncated to `n` bytes at a
    /// character boundary; callers keep names short enough to end in a NUL).
    fn string(&mut self, s: &str, n: usize);
    /// Pad with zeros to a multiple of 8 counted from `start`.
    fn pad8_from(&mut self, start: usize);
    /// Write `len` as a big-endian u16 at `at` (saturating at 65535; the framing layer
    /// rejects oversized messages).
    fn patch_u16(&mut self, at: usize, len: usize);
}

impl W for Vec<u8> {
    fn u8(&mut self, v: u8) {
        self.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn zeros(&mut self, n: usize) {
        self.resize(self.len() + n, 0);
    }
    fn string(&mut self, s: &str, n: usize) {
        let mut k = s.len().min(n);
        while !s.is_char_boundary(k) {
            k -= 1;
        }
        self.extend_from_slice(s.as_bytes().get(..k).unwrap_or_default());
        self.zeros(n - k);
    }
    fn pad8_from(&mut self, start: usize) {
        let used = self.len().saturating_sub(start);
        self.zeros((8 - used % 8) % 8);
    }
    fn patch_u16(&mut self, at: usize, len: usize) {
        let v = u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes();
        if let Some(s) = self.get_mut(at..at + 2) {
            s.copy_from_slice(&v);
        }
    }
}

/// `n` rounded up to a multiple of 8.
pub(crate) fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}
