//! The W7 input (see `docs/benchmarks.md`): W1's frames as inner frames, and the same frames
//! encapsulated as a remote tunnel endpoint would send them to the switch: outer Ethernet
//! (remote MAC -> the underlay's MAC), IPv4 (remote -> local address, DF, TTL 64), UDP (a
//! source port per inner flow, destination 4789 for VXLAN or 6081 for Geneve, no checksum)
//! and the 8-byte VXLAN or Geneve header with the VNI. Built here byte by byte, not with the
//! switch's own encapsulation code, so the decapsulation run reads an independent encoding.

use crate::w1gen::w1_frame;
use netdev::pcapfile::PcapWriter;
use std::io::{self, Write};
use std::net::Ipv4Addr;

/// The tunnel endpoints both switches are configured with in a W7 run.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// `vxlan` or `geneve`.
    pub proto: String,
    pub local_ip: Ipv4Addr,
    pub local_mac: [u8; 6],
    pub remote_ip: Ipv4Addr,
    pub remote_mac: [u8; 6],
    pub vni: u32,
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints {
            proto: "vxlan".into(),
            local_ip: Ipv4Addr::new(172, 31, 7, 1),
            local_mac: [0x02, 0, 0, 0, 0x07, 0x01],
            remote_ip: Ipv4Addr::new(172, 31, 7, 2),
            remote_mac: [0x02, 0, 0, 0, 0x07, 0x02],
            vni: 7,
        }
    }
}

impl Endpoints {
    /// The tunnel's UDP destination port.
    pub fn dst_port(&self) -> u16 {
        if self.proto == "geneve" {
            6081
        } else {
            4789
        }
    }
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let v: Vec<u8> = s
        .split(':')
        .map(|x| u8::from_str_radix(x, 16))
        .collect::<Result<_, _>>()
        .ok()?;
    v.try_into().ok()
}

/// Outer headers: Ethernet 14 + IPv4 20 + UDP 8 + VXLAN/Geneve 8.
pub const OUTER_LEN: usize = 50;

/// `inner` as the remote endpoint of `e` sends it; `sport` is the outer UDP source port.
pub fn encapsulate(e: &Endpoints, inner: &[u8], sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; OUTER_LEN];
    f[0..6].copy_from_slice(&e.local_mac);
    f[6..12].copy_from_slice(&e.remote_mac);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (OUTER_LEN - 14 + inner.len()) as u16;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[20] = 0x40; // DF
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&e.remote_ip.octets());
    f[30..34].copy_from_slice(&e.local_ip.octets());
    let c = packet::csum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&e.dst_port().to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    if e.proto == "geneve" {
        // Version 0, no options, protocol: transparent Ethernet bridging.
        f[44..46].copy_from_slice(&0x6558u16.to_be_bytes());
    } else {
        f[42] = 0x08; // VNI present
    }
    f[46..50].copy_from_slice(&((e.vni & 0x00ff_ffff) << 8).to_be_bytes());
    f.extend_from_slice(inner);
    f
}

/// Writes the encapsulated W1 pcap for `flows` flows: each inner flow keeps one outer
/// source port, as a sender hashing the inner flow would.
pub fn write_w7<W: Write>(out: W, flows: u32, e: &Endpoints) -> io::Result<()> {
    let flows = flows.max(1);
    let total = flows.max(10_000);
    let mut w = PcapWriter::new(out)?;
    for n in 0..total {
        let i = n % flows;
        let sport = 32768 + (i.wrapping_mul(2_654_435_761) >> 18) as u16 % 28232;
        w.write(0, n, &encapsulate(e, &w1_frame(i), sport))?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_the_inner_w1_frame_behind_valid_outer_headers() {
        let e = Endpoints::default();
        let f = encapsulate(&e, &w1_frame(3), 40000);
        assert_eq!(f.len(), OUTER_LEN + 60);
        assert!(packet::csum::ipv4_header_ok(&f[14..34]));
        assert_eq!(&f[30..34], &[172, 31, 7, 1]);
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 4789);
        assert_eq!(u16::from_be_bytes([f[38], f[39]]), 8 + 8 + 60);
        assert_eq!(&f[42..50], &[0x08, 0, 0, 0, 0, 0, 7, 0]);
        assert_eq!(&f[OUTER_LEN..], &w1_frame(3)[..]);
        use netdev::tunnel::wire::{parse, Proto};
        let p = parse(&f, |port| (port == 4789).then_some(Proto::Vxlan)).expect("a VXLAN frame");
        assert_eq!((p.hdr_len, p.meta.id), (OUTER_LEN, 7));
        let g = Endpoints {
            proto: "geneve".into(),
            ..Endpoints::default()
        };
        let f = encapsulate(&g, &w1_frame(3), 40000);
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 6081);
        assert_eq!(&f[42..50], &[0, 0, 0x65, 0x58, 0, 0, 7, 0]);
        assert_eq!(parse_mac("02:00:00:00:07:0a"), Some([2, 0, 0, 0, 7, 10]));
        assert_eq!(parse_mac("02:00:00:00:07"), None);
        let mut buf = Vec::new();
        write_w7(&mut buf, 1000, &e).expect("write");
        let d = netdev::pcapfile::parse(buf).expect("parse");
        assert_eq!(d.records.len(), 10_000);
    }
}
