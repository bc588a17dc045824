//! The W1 input (see `docs/benchmarks.md`): 64-byte Ethernet/IPv4/UDP frames from
//! 192.168.0.1 to `10.0.0.0 + i`, UDP source port `1024 + (i % 50000)`, destination port 5001,
//! for flow `i` in `0..flows`; the file holds `max(flows, 10000)` packets cycling through the flows.
//! The W8 input holds each of those flows as a connection: the datagram and its reply. The
//! W8 new-connection input (`gen-w8new`) holds each of them as a TCP connection that opens
//! and is reset: a SYN, then an RST from the same side, so that on every round of the replay
//! the SYN finds its connection closed both ways and opens it again (a new connection, as
//! OVS's tracker and ferrovs's both treat a SYN on a closed connection).

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

/// Frame `i` of a W8 new-connection set: for connection `i / 2` (W1 flow `i / 2`'s
/// addresses and ports, over TCP) the SYN (even `i`, sequence 1000) or the RST that ends it
/// (odd `i`, sequence 1001, no ACK), padded to 60 bytes as on the wire.
pub fn w8new_frame(i: u32) -> Vec<u8> {
    use conntrack::testpkt::{tcp4, RST, SYN};
    let n = i / 2;
    let dst = 0x0a00_0000u32.wrapping_add(n).to_be_bytes();
    let sport = 1024 + (n % 50_000) as u16;
    let (seq, flags) = if i.is_multiple_of(2) {
        (1000, SYN)
    } else {
        (1001, RST)
    };
    let mut f = tcp4([192, 168, 0, 1], dst, sport, 5001, seq, 0, flags, b"");
    f[0..6].copy_from_slice(&DST_MAC);
    f[6..12].copy_from_slice(&SRC_MAC);
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// Writes the W8 new-connection pcap for `conns` connections (a SYN and an RST each) to
/// `out`: at least 10,000 packets, cycling through the connections.
pub fn write_w8new<W: Write>(out: W, conns: u32) -> io::Result<()> {
    let frames = conns.max(1).saturating_mul(2);
    let total = frames.max(10_000);
    let mut w = PcapWriter::new(out)?;
    for n in 0..total {
        w.write(0, n, &w8new_frame(n % frames))?;
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

    #[test]
    fn w8new_opens_and_resets_each_connection() {
        use conntrack::testpkt::flow_of;
        let (syn, rst) = (w8new_frame(8), w8new_frame(9));
        assert_eq!((syn.len(), rst.len()), (60, 60));
        let (ks, _) = flow_of(&syn);
        let (kr, _) = flow_of(&rst);
        assert_eq!((ks.nw_proto, kr.nw_proto), (6, 6));
        assert_eq!((ks.tcp_flags, kr.tcp_flags), (0x02, 0x04));
        assert_eq!((ks.tp_src, ks.tp_dst), (1024 + 4, 5001));
        assert_eq!((kr.tp_src, kr.tp_dst), (ks.tp_src, ks.tp_dst));
        assert_ne!(w8new_frame(10)[30..34], syn[30..34]);
        assert!(packet::csum::ipv4_header_ok(&syn[14..34]));
    }

    /// The tracker sees the replayed set as intended: every SYN opens a connection (the
    /// second round's replace the first's), every RST is part of one.
    #[test]
    fn w8new_syn_is_new_on_every_round() {
        use conntrack::testpkt::flow_of;
        use conntrack::{ct_state, Conntrack, CtRequest, PacketMeta};
        let ct = Conntrack::default();
        let commit = CtRequest {
            commit: true,
            ..CtRequest::default()
        };
        for _round in 0..3 {
            for i in 0..8 {
                let mut f = w8new_frame(i);
                let (k, o) = flow_of(&f);
                let m = PacketMeta::from_flow(&k, &o).expect("ip");
                let r = ct.execute_one(&mut f, &m, &commit, 1);
                let want = if i % 2 == 0 {
                    ct_state::NEW
                } else {
                    ct_state::EST
                };
                assert_eq!(r.state, ct_state::TRK | want, "frame {i}");
            }
        }
        assert_eq!(ct.n_conns(), 4);
    }
}
