//! The `system` port: any Linux network interface (veth, NIC, ...) through an `AF_PACKET`
//! socket with TPACKET_V3 memory-mapped rings.
//!
//! ## What
//! One packet socket bound to one interface, with a receive ring and a transmit ring mapped
//! into our address space. Receiving and transmitting touch only shared memory; the only system
//! call on the data path is one `send(fd, NULL, 0, MSG_DONTWAIT)` per transmitted batch, which
//! tells the kernel to walk the transmit ring. The interface is brought administratively up and
//! put into promiscuous mode (a packet-socket membership, dropped by the kernel when the socket
//! closes, so a crashed switch leaves no promiscuous interface behind).
//!
//! ## Receive ring (TPACKET_V3)
//! The ring is [`RX_BLOCK_SIZE`]-byte blocks (`rx_ring_blocks`, default [`RX_BLOCKS`]). The
//! kernel fills one block at a time with variable-sized frames and hands it over by setting the
//! block's `block_status` to `TP_STATUS_USER`, either when the block is full or when the retire
//! timer ([`RX_RETIRE_MS`] ms) fires — so under light load a frame waits at most that long. The
//! blocks are large enough for a 64 KiB GSO super-packet plus its headers.
//!
//! We walk blocks in ring order. Ownership is per block and is the whole synchronisation
//! protocol:
//! * `block_status` is read with an **acquire** load; once it shows `TP_STATUS_USER` the kernel
//!   will not touch the block again, and the acquire makes every byte it wrote visible.
//! * We read its frames (each one a `tpacket3_hdr`, a `sockaddr_ll`, the 10-byte
//!   `virtio_net_hdr` right before the MAC header, and the frame), copying each into a pool
//!   buffer. Frame headers and offsets come from the kernel but are still bounds-checked
//!   against the block: bad ones cost the rest of the block (`rx_errors`), never a panic.
//! * When every frame has been consumed the block goes back with a **release** store of
//!   `TP_STATUS_KERNEL`, so all our reads happen before the kernel may overwrite it.
//! * A batch may end in the middle of a block, or even in the middle of a super-packet's
//!   segments: [`RxRing`] remembers the block, the frame offset, the frames left and the next
//!   segment, and the next call resumes there. The same happens when the pool runs dry: the
//!   frame stays in the ring (the kernel drops and counts once the ring is full).
//!
//! Each frame goes through [`crate::offload::Plan`]: checksums left to offload
//! (`CHECKSUM_PARTIAL`) are completed, GSO super-packets are cut into MSS-sized frames, and a
//! VLAN tag that the kernel moved out of band (`TP_STATUS_VLAN_VALID`) is put back into the
//! frame. Frames the socket sees going out (`PACKET_OUTGOING`) are skipped, in case
//! `PACKET_IGNORE_OUTGOING` is not available.
//!
//! ## Transmit ring
//! TPACKET_V3 transmit rings are fixed-size frame slots ([`TX_FRAME_SIZE`] bytes, or 4 KiB for
//! large MTUs). Each slot starts with a `tpacket3_hdr`; the data (a zeroed `virtio_net_hdr`,
//! then the frame) starts at `TPACKET3_HDRLEN - sizeof(sockaddr_ll)` = 48. A slot is ours when
//! its `tp_status` reads `TP_STATUS_AVAILABLE` (acquire); we fill it, set `tp_len`, and give it
//! to the kernel with a release store of `TP_STATUS_SEND_REQUEST`. After the batch, one
//! non-blocking `send` makes the kernel transmit every requested slot (`PACKET_QDISC_BYPASS`
//! skips the qdisc layer, except on TAP devices, where packet capture must see what is sent)
//! and mark each available again when the buffer is freed. If the next
//! slot is still the kernel's, the ring is full: the rest of the batch is dropped and counted in
//! `tx_dropped` — transmit never blocks. `PACKET_LOSS` makes the kernel skip a slot it cannot
//! parse instead of stopping the ring. Frames longer than MTU + 14 (+4 if VLAN-tagged) are
//! counted in `tx_errors`. `tx_packets` counts frames queued to the ring.
//!
//! ## Link state, MTU, statistics
//! Carrier state (`IFF_UP` and `IFF_RUNNING`) and the MTU are cached and re-read with an
//! `ioctl` at most every 100 ms when [`Port::link_state`] is called, so the fabric may ask on
//! every poll. `rx_dropped` includes the ring's `tp_drops` (read with `PACKET_STATISTICS`, which
//! resets the kernel's counter, so we accumulate it).
//!
//! ## Invariants
//! * The mapping lives exactly as long as [`Rings`]; raw pointers into it never escape.
//! * A block or slot is only read or written while its status word says it is ours.
//! * Every kernel-provided offset is checked before use.
//!
//! ## Files
//! This file holds the ring layout and the port's state; `socket` opens the socket and maps the
//! rings, `port` implements the port over them.

use crate::offload::{Plan, VnetHdr, VNET_HDR_LEN};
use crate::sys::{self, LinkCache};
use crate::{check_options, LinkState, NetdevError, Options, Port, PortStats, RxqState};
use packet::{Batch, Pool};
use std::cell::Cell;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

mod port;
mod socket;
use self::socket::*;

/// Size of one receive block: holds a 64 KiB GSO super-packet with its headers.
pub const RX_BLOCK_SIZE: usize = 128 * 1024;
/// Default number of receive blocks (4 MiB of ring).
pub const RX_BLOCKS: usize = 32;
/// Nominal frame size given to the kernel for the receive ring (V3 frames are variable-sized;
/// this only sets `tp_frame_nr`).
const RX_FRAME_SIZE: usize = 2048;
/// Block retire timeout: the longest a received frame waits in a partly filled block.
pub const RX_RETIRE_MS: u32 = 1;
/// Transmit slot size for MTUs up to 1972 bytes.
pub const TX_FRAME_SIZE: usize = 2048;
/// Transmit ring block size.
const TX_BLOCK_SIZE: usize = 64 * 1024;
/// Transmit slots (1024 for 2 KiB slots).
const TX_RING_BYTES: usize = 2 * 1024 * 1024;

/// Where the data starts in a transmit slot: `TPACKET3_HDRLEN - sizeof(struct sockaddr_ll)`.
const TX_DATA_OFF: usize = libc::TPACKET3_HDRLEN - mem::size_of::<libc::sockaddr_ll>();
/// Where a frame's `sockaddr_ll` sits after its `tpacket3_hdr`: `TPACKET_ALIGN(sizeof hdr)`.
const SLL_OFF: usize = (mem::size_of::<libc::tpacket3_hdr>() + 15) & !15;

// Offsets of the fields we read, from the libc (= kernel uapi) layouts.
const BLK_STATUS: usize = mem::offset_of!(libc::tpacket_block_desc, hdr)
    + mem::offset_of!(libc::tpacket_hdr_v1, block_status);
const BLK_NUM_PKTS: usize = mem::offset_of!(libc::tpacket_block_desc, hdr)
    + mem::offset_of!(libc::tpacket_hdr_v1, num_pkts);
const BLK_FIRST: usize = mem::offset_of!(libc::tpacket_block_desc, hdr)
    + mem::offset_of!(libc::tpacket_hdr_v1, offset_to_first_pkt);
const H_NEXT: usize = mem::offset_of!(libc::tpacket3_hdr, tp_next_offset);
const H_SNAPLEN: usize = mem::offset_of!(libc::tpacket3_hdr, tp_snaplen);
const H_LEN: usize = mem::offset_of!(libc::tpacket3_hdr, tp_len);
const H_STATUS: usize = mem::offset_of!(libc::tpacket3_hdr, tp_status);
const H_MAC: usize = mem::offset_of!(libc::tpacket3_hdr, tp_mac);
const H_VLAN_TCI: usize = mem::offset_of!(libc::tpacket3_hdr, hv1)
    + mem::offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tci);
const H_VLAN_TPID: usize = mem::offset_of!(libc::tpacket3_hdr, hv1)
    + mem::offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tpid);
const SLL_PKTTYPE: usize = SLL_OFF + mem::offset_of!(libc::sockaddr_ll, sll_pkttype);

const _: () = assert!(BLK_STATUS & 3 == 0 && H_STATUS & 3 == 0);
const _: () = assert!(TX_DATA_OFF == 48 && SLL_OFF == 48);
const _: () = assert!(RX_BLOCK_SIZE / RX_FRAME_SIZE * RX_FRAME_SIZE == RX_BLOCK_SIZE);
const _: () = assert!(TX_BLOCK_SIZE / TX_FRAME_SIZE * TX_FRAME_SIZE == TX_BLOCK_SIZE);

/// `PACKET_LOSS` (not exported by libc under that name on every target).
const PACKET_LOSS: i32 = 14;

const KIND: &str = "system";

#[inline]
fn rd32(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at + 4)?;
    Some(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
}

#[inline]
fn rd16(b: &[u8], at: usize) -> Option<u16> {
    let w = b.get(at..at + 2)?;
    Some(u16::from_ne_bytes([w[0], w[1]]))
}

/// The shared mapping of both rings. Unmapped on drop.
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned; no reference into the mapping
        // outlives the `Rings` that owns this value (see module invariants).
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// Receive-ring cursor: which block we are in and how far.
struct RxRing {
    base: *mut u8,
    nblocks: usize,
    /// Current block index.
    cur: usize,
    /// Frames of the current block not yet consumed; 0 = we do not own the current block yet.
    left: u32,
    /// Offset of the next frame in the current block.
    off: usize,
    /// Next output segment of the frame at `off` (GSO resume point).
    seg: usize,
}

impl RxRing {
    #[inline]
    fn block_ptr(&self) -> *mut u8 {
        // cur < nblocks, so the result stays inside the mapping.
        self.base.wrapping_add(self.cur * RX_BLOCK_SIZE)
    }

    #[inline]
    fn status(&self) -> &AtomicU32 {
        // SAFETY: the block header's status word is 4-byte aligned (blocks are page aligned,
        // BLK_STATUS % 4 == 0), lies inside the mapping, and is only ever accessed atomically
        // by us; the kernel updates it with plain stores + barriers, which is the documented
        // protocol for this shared word.
        unsafe { AtomicU32::from_ptr(self.block_ptr().add(BLK_STATUS).cast()) }
    }

    /// Returns the current block to the kernel and moves to the next.
    #[inline]
    fn release_block(&mut self) {
        self.status()
            .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        self.cur = (self.cur + 1) % self.nblocks;
        self.left = 0;
        self.off = 0;
        self.seg = 0;
    }

    /// Takes the next block the kernel has handed over and holds frames, releasing empty or
    /// unreadable ones on the way; false if none is ready.
    #[inline]
    fn open_block(&mut self) -> bool {
        while self.status().load(Ordering::Acquire) & libc::TP_STATUS_USER != 0 {
            // SAFETY: the acquire load above saw TP_STATUS_USER, so the kernel has handed
            // this block over and will not write it until we store TP_STATUS_KERNEL; the
            // block lies inside the mapping. We only read through this slice.
            let block = unsafe { std::slice::from_raw_parts(self.block_ptr(), RX_BLOCK_SIZE) };
            match (rd32(block, BLK_NUM_PKTS), rd32(block, BLK_FIRST)) {
                (Some(num), Some(first)) if num != 0 => {
                    self.left = num;
                    self.off = first as usize;
                    self.seg = 0;
                    return true;
                }
                _ => self.release_block(),
            }
        }
        false
    }

    /// Moves past the frame at `off`, releasing the block after its last frame.
    #[inline]
    fn advance(&mut self, next_offset: u32) {
        self.seg = 0;
        self.left -= 1;
        if self.left == 0 {
            self.release_block();
        } else {
            self.off += next_offset as usize;
        }
    }
}

/// Transmit-ring cursor.
struct TxRing {
    base: *mut u8,
    frame_size: usize,
    nframes: usize,
    head: usize,
}

impl TxRing {
    #[inline]
    fn slot(&self, i: usize) -> *mut u8 {
        self.base.wrapping_add(i * self.frame_size)
    }

    #[inline]
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: slots are TPACKET_ALIGNMENT-aligned inside the mapping and H_STATUS % 4 == 0;
        // the status word is the documented shared handshake word, accessed atomically by us.
        unsafe { AtomicU32::from_ptr(self.slot(i).add(H_STATUS).cast()) }
    }
}

/// Both rings and their mapping.
struct Rings {
    rx: RxRing,
    tx: TxRing,
    _map: Mapping,
}

// SAFETY: `Rings` exclusively owns its mapping; the raw pointers are into memory shared only
// with the kernel, not with other threads of this process, so moving the whole structure to
// another thread is sound. It is not `Sync`, and `Port` needs only `Send`.
unsafe impl Send for Rings {}

/// See the module documentation.
pub struct SystemPort {
    name: String,
    ifindex: u32,
    mac: [u8; 6],
    rings: Option<Rings>,
    fd: Option<OwnedFd>,
    link: LinkCache,
    stats: PortStats,
    /// `tp_drops` accumulated from `PACKET_STATISTICS` (reading resets the kernel's counter).
    ring_drops: Cell<u64>,
    rx_blocks: usize,
}

impl SystemPort {
    /// Opens interface `name`. Options: `rx_ring_blocks=N` (4..=1024, default 32, of 128 KiB).
    pub fn open(name: &str, opts: &Options) -> Result<SystemPort, NetdevError> {
        check_options(KIND, opts, &["rx_ring_blocks"])?;
        let rx_blocks = match opts.get("rx_ring_blocks") {
            None => RX_BLOCKS,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (4..=1024).contains(&n) => n,
                _ => {
                    return Err(NetdevError::BadOption {
                        key: "rx_ring_blocks".into(),
                        why: format!("'{v}' is not a number in 4..=1024"),
                    })
                }
            },
        };
        sys::check_ifname(KIND, name)?;
        let err = |call: &str, e: std::io::Error| sys::os_error(KIND, name, call, &e);
        let (fd, rings, ifindex, mtu) = open_socket(name, rx_blocks)?;
        let s = fd.as_raw_fd();
        let mac = sys::if_hwaddr(s, name).map_err(|e| err("SIOCGIFHWADDR", e))?;
        let link = LinkCache::new(s, name, mtu);
        Ok(SystemPort {
            name: name.to_string(),
            ifindex,
            mac,
            rings: Some(rings),
            fd: Some(fd),
            link,
            stats: PortStats::default(),
            ring_drops: Cell::new(0),
            rx_blocks,
        })
    }

    /// Reads and accumulates the ring's drop counter.
    fn poll_ring_drops(&self) {
        let Some(fd) = &self.fd else { return };
        let zero = libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        if let Ok(st) = sys::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            zero,
        ) {
            self.ring_drops
                .set(self.ring_drops.get() + u64::from(st.tp_drops));
        }
    }

    fn raw_fd(&self) -> Option<RawFd> {
        self.fd.as_ref().map(|f| f.as_raw_fd())
    }
}

/// The receiving socket of a port, in transit between two handles.
struct SysRxq {
    rings: Rings,
    fd: OwnedFd,
    drops: u64,
    rx_blocks: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_offsets_match_the_kernel() {
        assert_eq!(BLK_STATUS, 8);
        assert_eq!(BLK_NUM_PKTS, 12);
        assert_eq!(BLK_FIRST, 16);
        assert_eq!(H_STATUS, 20);
        assert_eq!(H_MAC, 24);
        assert_eq!(H_VLAN_TCI, 32);
        assert_eq!(SLL_PKTTYPE, 58);
        assert_eq!(tx_frame_size(1500), 2048);
        assert_eq!(tx_frame_size(9000), 4096);
    }

    #[test]
    fn bad_options_are_refused() {
        let mut o = Options::new();
        o.insert("bogus".into(), "1".into());
        let e = SystemPort::open("lo", &o).err().expect("error");
        assert_eq!(
            e.to_string(),
            "unknown option 'bogus' for port type 'system'"
        );
        let mut o = Options::new();
        o.insert("rx_ring_blocks".into(), "2".into());
        let e = SystemPort::open("lo", &o).err().expect("error");
        assert!(e.to_string().contains("rx_ring_blocks"), "{e}");
        let e = SystemPort::open("this-name-is-far-too-long", &Options::new())
            .err()
            .expect("error");
        assert!(e.to_string().contains("not a valid interface name"), "{e}");
    }
}
