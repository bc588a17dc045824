//! The vhost-user device side of one connection: the `vhost` crate decodes and answers the
//! frontend's messages and calls this handler, which keeps the negotiated state and
//! configures the port's virtqueues.
//!
//! ## What it does with each request
//! * Features: we offer `VERSION_1`, `MRG_RXBUF`, `MQ`, `CTRL_VQ` (the frontend handles the
//!   control queue itself and tells us which queue pairs to use with `SET_VRING_ENABLE`),
//!   `INDIRECT_DESC`, `EVENT_IDX`, `RING_PACKED` (when acked, every ring of the device is
//!   packed: `vring::packed`), `IN_ORDER` (both ring layouts use every chain, refused ones
//!   too, in the order it was made available) and `PROTOCOL_FEATURES`; protocol features
//!   `MQ` (and `REPLY_ACK`, which the crate implements). Acked features outside the offer
//!   are refused.
//!   For the guest's transmissions also `CSUM`, `HOST_TSO4`, `HOST_TSO6`, `HOST_ECN` and
//!   `HOST_USO`: the guest may leave checksums and TCP/UDP segmentation to us, and we finish
//!   them on receipt (`vring::offload`). Towards the guest `GUEST_CSUM`, `GUEST_TSO4` and
//!   `GUEST_TSO6`: runs of TCP segments in one transmit burst reach it as one super-packet
//!   with a partial checksum (`vring::coalesce`); a guest that acks `GUEST_TSO4/6` without
//!   `GUEST_CSUM` (the spec forbids it), or acks none, gets complete frames. Not `GUEST_ECN`
//!   (segments with CWR are never coalesced, so it would add nothing) nor `GUEST_UFO`/`USO`.
//! * `SET_MEM_TABLE` maps the regions ([`super::mem`]) and hands the new memory to every ring.
//! * `SET_VRING_NUM/ADDR/BASE` are remembered; `SET_VRING_KICK` *starts* a ring: its
//!   addresses are translated from the frontend's virtual addresses, checked to lie in guest
//!   memory (`Queue::is_valid`), and the ring goes live. Without `PROTOCOL_FEATURES` a
//!   started ring is also enabled, as the specification says; with it, rings wait for
//!   `SET_VRING_ENABLE`. `GET_VRING_BASE` stops the ring and reports where we are. A ring
//!   whose used index in guest memory differs from the base it was given resumes at the used
//!   index (a reconnecting frontend may say 0 for a ring that already ran), as DPDK does.
//!   A packed ring takes its descriptor ring, driver and device event areas from
//!   `SET_VRING_ADDR`'s descriptor, available and used addresses, and its position from the
//!   base with the specification's encoding (bits 0-14 position, bit 15 wrap counter; no
//!   `SET_VRING_BASE`: position 0, wrap counter 1); `GET_VRING_BASE` answers in the same
//!   encoding, the used side repeated in bits 16-31. A packed ring that ran before resumes
//!   where the ring itself says it stands, if it says (`vring::packed::resume`): QEMU's
//!   base is stale after the switch went away. Any ring size up to 2^15 is accepted
//!   for packed rings, powers of two for split ones.
//! * `SET_VRING_CALL` keeps the guest's interrupt eventfd, made non-blocking.
//! * Everything else (config space, inflight tracking, dirty logging, memory slots, device
//!   state) is not offered, and refused if asked for anyway.
//!
//! Any error returned here ends the session (the frontend reconnects or is restarted), as
//! DPDK's vhost library does: a frontend that sends impossible values is not worth guessing.
//!
//! ## Threading
//! Runs on the port's control thread. Each change to a ring happens under that ring's mutex;
//! the link state and the number of usable queue pairs are recomputed after each request and
//! published as atomics.

use super::mem::{Guest, GuestMem, RegionInfo};
use super::vring::{Packed, Vring, HDR_LEGACY, HDR_MRG, MAX_RING};
use super::{lock, Shared, MAX_QP};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use vhost::vhost_user::message::{
    VhostTransferStateDirection, VhostTransferStatePhase, VhostUserConfigFlags, VhostUserInflight,
    VhostUserLog, VhostUserMemoryRegion, VhostUserProtocolFeatures, VhostUserShMemConfig,
    VhostUserSharedMsg, VhostUserSingleMemoryRegion, VhostUserVringAddrFlags, VhostUserVringState,
};
use vhost::vhost_user::{Error, GpuBackend, Result, VhostUserBackendReqHandlerMut};
use vhost::VhostUserMemoryRegionBase;
use virtio_queue::QueueT;
use vm_memory::GuestAddress;

pub const F_CSUM: u64 = 1 << 0;
pub const F_GUEST_CSUM: u64 = 1 << 1;
pub const F_GUEST_TSO4: u64 = 1 << 7;
pub const F_GUEST_TSO6: u64 = 1 << 8;
pub const F_HOST_TSO4: u64 = 1 << 11;
pub const F_HOST_TSO6: u64 = 1 << 12;
pub const F_HOST_ECN: u64 = 1 << 13;
pub const F_MRG_RXBUF: u64 = 1 << 15;
pub const F_CTRL_VQ: u64 = 1 << 17;
pub const F_MQ: u64 = 1 << 22;
pub const F_INDIRECT_DESC: u64 = 1 << 28;
pub const F_EVENT_IDX: u64 = 1 << 29;
pub const F_PROTOCOL_FEATURES: u64 = 1 << 30;
pub const F_VERSION_1: u64 = 1 << 32;
pub const F_RING_PACKED: u64 = 1 << 34;
pub const F_IN_ORDER: u64 = 1 << 35;
pub const F_HOST_USO: u64 = 1 << 56;

/// The features that let the guest leave checksums or segmentation to us.
pub const OFFLOADS: u64 = F_CSUM | F_HOST_TSO4 | F_HOST_TSO6 | F_HOST_ECN | F_HOST_USO;

/// The features that let us give the guest TCP super-packets with partial checksums
/// (`vring::coalesce`); the spec makes `GUEST_TSO4/6` depend on `GUEST_CSUM`.
pub const GUEST_OFFLOADS: u64 = F_GUEST_CSUM | F_GUEST_TSO4 | F_GUEST_TSO6;

/// The virtio features we offer.
pub const FEATURES: u64 = OFFLOADS
    | GUEST_OFFLOADS
    | F_MRG_RXBUF
    | F_CTRL_VQ
    | F_MQ
    | F_INDIRECT_DESC
    | F_EVENT_IDX
    | F_PROTOCOL_FEATURES
    | F_VERSION_1
    | F_RING_PACKED
    | F_IN_ORDER;

/// What the frontend configured for one ring, in its own address space.
#[derive(Clone, Copy, Default)]
struct RingCfg {
    num: u16,
    desc: u64,
    avail: u64,
    used: u64,
    /// SET_VRING_BASE's value (split: the next available index; packed: position and
    /// wrap counter), if one was given.
    base: Option<u32>,
}

/// The state of one vhost-user session.
pub struct Dev {
    shared: Arc<Shared>,
    acked: u64,
    mem: Option<GuestMem>,
    cfg: Vec<RingCfg>,
}

fn refuse(why: &str, shared: &Shared) -> Error {
    *lock(&shared.last_reason) = why.to_string();
    Error::InvalidParam
}

impl Dev {
    pub fn new(shared: Arc<Shared>) -> Dev {
        Dev {
            shared,
            acked: 0,
            mem: None,
            cfg: vec![RingCfg::default(); 2 * MAX_QP],
        }
    }

    fn index(&self, i: u32) -> Result<usize> {
        let i = i as usize;
        if i < self.cfg.len() {
            Ok(i)
        } else {
            Err(refuse(
                &format!("ring index {i} out of range (at most {MAX_QP} queue pairs)"),
                &self.shared,
            ))
        }
    }

    /// Stops every ring and forgets the memory (session end, RESET_OWNER/RESET_DEVICE).
    pub fn reset(&mut self) {
        for v in self.shared.vrings.iter() {
            *lock(v) = Vring::default();
        }
        self.mem = None;
        self.acked = 0;
        self.cfg = vec![RingCfg::default(); 2 * MAX_QP];
        self.publish();
    }

    /// Recomputes the link state and the usable queue pairs from the rings.
    fn publish(&self) {
        let mut pairs = 0;
        let mut polled = 0;
        for p in 0..MAX_QP {
            let rx = lock(&self.shared.vrings[2 * p]).live();
            let tx = lock(&self.shared.vrings[2 * p + 1]).live();
            if rx && tx && pairs == p {
                pairs = p + 1;
            }
            if rx || tx {
                polled = p + 1;
            }
        }
        self.shared.pairs.store(pairs, Ordering::Release);
        self.shared.polled.store(polled, Ordering::Release);
        let was = self.shared.up.swap(pairs > 0, Ordering::AcqRel);
        if !was && pairs > 0 {
            self.shared.connects.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn hdr_len(&self) -> usize {
        if self.acked & (F_MRG_RXBUF | F_VERSION_1) != 0 {
            HDR_MRG
        } else {
            HDR_LEGACY
        }
    }

    /// Starts ring `i`: translate its addresses, check them, make it live.
    fn start(&mut self, i: usize, kick: Option<File>) -> Result<()> {
        let Some(gm) = &self.mem else {
            return Err(refuse("ring started before any memory table", &self.shared));
        };
        let c = self.cfg[i];
        let n = u64::from(c.num);
        let tr = |uva: u64, len: u64, what: &str| {
            gm.uva_to_gpa(uva, len).ok_or_else(|| {
                refuse(
                    &format!("ring {i}: {what} address {uva:#x} is not in guest memory"),
                    &self.shared,
                )
            })
        };
        if self.acked & F_RING_PACKED != 0 {
            // Packed: the descriptor ring, then the driver's and the device's event
            // suppression areas where split rings have their available and used rings.
            let mut p = Packed {
                desc: tr(c.desc, 16 * n, "descriptor ring")?,
                driver: tr(c.avail, 4, "driver event area")?,
                device: tr(c.used, 4, "device event area")?,
                size: c.num,
                event_idx: self.acked & F_EVENT_IDX != 0,
                ..Packed::default()
            };
            // A running ring that moves to a new memory table keeps its position.
            let running = {
                let v = lock(&self.shared.vrings[i]);
                v.packed.filter(|q| v.started && q.size == c.num)
            };
            if let Some(q) = running {
                (p.next, p.wrap) = (q.next, q.wrap);
            // Without SET_VRING_BASE: the start of the ring, wrap counter 1.
            } else if !p.set_base(c.base.unwrap_or(0x8000)) {
                return Err(refuse(
                    &format!("ring {i}: base {:#x} outside the ring", c.base.unwrap_or(0)),
                    &self.shared,
                ));
            }
            if !p.valid(&gm.mem) || !p.disable_kicks(&gm.mem) {
                return Err(refuse(
                    &format!("ring {i}: not inside guest memory"),
                    &self.shared,
                ));
            }
            // A ring that ran before (the switch restarted under a running guest) may be
            // elsewhere than the frontend thinks: QEMU cannot know where a packed ring
            // stands once its backend is gone, and repeats an old base. The ring tells.
            if running.is_none() {
                if let Some((next, wrap)) = p.resume_point(&gm.mem) {
                    (p.next, p.wrap) = (next, wrap);
                }
            }
            let mem = gm.mem.clone();
            let hdr = self.hdr_len();
            let mut v = lock(&self.shared.vrings[i]);
            v.q.set_ready(false);
            v.packed = Some(p);
            self.go(&mut v, mem, hdr, kick);
            return Ok(());
        }
        let desc = tr(c.desc, 16 * n, "descriptor table")?;
        let avail = tr(c.avail, 6 + 2 * n, "available ring")?;
        let used = tr(c.used, 6 + 8 * n, "used ring")?;
        let mem = gm.mem.clone();
        let hdr = self.hdr_len();
        let event_idx = self.acked & F_EVENT_IDX != 0;
        let mut v = lock(&self.shared.vrings[i]);
        let q = &mut v.q;
        q.try_set_size(c.num)
            .and_then(|()| q.try_set_desc_table_address(GuestAddress(desc)))
            .and_then(|()| q.try_set_avail_ring_address(GuestAddress(avail)))
            .and_then(|()| q.try_set_used_ring_address(GuestAddress(used)))
            .map_err(|e| refuse(&format!("ring {i}: {e}"), &self.shared))?;
        let base = c.base.unwrap_or(0) as u16;
        q.set_next_avail(base);
        q.set_next_used(base);
        q.set_event_idx(event_idx);
        q.set_ready(true);
        if !q.is_valid(&mem.mem) {
            q.set_ready(false);
            return Err(refuse(
                &format!("ring {i}: not inside guest memory"),
                &self.shared,
            ));
        }
        // A frontend that reconnects may give base 0 for a ring that already ran (DPDK's
        // virtio-user does): the used index in guest memory says where the device stopped,
        // and resuming there neither resends old transmissions nor reuses filled buffers.
        // DPDK's vhost library, and so OVS, does the same.
        if let Ok(u) = q.used_idx(&mem.mem, Ordering::Acquire) {
            if u.0 != base {
                q.set_next_avail(u.0);
                q.set_next_used(u.0);
            }
        }
        v.packed = None;
        self.go(&mut v, mem, hdr, kick);
        Ok(())
    }

    /// Makes a configured ring live.
    fn go(&self, v: &mut Vring, mem: Arc<Guest>, hdr: usize, kick: Option<File>) {
        v.mem = Some(mem);
        v.kick = kick;
        v.hdr_len = hdr;
        v.mrg = self.acked & F_MRG_RXBUF != 0;
        v.offload = self.acked & OFFLOADS != 0;
        v.gro
            .set(gro(self.acked, F_GUEST_TSO4), gro(self.acked, F_GUEST_TSO6));
        v.spill.clear();
        v.started = true;
        v.broken = false;
        if self.acked & F_PROTOCOL_FEATURES == 0 {
            v.enabled = true;
        }
    }
}

impl VhostUserBackendReqHandlerMut for Dev {
    fn set_owner(&mut self) -> Result<()> {
        Ok(())
    }

    fn reset_owner(&mut self) -> Result<()> {
        self.reset();
        Ok(())
    }

    fn reset_device(&mut self) -> Result<()> {
        self.reset();
        Ok(())
    }

    fn get_features(&mut self) -> Result<u64> {
        Ok(FEATURES)
    }

    fn set_features(&mut self, features: u64) -> Result<()> {
        if features & !FEATURES != 0 {
            return Err(refuse(
                &format!("features {:#x} were not offered", features & !FEATURES),
                &self.shared,
            ));
        }
        self.acked = features;
        let hdr = self.hdr_len();
        for v in self.shared.vrings.iter() {
            let mut v = lock(v);
            v.hdr_len = hdr;
            v.mrg = features & F_MRG_RXBUF != 0;
            v.offload = features & OFFLOADS != 0;
            v.gro
                .set(gro(features, F_GUEST_TSO4), gro(features, F_GUEST_TSO6));
            v.spill.clear();
            v.q.set_event_idx(features & F_EVENT_IDX != 0);
        }
        Ok(())
    }

    fn set_mem_table(
        &mut self,
        ctx: &[VhostUserMemoryRegion],
        files: Vec<File>,
        _postcopy: Option<bool>,
    ) -> Result<Option<Vec<VhostUserMemoryRegionBase>>> {
        let regions: Vec<RegionInfo> = ctx
            .iter()
            .map(|r| RegionInfo {
                gpa: r.guest_phys_addr,
                size: r.memory_size,
                uva: r.user_addr,
                offset: r.mmap_offset,
            })
            .collect();
        let gm = GuestMem::map(&regions, files).map_err(|e| refuse(&e, &self.shared))?;
        self.mem = Some(gm);
        // Rings already running move to the new memory (their addresses are re-translated).
        for i in 0..self.cfg.len() {
            let started = lock(&self.shared.vrings[i]).started;
            if started {
                let kick = lock(&self.shared.vrings[i]).kick.take();
                self.start(i, kick)?;
            }
        }
        self.publish();
        Ok(None)
    }

    fn set_vring_num(&mut self, index: u32, num: u32) -> Result<()> {
        let i = self.index(index)?;
        // Split rings must have a power-of-two size (checked when the ring starts);
        // packed ones any size up to 2^15.
        if num == 0 || num > u32::from(MAX_RING) {
            return Err(refuse(
                &format!("ring {i}: size {num} refused"),
                &self.shared,
            ));
        }
        self.cfg[i].num = num as u16;
        Ok(())
    }

    fn set_vring_addr(
        &mut self,
        index: u32,
        _flags: VhostUserVringAddrFlags,
        descriptor: u64,
        used: u64,
        available: u64,
        _log: u64,
    ) -> Result<()> {
        let i = self.index(index)?;
        let c = &mut self.cfg[i];
        c.desc = descriptor;
        c.used = used;
        c.avail = available;
        Ok(())
    }

    fn set_vring_base(&mut self, index: u32, base: u32) -> Result<()> {
        let i = self.index(index)?;
        self.cfg[i].base = Some(base);
        Ok(())
    }

    fn get_vring_base(&mut self, index: u32) -> Result<VhostUserVringState> {
        let i = self.index(index)?;
        let packed = self.acked & F_RING_PACKED != 0;
        let base = {
            let mut v = lock(&self.shared.vrings[i]);
            v.started = false;
            v.kick = None;
            v.q.set_ready(false);
            match v.packed {
                Some(p) if packed => p.base(),
                // A packed ring never started: where it would have started.
                _ if packed => self.cfg[i].base.unwrap_or(0x8000),
                _ => u32::from(v.q.next_avail()),
            }
        };
        self.cfg[i].base = Some(base);
        self.publish();
        Ok(VhostUserVringState::new(index, base))
    }

    fn set_vring_kick(&mut self, index: u8, fd: Option<File>) -> Result<()> {
        let i = self.index(u32::from(index))?;
        self.start(i, fd)?;
        self.publish();
        Ok(())
    }

    fn set_vring_call(&mut self, index: u8, fd: Option<File>) -> Result<()> {
        let i = self.index(u32::from(index))?;
        if let Some(f) = &fd {
            nonblocking(f).map_err(|e| refuse(&format!("call fd: {e}"), &self.shared))?;
        }
        lock(&self.shared.vrings[i]).call = fd;
        Ok(())
    }

    fn set_vring_err(&mut self, index: u8, _fd: Option<File>) -> Result<()> {
        self.index(u32::from(index)).map(|_| ())
    }

    fn get_protocol_features(&mut self) -> Result<VhostUserProtocolFeatures> {
        Ok(VhostUserProtocolFeatures::MQ | VhostUserProtocolFeatures::REPLY_ACK)
    }

    fn set_protocol_features(&mut self, features: u64) -> Result<()> {
        let offered = (VhostUserProtocolFeatures::MQ | VhostUserProtocolFeatures::REPLY_ACK).bits();
        if features & !offered != 0 {
            return Err(refuse(
                &format!("protocol features {features:#x} were not offered"),
                &self.shared,
            ));
        }
        Ok(())
    }

    fn get_queue_num(&mut self) -> Result<u64> {
        Ok(MAX_QP as u64)
    }

    fn set_vring_enable(&mut self, index: u32, enable: bool) -> Result<()> {
        let i = self.index(index)?;
        lock(&self.shared.vrings[i]).enabled = enable;
        self.publish();
        Ok(())
    }

    fn get_config(&mut self, _o: u32, _s: u32, _f: VhostUserConfigFlags) -> Result<Vec<u8>> {
        Err(Error::InvalidOperation("no config space"))
    }

    fn set_config(&mut self, _o: u32, _b: &[u8], _f: VhostUserConfigFlags) -> Result<()> {
        Err(Error::InvalidOperation("no config space"))
    }

    fn set_gpu_socket(&mut self, _g: GpuBackend) -> Result<()> {
        Err(Error::InvalidOperation("not a gpu"))
    }

    fn get_shared_object(&mut self, _u: VhostUserSharedMsg) -> Result<File> {
        Err(Error::InvalidOperation("no shared objects"))
    }

    fn get_inflight_fd(&mut self, _i: &VhostUserInflight) -> Result<(VhostUserInflight, File)> {
        Err(Error::InvalidOperation("no inflight tracking"))
    }

    fn set_inflight_fd(&mut self, _i: &VhostUserInflight, _f: File) -> Result<()> {
        Err(Error::InvalidOperation("no inflight tracking"))
    }

    fn get_max_mem_slots(&mut self) -> Result<u64> {
        Err(Error::InvalidOperation("no memory slots"))
    }

    fn add_mem_region(
        &mut self,
        _r: &VhostUserSingleMemoryRegion,
        _f: File,
        _p: Option<bool>,
    ) -> Result<Option<VhostUserMemoryRegionBase>> {
        Err(Error::InvalidOperation("no memory slots"))
    }

    fn remove_mem_region(&mut self, _r: &VhostUserSingleMemoryRegion) -> Result<()> {
        Err(Error::InvalidOperation("no memory slots"))
    }

    fn set_device_state_fd(
        &mut self,
        _d: VhostTransferStateDirection,
        _p: VhostTransferStatePhase,
        _f: File,
    ) -> Result<Option<File>> {
        Err(Error::InvalidOperation("no device state transfer"))
    }

    fn check_device_state(&mut self) -> Result<()> {
        Err(Error::InvalidOperation("no device state transfer"))
    }

    fn get_shmem_config(&mut self) -> Result<VhostUserShMemConfig> {
        Err(Error::InvalidOperation("no shared memory regions"))
    }

    fn set_log_base(&mut self, _l: &VhostUserLog, _f: File) -> Result<()> {
        Err(Error::InvalidOperation("no dirty logging"))
    }
}

/// Whether acked `features` let us coalesce for `tso` (`F_GUEST_TSO4` or `F_GUEST_TSO6`).
fn gro(features: u64, tso: u64) -> bool {
    features & (F_GUEST_CSUM | tso) == F_GUEST_CSUM | tso
}

fn nonblocking(f: &File) -> std::io::Result<()> {
    let fd = f.as_raw_fd();
    // SAFETY: fcntl F_GETFL/F_SETFL on a descriptor `f` owns.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
