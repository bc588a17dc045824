//! IPFIX messages (RFC 7011) with the information elements of RFC 7012's registry.
//!
//! What: three templates, one per kind of flow record: IPv4 (id 256), IPv6 (257) and other
//! Ethernet (258). Each record carries the ingress and egress interfaces (egress 0: unknown),
//! the Ethernet addresses, EtherType and VLAN id; IP records add addresses, protocol, class of
//! service, TTL, transport ports and the ICMP type/code; every record ends with the flow's
//! first and last packet times (ms since the epoch), packet count, IP octets (IP records),
//! layer-2 octets and the end reason.
//!
//! How: [`Message`] collects records per template and writes the sets at [`Message::finish`]:
//! the 16-byte message header (version 10, length, export time, sequence number = data
//! records sent before this message, observation domain), then the template set if asked
//! for, then one data set per template used. [`Message::fits`] keeps a message under
//! [`MAX_MESSAGE`] bytes so no collector sees a fragment.

use packet::sampled::SampledKey;
use std::net::IpAddr;

/// The largest message written.
pub const MAX_MESSAGE: usize = 1400;

pub const TEMPLATE_V4: u16 = 256;
pub const TEMPLATE_V6: u16 = 257;
pub const TEMPLATE_L2: u16 = 258;

/// flowEndReason: active timeout (also used for records sent as sampled, without a cache).
pub const END_ACTIVE: u8 = 2;
/// flowEndReason: lack of resources (the cache was full).
pub const END_RESOURCES: u8 = 5;
/// flowEndReason: the exporter stopped (configuration removed).
pub const END_FORCED: u8 = 4;

/// A template's fields: (information element, length) pairs.
type Fields = &'static [(u16, u16)];

const COMMON: Fields = &[(10, 4), (14, 4), (56, 6), (80, 6), (256, 2), (58, 2)];
const V4: Fields = &[
    (8, 4),
    (12, 4),
    (4, 1),
    (5, 1),
    (192, 1),
    (7, 2),
    (11, 2),
    (32, 2),
];
const V6: Fields = &[
    (27, 16),
    (28, 16),
    (4, 1),
    (5, 1),
    (192, 1),
    (7, 2),
    (11, 2),
    (139, 2),
];
const COUNTS_IP: Fields = &[(152, 8), (153, 8), (2, 8), (1, 8), (352, 8), (136, 1)];
const COUNTS_L2: Fields = &[(152, 8), (153, 8), (2, 8), (352, 8), (136, 1)];

fn fields(template: u16) -> Vec<(u16, u16)> {
    let (mid, counts): (Fields, Fields) = match template {
        TEMPLATE_V4 => (V4, COUNTS_IP),
        TEMPLATE_V6 => (V6, COUNTS_IP),
        _ => (&[], COUNTS_L2),
    };
    COMMON.iter().chain(mid).chain(counts).copied().collect()
}

fn record_len(template: u16) -> usize {
    fields(template).iter().map(|(_, l)| usize::from(*l)).sum()
}

/// One flow record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: SampledKey,
    pub start_ms: u64,
    pub end_ms: u64,
    pub packets: u64,
    /// IP octets (0 for an L2 record).
    pub octets: u64,
    pub l2_octets: u64,
    pub reason: u8,
}

impl Record {
    fn template(&self) -> u16 {
        match &self.key.ip {
            Some(ip) if ip.src.is_ipv4() => TEMPLATE_V4,
            Some(_) => TEMPLATE_V6,
            None => TEMPLATE_L2,
        }
    }
}

/// A message being built. See the module documentation.
pub struct Message {
    templates: bool,
    sets: Vec<(u16, Vec<u8>)>,
    size: usize,
    records: u32,
}

fn template_set_len() -> usize {
    4 + [TEMPLATE_V4, TEMPLATE_V6, TEMPLATE_L2]
        .iter()
        .map(|t| 4 + 4 * fields(*t).len())
        .sum::<usize>()
}

impl Message {
    /// An empty message; with `templates`, it starts with the template set.
    pub fn new(templates: bool) -> Message {
        Message {
            templates,
            sets: Vec::new(),
            size: 16 + if templates { template_set_len() } else { 0 },
            records: 0,
        }
    }

    /// Data records in the message.
    pub fn records(&self) -> u32 {
        self.records
    }

    /// Adds `r` if it fits under [`MAX_MESSAGE`]; false (and nothing added) if not.
    pub fn add(&mut self, r: &Record) -> bool {
        let t = r.template();
        let have = self.sets.iter().any(|(id, _)| *id == t);
        let more = record_len(t) + if have { 0 } else { 4 };
        if self.size + more > MAX_MESSAGE {
            return false;
        }
        self.size += more;
        self.records += 1;
        let set = match self.sets.iter_mut().position(|(id, _)| *id == t) {
            Some(i) => &mut self.sets[i].1,
            None => {
                self.sets.push((t, Vec::new()));
                let last = self.sets.len() - 1;
                &mut self.sets[last].1
            }
        };
        write_record(set, r);
        true
    }

    /// The message's bytes: `seq` is the number of data records sent before it in
    /// observation domain `domain`; `export_secs` the export time.
    pub fn finish(self, export_secs: u32, seq: u32, domain: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.size);
        b.extend_from_slice(&10u16.to_be_bytes());
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&export_secs.to_be_bytes());
        b.extend_from_slice(&seq.to_be_bytes());
        b.extend_from_slice(&domain.to_be_bytes());
        if self.templates {
            b.extend_from_slice(&2u16.to_be_bytes());
            b.extend_from_slice(&(template_set_len() as u16).to_be_bytes());
            for t in [TEMPLATE_V4, TEMPLATE_V6, TEMPLATE_L2] {
                let f = fields(t);
                b.extend_from_slice(&t.to_be_bytes());
                b.extend_from_slice(&(f.len() as u16).to_be_bytes());
                for (ie, len) in f {
                    b.extend_from_slice(&ie.to_be_bytes());
                    b.extend_from_slice(&len.to_be_bytes());
                }
            }
        }
        for (t, data) in &self.sets {
            b.extend_from_slice(&t.to_be_bytes());
            b.extend_from_slice(&((data.len() + 4) as u16).to_be_bytes());
            b.extend_from_slice(data);
        }
        let len = b.len() as u16;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        b
    }
}

fn write_record(b: &mut Vec<u8>, r: &Record) {
    let k = &r.key;
    b.extend_from_slice(&k.ingress.to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&k.src_mac);
    b.extend_from_slice(&k.dst_mac);
    b.extend_from_slice(&k.ethertype.to_be_bytes());
    b.extend_from_slice(&k.vlan.to_be_bytes());
    if let Some(ip) = &k.ip {
        for a in [ip.src, ip.dst] {
            match a {
                IpAddr::V4(a) => b.extend_from_slice(&a.octets()),
                IpAddr::V6(a) => b.extend_from_slice(&a.octets()),
            }
        }
        b.extend_from_slice(&[ip.proto, ip.tos, ip.ttl]);
        b.extend_from_slice(&ip.src_port.to_be_bytes());
        b.extend_from_slice(&ip.dst_port.to_be_bytes());
        b.extend_from_slice(&ip.icmp.to_be_bytes());
    }
    b.extend_from_slice(&r.start_ms.to_be_bytes());
    b.extend_from_slice(&r.end_ms.to_be_bytes());
    b.extend_from_slice(&r.packets.to_be_bytes());
    if k.ip.is_some() {
        b.extend_from_slice(&r.octets.to_be_bytes());
    }
    b.extend_from_slice(&r.l2_octets.to_be_bytes());
    b.push(r.reason);
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::sampled::SampledIp;

    fn rec(ip: Option<SampledIp>) -> Record {
        Record {
            key: SampledKey {
                ingress: 5,
                src_mac: [2, 0, 0, 0, 0, 1],
                dst_mac: [2, 0, 0, 0, 0, 2],
                ethertype: if ip.is_some() { 0x0800 } else { 0x88b5 },
                vlan: 0,
                ip,
            },
            start_ms: 1_000,
            end_ms: 2_000,
            packets: 3,
            octets: 252,
            l2_octets: 294,
            reason: END_ACTIVE,
        }
    }

    fn v4() -> SampledIp {
        SampledIp {
            src: "10.0.0.1".parse().expect("ip"),
            dst: "10.0.0.2".parse().expect("ip"),
            proto: 1,
            tos: 0,
            ttl: 64,
            src_port: 0,
            dst_port: 0,
            icmp: 8 << 8,
        }
    }

    /// Decodes a message the way a collector does: templates first, then records by them.
    fn decode(b: &[u8]) -> Vec<Vec<(u16, Vec<u8>)>> {
        let be16 = |o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
        assert_eq!(be16(0), 10);
        assert_eq!(usize::from(be16(2)), b.len());
        let mut templates = std::collections::HashMap::new();
        let mut out = Vec::new();
        let mut o = 16;
        while o < b.len() {
            let (id, len) = (be16(o), usize::from(be16(o + 2)));
            let end = o + len;
            let mut p = o + 4;
            if id == 2 {
                while p < end {
                    let (tid, n) = (be16(p), usize::from(be16(p + 2)));
                    p += 4;
                    let f: Vec<(u16, u16)> = (0..n)
                        .map(|i| (be16(p + 4 * i), be16(p + 4 * i + 2)))
                        .collect();
                    p += 4 * n;
                    templates.insert(tid, f);
                }
            } else {
                let f = &templates[&id];
                let rl: usize = f.iter().map(|(_, l)| usize::from(*l)).sum();
                while p + rl <= end {
                    let mut r = Vec::new();
                    for (ie, l) in f {
                        r.push((*ie, b[p..p + usize::from(*l)].to_vec()));
                        p += usize::from(*l);
                    }
                    out.push(r);
                }
            }
            o = end;
        }
        out
    }

    #[test]
    fn records_decode_by_their_templates() {
        let mut m = Message::new(true);
        assert!(m.add(&rec(Some(v4()))));
        assert!(m.add(&rec(None)));
        assert!(m.add(&rec(Some(v4()))));
        assert_eq!(m.records(), 3);
        let b = m.finish(77, 10, 9);
        assert_eq!(&b[4..16], &[0, 0, 0, 77, 0, 0, 0, 10, 0, 0, 0, 9]);
        let recs = decode(&b);
        assert_eq!(recs.len(), 3);
        let get = |r: &Vec<(u16, Vec<u8>)>, ie: u16| {
            r.iter().find(|(i, _)| *i == ie).map(|(_, v)| v.clone())
        };
        let ip = recs
            .iter()
            .find(|r| get(r, 8).is_some())
            .expect("v4 record");
        assert_eq!(get(ip, 8), Some(vec![10, 0, 0, 1]));
        assert_eq!(get(ip, 12), Some(vec![10, 0, 0, 2]));
        assert_eq!(get(ip, 4), Some(vec![1]));
        assert_eq!(get(ip, 32), Some(vec![8, 0]));
        assert_eq!(get(ip, 10), Some(vec![0, 0, 0, 5]));
        assert_eq!(get(ip, 2), Some(3u64.to_be_bytes().to_vec()));
        assert_eq!(get(ip, 1), Some(252u64.to_be_bytes().to_vec()));
        assert_eq!(get(ip, 152), Some(1000u64.to_be_bytes().to_vec()));
        let l2 = recs
            .iter()
            .find(|r| get(r, 8).is_none())
            .expect("l2 record");
        assert_eq!(get(l2, 256), Some(vec![0x88, 0xb5]));
        assert_eq!(get(l2, 352), Some(294u64.to_be_bytes().to_vec()));
        assert_eq!(get(l2, 1), None);
    }

    #[test]
    fn messages_stay_under_the_limit() {
        let mut m = Message::new(true);
        let mut n = 0;
        while m.add(&rec(Some(v4()))) {
            n += 1;
        }
        let b = m.finish(0, 0, 0);
        assert!(b.len() <= MAX_MESSAGE && b.len() + record_len(TEMPLATE_V4) > MAX_MESSAGE);
        assert_eq!(decode(&b).len(), n);
    }
}
