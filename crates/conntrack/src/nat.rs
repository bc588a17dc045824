//! # NAT ranges and tuple allocation
//!
//! ## What
//! [`Nat`] is what a `ct(...,nat...)` action asks for: `Apply` (plain `nat`: translate the
//! packets of connections that already have NAT), or source/destination NAT to a
//! [`NatRange`] of addresses and optionally ports, with the `persistent`, `hash` and
//! `random` flags. When a committed connection gets NAT, [`for_each_candidate`] proposes
//! reply keys (the reverse of a translated tuple) until the caller manages to insert one
//! that no other connection holds: a chosen port is never shared.
//!
//! ## How (as OVS's userspace NAT chooses)
//! * The first address is `min + h % n` where `h` hashes the connection (`hash`, the
//!   default), hashes only its source and destination addresses (`persistent`: a client
//!   keeps its external address), or is random (`random`). Addresses are then tried in
//!   order, wrapping around the range.
//! * SNAT with a port range starts at `min + h % n` in that range. SNAT without one, and
//!   the source port under DNAT, keeps the original port if free and otherwise searches the
//!   port's class: 1-511, 600-1023 or 1024-65535. DNAT's destination port is the range's
//!   `min + h % n`, or the original port without a range.
//! * ICMP query ids are treated as ports (the original id first), so pings from several
//!   hosts with the same id share one address. SCTP and other protocols get addresses
//!   only.
//! * `nat(src)` or `nat(dst)` without addresses is OVS's "all-zero" NAT
//!   ([`NatRange::keep`]): the address stays the connection's own, and the source port
//!   stays too unless another connection already holds the resulting reply tuple, when it
//!   is searched for as above. The connection counts as NATed (`+snat`/`+dnat`).
//! * At most [`MAX_PROBES`] candidates are tried per connection, which bounds the time a
//!   poll thread spends on a new connection when a range is (nearly) exhausted; the
//!   connection is then not committed (the packet stays `+new`) and `nat_exhausted` counts.

use crate::key::{ConnKey, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP, PROTO_UDPLITE};
use std::net::{IpAddr, Ipv4Addr};

/// Candidates tried before NAT gives up on a connection.
pub const MAX_PROBES: usize = 16_384;

/// An address and port range for NAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NatRange {
    /// First address.
    pub addr_min: IpAddr,
    /// Last address (same family, not below `addr_min`).
    pub addr_max: IpAddr,
    /// First port; 0 with `port_max` 0 for "no port range".
    pub port_min: u16,
    /// Last port.
    pub port_max: u16,
    /// Same source address -> same translated address.
    pub persistent: bool,
    /// Hash-based choice (the default).
    pub hash: bool,
    /// Random choice.
    pub random: bool,
}

impl NatRange {
    /// A range of addresses (one when equal), ports optional; checks the family and order.
    pub fn new(
        addr_min: IpAddr,
        addr_max: IpAddr,
        ports: Option<(u16, u16)>,
    ) -> Result<NatRange, String> {
        if addr_min.is_ipv4() != addr_max.is_ipv4() {
            return Err("NAT address range mixes IPv4 and IPv6".into());
        }
        if addr_to_u128(addr_min) > addr_to_u128(addr_max) {
            return Err("NAT address range is reversed".into());
        }
        let (port_min, port_max) = ports.unwrap_or((0, 0));
        if port_min > port_max || (ports.is_some() && port_min == 0) {
            return Err("NAT port range is invalid".into());
        }
        Ok(NatRange {
            addr_min,
            addr_max,
            port_min,
            port_max,
            persistent: false,
            hash: false,
            random: false,
        })
    }

    /// The range of `nat(src)`/`nat(dst)` without addresses (all zeros, as OVS encodes
    /// it): each connection keeps its own address. See the module documentation.
    pub fn keep() -> NatRange {
        NatRange {
            addr_min: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            addr_max: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port_min: 0,
            port_max: 0,
            persistent: false,
            hash: true,
            random: false,
        }
    }

    /// True for [`NatRange::keep`]'s all-zero range (of either family).
    pub fn is_keep(&self) -> bool {
        self.addr_min.is_unspecified() && self.addr_max.is_unspecified()
    }

    fn has_ports(&self) -> bool {
        self.port_max != 0
    }
}

/// The NAT part of a `ct` action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Nat {
    /// `nat` without a range: translate packets of connections that have NAT.
    Apply,
    /// `nat(src=...)`.
    Src(NatRange),
    /// `nat(dst=...)`.
    Dst(NatRange),
}

fn addr_to_u128(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

fn load_addr(a: &[u8; 16], v6: bool) -> u128 {
    if v6 {
        u128::from_be_bytes(*a)
    } else {
        u128::from(u32::from_be_bytes([a[0], a[1], a[2], a[3]]))
    }
}

fn store_addr(dst: &mut [u8; 16], v: u128, v6: bool) {
    if v6 {
        *dst = v.to_be_bytes();
    } else {
        *dst = [0; 16];
        dst[..4].copy_from_slice(&(v as u32).to_be_bytes());
    }
}

/// True if NAT may change this protocol's ports (TCP, UDP, UDP-Lite, ICMP query ids).
pub fn pat_proto(proto: u8) -> bool {
    matches!(
        proto,
        PROTO_TCP | PROTO_UDP | PROTO_UDPLITE | PROTO_ICMP | PROTO_ICMPV6
    )
}

fn class_range(p: u16) -> (u16, u16) {
    if p < 512 {
        (1, 511)
    } else if p < 1024 {
        (600, 1023)
    } else {
        (1024, 65535)
    }
}

/// (start, min, max) of a port walk.
type Walk = (u16, u16, u16);

fn walk_from(h: u64, min: u16, max: u16) -> Walk {
    let n = u64::from(max - min) + 1;
    (min + (h % n) as u16, min, max)
}

/// Candidates in a walk: the range, plus the start itself when it lies outside (an
/// original port of 512-599 is tried before the 600-1023 class).
fn walk_len(w: &Walk) -> u32 {
    let (start, min, max) = *w;
    let n = u32::from(max - min) + 1;
    if (min..=max).contains(&start) {
        n
    } else {
        n + 1
    }
}

fn step(w: &Walk, i: u32) -> u16 {
    let (start, min, max) = *w;
    let n = u32::from(max - min) + 1;
    if (min..=max).contains(&start) {
        let off = (u32::from(start - min) + i) % n;
        min + off as u16
    } else if i == 0 {
        start
    } else {
        min + ((i - 1) % n) as u16
    }
}

/// Proposes reply keys for connection `key` under `nat` (`Src`/`Dst`), hash `h`, calling
/// `try_rev` with each until it returns true. Returns false when no candidate was taken
/// (range exhausted, the probe limit hit, or the range's family differs from the key's).
pub fn for_each_candidate(
    key: &ConnKey,
    nat: &Nat,
    h: u64,
    mut try_rev: impl FnMut(&ConnKey) -> bool,
) -> bool {
    let (snat, r) = match nat {
        Nat::Src(r) => (true, r),
        Nat::Dst(r) => (false, r),
        Nat::Apply => return false,
    };
    let (amin, amax) = if r.is_keep() {
        let own = load_addr(if snat { &key.src } else { &key.dst }, key.v6);
        (own, own)
    } else if r.addr_min.is_ipv6() != key.v6 {
        return false;
    } else {
        (addr_to_u128(r.addr_min), addr_to_u128(r.addr_max))
    };
    let n_addr = (amax - amin).saturating_add(1);
    let a0 = u128::from(h) % n_addr;
    let pat = pat_proto(key.proto);
    let icmp = key.is_icmp();
    let h2 = h.rotate_left(29);

    // Source-port walk (the translated source port, or ICMP id).
    let sw: Walk = if !pat {
        (key.sport, key.sport, key.sport)
    } else if snat && r.has_ports() {
        walk_from(h2, r.port_min, r.port_max)
    } else {
        let (lo, hi) = class_range(key.sport);
        (key.sport, lo, hi)
    };
    // Destination-port walk.
    let dw: Walk = if pat && !snat && !icmp && r.has_ports() {
        walk_from(h2, r.port_min, r.port_max)
    } else {
        (key.dport, key.dport, key.dport)
    };
    let n_s = walk_len(&sw);
    let n_d = walk_len(&dw);

    let mut probes = 0usize;
    let mut ai: u128 = 0;
    while ai < n_addr {
        let addr = amin + (a0 + ai) % n_addr;
        for di in 0..n_d {
            let dport = step(&dw, di);
            for si in 0..n_s {
                let sport = step(&sw, si);
                // Translated tuple: (src, sport) -> (dst, dport); the reply key is its
                // reverse.
                let mut t = *key;
                if snat {
                    store_addr(&mut t.src, addr, key.v6);
                } else {
                    store_addr(&mut t.dst, addr, key.v6);
                }
                if icmp {
                    t.sport = sport;
                    t.dport = sport;
                } else {
                    t.sport = sport;
                    t.dport = dport;
                }
                if try_rev(&t.reverse()) {
                    return true;
                }
                probes += 1;
                if probes >= MAX_PROBES {
                    return false;
                }
            }
        }
        ai += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::net::Ipv4Addr;

    fn key(sport: u16) -> ConnKey {
        let mut k = ConnKey {
            proto: PROTO_TCP,
            sport,
            dport: 80,
            ..ConnKey::default()
        };
        k.src[..4].copy_from_slice(&[10, 0, 0, 1]);
        k.dst[..4].copy_from_slice(&[8, 8, 8, 8]);
        k
    }

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(a))
    }

    #[test]
    fn snat_keeps_port_when_free_then_searches_its_class() {
        let r = NatRange::new(v4([1, 2, 3, 4]), v4([1, 2, 3, 4]), None).unwrap();
        let mut first = None;
        for_each_candidate(&key(5000), &Nat::Src(r), 99, |rev| {
            first = Some(*rev);
            true
        });
        let rev = first.unwrap();
        assert_eq!((rev.dst4(), rev.dport, rev.sport), ([1, 2, 3, 4], 5000, 80));
        // With the first 10 candidates taken, the 11th is another port of 1024-65535.
        let mut seen = vec![];
        for_each_candidate(&key(700), &Nat::Src(r), 99, |rev| {
            seen.push(rev.dport);
            seen.len() > 10
        });
        assert_eq!(seen[0], 700);
        assert!(seen.iter().all(|p| (600..=1023).contains(p)));
        // 512-599 lies in no class: the port itself first, then 600-1023.
        let mut seen = vec![];
        for_each_candidate(&key(550), &Nat::Src(r), 99, |rev| {
            seen.push(rev.dport);
            seen.len() > 3
        });
        assert_eq!(seen[0], 550);
        assert!(seen[1..].iter().all(|p| (600..=1023).contains(p)));
    }

    /// All-zero SNAT: the connection's own tuple first; when that reply tuple is taken,
    /// another source port of the same class, the address unchanged.
    #[test]
    fn zero_snat_keeps_the_tuple_unless_it_is_taken() {
        let k = key(5000);
        let mut seen = vec![];
        for_each_candidate(&k, &Nat::Src(NatRange::keep()), 3, |rev| {
            seen.push(*rev);
            seen.len() == 3
        });
        assert_eq!(seen[0], k.reverse(), "the original tuple first");
        for rev in &seen[1..] {
            assert_eq!(rev.dst4(), [10, 0, 0, 1]);
            assert!(rev.dport >= 1024 && rev.dport != 5000);
            assert_eq!((rev.src4(), rev.sport), ([8, 8, 8, 8], 80));
        }
        // All-zero DNAT keeps the destination; IPv6 keys keep theirs too.
        let mut got = None;
        for_each_candidate(&k, &Nat::Dst(NatRange::keep()), 3, |rev| {
            got = Some(*rev);
            true
        });
        assert_eq!(got, Some(k.reverse()));
        let mut k6 = k;
        k6.v6 = true;
        k6.src = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut got = None;
        for_each_candidate(&k6, &Nat::Src(NatRange::keep()), 3, |rev| {
            got = Some(*rev);
            true
        });
        assert_eq!(got, Some(k6.reverse()));
    }

    #[test]
    fn port_range_exhausts_without_duplicates() {
        let r = NatRange::new(v4([1, 2, 3, 4]), v4([1, 2, 3, 5]), Some((1000, 1009))).unwrap();
        let mut seen = HashSet::new();
        let ok = for_each_candidate(&key(5000), &Nat::Src(r), 7, |rev| {
            assert!(seen.insert((rev.dst4(), rev.dport)));
            false
        });
        assert!(!ok);
        assert_eq!(seen.len(), 20);
    }

    #[test]
    fn dnat_port_range_and_bad_ranges() {
        let r = NatRange::new(v4([10, 1, 1, 1]), v4([10, 1, 1, 3]), Some((8080, 8081))).unwrap();
        let mut got = None;
        for_each_candidate(&key(40000), &Nat::Dst(r), 5, |rev| {
            got = Some(*rev);
            true
        });
        let rev = got.unwrap();
        assert_eq!(rev.dport, 40000);
        assert!((8080..=8081).contains(&rev.sport));
        assert_eq!(rev.src[0], 10);
        assert!(NatRange::new(v4([1, 1, 1, 2]), v4([1, 1, 1, 1]), None).is_err());
        assert!(NatRange::new(v4([1, 1, 1, 1]), v4([1, 1, 1, 1]), Some((5, 4))).is_err());
        let v6 = IpAddr::V6(std::net::Ipv6Addr::LOCALHOST);
        assert!(NatRange::new(v4([1, 1, 1, 1]), v6, None).is_err());
        // A v6 range never applies to a v4 connection.
        let r6 = NatRange::new(v6, v6, None).unwrap();
        assert!(!for_each_candidate(&key(1), &Nat::Src(r6), 0, |_| true));
    }
}
