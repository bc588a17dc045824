//! Guest memory of one vhost-user connection: the regions the frontend sends with
//! `SET_MEM_TABLE`, mapped from its file descriptors, and the translation from the frontend's
//! own virtual addresses (in which it gives the ring addresses) to guest physical addresses
//! (in which descriptors point at buffers).
//!
//! ## How
//! Each region is a `(guest physical address, size, frontend virtual address, offset in the
//! file)` plus a file descriptor (a memfd or a hugetlbfs file). We map it shared and
//! read-write with `vm-memory`'s `GuestRegionMmap` and collect the regions in a
//! `GuestMemoryMmap`, whose every access is bounds-checked: a descriptor that points outside
//! the regions fails the access, it never reads or writes anything else.
//!
//! ## Invariants
//! * Before mapping, each file is checked to be at least `offset + size` long (`fstat`), so
//!   the mapping starts with no page past the end of the file. A frontend that *shrinks* its
//!   file afterwards could still make an access fault; the frontend (QEMU, DPDK) is the
//!   hypervisor side and trusted as such — the guest, which writes the rings and descriptors,
//!   is not, and cannot resize anything.
//! * At most [`MAX_REGIONS`] regions, each at most [`MAX_REGION`] bytes, none overlapping in
//!   guest physical space (`vm-memory` refuses overlaps).
//!
//! ## Fast path
//! `vm-memory`'s accessors go through a generic slice iterator on every access; measured in
//! W6 they took more than half of the switch's cycles (ring metadata is a dozen small
//! accesses per packet). [`Guest`] therefore also keeps each region's host address, and
//! [`Guest::host`] translates a guest range that lies inside one region into a host pointer
//! (a scan of at most [`MAX_REGIONS`] entries, checked arithmetic): the ring code reads and
//! writes through it. A range that straddles two regions goes through `vm-memory` instead.
//!
//! ## Threading
//! Built on the control thread; shared read-only (`Arc`) with the poll threads, which only
//! copy bytes in and out through it. The mappings live as long as the `Arc`, so a pointer
//! from [`Guest::host`] stays valid while the caller holds the `Guest`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use vm_memory::{
    FileOffset, GuestAddress, GuestMemoryBackend, GuestMemoryMmap, GuestMemoryRegion,
    GuestRegionMmap,
};

/// Regions a frontend may announce (QEMU's limit for `SET_MEM_TABLE` is 8).
pub const MAX_REGIONS: usize = 8;
/// Largest region accepted (1 TiB).
pub const MAX_REGION: u64 = 1 << 40;

/// One region as announced: where it is in guest physical space and in the frontend's
/// virtual address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    pub gpa: u64,
    pub size: u64,
    pub uva: u64,
    pub offset: u64,
}

/// The mapped guest memory and its address translation.
pub struct GuestMem {
    pub mem: Arc<Guest>,
    pub regions: Vec<RegionInfo>,
}

/// Guest memory as the poll threads use it: the `vm-memory` mapping and, for the fast path,
/// each region's guest address, length and host address.
pub struct Guest {
    pub mem: GuestMemoryMmap,
    /// (guest physical start, length, host address) per region.
    map: Vec<(u64, u64, usize)>,
}

impl Guest {
    /// Wraps a mapping, recording where each region is in our address space.
    pub fn new(mem: GuestMemoryMmap) -> Guest {
        let map = mem
            .iter()
            .map(|r| (r.start_addr().0, r.len(), r.as_ptr() as usize))
            .collect();
        Guest { mem, map }
    }

    /// The host address of guest range `[gpa, gpa + len)` if one region holds all of it.
    /// The pointer is valid while `self` is alive; the guest may write the bytes at any time.
    #[inline]
    pub fn host(&self, gpa: u64, len: u64) -> Option<*mut u8> {
        for &(start, size, host) in &self.map {
            if let Some(off) = gpa.checked_sub(start) {
                if off.checked_add(len)? <= size {
                    return Some((host + off as usize) as *mut u8);
                }
            }
        }
        None
    }
}

impl GuestMem {
    /// Maps `regions` from `files` (one per region, in order). Errors name the region.
    pub fn map(regions: &[RegionInfo], files: Vec<File>) -> Result<GuestMem, String> {
        if regions.is_empty() || regions.len() > MAX_REGIONS {
            return Err(format!(
                "{} memory regions (1..={MAX_REGIONS} accepted)",
                regions.len()
            ));
        }
        if files.len() != regions.len() {
            return Err(format!(
                "{} memory regions but {} file descriptors",
                regions.len(),
                files.len()
            ));
        }
        let mut mapped = Vec::with_capacity(regions.len());
        for (i, (r, f)) in regions.iter().zip(files).enumerate() {
            if r.size == 0 || r.size > MAX_REGION {
                return Err(format!("region {i}: size {:#x} refused", r.size));
            }
            let end = r
                .offset
                .checked_add(r.size)
                .ok_or_else(|| format!("region {i}: offset + size overflows"))?;
            if r.gpa.checked_add(r.size).is_none() || r.uva.checked_add(r.size).is_none() {
                return Err(format!("region {i}: address + size overflows"));
            }
            let len = file_len(&f).map_err(|e| format!("region {i}: fstat: {e}"))?;
            if len < end {
                return Err(format!(
                    "region {i}: file is {len} bytes, region needs {end} (offset {:#x} + size {:#x})",
                    r.offset, r.size
                ));
            }
            let size = usize::try_from(r.size).map_err(|_| format!("region {i}: too large"))?;
            let region = GuestRegionMmap::from_range(
                GuestAddress(r.gpa),
                size,
                Some(FileOffset::new(f, r.offset)),
            )
            .map_err(|e| format!("region {i}: mmap: {e}"))?;
            mapped.push(region);
        }
        let mut order: Vec<usize> = (0..regions.len()).collect();
        order.sort_by_key(|&i| regions[i].gpa);
        let mut slots: Vec<Option<GuestRegionMmap>> = mapped.into_iter().map(Some).collect();
        let sorted: Vec<GuestRegionMmap> = order.iter().filter_map(|&i| slots[i].take()).collect();
        let mem = GuestMemoryMmap::from_regions(sorted)
            .map_err(|e| format!("memory regions refused: {e}"))?;
        Ok(GuestMem {
            mem: Arc::new(Guest::new(mem)),
            regions: regions.to_vec(),
        })
    }

    /// Translates a frontend virtual address into a guest physical address, if some region
    /// holds `len` bytes from it.
    pub fn uva_to_gpa(&self, uva: u64, len: u64) -> Option<u64> {
        self.regions.iter().find_map(|r| {
            let off = uva.checked_sub(r.uva)?;
            (off.checked_add(len)? <= r.size).then(|| r.gpa + off)
        })
    }
}

fn file_len(f: &File) -> std::io::Result<u64> {
    // SAFETY: `st` is a plain C struct that fstat fills; the descriptor is owned by `f`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a live descriptor with a pointer to a live stat struct.
    if unsafe { libc::fstat(f.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.st_size as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_memory::{Bytes, GuestMemoryBackend};

    fn memfd(len: u64) -> File {
        // SAFETY: memfd_create with a NUL-terminated name; the result is checked.
        let fd = unsafe { libc::memfd_create(c"vhost-test".as_ptr(), 0) };
        assert!(fd >= 0);
        // SAFETY: `fd` was just created and is owned by nothing else.
        let f = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        f.set_len(len).expect("truncate");
        f
    }

    #[test]
    fn maps_translates_and_bounds() {
        let r = [
            RegionInfo {
                gpa: 0x10_0000,
                size: 0x10000,
                uva: 0x7000_0000,
                offset: 0,
            },
            RegionInfo {
                gpa: 0,
                size: 0x1000,
                uva: 0x9000_0000,
                offset: 0x1000,
            },
        ];
        let m = GuestMem::map(&r, vec![memfd(0x10000), memfd(0x2000)]).expect("map");
        assert_eq!(m.uva_to_gpa(0x7000_0010, 16), Some(0x10_0010));
        assert_eq!(m.uva_to_gpa(0x7000_fff8, 16), None);
        assert_eq!(m.uva_to_gpa(0x9000_0000, 0x1000), Some(0));
        assert!(m
            .mem
            .mem
            .write_slice(&[1, 2, 3], GuestAddress(0x10_0000))
            .is_ok());
        assert!(m
            .mem
            .mem
            .write_slice(&[1], GuestAddress(0x20_0000))
            .is_err());
        assert!(m.mem.mem.address_in_range(GuestAddress(0xfff)));
        assert!(!m.mem.mem.address_in_range(GuestAddress(0x1000)));
        // The fast path sees the same bytes, and refuses what vm-memory refuses.
        let p = m.mem.host(0x10_0000, 3).expect("in region");
        // SAFETY: 3 bytes inside a live mapping of `m`.
        assert_eq!(unsafe { std::slice::from_raw_parts(p, 3) }, &[1, 2, 3]);
        assert!(m.mem.host(0x10_fffe, 3).is_none());
        assert!(m.mem.host(0x1000, 1).is_none());
        assert!(m.mem.host(u64::MAX, 2).is_none());
    }

    #[test]
    fn refuses_short_files_and_bad_counts() {
        let r = RegionInfo {
            gpa: 0,
            size: 0x2000,
            uva: 0,
            offset: 0x1000,
        };
        let e = GuestMem::map(&[r], vec![memfd(0x2000)])
            .err()
            .expect("short file");
        assert!(e.contains("file is 8192 bytes"), "{e}");
        assert!(GuestMem::map(&[r], vec![]).is_err());
        assert!(GuestMem::map(&[], vec![]).is_err());
    }
}
