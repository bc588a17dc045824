//! The `null` port: a sink that frees whatever it is given.
//!
//! With `rx_gen=LEN` it is also a generator: every poll fills the batch with copies of one
//! LEN-byte Ethernet/IPv4/UDP frame (02:00:00:00:00:01 -> 02:00:00:00:00:02,
//! 192.168.0.1:1024 -> 10.0.0.1:5001), which is handy for measuring a module without a pcap.

use crate::{check_options, parse_n_rxq, NetdevError, Options, Port, PortStats, RxqState};
use packet::{Batch, Pool};
use std::sync::Arc;

/// A generator queue and its receive counters.
struct GenQ {
    frame: Arc<Vec<u8>>,
    packets: u64,
    bytes: u64,
    dropped: u64,
}

impl GenQ {
    fn rx(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let mut n = 0;
        while !batch.is_full() {
            let Some(mut p) = pool.alloc() else {
                self.dropped += 1;
                break;
            };
            p.set_frame(&self.frame);
            self.packets += 1;
            self.bytes += self.frame.len() as u64;
            if let Err(p) = batch.push(p) {
                pool.free(p);
                break;
            }
            n += 1;
        }
        n
    }
}

/// See the module documentation.
pub struct NullPort {
    name: String,
    gen: Option<Arc<Vec<u8>>>,
    n_rxq: usize,
    queues: Vec<Option<GenQ>>,
    stats: PortStats,
}

impl NullPort {
    /// Opens a null port. Options: `rx_gen=LEN` (60..=2048), `n_rxq=N` generator queues.
    pub fn open(name: &str, opts: &Options) -> Result<NullPort, NetdevError> {
        check_options("null", opts, &["rx_gen", "n_rxq"])?;
        let n_rxq = parse_n_rxq(opts, 64)?;
        let gen = match opts.get("rx_gen") {
            None => None,
            Some(v) => {
                let len: usize = v.parse().map_err(|_| NetdevError::BadOption {
                    key: "rx_gen".into(),
                    why: format!("'{v}' is not a frame length"),
                })?;
                if !(60..=packet::MAX_FRAME).contains(&len) {
                    return Err(NetdevError::BadOption {
                        key: "rx_gen".into(),
                        why: format!("{len} is outside 60..={}", packet::MAX_FRAME),
                    });
                }
                Some(Arc::new(udp_frame(len)))
            }
        };
        let queues = match &gen {
            Some(f) => (0..n_rxq)
                .map(|_| {
                    Some(GenQ {
                        frame: Arc::clone(f),
                        packets: 0,
                        bytes: 0,
                        dropped: 0,
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(NullPort {
            name: name.to_string(),
            gen,
            n_rxq,
            queues,
            stats: PortStats::default(),
        })
    }
}

/// Builds a LEN-byte Ethernet/IPv4/UDP frame with valid checksums.
pub fn udp_frame(len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(42)];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (f.len() - 14) as u16;
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[192, 168, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 1]);
    let c = packet::csum::checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp_len = ip_len - 20;
    f[34..36].copy_from_slice(&1024u16.to_be_bytes());
    f[36..38].copy_from_slice(&5001u16.to_be_bytes());
    f[38..40].copy_from_slice(&udp_len.to_be_bytes());
    // UDP checksum 0 = none (allowed for IPv4).
    f
}

impl Port for NullPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "null"
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let mut n = 0;
        for q in self.queues.iter_mut().flatten() {
            if batch.is_full() {
                break;
            }
            n += q.rx(pool, batch);
        }
        n
    }

    #[inline]
    fn rxq_batch(&mut self, q: usize, pool: &mut Pool, batch: &mut Batch) -> usize {
        match self.queues.get_mut(q) {
            Some(Some(g)) => g.rx(pool, batch),
            _ => 0,
        }
    }

    fn n_rxq(&self) -> usize {
        self.n_rxq
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        Some(Box::new(NullPort {
            name: self.name.clone(),
            gen: self.gen.clone(),
            n_rxq: self.n_rxq,
            queues: (0..self.queues.len()).map(|_| None).collect(),
            stats: PortStats::default(),
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        let g = self.queues.get_mut(q)?.take()?;
        Some(Box::new(g))
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        let g = s.downcast::<GenQ>()?;
        match self.queues.get_mut(q) {
            Some(slot @ None) => {
                *slot = Some(*g);
                Ok(())
            }
            _ => Err(g),
        }
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let mut bytes = 0u64;
        for p in batch.packets() {
            bytes += p.len() as u64;
        }
        self.stats.tx_packets += batch.len() as u64;
        self.stats.tx_bytes += bytes;
        pool.free_batch(batch);
    }

    fn stats(&self) -> PortStats {
        let mut st = self.stats;
        for q in self.queues.iter().flatten() {
            st.rx_packets += q.packets;
            st.rx_bytes += q.bytes;
            st.rx_dropped += q.dropped;
        }
        st
    }

    fn has_rx(&self) -> bool {
        self.gen.is_some()
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = match &self.gen {
            Some(f) => vec![("rx_gen".into(), f.len().to_string())],
            None => vec![],
        };
        if self.n_rxq != 1 {
            v.push(("n_rxq".into(), self.n_rxq.to_string()));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_frees_and_counts() {
        let mut pool = Pool::new(8);
        let mut port = NullPort::open("n", &Options::new()).expect("open");
        let mut b = Batch::new();
        assert_eq!(port.rx_batch(&mut pool, &mut b), 0);
        for _ in 0..3 {
            let mut p = pool.alloc().expect("buf");
            p.set_frame(&[0u8; 60]);
            assert!(b.push(p).is_ok());
        }
        port.tx_batch(&mut pool, &mut b);
        assert!(b.is_empty());
        assert_eq!(pool.outstanding(), 0);
        assert_eq!(port.stats().tx_packets, 3);
        assert_eq!(port.stats().tx_bytes, 180);
    }

    #[test]
    fn generator_fills_batches() {
        let mut pool = Pool::new(300);
        let mut opts = Options::new();
        opts.insert("rx_gen".into(), "64".into());
        let mut port = NullPort::open("g", &opts).expect("open");
        let mut b = Batch::new();
        assert_eq!(port.rx_batch(&mut pool, &mut b), packet::MAX_BATCH);
        assert!(b.packets().iter().all(|p| p.len() == 64));
        assert!(packet::csum::ipv4_header_ok(&b.packets()[0].data()[14..34]));
        pool.free_batch(&mut b);
    }

    #[test]
    fn bad_options_are_named() {
        let mut opts = Options::new();
        opts.insert("rx_gen".into(), "9".into());
        let e = NullPort::open("g", &opts).err().expect("error");
        assert!(e.to_string().contains("rx_gen"), "{e}");
        let mut opts = Options::new();
        opts.insert("bogus".into(), "1".into());
        let e = NullPort::open("g", &opts).err().expect("error");
        assert_eq!(e.to_string(), "unknown option 'bogus' for port type 'null'");
    }
}
