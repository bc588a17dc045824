//! Loads and stores in guest memory for both ring layouts' burst loops: descriptors, frames
//! and the virtio-net header.
//!
//! Two of them are written for the processor rather than for brevity (W6 in
//! docs/benchmarks.md has the measurements):
//! * a descriptor is copied out with two 8-byte volatile loads ([`load_desc`]): a volatile
//!   read of a 16-byte array compiles to sixteen byte loads and the shifts that join them,
//!   and every descriptor is read twice per packet (the prefetch, then the walk);
//! * the header towards the guest is stored from registers ([`put_header`]): built in a
//!   small array on the stack and copied with `memcpy`, its 12 bytes were loaded back
//!   across three smaller stores, a load the store buffer cannot forward, so it waited
//!   until every older store had reached the cache, the frame's stores into guest lines not
//!   yet owned among them: a third of the switch core in a W6 profile.

use super::{DescError, Guest, HDR_LEGACY, HDR_MRG};
use crate::offload::VNET_HDR_LEN;
use vm_memory::{Bytes, GuestAddress};

/// The two little-endian words of the 16-byte descriptor at `p` (split and packed rings
/// alike: the address, then the length and two 16-bit fields), copied out once, volatile:
/// the guest may write them concurrently. Two 8-byte loads when `p` is 8-aligned (ring
/// tables always are; an indirect table's address is the guest's choice), else byte by
/// byte.
///
/// # Safety
/// `p` must point at 16 readable bytes.
#[inline(always)]
pub(super) unsafe fn load_desc(p: *const u8) -> (u64, u64) {
    if (p as usize).is_multiple_of(8) {
        // SAFETY: 16 readable bytes (the caller), 8-aligned (checked above).
        unsafe {
            (
                u64::from_le(std::ptr::read_volatile(p as *const u64)),
                u64::from_le(std::ptr::read_volatile(p.add(8) as *const u64)),
            )
        }
    } else {
        // SAFETY: 16 readable bytes (the caller), read with alignment 1.
        let b: [u8; 16] = unsafe { std::ptr::read_volatile(p as *const [u8; 16]) };
        let (mut lo, mut hi) = ([0u8; 8], [0u8; 8]);
        lo.copy_from_slice(&b[..8]);
        hi.copy_from_slice(&b[8..]);
        (u64::from_le_bytes(lo), u64::from_le_bytes(hi))
    }
}

/// Copies `dst.len()` guest bytes at `gpa` into `dst` (fast path, else vm-memory across
/// regions).
pub(super) fn copy_in(g: &Guest, gpa: u64, dst: &mut [u8]) -> Result<(), DescError> {
    match g.host(gpa, dst.len() as u64) {
        // SAFETY: `p` points at `dst.len()` bytes inside a live mapping of `g`; `dst` is ours.
        // The guest may write the source concurrently: we copy bytes, never interpret them.
        Some(p) => unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) },
        None => g
            .mem
            .read_slice(dst, GuestAddress(gpa))
            .map_err(|_| DescError::Memory)?,
    }
    Ok(())
}

/// Copies `src` into guest memory at `gpa`.
pub(super) fn copy_out(g: &Guest, gpa: u64, src: &[u8]) -> Result<(), DescError> {
    match g.host(gpa, src.len() as u64) {
        // SAFETY: `p` points at `src.len()` bytes inside a live, writable mapping of `g`.
        Some(p) => unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) },
        None => g
            .mem
            .write_slice(src, GuestAddress(gpa))
            .map_err(|_| DescError::Memory)?,
    }
    Ok(())
}

/// Writes the virtio-net header (`vh`, then `num_buffers` = `chains` when `hdr` has room
/// for it) where `fill` left room for it (`hdr_at`; `None`: nothing to write). False if
/// that place is not in guest memory.
#[inline]
pub(super) fn put_header(
    g: &Guest,
    hdr_at: Option<u64>,
    hdr: usize,
    vh: &[u8; VNET_HDR_LEN],
    chains: usize,
) -> bool {
    let Some(at) = hdr_at else { return true };
    let lo = u64::from_le_bytes([vh[0], vh[1], vh[2], vh[3], vh[4], vh[5], vh[6], vh[7]]);
    let csum_offset = u16::from_le_bytes([vh[8], vh[9]]);
    let fast = match (hdr, g.host(at, hdr as u64)) {
        (HDR_MRG, Some(p)) => {
            let hi = u32::from(csum_offset) | u32::from(chains as u16) << 16;
            // SAFETY: `p` points at `hdr` (12) bytes inside a live, writable mapping of `g`;
            // unaligned stores (the guest chose the address).
            unsafe {
                std::ptr::write_unaligned(p as *mut u64, lo.to_le());
                std::ptr::write_unaligned(p.add(8) as *mut u32, hi.to_le());
            }
            true
        }
        (HDR_LEGACY, Some(p)) => {
            // SAFETY: as above, `hdr` (10) bytes.
            unsafe {
                std::ptr::write_unaligned(p as *mut u64, lo.to_le());
                std::ptr::write_unaligned(p.add(8) as *mut u16, csum_offset.to_le());
            }
            true
        }
        _ => false,
    };
    if fast {
        return true;
    }
    // Across regions (or a header length of another size): through a buffer.
    let mut h = [0u8; HDR_MRG];
    h[..VNET_HDR_LEN].copy_from_slice(vh);
    h[10..12].copy_from_slice(&(chains as u16).to_le_bytes());
    h.get(..hdr).is_some_and(|h| copy_out(g, at, h).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_memory::GuestMemoryMmap;

    /// The header lands byte for byte as the specification lays it out, whichever path
    /// stores it: from registers at any alignment, or through a buffer across two regions.
    #[test]
    fn header_is_stored_as_laid_out_at_any_place() {
        let mem = GuestMemoryMmap::from_ranges(&[
            (GuestAddress(0x1000), 0x1000),
            (GuestAddress(0x2000), 0x1000),
        ])
        .expect("anon memory");
        let g = Guest::new(mem);
        let vh: [u8; VNET_HDR_LEN] = [1, 4, 0x36, 0x12, 0xb4, 0x05, 0x22, 0, 0x10, 0];
        for at in [0x1000u64, 0x1003, 0x1ff9, 0x1ffc, 0x2005] {
            for (hdr, chains) in [(HDR_MRG, 3usize), (HDR_LEGACY, 1)] {
                g.mem
                    .write_slice(&[0xee; 16], GuestAddress(at))
                    .expect("inside");
                assert!(put_header(&g, Some(at), hdr, &vh, chains), "at {at:#x}");
                let mut got = [0u8; 16];
                g.mem
                    .read_slice(&mut got, GuestAddress(at))
                    .expect("inside");
                let mut want = [0xeeu8; 16];
                want[..VNET_HDR_LEN].copy_from_slice(&vh);
                if hdr == HDR_MRG {
                    want[10..12].copy_from_slice(&(chains as u16).to_le_bytes());
                }
                assert_eq!(got, want, "at {at:#x}, header of {hdr}");
            }
        }
        // Nothing to write; a place outside guest memory.
        assert!(put_header(&g, None, HDR_MRG, &vh, 1));
        assert!(!put_header(&g, Some(0x2ffa), HDR_MRG, &vh, 1));
        assert!(!put_header(&g, Some(0x8000), HDR_MRG, &vh, 1));
    }
}
