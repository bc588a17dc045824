//! The W1 input (see `docs/benchmarks.md`): 64-byte Ethernet/IPv4/UDP frames from
//! 192.168.0.1 to `10.0.0.0 + i`, UDP source port `1024 + (i % 50000)`, destination port 5001,
//! for flow `i` in `0..flows`; the file holds `max(flows, 10000)` packets cycling through the flows.
//! The W8 input holds each of those flows as a connection: the datagram and its reply.

use netdev::pcapfile::PcapWriter;
use std::io::{self, Write};

/// Source MAC of every W1 frame.
pub const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Destination MAC of every W1 frame.
pub const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// Frame `i` of a W1 set (60 bytes on the wire before the FCS: 64 with it).
pub fn w1_frame(i: u32) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&DST_MAC);
    f[6..12].copy_from_slice(&SRC_MAC);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len: u16 = 60 - 14;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[192, 168, 0, 1]);
    let dst = 0x0a00_0000u32.wrapping_add(i);
    f[30..34].copy_from_slice(&dst.to_be_bytes());
    let c = packet::csum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let sport = 1024 + (i % 50_000) as u16;
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&5001u16.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f
}

/// Writes the W1 pcap for `flows` flows to `out`.
pub fn write_w1<W: Write>(out: W, flows: u32) -> io::Result<()> {
    let flows = flows.max(1);
    let total = flows.max(10_000);
    let mut w = PcapWriter::new(out)?;
    for n in 0..total {
        w.write(0, n, &w1_frame(n % flows))?;
    }
    w.flush()
}

/// Frame `i` of a W8 set: connection `i / 2` of W1's flow `i / 2`, the datagram (even `i`)
/// or its reply (odd `i`: addresses and ports swapped), so that a connection tracker sees
/// every connection established after its first round.
pub fn w8_frame(i: u32) -> Vec<u8> {
    let mut f = w1_frame(i / 2);
    if i % 2 == 1 {
        let (src, dst) = (f[26..30].to_vec(), f[30..34].to_vec());
        f[26..30].copy_from_slice(&dst);
        f[30..34].copy_from_slice(&src);
        let (sp, dp) = (f[34..36].to_vec(), f[36..38].to_vec());
        f[34..36].copy_from_slice(&dp);
        f[36..38].copy_from_slice(&sp);
        f[0..6].copy_from_slice(&SRC_MAC);
        f[6..12].copy_from_slice(&DST_MAC);
    }
    f
}

/// Writes the W8 pcap for `conns` connections (both directions of each) to `out`: at
/// least 10,000 packets, cycling through the connections.
pub fn write_w8<W: Write>(out: W, conns: u32) -> io::Result<()> {
    let frames = conns.max(1).saturating_mul(2);
    let total = frames.max(10_000);
    let mut w = PcapWriter::new(out)?;
    for n in 0..total {
        w.write(0, n, &w8_frame(n % frames))?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_valid_and_distinct() {
        let a = w1_frame(0);
        let b = w1_frame(70_000);
        assert!(packet::csum::ipv4_header_ok(&a[14..34]));
        assert!(packet::csum::ipv4_header_ok(&b[14..34]));
        assert_eq!(&b[30..34], &[10, 1, 17, 112]);
        assert_eq!(u16::from_be_bytes([b[34], b[35]]), 1024 + 20_000);
        let mut buf = Vec::new();
        write_w1(&mut buf, 1000).expect("write");
        let d = netdev::pcapfile::parse(buf).expect("parse");
        assert_eq!(d.records.len(), 10_000);
    }

    #[test]
    fn w8_replies_mirror_their_datagram() {
        let (q, r) = (w8_frame(6), w8_frame(7));
        assert_eq!(q, w1_frame(3));
        assert_eq!((&r[26..30], &r[30..34]), (&q[30..34], &q[26..30]));
        assert_eq!((&r[34..36], &r[36..38]), (&q[36..38], &q[34..36]));
        assert!(packet::csum::ipv4_header_ok(&r[14..34]));
        let mut buf = Vec::new();
        write_w8(&mut buf, 100_000).expect("write");
        let d = netdev::pcapfile::parse(buf).expect("parse");
        assert_eq!(d.records.len(), 200_000);
    }
}
