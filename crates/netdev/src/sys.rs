//! Thin, checked wrappers over the Linux calls that the kernel-backed ports share.
//!
//! ## What is here
//! * Interface look-ups through `ioctl` on any socket: index, flags, hardware address, MTU,
//!   bringing an interface administratively up.
//! * `setsockopt`/`getsockopt` of a plain value.
//! * [`LinkCache`]: carrier state and MTU read at most every [`LINK_REFRESH`], so that asking
//!   for the link state on every poll costs a clock read (vDSO, no syscall) and not an `ioctl`.
//! * [`os_error`]: the one place that turns an errno into a [`NetdevError`] naming the port, the
//!   interface and the call that failed, e.g. `system port 'veth9': no such interface`.
//!
//! ## Invariants
//! Every `unsafe` block here calls into libc with pointers to live, properly sized locals; the
//! kernel writes at most `size_of` the pointee. Nothing here keeps raw pointers.

use crate::{LinkState, NetdevError};
use std::cell::Cell;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// How stale a cached link state (and MTU) may get.
pub(crate) const LINK_REFRESH: Duration = Duration::from_millis(100);

/// Builds the error for a failed call on port `name` of kind `kind` (`"system"`, `"internal"`).
pub(crate) fn os_error(kind: &str, name: &str, call: &str, err: &io::Error) -> NetdevError {
    match err.raw_os_error() {
        Some(libc::ENODEV) | Some(libc::ENXIO) => {
            NetdevError::Os(format!("{kind} port '{name}': no such interface"))
        }
        _ => NetdevError::Os(format!("{kind} port '{name}': {call} failed: {err}")),
    }
}

/// The last errno as an `io::Error`.
#[inline]
pub(crate) fn last_err() -> io::Error {
    io::Error::last_os_error()
}

/// A zeroed `ifreq` carrying `name`, or `None` if the name is empty, has a NUL, or does not fit
/// `IFNAMSIZ - 1` bytes.
pub(crate) fn ifreq(name: &str) -> Option<libc::ifreq> {
    let b = name.as_bytes();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) {
        return None;
    }
    // SAFETY: `ifreq` is a plain C struct (arrays, integers, a union of such and one raw
    // pointer); all-zero bytes are a valid value for every field.
    let mut r: libc::ifreq = unsafe { mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    Some(r)
}

/// Checks an interface name the way the kernel will, with an error that names the port.
pub(crate) fn check_ifname(kind: &str, name: &str) -> Result<libc::ifreq, NetdevError> {
    ifreq(name).ok_or_else(|| {
        NetdevError::Os(format!(
            "{kind} port '{name}': not a valid interface name (1-{} bytes, no NUL)",
            libc::IFNAMSIZ - 1
        ))
    })
}

/// `ioctl(fd, req, &mut ifr)`.
fn ioctl_ifr(fd: RawFd, req: libc::c_ulong, ifr: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: every request used with this helper (SIOCGIF*, SIOCSIFFLAGS) reads and writes
    // at most one `struct ifreq`, and `ifr` is a live, exclusive one.
    let rc = unsafe { libc::ioctl(fd, req as _, ifr as *mut libc::ifreq) };
    if rc < 0 {
        Err(last_err())
    } else {
        Ok(())
    }
}

/// The interface index of `name`.
pub(crate) fn if_index(fd: RawFd, name: &str) -> io::Result<u32> {
    let mut r = ifreq(name).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    ioctl_ifr(fd, libc::SIOCGIFINDEX, &mut r)?;
    // SAFETY: SIOCGIFINDEX filled the `ifru_ifindex` member of the union.
    let idx = unsafe { r.ifr_ifru.ifru_ifindex };
    u32::try_from(idx).map_err(|_| io::Error::from_raw_os_error(libc::ENODEV))
}

/// The interface flags (`IFF_*`) of `name`.
pub(crate) fn if_flags(fd: RawFd, name: &str) -> io::Result<i32> {
    let mut r = ifreq(name).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    ioctl_ifr(fd, libc::SIOCGIFFLAGS, &mut r)?;
    // SAFETY: SIOCGIFFLAGS filled the `ifru_flags` member.
    let f = unsafe { r.ifr_ifru.ifru_flags };
    Ok(i32::from(f) & 0xffff)
}

/// Sets `IFF_UP` on `name` if it is not set yet.
pub(crate) fn if_up(fd: RawFd, name: &str) -> io::Result<()> {
    let flags = if_flags(fd, name)?;
    if flags & libc::IFF_UP != 0 {
        return Ok(());
    }
    let mut r = ifreq(name).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    r.ifr_ifru.ifru_flags = ((flags | libc::IFF_UP) & 0xffff) as u16 as libc::c_short;
    ioctl_ifr(fd, libc::SIOCSIFFLAGS, &mut r)
}

/// The Ethernet address of `name`.
pub(crate) fn if_hwaddr(fd: RawFd, name: &str) -> io::Result<[u8; 6]> {
    let mut r = ifreq(name).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    ioctl_ifr(fd, libc::SIOCGIFHWADDR, &mut r)?;
    // SAFETY: SIOCGIFHWADDR filled the `ifru_hwaddr` sockaddr member.
    let sa = unsafe { r.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (d, s) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *d = *s as u8;
    }
    Ok(mac)
}

/// The (primary) IPv4 address of `name`.
pub(crate) fn if_ipv4(fd: RawFd, name: &str) -> io::Result<std::net::Ipv4Addr> {
    let mut r = ifreq(name).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    ioctl_ifr(fd, libc::SIOCGIFADDR, &mut r)?;
    // SAFETY: SIOCGIFADDR filled the `ifru_addr` sockaddr member with an AF_INET address,
    // whose layout `sockaddr_in` is and which fits in `sockaddr`.
    let sin: libc::sockaddr_in = unsafe { std::mem::transmute_copy(&r.ifr_ifru.ifru_addr) };
    Ok(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
}

/// The IPv4 and IPv6 addresses of `name` with their prefix lengths (`getifaddrs(3)`),
/// link-local ones included; empty when there is no such device.
pub(crate) fn if_addresses(name: &str) -> Vec<(std::net::IpAddr, u8)> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we free below with freeifaddrs, once.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs made, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let n = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        if n.to_bytes() != name.as_bytes() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and its family says which sockaddr it is; the
        // netmask, when present, has the same family.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        let bits = |m: &[u8]| m.iter().map(|b| b.count_ones() as u8).sum::<u8>();
        match family {
            libc::AF_INET => {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let a = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                let plen = if ifa.ifa_netmask.is_null() {
                    32
                } else {
                    // SAFETY: as above, the mask of an AF_INET address is a sockaddr_in.
                    let m = unsafe { &*(ifa.ifa_netmask as *const libc::sockaddr_in) };
                    bits(&m.sin_addr.s_addr.to_ne_bytes())
                };
                let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                out.push((IpAddr::V4(ip), plen));
            }
            libc::AF_INET6 => {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let a = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                let plen = if ifa.ifa_netmask.is_null() {
                    128
                } else {
                    // SAFETY: as above, for sockaddr_in6.
                    let m = unsafe { &*(ifa.ifa_netmask as *const libc::sockaddr_in6) };
                    bits(&m.sin6_addr.s6_addr)
                };
                out.push((IpAddr::V6(Ipv6Addr::from(a.sin6_addr.s6_addr)), plen));
            }
            _ => {}
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once; no reference to it outlives this.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The MTU of `name`.
pub(crate) fn if_mtu(fd: RawFd, name: &str) -> io::Result<u32> {
    let mut r = ifreq(name).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    ioctl_ifr(fd, libc::SIOCGIFMTU, &mut r)?;
    // SAFETY: SIOCGIFMTU filled the `ifru_mtu` member.
    let m = unsafe { r.ifr_ifru.ifru_mtu };
    Ok(u32::try_from(m).unwrap_or(0))
}

/// `setsockopt(fd, level, opt, &val, sizeof val)`.
pub(crate) fn setsockopt<T>(fd: RawFd, level: i32, opt: i32, val: &T) -> io::Result<()> {
    // SAFETY: `val` points at a live `T` of exactly the length passed; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (val as *const T).cast(),
            mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(last_err())
    } else {
        Ok(())
    }
}

/// `getsockopt(fd, level, opt, &mut val, &mut len)` for a plain-old-data `T`.
pub(crate) fn getsockopt<T: Copy>(fd: RawFd, level: i32, opt: i32, init: T) -> io::Result<T> {
    let mut val = init;
    let mut len = mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `val` is a live `T` and `len` says exactly how many bytes the kernel may write;
    // callers only use `T`s (C structs of integers) for which any bytes are a valid value.
    let rc = unsafe { libc::getsockopt(fd, level, opt, (&mut val as *mut T).cast(), &mut len) };
    if rc < 0 {
        Err(last_err())
    } else {
        Ok(val)
    }
}

/// Opens an `AF_INET` datagram socket, good for interface `ioctl`s in the current namespace.
pub(crate) fn ctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; on success we own the returned descriptor.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last_err());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Carrier state and MTU of an interface, re-read at most every [`LINK_REFRESH`].
///
/// Lives in `Cell`s so that `Port::link_state(&self)` can refresh it; a port is used by one
/// thread at a time, so the non-`Sync` cells are fine (they are `Send`).
pub(crate) struct LinkCache {
    checked: Cell<Instant>,
    state: Cell<LinkState>,
    mtu: Cell<u32>,
}

impl LinkCache {
    /// Reads the state now.
    pub(crate) fn new(fd: RawFd, name: &str, mtu: u32) -> LinkCache {
        let c = LinkCache {
            checked: Cell::new(Instant::now()),
            state: Cell::new(LinkState::Down),
            mtu: Cell::new(mtu),
        };
        c.refresh(fd, name);
        c
    }

    fn refresh(&self, fd: RawFd, name: &str) {
        self.checked.set(Instant::now());
        let up = match if_flags(fd, name) {
            Ok(f) => f & libc::IFF_UP != 0 && f & libc::IFF_RUNNING != 0,
            Err(_) => false,
        };
        self.state
            .set(if up { LinkState::Up } else { LinkState::Down });
        if let Ok(m) = if_mtu(fd, name) {
            self.mtu.set(m);
        }
    }

    /// The link state, refreshed if the cached one is older than [`LINK_REFRESH`].
    pub(crate) fn state(&self, fd: &impl AsRawFd, name: &str) -> LinkState {
        if self.checked.get().elapsed() >= LINK_REFRESH {
            self.refresh(fd.as_raw_fd(), name);
        }
        self.state.get()
    }

    /// The MTU as of the last refresh.
    #[inline]
    pub(crate) fn mtu(&self) -> u32 {
        self.mtu.get()
    }
}
