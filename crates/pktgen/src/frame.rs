//! Building the frames the generator sends, and recognising them when they come back.
//!
//! ## Shape of a frame
//! Every frame is Ethernet II / IPv4 (20-byte header, DF, TTL 64) / UDP, `size - 4` bytes long:
//! `size` is the frame size as RFC 2544 counts it, with the 4-byte FCS that the NIC (or, on a
//! veth, nobody) appends. So `--size 64` hands 60-byte frames to the port, the smallest legal
//! Ethernet frame, and `--size 1518` hands 1514-byte frames, the most a 1500-byte MTU carries.
//!
//! The UDP payload starts with an 16-byte probe, all fields at even offsets so that they are
//! whole 16-bit words of the checksum:
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 42 | 4 | magic `FvPg` |
//! | 46 | 4 | sequence number (big-endian, wraps) |
//! | 50 | 8 | transmit time, nanoseconds on the sender's clock (big-endian) |
//!
//! and the rest is a fixed byte pattern. 60 bytes leave exactly two bytes of pattern.
//!
//! ## Flows
//! Flow *i* of *N* differs from flow 0 in its destination IP (`dst_ip + i`), its UDP source
//! port (`sport + i`, wrapping within `sport..=65535`), or both ([`Vary`]). Each flow is kept as
//! a 12-byte [`Flow`]: its two varying fields, its IPv4 header checksum, and the unfolded
//! one's-complement sum of its UDP pseudo-header, header and payload with the probe's sequence
//! and time fields zero. Filling a buffer ([`FrameGen::fill`]) is then a copy of the shared
//! template, four small stores, and a UDP checksum finished from the flow's sum plus six
//! words — no per-packet pass over the payload, no allocation, whatever the frame size.
//!
//! ## Invariants
//! * Every frame `fill` writes is valid: IPv4 header and UDP checksums verify, the IP and UDP
//!   length fields match the frame.
//! * A zero UDP checksum means "none" on IPv4, so a computed zero is sent as `0xffff`.

use packet::csum;
use std::fmt;

/// Bytes of FCS counted in `size` but not written.
pub const FCS_LEN: usize = 4;
/// Smallest `size` (with FCS).
pub const MIN_SIZE: usize = 64;
/// Largest `size` (with FCS).
pub const MAX_SIZE: usize = 1518;
/// Most flows a generator keeps.
pub const MAX_FLOWS: usize = 1 << 20;

const ETH_LEN: usize = 14;
const IP_OFF: usize = ETH_LEN;
const UDP_OFF: usize = IP_OFF + 20;
const PAYLOAD_OFF: usize = UDP_OFF + 8;
/// Where the probe's magic starts.
pub const MAGIC_OFF: usize = PAYLOAD_OFF;
const SEQ_OFF: usize = MAGIC_OFF + 4;
const TS_OFF: usize = SEQ_OFF + 4;
const PROBE_END: usize = TS_OFF + 8;
/// The probe's magic bytes.
pub const MAGIC: [u8; 4] = *b"FvPg";

const IP_CSUM: usize = IP_OFF + 10;
const IP_DST: usize = IP_OFF + 16;
const UDP_SPORT: usize = UDP_OFF;
const UDP_CSUM: usize = UDP_OFF + 6;

const _: () = assert!(PROBE_END <= MIN_SIZE - FCS_LEN);
const _: () =
    assert!(SEQ_OFF.is_multiple_of(2) && TS_OFF.is_multiple_of(2) && IP_DST.is_multiple_of(2));

/// Which header fields differ between flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vary {
    /// The UDP source port.
    Sport,
    /// The destination IP address.
    Dip,
    /// Both (as the W1 input does).
    Both,
}

impl Vary {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Vary::Sport => "sport",
            Vary::Dip => "dip",
            Vary::Both => "both",
        }
    }
}

/// What the frames carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameSpec {
    /// Frame size with FCS, [`MIN_SIZE`]..=[`MAX_SIZE`].
    pub size: usize,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    /// Destination IP of flow 0.
    pub dst_ip: [u8; 4],
    /// UDP source port of flow 0.
    pub sport: u16,
    pub dport: u16,
    /// Number of flows, 1..=[`MAX_FLOWS`].
    pub flows: usize,
    pub vary: Vary,
}

/// Why a [`FrameSpec`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecError {
    Size(usize),
    Flows(usize),
    /// More flows than distinct source ports above `sport` when only the port varies.
    TooFewPorts {
        flows: usize,
        ports: usize,
    },
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Size(s) => write!(f, "size {s} is outside {MIN_SIZE}..={MAX_SIZE}"),
            SpecError::Flows(n) => write!(f, "flow count {n} is outside 1..={MAX_FLOWS}"),
            SpecError::TooFewPorts { flows, ports } => write!(
                f,
                "{flows} flows need {flows} source ports but only {ports} lie between --sport \
                 and 65535; lower --sport or vary the destination IP too"
            ),
        }
    }
}

impl std::error::Error for SpecError {}

/// One flow's varying fields and precomputed checksum parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub dst_ip: [u8; 4],
    pub sport: u16,
    /// The flow's IPv4 header checksum, as stored.
    pub ip_csum: u16,
    /// Unfolded UDP checksum sum with the probe's sequence and time fields zero.
    pub udp_sum: u32,
}

/// Prebuilt template and flow table; fills packet buffers.
pub struct FrameGen {
    template: Vec<u8>,
    flows: Vec<Flow>,
}

impl FrameGen {
    /// Builds the template and every flow's entry (the only allocations the generator makes).
    pub fn new(spec: &FrameSpec) -> Result<FrameGen, SpecError> {
        if !(MIN_SIZE..=MAX_SIZE).contains(&spec.size) {
            return Err(SpecError::Size(spec.size));
        }
        if spec.flows == 0 || spec.flows > MAX_FLOWS {
            return Err(SpecError::Flows(spec.flows));
        }
        let ports = 65536 - usize::from(spec.sport);
        if spec.vary == Vary::Sport && spec.flows > ports {
            return Err(SpecError::TooFewPorts {
                flows: spec.flows,
                ports,
            });
        }
        let len = spec.size - FCS_LEN;
        let mut t = vec![0u8; len];
        t[0..6].copy_from_slice(&spec.dst_mac);
        t[6..12].copy_from_slice(&spec.src_mac);
        t[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip_len = (len - IP_OFF) as u16;
        let udp_len = (len - UDP_OFF) as u16;
        let ip = &mut t[IP_OFF..UDP_OFF];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
        ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&spec.src_ip);
        ip[16..20].copy_from_slice(&spec.dst_ip);
        t[UDP_OFF..UDP_OFF + 2].copy_from_slice(&spec.sport.to_be_bytes());
        t[UDP_OFF + 2..UDP_OFF + 4].copy_from_slice(&spec.dport.to_be_bytes());
        t[UDP_OFF + 4..UDP_OFF + 6].copy_from_slice(&udp_len.to_be_bytes());
        t[MAGIC_OFF..SEQ_OFF].copy_from_slice(&MAGIC);
        for (i, b) in t[PROBE_END..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(7).wrapping_add(0x5a);
        }

        let base_ip = u32::from_be_bytes(spec.dst_ip);
        let mut flows = Vec::with_capacity(spec.flows);
        let mut scratch = t.clone();
        for i in 0..spec.flows {
            let port_step = (i % ports) as u16;
            let (dst_ip, sport) = match spec.vary {
                Vary::Sport => (spec.dst_ip, spec.sport.wrapping_add(port_step)),
                Vary::Dip => ((base_ip.wrapping_add(i as u32)).to_be_bytes(), spec.sport),
                Vary::Both => (
                    (base_ip.wrapping_add(i as u32)).to_be_bytes(),
                    spec.sport.wrapping_add(port_step),
                ),
            };
            scratch[IP_DST..IP_DST + 4].copy_from_slice(&dst_ip);
            scratch[IP_CSUM..IP_CSUM + 2].copy_from_slice(&[0, 0]);
            let ip_csum = csum::checksum(&scratch[IP_OFF..UDP_OFF]);
            scratch[UDP_SPORT..UDP_SPORT + 2].copy_from_slice(&sport.to_be_bytes());
            let pseudo = csum::pseudo_ipv4(spec.src_ip, dst_ip, 17, udp_len);
            let udp_sum = csum::add(pseudo, &scratch[UDP_OFF..]);
            flows.push(Flow {
                dst_ip,
                sport,
                ip_csum,
                udp_sum,
            });
        }
        // The template itself is flow 0, complete, with sequence 0 and time 0.
        let f0 = flows[0];
        t[IP_CSUM..IP_CSUM + 2].copy_from_slice(&f0.ip_csum.to_be_bytes());
        t[UDP_CSUM..UDP_CSUM + 2].copy_from_slice(&udp_csum(f0.udp_sum).to_be_bytes());
        Ok(FrameGen { template: t, flows })
    }

    /// Bytes handed to the port per frame (`size - 4`).
    #[inline]
    pub fn frame_len(&self) -> usize {
        self.template.len()
    }

    /// Number of flows.
    #[inline]
    pub fn flows(&self) -> usize {
        self.flows.len()
    }

    /// The flow table.
    #[cfg(test)]
    pub fn flow_table(&self) -> &[Flow] {
        &self.flows
    }

    /// Writes frame `seq` of flow `flow` (taken modulo the flow count) stamped with `ts_ns`
    /// into `buf`, which must be [`FrameGen::frame_len`] bytes; returns false (writing nothing)
    /// if it is not.
    #[inline]
    pub fn fill(&self, buf: &mut [u8], flow: usize, seq: u32, ts_ns: u64) -> bool {
        if buf.len() != self.template.len() {
            return false;
        }
        let f = &self.flows[flow % self.flows.len()];
        buf.copy_from_slice(&self.template);
        buf[IP_DST..IP_DST + 4].copy_from_slice(&f.dst_ip);
        buf[IP_CSUM..IP_CSUM + 2].copy_from_slice(&f.ip_csum.to_be_bytes());
        buf[UDP_SPORT..UDP_SPORT + 2].copy_from_slice(&f.sport.to_be_bytes());
        buf[SEQ_OFF..SEQ_OFF + 4].copy_from_slice(&seq.to_be_bytes());
        buf[TS_OFF..TS_OFF + 8].copy_from_slice(&ts_ns.to_be_bytes());
        let sum = f.udp_sum
            + (seq >> 16)
            + (seq & 0xffff)
            + ((ts_ns >> 48) as u32)
            + ((ts_ns >> 32) as u32 & 0xffff)
            + ((ts_ns >> 16) as u32 & 0xffff)
            + (ts_ns as u32 & 0xffff);
        buf[UDP_CSUM..UDP_CSUM + 2].copy_from_slice(&udp_csum(sum).to_be_bytes());
        true
    }
}

/// The checksum to store for an unfolded UDP sum (zero goes out as 0xffff).
#[inline]
fn udp_csum(sum: u32) -> u16 {
    match !csum::fold(sum) {
        0 => 0xffff,
        c => c,
    }
}

/// The probe of a received frame, if it carries ours: `(sequence, transmit time in ns)`.
/// Checks the EtherType, IP protocol and magic; any VLAN tag makes it "not ours".
#[inline]
pub fn probe(frame: &[u8]) -> Option<(u32, u64)> {
    let p = frame.get(..PROBE_END)?;
    if p[12..14] != [0x08, 0x00] || p[IP_OFF] != 0x45 || p[IP_OFF + 9] != 17 {
        return None;
    }
    if p[MAGIC_OFF..SEQ_OFF] != MAGIC {
        return None;
    }
    let mut seq = [0u8; 4];
    seq.copy_from_slice(&p[SEQ_OFF..TS_OFF]);
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&p[TS_OFF..PROBE_END]);
    Some((u32::from_be_bytes(seq), u64::from_be_bytes(ts)))
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let mut m = [0u8; 6];
    let mut n = 0;
    for part in s.split(':') {
        if n == 6 || part.is_empty() || part.len() > 2 {
            return Err(format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)"));
        }
        m[n] = u8::from_str_radix(part, 16)
            .map_err(|_| format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
        n += 1;
    }
    if n != 6 {
        return Err(format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)"));
    }
    Ok(m)
}

/// Formats a MAC address.
pub fn fmt_mac(m: &[u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An independent RFC 1071 sum, written out the slow way.
    fn ref_sum(words: &[u8]) -> u32 {
        let mut s: u64 = 0;
        let mut i = 0;
        while i < words.len() {
            let hi = u64::from(words[i]) << 8;
            let lo = words.get(i + 1).map_or(0, |b| u64::from(*b));
            s += hi | lo;
            i += 2;
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u32
    }

    fn spec(size: usize, flows: usize, vary: Vary) -> FrameSpec {
        FrameSpec {
            size,
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_ip: [192, 168, 0, 1],
            dst_ip: [10, 0, 0, 0],
            sport: 1024,
            dport: 5001,
            flows,
            vary,
        }
    }

    /// Checks one frame with the reference sum: IP header, UDP with pseudo-header, lengths.
    fn verify(f: &[u8]) {
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        let ip = &f[14..34];
        assert_eq!(ref_sum(ip), 0xffff, "IPv4 header checksum");
        assert_eq!(
            usize::from(u16::from_be_bytes([ip[2], ip[3]])),
            f.len() - 14
        );
        let udp = &f[34..];
        assert_eq!(usize::from(u16::from_be_bytes([udp[4], udp[5]])), udp.len());
        assert_ne!(
            u16::from_be_bytes([udp[6], udp[7]]),
            0,
            "UDP checksum present"
        );
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&ip[12..20]);
        pseudo.extend_from_slice(&[0, 17]);
        pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(udp);
        assert_eq!(ref_sum(&pseudo), 0xffff, "UDP checksum");
        // And the crate's own verifier agrees.
        assert!(csum::ipv4_header_ok(ip));
        assert!(csum::l4_checksum_ok(f, 14, 34, 17, true));
    }

    #[test]
    fn frames_are_valid_at_every_size() {
        for size in [64, 65, 66, 127, 128, 512, 1024, 1517, 1518] {
            let g = FrameGen::new(&spec(size, 3, Vary::Both)).expect("spec");
            assert_eq!(g.frame_len(), size - 4);
            let mut buf = vec![0u8; g.frame_len()];
            for (i, (seq, ts)) in [
                (0u32, 0u64),
                (1, 1),
                (0xffff_ffff, u64::MAX),
                (0x1234_5678, 0x0123_4567_89ab_cdef),
            ]
            .into_iter()
            .enumerate()
            {
                assert!(g.fill(&mut buf, i, seq, ts));
                verify(&buf);
                assert_eq!(probe(&buf), Some((seq, ts)));
            }
        }
    }

    #[test]
    fn checksum_zero_goes_out_as_ffff() {
        // Search a sequence number whose checksum would fold to zero; the frame must carry
        // 0xffff instead and still verify.
        let g = FrameGen::new(&spec(64, 1, Vary::Sport)).expect("spec");
        let mut buf = vec![0u8; g.frame_len()];
        let mut seen = false;
        for seq in 0..=0xffffu32 {
            assert!(g.fill(&mut buf, 0, seq, 0));
            if buf[40..42] == [0xff, 0xff] {
                verify(&buf);
                seen = true;
                break;
            }
        }
        assert!(seen, "some sequence number gives a 0xffff checksum");
    }

    #[test]
    fn flows_vary_as_asked() {
        let g = FrameGen::new(&spec(64, 5, Vary::Both)).expect("spec");
        let mut buf = vec![0u8; g.frame_len()];
        for i in 0..5 {
            assert!(g.fill(&mut buf, i, 7, 9));
            verify(&buf);
            let key = packet::extract(&buf, 1);
            assert_eq!(key.dl_type, 0x0800);
            assert_eq!(key.nw_proto, 17);
            assert_eq!(key.nw_dst, [10, 0, 0, i as u8]);
            assert_eq!(key.tp_src, 1024 + i as u16);
            assert_eq!(key.tp_dst, 5001);
        }
        let g = FrameGen::new(&spec(64, 4, Vary::Sport)).expect("spec");
        let t = g.flow_table();
        assert!(t.iter().all(|f| f.dst_ip == [10, 0, 0, 0]));
        assert_eq!(t[3].sport, 1027);
        let g = FrameGen::new(&spec(64, 4, Vary::Dip)).expect("spec");
        let t = g.flow_table();
        assert!(t.iter().all(|f| f.sport == 1024));
        assert_eq!(t[3].dst_ip, [10, 0, 0, 3]);
        // Flow indices wrap.
        let mut a = vec![0u8; g.frame_len()];
        assert!(g.fill(&mut a, 1, 0, 0));
        assert!(g.fill(&mut buf, 5, 0, 0));
        assert_eq!(a, buf);
    }

    #[test]
    fn source_ports_wrap_within_range() {
        let mut s = spec(64, 3, Vary::Sport);
        s.sport = 65534;
        assert_eq!(
            FrameGen::new(&s).err(),
            Some(SpecError::TooFewPorts { flows: 3, ports: 2 })
        );
        s.vary = Vary::Both;
        let g = FrameGen::new(&s).expect("spec");
        let ports: Vec<u16> = g.flow_table().iter().map(|f| f.sport).collect();
        assert_eq!(ports, vec![65534, 65535, 65534]);
        let mut buf = vec![0u8; g.frame_len()];
        for i in 0..3 {
            assert!(g.fill(&mut buf, i, 1, 1));
            verify(&buf);
        }
    }

    #[test]
    fn bad_specs_are_refused() {
        assert_eq!(
            FrameGen::new(&spec(63, 1, Vary::Both)).err(),
            Some(SpecError::Size(63))
        );
        assert_eq!(
            FrameGen::new(&spec(1519, 1, Vary::Both)).err(),
            Some(SpecError::Size(1519))
        );
        assert_eq!(
            FrameGen::new(&spec(64, 0, Vary::Both)).err(),
            Some(SpecError::Flows(0))
        );
        let g = FrameGen::new(&spec(64, 1, Vary::Both)).expect("spec");
        assert!(!g.fill(&mut [0u8; 59], 0, 0, 0));
    }

    #[test]
    fn probe_rejects_foreign_frames() {
        let g = FrameGen::new(&spec(64, 1, Vary::Both)).expect("spec");
        let mut buf = vec![0u8; g.frame_len()];
        assert!(g.fill(&mut buf, 0, 3, 4));
        assert_eq!(probe(&buf), Some((3, 4)));
        assert_eq!(probe(&buf[..57]), None);
        let mut other = buf.clone();
        other[42] = b'X';
        assert_eq!(probe(&other), None);
        let mut arp = buf.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(probe(&arp), None);
    }

    #[test]
    fn macs_parse() {
        assert_eq!(
            parse_mac("02:0a:ff:00:1:2"),
            Ok([0x02, 0x0a, 0xff, 0, 1, 2])
        );
        assert!(parse_mac("02:0a:ff:00:01").is_err());
        assert!(parse_mac("02:0a:ff:00:01:02:03").is_err());
        assert!(parse_mac("zz:0a:ff:00:01:02").is_err());
        assert!(parse_mac("").is_err());
        assert_eq!(fmt_mac(&[2, 0xab, 0, 0, 0, 1]), "02:ab:00:00:00:01");
    }
}
