//! Zero-copy header views for code that reads a few fields of one header (switching modules,
//! datapath actions, tests), so that none of it indexes packet bytes by hand.
//!
//! Each view wraps any `T: AsRef<[u8]>` (a packet's data, a slice, a `Vec`). Its checked
//! constructor (`new_checked`) verifies everything the accessors rely on — lengths, and for
//! IPv4 the version, header length and total length — and after it no accessor can panic or
//! read out of bounds, whatever the bytes. Views never copy and never allocate. The hot path
//! does not use them: the flow extractor ([`crate::flow`]) reads every header in one pass.

use std::fmt;

/// Why a view could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the header needs (or than its length field claims).
    Truncated,
    /// A field the header's layout depends on is invalid (IPv4 version or header length).
    Malformed,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "truncated header",
            WireError::Malformed => "malformed header",
        })
    }
}

impl std::error::Error for WireError {}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Ethertype of IPv4.
pub const ETH_TYPE_IPV4: u16 = 0x0800;
/// Ethertype of an 802.1Q tag.
pub const ETH_TYPE_VLAN: u16 = 0x8100;
/// Ethertype of an 802.1ad (service) tag.
pub const ETH_TYPE_VLAN_8021AD: u16 = 0x88a8;

/// An Ethernet II frame: destination, source, ethertype, and at most one outer VLAN tag
/// looked at (the tag's TCI and the ethertype behind it).
#[derive(Clone, Copy, Debug)]
pub struct EthernetFrame<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Header length without a tag.
    pub const HEADER_LEN: usize = 14;

    /// A view of `buf`, which must hold at least the 14-byte header, and the whole tag when
    /// the ethertype says one follows.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < Self::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let f = EthernetFrame { buf };
        if f.is_tagged() && f.buf.as_ref().len() < Self::HEADER_LEN + 4 {
            return Err(WireError::Truncated);
        }
        Ok(f)
    }

    /// The destination address.
    pub fn dst(&self) -> [u8; 6] {
        let b = self.buf.as_ref();
        [b[0], b[1], b[2], b[3], b[4], b[5]]
    }

    /// The source address.
    pub fn src(&self) -> [u8; 6] {
        let b = self.buf.as_ref();
        [b[6], b[7], b[8], b[9], b[10], b[11]]
    }

    /// The outer ethertype (a tag's TPID when the frame is tagged).
    pub fn ethertype(&self) -> u16 {
        be16(self.buf.as_ref(), 12)
    }

    /// True when an 802.1Q or 802.1ad tag follows the addresses.
    pub fn is_tagged(&self) -> bool {
        matches!(self.ethertype(), ETH_TYPE_VLAN | ETH_TYPE_VLAN_8021AD)
    }

    /// The outer tag's TCI (PCP, DEI, VID), if tagged.
    pub fn tci(&self) -> Option<u16> {
        self.is_tagged().then(|| be16(self.buf.as_ref(), 14))
    }

    /// The outer tag's VLAN id, if tagged.
    pub fn vid(&self) -> Option<u16> {
        self.tci().map(|t| t & 0x0fff)
    }

    /// The ethertype after the outer tag (the outer ethertype when untagged).
    pub fn inner_ethertype(&self) -> u16 {
        if self.is_tagged() {
            be16(self.buf.as_ref(), 16)
        } else {
            self.ethertype()
        }
    }

    /// True for a group (multicast or broadcast) destination.
    pub fn dst_is_group(&self) -> bool {
        self.buf.as_ref()[0] & 1 != 0
    }

    /// True for a group source (invalid as a source; never learned).
    pub fn src_is_group(&self) -> bool {
        self.buf.as_ref()[6] & 1 != 0
    }

    /// The bytes after the header and the outer tag, if any.
    pub fn payload(&self) -> &[u8] {
        let at = if self.is_tagged() {
            Self::HEADER_LEN + 4
        } else {
            Self::HEADER_LEN
        };
        &self.buf.as_ref()[at..]
    }
}

/// An IPv4 header and its payload (up to the total length; Ethernet padding excluded).
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Packet<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// The fixed header's length.
    pub const MIN_HEADER_LEN: usize = 20;

    /// A view of `buf`: version 4, a header length of at least 20 bytes, and a total length
    /// covering the header and within `buf`.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < Self::MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[0] >> 4 != 4 {
            return Err(WireError::Malformed);
        }
        let ihl = usize::from(b[0] & 0x0f) * 4;
        let total = usize::from(be16(b, 2));
        if ihl < Self::MIN_HEADER_LEN || total < ihl {
            return Err(WireError::Malformed);
        }
        if total > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(Ipv4Packet { buf })
    }

    /// Header length in bytes (20-60).
    pub fn header_len(&self) -> usize {
        usize::from(self.buf.as_ref()[0] & 0x0f) * 4
    }

    /// The total length field.
    pub fn total_len(&self) -> usize {
        usize::from(be16(self.buf.as_ref(), 2))
    }

    /// DSCP and ECN.
    pub fn tos(&self) -> u8 {
        self.buf.as_ref()[1]
    }

    /// The fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        be16(self.buf.as_ref(), 6) & 0x1fff
    }

    /// The more-fragments flag.
    pub fn more_fragments(&self) -> bool {
        self.buf.as_ref()[6] & 0x20 != 0
    }

    /// True for any fragment (first, middle or last).
    pub fn is_fragment(&self) -> bool {
        self.frag_offset() != 0 || self.more_fragments()
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buf.as_ref()[8]
    }

    /// The protocol number of the payload.
    pub fn protocol(&self) -> u8 {
        self.buf.as_ref()[9]
    }

    /// The source address.
    pub fn src(&self) -> [u8; 4] {
        let b = self.buf.as_ref();
        [b[12], b[13], b[14], b[15]]
    }

    /// The destination address.
    pub fn dst(&self) -> [u8; 4] {
        let b = self.buf.as_ref();
        [b[16], b[17], b[18], b[19]]
    }

    /// The header, options included.
    pub fn header(&self) -> &[u8] {
        &self.buf.as_ref()[..self.header_len()]
    }

    /// True when the header checksum verifies.
    pub fn checksum_ok(&self) -> bool {
        crate::csum::ipv4_header_ok(self.header())
    }

    /// The payload, up to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[self.header_len()..self.total_len()]
    }
}

/// The source and destination ports at the start of a TCP, UDP or SCTP header.
#[derive(Clone, Copy, Debug)]
pub struct L4Ports<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> L4Ports<T> {
    /// A view of the first four bytes of `buf`.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        if buf.as_ref().len() < 4 {
            return Err(WireError::Truncated);
        }
        Ok(L4Ports { buf })
    }

    /// The source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buf.as_ref(), 0)
    }

    /// The destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buf.as_ref(), 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp_frame(tag: Option<u16>) -> Vec<u8> {
        let mut f = vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1];
        if let Some(t) = tag {
            f.extend_from_slice(&ETH_TYPE_VLAN.to_be_bytes());
            f.extend_from_slice(&t.to_be_bytes());
        }
        f.extend_from_slice(&ETH_TYPE_IPV4.to_be_bytes());
        let mut ip = vec![
            0x45, 0, 0, 32, 0, 1, 0x20, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let c = crate::csum::checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[0x13, 0x88, 0x00, 0x35, 0, 12, 0, 0, 1, 2, 3, 4]);
        f.extend_from_slice(&[0; 6]); // Ethernet padding, beyond the total length
        f
    }

    #[test]
    fn fields_of_an_untagged_and_a_tagged_frame() {
        for tag in [None, Some(0x2005u16)] {
            let f = udp_frame(tag);
            let e = EthernetFrame::new_checked(&f[..]).expect("frame");
            assert_eq!(e.dst(), [0xff; 6]);
            assert_eq!(e.src(), [2, 0, 0, 0, 0, 1]);
            assert!(e.dst_is_group() && !e.src_is_group());
            assert_eq!(e.vid(), tag.map(|t| t & 0xfff));
            assert_eq!(e.inner_ethertype(), ETH_TYPE_IPV4);
            let ip = Ipv4Packet::new_checked(e.payload()).expect("ipv4");
            assert_eq!((ip.header_len(), ip.total_len(), ip.ttl()), (20, 32, 64));
            assert_eq!(
                (ip.src(), ip.dst(), ip.protocol()),
                ([10, 0, 0, 1], [10, 0, 0, 2], 17)
            );
            assert!(ip.checksum_ok());
            assert!(ip.more_fragments() && ip.is_fragment() && ip.frag_offset() == 0);
            assert_eq!(ip.payload().len(), 12, "padding is not payload");
            let p = L4Ports::new_checked(ip.payload()).expect("ports");
            assert_eq!((p.src_port(), p.dst_port()), (5000, 53));
        }
    }

    #[test]
    fn constructors_refuse_what_accessors_could_not_read() {
        let f = udp_frame(Some(7));
        assert_eq!(
            EthernetFrame::new_checked(&f[..13]).err(),
            Some(WireError::Truncated)
        );
        assert_eq!(
            EthernetFrame::new_checked(&f[..16]).err(),
            Some(WireError::Truncated),
            "a tagged frame needs its whole tag"
        );
        let ip = &f[18..];
        assert!(Ipv4Packet::new_checked(&ip[..19]).is_err());
        let mut bad = ip.to_vec();
        bad[0] = 0x65;
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(WireError::Malformed)
        );
        bad[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(WireError::Malformed)
        );
        bad[0] = 0x45;
        bad[2..4].copy_from_slice(&200u16.to_be_bytes());
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(WireError::Truncated)
        );
        bad[2..4].copy_from_slice(&10u16.to_be_bytes());
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(WireError::Malformed)
        );
        assert!(L4Ports::new_checked(&[1u8, 2, 3][..]).is_err());
    }

    #[test]
    fn no_input_makes_an_accessor_panic() {
        // Every prefix of every byte pattern: a view either fails to build or reads safely.
        let f = udp_frame(Some(1));
        for len in 0..f.len() {
            for flip in 0..f.len().min(40) {
                let mut b = f[..len].to_vec();
                if let Some(x) = b.get_mut(flip) {
                    *x ^= 0xa5;
                }
                if let Ok(e) = EthernetFrame::new_checked(&b[..]) {
                    let _ = (e.dst(), e.src(), e.vid(), e.inner_ethertype());
                    if let Ok(ip) = Ipv4Packet::new_checked(e.payload()) {
                        let _ = (ip.src(), ip.dst(), ip.checksum_ok(), ip.payload().len());
                        let _ = L4Ports::new_checked(ip.payload()).map(|p| p.dst_port());
                    }
                }
            }
        }
    }
}
