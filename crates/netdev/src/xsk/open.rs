//! Setting up an [`Xsk`], in the order the kernel needs: the socket, the UMEM registered
//! with it, the four rings sized and mapped, the transmit budget, the frames handed out,
//! then the bind to the queue.

use super::{
    fail, Mmap, Ring, Xsk, XskConfig, XskError, BIND_RETRY, KERNEL_TX_BATCH, SNDBUF,
    XDP_MAX_TX_SKB_BUDGET,
};
use crate::sys;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The four mapped rings of one socket.
struct Rings {
    fill: Ring<u64>,
    comp: Ring<u64>,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
}

impl Xsk {
    /// Creates, maps and binds a socket as `cfg` says. Nothing is left behind on error.
    pub(crate) fn open(cfg: &XskConfig) -> Result<Xsk, XskError> {
        let ring = cfg.ring;
        let nframes = 2 * ring;
        let fd = xdp_socket()?;
        let s = fd.as_raw_fd();
        let umem = register_umem(s, nframes, cfg.frame_size)?;
        let Rings { fill, comp, rx, tx } = map_rings(s, ring)?;
        let tx_budget = raise_tx_limits(s, ring);
        let mut x = Xsk {
            fill,
            comp,
            rx,
            tx,
            umem,
            free: Vec::with_capacity(nframes as usize),
            frame_size: cfg.frame_size,
            tx_budget,
            zerocopy: cfg.zerocopy,
            need_wakeup: cfg.need_wakeup,
            tx_stuck: false,
            rx_packets: 0,
            fd,
        };
        x.hand_out_frames(ring, nframes);
        bind_queue(s, cfg)?;
        Ok(x)
    }

    /// The first `ring` frames go to the fill ring, the rest (up to `nframes`) wait for
    /// transmit.
    fn hand_out_frames(&mut self, ring: u32, nframes: u32) {
        let n = self.fill.free(ring).min(ring);
        for i in 0..n {
            self.fill.put(i, u64::from(i) * u64::from(self.frame_size));
        }
        self.fill.submit(n);
        for i in (n..nframes).rev() {
            self.free.push(u64::from(i) * u64::from(self.frame_size));
        }
    }
}

/// A new AF_XDP socket.
fn xdp_socket() -> Result<OwnedFd, XskError> {
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(fail("socket(AF_XDP)"));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Sets the `SOL_XDP` option `opt` of socket `s`; `call` names it in the error.
fn set_xdp_opt<T>(s: RawFd, opt: i32, v: &T, call: &'static str) -> Result<(), XskError> {
    sys::setsockopt(s, libc::SOL_XDP, opt, v).map_err(|err| XskError { call, err })
}

/// Maps the UMEM (`nframes` frames of `frame_size` bytes) and registers it with socket `s`.
fn register_umem(s: RawFd, nframes: u32, frame_size: u32) -> Result<Mmap, XskError> {
    let umem = Mmap::new(
        nframes as usize * frame_size as usize,
        None,
        0,
        "mmap(UMEM)",
    )?;
    // Best effort: a child forked later (the daemon running a helper) must not share
    // these pages copy-on-write; the kernel has them pinned for the socket.
    // SAFETY: advice on a mapping we own, with its exact bounds.
    unsafe {
        libc::madvise(umem.ptr.cast(), umem.len, libc::MADV_DONTFORK);
    }
    let reg = libc::xdp_umem_reg {
        addr: umem.ptr as u64,
        len: umem.len as u64,
        chunk_size: frame_size,
        headroom: 0,
        flags: 0,
        tx_metadata_len: 0,
    };
    set_xdp_opt(s, libc::XDP_UMEM_REG, &reg, "setsockopt(XDP_UMEM_REG)")?;
    Ok(umem)
}

/// Sizes the four rings of socket `s` to `ring` entries each and maps them.
fn map_rings(s: RawFd, ring: u32) -> Result<Rings, XskError> {
    set_xdp_opt(
        s,
        libc::XDP_UMEM_FILL_RING,
        &ring,
        "setsockopt(XDP_UMEM_FILL_RING)",
    )?;
    set_xdp_opt(
        s,
        libc::XDP_UMEM_COMPLETION_RING,
        &ring,
        "setsockopt(XDP_UMEM_COMPLETION_RING)",
    )?;
    set_xdp_opt(s, libc::XDP_RX_RING, &ring, "setsockopt(XDP_RX_RING)")?;
    set_xdp_opt(s, libc::XDP_TX_RING, &ring, "setsockopt(XDP_TX_RING)")?;
    let off = mmap_offsets(s)?;
    Ok(Rings {
        fill: Ring::map(
            s,
            libc::XDP_UMEM_PGOFF_FILL_RING as i64,
            ring,
            &off.fr,
            "mmap(fill ring)",
        )?,
        comp: Ring::map(
            s,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING as i64,
            ring,
            &off.cr,
            "mmap(completion ring)",
        )?,
        rx: Ring::map(s, libc::XDP_PGOFF_RX_RING, ring, &off.rx, "mmap(rx ring)")?,
        tx: Ring::map(s, libc::XDP_PGOFF_TX_RING, ring, &off.tx, "mmap(tx ring)")?,
    })
}

/// Where the kernel lays out the rings of socket `s` (Linux 5.4+: with the ring flags).
fn mmap_offsets(s: RawFd) -> Result<libc::xdp_mmap_offsets, XskError> {
    // SAFETY: plain integers; zero is valid.
    let mut off: libc::xdp_mmap_offsets = unsafe { mem::zeroed() };
    let mut len = mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: `off` is live and `len` is its exact size; the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(
            s,
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            (&mut off as *mut libc::xdp_mmap_offsets).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(fail("getsockopt(XDP_MMAP_OFFSETS)"));
    }
    if len as usize != mem::size_of::<libc::xdp_mmap_offsets>() {
        // A pre-5.4 kernel without ring flags (no need-wakeup): not supported.
        return Err(XskError {
            call: "getsockopt(XDP_MMAP_OFFSETS) (kernel lacks ring flags, needs Linux 5.4+)",
            err: io::Error::from_raw_os_error(libc::EOPNOTSUPP),
        });
    }
    Ok(off)
}

/// Raises copy-mode transmit's per-call budget to the ring size and the send buffer;
/// returns the budget in force. Best effort, both: older kernels keep a 32-descriptor
/// budget, and a send buffer capped at wmem_max (without CAP_NET_ADMIN) just means earlier
/// EAGAINs.
fn raise_tx_limits(s: RawFd, ring: u32) -> u32 {
    let tx_budget = if set_xdp_opt(s, XDP_MAX_TX_SKB_BUDGET, &ring, "").is_ok() {
        ring
    } else {
        KERNEL_TX_BATCH
    };
    if sys::setsockopt(s, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &SNDBUF).is_err() {
        let _ = sys::setsockopt(s, libc::SOL_SOCKET, libc::SO_SNDBUF, &SNDBUF);
    }
    tx_budget
}

/// Binds socket `s` to `cfg`'s interface and queue, in its mode.
fn bind_queue(s: RawFd, cfg: &XskConfig) -> Result<(), XskError> {
    // SAFETY: plain integers; zero is valid.
    let mut sa: libc::sockaddr_xdp = unsafe { mem::zeroed() };
    sa.sxdp_family = libc::AF_XDP as u16;
    sa.sxdp_ifindex = cfg.ifindex;
    sa.sxdp_queue_id = cfg.queue;
    sa.sxdp_flags = if cfg.zerocopy {
        libc::XDP_ZEROCOPY
    } else {
        libc::XDP_COPY
    };
    if cfg.need_wakeup {
        sa.sxdp_flags |= libc::XDP_USE_NEED_WAKEUP;
    }
    // A socket just closed on this queue (ours, at a quick re-open, or a killed process's)
    // releases the queue from a kernel work item, a little later: until then bind says
    // EBUSY. Wait for it, up to BIND_RETRY.
    let t0 = std::time::Instant::now();
    let rc = loop {
        // SAFETY: `sa` is a live sockaddr_xdp and the length passed is its size.
        let rc = unsafe {
            libc::bind(
                s,
                (&sa as *const libc::sockaddr_xdp).cast(),
                mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc == 0
            || io::Error::last_os_error().raw_os_error() != Some(libc::EBUSY)
            || t0.elapsed() >= BIND_RETRY
        {
            break rc;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    if rc < 0 {
        return Err(fail(if cfg.zerocopy {
            "bind(XDP_ZEROCOPY)"
        } else {
            "bind(XDP_COPY)"
        }));
    }
    Ok(())
}
