//! The `pcap` port: replays a capture file and/or records what it is sent.
//!
//! * `rx_pcap=FILE`: the file is read into memory when the port opens; each poll copies the next
//!   packets **into fresh pool buffers**, exactly as a NIC receive would fill descriptors, so a
//!   benchmark through this port pays the real per-packet buffer cost.
//! * `infinite_rx=true`: after the last packet, start again from the first (a benchmark source).
//! * `tx_pcap=FILE`: transmitted frames are appended to FILE (created or truncated), readable by
//!   tcpdump and Wireshark; the file is flushed after every batch and on close.
//! * `rx_pps=N`: pace the replay to N packets per second on average since the port opened
//!   (benchmarks use it to offer a fixed load).
//!
//! Frames longer than a pool buffer holds are counted as `rx_errors` and skipped.

use crate::pcapfile::{self, PcapData, PcapWriter};
use crate::{
    check_options, parse_bool, parse_n_rxq, NetdevError, Options, Port, PortStats, RxqState,
};
use packet::{Batch, Pool};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// One receive queue: a replay cursor over the shared capture, and its counters.
struct Rxq {
    data: Arc<PcapData>,
    next: usize,
    infinite: bool,
    /// Pacing: (packets per second, start, packets sent).
    rate: Option<(u64, Instant, u64)>,
    packets: u64,
    bytes: u64,
    dropped: u64,
    errors: u64,
}

impl Rxq {
    fn rx(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let d = &*self.data;
        let n_rec = d.records.len();
        let mut budget = batch.room();
        if let Some((pps, start, sent)) = &self.rate {
            let allowed = (start.elapsed().as_nanos() * u128::from(*pps) / 1_000_000_000) as u64;
            budget = budget.min(allowed.saturating_sub(*sent) as usize);
        }
        // The burst's buffers in one go; the packets not filled go back at the end.
        let base = batch.len();
        let mut have = pool.alloc_into(batch, budget);
        let (mut n, mut bytes) = (0, 0u64);
        while n < budget {
            if self.next >= n_rec {
                if self.infinite && n_rec > 0 {
                    self.next = 0;
                } else {
                    break;
                }
            }
            let (off, len) = d.records[self.next];
            self.next += 1;
            if n == have {
                // The pool ran short of the burst: one more try, counted if it fails.
                let Some(p) = pool.alloc() else {
                    self.dropped += 1;
                    break;
                };
                if let Err(p) = batch.push(p) {
                    pool.free(p);
                    break;
                }
                have += 1;
            }
            let Some(p) = batch.packets_mut().get_mut(base + n) else {
                break;
            };
            if !p.set_frame(&d.bytes[off..off + len]) {
                // Too long for a buffer: skipped, and the packet serves the next record.
                self.errors += 1;
                continue;
            }
            bytes += len as u64;
            n += 1;
        }
        pool.free_tail(batch, base + n);
        self.packets += n as u64;
        self.bytes += bytes;
        if let Some((_, _, sent)) = &mut self.rate {
            *sent += n as u64;
        }
        n
    }
}

type Writer = Arc<Mutex<PcapWriter<BufWriter<File>>>>;

/// See the module documentation.
pub struct PcapPort {
    name: String,
    rx_path: Option<String>,
    infinite: bool,
    n_rxq: usize,
    /// The receive queues this handle holds (indexed by queue number).
    queues: Vec<Option<Rxq>>,
    has_rx: bool,
    /// The `tx_pcap` writer, shared by every handle of the port (a debugging aid, so
    /// handles on several threads take turns per batch).
    tx: Option<Writer>,
    tx_path: Option<String>,
    stats: PortStats,
}

impl PcapPort {
    /// Opens a pcap port. Options: `rx_pcap`, `tx_pcap`, `infinite_rx`, `rx_pps`, `n_rxq`.
    ///
    /// With `n_rxq=N` each receive queue replays the whole capture, queue `q` starting at
    /// record `q * len / N` (so the queues are not in lockstep), paced at `rx_pps / N`.
    pub fn open(name: &str, opts: &Options) -> Result<PcapPort, NetdevError> {
        check_options(
            "pcap",
            opts,
            &["rx_pcap", "tx_pcap", "infinite_rx", "rx_pps", "n_rxq"],
        )?;
        let n_rxq = parse_n_rxq(opts, 64)?;
        let pps =
            match opts.get("rx_pps") {
                None => None,
                Some(v) => {
                    let n: u64 = v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        NetdevError::BadOption {
                            key: "rx_pps".into(),
                            why: format!("'{v}' is not a positive packet rate"),
                        }
                    })?;
                    Some(n)
                }
            };
        let infinite = match opts.get("infinite_rx") {
            Some(v) => parse_bool("infinite_rx", v)?,
            None => false,
        };
        let rx = match opts.get("rx_pcap") {
            Some(p) => Some(Arc::new(pcapfile::read(Path::new(p)).map_err(|why| {
                NetdevError::BadOption {
                    key: "rx_pcap".into(),
                    why,
                }
            })?)),
            None => None,
        };
        if infinite && rx.as_ref().is_some_and(|d| d.records.is_empty()) {
            return Err(NetdevError::BadOption {
                key: "infinite_rx".into(),
                why: "rx_pcap holds no packets to loop".into(),
            });
        }
        let tx = match opts.get("tx_pcap") {
            Some(p) => Some(Arc::new(Mutex::new(
                PcapWriter::create(Path::new(p)).map_err(|e| NetdevError::BadOption {
                    key: "tx_pcap".into(),
                    why: format!("{p}: {e}"),
                })?,
            ))),
            None => None,
        };
        let queues = match &rx {
            Some(d) => (0..n_rxq)
                .map(|q| {
                    Some(Rxq {
                        data: Arc::clone(d),
                        next: q * d.records.len() / n_rxq,
                        infinite,
                        rate: pps.map(|p| ((p / n_rxq as u64).max(1), Instant::now(), 0)),
                        packets: 0,
                        bytes: 0,
                        dropped: 0,
                        errors: 0,
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(PcapPort {
            name: name.to_string(),
            rx_path: opts.get("rx_pcap").cloned(),
            infinite,
            n_rxq,
            has_rx: rx.is_some(),
            queues,
            tx,
            tx_path: opts.get("tx_pcap").cloned(),
            stats: PortStats::default(),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Port for PcapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "pcap"
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
            Some(Some(r)) => r.rx(pool, batch),
            _ => 0,
        }
    }

    fn n_rxq(&self) -> usize {
        self.n_rxq
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        Some(Box::new(PcapPort {
            name: self.name.clone(),
            rx_path: self.rx_path.clone(),
            infinite: self.infinite,
            n_rxq: self.n_rxq,
            queues: (0..self.queues.len()).map(|_| None).collect(),
            has_rx: self.has_rx,
            tx: self.tx.clone(),
            tx_path: self.tx_path.clone(),
            stats: PortStats::default(),
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        let r = self.queues.get_mut(q)?.take()?;
        Some(Box::new(r))
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        let r = s.downcast::<Rxq>()?;
        match self.queues.get_mut(q) {
            Some(slot @ None) => {
                *slot = Some(*r);
                Ok(())
            }
            _ => Err(r),
        }
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        match &self.tx {
            Some(w) => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                let (s, us) = (now.as_secs() as u32, now.subsec_micros());
                let mut w = lock(w);
                for p in batch.packets() {
                    match w.write(s, us, p.data()) {
                        Ok(()) => {
                            self.stats.tx_packets += 1;
                            self.stats.tx_bytes += p.len() as u64;
                        }
                        Err(_) => self.stats.tx_errors += 1,
                    }
                }
                if w.flush().is_err() {
                    self.stats.tx_errors += 1;
                }
            }
            None => {
                self.stats.tx_dropped += batch.len() as u64;
            }
        }
        pool.free_batch(batch);
    }

    fn stats(&self) -> PortStats {
        let mut st = self.stats;
        for q in self.queues.iter().flatten() {
            st.rx_packets += q.packets;
            st.rx_bytes += q.bytes;
            st.rx_dropped += q.dropped;
            st.rx_errors += q.errors;
        }
        st
    }

    fn has_rx(&self) -> bool {
        self.has_rx
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(p) = &self.rx_path {
            v.push(("rx_pcap".into(), p.clone()));
        }
        if let Some(p) = &self.tx_path {
            v.push(("tx_pcap".into(), p.clone()));
        }
        if self.infinite {
            v.push(("infinite_rx".into(), "true".into()));
        }
        if self.n_rxq != 1 {
            v.push(("n_rxq".into(), self.n_rxq.to_string()));
        }
        v
    }

    fn close(&mut self) {
        if let Some(w) = &self.tx {
            let _ = lock(w).flush();
        }
    }
}

impl Drop for PcapPort {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("ferrovs-pcap-{}-{name}", std::process::id()))
    }

    #[test]
    fn replay_copies_into_fresh_buffers_and_loops() {
        let src = tmp("src.pcap");
        let mut w = PcapWriter::create(&src).expect("create");
        w.write(0, 0, &[1u8; 60]).expect("w");
        w.write(0, 0, &[2u8; 70]).expect("w");
        w.flush().expect("flush");
        drop(w);
        let mut opts = Options::new();
        opts.insert("rx_pcap".into(), src.display().to_string());
        opts.insert("infinite_rx".into(), "true".into());
        let mut port = PcapPort::open("p", &opts).expect("open");
        let mut pool = Pool::new(512);
        let mut b = Batch::new();
        assert_eq!(port.rx_batch(&mut pool, &mut b), packet::MAX_BATCH);
        assert_eq!(b.packets()[0].data(), &[1u8; 60][..]);
        assert_eq!(b.packets()[1].data(), &[2u8; 70][..]);
        assert_eq!(b.packets()[2].data(), &[1u8; 60][..]);
        assert_eq!(pool.outstanding(), packet::MAX_BATCH);
        pool.free_batch(&mut b);

        let out = tmp("out.pcap");
        let mut opts = Options::new();
        opts.insert("rx_pcap".into(), src.display().to_string());
        opts.insert("tx_pcap".into(), out.display().to_string());
        let mut port = PcapPort::open("q", &opts).expect("open");
        assert_eq!(port.rx_batch(&mut pool, &mut b), 2);
        assert_eq!(port.rx_batch(&mut pool, &mut Batch::new()), 0);
        port.tx_batch(&mut pool, &mut b);
        let d = pcapfile::read(&out).expect("read back");
        assert_eq!(d.records.len(), 2);
        assert_eq!(port.stats().tx_packets, 2);
        assert_eq!(pool.outstanding(), 0);
        let _ = std::fs::remove_file(src);
        let _ = std::fs::remove_file(out);
    }

    #[test]
    fn short_pools_and_oversized_records_are_counted() {
        let src = tmp("short.pcap");
        let mut w = PcapWriter::create(&src).expect("create");
        for len in [60, packet::MAX_FRAME + 1, 61, 62, 63] {
            w.write(0, 0, &vec![len as u8; len]).expect("w");
        }
        w.flush().expect("flush");
        drop(w);
        let mut opts = Options::new();
        opts.insert("rx_pcap".into(), src.display().to_string());
        let mut port = PcapPort::open("p", &opts).expect("open");
        // Three buffers: records 0, 2 and 3 fill them, record 1 is too long for any, and
        // record 4 finds the pool empty.
        let mut pool = Pool::new(3);
        let mut b = Batch::new();
        assert_eq!(port.rx_batch(&mut pool, &mut b), 3);
        let lens: Vec<usize> = b.packets().iter().map(|p| p.len()).collect();
        assert_eq!(lens, [60, 61, 62]);
        assert_eq!(b.packets()[2].data(), &[62u8; 62][..]);
        let st = port.stats();
        assert_eq!((st.rx_packets, st.rx_errors, st.rx_dropped), (3, 1, 1));
        assert_eq!(st.rx_bytes, 60 + 61 + 62);
        assert_eq!(pool.alloc_failures(), 1);
        pool.free_batch(&mut b);
        // The capture is over: nothing more, and the burst's buffers all went back.
        assert_eq!(port.rx_batch(&mut pool, &mut b), 0);
        assert_eq!((b.len(), pool.outstanding()), (0, 0));
        let _ = std::fs::remove_file(src);
    }

    #[test]
    fn queues_move_between_handles_with_their_counters() {
        let src = tmp("q.pcap");
        let mut w = PcapWriter::create(&src).expect("create");
        for i in 0..4u8 {
            w.write(0, 0, &[i; 60]).expect("w");
        }
        w.flush().expect("flush");
        drop(w);
        let mut opts = Options::new();
        opts.insert("rx_pcap".into(), src.display().to_string());
        opts.insert("n_rxq".into(), "2".into());
        let mut a = PcapPort::open("p", &opts).expect("open");
        assert_eq!(a.n_rxq(), 2);
        let mut b = a.share().expect("share");
        let mut pool = Pool::new(64);
        let mut batch = Batch::new();
        // Queue 1 starts half way through the capture.
        assert_eq!(a.rxq_batch(1, &mut pool, &mut batch), 2);
        assert_eq!(batch.packets()[0].data()[0], 2);
        pool.free_batch(&mut batch);
        assert_eq!(b.rxq_batch(1, &mut pool, &mut batch), 0);
        let st = a.take_rxq(1).expect("held");
        assert!(a.take_rxq(1).is_none());
        assert!(b.put_rxq(1, st).is_ok());
        assert_eq!(a.stats().rx_packets, 0);
        assert_eq!(b.stats().rx_packets, 2);
        assert_eq!(
            b.rxq_batch(1, &mut pool, &mut batch),
            0,
            "queue 1 is at its end"
        );
        assert_eq!(a.rxq_batch(0, &mut pool, &mut batch), 4);
        pool.free_batch(&mut batch);
        // A foreign state is refused and given back.
        let foreign: RxqState = Box::new(5u32);
        assert!(b.put_rxq(0, foreign).is_err());
        let _ = std::fs::remove_file(src);
    }

    #[test]
    fn missing_file_names_the_option() {
        let mut opts = Options::new();
        opts.insert("rx_pcap".into(), "/nonexistent/x.pcap".into());
        let e = PcapPort::open("p", &opts).err().expect("error");
        assert!(e.to_string().starts_with("bad value for 'rx_pcap'"), "{e}");
    }
}
