//! # IP fragment reassembly before tracking
//!
//! ## What
//! Connection tracking needs the L4 header, which only a datagram's first fragment has,
//! and the state of every fragment must be that of the whole datagram. [`Ipf`] collects the
//! fragments of each IPv4 datagram (keyed by zone, addresses, protocol and IP id) and each
//! IPv6 datagram (zone, addresses and the Fragment header's id), and once
//! all have arrived hands back the reassembled datagram, to be tracked like any packet,
//! together with the caller's handles of the fragments in their arrival order, so that the
//! datapath can give each fragment the datagram's `ct_state` and send them on as they came.
//!
//! ## Rules
//! * A non-last fragment must carry a multiple of 8 bytes and at least
//!   [`IpfConfig::min_frag`] of them; a fragment list whose pieces overlap, or whose last
//!   fragment disagrees with what was already seen, is dropped whole (overlaps are how
//!   fragment attacks hide headers). Exact duplicates are dropped alone.
//! * At most [`IpfConfig::max_frags`] fragments are held in all, and at most
//!   [`IpfConfig::max_per_list`] per datagram; beyond that new fragments are dropped.
//! * A list that is not complete [`IpfConfig::timeout_ms`] after its first fragment is
//!   dropped by [`Ipf::sweep`], which the control thread calls with the tracker's sweep.
//! * IPv6: the Hop-by-Hop, Routing and Destination Options headers before the Fragment
//!   header are the unfragmentable part, kept from the first fragment; the reassembled
//!   datagram has no Fragment header. NAT is not applied to fragments (the datagram's
//!   state is, not its rewrite).
//!
//! ## Threading
//! One mutex around the lists: only fragments take it (the caller hands over a packet only
//! when `PacketMeta::frag` is set), so unfragmented traffic never touches it.

use crate::key::PacketMeta;
use packet::csum;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Reassembly limits.
#[derive(Clone, Copy, Debug)]
pub struct IpfConfig {
    /// Fragments held at once, all datagrams together.
    pub max_frags: usize,
    /// Fragments per datagram.
    pub max_per_list: usize,
    /// Smallest payload of a fragment that is not the last.
    pub min_frag: usize,
    /// How long a datagram may take to arrive whole, milliseconds.
    pub timeout_ms: u64,
}

impl Default for IpfConfig {
    fn default() -> Self {
        IpfConfig {
            max_frags: 1000,
            max_per_list: 64,
            min_frag: 400,
            timeout_ms: 15_000,
        }
    }
}

/// What became of a packet handed to [`Ipf::add`].
#[derive(Debug)]
pub enum IpfVerdict<T> {
    /// Not a fragment: track it as it is.
    NotFragment(T),
    /// Held until its datagram is complete.
    Held,
    /// The datagram is complete.
    Complete(Reassembled<T>),
    /// These packets are dropped (invalid fragments, or a list they spoiled).
    Dropped(Vec<T>),
}

/// A reassembled datagram and the fragments it was made of.
#[derive(Debug)]
pub struct Reassembled<T> {
    /// The whole frame: the first fragment's L2 and IP headers (offset and MF cleared,
    /// length and checksum fixed) followed by all the payload.
    pub frame: Vec<u8>,
    /// Its layers, for `Conntrack::execute_one`.
    pub meta: PacketMeta,
    /// The fragments' handles in arrival order.
    pub fragments: Vec<T>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct FragKey {
    zone: u16,
    v6: bool,
    src: [u8; 16],
    dst: [u8; 16],
    /// IPv4 protocol (IPv6 keys by addresses and id only).
    proto: u8,
    id: u32,
}

struct Piece {
    off: usize,
    data: Vec<u8>,
}

/// The first fragment's frame up to its fragmentable part, and how to make it whole.
struct Head {
    bytes: Vec<u8>,
    l3: usize,
    /// IPv6: where the next-header byte that named the Fragment header is, and what the
    /// Fragment header said comes next.
    v6_next: Option<(usize, u8)>,
}

struct List<T> {
    first_seen: u64,
    pieces: Vec<Piece>,
    handles: Vec<T>,
    head: Option<Head>,
    total: Option<usize>,
}

/// Fragment lists awaiting completion.
pub struct Ipf<T> {
    cfg: IpfConfig,
    inner: Mutex<(HashMap<FragKey, List<T>>, usize)>,
}

/// The parsed fragment header fields.
struct Frag {
    key: FragKey,
    off: usize,
    more: bool,
    l3: usize,
    /// End of what the reassembled datagram keeps of this fragment's headers (IPv4: the IP
    /// header; IPv6: up to the Fragment header).
    head_end: usize,
    /// Start of the fragment's payload.
    data: usize,
    end: usize,
    v6_next: Option<(usize, u8)>,
}

fn parse(frame: &[u8], meta: &PacketMeta, zone: u16) -> Option<Frag> {
    if meta.v6 {
        return parse6(frame, meta, zone);
    }
    let l3 = usize::from(meta.l3);
    let h = frame.get(l3..)?.first_chunk::<20>()?;
    if h[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let fo = u16::from_be_bytes([h[6], h[7]]);
    if ihl < 20 || total < ihl || l3 + total > frame.len() {
        return None;
    }
    if !csum::ipv4_header_ok(frame.get(l3..l3 + ihl)?) {
        return None;
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src[..4].copy_from_slice(&h[12..16]);
    dst[..4].copy_from_slice(&h[16..20]);
    Some(Frag {
        key: FragKey {
            zone,
            v6: false,
            src,
            dst,
            proto: h[9],
            id: u32::from(u16::from_be_bytes([h[4], h[5]])),
        },
        off: usize::from(fo & 0x1fff) * 8,
        more: fo & 0x2000 != 0,
        l3,
        head_end: l3 + ihl,
        data: l3 + ihl,
        end: l3 + total,
        v6_next: None,
    })
}

/// An IPv6 fragment: walks Hop-by-Hop, Routing and Destination Options headers to the
/// Fragment header.
fn parse6(frame: &[u8], meta: &PacketMeta, zone: u16) -> Option<Frag> {
    let l3 = usize::from(meta.l3);
    let h = frame.get(l3..)?.first_chunk::<40>()?;
    if h[0] >> 4 != 6 {
        return None;
    }
    let end = l3 + 40 + usize::from(u16::from_be_bytes([h[4], h[5]]));
    if end > frame.len() {
        return None;
    }
    let mut nh = h[6];
    let mut nh_at = l3 + 6;
    let mut at = l3 + 40;
    while nh != 44 {
        if !matches!(nh, 0 | 43 | 60) {
            return None;
        }
        let len = (usize::from(*frame.get(at + 1)?) + 1) * 8;
        nh_at = at;
        nh = *frame.get(at)?;
        at += len;
        if at > end {
            return None;
        }
    }
    let fh = frame.get(at..end)?.first_chunk::<8>()?;
    let fo = u16::from_be_bytes([fh[2], fh[3]]);
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&h[8..24]);
    dst.copy_from_slice(&h[24..40]);
    Some(Frag {
        key: FragKey {
            zone,
            v6: true,
            src,
            dst,
            proto: 0,
            id: u32::from_be_bytes([fh[4], fh[5], fh[6], fh[7]]),
        },
        off: usize::from(fo >> 3) * 8,
        more: fo & 1 != 0,
        l3,
        head_end: at,
        data: at + 8,
        end,
        v6_next: Some((nh_at, fh[0])),
    })
}

impl<T> Ipf<T> {
    /// Empty lists.
    pub fn new(cfg: IpfConfig) -> Ipf<T> {
        Ipf {
            cfg,
            inner: Mutex::new((HashMap::new(), 0)),
        }
    }

    /// Fragments held now.
    pub fn held(&self) -> usize {
        self.inner.lock().1
    }

    /// Takes a packet (`handle`, whose bytes are `frame`) of `zone`.
    pub fn add(
        &self,
        frame: &[u8],
        meta: &PacketMeta,
        zone: u16,
        handle: T,
        now: u64,
    ) -> IpfVerdict<T> {
        if !meta.frag {
            return IpfVerdict::NotFragment(handle);
        }
        let Some(f) = parse(frame, meta, zone) else {
            return IpfVerdict::Dropped(vec![handle]);
        };
        let len = f.end - f.data;
        let bad_size = f.more && (len % 8 != 0 || len < self.cfg.min_frag);
        if len == 0 || bad_size || f.off + len > 65_535 {
            return IpfVerdict::Dropped(vec![handle]);
        }
        let mut guard = self.inner.lock();
        let (lists, held) = &mut *guard;
        if *held >= self.cfg.max_frags {
            return IpfVerdict::Dropped(vec![handle]);
        }
        let list = lists.entry(f.key).or_insert_with(|| List {
            first_seen: now,
            pieces: Vec::new(),
            handles: Vec::new(),
            head: None,
            total: None,
        });
        if list.pieces.len() >= self.cfg.max_per_list {
            return IpfVerdict::Dropped(vec![handle]);
        }
        let (a, b) = (f.off, f.off + len);
        if list
            .pieces
            .iter()
            .any(|p| p.off == a && p.data.len() == len)
        {
            return IpfVerdict::Dropped(vec![handle]);
        }
        let overlaps = list
            .pieces
            .iter()
            .any(|p| a < p.off + p.data.len() && p.off < b);
        let end_conflict = match (f.more, list.total) {
            (false, Some(t)) => t != b,
            (false, None) => list.pieces.iter().any(|p| p.off + p.data.len() > b),
            (true, Some(t)) => b > t,
            (true, None) => false,
        };
        if overlaps || end_conflict {
            let list = lists.remove(&f.key);
            let mut dropped = list.map(|l| l.handles).unwrap_or_default();
            *held -= dropped.len();
            dropped.push(handle);
            return IpfVerdict::Dropped(dropped);
        }
        if !f.more {
            list.total = Some(b);
        }
        if f.off == 0 {
            list.head = frame.get(..f.head_end).map(|h| Head {
                bytes: h.to_vec(),
                l3: f.l3,
                v6_next: f.v6_next,
            });
        }
        list.pieces.push(Piece {
            off: f.off,
            data: frame.get(f.data..f.end).unwrap_or_default().to_vec(),
        });
        list.handles.push(handle);
        *held += 1;
        let have: usize = list.pieces.iter().map(|p| p.data.len()).sum();
        let complete = list.head.is_some() && list.total == Some(have);
        if !complete {
            return IpfVerdict::Held;
        }
        let Some(mut list) = lists.remove(&f.key) else {
            return IpfVerdict::Held;
        };
        *held -= list.handles.len();
        drop(guard);
        let Some(head) = list.head.take() else {
            return IpfVerdict::Dropped(list.handles);
        };
        match build(head, &mut list.pieces) {
            Some((frame, meta)) => IpfVerdict::Complete(Reassembled {
                frame,
                meta,
                fragments: list.handles,
            }),
            None => IpfVerdict::Dropped(list.handles),
        }
    }

    /// Drops the lists that did not complete in time; returns their fragments.
    pub fn sweep(&self, now: u64) -> Vec<T> {
        let mut guard = self.inner.lock();
        let (lists, held) = &mut *guard;
        let timeout = self.cfg.timeout_ms;
        let old: Vec<FragKey> = lists
            .iter()
            .filter(|(_, l)| now.saturating_sub(l.first_seen) >= timeout)
            .map(|(k, _)| *k)
            .collect();
        let mut out = Vec::new();
        for k in old {
            if let Some(l) = lists.remove(&k) {
                *held -= l.handles.len();
                out.extend(l.handles);
            }
        }
        out
    }
}

/// The whole datagram from the first fragment's headers and the pieces; `None` if it would
/// be too long or does not parse as an unfragmented packet.
fn build(head: Head, pieces: &mut [Piece]) -> Option<(Vec<u8>, PacketMeta)> {
    let Head {
        bytes: mut out,
        l3,
        v6_next,
    } = head;
    pieces.sort_by_key(|p| p.off);
    for p in pieces.iter() {
        out.extend_from_slice(&p.data);
    }
    match v6_next {
        None => {
            let ihl = usize::from(*out.get(l3)? & 0x0f) * 4;
            let total = u16::try_from(out.len() - l3).ok()?;
            out.get_mut(l3 + 2..l3 + 4)?
                .copy_from_slice(&total.to_be_bytes());
            // Keep DF, clear MF and the offset.
            *out.get_mut(l3 + 6)? &= 0x40;
            *out.get_mut(l3 + 7)? = 0;
            out.get_mut(l3 + 10..l3 + 12)?.copy_from_slice(&[0, 0]);
            let c = csum::checksum(out.get(l3..l3 + ihl)?);
            out.get_mut(l3 + 10..l3 + 12)?
                .copy_from_slice(&c.to_be_bytes());
        }
        Some((nh_at, next)) => {
            // The Fragment header is gone: whoever named it now names what followed it.
            *out.get_mut(nh_at)? = next;
            let plen = u16::try_from(out.len().checked_sub(l3 + 40)?).ok()?;
            out.get_mut(l3 + 4..l3 + 6)?
                .copy_from_slice(&plen.to_be_bytes());
        }
    }
    let mut k = packet::FlowKey::default();
    let offs = packet::extract_into(&mut k, &out, 0);
    let meta = PacketMeta::from_flow(&k, &offs).filter(|m| !m.frag)?;
    Some((out, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpkt::{flow_of, udp4};
    use crate::tracker::{ct_state, Conntrack, CtRequest};

    /// Cuts an IPv4 frame (14-byte Ethernet header, 20-byte IP header) into fragments of
    /// `size` payload bytes (a multiple of 8).
    fn fragment(frame: &[u8], size: usize) -> Vec<Vec<u8>> {
        let payload = &frame[34..];
        let mut out = vec![];
        let mut off = 0;
        while off < payload.len() {
            let end = (off + size).min(payload.len());
            let mut f = frame[..34].to_vec();
            f.extend_from_slice(&payload[off..end]);
            let total = (20 + end - off) as u16;
            f[16..18].copy_from_slice(&total.to_be_bytes());
            let more = if end < payload.len() { 0x2000 } else { 0 };
            let fo = (off / 8) as u16 | more;
            f[20..22].copy_from_slice(&fo.to_be_bytes());
            f[24..26].copy_from_slice(&[0, 0]);
            let c = csum::checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
            out.push(f);
            off = end;
        }
        out
    }

    fn meta(f: &[u8]) -> PacketMeta {
        let (k, o) = flow_of(f);
        PacketMeta::from_flow(&k, &o).unwrap()
    }

    fn small() -> IpfConfig {
        IpfConfig {
            min_frag: 8,
            ..IpfConfig::default()
        }
    }

    #[test]
    fn out_of_order_fragments_reassemble_and_track() {
        let whole = udp4([10, 0, 0, 1], [10, 0, 0, 2], 5000, 53, &[7u8; 100]);
        let frags = fragment(&whole, 48);
        assert_eq!(frags.len(), 3);
        let ipf = Ipf::new(small());
        let order = [2usize, 0, 1];
        let mut done = None;
        for (n, &i) in order.iter().enumerate() {
            let m = meta(&frags[i]);
            assert!(m.frag);
            match ipf.add(&frags[i], &m, 0, i, 10) {
                IpfVerdict::Held => assert!(n < 2),
                IpfVerdict::Complete(r) => done = Some(r),
                v => panic!("{v:?}"),
            }
        }
        let mut r = done.expect("complete");
        assert_eq!(r.fragments, vec![2, 0, 1]);
        // The reassembled frame is the original datagram (the test's fragments carry no
        // DF, so the flags word is zero and the header checksum differs accordingly).
        let mut want = whole.clone();
        want[20] = 0;
        want[24..26].copy_from_slice(&[0, 0]);
        let c = csum::checksum(&want[14..34]);
        want[24..26].copy_from_slice(&c.to_be_bytes());
        assert_eq!(r.frame, want);
        assert_eq!(ipf.held(), 0);
        let ct = Conntrack::default();
        let req = CtRequest {
            commit: true,
            ..CtRequest::default()
        };
        let res = ct.execute_one(&mut r.frame, &r.meta, &req, 10);
        assert_eq!(res.state, ct_state::TRK | ct_state::NEW);
        assert_eq!(res.orig.unwrap().sport, 5000);
        // Unfragmented packets pass through untouched.
        assert!(matches!(
            ipf.add(&whole, &meta(&whole), 0, 9, 10),
            IpfVerdict::NotFragment(9)
        ));
    }

    #[test]
    fn overlaps_small_fragments_limits_and_timeouts() {
        let whole = udp4([10, 0, 0, 1], [10, 0, 0, 2], 5000, 53, &[7u8; 100]);
        let frags = fragment(&whole, 48);
        // Too small for the default minimum.
        let strict = Ipf::new(IpfConfig::default());
        assert!(matches!(
            strict.add(&frags[0], &meta(&frags[0]), 0, 0, 0),
            IpfVerdict::Dropped(v) if v == vec![0]
        ));
        // Overlap: a second cut of the same datagram at another size spoils the list.
        let ipf = Ipf::new(small());
        assert!(matches!(
            ipf.add(&frags[0], &meta(&frags[0]), 0, 0, 0),
            IpfVerdict::Held
        ));
        let other = fragment(&whole, 32);
        assert!(matches!(
            ipf.add(&other[1], &meta(&other[1]), 0, 1, 0),
            IpfVerdict::Dropped(v) if v == vec![0, 1]
        ));
        assert_eq!(ipf.held(), 0);
        // An exact duplicate is dropped alone.
        assert!(matches!(
            ipf.add(&frags[0], &meta(&frags[0]), 0, 2, 0),
            IpfVerdict::Held
        ));
        assert!(matches!(
            ipf.add(&frags[0], &meta(&frags[0]), 0, 3, 0),
            IpfVerdict::Dropped(v) if v == vec![3]
        ));
        // Other zones are other datagrams; incomplete lists time out.
        assert!(matches!(
            ipf.add(&frags[1], &meta(&frags[1]), 5, 4, 1),
            IpfVerdict::Held
        ));
        assert_eq!(ipf.held(), 2);
        assert!(ipf.sweep(14_999).is_empty());
        let mut gone = ipf.sweep(15_001);
        gone.sort();
        assert_eq!(gone, vec![2, 4]);
        assert_eq!(ipf.held(), 0);
        // The global limit.
        let tiny = Ipf::new(IpfConfig {
            max_frags: 1,
            ..small()
        });
        assert!(matches!(
            tiny.add(&frags[0], &meta(&frags[0]), 0, 0, 0),
            IpfVerdict::Held
        ));
        assert!(matches!(
            tiny.add(&frags[1], &meta(&frags[1]), 0, 1, 0),
            IpfVerdict::Dropped(v) if v == vec![1]
        ));
    }

    /// Cuts an IPv6 frame (no extension headers) into fragments with a Fragment header.
    fn fragment6(frame: &[u8], size: usize, id: u32) -> Vec<Vec<u8>> {
        let payload = &frame[54..];
        let mut out = vec![];
        let mut off = 0;
        while off < payload.len() {
            let end = (off + size).min(payload.len());
            let mut f = frame[..54].to_vec();
            let next = f[20];
            f[20] = 44;
            let more = u16::from(end < payload.len());
            let fo = ((off / 8) as u16) << 3 | more;
            f.extend_from_slice(&[next, 0]);
            f.extend_from_slice(&fo.to_be_bytes());
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(&payload[off..end]);
            let plen = (8 + end - off) as u16;
            f[18..20].copy_from_slice(&plen.to_be_bytes());
            out.push(f);
            off = end;
        }
        out
    }

    #[test]
    fn ipv6_fragments_reassemble_and_track() {
        use crate::testpkt::{udp6, v6addr};
        let whole = udp6(v6addr(1), v6addr(2), 4000, 53, &[9u8; 90]);
        let frags = fragment6(&whole, 40, 0xdead_beef);
        assert_eq!(frags.len(), 3);
        let ipf = Ipf::new(small());
        let mut done = None;
        for (i, f) in frags.iter().enumerate().rev() {
            let m = meta(f);
            assert!(m.frag && m.v6);
            match ipf.add(f, &m, 0, i, 0) {
                IpfVerdict::Held => {}
                IpfVerdict::Complete(r) => done = Some(r),
                v => panic!("{v:?}"),
            }
        }
        let mut r = done.expect("complete");
        assert_eq!(r.frame, whole);
        assert_eq!(r.fragments, vec![2, 1, 0]);
        let ct = Conntrack::default();
        let req = CtRequest {
            commit: true,
            ..CtRequest::default()
        };
        let res = ct.execute_one(&mut r.frame, &r.meta, &req, 0);
        assert_eq!(res.state, ct_state::TRK | ct_state::NEW);
        // The same fragments with another id are another datagram.
        let other = fragment6(&whole, 40, 7);
        assert!(matches!(
            ipf.add(&other[0], &meta(&other[0]), 0, 0, 0),
            IpfVerdict::Held
        ));
        assert_eq!(ipf.held(), 1);
    }

    #[test]
    fn truncated_fragments_never_panic() {
        let whole = udp4([10, 0, 0, 1], [10, 0, 0, 2], 5000, 53, &[7u8; 100]);
        let frags = fragment(&whole, 48);
        let ipf = Ipf::new(small());
        let m = meta(&frags[1]);
        for cut in 0..frags[1].len() {
            let _ = ipf.add(&frags[1][..cut], &m, 0, cut, 0);
        }
        let w6 = crate::testpkt::udp6(
            crate::testpkt::v6addr(1),
            crate::testpkt::v6addr(2),
            1,
            2,
            &[1u8; 50],
        );
        let f6 = fragment6(&w6, 24, 1);
        let m6 = meta(&f6[0]);
        for cut in 0..f6[0].len() {
            let _ = ipf.add(&f6[0][..cut], &m6, 0, cut, 0);
        }
    }
}
