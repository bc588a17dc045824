//! # IPv4 keys with ports, in registers
//!
//! ## What
//! [`parse_ports4`] is [`crate::key::parse`]'s path for IPv4 UDP, UDP-Lite and SCTP packets,
//! the tracker's usual case: the same reads and checks, without the other protocols'
//! branches, and the key returned as a [`Key4`], three words that stay in registers, instead
//! of written into a [`Parsed`]. `None` wherever `parse` must decide.
//!
//! [`ConnKey::is4`] compares a connection's key with a [`Key4`] word by word, without the
//! key ever being stored: the connection cache's last answer is checked that way
//! ([`crate::cache::ConnCache::get_last4`]). [`Key4::key`] makes the [`ConnKey`] when the
//! packet goes on to the hash and the table.
//!
//! ## Why it is the same
//! A proptest pins `parse_ports4` to `parse` (on frames with bytes changed, cut short,
//! layers misplaced), and another pins `is4` to `ConnKey`'s equality with [`Key4::key`].
//!
//! ## Threading
//! Pure functions on borrowed bytes; safe from any thread.
//!
//! [`Parsed`]: crate::key::Parsed

use crate::key::{ConnKey, PacketMeta, PROTO_SCTP, PROTO_UDP, PROTO_UDPLITE};

/// An IPv4 key with ports as [`parse_ports4`] finds it: the source and destination
/// addresses as the first eight bytes of [`ConnKey::src`] and [`ConnKey::dst`] read (the
/// address, then zeros), and the ports, zone, protocol and family packed as [`ConnKey`]'s
/// hash packs them (`v6` false). The rest of such a key is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key4 {
    src: u64,
    dst: u64,
    tail: u64,
}

/// The first eight bytes of an address as one word.
#[inline(always)]
fn word(a: &[u8; 16], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&a[i..i + 8]);
    u64::from_ne_bytes(b)
}

/// Ports, zone, protocol and family in one word.
#[inline(always)]
fn tail(sport: u16, dport: u16, zone: u16, proto: u8, v6: bool) -> u64 {
    u64::from(sport)
        | u64::from(dport) << 16
        | u64::from(zone) << 32
        | u64::from(proto) << 48
        | u64::from(v6) << 56
}

impl Key4 {
    /// The key of an IPv4 packet from `src` to `dst`, ports `sport` and `dport`, protocol
    /// `proto`, in `zone`.
    #[inline(always)]
    pub fn new(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, zone: u16, proto: u8) -> Key4 {
        let w = |a: [u8; 4]| u64::from_ne_bytes([a[0], a[1], a[2], a[3], 0, 0, 0, 0]);
        Key4 {
            src: w(src),
            dst: w(dst),
            tail: tail(sport, dport, zone, proto, false),
        }
    }

    /// The same key as a [`ConnKey`].
    #[inline]
    pub fn key(&self) -> ConnKey {
        let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
        src[..8].copy_from_slice(&self.src.to_ne_bytes());
        dst[..8].copy_from_slice(&self.dst.to_ne_bytes());
        ConnKey {
            src,
            dst,
            sport: self.tail as u16,
            dport: (self.tail >> 16) as u16,
            zone: (self.tail >> 32) as u16,
            proto: (self.tail >> 48) as u8,
            v6: false,
            icmp_type: 0,
            icmp_code: 0,
        }
    }
}

impl ConnKey {
    /// True when this key is `k` (`*self == k.key()`), compared word by word: first the
    /// ports, zone and protocol, which tell most other connections' keys apart, then the
    /// rest at once.
    #[inline(always)]
    pub fn is4(&self, k: &Key4) -> bool {
        tail(self.sport, self.dport, self.zone, self.proto, self.v6) == k.tail
            && (word(&self.src, 0) ^ k.src)
                | word(&self.src, 8)
                | (word(&self.dst, 0) ^ k.dst)
                | word(&self.dst, 8)
                | u64::from(u16::from_ne_bytes([self.icmp_type, self.icmp_code]))
                == 0
    }
}

/// The key [`crate::key::parse`] finds for an IPv4 UDP, UDP-Lite or SCTP packet that is not a
/// fragment and that it finds valid (its result is then `Parsed::Conn` with this key and no
/// TCP fields); `None` for every other packet, which `parse` must decide (see the module
/// documentation).
#[inline(always)]
pub fn parse_ports4(frame: &[u8], meta: &PacketMeta, zone: u16) -> Option<Key4> {
    let proto = meta.nw_proto;
    if meta.frag || meta.v6 || !matches!(proto, PROTO_UDP | PROTO_UDPLITE | PROTO_SCTP) {
        return None;
    }
    let l3 = usize::from(meta.l3);
    let l4 = usize::from(meta.l4?);
    let h = frame.get(l3..)?.first_chunk::<20>()?;
    let end = l3 + usize::from(u16::from_be_bytes([h[2], h[3]]));
    if end > frame.len() || l4 > end || !packet::csum::ipv4_header_ok(frame.get(l3..l4)?) {
        return None;
    }
    let u = frame.get(l4..end)?.first_chunk::<8>()?;
    // A zero UDP checksum over IPv4 means "none".
    if proto == PROTO_UDP
        && u[6] | u[7] != 0
        && !meta.l4_csum_trusted
        && !packet::csum::l4_checksum_ok(frame, l3, l4, proto, true)
    {
        return None;
    }
    Some(Key4::new(
        [h[12], h[13], h[14], h[15]],
        [h[16], h[17], h[18], h[19]],
        u16::from_be_bytes([u[0], u[1]]),
        u16::from_be_bytes([u[2], u[3]]),
        zone,
        proto,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{parse, Parsed};
    use crate::testpkt::*;

    proptest::proptest! {
        /// `parse_ports4` answers only where `parse` finds a connection without TCP
        /// fields, and then with `parse`'s key: UDP (with and without its checksum), TCP,
        /// SCTP and ICMP frames, bytes changed, cut short, layers misplaced, flags flipped.
        #[test]
        fn parse_ports4_is_parse_where_it_answers(
            kind in 0u8..5,
            edits in proptest::collection::vec((0usize..80, proptest::num::u8::ANY), 0..4),
            cut in 0usize..90,
            l3_delta in -2i32..3,
            l4_delta in -4i32..5,
            frag: bool,
            trusted: bool,
            zone: u16,
        ) {
            let mut f = match kind {
                0 => udp4([10, 0, 0, 1], [10, 0, 0, 2], 7, 9, b"hello"),
                1 => {
                    let mut f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 7, 9, b"hello");
                    f[40] = 0;
                    f[41] = 0;
                    f
                }
                2 => tcp4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2, 3, 4, 0x10, b"xyz"),
                3 => other4([1, 2, 3, 4], [5, 6, 7, 8], PROTO_SCTP, &[0, 1, 0, 2, 0, 0, 0, 0, 9]),
                _ => icmp4_echo([1, 2, 3, 4], [5, 6, 7, 8], 8, 5, 1),
            };
            let (k, o) = flow_of(&f);
            let mut m = PacketMeta::from_flow(&k, &o).expect("IP");
            let intact = edits.is_empty() && cut >= f.len() && l3_delta == 0 && l4_delta == 0;
            if intact && !frag && matches!(kind, 0 | 1 | 3) {
                proptest::prop_assert!(parse_ports4(&f, &m, zone).is_some(), "answers");
            }
            for (at, v) in edits {
                if let Some(b) = f.get_mut(at) {
                    *b = v;
                }
            }
            f.truncate(cut.max(14));
            m.l3 = (i32::from(m.l3) + l3_delta).max(0) as u16;
            m.l4 = m.l4.map(|l4| (i32::from(l4) + l4_delta).max(0) as u16);
            m.frag |= frag;
            m.l4_csum_trusted = trusted;
            if let Some(key) = parse_ports4(&f, &m, zone) {
                proptest::prop_assert_eq!(parse(&f, &m, zone), Parsed::Conn { key: key.key(), tcp: None });
            }
        }

        /// `is4` is `ConnKey`'s equality with the `Key4`'s key: keys equal to it, and keys
        /// with one byte of their fields changed (a byte of the addresses' upper twelve, the
        /// family, the ICMP type and code among them).
        #[test]
        fn is4_is_equality(
            src: [u8; 4],
            dst: [u8; 4],
            sport: u16,
            dport: u16,
            zone: u16,
            proto: u8,
            field in 0usize..10,
            at in 0usize..16,
            v: u8,
        ) {
            let k = Key4::new(src, dst, sport, dport, zone, proto);
            let mut c = k.key();
            proptest::prop_assert!(c.is4(&k));
            let set = |x: u16, hi: bool| {
                let mut n = x.to_ne_bytes();
                n[usize::from(hi)] = v;
                u16::from_ne_bytes(n)
            };
            match field {
                0 => c.src[at] = v,
                1 => c.dst[at] = v,
                2 => c.sport = set(c.sport, at % 2 == 1),
                3 => c.dport = set(c.dport, at % 2 == 1),
                4 => c.zone = set(c.zone, at % 2 == 1),
                5 => c.proto = v,
                6 => c.v6 = v % 2 == 1,
                7 => c.icmp_type = v,
                8 => c.icmp_code = v,
                _ => {}
            }
            proptest::prop_assert_eq!(c.is4(&k), c == k.key());
        }
    }
}
