//! # Internet checksums
//!
//! The one's-complement sum of RFC 1071 and everything built on it that a switch needs:
//!
//! * [`add`] accumulates big-endian 16-bit words into a 32-bit running sum that is only
//!   folded ([`fold`]) at the end; [`checksum`] is the complemented fold of one buffer.
//! * [`pseudo_ipv4`] / [`pseudo_ipv6`] give the (unfolded) sum of the TCP/UDP pseudo-header,
//!   to be added to the sum of the L4 header and payload.
//! * [`update16`], [`update32`] and [`update_bytes`] patch an existing checksum after a field
//!   changed, without touching the rest of the packet (RFC 1624, equation 3:
//!   `HC' = ~(~HC + ~m + m')`, which never produces the -0 that the older RFC 1141 formula
//!   could).
//! * [`complete_partial`] finishes a packet whose L4 checksum was left for the device
//!   (Linux/virtio "CHECKSUM_PARTIAL": the field holds the folded pseudo-header sum), and
//!   [`set_l4_checksum`] computes one from scratch given where the IP and L4 headers start.
//!
//! Sums are `u32` and unfolded between calls; [`add`] keeps them from overflowing however long
//! the input is. Big-endian word order is used throughout, so the results are the values to
//! store on the wire with `to_be_bytes`. Nothing here allocates or panics.

/// Folds a 32-bit one's-complement sum to 16 bits.
#[inline]
pub fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Adds `data` (as big-endian 16-bit words, odd byte padded with zero) to a running sum.
///
/// Eight bytes at a time: a big-endian 32-bit word `hi << 16 | lo` is congruent to
/// `hi + lo` modulo 0xffff (2^16 is 1), so the two halves of each 64-bit load go into a
/// 64-bit accumulator, which no frame can overflow. The result is folded to at most 17
/// bits, congruent to the 16-bit sum and zero only when that is, so [`fold`] gives what
/// word-by-word addition gives and callers may add a few more 16-bit values before folding.
#[inline]
pub fn add(sum: u32, data: &[u8]) -> u32 {
    let mut acc = u64::from(sum);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let w = u64::from_be_bytes(w);
        acc += (w >> 32) + (w & 0xffff_ffff);
    }
    let mut words = chunks.remainder().chunks_exact(2);
    for c in &mut words {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [b] = words.remainder() {
        acc += u64::from(*b) << 8;
    }
    fold_wide(acc)
}

/// Folds a 64-bit accumulator of 16- and 32-bit big-endian words to at most 17 bits,
/// congruent modulo 0xffff and zero only when it is zero (see [`add`]).
#[inline(always)]
fn fold_wide(acc: u64) -> u32 {
    let s = (acc >> 32) + (acc & 0xffff_ffff);
    let s = (s >> 16) + (s & 0xffff);
    ((s >> 16) + (s & 0xffff)) as u32
}

/// The Internet checksum of `data`.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(add(0, data))
}

/// True if an IPv4 header (with its checksum field in place) sums to all ones.
///
/// The usual header, 20 bytes without options, is summed as five 32-bit words in native
/// byte order, in registers: a connection tracker checks it on every packet, and [`add`]'s
/// general loop, out of line, costs several times as much. Why that is the same test: a
/// 32-bit word `hi << 16 | lo` is congruent to `hi + lo` modulo 0xffff (2^16 is 1), and a
/// 16-bit word read in the other byte order is 256 times it modulo 0xffff (its bytes
/// `a << 8 | b` become `b << 8 | a`), so the native sum is congruent to 256 times the
/// big-endian one; 256 is prime to 0xffff, so one is a multiple of 0xffff exactly when the
/// other is. The fold of a non-zero sum is the one value in 1..=0xffff congruent to it, so
/// the header sums to all ones exactly when its sum is a non-zero multiple of 0xffff (and
/// a sum is zero only when every byte is).
#[inline(always)]
pub fn ipv4_header_ok(hdr: &[u8]) -> bool {
    let Ok(h) = <&[u8; 20]>::try_from(hdr) else {
        return fold(add(0, hdr)) == 0xffff;
    };
    let w = |i: usize| u64::from(u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    let sum = w(0) + w(4) + w(8) + w(12) + w(16);
    sum != 0 && sum % 0xffff == 0
}

/// Unfolded sum of the IPv4 TCP/UDP pseudo-header: source, destination, zero, protocol,
/// L4 length (header plus payload).
#[inline]
pub fn pseudo_ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4_len: u16) -> u32 {
    let w = |b: [u8; 4]| {
        u32::from(u16::from_be_bytes([b[0], b[1]])) + u32::from(u16::from_be_bytes([b[2], b[3]]))
    };
    w(src) + w(dst) + u32::from(proto) + u32::from(l4_len)
}

/// Unfolded sum of the IPv6 upper-layer pseudo-header (RFC 8200 section 8.1): source,
/// destination, 32-bit upper-layer length, next header.
#[inline]
pub fn pseudo_ipv6(src: &[u8; 16], dst: &[u8; 16], proto: u8, l4_len: u32) -> u32 {
    let sum = add(add(0, src), dst);
    sum + (l4_len >> 16) + (l4_len & 0xffff) + u32::from(proto)
}

/// Updates checksum `csum` after a 16-bit field changed from `old` to `new` (RFC 1624).
#[inline]
pub fn update16(csum: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!csum) + u32::from(!old) + u32::from(new))
}

/// Updates checksum `csum` after a 32-bit field (at an even offset) changed (RFC 1624).
#[inline]
pub fn update32(csum: u16, old: u32, new: u32) -> u16 {
    let sum = u32::from(!csum)
        + u32::from(!(old >> 16) as u16)
        + u32::from(!old as u16)
        + (new >> 16)
        + (new & 0xffff);
    !fold(sum)
}

/// Updates checksum `csum` after an even-offset field (an address, say) changed from `old`
/// to `new`; both have the same length, which is even for an exact result.
#[inline]
pub fn update_bytes<const N: usize>(csum: u16, old: &[u8; N], new: &[u8; N]) -> u16 {
    // Subtracting `old` is adding its complement: sum(~old words) = ~sum(old) in one's
    // complement, so fold it separately and complement.
    let neg_old = u32::from(!fold(add(0, old)));
    !fold(u32::from(!csum) + neg_old + add(0, new))
}

/// Finishes a CHECKSUM_PARTIAL packet: the 16-bit field at `l4_off + csum_off` holds the
/// folded pseudo-header sum; replaces it with the checksum over `frame[l4_off..]`. A result
/// of zero is stored as 0xffff (its one's-complement twin), because zero means "no checksum"
/// to UDP. Returns false, changing nothing, if the field lies outside the frame.
pub fn complete_partial(frame: &mut [u8], l4_off: usize, csum_off: usize) -> bool {
    let Some(field) = l4_off.checked_add(csum_off) else {
        return false;
    };
    let Some(l4) = frame.get(l4_off..) else {
        return false;
    };
    if field.checked_add(2).is_none_or(|end| end > frame.len()) {
        return false;
    }
    let c = match !fold(add(0, l4)) {
        0 => 0xffff,
        c => c,
    };
    store16(frame, field, c)
}

/// Computes and stores a TCP/UDP/ICMPv6-style checksum from scratch: the IPv4 or IPv6 header
/// starts at `l3_off` (its version nibble says which), the L4 header at `l4_off`, its checksum
/// field `csum_off` bytes into it, and `proto` is the upper-layer protocol for the
/// pseudo-header (for IPv6 the last next-header value, since extension headers may sit between
/// `l3_off` and `l4_off`). The L4 length comes from the IP header's length field, so trailing
/// link padding is excluded. With `pseudo` false (ICMPv4) no pseudo-header is summed. A zero
/// result is stored as 0xffff. Returns false, changing nothing, on inconsistent offsets or
/// lengths.
pub fn set_l4_checksum(
    frame: &mut [u8],
    l3_off: usize,
    l4_off: usize,
    csum_off: usize,
    proto: u8,
    pseudo: bool,
) -> bool {
    let Some((start, end, ph)) = l4_span(frame, l3_off, l4_off, proto) else {
        return false;
    };
    let Some(field) = start.checked_add(csum_off) else {
        return false;
    };
    if field.checked_add(2).is_none_or(|e| e > end) || !store16(frame, field, 0) {
        return false;
    }
    let Some(l4) = frame.get(start..end) else {
        return false;
    };
    let sum = add(if pseudo { ph } else { 0 }, l4);
    let c = match !fold(sum) {
        0 => 0xffff,
        c => c,
    };
    store16(frame, field, c)
}

/// True if the L4 checksum (with the field in place) verifies; arguments as for
/// [`set_l4_checksum`].
pub fn l4_checksum_ok(frame: &[u8], l3_off: usize, l4_off: usize, proto: u8, pseudo: bool) -> bool {
    let Some((start, end, ph)) = l4_span(frame, l3_off, l4_off, proto) else {
        return false;
    };
    let Some(l4) = frame.get(start..end) else {
        return false;
    };
    fold(add(if pseudo { ph } else { 0 }, l4)) == 0xffff
}

/// The L4 byte range and the pseudo-header sum, from the IP header at `l3_off`.
fn l4_span(frame: &[u8], l3_off: usize, l4_off: usize, proto: u8) -> Option<(usize, usize, u32)> {
    let ip = frame.get(l3_off..)?;
    let ip_end;
    let ph;
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let h = ip.first_chunk::<20>()?;
            ip_end = l3_off.checked_add(usize::from(u16::from_be_bytes([h[2], h[3]])))?;
            let len = u16::try_from(ip_end.checked_sub(l4_off)?).ok()?;
            let src = [h[12], h[13], h[14], h[15]];
            let dst = [h[16], h[17], h[18], h[19]];
            ph = pseudo_ipv4(src, dst, proto, len);
        }
        Some(6) => {
            let h = ip.first_chunk::<40>()?;
            ip_end = l3_off.checked_add(40 + usize::from(u16::from_be_bytes([h[4], h[5]])))?;
            let len = u32::try_from(ip_end.checked_sub(l4_off)?).ok()?;
            let src = h[8..24].first_chunk::<16>()?;
            let dst = h[24..40].first_chunk::<16>()?;
            ph = pseudo_ipv6(src, dst, proto, len);
        }
        _ => return None,
    }
    if l4_off < l3_off || ip_end > frame.len() || l4_off > ip_end {
        return None;
    }
    Some((l4_off, ip_end, ph))
}

fn store16(frame: &mut [u8], at: usize, v: u16) -> bool {
    match frame.get_mut(at..).and_then(|s| s.first_chunk_mut::<2>()) {
        Some(f) => {
            *f = v.to_be_bytes();
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header from the usual worked example (checksum 0xb861).
    const IPV4_HDR: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 (folded).
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(add(0, &d)), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn ipv4_header_vector() {
        assert_eq!(checksum(&IPV4_HDR), 0xb861);
        let mut h = IPV4_HDR;
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert!(ipv4_header_ok(&h));
        h[8] = 0x3f; // TTL decrement without fixing the checksum
        assert!(!ipv4_header_ok(&h));
    }

    #[test]
    fn odd_length_and_long_inputs() {
        assert_eq!(fold(add(0, &[0xab])), 0xab00);
        let long = vec![0xffu8; 1 << 20];
        assert_eq!(fold(add(0, &long)), 0xffff);
        assert_eq!(checksum(&[]), 0xffff);
    }

    /// The sum of RFC 1071 one 16-bit word at a time, folding as it goes.
    fn add_reference(mut sum: u32, data: &[u8]) -> u32 {
        for c in data.chunks(2) {
            let w = u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]);
            sum = u32::from(fold(sum)) + u32::from(w);
        }
        sum
    }

    proptest::proptest! {
        #[test]
        fn add_agrees_with_the_word_by_word_sum(
            sum in proptest::prelude::any::<u32>(),
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            cut in 0usize..8,
        ) {
            // Every start and length, so every remainder path is taken.
            let d = &data[cut.min(data.len())..];
            let got = add(sum, d);
            let want = add_reference(sum, d);
            proptest::prop_assert_eq!(fold(got), fold(want));
            proptest::prop_assert_eq!(got == 0, want == 0);
            proptest::prop_assert!(got < 1 << 17);
        }
    }

    proptest::proptest! {
        #[test]
        fn ipv4_header_ok_agrees_with_the_word_by_word_sum(
            hdr in proptest::collection::vec(proptest::prelude::any::<u8>(), 20..=24),
            fix in proptest::prelude::any::<bool>(),
        ) {
            let mut h = hdr;
            if fix {
                // A header whose checksum field is right, so the true case is taken too.
                h[10] = 0;
                h[11] = 0;
                let c = !fold(add_reference(0, &h));
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
            let want = fold(add_reference(0, &h)) == 0xffff;
            proptest::prop_assert_eq!(ipv4_header_ok(&h), want);
            if fix {
                proptest::prop_assert!(want);
            }
        }
    }

    #[test]
    fn ipv4_header_all_zero_and_all_ones() {
        assert!(!ipv4_header_ok(&[0; 20]));
        assert!(ipv4_header_ok(&[0xff; 20]));
    }

    #[test]
    fn incremental_matches_recompute() {
        let mut h = IPV4_HDR;
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        // TTL 0x40 -> 0x3f changes the word (ttl, proto) = 0x4011 -> 0x3f11.
        let c = update16(0xb861, 0x4011, 0x3f11);
        h[8] = 0x3f;
        h[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(c, checksum(&h));
        // Source address 192.168.0.1 -> 10.1.2.3.
        let mut h2 = IPV4_HDR;
        h2[12..16].copy_from_slice(&[10, 1, 2, 3]);
        assert_eq!(update32(0xb861, 0xc0a8_0001, 0x0a01_0203), checksum(&h2));
        assert_eq!(
            update_bytes(0xb861, &[0xc0, 0xa8, 0, 1], &[10, 1, 2, 3]),
            checksum(&h2)
        );
        // RFC 1624 section 4 example: HC = 0xdd2f, m = 0x5555 -> m' = 0x3285 gives 0x0000.
        assert_eq!(update16(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    #[test]
    fn incremental_exhaustive_small() {
        // Random-ish 16-bit field changes in a 6-byte buffer always agree with recomputing.
        let mut x: u32 = 12345;
        for _ in 0..10_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let mut d = [
                (x >> 8) as u8,
                (x >> 16) as u8,
                0,
                0,
                (x >> 24) as u8,
                x as u8,
            ];
            let c = checksum(&d);
            let old = u16::from_be_bytes([d[4], d[5]]);
            let new = (x >> 3) as u16;
            d[4..6].copy_from_slice(&new.to_be_bytes());
            let want = checksum(&d);
            let got = update16(c, old, new);
            // 0x0000 and 0xffff are the same value in one's complement; RFC 1624's formula
            // only yields 0x0000 when every word is zero.
            assert!(
                got == want || (got ^ want) == 0xffff && d == [0; 6],
                "{got:#x} {want:#x}"
            );
        }
    }

    #[test]
    fn pseudo_headers_known_vectors() {
        // UDP over IPv4: 10.0.0.1:1234 -> 10.0.0.2:80, payload "hi".
        let mut f = vec![];
        f.extend_from_slice(&[
            0x45, 0, 0, 30, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x50, 0x00, 0x0a, 0x00, 0x00, b'h', b'i']);
        assert!(set_l4_checksum(&mut f, 0, 20, 6, 17, true));
        // Worked by hand: 0x0a00+0x0001+0x0a00+0x0002+0x0011+0x000a (pseudo) = 0x141e;
        // 0x04d2+0x0050+0x000a+0x6869 (UDP) = 0x6d95; total 0x81b3 -> checksum 0x7e4c.
        assert_eq!(&f[26..28], &[0x7e, 0x4c]);
        assert!(l4_checksum_ok(&f, 0, 20, 17, true));

        // The same through CHECKSUM_PARTIAL: seed the field with the folded pseudo sum.
        let mut g = f.clone();
        let ph = fold(pseudo_ipv4([10, 0, 0, 1], [10, 0, 0, 2], 17, 10));
        g[26..28].copy_from_slice(&ph.to_be_bytes());
        assert!(complete_partial(&mut g, 20, 6));
        assert_eq!(g, f);

        // IPv6: ::1 -> ::2, UDP 7 -> 7, no payload.
        let mut h = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        h.extend_from_slice(&[0; 15]);
        h.push(1);
        h.extend_from_slice(&[0; 15]);
        h.push(2);
        h.extend_from_slice(&[0, 7, 0, 7, 0, 8, 0, 0]);
        assert!(set_l4_checksum(&mut h, 0, 40, 6, 17, true));
        // 1 + 2 + 8 + 17 (pseudo) + 7 + 7 + 8 = 50 = 0x32 -> 0xffcd.
        assert_eq!(&h[46..48], &[0xff, 0xcd]);
        assert!(l4_checksum_ok(&h, 0, 40, 17, true));
        assert_eq!(pseudo_ipv6(&[0; 16], &[0; 16], 6, 0x0001_0002), 0x0009);
    }

    #[test]
    fn rejects_bad_offsets() {
        let mut f = [
            0x45u8, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0,
        ];
        assert!(!set_l4_checksum(&mut f, 0, 20, 6, 17, true)); // IP length past the frame
        assert!(!complete_partial(&mut f, 20, 4));
        assert!(!complete_partial(&mut f, usize::MAX, 4));
        assert!(!set_l4_checksum(&mut f, 0, usize::MAX, 6, 17, true));
        assert!(!l4_checksum_ok(&[], 0, 0, 6, true));
    }

    #[test]
    fn zero_result_is_stored_as_ffff() {
        // A UDP datagram whose checksum would come out as 0.
        let mut f = [0u8; 10];
        // All-zero L4 with the field seeded 0xffff sums to 0xffff -> !0xffff = 0 -> 0xffff.
        f[6..8].copy_from_slice(&[0xff, 0xff]);
        assert!(complete_partial(&mut f, 0, 6));
        assert_eq!(&f[6..8], &[0xff, 0xff]);
    }
}
