//! A minimal rtnetlink client: just enough to attach, detach and inspect an interface's XDP
//! program (`RTM_SETLINK` / `RTM_GETLINK` with the nested `IFLA_XDP` attribute).
//!
//! ## How
//! One `NETLINK_ROUTE` socket per [`Rtnl`], opened in the network namespace of the calling
//! thread and kept for the life of whatever it manages (so a detach at close time talks to the
//! namespace the program was attached in, whichever thread closes the port). Requests are
//! built into a small `Vec` by [`Msg`] (a header, the fixed `ifinfomsg`, attributes padded to
//! 4 bytes, nests closed by patching their length); this only happens when a port is opened or
//! closed, never on the data path. Every request asks for an acknowledgement and waits for the
//! reply with the same sequence number; the socket has a receive timeout so a lost reply costs
//! an error, not a hang.
//!
//! Extended acknowledgements (`NETLINK_EXT_ACK`) are switched on, so a refusal comes with the
//! kernel's own explanation ("native and generic XDP can't be active at the same time", "XDP
//! program already attached", ...), which [`NlError`] carries into the port's error message.
//!
//! ## Attaching
//! [`Rtnl::set_xdp`] passes `IFLA_XDP_FD` (a program, or -1 to detach), `IFLA_XDP_FLAGS` (mode
//! and `XDP_FLAGS_UPDATE_IF_NOEXIST`/`XDP_FLAGS_REPLACE`) and, with `XDP_FLAGS_REPLACE`,
//! `IFLA_XDP_EXPECTED_FD`: the kernel then acts only if the program currently attached in that
//! mode is the expected one, which is how we detach *our* program and nobody else's.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const NETLINK_ROUTE: i32 = 0;
const NETLINK_CAP_ACK: i32 = 10;
const NETLINK_EXT_ACK: i32 = 11;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_SETLINK: u16 = 19;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;
const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;
const IFLA_EXT_MASK: u16 = 29;
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;
const IFLA_XDP: u16 = 43;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_FLAGS: u16 = 3;
const IFLA_XDP_DRV_PROG_ID: u16 = 5;
const IFLA_XDP_SKB_PROG_ID: u16 = 6;
const IFLA_XDP_HW_PROG_ID: u16 = 7;
const IFLA_XDP_EXPECTED_FD: u16 = 8;

/// Attach only if no program is attached in that mode.
pub(crate) const XDP_FLAGS_UPDATE_IF_NOEXIST: u32 = 1;
/// Generic ("SKB") mode: XDP run by the core network stack, any driver.
pub(crate) const XDP_FLAGS_SKB_MODE: u32 = 2;
/// Native ("driver") mode.
pub(crate) const XDP_FLAGS_DRV_MODE: u32 = 4;
/// Replace (or detach) only the program given by `IFLA_XDP_EXPECTED_FD`.
pub(crate) const XDP_FLAGS_REPLACE: u32 = 16;

const HDR: usize = 16; // struct nlmsghdr
const IFINFO: usize = 16; // struct ifinfomsg

/// A refused request: the errno and the kernel's extended-ack message, if any.
#[derive(Debug)]
pub(crate) struct NlError {
    pub(crate) err: io::Error,
    pub(crate) msg: Option<String>,
}

impl From<io::Error> for NlError {
    fn from(err: io::Error) -> NlError {
        NlError { err, msg: None }
    }
}

/// The programs attached to an interface, by mode (0 = none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct XdpState {
    pub(crate) drv: u32,
    pub(crate) skb: u32,
    pub(crate) hw: u32,
}

/// A netlink request under construction.
struct Msg {
    b: Vec<u8>,
}

impl Msg {
    /// A request of type `ty` about interface `ifindex`.
    fn new(ty: u16, flags: u16, seq: u32, ifindex: u32) -> Msg {
        let mut b = Vec::with_capacity(128);
        b.extend_from_slice(&0u32.to_ne_bytes()); // length, patched in `finish`
        b.extend_from_slice(&ty.to_ne_bytes());
        b.extend_from_slice(&flags.to_ne_bytes());
        b.extend_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
                                                  // struct ifinfomsg: family, pad, type, index, flags, change.
        b.extend_from_slice(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
        b.extend_from_slice(&(ifindex as i32).to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        Msg { b }
    }

    fn pad(&mut self) {
        while !self.b.len().is_multiple_of(4) {
            self.b.push(0);
        }
    }

    fn attr(&mut self, ty: u16, data: &[u8]) {
        let len = (4 + data.len()) as u16;
        self.b.extend_from_slice(&len.to_ne_bytes());
        self.b.extend_from_slice(&ty.to_ne_bytes());
        self.b.extend_from_slice(data);
        self.pad();
    }

    /// Opens a nested attribute; returns where its header is, for [`Msg::end_nest`].
    fn begin_nest(&mut self, ty: u16) -> usize {
        let at = self.b.len();
        self.b.extend_from_slice(&0u16.to_ne_bytes());
        self.b.extend_from_slice(&(ty | NLA_F_NESTED).to_ne_bytes());
        at
    }

    fn end_nest(&mut self, at: usize) {
        let len = (self.b.len() - at) as u16;
        self.b[at..at + 2].copy_from_slice(&len.to_ne_bytes());
    }

    fn finish(mut self) -> Vec<u8> {
        let len = self.b.len() as u32;
        self.b[0..4].copy_from_slice(&len.to_ne_bytes());
        self.b
    }
}

#[inline]
fn rd_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

#[inline]
fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Iterates over the netlink attributes packed in `b`: (type without flags, payload).
fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut off = 0usize;
    std::iter::from_fn(move || {
        let len = rd_u16(b, off)? as usize;
        let ty = rd_u16(b, off + 2)?;
        if len < 4 {
            return None;
        }
        let data = b.get(off + 4..off + len)?;
        off += (len + 3) & !3;
        Some((ty & NLA_TYPE_MASK, data))
    })
}

/// A `NETLINK_ROUTE` socket.
pub(crate) struct Rtnl {
    fd: OwnedFd,
    seq: u32,
}

impl Rtnl {
    /// Opens a socket in the calling thread's network namespace.
    pub(crate) fn open() -> io::Result<Rtnl> {
        // SAFETY: plain socket(2) call.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_ROUTE,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        // Both best effort: without them errors are just less talkative.
        let _ = crate::sys::setsockopt(fd.as_raw_fd(), libc::SOL_NETLINK, NETLINK_EXT_ACK, &one);
        let _ = crate::sys::setsockopt(fd.as_raw_fd(), libc::SOL_NETLINK, NETLINK_CAP_ACK, &one);
        let tv = libc::timeval {
            tv_sec: 5,
            tv_usec: 0,
        };
        crate::sys::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)?;
        Ok(Rtnl { fd, seq: 1 })
    }

    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        // SAFETY: sockaddr_nl is plain integers; zero is valid. Address 0 is the kernel.
        let mut sa: libc::sockaddr_nl = unsafe { mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: `msg` is a live buffer of the length passed; `sa` is a live sockaddr_nl.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends `msg` (sequence `seq`) and returns the payload of the first reply of type `want`
    /// (if `want` is `Some`) or of the acknowledgement; an error reply becomes an [`NlError`].
    fn transact(&mut self, msg: Vec<u8>, seq: u32, want: Option<u16>) -> Result<Vec<u8>, NlError> {
        self.send(&msg)?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: `buf` is a live, writable buffer of the length passed.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e.into());
            }
            let got = &buf[..n as usize];
            let mut off = 0usize;
            while let (Some(len), Some(ty), Some(flags), Some(mseq)) = (
                rd_u32(got, off),
                rd_u16(got, off + 4),
                rd_u16(got, off + 6),
                rd_u32(got, off + 8),
            ) {
                let len = len as usize;
                if len < HDR || off + len > got.len() {
                    break;
                }
                let body = &got[off + HDR..off + len];
                off += (len + 3) & !3;
                if mseq != seq {
                    continue;
                }
                if ty == NLMSG_ERROR {
                    let code = rd_u32(body, 0).map(|c| c as i32).unwrap_or(-libc::EIO);
                    if code == 0 {
                        return Ok(Vec::new());
                    }
                    return Err(NlError {
                        err: io::Error::from_raw_os_error(-code),
                        msg: ext_ack_message(body, flags),
                    });
                }
                if Some(ty) == want {
                    return Ok(body.to_vec());
                }
            }
        }
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Attaches program `prog` (or detaches, with -1) to `ifindex` with `flags`; with
    /// [`XDP_FLAGS_REPLACE`] in `flags`, only if the current program is `expected`.
    pub(crate) fn set_xdp(
        &mut self,
        ifindex: u32,
        prog: RawFd,
        flags: u32,
        expected: Option<RawFd>,
    ) -> Result<(), NlError> {
        let seq = self.next_seq();
        let mut m = Msg::new(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, seq, ifindex);
        let nest = m.begin_nest(IFLA_XDP);
        m.attr(IFLA_XDP_FD, &prog.to_ne_bytes());
        m.attr(IFLA_XDP_FLAGS, &flags.to_ne_bytes());
        if let Some(e) = expected {
            m.attr(IFLA_XDP_EXPECTED_FD, &e.to_ne_bytes());
        }
        m.end_nest(nest);
        self.transact(m.finish(), seq, None).map(|_| ())
    }

    /// Which XDP programs are attached to `ifindex`.
    pub(crate) fn xdp_state(&mut self, ifindex: u32) -> Result<XdpState, NlError> {
        let seq = self.next_seq();
        let mut m = Msg::new(RTM_GETLINK, NLM_F_REQUEST, seq, ifindex);
        m.attr(IFLA_EXT_MASK, &RTEXT_FILTER_SKIP_STATS.to_ne_bytes());
        let body = self.transact(m.finish(), seq, Some(RTM_NEWLINK))?;
        let mut st = XdpState::default();
        let Some(link_attrs) = body.get(IFINFO..) else {
            return Ok(st);
        };
        for (ty, data) in attrs(link_attrs) {
            if ty != IFLA_XDP {
                continue;
            }
            for (t, d) in attrs(data) {
                let v = rd_u32(d, 0).unwrap_or(0);
                match t {
                    IFLA_XDP_DRV_PROG_ID => st.drv = v,
                    IFLA_XDP_SKB_PROG_ID => st.skb = v,
                    IFLA_XDP_HW_PROG_ID => st.hw = v,
                    _ => {}
                }
            }
        }
        Ok(st)
    }
}

/// The text of an extended acknowledgement, if the error reply carries one. With
/// `NETLINK_CAP_ACK` the reply is the error code and the request's header only, then the TLVs.
fn ext_ack_message(body: &[u8], flags: u16) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let req_len = rd_u32(body, 4)? as usize;
    // Capped: only the request header was echoed; otherwise the whole request.
    let capped = flags & 0x100 != 0;
    let tlvs = if capped {
        4 + HDR
    } else {
        4 + req_len.max(HDR)
    };
    let tlvs = body.get((tlvs + 3) & !3..)?;
    attrs(tlvs)
        .find(|(t, _)| *t == NLMSGERR_ATTR_MSG)
        .map(|(_, d)| {
            let end = d.iter().position(|&c| c == 0).unwrap_or(d.len());
            String::from_utf8_lossy(&d[..end]).trim().to_string()
        })
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_well_formed() {
        let mut m = Msg::new(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, 7, 3);
        let n = m.begin_nest(IFLA_XDP);
        m.attr(IFLA_XDP_FD, &(-1i32).to_ne_bytes());
        m.attr(IFLA_XDP_FLAGS, &2u32.to_ne_bytes());
        m.end_nest(n);
        let b = m.finish();
        assert_eq!(b.len(), HDR + IFINFO + 4 + 8 + 8);
        assert_eq!(rd_u32(&b, 0), Some(b.len() as u32));
        assert_eq!(rd_u32(&b, HDR + 4), Some(3));
        let all: Vec<_> = attrs(&b[HDR + IFINFO..]).collect();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0, IFLA_XDP);
        let inner: Vec<_> = attrs(all[0].1).collect();
        assert_eq!(inner[0], (IFLA_XDP_FD, &(-1i32).to_ne_bytes()[..]));
        assert_eq!(inner[1], (IFLA_XDP_FLAGS, &2u32.to_ne_bytes()[..]));
        // Truncated or zero-length attributes end the walk instead of panicking.
        assert_eq!(attrs(&[8, 0, 1, 0, 1]).count(), 0);
        assert_eq!(attrs(&[0, 0, 1, 0]).count(), 0);
    }

    #[test]
    fn ext_ack_text_is_found() {
        // error -95, echoed header (capped), then a MSG attribute.
        let mut body = Vec::new();
        body.extend_from_slice(&(-95i32).to_ne_bytes());
        body.extend_from_slice(&[0u8; HDR]);
        let text = b"native XDP not supported\0";
        body.extend_from_slice(&((4 + text.len()) as u16).to_ne_bytes());
        body.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        body.extend_from_slice(text);
        assert_eq!(
            ext_ack_message(&body, NLM_F_ACK_TLVS | 0x100).as_deref(),
            Some("native XDP not supported")
        );
        assert_eq!(ext_ack_message(&body, 0), None);
    }
}
