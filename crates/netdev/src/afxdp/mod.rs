//! The `afxdp` port: any Linux interface through AF_XDP sockets, set up with raw system calls
//! (no libbpf, no C toolchain).
//!
//! ## What
//! Opening the port
//! 1. removes a stale ferrovs XDP program left on the interface by a process that died (see
//!    *Stale programs*), and refuses to touch anyone else's program;
//! 2. for each of `n_rxq` receive queues, creates an AF_XDP socket with its own UMEM and rings
//!    ([`crate::xsk`]) and binds it to that queue;
//! 3. creates an XSKMAP holding those sockets and loads the six-instruction redirect program
//!    ([`crate::bpf`]) that sends each frame to its queue's socket, or to the kernel stack
//!    (`XDP_PASS`) if that queue has none;
//! 4. attaches the program to the interface with `RTM_SETLINK`/`IFLA_XDP` ([`crate::rtnl`]).
//!
//! `rx_batch` polls the queues in turn (starting where the last call stopped, so one busy
//! queue cannot starve the others) and copies each frame into a pool buffer; `tx_batch` copies
//! frames into free UMEM frames of the first socket this handle receives on. Neither allocates
//! or makes a system call per packet; see [`crate::xsk`] for the ring protocol and when the
//! kernel is kicked.
//!
//! ## Several poll threads
//! Each queue is a receive queue of its own ([`Port::n_rxq`]), so the queues of one port can
//! be polled by different threads. The sockets are shared by every handle of the port
//! ([`Port::share`]), each behind a mutex: a handle receives only on the queues it holds and
//! transmits on the first of them, so when every thread holds a queue of the port no lock is
//! ever contended. A thread holding none transmits through one socket chosen for it and
//! takes turns with that socket's holder (as a switch must when a port has fewer queues
//! than there are threads).
//!
//! ## Options (named as Open vSwitch names them)
//! * `xdp-mode=best-effort|native-with-zerocopy|native|generic` (default `best-effort`).
//!   *native-with-zerocopy*: the program runs in the driver and frames land directly in our
//!   UMEM (`XDP_ZEROCOPY` bind; needs driver support). *native*: driver XDP, but the kernel
//!   copies frames into the UMEM (`XDP_COPY`). *generic*: XDP run by the core stack on socket
//!   buffers, for any driver, slowest. *best-effort* tries those three in that order and keeps
//!   the first that works; [`AfxdpPort::xdp_mode`] says which.
//! * `n_rxq=N` (1..=64, default 1): queues 0..N-1 each get a socket. Frames arriving on other
//!   queues go to the kernel stack, so N should cover the interface's queues (or the
//!   interface's RSS should be limited to N).
//! * `use-need-wakeup=true|false` (default true): `XDP_USE_NEED_WAKEUP`, kick the kernel only
//!   when it asks.
//! * `ring-size=N` (power of two, 64..=16384, default 2048): entries of each ring; each queue's
//!   UMEM has 2N frames (N for receive, N for transmit) of 2 KiB (4 KiB when the MTU is above
//!   1774): 8 MiB per queue by default.
//!
//! ## Stale programs
//! An XDP program attached through netlink is not tied to any descriptor: if the switch dies
//! without detaching it, it stays on the interface (harmless, since its sockets are gone and
//! every frame falls back to `XDP_PASS`, but it blocks a new attach). Every program this module
//! loads is named `ferrovs_xsk` and its XSKMAP is named `ferrovs_<pid>` after the process that
//! created it. A ferrovs program is *stale* when that process no longer exists, or when it is
//! this very process but no open port of ours owns it (a port that was leaked, or a daemon
//! restarted as the same pid in a container). Stale programs are detached (with
//! `XDP_FLAGS_REPLACE` and the program as `IFLA_XDP_EXPECTED_FD`, so a program someone attached
//! meanwhile is left alone) and then ours is attached with `XDP_FLAGS_UPDATE_IF_NOEXIST`.
//! Detach-then-attach rather than an atomic replace, because the stale program may be in the
//! other mode (native vs generic), which the kernel will not replace in one step; the gap
//! changes nothing since the stale program already passes everything to the stack. A program
//! of a live ferrovs process, or a foreign program, is never touched: opening fails with an
//! error saying whose it is. [`remove_stale`] does the clean-up alone, for the daemon to call at
//! start-up. (The liveness test is `kill(pid, 0)`, so a program left by a daemon in another
//! PID namespace looks live if a process with that number exists here.)
//!
//! ## Statistics
//! `rx_dropped` adds the kernel's per-socket counters (`XDP_STATISTICS`): `rx_dropped` (no
//! fill frame in copy mode, frame too long), `rx_ring_full`, and — in zero-copy mode only,
//! where the driver does not count them as `rx_dropped` already — `rx_fill_ring_empty_descs`.
//! `tx_errors` adds `tx_invalid_descs`. `tx_dropped` counts frames dropped because the tx ring
//! or the free UMEM frames ran out; transmit never blocks.
//!
//! ## Checksums
//! XDP sees frames as the wire (or the peer's transmit path) delivered them. On a veth whose
//! peer has transmit checksum offload on, the host stack's TCP/UDP packets arrive with
//! `CHECKSUM_PARTIAL`, i.e. the L4 checksum field holds only the pseudo-header sum; neither
//! native nor generic XDP completes it before the program runs, and AF_XDP has no metadata to
//! say so. Such frames reach us with partial checksums (see `tests/afxdp.rs`,
//! `partial_checksums_from_a_veth_peer`). Turn the peer's `tx-checksumming` off, or use the
//! `system` port, where the kernel's virtio-net header tells us what to complete.
//!
//! ## Invariants
//! * Everything created is owned by a value whose `Drop` undoes it: the attachment detaches
//!   our program (only ours), sockets are closed, mappings unmapped. A failed open leaves
//!   nothing behind; `close()` and drop both clean up.
//! * A port is used by one thread at a time (`&mut self`); it is `Send`.
//!
//! ## Files
//! This file holds the options, the port's state and the error texts; `stale` finds and clears
//! programs left behind, `open` sets a port up, `port` implements the port.

use crate::bpf;
use crate::rtnl::{
    NlError, Rtnl, XdpState, XDP_FLAGS_DRV_MODE, XDP_FLAGS_REPLACE, XDP_FLAGS_SKB_MODE,
    XDP_FLAGS_UPDATE_IF_NOEXIST,
};
use crate::sys::{self, LinkCache};
use crate::xsk::{Xsk, XskConfig, XskError, XDP_PACKET_HEADROOM};
use crate::{
    check_options, parse_bool, LinkState, NetdevError, Options, Port, PortStats, RxqState,
};
use packet::{Batch, Pool};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

mod open;
mod port;
mod stale;
pub use self::stale::*;

const KIND: &str = "afxdp";
/// Default entries per ring.
pub const RING_SIZE: u32 = 2048;
/// Most receive queues a port may use.
pub const MAX_RXQ: u32 = 64;

/// Which XDP attachment and socket mode a port uses (or asks for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// Try the three below in order.
    BestEffort,
    /// Driver XDP and zero-copy sockets.
    NativeWithZerocopy,
    /// Driver XDP, copy-mode sockets.
    Native,
    /// Generic (SKB) XDP, copy-mode sockets.
    Generic,
}

impl XdpMode {
    /// The option value naming this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            XdpMode::BestEffort => "best-effort",
            XdpMode::NativeWithZerocopy => "native-with-zerocopy",
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        }
    }

    fn parse(v: &str) -> Option<XdpMode> {
        [
            XdpMode::BestEffort,
            XdpMode::NativeWithZerocopy,
            XdpMode::Native,
            XdpMode::Generic,
        ]
        .into_iter()
        .find(|m| m.as_str() == v)
    }

    fn attach_flags(self) -> u32 {
        match self {
            XdpMode::Generic => XDP_FLAGS_SKB_MODE,
            _ => XDP_FLAGS_DRV_MODE,
        }
    }
}

impl fmt::Display for XdpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Program ids attached by open ports of this process (to tell our live programs from stale
/// ones carrying our pid).
static LIVE_PROGS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn live_progs() -> std::sync::MutexGuard<'static, Vec<u32>> {
    LIVE_PROGS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The symbolic name of an errno, for error messages.
fn errno_name(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::EBUSY) => "EBUSY",
        Some(libc::EEXIST) => "EEXIST",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::ENODEV) => "ENODEV",
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::ERANGE) => "ERANGE",
        Some(libc::ENOSPC) => "ENOSPC",
        Some(libc::EAFNOSUPPORT) => "EAFNOSUPPORT",
        Some(libc::ENOPROTOOPT) => "ENOPROTOOPT",
        Some(libc::EFAULT) => "EFAULT",
        Some(libc::ENOBUFS) => "ENOBUFS",
        Some(libc::E2BIG) => "E2BIG",
        _ => "errno",
    }
}

/// `what (ENAME)` or, with a kernel explanation, `explanation (ENAME)`.
fn describe(e: &io::Error, msg: Option<&str>) -> String {
    let text = match msg {
        Some(m) => m.to_string(),
        None => {
            // Drop io::Error's " (os error N)" suffix; the symbolic name says it better.
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    };
    format!("{text} ({})", errno_name(e))
}

fn port_err(name: &str, what: String) -> NetdevError {
    NetdevError::Os(format!("{KIND} port '{name}': {what}"))
}

/// Our program attached to an interface; detached (if still ours) on drop.
struct Attachment {
    rtnl: Rtnl,
    ifindex: u32,
    flags: u32,
    prog_id: u32,
    prog: OwnedFd,
    _map: OwnedFd,
}

impl Attachment {
    fn detach(&mut self) {
        // Only if the attached program is still ours (XDP_FLAGS_REPLACE + expected fd). An
        // error here (interface gone, program replaced) leaves nothing of ours to clean.
        let _ = self.rtnl.set_xdp(
            self.ifindex,
            -1,
            self.flags | XDP_FLAGS_REPLACE,
            Some(self.prog.as_raw_fd()),
        );
        live_progs().retain(|p| *p != self.prog_id);
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.detach();
    }
}

/// Everything one mode attempt created: sockets first, then the attachment. Field order is
/// drop order: the program is detached before the sockets close.
struct Setup {
    attach: Attachment,
    queues: Vec<Xsk>,
}

/// Parsed options.
#[derive(Clone, Copy)]
struct Config {
    mode: XdpMode,
    n_rxq: u32,
    need_wakeup: bool,
    ring: u32,
}

fn parse_options(opts: &Options) -> Result<Config, NetdevError> {
    check_options(
        KIND,
        opts,
        &["xdp-mode", "n_rxq", "use-need-wakeup", "ring-size"],
    )?;
    let bad = |key: &str, why: String| NetdevError::BadOption {
        key: key.to_string(),
        why,
    };
    let mode = match opts.get("xdp-mode") {
        None => XdpMode::BestEffort,
        Some(v) => XdpMode::parse(v).ok_or_else(|| {
            bad(
                "xdp-mode",
                format!("'{v}' is not one of best-effort, native-with-zerocopy, native, generic"),
            )
        })?,
    };
    let n_rxq = match opts.get("n_rxq") {
        None => 1,
        Some(v) => match v.parse::<u32>() {
            Ok(n) if (1..=MAX_RXQ).contains(&n) => n,
            _ => {
                return Err(bad(
                    "n_rxq",
                    format!("'{v}' is not a number in 1..={MAX_RXQ}"),
                ))
            }
        },
    };
    let need_wakeup = match opts.get("use-need-wakeup") {
        None => true,
        Some(v) => parse_bool("use-need-wakeup", v)?,
    };
    let ring = match opts.get("ring-size") {
        None => RING_SIZE,
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n.is_power_of_two() && (64..=16384).contains(&n) => n,
            _ => {
                return Err(bad(
                    "ring-size",
                    format!("'{v}' is not a power of two in 64..=16384"),
                ))
            }
        },
    };
    Ok(Config {
        mode,
        n_rxq,
        need_wakeup,
        ring,
    })
}

/// See the module documentation.
pub struct AfxdpPort {
    name: String,
    ifindex: u32,
    mac: [u8; 6],
    mode: XdpMode,
    cfg: Config,
    /// The attached program: only on the handle `open` returned, detached (field order)
    /// before this handle lets go of its sockets.
    attach: Option<Attachment>,
    /// One socket per receive queue, shared by every handle of the port (see `share`). A
    /// socket's receive side is used only by the handle holding the queue (`held`); its
    /// transmit side by that handle, or by a handle holding no queue of this port. The lock
    /// is uncontended when every poll thread holds a queue of the port.
    queues: Vec<Arc<Mutex<Xsk>>>,
    fds: Vec<RawFd>,
    held: Vec<bool>,
    /// The queue a handle holding none transmits on.
    tx_q: usize,
    ctl: OwnedFd,
    link: LinkCache,
    stats: PortStats,
    /// The queue `rx_batch` starts with next.
    next_rxq: usize,
}

/// A receive queue of an `afxdp` port in transit between handles: the socket stays shared,
/// only the right to receive on it moves.
struct AfxdpRxq;

fn lock_q(q: &Mutex<Xsk>) -> std::sync::MutexGuard<'_, Xsk> {
    q.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> Options {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_are_checked() {
        let e = AfxdpPort::open("lo", &opts(&[("bogus", "1")]))
            .err()
            .expect("error");
        assert_eq!(
            e.to_string(),
            "unknown option 'bogus' for port type 'afxdp'"
        );
        let e = AfxdpPort::open("lo", &opts(&[("xdp-mode", "fast")]))
            .err()
            .expect("error");
        assert!(e.to_string().contains("xdp-mode"), "{e}");
        let e = AfxdpPort::open("lo", &opts(&[("n_rxq", "0")]))
            .err()
            .expect("error");
        assert!(e.to_string().contains("n_rxq"), "{e}");
        let e = AfxdpPort::open("lo", &opts(&[("ring-size", "1000")]))
            .err()
            .expect("error");
        assert!(e.to_string().contains("ring-size"), "{e}");
        let c = parse_options(&opts(&[
            ("xdp-mode", "generic"),
            ("n_rxq", "4"),
            ("use-need-wakeup", "false"),
        ]))
        .expect("valid");
        assert_eq!(c.mode, XdpMode::Generic);
        assert_eq!(c.n_rxq, 4);
        assert!(!c.need_wakeup);
        assert_eq!(c.ring, RING_SIZE);
    }

    #[test]
    fn errors_read_well() {
        let e = io::Error::from_raw_os_error(libc::EOPNOTSUPP);
        assert_eq!(
            describe(&e, Some("native XDP not supported by driver")),
            "native XDP not supported by driver (EOPNOTSUPP)"
        );
        assert_eq!(describe(&e, None), "Operation not supported (EOPNOTSUPP)");
    }
}
