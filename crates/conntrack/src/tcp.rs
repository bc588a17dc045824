//! # TCP state and sequence tracking
//!
//! ## What
//! Each TCP connection keeps, for each of its two peers, the highest sequence number the
//! peer has sent (`seqlo`), the highest it may send given what the other side acknowledged
//! and advertised (`seqhi`), its largest window seen (`max_win`), its window scale, and a
//! state in the RFC 793 vocabulary as OVS numbers it (`CLOSED` .. `TIME_WAIT`). This is the
//! sequence tracking of Guido van Rooij's "Real Stateful TCP Packet Filtering" as OpenBSD's
//! pf implements it and OVS's userspace conntrack adopted it; the semantics (which segments
//! are in window, which flags are invalid, when the connection counts as opening,
//! established, closing or closed) follow OVS so that `ct_state` decisions agree.
//!
//! ## How
//! [`TcpConn::update`] takes a parsed segment and its direction and returns whether it is
//! valid, invalid (out of window or bad flags: the packet is `+inv` and the connection
//! is left as it was) or a new SYN on a fully closed connection, which the caller replaces
//! by a new one. A segment that fails the window check is still accepted, without updating
//! the expiry, when one side has not yet spoken or both are closing (retransmitted SYNs,
//! connections picked up mid-stream, stray FINs after close); the liberal mode
//! (`seq_check == false`, OVS's `dpctl/ct-disable-tcp-seq-chk`) skips the window check.
//!
//! ## Invariants
//! All sequence arithmetic is modulo 2^32 (wrapping); shifts are bounded by the window
//! scale limit of 14. 24 bytes per connection. No allocation, no panics.

use crate::key::TcpSeg;
use crate::timeout::Class;

const F_FIN: u16 = 0x01;
const F_SYN: u16 = 0x02;
const F_RST: u16 = 0x04;
const F_PSH: u16 = 0x08;
const F_ACK: u16 = 0x10;
const F_URG: u16 = 0x20;

const WSCALE_MAX: u8 = 14;
/// The peer sent a window scale option.
const WS_PRESENT: u8 = 0x80;
/// Picked up mid-stream: scales unknown, assume the maximum.
const WS_UNKNOWN: u8 = 0x40;
const WS_MASK: u8 = 0x0f;
/// One maximal window plus an allowance for a reassembled fragment.
const MAX_ACK_WINDOW: i64 = 0xffff + 1500;

/// Per-peer TCP states, numbered as OVS's `CT_DPIF_TCPS_*`.
pub mod state {
    /// Closed.
    pub const CLOSED: u8 = 0;
    /// Listen (unused by the tracker, kept for numbering).
    pub const LISTEN: u8 = 1;
    /// SYN sent.
    pub const SYN_SENT: u8 = 2;
    /// SYN received.
    pub const SYN_RECV: u8 = 3;
    /// Established.
    pub const ESTABLISHED: u8 = 4;
    /// Close wait.
    pub const CLOSE_WAIT: u8 = 5;
    /// FIN wait 1.
    pub const FIN_WAIT_1: u8 = 6;
    /// Closing (sent FIN).
    pub const CLOSING: u8 = 7;
    /// Last ACK.
    pub const LAST_ACK: u8 = 8;
    /// FIN wait 2 (FIN acknowledged).
    pub const FIN_WAIT_2: u8 = 9;
    /// Time wait (reset or fully closed).
    pub const TIME_WAIT: u8 = 10;
    /// Names, indexed by state.
    pub const NAMES: [&str; 11] = [
        "CLOSED",
        "LISTEN",
        "SYN_SENT",
        "SYN_RECV",
        "ESTABLISHED",
        "CLOSE_WAIT",
        "FIN_WAIT_1",
        "CLOSING",
        "LAST_ACK",
        "FIN_WAIT_2",
        "TIME_WAIT",
    ];
}
use state::*;

#[inline]
fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}
#[inline]
fn seq_geq(a: u32, b: u32) -> bool {
    seq_diff(a, b) >= 0
}
#[inline]
fn seq_gt(a: u32, b: u32) -> bool {
    seq_diff(a, b) > 0
}

/// One peer's view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peer {
    /// Highest sequence number sent (plus one).
    pub seqlo: u32,
    /// Highest sequence number the other end allows.
    pub seqhi: u32,
    /// Largest unscaled window advertised.
    pub max_win: u16,
    /// Window scale and the `WS_*` flags.
    pub wscale: u8,
    /// State (see [`state`]).
    pub state: u8,
}

/// The TCP part of a connection: `peer[0]` is the originator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpConn {
    /// Originator, responder.
    pub peer: [Peer; 2],
}

/// What a segment does to a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpUpdate {
    /// Valid; the expiry moves to the given class when `Some`.
    Valid(Option<Class>),
    /// Out of window or bad flags.
    Invalid,
    /// A SYN on a connection closed both ways: start a new connection.
    New,
}

/// Flag combinations no TCP sends.
pub fn invalid_flags(f: u16) -> bool {
    if f & F_SYN != 0 {
        if f & (F_RST | F_FIN) != 0 {
            return true;
        }
    } else if f & (F_ACK | F_RST) == 0 {
        return true;
    }
    f & F_ACK == 0 && f & (F_FIN | F_PSH | F_URG) != 0
}

/// True if a segment with these flags may open a connection: valid flags and not a
/// SYN+ACK (a half-open connection is not picked up; an established one is).
pub fn valid_new(f: u16) -> bool {
    let syn_ack = f & (F_SYN | F_ACK) == F_SYN | F_ACK;
    !invalid_flags(f) && !syn_ack
}

fn wscale_of(seg: &TcpSeg) -> u8 {
    match seg.wscale {
        Some(s) => s.min(WSCALE_MAX) | WS_PRESENT,
        None => 0,
    }
}

impl TcpConn {
    /// The connection opened by `seg` (which passed [`valid_new`]).
    pub fn new(seg: &TcpSeg) -> TcpConn {
        let mut c = TcpConn::default();
        let [src, dst] = &mut c.peer;
        src.seqlo = seg.seq;
        src.seqhi = seg.seq.wrapping_add(seg.len).wrapping_add(1);
        if seg.flags & F_SYN != 0 {
            src.seqhi = src.seqhi.wrapping_add(1);
            src.wscale = wscale_of(seg);
        } else {
            src.wscale = WS_UNKNOWN;
            dst.wscale = WS_UNKNOWN;
        }
        src.max_win = seg.win.max(1);
        let sws = src.wscale & WS_MASK;
        if src.wscale & WS_PRESENT != 0 && sws != 0 {
            src.max_win = ((u32::from(src.max_win) + (1 << sws) - 1) >> sws) as u16;
        }
        if seg.flags & F_FIN != 0 {
            src.seqhi = src.seqhi.wrapping_add(1);
        }
        dst.seqhi = 1;
        dst.max_win = 1;
        src.state = SYN_SENT;
        dst.state = CLOSED;
        c
    }

    /// The state shown by a non-verbose dump: the more advanced of the two, with
    /// FIN_WAIT_2 shown as TIME_WAIT and SYN_RECV as ESTABLISHED (as OVS prints it).
    pub fn display_state(&self) -> u8 {
        match self.peer[0].state.max(self.peer[1].state) {
            FIN_WAIT_2 => TIME_WAIT,
            SYN_RECV => ESTABLISHED,
            s => s,
        }
    }

    /// Applies `seg`, sent by the responder when `reply`.
    pub fn update(&mut self, seg: &TcpSeg, reply: bool, seq_check: bool) -> TcpUpdate {
        let f = seg.flags;
        if invalid_flags(f) {
            return TcpUpdate::Invalid;
        }
        let [p0, p1] = &mut self.peer;
        let (src, dst) = if reply { (p1, p0) } else { (p0, p1) };
        if f & (F_SYN | F_ACK) == F_SYN && dst.state >= FIN_WAIT_2 && src.state >= FIN_WAIT_2 {
            src.state = CLOSED;
            dst.state = CLOSED;
            return TcpUpdate::New;
        }
        let mut scales = Scales::of(src, dst, f);
        let mut span = Span::of(seg);
        let check_ackskew = if src.state < SYN_SENT {
            first_from(src, dst, seg, &mut span, &mut scales)
        } else {
            true
        };
        span.relax(src, dst, f);
        if !seq_check || span.in_window(src, dst, scales, check_ackskew, seg) {
            span.slide(src, dst, scales);
            advance(src, dst, f);
            TcpUpdate::Valid(Some(timeout_class(src, dst)))
        } else if span.loosely_acceptable(src, dst) {
            // Loose acceptance: shotgunned SYNs, connections picked up late, stray
            // segments after close. The expiry is not refreshed.
            span.slide(src, dst, scales);
            advance_loosely(src, dst, f);
            TcpUpdate::Valid(None)
        } else {
            TcpUpdate::Invalid
        }
    }
}

/// The window scales of the sender and the receiver of a segment.
#[derive(Clone, Copy)]
struct Scales {
    src: u8,
    dst: u8,
}

impl Scales {
    /// The scales in force for a segment with flags `f`: none on a SYN or unless both
    /// peers sent the option; the maximum for a connection picked up mid-stream.
    #[inline]
    fn of(src: &Peer, dst: &Peer, f: u16) -> Scales {
        let both = |flag: u8| src.wscale & flag != 0 && dst.wscale & flag != 0;
        if f & F_SYN != 0 {
            Scales { src: 0, dst: 0 }
        } else if both(WS_PRESENT) {
            Scales {
                src: src.wscale & WS_MASK,
                dst: dst.wscale & WS_MASK,
            }
        } else if both(WS_UNKNOWN) {
            Scales {
                src: WSCALE_MAX,
                dst: WSCALE_MAX,
            }
        } else {
            Scales { src: 0, dst: 0 }
        }
    }
}

/// A segment's numbers as the window check sees them: its first and past-the-end
/// sequence numbers (SYN and FIN count one each), its acknowledgement and window.
struct Span {
    seq: u32,
    end: u32,
    ack: u32,
    win: u32,
}

impl Span {
    #[inline]
    fn of(seg: &TcpSeg) -> Span {
        let mut end = seg.seq.wrapping_add(seg.len);
        if seg.flags & F_SYN != 0 {
            end = end.wrapping_add(1);
        }
        if seg.flags & F_FIN != 0 {
            end = end.wrapping_add(1);
        }
        Span {
            seq: seg.seq,
            end,
            ack: seg.ack,
            win: u32::from(seg.win),
        }
    }

    /// Leaves out what cannot be checked: the acknowledgement of a segment without one
    /// (or of a broken stack's RST), the sequence numbers of a segment without data.
    #[inline]
    fn relax(&mut self, src: &Peer, dst: &Peer, f: u16) {
        if f & F_ACK == 0 || (self.ack == 0 && f & (F_ACK | F_RST) == F_ACK | F_RST) {
            self.ack = dst.seqlo;
        }
        if self.seq == self.end {
            self.seq = src.seqlo;
            self.end = self.seq;
        }
    }

    /// The window check: the data inside what `dst` allows, the acknowledgement within
    /// a window of what `dst` sent, and an RST exactly at `src`'s sequence number.
    #[inline]
    fn in_window(
        &self,
        src: &Peer,
        dst: &Peer,
        scales: Scales,
        check_ackskew: bool,
        seg: &TcpSeg,
    ) -> bool {
        let ackskew: i64 = if check_ackskew {
            i64::from(seq_diff(dst.seqlo, self.ack))
        } else {
            0
        };
        let dst_win = u32::from(dst.max_win) << scales.dst;
        let orig_seq = seg.seq;
        seq_geq(src.seqhi, self.end)
            && seq_geq(self.seq, src.seqlo.wrapping_sub(dst_win))
            && ackskew >= -MAX_ACK_WINDOW
            && ackskew <= (MAX_ACK_WINDOW << scales.src)
            && (seg.flags & F_RST == 0
                || orig_seq == src.seqlo
                || orig_seq == src.seqlo.wrapping_add(1)
                || orig_seq.wrapping_add(1) == src.seqlo)
    }

    /// The loose check of a segment outside the window, accepted when one side has not
    /// spoken yet or either is closed, if it is within a maximal window.
    #[inline]
    fn loosely_acceptable(&self, src: &Peer, dst: &Peer) -> bool {
        (dst.state < SYN_SENT || dst.state >= FIN_WAIT_2 || src.state >= FIN_WAIT_2)
            && seq_geq(src.seqhi.wrapping_add(MAX_ACK_WINDOW as u32), self.end)
            && seq_geq(self.seq, src.seqlo.wrapping_sub(MAX_ACK_WINDOW as u32))
    }

    /// Moves the window: `src`'s largest window and highest sequence number, and how far
    /// `dst` may now send.
    #[inline]
    fn slide(&self, src: &mut Peer, dst: &mut Peer, scales: Scales) {
        if u32::from(src.max_win) < self.win {
            src.max_win = self.win.min(0xffff) as u16;
        }
        if seq_gt(self.end, src.seqlo) {
            src.seqlo = self.end;
        }
        let scaled = self.win << scales.src;
        if seq_geq(self.ack.wrapping_add(scaled), dst.seqhi) {
            dst.seqhi = self.ack.wrapping_add(scaled.max(1));
        }
    }
}

/// The first segment from `src`: its window scale (a SYN's option, taken when `dst` sent
/// one too, else `dst`'s window unscaled), sequence number and window. False when the
/// acknowledgement is not to be checked (the window was set from this segment).
#[inline]
fn first_from(
    src: &mut Peer,
    dst: &mut Peer,
    seg: &TcpSeg,
    span: &mut Span,
    scales: &mut Scales,
) -> bool {
    if seg.flags & F_SYN != 0 && dst.wscale & WS_PRESENT != 0 {
        src.wscale = wscale_of(seg);
        if src.wscale & WS_PRESENT != 0 {
            scales.src = src.wscale & WS_MASK;
            span.win = (span.win + (1 << scales.src) - 1) >> scales.src;
            scales.dst = dst.wscale & WS_MASK;
        } else {
            // The other side's window was scaled for nothing.
            let d = u32::from(dst.max_win) << (dst.wscale & WS_MASK);
            dst.max_win = d.min(0xffff) as u16;
            dst.wscale = 0;
        }
    }
    src.seqlo = span.seq;
    src.state = SYN_SENT;
    let mut check_ackskew = true;
    let reach = span
        .end
        .wrapping_add((u32::from(dst.max_win) << scales.dst).max(1));
    if src.seqhi == 1 || seq_geq(reach, src.seqhi) {
        src.seqhi = reach;
        check_ackskew = false;
    }
    if span.win > u32::from(src.max_win) {
        src.max_win = span.win.min(0xffff) as u16;
    }
    check_ackskew
}

/// The peers' states after a segment in window with flags `f`.
#[inline]
fn advance(src: &mut Peer, dst: &mut Peer, f: u16) {
    if f & F_SYN != 0 && src.state < SYN_SENT {
        src.state = SYN_SENT;
    }
    if f & F_FIN != 0 && src.state < CLOSING {
        src.state = CLOSING;
    }
    if f & F_ACK != 0 {
        if dst.state == SYN_SENT {
            dst.state = ESTABLISHED;
        } else if dst.state == CLOSING {
            dst.state = FIN_WAIT_2;
        }
    }
    if f & F_RST != 0 {
        src.state = TIME_WAIT;
        dst.state = TIME_WAIT;
    }
}

/// The peers' states after a loosely accepted segment: a FIN closes, an RST ends.
#[inline]
fn advance_loosely(src: &mut Peer, dst: &mut Peer, f: u16) {
    if f & F_FIN != 0 && src.state < CLOSING {
        src.state = CLOSING;
    }
    if f & F_RST != 0 {
        src.state = TIME_WAIT;
        dst.state = TIME_WAIT;
    }
}

/// The expiry class of a connection whose peers are in these states.
#[inline]
fn timeout_class(src: &Peer, dst: &Peer) -> Class {
    if src.state >= FIN_WAIT_2 && dst.state >= FIN_WAIT_2 {
        Class::TcpClosed
    } else if src.state >= CLOSING && dst.state >= CLOSING {
        Class::TcpFinWait
    } else if src.state < ESTABLISHED || dst.state < ESTABLISHED {
        Class::TcpOpening
    } else if src.state >= CLOSING || dst.state >= CLOSING {
        Class::TcpClosing
    } else {
        Class::TcpEstablished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(flags: u16, seq: u32, ack: u32, len: u32) -> TcpSeg {
        TcpSeg {
            flags,
            seq,
            ack,
            win: 65535,
            len,
            wscale: (flags & F_SYN != 0).then_some(7),
        }
    }

    /// A full handshake, data both ways, and close.
    #[test]
    fn lifecycle() {
        let mut c = TcpConn::new(&seg(F_SYN, 1000, 0, 0));
        assert_eq!(c.peer[0].state, SYN_SENT);
        assert_eq!(
            c.update(&seg(F_SYN | F_ACK, 5000, 1001, 0), true, true),
            TcpUpdate::Valid(Some(Class::TcpOpening))
        );
        assert_eq!(
            c.update(&seg(F_ACK, 1001, 5001, 0), false, true),
            TcpUpdate::Valid(Some(Class::TcpEstablished))
        );
        assert_eq!(c.display_state(), ESTABLISHED);
        assert_eq!(
            c.update(&seg(F_ACK | F_PSH, 1001, 5001, 100), false, true),
            TcpUpdate::Valid(Some(Class::TcpEstablished))
        );
        assert_eq!(
            c.update(&seg(F_ACK, 5001, 1101, 0), true, true),
            TcpUpdate::Valid(Some(Class::TcpEstablished))
        );
        // Far outside the window: invalid, state unchanged.
        let before = c;
        assert_eq!(
            c.update(&seg(F_ACK, 1101 + 0x4000_0000, 5001, 10), false, true),
            TcpUpdate::Invalid
        );
        assert_eq!(c, before);
        // The liberal mode accepts it.
        let mut lib = c;
        assert!(matches!(
            lib.update(&seg(F_ACK, 1101 + 0x4000_0000, 5001, 10), false, false),
            TcpUpdate::Valid(_)
        ));
        // Close: FIN from the client, ACK, FIN from the server, ACK.
        assert_eq!(
            c.update(&seg(F_FIN | F_ACK, 1101, 5001, 0), false, true),
            TcpUpdate::Valid(Some(Class::TcpClosing))
        );
        assert_eq!(
            c.update(&seg(F_FIN | F_ACK, 5001, 1102, 0), true, true),
            TcpUpdate::Valid(Some(Class::TcpFinWait))
        );
        assert_eq!(
            c.update(&seg(F_ACK, 1102, 5002, 0), false, true),
            TcpUpdate::Valid(Some(Class::TcpClosed))
        );
        assert_eq!(c.display_state(), TIME_WAIT);
        // A new SYN on the closed connection restarts it.
        assert_eq!(
            c.update(&seg(F_SYN, 9000, 0, 0), false, true),
            TcpUpdate::New
        );
    }

    #[test]
    fn flags() {
        assert!(invalid_flags(F_SYN | F_RST));
        assert!(invalid_flags(F_SYN | F_FIN));
        assert!(invalid_flags(0));
        assert!(invalid_flags(F_FIN));
        assert!(invalid_flags(F_RST | F_PSH));
        assert!(!invalid_flags(F_RST));
        assert!(!invalid_flags(F_ACK | F_FIN));
        assert!(valid_new(F_SYN));
        assert!(!valid_new(F_SYN | F_ACK));
        assert!(valid_new(F_ACK));
    }

    #[test]
    fn reset_needs_exact_sequence() {
        let mut c = TcpConn::new(&seg(F_SYN, 1000, 0, 0));
        c.update(&seg(F_SYN | F_ACK, 5000, 1001, 0), true, true);
        c.update(&seg(F_ACK, 1001, 5001, 0), false, true);
        assert_eq!(
            c.update(&seg(F_RST, 5001 + 3000, 0, 0), true, true),
            TcpUpdate::Invalid
        );
        assert_eq!(
            c.update(&seg(F_RST, 5001, 0, 0), true, true),
            TcpUpdate::Valid(Some(Class::TcpClosed))
        );
    }

    #[test]
    fn refused_connection_reset_is_valid() {
        // SYN, then the responder's RST|ACK (seq 0, acking the SYN): a refused connection.
        let mut c = TcpConn::new(&seg(F_SYN, 1000, 0, 0));
        assert_eq!(
            c.update(&seg(F_RST | F_ACK, 0, 1001, 0), true, true),
            TcpUpdate::Valid(Some(Class::TcpClosed))
        );
        assert_eq!(c.display_state(), TIME_WAIT);
    }

    #[test]
    fn picked_up_mid_stream() {
        // An ACK without a SYN opens a connection with unknown window scales.
        let mut c = TcpConn::new(&seg(F_ACK, 7777, 3333, 10));
        assert_eq!(c.peer[0].wscale, WS_UNKNOWN);
        assert!(matches!(
            c.update(&seg(F_ACK, 3333, 7787, 20), true, true),
            TcpUpdate::Valid(_)
        ));
        assert!(matches!(
            c.update(&seg(F_ACK, 7787, 3353, 10), false, true),
            TcpUpdate::Valid(Some(Class::TcpEstablished))
        ));
    }
}
