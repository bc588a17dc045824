//! The one-pass extractor: a frame's headers into a [`FlowKey`] (see the parent module's essay).

use super::*;

/// A fixed-size view of `N` bytes at `at`, or `None` if the buffer is too short.
#[inline(always)]
pub(super) fn chunk<const N: usize>(b: &[u8], at: usize) -> Option<&[u8; N]> {
    b.get(at..)?.first_chunk::<N>()
}

#[inline(always)]
pub(super) fn be16(hi: u8, lo: u8) -> u16 {
    u16::from_be_bytes([hi, lo])
}

#[inline(always)]
pub(super) fn off16(at: usize) -> Option<u16> {
    u16::try_from(at).ok()
}

/// Extracts the flow key of `frame`, received on `in_port`. Never panics.
#[inline]
pub fn extract(frame: &[u8], in_port: u32) -> FlowKey {
    let mut key = FlowKey::ZERO;
    extract_into(&mut key, frame, in_port);
    key
}

/// Overwrites `key` (metadata included) with the flow key of `frame`, received on
/// `in_port`, and returns where its headers start. Never panics.
#[inline]
pub fn extract_into(key: &mut FlowKey, frame: &[u8], in_port: u32) -> Offsets {
    extract_into_with(key, frame, in_port, vlan_limit())
}

/// How many VLAN tags the extractor parses by default (see [`set_vlan_limit`]).
pub(super) static VLAN_LIMIT: AtomicUsize = AtomicUsize::new(MAX_VLAN_TAGS);

/// The most VLAN tags a flow key holds.
pub const MAX_VLAN_TAGS: usize = 2;

/// Sets how many VLAN tags [`extract_into`] parses, process-wide, as OVS's
/// `other_config:vlan-limit` does: `n` tags (at most [`MAX_VLAN_TAGS`]), `0` for as many as
/// the key holds. Beyond the limit a tag is payload: `dl_type` is its TPID and nothing after
/// it is parsed, so rules matching L3/L4 fields do not match. The library default is
/// [`MAX_VLAN_TAGS`]; the daemon sets OVS's default, 1. Whoever changes it must flush caches
/// keyed by the old parse.
pub fn set_vlan_limit(n: usize) {
    let n = if n == 0 {
        MAX_VLAN_TAGS
    } else {
        n.min(MAX_VLAN_TAGS)
    };
    VLAN_LIMIT.store(n, Ordering::Relaxed);
}

/// The current limit (see [`set_vlan_limit`]).
#[inline(always)]
pub fn vlan_limit() -> usize {
    VLAN_LIMIT.load(Ordering::Relaxed)
}

/// [`extract_into`] with an explicit VLAN tag limit (1 or 2).
///
/// The common frame, untagged Ethernet II carrying an IPv4 datagram without options that
/// is not a fragment, takes a fast path: one length check up front, then reads at fixed
/// offsets. Every other frame, and every frame the fast path declines, goes through the
/// general layer-by-layer parse ([`extract_into_general`]); both give the same key and
/// offsets for every frame (a property test and the fuzz target pin this).
pub fn extract_into_with(
    key: &mut FlowKey,
    frame: &[u8],
    in_port: u32,
    max_tags: usize,
) -> Offsets {
    clear(key, in_port);
    if let Some(offs) = fast_ipv4(key, frame) {
        return offs;
    }
    general(key, frame, max_tags)
}

/// [`extract_into_with`] without its fast path: the general parse for every frame. For
/// differential tests and fuzzing; the switch calls [`extract_into`].
pub fn extract_into_general(
    key: &mut FlowKey,
    frame: &[u8],
    in_port: u32,
    max_tags: usize,
) -> Offsets {
    clear(key, in_port);
    general(key, frame, max_tags)
}

/// Zeroes `key` but for `in_port`.
#[inline(always)]
fn clear(key: &mut FlowKey, in_port: u32) {
    // Clear the key as whole words (vector stores), not field by field. One 360-byte clear
    // compiles to a call to memset; two clears with the store of `in_port` between them
    // stay two runs of inline stores (a store of another value ends the run the compiler
    // would merge), fewer instructions than checking the tail blocks for zero first.
    let w = bytemuck::cast_mut::<FlowKey, [u64; FLOW_KEY_WORDS]>(key);
    let (head, tail) = w.split_at_mut(CT_WORDS_START);
    head.fill(0);
    // `in_port` is the first field: word 0 is its bytes then `recirc_id`'s zero ones.
    let mut word0 = [0u8; 8];
    word0[..4].copy_from_slice(&in_port.to_ne_bytes());
    if let Some(first) = head.first_mut() {
        *first = u64::from_ne_bytes(word0);
    }
    tail.fill(0);
}

/// The general parse of a cleared key (kept out of line: the fast path's caller then
/// saves no registers for it).
#[inline(never)]
fn general(key: &mut FlowKey, frame: &[u8], max_tags: usize) -> Offsets {
    let mut offs = Offsets::default();
    parse_l2(key, frame, &mut offs, max_tags.clamp(1, MAX_VLAN_TAGS));
    offs
}

/// Where `dl_dst` starts, `dl_src` following it.
const MACS: usize = core::mem::offset_of!(FlowKey, dl_dst);
const _: () = assert!(core::mem::offset_of!(FlowKey, dl_src) == MACS + 6);

/// Bytes the fast path reads at fixed offsets: the Ethernet header and an IPv4 header
/// without options.
const FAST_HDRS: usize = 14 + 20;

/// The fast path of [`extract_into_with`] on a cleared key: an untagged Ethernet II frame
/// of type IPv4 whose header has no options (version and IHL byte 0x45), whose datagram
/// is all there and which is not a fragment. `None`, with the key untouched, for any
/// other frame. What it fills is what [`parse_l2`] and [`parse_ipv4`] fill for such a
/// frame; the transport header goes through the general [`parse_l4`].
#[inline(always)]
fn fast_ipv4(key: &mut FlowKey, frame: &[u8]) -> Option<Offsets> {
    let f = frame.first_chunk::<FAST_HDRS>()?;
    let total = usize::from(be16(f[16], f[17]));
    if be16(f[12], f[13]) != ETH_TYPE_IPV4
        || f[14] != 0x45
        || be16(f[20], f[21]) & 0x3fff != 0
        || total < 20
    {
        return None;
    }
    // The whole datagram must be present; anything after it is link-layer padding.
    let l4 = frame.get(FAST_HDRS..14 + total)?;
    // Both MACs in one 12-byte copy (an 8-byte and a 4-byte move).
    if let Some(macs) = bytemuck::bytes_of_mut(key).get_mut(MACS..MACS + 12) {
        macs.copy_from_slice(&f[..12]);
    }
    key.dl_type = ETH_TYPE_IPV4;
    key.nw_src = arr(f, 26);
    key.nw_dst = arr(f, 30);
    key.nw_tos = f[15];
    key.nw_ttl = f[22];
    key.nw_proto = f[23];
    parse_l4(key, l4, false);
    Some(Offsets {
        l2_5: Some(14),
        l3: Some(14),
        l4: Some(FAST_HDRS as u16),
    })
}

#[inline(always)]
pub(super) fn parse_l2(key: &mut FlowKey, frame: &[u8], offs: &mut Offsets, max_tags: usize) {
    let Some(eth) = chunk::<14>(frame, 0) else {
        return;
    };
    key.dl_dst = arr(eth, 0);
    key.dl_src = arr(eth, 6);
    let mut ty = be16(eth[12], eth[13]);
    // `at` is the offset of the type field just read; the payload starts at `at + 2`.
    let mut at = 12usize;
    for i in 0..max_tags {
        if ty != ETH_TYPE_VLAN && ty != ETH_TYPE_VLAN_8021AD {
            break;
        }
        // A tag counts only if its TCI and the following type field are both there.
        let Some(q) = chunk::<4>(frame, at + 2) else {
            break;
        };
        if let (Some(tpid), Some(tci)) = (key.vlan_tpid.get_mut(i), key.vlan_tci.get_mut(i)) {
            *tpid = ty;
            *tci = be16(q[0], q[1]) | VLAN_PRESENT;
        }
        ty = be16(q[2], q[3]);
        at += 4;
    }
    let mut l3 = at + 2;
    if ty < 0x600 {
        ty = DL_TYPE_NONE;
        if let Some(llc) = chunk::<8>(frame, l3) {
            if llc[..6] == [0xaa, 0xaa, 0x03, 0, 0, 0] {
                let snap = be16(llc[6], llc[7]);
                if snap >= 0x600 {
                    ty = snap;
                    l3 += 8;
                }
            }
        }
    }
    key.dl_type = ty;
    offs.l2_5 = off16(l3);
    match ty {
        ETH_TYPE_IPV4 => parse_ipv4(key, frame, l3, offs),
        ETH_TYPE_IPV6 => parse_ipv6(key, frame, l3, offs),
        ETH_TYPE_ARP | ETH_TYPE_RARP => parse_arp(key, frame, l3, offs),
        ETH_TYPE_MPLS | ETH_TYPE_MPLS_MCAST => parse_mpls(key, frame, l3),
        ETH_TYPE_PBB => {
            // 802.1ah I-TAG: PCP/DEI/UCA/reserved, then the 24-bit I-SID. Like MPLS, what
            // the backbone frame carries is not looked at.
            if let Some(t) = chunk::<4>(frame, l3) {
                key.pbb_isid = u32::from_be_bytes(*t) & 0x00ff_ffff;
            }
        }
        _ => {}
    }
}

#[inline(always)]
pub(super) fn parse_mpls(key: &mut FlowKey, frame: &[u8], mut at: usize) {
    let mut n = 0u8;
    for slot in key.mpls_lse.iter_mut() {
        let Some(l) = chunk::<4>(frame, at) else {
            break;
        };
        let lse = u32::from_be_bytes(*l);
        *slot = lse;
        n += 1;
        at += 4;
        if lse & 0x100 != 0 {
            break;
        }
    }
    key.mpls_n = n;
}

#[inline(always)]
pub(super) fn parse_arp(key: &mut FlowKey, frame: &[u8], at: usize, offs: &mut Offsets) {
    let Some(a) = chunk::<28>(frame, at) else {
        return;
    };
    // Ethernet hardware addresses and IPv4 protocol addresses only.
    if be16(a[0], a[1]) != 1 || be16(a[2], a[3]) != ETH_TYPE_IPV4 || a[4] != 6 || a[5] != 4 {
        return;
    }
    offs.l3 = off16(at);
    let op = be16(a[6], a[7]);
    key.nw_proto = if op <= 0xff { op as u8 } else { 0 };
    key.arp_sha = arr(a, 8);
    key.nw_src = arr(a, 14);
    key.arp_tha = arr(a, 18);
    key.nw_dst = arr(a, 24);
}

#[inline(always)]
pub(super) fn parse_ipv4(key: &mut FlowKey, frame: &[u8], at: usize, offs: &mut Offsets) {
    let Some(h) = chunk::<20>(frame, at) else {
        return;
    };
    if h[0] >> 4 != 4 {
        return;
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(be16(h[2], h[3]));
    if ihl < 20 || total < ihl {
        return;
    }
    // The whole datagram must be present; anything after it is link-layer padding.
    let Some(dgram) = frame.get(at..).and_then(|d| d.get(..total)) else {
        return;
    };
    offs.l3 = off16(at);
    key.nw_src = arr(h, 12);
    key.nw_dst = arr(h, 16);
    key.nw_tos = h[1];
    key.nw_ttl = h[8];
    key.nw_proto = h[9];
    let frag = be16(h[6], h[7]);
    if frag & 0x3fff != 0 {
        key.nw_frag = NW_FRAG_ANY;
        if frag & 0x1fff != 0 {
            key.nw_frag |= NW_FRAG_LATER;
            return;
        }
    }
    let Some(l4) = dgram.get(ihl..) else {
        return;
    };
    offs.l4 = off16(at + ihl);
    parse_l4(key, l4, false);
}

/// Rank of an extension header in RFC 8200's recommended order, used for the UNSEQ/UNREP
/// bits: Hop-by-Hop, Destination Options (before Routing), Routing, Fragment, AH, ESP,
/// Destination Options (final).
pub(super) const RANK_HOP: u8 = 0;
pub(super) const RANK_DEST1: u8 = 1;
pub(super) const RANK_ROUTER: u8 = 2;
pub(super) const RANK_FRAG: u8 = 3;
pub(super) const RANK_AUTH: u8 = 4;
pub(super) const RANK_ESP: u8 = 5;
pub(super) const RANK_DEST2: u8 = 6;

#[inline(always)]
pub(super) fn parse_ipv6(key: &mut FlowKey, frame: &[u8], at: usize, offs: &mut Offsets) {
    let Some(h) = chunk::<40>(frame, at) else {
        return;
    };
    if h[0] >> 4 != 6 {
        return;
    }
    let plen = usize::from(be16(h[4], h[5]));
    // The whole payload must be present; anything after it is link-layer padding.
    let Some(payload) = frame.get(at + 40..).and_then(|p| p.get(..plen)) else {
        return;
    };
    offs.l3 = off16(at);
    let vtc = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    key.nw_tos = (vtc >> 20) as u8;
    key.ipv6_label = vtc & 0x000f_ffff;
    key.nw_ttl = h[7];
    key.ipv6_src = arr(h, 8);
    key.ipv6_dst = arr(h, 24);

    let mut nh = h[6];
    let mut p = 0usize; // offset into `payload`
    let mut bits = 0u16;
    let mut seen = 0u8; // one bit per rank
    let mut last_rank = 0u8;
    loop {
        let (bit, rank) = match nh {
            IPPROTO_HOPOPTS => (EXTHDR_HOP, RANK_HOP),
            IPPROTO_DSTOPTS => (
                EXTHDR_DEST,
                if last_rank <= RANK_DEST1 {
                    RANK_DEST1
                } else {
                    RANK_DEST2
                },
            ),
            IPPROTO_ROUTING => (EXTHDR_ROUTER, RANK_ROUTER),
            IPPROTO_FRAGMENT => (EXTHDR_FRAG, RANK_FRAG),
            IPPROTO_AH => (EXTHDR_AUTH, RANK_AUTH),
            IPPROTO_ESP => (EXTHDR_ESP, RANK_ESP),
            IPPROTO_NONE => {
                bits |= EXTHDR_NONEXT;
                break;
            }
            _ => break,
        };
        bits |= bit;
        if seen & (1 << rank) != 0 {
            bits |= EXTHDR_UNREP;
        }
        if rank < last_rank {
            bits |= EXTHDR_UNSEQ;
        }
        seen |= 1 << rank;
        last_rank = last_rank.max(rank);
        if nh == IPPROTO_ESP {
            // Everything after the SPI and sequence number is encrypted.
            break;
        }
        let Some(e) = chunk::<8>(payload, p) else {
            return finish_ipv6(key, nh, bits);
        };
        let len = match nh {
            IPPROTO_FRAGMENT => 8,
            IPPROTO_AH => (usize::from(e[1]) + 2) * 4,
            _ => (usize::from(e[1]) + 1) * 8,
        };
        if payload.len() - p < len {
            return finish_ipv6(key, nh, bits);
        }
        if nh == IPPROTO_FRAGMENT {
            key.nw_frag = NW_FRAG_ANY;
            if be16(e[2], e[3]) & 0xfff8 != 0 {
                key.nw_frag |= NW_FRAG_LATER;
                return finish_ipv6(key, e[0], bits);
            }
        }
        nh = e[0];
        p += len;
    }
    finish_ipv6(key, nh, bits);
    if let Some(l4) = payload.get(p..) {
        offs.l4 = off16(at + 40 + p);
        parse_l4(key, l4, true);
    }
}

#[inline(always)]
pub(super) fn finish_ipv6(key: &mut FlowKey, nw_proto: u8, exthdr: u16) {
    key.nw_proto = nw_proto;
    key.ipv6_exthdr = exthdr;
}

#[inline(always)]
pub(super) fn parse_l4(key: &mut FlowKey, l4: &[u8], v6: bool) {
    match key.nw_proto {
        IPPROTO_TCP => {
            if let Some(t) = chunk::<20>(l4, 0) {
                let doff = usize::from(t[12] >> 4) * 4;
                if doff >= 20 && doff <= l4.len() {
                    key.tp_src = be16(t[0], t[1]);
                    key.tp_dst = be16(t[2], t[3]);
                    key.tcp_flags = be16(t[12], t[13]) & 0x0fff;
                }
            }
        }
        IPPROTO_UDP => {
            if let Some(u) = chunk::<8>(l4, 0) {
                key.tp_src = be16(u[0], u[1]);
                key.tp_dst = be16(u[2], u[3]);
            }
        }
        IPPROTO_SCTP => {
            if let Some(s) = chunk::<12>(l4, 0) {
                key.tp_src = be16(s[0], s[1]);
                key.tp_dst = be16(s[2], s[3]);
            }
        }
        IPPROTO_ICMP if !v6 => {
            if let Some(i) = chunk::<8>(l4, 0) {
                key.tp_src = u16::from(i[0]);
                key.tp_dst = u16::from(i[1]);
            }
        }
        IPPROTO_ICMPV6 if v6 => {
            if let Some(i) = chunk::<8>(l4, 0) {
                key.tp_src = u16::from(i[0]);
                key.tp_dst = u16::from(i[1]);
                if i[1] == 0 && (i[0] == ICMPV6_ND_NS || i[0] == ICMPV6_ND_NA) {
                    parse_nd(key, l4);
                }
            }
        }
        _ => {}
    }
}

/// Neighbor Solicitation/Advertisement: the target address and the link-layer address
/// options. Any malformation (truncated target, zero-length or overlong option, a repeated
/// SLL or TLL) leaves all three ND fields zero.
#[inline(never)]
pub(super) fn parse_nd(key: &mut FlowKey, l4: &[u8]) {
    let Some(target) = chunk::<16>(l4, 8) else {
        return;
    };
    let mut sll: Option<[u8; 6]> = None;
    let mut tll: Option<[u8; 6]> = None;
    let mut p = 24usize;
    // Options come in units of 8 bytes; a tail shorter than that is ignored.
    while let Some(o) = chunk::<8>(l4, p) {
        let len = usize::from(o[1]) * 8;
        if len == 0 || len > l4.len() - p {
            return;
        }
        if len == 8 {
            let slot = match o[0] {
                1 => &mut sll,
                2 => &mut tll,
                _ => {
                    p += len;
                    continue;
                }
            };
            if slot.is_some() {
                return;
            }
            *slot = Some(arr(o, 2));
        }
        p += len;
    }
    key.nd_target = *target;
    key.arp_sha = sll.unwrap_or_default();
    key.arp_tha = tll.unwrap_or_default();
}
