//! The `internal` port: a TAP device, the host network stack's own port on a bridge.
//!
//! ## What
//! Opening the port opens `/dev/net/tun` and attaches it, with `TUNSETIFF`, to the TAP device
//! named like the port (`IFF_TAP | IFF_NO_PI`: plain Ethernet frames, no packet-info prefix),
//! creating the device if it does not exist. A bridge's own internal port is named after the
//! bridge. The device is brought administratively up. It is not made persistent, so the kernel
//! removes a device we created as soon as the descriptor is closed ([`Port::close`] or drop);
//! a pre-existing persistent TAP device is only detached.
//!
//! ## How
//! The descriptor is non-blocking. `rx_batch` reads one frame per `read` straight into a pool
//! buffer until `EAGAIN` or the batch is full; `tx_batch` writes one frame per `write`, and a
//! full device queue (`EAGAIN`) drops and counts in `tx_dropped`. That is a system call per
//! packet — the price of the plain TAP interface; the host stack's port is rarely the hot one.
//! No virtio-net header is used: without `IFF_VNET_HDR` the device offers no checksum or
//! segmentation offload to the host stack, so everything it sends is already complete.
//!
//! An idle device still costs a `read` that returns `EAGAIN`, and a poll thread that forwards
//! other ports' traffic would pay it on every loop (a third of a core in W3). So an empty read
//! makes the handle skip its next 1, 3, 7, ... up to [`MAX_IDLE_SKIP`] receive calls, and any
//! frame read starts over at zero: a busy host stack is read on every call, an idle one about
//! once per 64 loops (tens of microseconds when the thread is busy). A thread with nothing to
//! do sleeps in `poll(2)` on [`Port::rxq_fd`], so an idle switch still wakes on the first frame.
//!
//! ## Invariants
//! Frames longer than a pool buffer are counted in `rx_errors` (the device reports the full
//! length even when it had to truncate). Link state is `IFF_UP && IFF_RUNNING`, cached for up to
//! 100 ms like the `system` port's.

use crate::sys::{self, LinkCache};
use crate::{check_options, LinkState, NetdevError, Options, Port, PortStats, RxqState};
use packet::{Batch, Pool, MAX_FRAME};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const KIND: &str = "internal";

/// The most receive calls an idle handle skips between two reads (see the module essay).
pub const MAX_IDLE_SKIP: u32 = 63;

/// See the module documentation.
pub struct TapPort {
    name: String,
    ifindex: u32,
    mac: [u8; 6],
    tap: Option<OwnedFd>,
    ctl: OwnedFd,
    link: LinkCache,
    stats: PortStats,
    /// Whether this handle receives (the port's one queue; see `take_rxq`).
    rx: bool,
    /// Receive calls left to skip, and the length of the current skip run (idle back-off).
    skip: u32,
    skip_run: u32,
}

/// The TAP port's receive queue in transit: every handle holds a duplicate of the same
/// descriptor, so only the right to read moves.
struct TapRxq;

impl TapPort {
    /// Opens (creating if needed) TAP device `name`. No options.
    pub fn open(name: &str, opts: &Options) -> Result<TapPort, NetdevError> {
        check_options(KIND, opts, &[])?;
        let mut ifr = sys::check_ifname(KIND, name)?;
        let err = |call: &str, e: std::io::Error| sys::os_error(KIND, name, call, &e);

        // SAFETY: open(2) of a NUL-terminated constant path.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(err("open(/dev/net/tun)", sys::last_err()));
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let tap = unsafe { OwnedFd::from_raw_fd(raw) };
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`; `ifr` is live and exclusive.
        let rc = unsafe { libc::ioctl(tap.as_raw_fd(), libc::TUNSETIFF as _, &mut ifr) };
        if rc < 0 {
            let e = sys::last_err();
            return Err(NetdevError::Os(format!(
                "{KIND} port '{name}': TUNSETIFF failed: {e} (is '{name}' an existing non-TAP \
                 interface?)"
            )));
        }
        let ctl = sys::ctl_socket().map_err(|e| err("socket(AF_INET)", e))?;
        let c = ctl.as_raw_fd();
        sys::if_up(c, name).map_err(|e| err("SIOCSIFFLAGS(IFF_UP)", e))?;
        let ifindex = sys::if_index(c, name).map_err(|e| err("SIOCGIFINDEX", e))?;
        let mac = sys::if_hwaddr(c, name).map_err(|e| err("SIOCGIFHWADDR", e))?;
        let mtu = sys::if_mtu(c, name).map_err(|e| err("SIOCGIFMTU", e))?;
        let link = LinkCache::new(c, name, mtu);
        Ok(TapPort {
            name: name.to_string(),
            ifindex,
            mac,
            tap: Some(tap),
            ctl,
            link,
            stats: PortStats::default(),
            rx: true,
            skip: 0,
            skip_run: 0,
        })
    }
}

impl Port for TapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let Some(tap) = &self.tap else { return 0 };
        if !self.rx {
            return 0;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return 0;
        }
        let fd = tap.as_raw_fd();
        let mut n = 0;
        let mut drained = false;
        while !batch.is_full() {
            let Some(mut pkt) = pool.alloc() else { break };
            let Some(buf) = pkt.reset_for_rx(MAX_FRAME) else {
                pool.free(pkt);
                break;
            };
            // SAFETY: `buf` is a live, exclusive MAX_FRAME-byte buffer; read(2) writes at most
            // that many bytes into it.
            let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if r <= 0 {
                pool.free(pkt);
                if r < 0 && sys::last_err().raw_os_error() != Some(libc::EAGAIN) {
                    self.stats.rx_errors += 1;
                }
                drained = true;
                break;
            }
            let len = r as usize;
            if len > MAX_FRAME {
                self.stats.rx_errors += 1;
                pool.free(pkt);
                continue;
            }
            pkt.truncate(len);
            self.stats.rx_packets += 1;
            self.stats.rx_bytes += len as u64;
            if let Err(p) = batch.push(pkt) {
                pool.free(p);
                break;
            }
            n += 1;
        }
        if n == 0 && drained {
            self.skip_run = (self.skip_run * 2 + 1).min(MAX_IDLE_SKIP);
            self.skip = self.skip_run;
        } else {
            self.skip_run = 0;
        }
        n
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let Some(tap) = &self.tap else {
            self.stats.tx_dropped += batch.len() as u64;
            pool.free_batch(batch);
            return;
        };
        let fd = tap.as_raw_fd();
        for pkt in batch.drain() {
            let data = pkt.data();
            // SAFETY: write(2) reads `data.len()` bytes from a live slice.
            let r = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
            if r < 0 {
                match sys::last_err().raw_os_error() {
                    Some(libc::EAGAIN) => self.stats.tx_dropped += 1,
                    _ => self.stats.tx_errors += 1,
                }
            } else {
                self.stats.tx_packets += 1;
                self.stats.tx_bytes += data.len() as u64;
            }
            pool.free(pkt);
        }
    }

    fn rxq_fd(&self, q: usize) -> Option<std::os::fd::RawFd> {
        match &self.tap {
            Some(t) if q == 0 && self.rx => Some(t.as_raw_fd()),
            _ => None,
        }
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        // Each write(2) to a TAP descriptor is one whole frame, so handles on duplicates of
        // one descriptor never interleave.
        let tap = self.tap.as_ref()?.try_clone().ok()?;
        let ctl = self.ctl.try_clone().ok()?;
        let link = LinkCache::new(ctl.as_raw_fd(), &self.name, self.link.mtu());
        Some(Box::new(TapPort {
            name: self.name.clone(),
            ifindex: self.ifindex,
            mac: self.mac,
            tap: Some(tap),
            ctl,
            link,
            stats: PortStats::default(),
            rx: false,
            skip: 0,
            skip_run: 0,
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        if q != 0 || !self.rx {
            return None;
        }
        self.rx = false;
        Some(Box::new(TapRxq))
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        if q != 0 || self.rx || !s.is::<TapRxq>() {
            return Err(s);
        }
        self.rx = true;
        Ok(())
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn link_state(&self) -> LinkState {
        if self.tap.is_none() {
            return LinkState::Down;
        }
        self.link.state(&self.ctl, &self.name)
    }

    fn mac(&self) -> Option<[u8; 6]> {
        Some(self.mac)
    }

    fn ifindex(&self) -> Option<u32> {
        Some(self.ifindex)
    }

    fn close(&mut self) {
        // Closing the last descriptor removes a non-persistent device.
        self.tap = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_names_are_checked() {
        let mut o = Options::new();
        o.insert("mtu".into(), "9000".into());
        let e = TapPort::open("t0", &o).err().expect("error");
        assert_eq!(
            e.to_string(),
            "unknown option 'mtu' for port type 'internal'"
        );
        let e = TapPort::open("", &Options::new()).err().expect("error");
        assert!(e.to_string().contains("not a valid interface name"), "{e}");
    }
}
