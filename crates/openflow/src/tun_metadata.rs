//! `tun_metadata0`..`tun_metadata63`: tunnel options as OpenFlow fields.
//!
//! Each field stands for whatever tunnel option (Geneve class, type and length) a bridge's
//! TLV table maps to its index; the table is the switch's business (`ofproto::tlv`), so in
//! this crate the fields have no fixed width. On the wire they are Nicira class-1 fields
//! 40..103 (`NXM_NX_TUN_METADATA0`..`63`) whose payload may be anything from 0 to 124 bytes
//! (OVS's largest option), value right-aligned.
//!
//! ## Model
//! A value and mask are `u128`s like every other field's ([`crate::oxm`]), so the model
//! holds the low 16 bytes of an option: [`Field::bits`] is 128 for these fields. A wire
//! value whose bytes beyond the last 16 are not zero is refused (`OFPBMC_BAD_VALUE`); a
//! mapping longer than 16 bytes can still be matched and set on its low 16 bytes. An exact
//! match (`mask: None`) therefore means "all the option's bytes", since bytes above the
//! value are zero, which is what OVS does with an unmasked entry.
//!
//! ## Length on the wire
//! A sender that does not know the TLV table (ovs-ofctl, and this codec) writes the shortest
//! payload that holds the value and the mask: `tun_metadata0=0x1/0xff` travels as one byte
//! of value and one of mask, `tun_metadata0=0` as an empty payload, and
//! `tun_metadata0=0x10002/0x7fffffff` as four and four. A bare header (the field of a
//! `move` or register load) carries OVS's full length, 124. [`wire_len`] computes the
//! former, [`BARE_HEADER_LEN`] is the latter.
//!
//! A switch knows better: it sends a matched option at its mapped length, exact when the mask
//! covers all of it (so `tun_metadata0=0x1/0xff` on a 4-byte option goes out as four bytes of
//! value and mask, which ovs-ofctl prints as written). [`with_map_lengths`] puts a bridge's
//! lengths in force for the matches encoded inside it.

use crate::oxm::{ones, Field};
use std::cell::Cell;

thread_local! {
    /// The TLV-table lengths [`with_map_lengths`] put in force (0: unmapped).
    static MAP_LENS: Cell<Option<[u8; N_TUN_METADATA]>> = const { Cell::new(None) };
}

/// Runs `f` with `lens` (a length per `tun_metadata` index, 0 when unmapped) as the lengths
/// matches are encoded with, as a switch encodes its own flows.
pub fn with_map_lengths<R>(lens: [u8; N_TUN_METADATA], f: impl FnOnce() -> R) -> R {
    let old = MAP_LENS.replace(Some(lens));
    let r = f();
    MAP_LENS.set(old);
    r
}

/// The payload length and mask a match entry of `tun_metadata<i>` is sent with under
/// [`with_map_lengths`]: the mapped length, and no mask when it covers the whole option.
/// `None` without lengths in force, for an unmapped index, or a length the model cannot fill.
pub(crate) fn mapped_form(i: usize, mask: Option<u128>) -> Option<(usize, Option<u128>)> {
    let len = usize::from(MAP_LENS.get()?.get(i).copied().filter(|l| *l != 0)?);
    if len > MODEL_BYTES {
        return None;
    }
    let all = ones(8 * len as u32);
    Some((len, mask.filter(|m| m & all != all)))
}

/// How many `tun_metadata` fields there are.
pub const N_TUN_METADATA: usize = 64;
/// The NXM class-1 field number of `tun_metadata0`.
pub const NXM_FIELD_BASE: u8 = 40;
/// The longest option payload, in bytes (OVS's `TLV_MAX_OPT_SIZE`).
pub const MAX_LEN: usize = 124;
/// The length bare headers (`move`, `reg_load`) give these fields.
pub const BARE_HEADER_LEN: usize = MAX_LEN;
/// Bytes of an option the model holds (a `u128`).
pub const MODEL_BYTES: usize = 16;

impl Field {
    /// `tun_metadata<i>`, for `i` < 64.
    pub fn tun_metadata(i: usize) -> Option<Field> {
        Field::ALL
            .get(Field::TunMetadata0 as usize + i)
            .copied()
            .filter(|f| f.is_tun_metadata())
    }

    /// Whether this is one of `tun_metadata0`..`63`.
    pub fn is_tun_metadata(self) -> bool {
        (Field::TunMetadata0..=Field::TunMetadata63).contains(&self)
    }

    /// The index of a `tun_metadata` field (`tun_metadata5` -> 5).
    pub fn tun_metadata_index(self) -> Option<usize> {
        self.is_tun_metadata()
            .then(|| self as usize - Field::TunMetadata0 as usize)
    }
}

/// Bytes needed to hold `v` (0 for 0).
pub fn min_bytes(v: u128) -> usize {
    (128 - v.leading_zeros() as usize).div_ceil(8)
}

/// The payload length a sender without the TLV table writes for a value and mask: the
/// shortest that holds both.
pub fn wire_len(value: u128, mask: Option<u128>) -> usize {
    min_bytes(value).max(mask.map_or(0, min_bytes))
}

/// The value of a right-aligned payload of up to [`MAX_LEN`] bytes, or `None` when it has
/// non-zero bytes beyond the low 16 (which the model cannot hold).
pub fn payload_value(b: &[u8]) -> Option<u128> {
    let cut = b.len().saturating_sub(MODEL_BYTES);
    let (high, low) = b.split_at(cut);
    high.iter()
        .all(|&x| x == 0)
        .then(|| low.iter().fold(0u128, |acc, x| (acc << 8) | u128::from(*x)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_lengths() {
        assert_eq!(Field::tun_metadata(0), Some(Field::TunMetadata0));
        assert_eq!(Field::tun_metadata(63), Some(Field::TunMetadata63));
        assert_eq!(Field::tun_metadata(64), None);
        assert_eq!(Field::TunMetadata7.tun_metadata_index(), Some(7));
        assert_eq!(Field::TunDst.tun_metadata_index(), None);
        assert_eq!(Field::TunMetadata63.oxm(), (1, 103));
        assert_eq!(
            Field::from_name("tun_metadata12"),
            Some(Field::TunMetadata12)
        );
        // As ovs-ofctl sizes them (captured): 0 -> empty, 0x1/0xff -> 1, 0xff/0xffff -> 2.
        assert_eq!(wire_len(0, None), 0);
        assert_eq!(wire_len(1, Some(0xff)), 1);
        assert_eq!(wire_len(0xff, Some(0xffff)), 2);
        assert_eq!(wire_len(0x10002, Some(0x7fff_ffff)), 4);
        assert_eq!(wire_len(0, Some(0xff00)), 2);
        assert_eq!(payload_value(&[0; 20]), Some(0));
        let mut b = [0u8; 17];
        b[16] = 5;
        assert_eq!(payload_value(&b), Some(5));
        b[0] = 1;
        assert_eq!(payload_value(&b), None);
    }
}
