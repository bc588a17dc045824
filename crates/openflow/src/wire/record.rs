//! Lists of records: how the codec walks an array of variable-length structures.
//!
//! Most OpenFlow bodies are lists: actions, instructions, properties, buckets, meter bands,
//! hello elements, and the records of nearly every multipart reply. Each record carries
//! its own 16-bit length at a fixed offset, and the decoder must check that length before
//! trusting it. A [`Framing`] says, for one kind of list, where the length sits, which
//! lengths are valid (a minimum, a maximum, a multiple of 8), whether zero padding to 8
//! follows each record outside its length (properties, hello elements), and which
//! [`DecodeError`] a bad length yields. [`Framing::take`] cuts one record off the front of
//! a cursor after those checks; every record is a sub-cursor ([`Rd`]) that fails with the
//! framing's error, so a truncated field inside a record reports the error of the list
//! it belongs to.
//!
//! The checks run in a fixed order, which fixes the error a doubly-bad length gives: a
//! length that cannot be read, or is below the minimum, above the maximum or not a
//! multiple of 8, is the framing's `bad` error; a length beyond the bytes present is the
//! framing's `bad` error too for the framings that say so (type-length-value lists),
//! and otherwise the enclosing cursor's own error.
//!
//! Two ways of walking a list differ in which error wins when a message has two
//! defects: [`Framing::each`] cuts and decodes one record at a time (a bad record stops
//! the walk before a later bad length is seen), [`Framing::all`] cuts every record first
//! and decodes them afterwards (any bad length wins over any bad content). Which walk a
//! list uses is part of its decoder's contract: changing it changes the error a peer is
//! sent for a message with two defects. Fixed-size records ([`fixed`]) and self-delimiting structures
//! ([`until_empty`]) complete the set.
//!
//! Nothing here allocates more than one entry per record actually present.

use super::buf::{pad8, Rd};
use super::error::DecodeError;

/// How the records of one kind of list are delimited. See the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct Framing {
    /// Offset of the big-endian u16 length inside each record.
    at: usize,
    /// Smallest valid length.
    min: usize,
    /// Largest valid length.
    max: usize,
    /// Lengths must be multiples of 8.
    align8: bool,
    /// Each record is followed by zero padding to 8 that its length leaves out (the last
    /// record's padding may be cut short by the end of the list).
    padded: bool,
    /// The error for an unreadable, short, long or misaligned length; also the error of
    /// every record's cursor.
    bad: DecodeError,
    /// Whether a length beyond the bytes present is `bad` too (otherwise it is the
    /// enclosing cursor's error).
    overrun_bad: bool,
}

impl Framing {
    /// Records with their length at `at`, at least `min` bytes long, any longer length
    /// accepted, every error `BadLength`: the records of multipart and OpenFlow 1.4+
    /// bodies.
    pub(crate) const fn prefixed(at: usize, min: usize) -> Framing {
        Framing {
            at,
            min,
            max: usize::MAX,
            align8: false,
            padded: false,
            bad: DecodeError::BadLength,
            overrun_bad: false,
        }
    }

    /// Type-length-value records padded to a multiple of 8 inside their length (actions,
    /// instructions): length at 2, at least 8, every error `bad`.
    pub(crate) const fn tlv8(bad: DecodeError) -> Framing {
        Framing {
            at: 2,
            min: 8,
            max: usize::MAX,
            align8: true,
            padded: false,
            bad,
            overrun_bad: true,
        }
    }

    /// Type-length-value records whose padding to 8 follows outside their length
    /// (properties, hello elements): length at 2, at least 4, every error `bad`.
    pub(crate) const fn padded_tlv(bad: DecodeError) -> Framing {
        Framing {
            at: 2,
            min: 4,
            max: usize::MAX,
            align8: false,
            padded: true,
            bad,
            overrun_bad: true,
        }
    }

    /// Records of exactly `len` bytes whose length field at 2 must say so (meter bands):
    /// a wrong length is `bad`, a record cut short by the end of the list the enclosing
    /// cursor's error.
    pub(crate) const fn exact(len: usize, bad: DecodeError) -> Framing {
        Framing {
            at: 2,
            min: len,
            max: len,
            align8: false,
            padded: false,
            bad,
            overrun_bad: false,
        }
    }

    /// Records whose length at 0 is checked only against the bytes present (an overrun
    /// is the enclosing cursor's error); the decoder of each record judges its length
    /// itself (group buckets, whose rules depend on the version). That decoder must
    /// refuse a record too short for its own header: a zero length would never advance
    /// the walk.
    pub(crate) const fn unchecked(bad: DecodeError) -> Framing {
        Framing {
            at: 0,
            min: 0,
            max: usize::MAX,
            align8: false,
            padded: false,
            bad,
            overrun_bad: false,
        }
    }

    /// Cut the next record off `rd` (and its padding, for padded framings).
    pub(crate) fn take<'a>(&self, rd: &mut Rd<'a>) -> Result<Rd<'a>, DecodeError> {
        let len = usize::from(rd.peek_u16(self.at).ok_or_else(|| self.bad.clone())?);
        if len < self.min || len > self.max || (self.align8 && !len.is_multiple_of(8)) {
            return Err(self.bad.clone());
        }
        if len > rd.len() && self.overrun_bad {
            return Err(self.bad.clone());
        }
        let r = rd.sub(len, self.bad.clone())?;
        if self.padded {
            let pad = (pad8(len) - len).min(rd.len());
            rd.skip(pad)?;
        }
        Ok(r)
    }

    /// Decode every record of `rd` with `f`, cutting each just before decoding it.
    pub(crate) fn each<'a, T>(
        &self,
        rd: &mut Rd<'a>,
        mut f: impl FnMut(Rd<'a>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        until_empty(rd, |rd| f(self.take(rd)?))
    }

    /// Cut every record of `rd`, checking all their lengths, then decode them with `f`.
    pub(crate) fn all<'a, T>(
        &self,
        rd: &mut Rd<'a>,
        f: impl FnMut(Rd<'a>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        self.split(rd)?.into_iter().map(f).collect()
    }

    /// Cut every record of `rd`, checking all their lengths.
    pub(crate) fn split<'a>(&self, rd: &mut Rd<'a>) -> Result<Vec<Rd<'a>>, DecodeError> {
        until_empty(rd, |rd| self.take(rd))
    }

    /// The one record `rd` must hold (`BadLength` for none or more than one).
    pub(crate) fn single<'a>(&self, rd: &mut Rd<'a>) -> Result<Rd<'a>, DecodeError> {
        let mut v = self.split(rd)?;
        match (v.pop(), v.is_empty()) {
            (Some(r), true) => Ok(r),
            _ => Err(DecodeError::BadLength),
        }
    }
}

/// Records of `size` bytes each, decoded with `f`; `BadLength` unless they fill `rd`
/// exactly (checked before any is decoded).
pub(crate) fn fixed<'a, T>(
    rd: &mut Rd<'a>,
    size: usize,
    f: impl FnMut(Rd<'a>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    if !rd.len().is_multiple_of(size) {
        return Err(DecodeError::BadLength);
    }
    let mut v = Vec::with_capacity(rd.len() / size);
    while !rd.is_empty() {
        v.push(rd.sub(size, DecodeError::BadLength)?);
    }
    v.into_iter().map(f).collect()
}

/// Decode structures that delimit themselves with `f` until `rd` is used up.
pub(crate) fn until_empty<'a, T>(
    rd: &mut Rd<'a>,
    mut f: impl FnMut(&mut Rd<'a>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut v = Vec::new();
    while !rd.is_empty() {
        v.push(f(rd)?);
    }
    Ok(v)
}
