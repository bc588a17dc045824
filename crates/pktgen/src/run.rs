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
    let mut lp = Loop::new(cfg, gen, ports);
    loop {
        let now = Instant::now();
        if lp.should_stop(now, stop) {
            break;
        }
        let waiting_ns = lp.transmit(now);
        lp.receive();
        lp.report(now);
        idle(waiting_ns, cfg.mode);
    }
    lp.finish()
}

/// The transmitter's state: what it may send and what it sends next.
struct Tx {
    bucket: TokenBucket,
    /// Frames asked of the bucket per turn.
    chunk: u64,
    frame_len: usize,
    nflows: usize,
    /// The next frame's flow and sequence number.
    flow: usize,
    seq: u32,
    /// Frames handed to the port so far.
    offered: u64,
    /// Still transmitting; when it stopped.
    on: bool,
    end: Instant,
    /// txrx: receive until then after the transmitter stopped.
    drain_until: Option<Instant>,
}

impl Tx {
    /// Puts up to `n` frames in `txb`, each the next flow's, stamped with its sequence
    /// number and `now_ns`. Stops early when the pool or the batch runs out. Not inlined:
    /// alone, the per-frame loop compiles as tightly as it did inside the one big loop.
    #[inline(never)]
    fn fill_batch(
        &mut self,
        gen: &FrameGen,
        pool: &mut Pool,
        txb: &mut Batch,
        n: u64,
        now_ns: u64,
    ) {
        let (mut flow, mut seq) = (self.flow, self.seq);
        let (frame_len, nflows) = (self.frame_len, self.nflows);
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
        (self.flow, self.seq) = (flow, seq);
    }
}

/// What the receiver has counted.
struct Rx {
    pkts: u64,
    bytes: u64,
    matched: u64,
    first: Option<Instant>,
    last: Instant,
    lat: Latency,
}

/// The per-second report's state: when it is due and the counters at the last one.
struct Report {
    next: Instant,
    last: Instant,
    tx: PortStats,
    rx: (u64, u64),
}

/// Everything one run's loop keeps between turns.
struct Loop<'a> {
    cfg: &'a RunCfg,
    gen: &'a FrameGen,
    ports: &'a mut Ports,
    pool: Pool,
    txb: Batch,
    rxb: Batch,
    base: Instant,
    /// The ports' counters when the run started.
    tx0: PortStats,
    rx0: PortStats,
    tx: Tx,
    rx: Rx,
    rep: Report,
    stopped_by: &'static str,
}

impl<'a> Loop<'a> {
    /// Makes the pool, the batches and the token bucket: nothing allocates after this.
    fn new(cfg: &'a RunCfg, gen: &'a FrameGen, ports: &'a mut Ports) -> Self {
        let batch_size = cfg.batch.clamp(1, packet::MAX_BATCH);
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
        let tx0 = ports.tx.map(|i| ports.ports[i].stats()).unwrap_or_default();
        let rx0 = ports.rx.map(|i| ports.ports[i].stats()).unwrap_or_default();
        Loop {
            cfg,
            gen,
            ports,
            pool: Pool::new(4 * packet::MAX_BATCH),
            txb: Batch::new(),
            rxb: Batch::new(),
            base,
            tx0,
            rx0,
            tx: Tx {
                bucket: TokenBucket::new(cfg.rate, burst, 0),
                chunk,
                frame_len: gen.frame_len(),
                nflows: gen.flows(),
                flow: 0,
                seq: 0,
                offered: 0,
                on: cfg.mode.tx(),
                end: base,
                drain_until: None,
            },
            rx: Rx {
                pkts: 0,
                bytes: 0,
                matched: 0,
                first: None,
                last: base,
                lat: Latency::new(),
            },
            rep: Report {
                next: base + Duration::from_secs(1),
                last: base,
                tx: tx0,
                rx: (0, 0),
            },
            stopped_by: "duration",
        }
    }

    /// Checks the stop conditions (see the module documentation): stops the transmitter
    /// and starts the drain, or says the loop is over.
    #[inline]
    fn should_stop(&mut self, now: Instant, stop: &AtomicBool) -> bool {
        let cfg = self.cfg;
        if self.tx.on {
            let why = if stop.load(Ordering::Relaxed) {
                "signal"
            } else if cfg.duration.is_some_and(|d| now - self.base >= d) {
                "duration"
            } else if cfg.count > 0 && self.tx.offered >= cfg.count {
                "count"
            } else {
                return false;
            };
            self.tx.on = false;
            self.tx.end = now;
            self.stopped_by = why;
            if cfg.mode == Mode::Tx || why == "signal" {
                return true;
            }
            self.tx.drain_until = Some(now + cfg.drain);
            false
        } else if let Some(d) = self.tx.drain_until {
            now >= d || stop.load(Ordering::Relaxed)
        } else {
            match self.rx_stop_reason(now, stop) {
                Some(why) => {
                    self.stopped_by = why;
                    true
                }
                None => false,
            }
        }
    }

    /// Why an `rx` run ends now, if it does.
    #[inline]
    fn rx_stop_reason(&self, now: Instant, stop: &AtomicBool) -> Option<&'static str> {
        let cfg = self.cfg;
        if stop.load(Ordering::Relaxed) {
            return Some("signal");
        }
        if cfg.duration.is_some_and(|d| now - self.base >= d) {
            return Some("duration");
        }
        if cfg.count > 0 && self.rx.pkts >= cfg.count {
            return Some("count");
        }
        if let (Some(idle), Some(_)) = (cfg.idle_timeout, self.rx.first) {
            if now - self.rx.last >= idle {
                return Some("idle");
            }
        }
        None
    }

    /// Sends what the token bucket allows of the next chunk. Returns how many nanoseconds
    /// until the bucket would allow it when it allowed nothing, else 0.
    #[inline]
    fn transmit(&mut self, now: Instant) -> u64 {
        let (true, Some(ti)) = (self.tx.on, self.ports.tx) else {
            return 0;
        };
        let now_ns = ns_since(self.base, now);
        let mut want = self.tx.chunk;
        if self.cfg.count > 0 {
            want = want.min(self.cfg.count - self.tx.offered);
        }
        let n = if self.tx.bucket.take_all(now_ns, want) {
            want
        } else {
            0
        };
        self.tx
            .fill_batch(self.gen, &mut self.pool, &mut self.txb, n, now_ns);
        self.tx.offered += self.txb.len() as u64;
        // An empty batch still lets the port retry a stalled kick.
        self.ports.ports[ti].tx_batch(&mut self.pool, &mut self.txb);
        if n == 0 {
            self.tx.bucket.wait_ns(now_ns, want)
        } else {
            0
        }
    }

    /// Takes one batch from the receive port and counts it: frames, bytes, our probes and,
    /// in `txrx`, their latency.
    #[inline]
    fn receive(&mut self) {
        let (true, Some(ri)) = (self.cfg.mode.rx(), self.ports.rx) else {
            return;
        };
        let got = self.ports.ports[ri].rx_batch(&mut self.pool, &mut self.rxb);
        if got == 0 {
            return;
        }
        let t = Instant::now();
        let t_ns = ns_since(self.base, t);
        let rx = &mut self.rx;
        if rx.first.is_none() {
            rx.first = Some(t);
        }
        rx.last = t;
        for p in self.rxb.packets() {
            rx.bytes += p.len() as u64;
            if let Some((_seq, ts)) = frame::probe(p.data()) {
                rx.matched += 1;
                if self.cfg.mode == Mode::TxRx {
                    rx.lat.record(t_ns.saturating_sub(ts));
                }
            }
        }
        rx.pkts += got as u64;
        self.pool.free_batch(&mut self.rxb);
    }

    /// Once a second: prints the rates since the last report (if asked to).
    #[inline]
    fn report(&mut self, now: Instant) {
        if now < self.rep.next {
            return;
        }
        if self.cfg.report {
            let line = self.report_line(now);
            emit(self.cfg.report_to_stderr, &line);
        }
        self.rep.last = now;
        self.rep.next += Duration::from_secs(1);
        if self.rep.next <= now {
            self.rep.next = now + Duration::from_secs(1);
        }
    }

    /// The per-second line; moves the report's counters on.
    #[cold]
    fn report_line(&mut self, now: Instant) -> String {
        let mode = self.cfg.mode;
        let wire = self.cfg.size as u64;
        let dt = (now - self.rep.last).as_secs_f64();
        let mut line = format!("{:8.3}s", (now - self.base).as_secs_f64());
        if let (Some(ti), true) = (self.ports.tx, mode.tx()) {
            let s = self.ports.ports[ti].stats();
            let r = &self.rep.tx;
            let p = s.tx_packets - r.tx_packets;
            let d = (s.tx_dropped + s.tx_errors) - (r.tx_dropped + r.tx_errors);
            line += &format!(
                "  tx {}pps {}bps drop {}pps",
                si(per_sec(p, dt)),
                si(per_sec(p * wire * 8, dt)),
                si(per_sec(d, dt))
            );
            self.rep.tx = s;
        }
        if mode.rx() {
            let p = self.rx.pkts - self.rep.rx.0;
            let b = self.rx.bytes - self.rep.rx.1 + p * FCS_LEN as u64;
            line += &format!(
                "  rx {}pps {}bps",
                si(per_sec(p, dt)),
                si(per_sec(b * 8, dt))
            );
            self.rep.rx = (self.rx.pkts, self.rx.bytes);
        }
        line
    }

    /// The totals: the ports' counters since the start, ours, and the latency summary.
    fn finish(mut self) -> Outcome {
        let end = Instant::now();
        if self.tx.on {
            self.tx.end = end;
        }
        let mode = self.cfg.mode;
        let (base, ports) = (self.base, &*self.ports);
        let tx = ports.tx.filter(|_| mode.tx()).map(|i| {
            let s = ports.ports[i].stats();
            let s0 = &self.tx0;
            TxTotals {
                packets: s.tx_packets - s0.tx_packets,
                bytes: s.tx_bytes - s0.tx_bytes,
                dropped: s.tx_dropped - s0.tx_dropped,
                errors: s.tx_errors - s0.tx_errors,
                seconds: (self.tx.end - base).as_secs_f64(),
            }
        });
        let rx = ports.rx.filter(|_| mode.rx()).map(|i| {
            let s: PortStats = ports.ports[i].stats();
            RxTotals {
                packets: self.rx.pkts,
                bytes: self.rx.bytes,
                matched: self.rx.matched,
                dropped: s.rx_dropped - self.rx0.rx_dropped,
                active_seconds: self
                    .rx
                    .first
                    .map_or(0.0, |f| (self.rx.last - f).as_secs_f64()),
            }
        });
        Outcome {
            elapsed: (end - base).as_secs_f64(),
            tx,
            rx,
            latency: self.rx.lat.summary(),
            stopped_by: self.stopped_by,
        }
    }
}

/// Between turns: sleeps through long token waits when nothing needs polling, else spins.
#[inline]
fn idle(waiting_ns: u64, mode: Mode) {
    if waiting_ns > 200_000 && !mode.rx() {
        std::thread::sleep(Duration::from_nanos(waiting_ns.min(10_000_000) - 50_000));
    } else if waiting_ns > 0 {
        std::hint::spin_loop();
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
