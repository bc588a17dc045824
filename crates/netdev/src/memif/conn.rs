//! One established memif connection: its mapped regions, its rings, their eventfds and the
//! cursors of the burst loops; and the client's own shared memory layout.
//!
//! ## What
//! The control thread builds a [`Conn`] once the handshake is complete — from the regions and
//! rings the client announced ([`Conn::server`]) or from the memory we created as a client
//! ([`ClientMem`], [`Conn::client`]) — and publishes it to the port's handles in an `Arc`.
//! Poll threads then move packets through it; the control thread never touches its rings
//! again. When the peer goes away the control thread withdraws it; the mapping lives on
//! until the last handle lets go of its `Arc`, so a poll thread never sees memory vanish.
//!
//! ## Queues
//! Receive rings (S2M for a server, M2S for a client) are spread over the port's `n_rxq`
//! receive queues: ring `r` belongs to queue `r % n_rxq`. Transmit rings are used by the
//! handles in turn (handle `k` sends on ring `k % n`). Each ring's cursor sits behind its own
//! mutex, uncontended when every poll thread holds its own queue.
//!
//! ## Interrupts
//! Each receive queue has a stable epoll descriptor (the port's `rxq_fd`) in which the
//! peer's eventfds of that queue's rings are registered edge-triggered. The peer writes its
//! eventfd after a burst when our ring's flags do not mask interrupts; that makes the epoll
//! descriptor readable and wakes a sleeping poll thread. We mask interrupts while traffic
//! flows and unmask once the ring has stayed empty for 1 ms; consuming the readiness is an
//! `epoll_wait(0)`, which never blocks and never reads the peer's descriptor (whose blocking
//! mode the peer controls). Signalling the peer on transmit writes its eventfd only if it is
//! non-blocking (checked just before; see the module documentation of `memif` for the
//! remaining window).

use super::ring::{
    self, Burst, Desc, Region, Ring, RxCursor, Side, TxCursor, COOKIE, DESC_SIZE, FLAG_MASK_INT,
    RING_HDR,
};
use packet::{Batch, Pool};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Empty polls between looks at the clock while a receive ring is idle.
const IDLE_POLLS: u32 = 64;
/// How long a receive ring must stay empty before it asks the peer for interrupts again.
/// Well under the poll thread's 20 ms before sleeping, and long enough that a busy peer that
/// merely paused never starts paying an eventfd write per burst (which would slow it down and
/// keep the ring empty: a feedback loop that halves a closed-loop benchmark).
const IDLE_UNMASK: std::time::Duration = std::time::Duration::from_millis(1);

/// A ring announced by the client (`ADD_RING`).
pub struct RingAnn {
    pub s2m: bool,
    pub index: u16,
    pub region: u16,
    pub offset: u32,
    pub log2: u8,
    pub efd: OwnedFd,
}

struct RxRing {
    ring: Ring,
    efd: OwnedFd,
    cur: RxCursor,
    /// Client only: the M2S head we last offered, and where buffers of this ring start.
    head: u16,
    buf0: u32,
    masked: bool,
    idle: u32,
    /// When the current run of empty polls was first noticed.
    idle_since: Option<std::time::Instant>,
}

struct TxRing {
    ring: Ring,
    efd: OwnedFd,
    cur: TxCursor,
    buf0: u32,
}

/// An established connection. See the module documentation.
pub struct Conn {
    side: Side,
    regions: Vec<Region>,
    sizes: Vec<usize>,
    max_len: u32,
    bsize: u32,
    rx: Vec<Mutex<RxRing>>,
    tx: Vec<Mutex<TxRing>>,
    /// The receive queues' epoll descriptors (owned by the port) and which rings they watch.
    epolls: Vec<(Arc<OwnedFd>, Vec<usize>)>,
    /// The peer's name, from `INIT`/`HELLO`.
    pub peer: String,
    /// Set by a poll thread that found a ring index the peer could not have written
    /// honestly; the control thread then ends the connection.
    broken: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `fd` is an eventfd (`/proc/self/fd/N` reads `anon_inode:[eventfd]`).
pub fn is_eventfd(fd: RawFd) -> bool {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map(|p| p.as_os_str() == "anon_inode:[eventfd]")
        .unwrap_or(false)
}

/// A new non-blocking eventfd.
pub fn eventfd() -> std::io::Result<OwnedFd> {
    // SAFETY: plain eventfd(2); the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A new epoll descriptor.
pub fn epoll() -> std::io::Result<OwnedFd> {
    // SAFETY: plain epoll_create1(2); the result is checked.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Registers `fd` edge-triggered in `ep` (or removes it).
pub fn epoll_ctl(ep: RawFd, fd: RawFd, add: bool) {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLET) as u32,
        u64: fd as u64,
    };
    let op = if add {
        libc::EPOLL_CTL_ADD
    } else {
        libc::EPOLL_CTL_DEL
    };
    // SAFETY: epoll_ctl with a live event struct; failures (already registered, gone) are
    // harmless here.
    unsafe {
        libc::epoll_ctl(ep, op, fd, &mut ev);
    }
}

/// Consumes pending readiness of `ep` without blocking.
pub fn epoll_drain(ep: RawFd) {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 8];
    // SAFETY: epoll_wait with timeout 0 into a live array of 8 events.
    unsafe {
        libc::epoll_wait(ep, evs.as_mut_ptr(), evs.len() as i32, 0);
    }
}

fn set_nonblock(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we hold.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
    }
}

fn signal_peer(fd: RawFd) {
    // SAFETY: fcntl(F_GETFL) on a descriptor we hold.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl >= 0 && fl & libc::O_NONBLOCK != 0 {
        ring::signal(fd);
    }
}

impl Conn {
    /// Builds the server side of a connection from what the client announced: maps every
    /// region, checks every ring (inside its region, aligned, cookie set, indices dense),
    /// resets the rings' indices and registers the receive rings' eventfds.
    pub fn server(
        regions: Vec<(u64, OwnedFd)>,
        rings: Vec<RingAnn>,
        max_len: u32,
        epolls: &[Arc<OwnedFd>],
        peer: String,
    ) -> Result<Conn, String> {
        let mut mapped = Vec::with_capacity(regions.len());
        for (i, (size, fd)) in regions.iter().enumerate() {
            mapped.push(Region::map(fd.as_fd(), *size).map_err(|e| format!("region {i}: {e}"))?);
        }
        let mut s2m: Vec<Option<RingAnn>> = Vec::new();
        let mut m2s: Vec<Option<RingAnn>> = Vec::new();
        for r in rings {
            let v = if r.s2m { &mut s2m } else { &mut m2s };
            let i = usize::from(r.index);
            if v.len() <= i {
                v.resize_with(i + 1, || None);
            }
            if v[i].is_some() {
                return Err(format!("ring {} announced twice", r.index));
            }
            v[i] = Some(r);
        }
        if s2m.is_empty() || m2s.is_empty() {
            return Err("a queue pair needs rings in both directions".into());
        }
        let mut rx = Vec::new();
        let mut tx = Vec::new();
        for (dir, v) in [("S2M", s2m), ("M2S", m2s)] {
            for (i, a) in v.into_iter().enumerate() {
                let a = a.ok_or_else(|| format!("{dir} ring {i} missing"))?;
                let region = mapped
                    .get(usize::from(a.region))
                    .ok_or_else(|| format!("{dir} ring {i}: no region {}", a.region))?;
                let ring = region
                    .ring(a.offset, a.log2)
                    .ok_or_else(|| format!("{dir} ring {i}: outside its region or misaligned"))?;
                if ring.cookie() != COOKIE {
                    return Err(format!("{dir} ring {i}: bad cookie {:#x}", ring.cookie()));
                }
                ring.set_head(0);
                ring.set_tail(0);
                set_nonblock(a.efd.as_raw_fd());
                if a.s2m {
                    ring.set_flags(0);
                    rx.push(Mutex::new(RxRing {
                        ring,
                        efd: a.efd,
                        cur: RxCursor::default(),
                        head: 0,
                        buf0: 0,
                        masked: false,
                        idle: 0,
                        idle_since: None,
                    }));
                } else {
                    tx.push(Mutex::new(TxRing {
                        ring,
                        efd: a.efd,
                        cur: TxCursor::default(),
                        buf0: 0,
                    }));
                }
            }
        }
        let sizes = mapped.iter().map(|r| r.len()).collect();
        Ok(Conn::finish(
            Side::Server,
            mapped,
            sizes,
            max_len,
            0,
            rx,
            tx,
            epolls,
            peer,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        side: Side,
        regions: Vec<Region>,
        sizes: Vec<usize>,
        max_len: u32,
        bsize: u32,
        rx: Vec<Mutex<RxRing>>,
        tx: Vec<Mutex<TxRing>>,
        epolls: &[Arc<OwnedFd>],
        peer: String,
    ) -> Conn {
        let n = epolls.len().max(1);
        let mut eps: Vec<(Arc<OwnedFd>, Vec<usize>)> =
            epolls.iter().map(|e| (e.clone(), Vec::new())).collect();
        for (r, ring) in rx.iter().enumerate() {
            if let Some((ep, list)) = eps.get_mut(r % n) {
                epoll_ctl(ep.as_raw_fd(), lock(ring).efd.as_raw_fd(), true);
                list.push(r);
            }
        }
        Conn {
            side,
            regions,
            sizes,
            max_len,
            bsize,
            rx,
            tx,
            epolls: eps,
            peer,
            broken: AtomicBool::new(false),
        }
    }

    /// Builds the client side on our own memory once the server said `CONNECTED`.
    pub fn client(mem: ClientMem, epolls: &[Arc<OwnedFd>], peer: String) -> Conn {
        let ClientMem {
            region,
            rings,
            bsize,
            ..
        } = mem;
        let mut rx = Vec::new();
        let mut tx = Vec::new();
        for (s2m, ring, efd, buf0) in rings {
            ring.set_head(0);
            ring.set_tail(0);
            if s2m {
                tx.push(Mutex::new(TxRing {
                    ring,
                    efd,
                    cur: TxCursor::default(),
                    buf0,
                }));
            } else {
                ring.set_flags(0);
                rx.push(Mutex::new(RxRing {
                    ring,
                    efd,
                    cur: RxCursor::default(),
                    head: 0,
                    buf0,
                    masked: false,
                    idle: 0,
                    idle_since: None,
                }));
            }
        }
        let sizes = vec![region.len()];
        let c = Conn::finish(
            Side::Client,
            vec![region],
            sizes,
            bsize,
            bsize,
            rx,
            tx,
            epolls,
            peer,
        );
        // Offer every M2S buffer to the server right away.
        for r in &c.rx {
            let mut g = lock(r);
            let RxRing {
                ring,
                cur,
                head,
                buf0,
                ..
            } = &mut *g;
            let b0 = *buf0;
            ring::client_refill(ring, cur, head, bsize, |s| b0 + u32::from(s) * bsize);
        }
        c
    }

    /// Whether a poll thread found the peer's ring indices corrupt.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// Number of queue pairs (receive rings).
    pub fn n_rx_rings(&self) -> usize {
        self.rx.len()
    }

    /// Receives from the rings of receive queue `q` (of `n_rxq`).
    pub fn rx(&self, q: usize, n_rxq: usize, pool: &mut Pool, batch: &mut Batch) -> Burst {
        let mut total = Burst::default();
        let mem = ring::Mem {
            regions: &self.regions,
            sizes: &self.sizes,
            max_len: self.max_len,
        };
        let mut r = q;
        while r < self.rx.len() && !batch.is_full() {
            let mut g = lock(&self.rx[r]);
            let st = &mut *g;
            let b = ring::rx_burst(self.side, &st.ring, &mem, &mut st.cur, pool, batch);
            if self.side == Side::Client {
                let (b0, bs) = (st.buf0, self.bsize);
                ring::client_refill(&st.ring, &st.cur, &mut st.head, bs, |s| {
                    b0 + u32::from(s) * bs
                });
            }
            if b.packets > 0 {
                st.idle = 0;
                st.idle_since = None;
                if !st.masked {
                    st.masked = true;
                    st.ring.set_flags(FLAG_MASK_INT);
                }
            } else {
                st.idle = st.idle.saturating_add(1);
                let long_idle = st.masked
                    && st.idle.is_multiple_of(IDLE_POLLS)
                    && match st.idle_since {
                        None => {
                            st.idle_since = Some(std::time::Instant::now());
                            false
                        }
                        Some(t) => t.elapsed() >= IDLE_UNMASK,
                    };
                if long_idle {
                    // Ask for interrupts, then make sure nothing slipped in before the peer
                    // could see the flag: the next poll re-reads the ring anyway.
                    st.masked = false;
                    st.ring.set_flags(0);
                    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
                }
                if !st.masked && st.idle.is_multiple_of(IDLE_POLLS) {
                    if let Some((ep, _)) = self.epolls.get(q) {
                        epoll_drain(ep.as_raw_fd());
                    }
                }
            }
            total.packets += b.packets;
            total.bytes += b.bytes;
            total.errors += b.errors;
            total.dropped += b.dropped;
            if b.broken {
                self.broken.store(true, Ordering::Relaxed);
            }
            r += n_rxq.max(1);
        }
        total
    }

    /// Transmits `batch` on transmit ring `k % n`.
    pub fn tx(&self, k: usize, pool: &mut Pool, batch: &mut Batch) -> Burst {
        let Some(m) = self.tx.get(k % self.tx.len().max(1)) else {
            let b = Burst {
                dropped: batch.len() as u64,
                ..Burst::default()
            };
            pool.free_batch(batch);
            return b;
        };
        let mem = ring::Mem {
            regions: &self.regions,
            sizes: &self.sizes,
            max_len: self.max_len,
        };
        let mut g = lock(m);
        let st = &mut *g;
        let (b0, bs) = (st.buf0, self.bsize);
        let off = move |s: u16| b0 + u32::from(s) * bs;
        let (b, kick) = ring::tx_burst(
            self.side,
            &st.ring,
            &mem,
            &mut st.cur,
            pool,
            batch,
            bs,
            &off,
        );
        if b.broken {
            self.broken.store(true, Ordering::Relaxed);
        }
        if kick {
            match self.side {
                Side::Server => signal_peer(st.efd.as_raw_fd()),
                // Our own eventfd (non-blocking by construction).
                Side::Client => ring::signal(st.efd.as_raw_fd()),
            }
        }
        b
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        for (ep, list) in &self.epolls {
            for &r in list {
                if let Some(m) = self.rx.get(r) {
                    epoll_ctl(ep.as_raw_fd(), lock(m).efd.as_raw_fd(), false);
                }
            }
        }
    }
}

/// The shared memory a client creates: one sealed memfd holding every ring and buffer.
pub struct ClientMem {
    pub fd: OwnedFd,
    pub size: u64,
    region: Region,
    /// (S2M?, ring, eventfd, offset of the ring's first buffer), S2M rings first.
    rings: Vec<(bool, Ring, OwnedFd, u32)>,
    pub log2: u8,
    bsize: u32,
    /// (S2M?, index, offset) of each ring, for `ADD_RING`.
    pub layout: Vec<(bool, u16, u32)>,
}

impl ClientMem {
    /// Lays out `nq` queue pairs of `2^log2` slots with `bsize`-byte buffers.
    pub fn create(nq: usize, log2: u8, bsize: u32) -> Result<ClientMem, String> {
        let slots = 1usize << log2;
        let ring_len = RING_HDR + slots * DESC_SIZE;
        let n_rings = 2 * nq;
        let buf_base = (n_rings * ring_len).next_multiple_of(64);
        let size = buf_base + n_rings * slots * bsize as usize;
        if size as u64 > ring::MAX_REGION_SIZE {
            return Err(format!("{size} bytes of shared memory is too much"));
        }
        let (region, fd) = Region::create(size as u64)?;
        let mut rings = Vec::new();
        let mut layout = Vec::new();
        for k in 0..n_rings {
            let s2m = k < nq;
            let index = (k % nq) as u16;
            let off = (k * ring_len) as u32;
            let ring = region.ring(off, log2).ok_or("ring layout")?;
            let buf0 = (buf_base + k * slots * bsize as usize) as u32;
            ring.set_cookie();
            ring.set_flags(0);
            ring.set_head(0);
            ring.set_tail(0);
            for s in 0..slots as u16 {
                ring.set_desc(
                    s,
                    &Desc {
                        flags: 0,
                        region: 0,
                        length: bsize,
                        offset: buf0 + u32::from(s) * bsize,
                    },
                );
            }
            let efd = eventfd().map_err(|e| format!("eventfd: {e}"))?;
            rings.push((s2m, ring, efd, buf0));
            layout.push((s2m, index, off));
        }
        Ok(ClientMem {
            fd,
            size: size as u64,
            region,
            rings,
            log2,
            bsize,
            layout,
        })
    }

    /// The eventfd of the `i`-th ring of the layout.
    pub fn efd(&self, i: usize) -> Option<RawFd> {
        self.rings.get(i).map(|r| r.2.as_raw_fd())
    }
}
