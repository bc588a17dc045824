//! FTP control messages under NAT: the address in a `PORT`, `227` or `EPRT` message
//! rewritten to the translated one, and the TCP sequence skew that follows when the text
//! changes length.
//!
//! ## What (OVS's userspace helper's behaviour)
//! * The address rewritten: in `PORT`/`EPRT` (client to server) the client's address as the
//!   server sees it (the reply tuple's destination), in `227` (server to client) the
//!   server's address as the client addressed it (the original tuple's destination). The
//!   `229` reply names no address and is left alone.
//! * The message's text then grows or shrinks (`1,2,3,4` and `100,200,100,200` differ by
//!   8 bytes); the IP length, the IPv4 header checksum and the TCP checksum follow.
//! * The length change adds to the connection's *skew* in the direction of the message:
//!   later segments of that direction have their sequence number moved up by it, and
//!   segments of the other direction their acknowledgement moved down by it, so that both
//!   ends see a consistent stream. The tracker's window check sees the sender's own
//!   numbers: an acknowledgement is moved before the check, a sequence number after it.
//!   (OVS keeps one skew and the direction of its last change; here each direction has
//!   its own, which gives the same numbers whenever messages are rewritten in one
//!   direction only, the only case FTP produces.)
//!
//! ## Frames that change length
//! The tracker works on a frame as a `&mut [u8]`. A rewrite that shrinks it writes the
//! shorter frame at its start and reports the change in [`crate::CtResult::resize`]; one
//! that grows it writes what fits and leaves the bytes past the old end in a per-thread
//! buffer, which the caller appends ([`take_grown_tail`]) when `resize` is positive. A
//! frame that would grow past [`MAX_GROWN`] bytes is not rewritten (OVS likewise refuses
//! a rewrite that would not fit its buffer).

use crate::key::PacketMeta;
use packet::csum;
use std::cell::RefCell;

/// The longest frame a rewrite may produce.
pub const MAX_GROWN: usize = 1600;

thread_local! {
    /// The bytes of the last grown frame past its old end.
    static TAIL: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Hands `f` the bytes a rewrite that grew the frame (`CtResult::resize > 0`) left past
/// its old end, on the thread that ran the `ct` action, and forgets them.
pub fn take_grown_tail<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    TAIL.with(|t| {
        let mut t = t.borrow_mut();
        let r = f(&t);
        t.clear();
        r
    })
}

/// Applies a `ct` verdict's `resize` to a frame held in a `Vec` (tests, tools).
pub fn apply_resize(frame: &mut Vec<u8>, resize: i8) {
    let n = usize::from(resize.unsigned_abs());
    if resize > 0 {
        take_grown_tail(|t| frame.extend_from_slice(&t[..n.min(t.len())]));
    } else if resize < 0 {
        frame.truncate(frame.len().saturating_sub(n));
    }
}

/// The address as a message carries it: `a,b,c,d` for IPv4, the usual text for IPv6.
pub fn addr_text(v6: bool, addr: &[u8; 16]) -> String {
    if v6 {
        std::net::Ipv6Addr::from(*addr).to_string()
    } else {
        format!("{},{},{},{}", addr[0], addr[1], addr[2], addr[3])
    }
}

fn rd16(f: &[u8], at: usize) -> Option<u16> {
    f.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

fn rd32(f: &[u8], at: usize) -> Option<u32> {
    f.get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn wr(f: &mut [u8], at: usize, b: &[u8]) {
    if let Some(d) = f.get_mut(at..at + b.len()) {
        d.copy_from_slice(b);
    }
}

/// Start of the TCP payload of the segment at `l4`.
pub fn payload_start(frame: &[u8], l4: usize) -> Option<usize> {
    Some(l4 + usize::from(*frame.get(l4 + 12)? >> 4) * 4)
}

/// Adds `seq` to the sequence number and `ack` to the acknowledgement of the segment at
/// `l4`, patching the TCP checksum (either may be 0: unchanged).
pub fn adjust_seq_ack(frame: &mut [u8], l4: usize, seq: i32, ack: i32) {
    for (at, d) in [(l4 + 4, seq), (l4 + 8, ack)] {
        if d == 0 {
            continue;
        }
        let (Some(old), Some(c)) = (rd32(frame, at), rd16(frame, l4 + 16)) else {
            return;
        };
        let new = old.wrapping_add_signed(d);
        wr(frame, at, &new.to_be_bytes());
        wr(frame, l4 + 16, &csum::update32(c, old, new).to_be_bytes());
    }
}

/// The frame with the address text at `span` (start and length within the TCP payload)
/// replaced by `text`: IP length, IPv4 header checksum and TCP checksum updated. `None`
/// when the frame does not hold the span or would grow past [`MAX_GROWN`].
pub fn rewrite_message(
    frame: &[u8],
    meta: &PacketMeta,
    span: (usize, usize),
    text: &[u8],
) -> Option<Vec<u8>> {
    let l3 = usize::from(meta.l3);
    let l4 = usize::from(meta.l4?);
    let at = payload_start(frame, l4)?.checked_add(span.0)?;
    let end = at.checked_add(span.1)?;
    if end > frame.len() {
        return None;
    }
    let new_len = frame.len() - span.1 + text.len();
    if new_len > MAX_GROWN.max(frame.len()) {
        return None;
    }
    let delta = text.len() as i64 - span.1 as i64;
    let mut out = Vec::with_capacity(new_len);
    out.extend_from_slice(&frame[..at]);
    out.extend_from_slice(text);
    out.extend_from_slice(&frame[end..]);
    let len_at = if meta.v6 { l3 + 4 } else { l3 + 2 };
    let old = rd16(&out, len_at)?;
    let new = u16::try_from(i64::from(old) + delta).ok()?;
    wr(&mut out, len_at, &new.to_be_bytes());
    if !meta.v6 {
        let c = rd16(&out, l3 + 10)?;
        wr(
            &mut out,
            l3 + 10,
            &csum::update16(c, old, new).to_be_bytes(),
        );
    }
    csum::set_l4_checksum(&mut out, l3, l4, 16, crate::key::PROTO_TCP, true).then_some(out)
}

/// Writes `new` over `frame` (the longer's excess to the per-thread tail buffer); the
/// length change.
pub fn install(frame: &mut [u8], new: &[u8]) -> i8 {
    let n = frame.len().min(new.len());
    frame[..n].copy_from_slice(&new[..n]);
    TAIL.with(|t| {
        let mut t = t.borrow_mut();
        t.clear();
        t.extend_from_slice(&new[n..]);
    });
    let d = new.len() as i64 - frame.len() as i64;
    d.clamp(i64::from(i8::MIN), i64::from(i8::MAX)) as i8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alg::ftp;
    use crate::testpkt::*;

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    fn meta(f: &[u8]) -> PacketMeta {
        let (k, o) = flow_of(f);
        PacketMeta::from_flow(&k, &o).expect("IP")
    }

    fn check_sums(f: &[u8], v6: bool) {
        if !v6 {
            assert!(csum::ipv4_header_ok(&f[14..34]));
        }
        let l4 = if v6 { 54 } else { 34 };
        assert!(csum::l4_checksum_ok(f, 14, l4, 6, true));
    }

    fn rewrite(msg: &[u8], to: [u8; 4]) -> Vec<u8> {
        let f = tcp4(A, B, 40000, 21, 1000, 2000, ACK | PSH, msg);
        let m = meta(&f);
        let p = payload_start(&f, 34).expect("tcp");
        let (_, span) = ftp::parse_span(&f[p..], false);
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&to);
        let text = addr_text(false, &a);
        let new = rewrite_message(&f, &m, span.expect("span"), text.as_bytes()).expect("fits");
        check_sums(&new, false);
        let iplen = usize::from(u16::from_be_bytes([new[16], new[17]]));
        assert_eq!(iplen + 14, new.len());
        new
    }

    #[test]
    fn port_grows_shrinks_same() {
        let g = rewrite(b"PORT 1,2,3,4,195,80\r\n", [100, 200, 100, 200]);
        assert_eq!(&g[54..], b"PORT 100,200,100,200,195,80\r\n");
        let s = rewrite(b"PORT 100,200,100,200,195,80\r\n", [1, 2, 3, 4]);
        assert_eq!(&s[54..], b"PORT 1,2,3,4,195,80\r\n");
        let e = rewrite(b"PORT 10,0,0,1,195,80\r\n", [10, 0, 0, 9]);
        assert_eq!(&e[54..], b"PORT 10,0,0,9,195,80\r\n");
        let p = rewrite(
            b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n",
            [192, 0, 2, 1],
        );
        assert_eq!(&p[54..], b"227 Entering Passive Mode (192,0,2,1,4,1).\r\n");
    }

    #[test]
    fn eprt_v6() {
        let a = v6addr(1);
        let b = v6addr(2);
        let msg = format!("EPRT |2|{}|6000|\r\n", std::net::Ipv6Addr::from(a));
        let f = tcp6(a, b, 40000, 21, 1, 2, ACK, msg.as_bytes());
        let m = meta(&f);
        let p = payload_start(&f, 54).expect("tcp");
        let (_, span) = ftp::parse_span(&f[p..], true);
        let to: std::net::Ipv6Addr = "fd00:1234::77".parse().expect("addr");
        let new = rewrite_message(
            &f,
            &m,
            span.expect("span"),
            addr_text(true, &to.octets()).as_bytes(),
        )
        .expect("fits");
        check_sums(&new, true);
        assert_eq!(&new[74..], b"EPRT |2|fd00:1234::77|6000|\r\n");
        let plen = usize::from(u16::from_be_bytes([new[18], new[19]]));
        assert_eq!(plen + 54, new.len());
    }

    #[test]
    fn seq_ack_adjust_keeps_checksum() {
        let mut f = tcp4(A, B, 40000, 21, u32::MAX - 2, 5, ACK, b"NOOP\r\n");
        adjust_seq_ack(&mut f, 34, 8, -3);
        check_sums(&f, false);
        assert_eq!(rd32(&f, 38), Some(5));
        assert_eq!(rd32(&f, 42), Some(2));
    }

    #[test]
    fn install_and_apply() {
        let mut frame = vec![1u8, 2, 3];
        let new = [9u8, 8, 7, 6, 5];
        let r = install(&mut frame, &new);
        assert_eq!(r, 2);
        apply_resize(&mut frame, r);
        assert_eq!(frame, new);
        let mut frame = vec![1u8, 2, 3, 4];
        let r = install(&mut frame, &[7, 7]);
        apply_resize(&mut frame, r);
        assert_eq!(frame, [7, 7]);
    }

    #[test]
    fn too_long_or_short_is_refused() {
        let f = tcp4(A, B, 40000, 21, 1, 2, ACK, b"PORT 1,2,3,4,1,1\r\n");
        let m = meta(&f);
        assert!(rewrite_message(&f, &m, (5, 500), b"x").is_none());
        let mut big = tcp4(A, B, 40000, 21, 1, 2, ACK, &vec![b'a'; MAX_GROWN - 54]);
        big.truncate(MAX_GROWN);
        let m = meta(&big);
        assert!(rewrite_message(&big, &m, (0, 1), b"abc").is_none());
    }
}
