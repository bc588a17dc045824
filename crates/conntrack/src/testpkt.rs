//! # Packet builders for tests, fuzzing and benchmarks
//!
//! Small functions that build complete Ethernet frames (IPv4/IPv6 with TCP, UDP, ICMP echo
//! and ICMP errors) with every checksum filled in, and [`flow_of`], which runs the flow
//! extractor on one. They exist so that tests state packets as exact bytes without a
//! capture file; a unit test checks them against `etherparse`. Nothing here is on the
//! packet path.

use packet::csum;
use packet::flow::{extract_into, FlowKey, Offsets};

/// TCP FIN.
pub const FIN: u16 = 0x01;
/// TCP SYN.
pub const SYN: u16 = 0x02;
/// TCP RST.
pub const RST: u16 = 0x04;
/// TCP PSH.
pub const PSH: u16 = 0x08;
/// TCP ACK.
pub const ACK: u16 = 0x10;

const ETH: [u8; 14] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];

/// 2001:db8::`n`.
pub fn v6addr(n: u16) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0x20;
    a[1] = 0x01;
    a[2] = 0x0d;
    a[3] = 0xb8;
    a[14..16].copy_from_slice(&n.to_be_bytes());
    a
}

/// The flow key and offsets of a frame.
pub fn flow_of(frame: &[u8]) -> (FlowKey, Offsets) {
    let mut k = FlowKey::default();
    let o = extract_into(&mut k, frame, 1);
    (k, o)
}

fn ip4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = ETH.to_vec();
    let len = (20 + l4.len()) as u16;
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&len.to_be_bytes());
    h[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    h[6] = 0x40; // DF
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = csum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&h);
    f.extend_from_slice(l4);
    f
}

fn ip6(src: [u8; 16], dst: [u8; 16], proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = ETH.to_vec();
    f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let mut h = [0u8; 40];
    h[0] = 0x60;
    h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
    h[6] = proto;
    h[7] = 64;
    h[8..24].copy_from_slice(&src);
    h[24..40].copy_from_slice(&dst);
    f.extend_from_slice(&h);
    f.extend_from_slice(l4);
    f
}

/// Fills the L4 checksum of a frame built here (field `csum_off` into the L4 header).
fn fill(mut f: Vec<u8>, v6: bool, proto: u8, csum_off: usize) -> Vec<u8> {
    let l4 = if v6 { 54 } else { 34 };
    let pseudo = proto != 1;
    let ok = csum::set_l4_checksum(&mut f, 14, l4, csum_off, proto, pseudo);
    debug_assert!(ok);
    f
}

/// A TCP header plus payload (no checksum yet).
#[allow(clippy::too_many_arguments)]
fn tcp_seg(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    win: u16,
    wscale: Option<u8>,
    payload: &[u8],
) -> Vec<u8> {
    let hlen = if wscale.is_some() { 24 } else { 20 };
    let mut t = vec![0u8; hlen];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    let off_flags = ((hlen as u16 / 4) << 12) | flags;
    t[12..14].copy_from_slice(&off_flags.to_be_bytes());
    t[14..16].copy_from_slice(&win.to_be_bytes());
    if let Some(ws) = wscale {
        t[20..24].copy_from_slice(&[1, 3, 3, ws]);
    }
    t.extend_from_slice(payload);
    t
}

/// TCP over IPv4 with window 65535; SYNs carry window scale 7.
#[allow(clippy::too_many_arguments)]
pub fn tcp4(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    payload: &[u8],
) -> Vec<u8> {
    let ws = (flags & SYN != 0).then_some(7);
    let t = tcp_seg(sport, dport, seq, ack, flags, 65535, ws, payload);
    fill(ip4(src, dst, 6, &t), false, 6, 16)
}

/// TCP over IPv4 with every field chosen.
#[allow(clippy::too_many_arguments)]
pub fn tcp4_full(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    win: u16,
    wscale: Option<u8>,
    payload: &[u8],
) -> Vec<u8> {
    let t = tcp_seg(sport, dport, seq, ack, flags, win, wscale, payload);
    fill(ip4(src, dst, 6, &t), false, 6, 16)
}

/// TCP over IPv6 with window 65535; SYNs carry window scale 7.
#[allow(clippy::too_many_arguments)]
pub fn tcp6(
    src: [u8; 16],
    dst: [u8; 16],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    payload: &[u8],
) -> Vec<u8> {
    let ws = (flags & SYN != 0).then_some(7);
    let t = tcp_seg(sport, dport, seq, ack, flags, 65535, ws, payload);
    fill(ip6(src, dst, 6, &t), true, 6, 16)
}

fn udp_dgram(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = vec![0u8; 8];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(payload);
    u
}

/// UDP over IPv4.
pub fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    fill(
        ip4(src, dst, 17, &udp_dgram(sport, dport, payload)),
        false,
        17,
        6,
    )
}

/// UDP over IPv6.
pub fn udp6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    fill(
        ip6(src, dst, 17, &udp_dgram(sport, dport, payload)),
        true,
        17,
        6,
    )
}

fn icmp_body(t: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![t, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    m
}

/// An ICMP query (echo request 8 / reply 0, ...) with id and sequence number.
pub fn icmp4_echo(src: [u8; 4], dst: [u8; 4], t: u8, id: u16, seq: u16) -> Vec<u8> {
    let [a, b] = id.to_be_bytes();
    let [c, d] = seq.to_be_bytes();
    let m = icmp_body(t, 0, [a, b, c, d], b"pingdata");
    fill(ip4(src, dst, 1, &m), false, 1, 2)
}

/// An ICMPv6 echo (128 request / 129 reply).
pub fn icmp6_echo(src: [u8; 16], dst: [u8; 16], t: u8, id: u16, seq: u16) -> Vec<u8> {
    let [a, b] = id.to_be_bytes();
    let [c, d] = seq.to_be_bytes();
    let m = icmp_body(t, 0, [a, b, c, d], b"pingdata");
    fill(ip6(src, dst, 58, &m), true, 58, 2)
}

/// An ICMP error of type `t`/`code` quoting `quoted` (an IP datagram, usually cut).
pub fn icmp4_error(src: [u8; 4], dst: [u8; 4], t: u8, code: u8, quoted: &[u8]) -> Vec<u8> {
    let m = icmp_body(t, code, [0; 4], quoted);
    fill(ip4(src, dst, 1, &m), false, 1, 2)
}

/// An ICMPv6 error quoting `quoted`.
pub fn icmp6_error(src: [u8; 16], dst: [u8; 16], t: u8, code: u8, quoted: &[u8]) -> Vec<u8> {
    let m = icmp_body(t, code, [0; 4], quoted);
    fill(ip6(src, dst, 58, &m), true, 58, 2)
}

/// A datagram of another protocol over IPv4.
pub fn other4(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    ip4(src, dst, proto, payload)
}

/// Cuts an IPv4 frame (14-byte Ethernet header, 20-byte IP header) into fragments of
/// `size` payload bytes (a multiple of 8), header checksums filled.
pub fn fragment4(frame: &[u8], size: usize) -> Vec<Vec<u8>> {
    let payload = &frame[34..];
    let mut out = vec![];
    let mut off = 0;
    while off < payload.len() {
        let end = (off + size).min(payload.len());
        let mut f = frame[..34].to_vec();
        f.extend_from_slice(&payload[off..end]);
        f[16..18].copy_from_slice(&((20 + end - off) as u16).to_be_bytes());
        let more = if end < payload.len() { 0x2000 } else { 0 };
        f[20..22].copy_from_slice(&((off / 8) as u16 | more).to_be_bytes());
        f[24..26].copy_from_slice(&[0, 0]);
        let c = csum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        out.push(f);
        off = end;
    }
    out
}

/// Cuts an IPv6 frame (no extension headers) into fragments of `size` payload bytes (a
/// multiple of 8), each with a Fragment header of identification `id`.
pub fn fragment6(frame: &[u8], size: usize, id: u32) -> Vec<Vec<u8>> {
    let payload = &frame[54..];
    let mut out = vec![];
    let mut off = 0;
    while off < payload.len() {
        let end = (off + size).min(payload.len());
        let mut f = frame[..54].to_vec();
        let next = f[20];
        f[20] = 44;
        let fo = ((off / 8) as u16) << 3 | u16::from(end < payload.len());
        f.extend_from_slice(&[next, 0]);
        f.extend_from_slice(&fo.to_be_bytes());
        f.extend_from_slice(&id.to_be_bytes());
        f.extend_from_slice(&payload[off..end]);
        f[18..20].copy_from_slice(&((8 + end - off) as u16).to_be_bytes());
        out.push(f);
        off = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    #[test]
    fn builders_agree_with_etherparse() {
        let f = tcp4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            1000,
            80,
            5,
            6,
            SYN | ACK,
            b"hello",
        );
        let p = SlicedPacket::from_ethernet(&f).unwrap();
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            panic!()
        };
        assert_eq!(ip.header().source(), [10, 0, 0, 1]);
        let Some(TransportSlice::Tcp(t)) = &p.transport else {
            panic!()
        };
        assert_eq!((t.source_port(), t.destination_port()), (1000, 80));
        assert!(t.syn() && t.ack());
        let want = t
            .to_header()
            .calc_checksum_ipv4(&ip.header().to_header(), t.payload())
            .unwrap();
        assert_eq!(t.checksum(), want);
        assert_eq!(ip.header().header_checksum(), {
            let h = ip.header().to_header();
            h.calc_header_checksum()
        });

        let u = udp6(v6addr(1), v6addr(2), 7, 9, b"x");
        let p = SlicedPacket::from_ethernet(&u).unwrap();
        let Some(NetSlice::Ipv6(ip)) = &p.net else {
            panic!()
        };
        let Some(TransportSlice::Udp(s)) = &p.transport else {
            panic!()
        };
        let want = s
            .to_header()
            .calc_checksum_ipv6(&ip.header().to_header(), s.payload())
            .unwrap();
        assert_eq!(s.checksum(), want);
    }
}
