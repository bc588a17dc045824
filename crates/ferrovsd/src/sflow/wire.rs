//! sFlow version 5 datagrams (sflow.org's "sFlow Version 5" specification), as collectors
//! such as nfdump's `sfcapd` read them (the one the tests use).
//!
//! What: [`Datagram`] collects flow samples (a raw packet header record each) and counter
//! samples (a generic interface counters record each) behind one datagram header that names
//! the agent. Everything is XDR: big-endian 32-bit words, opaque data padded to 4 bytes.
//!
//! Layout written (word by word): version 5, agent address type (1 IPv4, 2 IPv6), the address,
//! sub-agent id, datagram sequence number, agent uptime in ms, number of samples; then each
//! sample as `(enterprise 0 << 12 | format, length, body)` with format 1 (flow sample) or 2
//! (counter sample). Data sources are interfaces: `source_id = 0 << 24 | ifIndex`.
//!
//! Invariants: [`Datagram::fits`] keeps a datagram under [`MAX_DATAGRAM`] bytes (one Ethernet
//! MTU with IP and UDP headers), so no collector sees a fragmented datagram.

use std::net::IpAddr;

/// The largest datagram written.
pub const MAX_DATAGRAM: usize = 1400;

const FLOW_SAMPLE: u32 = 1;
const COUNTERS_SAMPLE: u32 = 2;
const RAW_HEADER: u32 = 1;
const GENERIC_IF_COUNTERS: u32 = 1;
const HEADER_PROTOCOL_ETHERNET: u32 = 1;
/// The Ethernet frame check sequence, counted in `frame_length` and reported as stripped.
const FCS: u32 = 4;
/// sFlow's "unknown" for a 32-bit counter.
pub const UNKNOWN: u32 = u32::MAX;

/// One flow sample's fields (see the specification's `flow_sample`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSample<'a> {
    pub seq: u32,
    pub source_ifindex: u32,
    pub rate: u32,
    pub pool: u32,
    pub drops: u32,
    pub input: u32,
    /// sFlow's `output`: an ifIndex (format 0), `0x40000000 | reason` (format 1, dropped)
    /// or `0x80000000 | n` (format 2, n ports); written as is.
    pub output: u32,
    /// The frame's length without FCS.
    pub frame_len: u32,
    pub header: &'a [u8],
}

/// One interface's counters (the specification's `if_counters`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IfCounters {
    pub ifindex: u32,
    /// ifType: 6 (ethernetCsmacd).
    pub if_type: u32,
    pub speed: u64,
    /// 0 unknown, 1 full duplex, 2 half duplex.
    pub direction: u32,
    /// Bit 0 admin up, bit 1 operationally up.
    pub status: u32,
    pub in_octets: u64,
    pub in_ucast: u32,
    pub in_discards: u32,
    pub in_errors: u32,
    pub out_octets: u64,
    pub out_ucast: u32,
    pub out_discards: u32,
    pub out_errors: u32,
}

/// A datagram being built. See the module documentation.
pub struct Datagram {
    buf: Vec<u8>,
    n_samples: u32,
}

fn put(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_be_bytes());
}

fn put64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_be_bytes());
}

/// Bytes a flow sample with `header_len` header bytes takes.
pub fn flow_sample_len(header_len: usize) -> usize {
    // format + length, 8 fields, 1 record: format + length, 4 fields, padded header.
    8 + 8 * 4 + 8 + 4 * 4 + header_len.div_ceil(4) * 4
}

/// Bytes a counter sample with one generic interface record takes.
pub const COUNTER_SAMPLE_LEN: usize = 8 + 3 * 4 + 8 + 88;

impl Datagram {
    /// A datagram from `agent` (sub-agent `sub_agent`); its sequence number and the agent's
    /// uptime are written when it is finished (sent).
    pub fn new(agent: IpAddr, sub_agent: u32) -> Datagram {
        let mut buf = Vec::with_capacity(MAX_DATAGRAM);
        put(&mut buf, 5);
        match agent {
            IpAddr::V4(a) => {
                put(&mut buf, 1);
                buf.extend_from_slice(&a.octets());
            }
            IpAddr::V6(a) => {
                put(&mut buf, 2);
                buf.extend_from_slice(&a.octets());
            }
        }
        put(&mut buf, sub_agent);
        put(&mut buf, 0);
        put(&mut buf, 0);
        put(&mut buf, 0);
        Datagram { buf, n_samples: 0 }
    }

    /// Whether `more` bytes still fit under [`MAX_DATAGRAM`].
    pub fn fits(&self, more: usize) -> bool {
        self.buf.len() + more <= MAX_DATAGRAM
    }

    fn begin(&mut self, format: u32) -> usize {
        put(&mut self.buf, format);
        let at = self.buf.len();
        put(&mut self.buf, 0);
        at
    }

    fn end(&mut self, at: usize) {
        let len = (self.buf.len() - at - 4) as u32;
        self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        self.n_samples += 1;
    }

    /// Appends a flow sample with one raw packet header record.
    pub fn flow_sample(&mut self, s: &FlowSample<'_>) {
        let at = self.begin(FLOW_SAMPLE);
        let b = &mut self.buf;
        put(b, s.seq);
        put(b, s.source_ifindex & 0x00ff_ffff);
        put(b, s.rate);
        put(b, s.pool);
        put(b, s.drops);
        put(b, s.input & 0x3fff_ffff);
        // All 32 bits: the top two are the format (1: dropped, 2: several ports).
        put(b, s.output);
        put(b, 1);
        put(b, RAW_HEADER);
        let padded = s.header.len().div_ceil(4) * 4;
        put(b, (16 + padded) as u32);
        put(b, HEADER_PROTOCOL_ETHERNET);
        put(b, s.frame_len.saturating_add(FCS));
        put(b, FCS);
        put(b, s.header.len() as u32);
        b.extend_from_slice(s.header);
        b.resize(b.len() + padded - s.header.len(), 0);
        self.end(at);
    }

    /// Appends a counter sample with one generic interface counters record.
    pub fn counter_sample(&mut self, seq: u32, c: &IfCounters) {
        let at = self.begin(COUNTERS_SAMPLE);
        let b = &mut self.buf;
        put(b, seq);
        put(b, c.ifindex & 0x00ff_ffff);
        put(b, 1);
        put(b, GENERIC_IF_COUNTERS);
        put(b, 88);
        put(b, c.ifindex);
        put(b, c.if_type);
        put64(b, c.speed);
        put(b, c.direction);
        put(b, c.status);
        put64(b, c.in_octets);
        put(b, c.in_ucast);
        put(b, UNKNOWN); // multicast
        put(b, UNKNOWN); // broadcast
        put(b, c.in_discards);
        put(b, c.in_errors);
        put(b, UNKNOWN); // unknown protocols
        put64(b, c.out_octets);
        put(b, c.out_ucast);
        put(b, UNKNOWN);
        put(b, UNKNOWN);
        put(b, c.out_discards);
        put(b, c.out_errors);
        put(b, 0); // promiscuous mode
        self.end(at);
    }

    /// The finished datagram's bytes, numbered `seq` and stamped with the agent's uptime.
    pub fn finish(mut self, seq: u32, uptime_ms: u32) -> Vec<u8> {
        let at = match self.buf.get(4..8) {
            Some([0, 0, 0, 2]) => 8 + 16 + 4,
            _ => 8 + 4 + 4,
        };
        for (i, v) in [seq, uptime_ms, self.n_samples].into_iter().enumerate() {
            self.buf[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_be_bytes());
        }
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn word(b: &[u8], i: usize) -> u32 {
        u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
    }

    #[test]
    fn flow_sample_layout() {
        let mut d = Datagram::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 3);
        let hdr = [0xaau8; 14];
        d.flow_sample(&FlowSample {
            seq: 1,
            source_ifindex: 5,
            rate: 400,
            pool: 800,
            drops: 2,
            input: 5,
            output: 0,
            frame_len: 60,
            header: &hdr,
        });
        let b = d.finish(9, 1234);
        assert_eq!(word(&b, 0), 5);
        assert_eq!(word(&b, 4), 1);
        assert_eq!(&b[8..12], &[10, 0, 0, 1]);
        assert_eq!(word(&b, 12), 3);
        assert_eq!(word(&b, 16), 9);
        assert_eq!(word(&b, 20), 1234);
        assert_eq!(word(&b, 24), 1);
        assert_eq!(word(&b, 28), 1); // flow sample
        let len = word(&b, 32) as usize;
        assert_eq!(b.len(), 36 + len);
        assert_eq!(b.len(), 28 + flow_sample_len(14));
        let s = &b[36..];
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 6, 7].map(|i| word(s, i * 4)),
            [1, 5, 400, 800, 2, 5, 0, 1]
        );
        assert_eq!(word(s, 32), 1); // raw header
        assert_eq!(word(s, 36), 16 + 16);
        assert_eq!(
            [word(s, 40), word(s, 44), word(s, 48), word(s, 52)],
            [1, 64, 4, 14]
        );
        assert_eq!(&s[56..70], &hdr);
        assert_eq!(&s[70..72], &[0, 0]);
    }

    #[test]
    fn flow_sample_output_keeps_its_format_bits() {
        for out in [102, 0x8000_0001, 0x8000_0002, 0x4000_0100, 0] {
            let mut d = Datagram::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
            d.flow_sample(&FlowSample {
                seq: 1,
                source_ifindex: 5,
                rate: 1,
                pool: 1,
                drops: 0,
                input: 5,
                output: out,
                frame_len: 60,
                header: &[0u8; 4],
            });
            let b = d.finish(0, 0);
            // Datagram header (28 bytes), sample format and length, then output is word 6.
            assert_eq!(word(&b, 36 + 6 * 4), out, "{out:#x}");
            assert_eq!(word(&b, 36 + 5 * 4), 5);
        }
    }

    #[test]
    fn counter_sample_layout_and_ipv6_agent() {
        let mut d = Datagram::new("2001:db8::1".parse().expect("v6"), 0);
        d.counter_sample(
            4,
            &IfCounters {
                ifindex: 7,
                if_type: 6,
                speed: 10_000_000_000,
                direction: 1,
                status: 3,
                in_octets: 1 << 40,
                in_ucast: 11,
                out_octets: 99,
                out_ucast: 12,
                ..IfCounters::default()
            },
        );
        let b = d.finish(1, 0);
        assert_eq!(word(&b, 4), 2);
        assert_eq!([word(&b, 28), word(&b, 32)], [1, 0]);
        assert_eq!(word(&b, 36), 1); // one sample
        assert_eq!(b.len(), 40 + COUNTER_SAMPLE_LEN);
        let s = &b[40..];
        assert_eq!([word(s, 0), word(s, 4)], [2, COUNTER_SAMPLE_LEN as u32 - 8]);
        assert_eq!([word(s, 8), word(s, 12), word(s, 16)], [4, 7, 1]);
        assert_eq!([word(s, 20), word(s, 24)], [1, 88]);
        let r = &s[28..];
        assert_eq!([word(r, 0), word(r, 4)], [7, 6]);
        assert_eq!(
            u64::from(word(r, 8)) << 32 | u64::from(word(r, 12)),
            10_000_000_000
        );
        assert_eq!([word(r, 16), word(r, 20)], [1, 3]);
        assert_eq!(
            u64::from(word(r, 24)) << 32 | u64::from(word(r, 28)),
            1 << 40
        );
        assert_eq!(word(r, 32), 11);
        assert_eq!(word(r, 36), UNKNOWN);
        assert_eq!(word(r, 84), 0);
    }

    #[test]
    fn fits_bounds_the_datagram() {
        let mut d = Datagram::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        let hdr = [0u8; 128];
        let mut n = 0;
        while d.fits(flow_sample_len(hdr.len())) {
            d.flow_sample(&FlowSample {
                seq: n,
                source_ifindex: 1,
                rate: 1,
                pool: n,
                drops: 0,
                input: 1,
                output: 0,
                frame_len: 1500,
                header: &hdr,
            });
            n += 1;
        }
        let b = d.finish(0, 0);
        assert!(b.len() <= MAX_DATAGRAM && b.len() + flow_sample_len(128) > MAX_DATAGRAM);
        assert_eq!(word(&b, 24), n);
    }
}
