//! The generator's one loop: transmit, receive, or both, on one thread, until told to stop.
//!
//! ## The loop
//! Each turn reads the clock once, then
//! 1. *transmit* (modes `tx`, `txrx`): asks the token bucket whether the next chunk may go
//!    (a whole batch, or with a rate limit about 100 µs of traffic, so that the port's per-call
//!    cost does not cap the rate), takes that many buffers from the pool, fills each with the next flow's frame stamped with
//!    its sequence number and the turn's time ([`crate::frame::FrameGen::fill`]), and hands the
//!    batch to the port, which queues or drops (and counts) every frame and returns the buffers
//!    to the pool;
//! 2. *receive* (modes `rx`, `txrx`): takes one batch from the receive port, counts frames and
//!    bytes, recognises our probes and, in `txrx`, records `now - transmit time` as a latency
//!    sample, then returns the buffers;
//! 3. once a second prints the rates since the last report.
//!
//! Nothing in the loop allocates: the pool and both batches are made before it starts, and
//! a port's `rx_batch`/`tx_batch` only move buffers in and out of that pool. Transmission
//! makes no system call of its own; the port decides when to kick the kernel (once per batch
//! at most, for both `system` and `afxdp`). With a rate limit and nothing to receive the thread
//! sleeps while waiting for more than 200 µs of tokens; otherwise it spins, as a poll-mode
//! generator should.
//!
//! ## When it stops
//! At `duration`, after `count` frames sent (`tx`, `txrx`) or received (`rx`), on SIGINT or
//! SIGTERM (the flag is set by the signal handler and read every turn), or in `rx` after
//! `idle_timeout` without a frame once the first one has arrived. In `txrx` the receiver keeps
//! polling for `drain` after the transmitter stops, so frames still in flight are counted.
//!
//! ## What is counted
//! *Sent* is what the port accepted (its `tx_packets`); frames it had to drop because its ring
//! was full are `tx.dropped`. *Received* counts every frame the receive port delivered;
//! `matched` only those carrying our probe. Rates: tx over the time the transmitter ran; rx
//! over the time from the first to the last received frame (falling back to the whole run for
//! a single frame). Bits per second count `size` bytes per frame, i.e. with the FCS but
//! without preamble and inter-frame gap.
//!
//! Latency is only measured in `txrx`, where the sending and receiving clock are the same
//! (nanoseconds since the process's start on the monotonic clock).

use crate::frame::{self, FrameGen, FCS_LEN};
use crate::latency::{Latency, Summary};
use crate::rate::TokenBucket;
use netdev::{Port, PortStats};
use packet::{Batch, Pool};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Tx,
    Rx,
    TxRx,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Tx => "tx",
            Mode::Rx => "rx",
            Mode::TxRx => "txrx",
        }
    }
    fn tx(self) -> bool {
        self != Mode::Rx
    }
    fn rx(self) -> bool {
        self != Mode::Tx
    }
}

/// Loop parameters.
#[derive(Clone, Debug)]
pub struct RunCfg {
    pub mode: Mode,
    /// Frames per transmit batch, 1..=256.
    pub batch: usize,
    /// Packets per second, 0 = as fast as possible.
    pub rate: u64,
    /// Run time; `None` = until a signal (or a count).
    pub duration: Option<Duration>,
    /// Stop after this many frames sent (tx, txrx) or received (rx); 0 = no limit.
    pub count: u64,
    /// rx: stop after this much silence once traffic has been seen.
    pub idle_timeout: Option<Duration>,
    /// txrx: keep receiving this long after the transmitter stops.
    pub drain: Duration,
    /// Print a line every second.
    pub report: bool,
    /// Where the per-second lines go: stderr when true, stdout otherwise.
    pub report_to_stderr: bool,
    /// Frame size with FCS (for bits per second).
    pub size: usize,
}

/// Transmit totals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TxTotals {
    pub packets: u64,
    pub bytes: u64,
    pub dropped: u64,
    pub errors: u64,
    pub seconds: f64,
}

/// Receive totals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RxTotals {
    pub packets: u64,
    pub bytes: u64,
    pub matched: u64,
    /// What the port dropped (ring full and the like).
    pub dropped: u64,
    /// From the first to the last frame.
    pub active_seconds: f64,
}

/// The outcome of a run.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub elapsed: f64,
    pub tx: Option<TxTotals>,
    pub rx: Option<RxTotals>,
    pub latency: Option<Summary>,
    /// Why the loop ended.
    pub stopped_by: &'static str,
}

impl TxTotals {
    pub fn pps(&self) -> f64 {
        per_sec(self.packets, self.seconds)
    }
}

impl RxTotals {
    pub fn pps(&self, elapsed: f64) -> f64 {
        if self.packets > 1 && self.active_seconds > 0.0 {
            per_sec(self.packets, self.active_seconds)
        } else {
            per_sec(self.packets, elapsed)
        }
    }
}

fn per_sec(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

/// The ports a run uses: `tx` and `rx` may be the same port (index).
pub struct Ports {
    pub ports: Vec<Box<dyn Port>>,
    pub tx: Option<usize>,
    pub rx: Option<usize>,
}

fn ns_since(base: Instant, now: Instant) -> u64 {
    now.saturating_duration_since(base).as_nanos() as u64
}

/// Formats a rate with an SI prefix, e.g. `1.234 M`.
pub fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.3} G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.3} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.3} K", v / 1e3)
    } else {
        format!("{v:.1} ")
    }
}

/// Runs the loop until a stop condition; `stop` is polled every turn.
pub fn run(cfg: &RunCfg, gen: &FrameGen, ports: &mut Ports, stop: &AtomicBool) -> Outcome {
    let mode = cfg.mode;
    let batch_size = cfg.batch.clamp(1, packet::MAX_BATCH);
    let mut pool = Pool::new(4 * packet::MAX_BATCH);
    let mut txb = Batch::new();
    let mut rxb = Batch::new();
    let frame_len = gen.frame_len();
    let nflows = gen.flows();
    let wire = cfg.size as u64;

    let base = Instant::now();
    // With a rate limit, send in chunks of about 100 µs of traffic (at least 1, at most a
    // batch): a port's cost is mostly per call, so tiny batches would cap the rate.
    let chunk = if cfg.rate == 0 {
        batch_size as u64
    } else {
        (cfg.rate / 10_000).clamp(1, batch_size as u64)
    };
    // The bucket holds a millisecond of traffic (at least a batch), so a thread descheduled
    // for less than that catches up instead of losing the time.
    let burst = (cfg.rate / 1000).max(batch_size as u64);
    let mut bucket = TokenBucket::new(cfg.rate, burst, 0);
    let mut lat = Latency::new();
    let mut flow = 0usize;
    let mut seq = 0u32;
    let mut offered = 0u64;

    let tx0 = ports.tx.map(|i| ports.ports[i].stats()).unwrap_or_default();
    let rx0 = ports.rx.map(|i| ports.ports[i].stats()).unwrap_or_default();
    let mut rx_pkts = 0u64;
    let mut rx_bytes = 0u64;
    let mut matched = 0u64;
    let mut first_rx: Option<Instant> = None;
    let mut last_rx = base;

    let mut tx_on = mode.tx();
    let mut tx_end = base;
    let mut drain_until: Option<Instant> = None;
    let mut stopped_by = "duration";

    let mut next_report = base + Duration::from_secs(1);
    let mut last_report = base;
    let mut rep_tx = tx0;
    let mut rep_rx = (0u64, 0u64);

    loop {
        let now = Instant::now();
        let now_ns = ns_since(base, now);

        // Stop conditions.
        if tx_on {
            let mut why = None;
            if stop.load(Ordering::Relaxed) {
                why = Some("signal");
            } else if cfg.duration.is_some_and(|d| now - base >= d) {
                why = Some("duration");
            } else if cfg.count > 0 && offered >= cfg.count {
                why = Some("count");
            }
            if let Some(w) = why {
                tx_on = false;
                tx_end = now;
                stopped_by = w;
                if mode == Mode::Tx || w == "signal" {
                    break;
                }
                drain_until = Some(now + cfg.drain);
            }
        } else if let Some(d) = drain_until {
            if now >= d || stop.load(Ordering::Relaxed) {
                break;
            }
        } else {
            // rx only.
            if stop.load(Ordering::Relaxed) {
                stopped_by = "signal";
                break;
            }
            if cfg.duration.is_some_and(|d| now - base >= d) {
                stopped_by = "duration";
                break;
            }
            if cfg.count > 0 && rx_pkts >= cfg.count {
                stopped_by = "count";
                break;
            }
            if let (Some(idle), Some(_)) = (cfg.idle_timeout, first_rx) {
                if now - last_rx >= idle {
                    stopped_by = "idle";
                    break;
                }
            }
        }

        // Transmit.
        let mut waiting_ns = 0u64;
        if let (true, Some(ti)) = (tx_on, ports.tx) {
            let mut want = chunk;
            if cfg.count > 0 {
                want = want.min(cfg.count - offered);
            }
            let n = if bucket.take_all(now_ns, want) {
                want
            } else {
                0
            };
            for _ in 0..n {
                let Some(mut p) = pool.alloc() else { break };
                match p.reset_for_rx(frame_len) {
                    Some(buf) => {
                        gen.fill(buf, flow, seq, now_ns);
                    }
                    None => {
                        pool.free(p);
                        break;
                    }
                }
                flow += 1;
                if flow == nflows {
                    flow = 0;
                }
                seq = seq.wrapping_add(1);
                if let Err(p) = txb.push(p) {
                    pool.free(p);
                    break;
                }
            }
            offered += txb.len() as u64;
            // An empty batch still lets the port retry a stalled kick.
            ports.ports[ti].tx_batch(&mut pool, &mut txb);
            if n == 0 {
                waiting_ns = bucket.wait_ns(now_ns, want);
            }
        }

        // Receive.
        if let (true, Some(ri)) = (mode.rx(), ports.rx) {
            let got = ports.ports[ri].rx_batch(&mut pool, &mut rxb);
            if got > 0 {
                let t = Instant::now();
                let t_ns = ns_since(base, t);
                if first_rx.is_none() {
                    first_rx = Some(t);
                }
                last_rx = t;
                for p in rxb.packets() {
                    rx_bytes += p.len() as u64;
                    if let Some((_seq, ts)) = frame::probe(p.data()) {
                        matched += 1;
                        if mode == Mode::TxRx {
                            lat.record(t_ns.saturating_sub(ts));
                        }
                    }
                }
                rx_pkts += got as u64;
                pool.free_batch(&mut rxb);
            }
        }

        // Report.
        if now >= next_report {
            if cfg.report {
                let dt = (now - last_report).as_secs_f64();
                let mut line = format!("{:8.3}s", (now - base).as_secs_f64());
                if let Some(ti) = ports.tx {
                    if mode.tx() {
                        let s = ports.ports[ti].stats();
                        let p = s.tx_packets - rep_tx.tx_packets;
                        let d =
                            (s.tx_dropped + s.tx_errors) - (rep_tx.tx_dropped + rep_tx.tx_errors);
                        line += &format!(
                            "  tx {}pps {}bps drop {}pps",
                            si(per_sec(p, dt)),
                            si(per_sec(p * wire * 8, dt)),
                            si(per_sec(d, dt))
                        );
                        rep_tx = s;
                    }
                }
                if mode.rx() {
                    let p = rx_pkts - rep_rx.0;
                    let b = rx_bytes - rep_rx.1 + p * FCS_LEN as u64;
                    line += &format!(
                        "  rx {}pps {}bps",
                        si(per_sec(p, dt)),
                        si(per_sec(b * 8, dt))
                    );
                    rep_rx = (rx_pkts, rx_bytes);
                }
                emit(cfg.report_to_stderr, &line);
            }
            last_report = now;
            next_report += Duration::from_secs(1);
            if next_report <= now {
                next_report = now + Duration::from_secs(1);
            }
        }

        // Idle: sleep through long token waits when nothing needs polling.
        if waiting_ns > 200_000 && !mode.rx() {
            std::thread::sleep(Duration::from_nanos(waiting_ns.min(10_000_000) - 50_000));
        } else if waiting_ns > 0 {
            std::hint::spin_loop();
        }
    }

    let end = Instant::now();
    if tx_on {
        tx_end = end;
    }
    let elapsed = (end - base).as_secs_f64();
    let tx = ports.tx.filter(|_| mode.tx()).map(|i| {
        let s = ports.ports[i].stats();
        TxTotals {
            packets: s.tx_packets - tx0.tx_packets,
            bytes: s.tx_bytes - tx0.tx_bytes,
            dropped: s.tx_dropped - tx0.tx_dropped,
            errors: s.tx_errors - tx0.tx_errors,
            seconds: (tx_end - base).as_secs_f64(),
        }
    });
    let rx = ports.rx.filter(|_| mode.rx()).map(|i| {
        let s: PortStats = ports.ports[i].stats();
        RxTotals {
            packets: rx_pkts,
            bytes: rx_bytes,
            matched,
            dropped: s.rx_dropped - rx0.rx_dropped,
            active_seconds: first_rx.map_or(0.0, |f| (last_rx - f).as_secs_f64()),
        }
    });
    Outcome {
        elapsed,
        tx,
        rx,
        latency: lat.summary(),
        stopped_by,
    }
}

fn emit(to_stderr: bool, line: &str) {
    if to_stderr {
        let _ = writeln!(std::io::stderr(), "{line}");
    } else {
        let _ = writeln!(std::io::stdout(), "{line}");
    }
}

/// The summary as JSON.
pub fn summary_json(o: &Outcome, cfg: &RunCfg, head: serde_json::Value) -> serde_json::Value {
    let wire = cfg.size as f64 * 8.0;
    let mut v = head;
    v["elapsed_s"] = serde_json::json!(o.elapsed);
    v["stopped_by"] = serde_json::json!(o.stopped_by);
    v["tx"] = match &o.tx {
        Some(t) => serde_json::json!({
            "packets": t.packets,
            "bytes": t.bytes,
            "dropped": t.dropped,
            "errors": t.errors,
            "seconds": t.seconds,
            "pps": t.pps(),
            "bps": t.pps() * wire,
        }),
        None => serde_json::Value::Null,
    };
    v["rx"] = match &o.rx {
        Some(r) => serde_json::json!({
            "packets": r.packets,
            "bytes": r.bytes,
            "matched": r.matched,
            "dropped": r.dropped,
            "active_s": r.active_seconds,
            "pps": r.pps(o.elapsed),
            "bps": per_sec((r.bytes + r.packets * FCS_LEN as u64) * 8, rx_secs(r, o.elapsed)),
        }),
        None => serde_json::Value::Null,
    };
    v["latency_ns"] = match &o.latency {
        Some(l) => serde_json::json!({
            "samples": l.samples,
            "min": l.min,
            "avg": l.avg,
            "p50": l.p50,
            "p99": l.p99,
            "max": l.max,
        }),
        None => serde_json::Value::Null,
    };
    v
}

fn rx_secs(r: &RxTotals, elapsed: f64) -> f64 {
    if r.packets > 1 && r.active_seconds > 0.0 {
        r.active_seconds
    } else {
        elapsed
    }
}

/// The summary as text lines.
pub fn summary_text(o: &Outcome, cfg: &RunCfg) -> String {
    let wire = cfg.size as f64 * 8.0;
    let mut s = format!(
        "summary: {} for {:.3} s (stopped by {})\n",
        cfg.mode.as_str(),
        o.elapsed,
        o.stopped_by
    );
    if let Some(t) = &o.tx {
        s += &format!(
            "  tx: {} packets, {} bytes in {:.3} s: {}pps {}bps; dropped {} errors {}\n",
            t.packets,
            t.bytes,
            t.seconds,
            si(t.pps()),
            si(t.pps() * wire),
            t.dropped,
            t.errors
        );
    }
    if let Some(r) = &o.rx {
        let secs = rx_secs(r, o.elapsed);
        s += &format!(
            "  rx: {} packets ({} ours), {} bytes in {:.3} s: {}pps {}bps; port dropped {}\n",
            r.packets,
            r.matched,
            r.bytes,
            secs,
            si(r.pps(o.elapsed)),
            si(per_sec((r.bytes + r.packets * FCS_LEN as u64) * 8, secs)),
            r.dropped
        );
    }
    if let Some(l) = &o.latency {
        s += &format!(
            "  latency (ns, {} samples): min {} avg {} p50 {} p99 {} max {}\n",
            l.samples, l.min, l.avg, l.p50, l.p99, l.max
        );
    } else if cfg.mode == Mode::TxRx {
        s += "  latency: no probe came back\n";
    }
    s
}
