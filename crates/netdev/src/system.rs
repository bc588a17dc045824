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

use crate::offload::{OffloadError, Plan, VnetHdr, VNET_HDR_LEN};
use crate::sys::{self, LinkCache};
use crate::{check_options, LinkState, NetdevError, Options, Port, PortStats, RxqState};
use packet::{Batch, Pool};
use std::cell::Cell;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

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

/// True if `name` is a TUN/TAP device. What is sent to one is for whoever reads its file
/// descriptor or captures on it (`ovs-tcpdump` mirrors onto a TAP device and runs tcpdump
/// there): it is sent through the kernel's transmit path, which packet capture sees, instead
/// of bypassing the queueing layer (which capture does not see).
fn is_tap(name: &str) -> bool {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return false;
    }
    std::path::Path::new("/sys/class/net")
        .join(name)
        .join("tun_flags")
        .exists()
}

/// One AF_PACKET socket on `name` with its mapped rings: a receive ring of `rx_blocks`
/// blocks (0: a transmit-only socket that receives nothing) and the transmit ring.
fn open_socket(name: &str, rx_blocks: usize) -> Result<(OwnedFd, Rings, u32, u32), NetdevError> {
    let err = |call: &str, e: std::io::Error| sys::os_error(KIND, name, call, &e);

    // Protocol 0: the socket receives nothing until `bind` below, after the rings exist.
    // SAFETY: plain socket(2) call.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if raw < 0 {
        return Err(err("socket(AF_PACKET)", sys::last_err()));
    }
    // SAFETY: `raw` is a fresh descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let s = fd.as_raw_fd();

    let ifindex = sys::if_index(s, name).map_err(|e| err("SIOCGIFINDEX", e))?;
    let mtu = sys::if_mtu(s, name).map_err(|e| err("SIOCGIFMTU", e))?;

    let v3 = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
    sys::setsockopt(s, libc::SOL_PACKET, libc::PACKET_VERSION, &v3)
        .map_err(|e| err("setsockopt(PACKET_VERSION=TPACKET_V3)", e))?;
    let one: libc::c_int = 1;
    sys::setsockopt(s, libc::SOL_PACKET, libc::PACKET_VNET_HDR, &one)
        .map_err(|e| err("setsockopt(PACKET_VNET_HDR)", e))?;
    // Best effort: older kernels lack it, and rx also filters PACKET_OUTGOING frames.
    let _ = sys::setsockopt(s, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one);
    if !is_tap(name) {
        sys::setsockopt(s, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &one)
            .map_err(|e| err("setsockopt(PACKET_QDISC_BYPASS)", e))?;
    }
    sys::setsockopt(s, libc::SOL_PACKET, PACKET_LOSS, &one)
        .map_err(|e| err("setsockopt(PACKET_LOSS)", e))?;

    if rx_blocks > 0 {
        let rx_req = libc::tpacket_req3 {
            tp_block_size: RX_BLOCK_SIZE as u32,
            tp_block_nr: rx_blocks as u32,
            tp_frame_size: RX_FRAME_SIZE as u32,
            tp_frame_nr: (rx_blocks * (RX_BLOCK_SIZE / RX_FRAME_SIZE)) as u32,
            tp_retire_blk_tov: RX_RETIRE_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        sys::setsockopt(s, libc::SOL_PACKET, libc::PACKET_RX_RING, &rx_req)
            .map_err(|e| err("setsockopt(PACKET_RX_RING)", e))?;
    }
    let tx_frame = tx_frame_size(mtu);
    let tx_blocks = TX_RING_BYTES / TX_BLOCK_SIZE;
    let tx_nframes = tx_blocks * (TX_BLOCK_SIZE / tx_frame);
    let tx_req = libc::tpacket_req3 {
        tp_block_size: TX_BLOCK_SIZE as u32,
        tp_block_nr: tx_blocks as u32,
        tp_frame_size: tx_frame as u32,
        tp_frame_nr: tx_nframes as u32,
        tp_retire_blk_tov: 0,
        tp_sizeof_priv: 0,
        tp_feature_req_word: 0,
    };
    sys::setsockopt(s, libc::SOL_PACKET, libc::PACKET_TX_RING, &tx_req)
        .map_err(|e| err("setsockopt(PACKET_TX_RING)", e))?;

    let rx_bytes = rx_blocks * RX_BLOCK_SIZE;
    let map_len = rx_bytes + TX_RING_BYTES;
    // SAFETY: maps the socket's rings (RX first, then TX, as the kernel lays them out);
    // the kernel checks the length against the ring sizes.
    let base = unsafe {
        libc::mmap(
            ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            s,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(err("mmap(packet rings)", sys::last_err()));
    }
    let base = base.cast::<u8>();
    let rings = Rings {
        rx: RxRing {
            base,
            nblocks: rx_blocks,
            cur: 0,
            left: 0,
            off: 0,
            seg: 0,
        },
        tx: TxRing {
            base: base.wrapping_add(rx_bytes),
            frame_size: tx_frame,
            nframes: tx_nframes,
            head: 0,
        },
        _map: Mapping { base, len: map_len },
    };

    if rx_blocks > 0 {
        sys::if_up(s, name).map_err(|e| err("SIOCSIFFLAGS(IFF_UP)", e))?;
        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex as libc::c_int,
            mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        sys::setsockopt(s, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
            .map_err(|e| err("setsockopt(PACKET_ADD_MEMBERSHIP, promisc)", e))?;
    }

    // SAFETY: sockaddr_ll is plain integers; zero is valid for every field.
    let mut sll: libc::sockaddr_ll = unsafe { mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    // A transmit-only socket binds with protocol 0: it receives nothing.
    sll.sll_protocol = if rx_blocks > 0 {
        (libc::ETH_P_ALL as u16).to_be()
    } else {
        0
    };
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a live sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            s,
            (&sll as *const libc::sockaddr_ll).cast(),
            mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(err("bind", sys::last_err()));
    }

    Ok((fd, rings, ifindex, mtu))
}

/// Slot size for the transmit ring: room for the slot header, the vnet header and a frame of
/// MTU + 18 bytes.
fn tx_frame_size(mtu: u32) -> usize {
    let need = TX_DATA_OFF + VNET_HDR_LEN + mtu as usize + 18;
    if need <= TX_FRAME_SIZE {
        TX_FRAME_SIZE
    } else {
        2 * TX_FRAME_SIZE
    }
}

/// What one ring frame turned out to be.
enum RxFrame<'a> {
    /// Deliver these bytes.
    Deliver {
        data: &'a [u8],
        vnet: VnetHdr,
        tag: Option<[u8; 4]>,
    },
    /// Skip silently (our own or another sender's outgoing frame).
    Skip,
    /// Count as an rx error and skip.
    Error,
}

/// Parses the frame at `off` of a user-owned block. `None`: the header itself is out of
/// bounds (the rest of the block cannot be trusted). Otherwise the frame and its
/// `tp_next_offset`.
fn parse_frame(block: &[u8], off: usize) -> Option<(RxFrame<'_>, u32)> {
    let h = block.get(off..)?;
    let next = rd32(h, H_NEXT)?;
    let snaplen = rd32(h, H_SNAPLEN)? as usize;
    let len = rd32(h, H_LEN)? as usize;
    let status = rd32(h, H_STATUS)?;
    let mac = usize::from(rd16(h, H_MAC)?);
    let pkttype = *h.get(SLL_PKTTYPE)?;
    if pkttype == libc::PACKET_OUTGOING {
        return Some((RxFrame::Skip, next));
    }
    if snaplen < len || mac < SLL_OFF + VNET_HDR_LEN {
        return Some((RxFrame::Error, next));
    }
    let Some(data) = h.get(mac..mac + snaplen) else {
        return Some((RxFrame::Error, next));
    };
    let mut vb = [0u8; VNET_HDR_LEN];
    vb.copy_from_slice(h.get(mac - VNET_HDR_LEN..mac)?);
    let tag = if status & libc::TP_STATUS_VLAN_VALID != 0 {
        let tci = rd32(h, H_VLAN_TCI)? as u16;
        let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
            rd16(h, H_VLAN_TPID)?
        } else {
            0x8100
        };
        let (p, c) = (tpid.to_be_bytes(), tci.to_be_bytes());
        Some([p[0], p[1], c[0], c[1]])
    } else {
        None
    };
    Some((
        RxFrame::Deliver {
            data,
            vnet: VnetHdr::parse(&vb),
            tag,
        },
        next,
    ))
}

impl Port for SystemPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let Some(rings) = self.rings.as_mut() else {
            return 0;
        };
        if rings.rx.nblocks == 0 {
            // A transmit-only handle (see `share`).
            return 0;
        }
        let rx = &mut rings.rx;
        let stats = &mut self.stats;
        let mut n = 0;
        'blocks: while !batch.is_full() {
            if rx.left == 0 {
                if rx.status().load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                    break;
                }
                // SAFETY: the acquire load above saw TP_STATUS_USER, so the kernel has handed
                // this block over and will not write it until we store TP_STATUS_KERNEL; the
                // block lies inside the mapping. We only read through this slice.
                let block = unsafe { std::slice::from_raw_parts(rx.block_ptr(), RX_BLOCK_SIZE) };
                let (Some(num), Some(first)) = (rd32(block, BLK_NUM_PKTS), rd32(block, BLK_FIRST))
                else {
                    rx.release_block();
                    continue;
                };
                if num == 0 {
                    rx.release_block();
                    continue;
                }
                rx.left = num;
                rx.off = first as usize;
                rx.seg = 0;
            }
            // SAFETY: as above: `rx.left > 0` means we own the current block (its status was
            // seen as TP_STATUS_USER and not handed back yet).
            let block = unsafe { std::slice::from_raw_parts(rx.block_ptr(), RX_BLOCK_SIZE) };
            let Some((frame, next)) = parse_frame(block, rx.off) else {
                stats.rx_errors += 1;
                rx.release_block();
                continue;
            };
            if rx.left > 1 && next == 0 {
                // A frame that claims more frames follow but no offset to them.
                stats.rx_errors += 1;
                rx.release_block();
                continue;
            }
            let (data, vnet, tag) = match frame {
                RxFrame::Deliver { data, vnet, tag } => (data, vnet, tag),
                RxFrame::Skip => {
                    rx.advance(next);
                    continue;
                }
                RxFrame::Error => {
                    stats.rx_errors += 1;
                    rx.advance(next);
                    continue;
                }
            };
            let plan = match Plan::new(data, tag, &vnet) {
                Ok(p) => p,
                Err(OffloadError::TooBig)
                | Err(OffloadError::Malformed)
                | Err(OffloadError::UnsupportedGso(_)) => {
                    stats.rx_errors += 1;
                    rx.advance(next);
                    continue;
                }
            };
            let count = plan.count();
            while rx.seg < count {
                if batch.is_full() {
                    break 'blocks;
                }
                let Some(mut pkt) = pool.alloc() else {
                    // Leave the rest in the ring; we resume here when buffers come back.
                    break 'blocks;
                };
                let len = plan.len_of(rx.seg);
                let written = match pkt.reset_for_rx(len) {
                    Some(buf) => plan.write(rx.seg, buf),
                    None => 0,
                };
                rx.seg += 1;
                if written == 0 {
                    stats.rx_errors += 1;
                    pool.free(pkt);
                    continue;
                }
                stats.rx_packets += 1;
                stats.rx_bytes += written as u64;
                if let Err(p) = batch.push(pkt) {
                    pool.free(p);
                    break 'blocks;
                }
                n += 1;
            }
            rx.advance(next);
        }
        n
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let (Some(rings), Some(fd)) = (self.rings.as_mut(), self.fd.as_ref()) else {
            self.stats.tx_dropped += batch.len() as u64;
            pool.free_batch(batch);
            return;
        };
        let tx = &mut rings.tx;
        let max_len = self.link.mtu() as usize + 14;
        let room = tx.frame_size - TX_DATA_OFF - VNET_HDR_LEN;
        let mut queued = 0usize;
        for pkt in batch.drain() {
            let data = pkt.data();
            let tagged = matches!(data.get(12..14), Some([0x81, 0x00]) | Some([0x88, 0xa8]));
            let limit = if tagged { max_len + 4 } else { max_len };
            if data.len() > limit || data.len() > room || data.len() < 14 {
                self.stats.tx_errors += 1;
                pool.free(pkt);
                continue;
            }
            let i = tx.head;
            match tx.status(i).load(Ordering::Acquire) {
                libc::TP_STATUS_AVAILABLE => {}
                libc::TP_STATUS_WRONG_FORMAT => {
                    // Only without PACKET_LOSS; reclaim the slot and count the old frame.
                    self.stats.tx_errors += 1;
                }
                _ => {
                    self.stats.tx_dropped += 1;
                    pool.free(pkt);
                    continue;
                }
            }
            {
                // SAFETY: the acquire load saw the slot available, so the kernel is not
                // reading or writing it until we store TP_STATUS_SEND_REQUEST below; the slot
                // is `frame_size` bytes inside the mapping. This is the only live reference to
                // it and it ends before the status store.
                let slot = unsafe { std::slice::from_raw_parts_mut(tx.slot(i), tx.frame_size) };
                let total = VNET_HDR_LEN + data.len();
                slot[H_NEXT..H_NEXT + 4].copy_from_slice(&0u32.to_ne_bytes());
                slot[H_LEN..H_LEN + 4].copy_from_slice(&(total as u32).to_ne_bytes());
                slot[H_SNAPLEN..H_SNAPLEN + 4].copy_from_slice(&(total as u32).to_ne_bytes());
                slot[TX_DATA_OFF..TX_DATA_OFF + VNET_HDR_LEN].fill(0);
                let d = TX_DATA_OFF + VNET_HDR_LEN;
                slot[d..d + data.len()].copy_from_slice(data);
            }
            tx.status(i)
                .store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
            tx.head = (i + 1) % tx.nframes;
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += data.len() as u64;
            queued += 1;
            pool.free(pkt);
        }
        if queued > 0 {
            // SAFETY: send(2) with no buffer: the kernel takes the data from the TX ring.
            let rc = unsafe { libc::send(fd.as_raw_fd(), ptr::null(), 0, libc::MSG_DONTWAIT) };
            if rc < 0 {
                let e = sys::last_err();
                // EAGAIN/ENOBUFS: the slots stay requested and go out with the next kick.
                if !matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOBUFS)) {
                    self.stats.tx_errors += 1;
                }
            }
        }
    }

    fn rxq_fd(&self, q: usize) -> Option<RawFd> {
        // TPACKET_V3: readable once a block is handed to user space (full, or after the
        // retire timer).
        if q == 0 && self.rx_blocks > 0 {
            self.raw_fd()
        } else {
            None
        }
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        let (fd, rings, _, mtu) = open_socket(&self.name, 0).ok()?;
        let link = LinkCache::new(fd.as_raw_fd(), &self.name, mtu);
        Some(Box::new(SystemPort {
            name: self.name.clone(),
            ifindex: self.ifindex,
            mac: self.mac,
            rings: Some(rings),
            fd: Some(fd),
            link,
            stats: PortStats::default(),
            ring_drops: Cell::new(0),
            rx_blocks: 0,
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        if q != 0 || self.rx_blocks == 0 {
            return None;
        }
        // This handle keeps transmitting through a new transmit-only socket; the receiving
        // socket (with its own transmit ring) goes to the other handle.
        let (fd, rings, _, _) = open_socket(&self.name, 0).ok()?;
        self.poll_ring_drops();
        let old_rings = self.rings.replace(rings)?;
        let old_fd = self.fd.replace(fd)?;
        let st = SysRxq {
            rings: old_rings,
            fd: old_fd,
            drops: self.ring_drops.replace(0),
            rx_blocks: self.rx_blocks,
        };
        self.rx_blocks = 0;
        Some(Box::new(st))
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        if q != 0 || self.rx_blocks != 0 {
            return Err(s);
        }
        let st = s.downcast::<SysRxq>()?;
        let st = *st;
        // Unmap this handle's transmit-only rings before closing its socket.
        self.rings = Some(st.rings);
        self.fd = Some(st.fd);
        self.ring_drops.set(self.ring_drops.get() + st.drops);
        self.rx_blocks = st.rx_blocks;
        Ok(())
    }

    fn stats(&self) -> PortStats {
        self.poll_ring_drops();
        let mut s = self.stats;
        s.rx_dropped += self.ring_drops.get();
        s
    }

    fn link_state(&self) -> LinkState {
        match &self.fd {
            Some(fd) => self.link.state(fd, &self.name),
            None => LinkState::Down,
        }
    }

    fn mac(&self) -> Option<[u8; 6]> {
        Some(self.mac)
    }

    fn ifindex(&self) -> Option<u32> {
        Some(self.ifindex)
    }

    fn options(&self) -> Vec<(String, String)> {
        if self.rx_blocks == RX_BLOCKS {
            Vec::new()
        } else {
            vec![("rx_ring_blocks".into(), self.rx_blocks.to_string())]
        }
    }

    fn close(&mut self) {
        if self.raw_fd().is_some() {
            self.poll_ring_drops();
        }
        // Unmap first, then close the socket (which also drops the promiscuous membership).
        self.rings = None;
        self.fd = None;
    }
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
