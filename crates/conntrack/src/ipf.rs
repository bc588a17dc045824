//! # IP fragment reassembly before tracking
//!
//! ## What
//! Connection tracking needs the L4 header, which only a datagram's first fragment has,
//! and the state of every fragment must be that of the whole datagram. [`Ipf`] collects the
//! fragments of each IPv4 datagram (keyed by zone, addresses, protocol and IP id) and each
//! IPv6 datagram (zone, addresses and the Fragment header's id), and once
//! all have arrived hands back the reassembled datagram, to be tracked like any packet,
//! together with the caller's handles of the fragments in the datagram's order (by offset,
//! as OVS sends them on), so that the datapath can give each fragment the datagram's
//! `ct_state` and send them on unchanged.
//!
//! ## Rules
//! * A non-last fragment must carry a multiple of 8 bytes, and be at least
//!   [`IpfConfig::min_frag_v4`] (IPv6: [`IpfConfig::min_frag_v6`]) bytes long from its IP
//!   header on (OVS's `ipf-set-min-frag` measure and defaults). A fragment that overlaps
//!   one already held (an exact duplicate included), or whose end disagrees with the
//!   datagram's last fragment, is dropped alone and the list kept, as OVS does; overlaps
//!   never reach the reassembled datagram (they are how fragment attacks hide headers).
//! * At most [`IpfConfig::max_frags`] fragments are held in all, and at most
//!   [`IpfConfig::max_per_list`] per datagram; beyond that new fragments are dropped.
//! * A list that is not complete [`IpfConfig::timeout_ms`] after its first fragment is
//!   dropped by [`Ipf::sweep`], which the control thread calls with the tracker's sweep.
//! * [`Ipf::status`] counts per family what OVS's `dpctl/ipf-get-status` shows: fragments
//!   accepted, sent on with a complete datagram, too small, overlapping, and dropped by
//!   the sweep (OVS's "purged"; OVS sends an expired list's fragments on as `+inv` first,
//!   which a sweep on a control thread cannot, so "expired" stays 0 here).
//! * IPv6: the Hop-by-Hop, Routing and Destination Options headers before the Fragment
//!   header are the unfragmentable part, kept from the first fragment; the reassembled
//!   datagram has no Fragment header. The caller tracks the reassembled datagram and
//!   carries its translation over to the fragments (`datapath::ipf::translate`).
//!
//! ## Threading
//! One mutex around the lists, the limits and the counters: only fragments take it (the
//! caller hands over a packet only when `PacketMeta::frag` is set), so unfragmented
//! traffic never touches it. The per-family switches are atomics the caller reads first.

use crate::key::PacketMeta;
use packet::csum;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Reassembly limits.
#[derive(Clone, Copy, Debug)]
pub struct IpfConfig {
    /// Fragments held at once, all datagrams together.
    pub max_frags: usize,
    /// Fragments per datagram.
    pub max_per_list: usize,
    /// Smallest IPv4 fragment that is not the last, IP header included.
    pub min_frag_v4: usize,
    /// Smallest IPv6 fragment that is not the last, IPv6 header included.
    pub min_frag_v6: usize,
    /// How long a datagram may take to arrive whole, milliseconds.
    pub timeout_ms: u64,
}

/// OVS's bounds: `ipf-set-min-frag` below this is refused (both families).
pub const MIN_FRAG_LOWER_BOUND: usize = 400;
/// OVS's bound: `ipf-set-max-nfrags` above this is refused.
pub const MAX_FRAGS_UPPER_BOUND: usize = 5000;

impl Default for IpfConfig {
    /// OVS's defaults.
    fn default() -> Self {
        IpfConfig {
            max_frags: 1000,
            max_per_list: 64,
            min_frag_v4: 1200,
            min_frag_v6: 1280,
            timeout_ms: 15_000,
        }
    }
}

/// Fragment counters of one family (OVS's `ipf-get-status` lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpfCounts {
    /// Fragments taken into a list.
    pub accepted: u64,
    /// Fragments handed back with their complete datagram.
    pub completed: u64,
    /// Fragments of expired lists sent on (always 0 here: see the module documentation).
    pub expired: u64,
    /// Non-last fragments below the minimum size.
    pub too_small: u64,
    /// Fragments overlapping one already held (duplicates included).
    pub overlap: u64,
    /// Fragments of expired lists dropped.
    pub purged: u64,
    /// Fragments dropped for another reason: malformed, over a limit, contradicting the
    /// datagram's end, or a datagram that does not parse once whole.
    pub invalid: u64,
}

/// What `dpctl/ipf-get-status` shows.
#[derive(Clone, Copy, Debug)]
pub struct IpfStatus {
    /// Reassembly on for IPv4, IPv6.
    pub enabled: [bool; 2],
    /// The limits.
    pub cfg: IpfConfig,
    /// Fragments held now.
    pub held: usize,
    /// IPv4's counters, IPv6's.
    pub counts: [IpfCounts; 2],
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
    /// The fragments' handles by offset, the first fragment first.
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

impl<T> List<T> {
    /// Whether the piece `a..b` (the datagram's last when not `more`) cannot join the list:
    /// `Some(true)` when it overlaps a piece held, `Some(false)` when its end contradicts
    /// the datagram's, `None` when it fits.
    fn refuses(&self, a: usize, b: usize, more: bool) -> Option<bool> {
        let ends = |p: &Piece| p.off + p.data.len();
        if self.pieces.iter().any(|p| a < ends(p) && p.off < b) {
            return Some(true);
        }
        let conflict = match (more, self.total) {
            (false, Some(t)) => t != b,
            (false, None) => self.pieces.iter().any(|p| ends(p) > b),
            (true, Some(t)) => b > t,
            (true, None) => false,
        };
        conflict.then_some(false)
    }
}

/// Fragment lists awaiting completion.
pub struct Ipf<T> {
    enabled: [AtomicBool; 2],
    inner: Mutex<Inner<T>>,
}

struct Inner<T> {
    cfg: IpfConfig,
    lists: HashMap<FragKey, List<T>>,
    held: usize,
    counts: [IpfCounts; 2],
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
    /// Empty lists, both families enabled.
    pub fn new(cfg: IpfConfig) -> Ipf<T> {
        Ipf {
            enabled: [AtomicBool::new(true), AtomicBool::new(true)],
            inner: Mutex::new(Inner {
                cfg,
                lists: HashMap::new(),
                held: 0,
                counts: [IpfCounts::default(); 2],
            }),
        }
    }

    /// Fragments held now.
    pub fn held(&self) -> usize {
        self.inner.lock().held
    }

    /// Whether fragments of IPv6 (`v6`) or IPv4 are reassembled (else the caller tracks
    /// them as they are: `+inv`).
    #[inline]
    pub fn enabled(&self, v6: bool) -> bool {
        self.enabled[usize::from(v6)].load(Ordering::Relaxed)
    }

    /// Turns reassembly of one family on or off (held lists stay until complete or swept).
    pub fn set_enabled(&self, v6: bool, on: bool) {
        self.enabled[usize::from(v6)].store(on, Ordering::Relaxed);
    }

    /// The limits now.
    pub fn config(&self) -> IpfConfig {
        self.inner.lock().cfg
    }

    /// Changes the limits (for fragments that arrive from now on).
    pub fn set_config(&self, cfg: IpfConfig) {
        self.inner.lock().cfg = cfg;
    }

    /// Switches, limits, fragments held and counters.
    pub fn status(&self) -> IpfStatus {
        let g = self.inner.lock();
        IpfStatus {
            enabled: [self.enabled(false), self.enabled(true)],
            cfg: g.cfg,
            held: g.held,
            counts: g.counts,
        }
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
            self.inner.lock().counts[usize::from(meta.v6)].invalid += 1;
            return IpfVerdict::Dropped(vec![handle]);
        };
        let fam = usize::from(f.key.v6);
        let len = f.end - f.data;
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        let min = [inner.cfg.min_frag_v4, inner.cfg.min_frag_v6][fam];
        if f.more && f.end - f.l3 < min {
            inner.counts[fam].too_small += 1;
            return IpfVerdict::Dropped(vec![handle]);
        }
        if len == 0
            || (f.more && len % 8 != 0)
            || f.off + len > 65_535
            || inner.held >= inner.cfg.max_frags
        {
            inner.counts[fam].invalid += 1;
            return IpfVerdict::Dropped(vec![handle]);
        }
        let max_per_list = inner.cfg.max_per_list;
        let list = inner.lists.entry(f.key).or_insert_with(|| List {
            first_seen: now,
            pieces: Vec::new(),
            handles: Vec::new(),
            head: None,
            total: None,
        });
        if list.pieces.len() >= max_per_list {
            inner.counts[fam].invalid += 1;
            return IpfVerdict::Dropped(vec![handle]);
        }
        let b = f.off + len;
        match list.refuses(f.off, b, f.more) {
            Some(true) => {
                inner.counts[fam].overlap += 1;
                return IpfVerdict::Dropped(vec![handle]);
            }
            Some(false) => {
                inner.counts[fam].invalid += 1;
                return IpfVerdict::Dropped(vec![handle]);
            }
            None => {}
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
        inner.held += 1;
        inner.counts[fam].accepted += 1;
        let have: usize = list.pieces.iter().map(|p| p.data.len()).sum();
        let complete = list.head.is_some() && list.total == Some(have);
        if !complete {
            return IpfVerdict::Held;
        }
        let Some(mut list) = inner.lists.remove(&f.key) else {
            return IpfVerdict::Held;
        };
        inner.held -= list.handles.len();
        let n = list.handles.len() as u64;
        let mut order: Vec<(usize, T)> = list
            .pieces
            .iter()
            .map(|p| p.off)
            .zip(std::mem::take(&mut list.handles))
            .collect();
        order.sort_by_key(|o| o.0);
        list.handles = order.into_iter().map(|o| o.1).collect();
        match list.head.take().and_then(|h| build(h, &mut list.pieces)) {
            Some((frame, meta)) => {
                inner.counts[fam].completed += n;
                IpfVerdict::Complete(Reassembled {
                    frame,
                    meta,
                    fragments: list.handles,
                })
            }
            None => {
                inner.counts[fam].invalid += n;
                IpfVerdict::Dropped(list.handles)
            }
        }
    }

    /// The lists held, one line each in OVS's `ipf-get-status -m` layout (ferrovs keys a
    /// list by zone and not by recirculation id: `recirc_id` shows 0).
    pub fn dump_lists(&self) -> String {
        let g = self.inner.lock();
        let mut out = String::new();
        for (k, l) in &g.lists {
            let (src, dst) = if k.v6 {
                (
                    std::net::Ipv6Addr::from(k.src).to_string(),
                    std::net::Ipv6Addr::from(k.dst).to_string(),
                )
            } else {
                let a = |b: &[u8; 16]| std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string();
                (a(&k.src), a(&k.dst))
            };
            let state = match (l.head.is_some(), l.total.is_some()) {
                (true, true) => "first/last frag",
                (true, false) => "first frag",
                (false, true) => "last frag",
                (false, false) => "other frag",
            };
            out.push_str(&format!(
                "(src={src},dst={dst},recirc_id=0,ip_id={},dl_type=0x{:x},zone={},nw_proto={},num_fragments={},state={state})\n",
                k.id,
                if k.v6 { 0x86dd } else { 0x0800 },
                k.zone,
                k.proto,
                l.handles.len(),
            ));
        }
        out
    }

    /// Drops the lists that did not complete in time; returns their fragments.
    pub fn sweep(&self, now: u64) -> Vec<T> {
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        let timeout = inner.cfg.timeout_ms;
        let old: Vec<FragKey> = inner
            .lists
            .iter()
            .filter(|(_, l)| now.saturating_sub(l.first_seen) >= timeout)
            .map(|(k, _)| *k)
            .collect();
        let mut out = Vec::new();
        for k in old {
            if let Some(l) = inner.lists.remove(&k) {
                inner.held -= l.handles.len();
                inner.counts[usize::from(k.v6)].purged += l.handles.len() as u64;
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
    use crate::testpkt::{flow_of, fragment4 as fragment, fragment6, udp4};
    use crate::tracker::{ct_state, Conntrack, CtRequest};

    fn meta(f: &[u8]) -> PacketMeta {
        let (k, o) = flow_of(f);
        PacketMeta::from_flow(&k, &o).unwrap()
    }

    fn small() -> IpfConfig {
        IpfConfig {
            min_frag_v4: 0,
            min_frag_v6: 0,
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
        assert_eq!(r.fragments, vec![0, 1, 2], "by offset");
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
        assert_eq!(strict.status().counts[0].too_small, 1);
        // Overlap: a piece of a second cut of the same datagram at another size is dropped
        // alone; the list goes on.
        let ipf = Ipf::new(small());
        assert!(matches!(
            ipf.add(&frags[0], &meta(&frags[0]), 0, 2, 0),
            IpfVerdict::Held
        ));
        let other = fragment(&whole, 32);
        assert!(matches!(
            ipf.add(&other[1], &meta(&other[1]), 0, 1, 0),
            IpfVerdict::Dropped(v) if v == vec![1]
        ));
        assert_eq!(ipf.held(), 1);
        // An exact duplicate is dropped alone.
        assert!(matches!(
            ipf.add(&frags[0], &meta(&frags[0]), 0, 3, 0),
            IpfVerdict::Dropped(v) if v == vec![3]
        ));
        assert_eq!(ipf.status().counts[0].overlap, 2);
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
        assert_eq!(ipf.status().counts[0].purged, 2);
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
        assert_eq!(r.fragments, vec![0, 1, 2], "by offset");
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
