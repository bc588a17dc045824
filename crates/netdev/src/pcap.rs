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
use crate::{check_options, parse_bool, NetdevError, Options, Port, PortStats};
use packet::{Batch, Pool};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// See the module documentation.
pub struct PcapPort {
    name: String,
    rx: Option<PcapData>,
    rx_path: Option<String>,
    next: usize,
    infinite: bool,
    tx: Option<PcapWriter<BufWriter<File>>>,
    tx_path: Option<String>,
    rate: Option<(u64, std::time::Instant, u64)>,
    stats: PortStats,
}

impl PcapPort {
    /// Opens a pcap port. Options: `rx_pcap`, `tx_pcap`, `infinite_rx`.
    pub fn open(name: &str, opts: &Options) -> Result<PcapPort, NetdevError> {
        check_options(
            "pcap",
            opts,
            &["rx_pcap", "tx_pcap", "infinite_rx", "rx_pps"],
        )?;
        let rate =
            match opts.get("rx_pps") {
                None => None,
                Some(v) => {
                    let n: u64 = v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        NetdevError::BadOption {
                            key: "rx_pps".into(),
                            why: format!("'{v}' is not a positive packet rate"),
                        }
                    })?;
                    Some((n, std::time::Instant::now(), 0))
                }
            };
        let infinite = match opts.get("infinite_rx") {
            Some(v) => parse_bool("infinite_rx", v)?,
            None => false,
        };
        let rx = match opts.get("rx_pcap") {
            Some(p) => {
                Some(
                    pcapfile::read(Path::new(p)).map_err(|why| NetdevError::BadOption {
                        key: "rx_pcap".into(),
                        why,
                    })?,
                )
            }
            None => None,
        };
        if infinite && rx.as_ref().is_some_and(|d| d.records.is_empty()) {
            return Err(NetdevError::BadOption {
                key: "infinite_rx".into(),
                why: "rx_pcap holds no packets to loop".into(),
            });
        }
        let tx = match opts.get("tx_pcap") {
            Some(p) => {
                Some(
                    PcapWriter::create(Path::new(p)).map_err(|e| NetdevError::BadOption {
                        key: "tx_pcap".into(),
                        why: format!("{p}: {e}"),
                    })?,
                )
            }
            None => None,
        };
        Ok(PcapPort {
            name: name.to_string(),
            rx,
            rx_path: opts.get("rx_pcap").cloned(),
            next: 0,
            infinite,
            tx,
            tx_path: opts.get("tx_pcap").cloned(),
            rate,
            stats: PortStats::default(),
        })
    }
}

impl Port for PcapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "pcap"
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let Some(d) = &self.rx else { return 0 };
        let n_rec = d.records.len();
        let mut budget = batch.room();
        if let Some((pps, start, sent)) = &self.rate {
            let allowed = (start.elapsed().as_nanos() * u128::from(*pps) / 1_000_000_000) as u64;
            budget = budget.min(allowed.saturating_sub(*sent) as usize);
        }
        let mut n = 0;
        while !batch.is_full() && n < budget {
            if self.next >= n_rec {
                if self.infinite && n_rec > 0 {
                    self.next = 0;
                } else {
                    break;
                }
            }
            let (off, len) = d.records[self.next];
            self.next += 1;
            let Some(mut p) = pool.alloc() else {
                self.stats.rx_dropped += 1;
                break;
            };
            match p.reset_for_rx(len) {
                Some(dst) => dst.copy_from_slice(&d.bytes[off..off + len]),
                None => {
                    self.stats.rx_errors += 1;
                    pool.free(p);
                    continue;
                }
            }
            self.stats.rx_packets += 1;
            self.stats.rx_bytes += len as u64;
            if let Err(p) = batch.push(p) {
                pool.free(p);
                break;
            }
            n += 1;
        }
        if let Some((_, _, sent)) = &mut self.rate {
            *sent += n as u64;
        }
        n
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        match &mut self.tx {
            Some(w) => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                let (s, us) = (now.as_secs() as u32, now.subsec_micros());
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
        self.stats
    }

    fn has_rx(&self) -> bool {
        self.rx.is_some()
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
        v
    }

    fn close(&mut self) {
        if let Some(w) = &mut self.tx {
            let _ = w.flush();
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
    fn missing_file_names_the_option() {
        let mut opts = Options::new();
        opts.insert("rx_pcap".into(), "/nonexistent/x.pcap".into());
        let e = PcapPort::open("p", &opts).err().expect("error");
        assert!(e.to_string().starts_with("bad value for 'rx_pcap'"), "{e}");
    }
}
