//! The W1 input (see `docs/benchmarks.md`): 64-byte Ethernet/IPv4/UDP frames from
//! 192.168.0.1 to `10.0.0.0 + i`, UDP source port `1024 + (i % 50000)`, destination port 5001,
//! for flow `i` in `0..flows`; the file holds `max(flows, 10000)` packets cycling through the flows.

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
}
