//! # NAT packet rewriting
//!
//! ## What
//! Changes a packet's addresses and ports (or ICMP query id) from the tuple it carries to
//! the tuple NAT wants, patching every checksum that covers them incrementally (RFC 1624):
//! the IPv4 header checksum, the TCP/UDP/UDP-Lite checksum (which covers the pseudo-header
//! addresses and the ports), the ICMP checksum for a changed query id, and the ICMPv6
//! checksum (which also covers the pseudo-header). A UDP-over-IPv4 checksum of zero means
//! "none" and stays zero. SCTP's CRC32c covers no pseudo-header, so SCTP gets address
//! translation only (the allocator never changes its ports).
//!
//! For an ICMP error, [`rewrite_icmp_error`] translates the quoted datagram (its addresses,
//! ports or id, its IPv4 header checksum and, where the quoted bytes hold it, its L4
//! checksum), the outer addresses that belong to the connection, and then recomputes the
//! outer ICMP checksum over the whole message.
//!
//! ## Invariants
//! The caller passes offsets that [`crate::key::parse`] accepted; every access is still
//! a checked `get`, and a failed one leaves the rest of the packet as it was. No panics.

use crate::key::{ConnKey, Quoted, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP, PROTO_UDPLITE};
use packet::csum;

fn rd16(f: &[u8], at: usize) -> Option<u16> {
    f.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

fn wr16(f: &mut [u8], at: usize, v: u16) {
    if let Some(b) = f.get_mut(at..at + 2) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// Replaces the `N`-byte field at `at` with `new`, updating the checksums at the listed
/// offsets. Checksum fields holding 0 in `skip_zero` positions are left alone.
fn set_field<const N: usize>(f: &mut [u8], at: usize, new: &[u8; N], sums: &[(usize, bool)]) {
    let Some(old) = f
        .get(at..at + N)
        .and_then(|s| s.first_chunk::<N>())
        .copied()
    else {
        return;
    };
    if old == *new {
        return;
    }
    for &(c, skip_zero) in sums {
        if let Some(v) = rd16(f, c) {
            if skip_zero && v == 0 {
                continue;
            }
            let mut n = csum::update_bytes(v, &old, new);
            if skip_zero && n == 0 {
                n = 0xffff;
            }
            wr16(f, c, n);
        }
    }
    if let Some(b) = f.get_mut(at..at + N) {
        b.copy_from_slice(new);
    }
}

/// Where the L4 checksum of `proto` sits, whether it covers the pseudo-header, and whether
/// zero means "no checksum".
fn l4_sum(proto: u8, v6: bool, l4: usize) -> Option<(usize, bool, bool)> {
    match proto {
        PROTO_TCP => Some((l4 + 16, true, false)),
        PROTO_UDP => Some((l4 + 6, true, !v6)),
        PROTO_UDPLITE => Some((l4 + 6, true, false)),
        PROTO_ICMP => Some((l4 + 2, false, false)),
        PROTO_ICMPV6 => Some((l4 + 2, true, false)),
        _ => None,
    }
}

/// Rewrites addresses at `l3` and the L4 identifiers at `l4` (whose checksum field must lie
/// before `end`) from `from` to `to`.
fn rewrite_at(f: &mut [u8], l3: usize, l4: usize, end: usize, from: &ConnKey, to: &ConnKey) {
    let v6 = from.v6;
    let proto = from.proto;
    let l4s = l4_sum(proto, v6, l4).filter(|(c, _, _)| c + 2 <= end);
    // Checksums covering the addresses.
    let mut addr_sums: [(usize, bool); 2] = [(usize::MAX, false); 2];
    let mut n = 0;
    if !v6 {
        addr_sums[n] = (l3 + 10, false);
        n += 1;
    }
    if let Some((c, pseudo, skip_zero)) = l4s {
        if pseudo {
            addr_sums[n] = (c, skip_zero);
            n += 1;
        }
    }
    let sums = &addr_sums[..n];
    if v6 {
        set_field::<16>(f, l3 + 8, &to.src, sums);
        set_field::<16>(f, l3 + 24, &to.dst, sums);
    } else {
        set_field::<4>(f, l3 + 12, &to.src4(), sums);
        set_field::<4>(f, l3 + 16, &to.dst4(), sums);
    }
    let port_sums: &[(usize, bool)] = match &l4s {
        Some((c, _, skip_zero)) => &[(*c, *skip_zero)],
        None => &[],
    };
    match proto {
        PROTO_TCP | PROTO_UDP | PROTO_UDPLITE => {
            set_field::<2>(f, l4, &to.sport.to_be_bytes(), port_sums);
            set_field::<2>(f, l4 + 2, &to.dport.to_be_bytes(), port_sums);
        }
        PROTO_ICMP | PROTO_ICMPV6 => {
            set_field::<2>(f, l4 + 4, &to.sport.to_be_bytes(), port_sums);
        }
        _ => {}
    }
}

/// Rewrites a packet carrying tuple `from` (addresses/ports as in its key) to `to`.
pub fn rewrite(f: &mut [u8], l3: usize, l4: usize, from: &ConnKey, to: &ConnKey) {
    let end = f.len();
    rewrite_at(f, l3, l4, end, from, to);
}

/// Translates an ICMP error at `l3`/`l4` (outer) whose quoted datagram is at `q`. `key` is
/// the connection key the error matched (the reverse of the quoted tuple) and `target` the
/// tuple a packet of that direction is translated to.
pub fn rewrite_icmp_error(
    f: &mut [u8],
    l3: usize,
    l4: usize,
    q: &Quoted,
    key: &ConnKey,
    target: &ConnKey,
) {
    let v6 = key.v6;
    // The quoted datagram travelled the other way: from reverse(key) to reverse(target).
    let qfrom = key.reverse();
    let qto = target.reverse();
    rewrite_at(f, q.l3, q.l4, q.end, &qfrom, &qto);
    // Outer addresses: only those that are the connection's own endpoints.
    let (sa, da) = if v6 {
        (l3 + 8, l3 + 24)
    } else {
        (l3 + 12, l3 + 16)
    };
    let ip_sum: &[(usize, bool)] = if v6 { &[] } else { &[(l3 + 10, false)] };
    let alen = if v6 { 16 } else { 4 };
    let cur_src = f.get(sa..sa + alen).map(|s| s.to_vec());
    let cur_dst = f.get(da..da + alen).map(|s| s.to_vec());
    if cur_dst.as_deref() == Some(&key.dst[..alen]) && key.dst != target.dst {
        if v6 {
            set_field::<16>(f, da, &target.dst, ip_sum);
        } else {
            set_field::<4>(f, da, &target.dst4(), ip_sum);
        }
    }
    if cur_src.as_deref() == Some(&key.src[..alen]) && key.src != target.src {
        if v6 {
            set_field::<16>(f, sa, &target.src, ip_sum);
        } else {
            set_field::<4>(f, sa, &target.src4(), ip_sum);
        }
    }
    let proto = if v6 { PROTO_ICMPV6 } else { PROTO_ICMP };
    let _ = csum::set_l4_checksum(f, l3, l4, 2, proto, v6);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{parse, PacketMeta, Parsed};
    use crate::testpkt::*;

    fn meta(f: &[u8]) -> PacketMeta {
        let (k, o) = flow_of(f);
        PacketMeta::from_flow(&k, &o).unwrap()
    }

    fn key_of(f: &[u8]) -> ConnKey {
        match parse(f, &meta(f), 0) {
            Parsed::Conn { key, .. } => key,
            p => panic!("{p:?}"),
        }
    }

    #[test]
    fn snat_tcp_v4_matches_a_packet_built_translated() {
        let mut f = tcp4([10, 0, 0, 1], [8, 8, 8, 8], 1234, 80, 7, 0, SYN, b"data");
        let want = tcp4([1, 2, 3, 4], [8, 8, 8, 8], 40000, 80, 7, 0, SYN, b"data");
        let from = key_of(&f);
        let to = ConnKey {
            src: key_of(&want).src,
            sport: 40000,
            ..from
        };
        rewrite(&mut f, 14, 34, &from, &to);
        assert_eq!(f, want);
    }

    #[test]
    fn dnat_udp_v6_and_icmp_id() {
        let mut f = udp6(v6addr(1), v6addr(2), 5000, 53, b"q");
        let want = udp6(v6addr(1), v6addr(9), 5000, 5353, b"q");
        let from = key_of(&f);
        let to = key_of(&want);
        rewrite(&mut f, 14, 54, &from, &to);
        assert_eq!(f, want);

        let mut e = icmp4_echo([10, 0, 0, 1], [8, 8, 8, 8], 8, 100, 1);
        let want = icmp4_echo([1, 2, 3, 4], [8, 8, 8, 8], 8, 200, 1);
        let ke = key_of(&e);
        rewrite(&mut e, 14, 34, &ke, &key_of(&want));
        assert_eq!(e, want);

        let mut e6 = icmp6_echo(v6addr(1), v6addr(2), 128, 100, 1);
        let want6 = icmp6_echo(v6addr(7), v6addr(2), 128, 300, 1);
        let ke6 = key_of(&e6);
        rewrite(&mut e6, 14, 54, &ke6, &key_of(&want6));
        assert_eq!(e6, want6);
    }

    #[test]
    fn udp4_zero_checksum_stays_zero() {
        let mut f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, b"z");
        f[40..42].copy_from_slice(&[0, 0]);
        let from = key_of(&f);
        let mut to = from;
        to.src[0] = 99;
        to.sport = 77;
        rewrite(&mut f, 14, 34, &from, &to);
        assert_eq!(&f[40..42], &[0, 0]);
        assert!(csum::ipv4_header_ok(&f[14..34]));
        assert_eq!(f[26], 99);
    }

    #[test]
    fn icmp_error_inner_and_outer() {
        // SNAT 10.0.0.1:1234 -> 1.2.3.4:40000 towards 8.8.8.8:53. A router 9.9.9.9 sends
        // "port unreachable" to 1.2.3.4 quoting the translated datagram.
        let sent = udp4([1, 2, 3, 4], [8, 8, 8, 8], 40000, 53, b"query!!!");
        let mut err = icmp4_error([9, 9, 9, 9], [1, 2, 3, 4], 3, 3, &sent[14..]);
        let orig = udp4([10, 0, 0, 1], [8, 8, 8, 8], 1234, 53, b"query!!!");
        let want = icmp4_error([9, 9, 9, 9], [10, 0, 0, 1], 3, 3, &orig[14..]);
        let m = meta(&err);
        let Parsed::IcmpError { key, quoted } = parse(&err, &m, 0) else {
            panic!()
        };
        // The connection's reply key is 8.8.8.8:53 -> 1.2.3.4:40000; a reply-direction
        // packet is translated to 8.8.8.8:53 -> 10.0.0.1:1234.
        let okey = key_of(&orig);
        let target = okey.reverse();
        assert_eq!(key.sport, 53);
        rewrite_icmp_error(&mut err, 14, 34, &quoted, &key, &target);
        assert_eq!(err, want);
        assert!(csum::l4_checksum_ok(&err, 14, 34, 1, false));
    }
}
