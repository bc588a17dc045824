//! Packet sampling in the fabric, for sFlow (and any exporter that wants 1-in-N packet headers).
//!
//! What: a bridge with a sampler picks, on average, one received packet in `rate`, copies the
//! first `header_bytes` of its frame with the frame's length, input port and output port, and
//! hands that [`Sample`] to an exporter through a bounded channel ([`SampleSink`]). It also
//! counts, per input port, how many packets it could have sampled (sFlow's *sample pool*):
//! each sample carries the pool growth of its port since that port's previous sample on this
//! thread, so the exporter gets exact pools by adding them up, however many threads serve the
//! bridge.
//!
//! How: packets are picked on ingress, after the mirror check (a mirror's reserved output port
//! is not sampled), before the module, so picking works the same for every switching-logic
//! module. A picked sample waits in its sampler until the module has decided where the batch
//! goes; the bridge then fills in the output ([`Sample::output`], encoded as sFlow and OVS do:
//! see [`output_code`]) and sends it (`bridge::sampled`). The gap to the next sample is drawn
//! uniformly from `1..=2*rate-1` (mean `rate`), as sFlow asks, so periodic traffic is not
//! aliased. A full channel drops the sample and counts it (sFlow's `drops`); the poll thread
//! never waits for the exporter.
//!
//! Cost: a bridge without a sampler pays one empty-list test per received batch. With one, a
//! batch that holds no sample costs an add and a compare, and the bridge one more test; a
//! sample costs one allocation of at most `header_bytes`, the output's resolution (see
//! `bridge::sampled`) and a channel send.
//!
//! Threads: a [`Sampler`] lives in one poll thread's bridge; the sink's sender is cloned into
//! every thread that serves the bridge, the receiver belongs to the exporter.

use crate::{Error, PollSet};
use crossbeam_channel::{Receiver, Sender, TrySendError};
use packet::Batch;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Samples the channel holds before new ones are dropped.
pub const SINK_DEPTH: usize = 4096;
/// The most header bytes a sample may copy (sFlow's `header` column allows up to 256).
pub const MAX_HEADER: u16 = 256;

/// What a `sample` action adds to its sample: the IPFIX collector set and the observation
/// domain and point the action names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowTag {
    pub collector_set_id: u32,
    pub obs_domain_id: u32,
    pub obs_point_id: u32,
}

/// [`Sample::output`] when the output is not known (sFlow's 0): the packet went to the slow
/// path, whose decision comes later.
pub const OUTPUT_UNKNOWN: u32 = 0;
/// [`Sample::output`] for a dropped packet: sFlow's format 1 (the low bits are a reason) with
/// reason 256, "unknown", as OVS sends it.
pub const OUTPUT_DROPPED: u32 = 0x4000_0100;
/// Format 2 of [`Sample::output`]: the low bits count the ports the packet went to.
pub const OUTPUT_MULTIPLE: u32 = 0x8000_0000;

/// The sFlow encoding of where a packet went, as OVS computes it: `n` outputs, the
/// interface index of the only one (`None` if it has none) when `n` is 1, and whether the
/// packet was dropped (else, with no output, it is still on its way: unknown).
pub fn output_code(n: u32, single: Option<u32>, dropped: bool) -> u32 {
    match (n, single) {
        (0, _) if dropped => OUTPUT_DROPPED,
        (0, _) => OUTPUT_UNKNOWN,
        (1, Some(ifindex)) if ifindex != 0 && ifindex <= 0x3fff_ffff => ifindex,
        _ => OUTPUT_MULTIPLE | n.min(0x3fff_ffff),
    }
}

/// One sampled packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The sampler that took it (the exporter's key for the bridge).
    pub sampler: u32,
    /// The input port's interface index (see [`SamplerConfig::ifindex`]).
    pub input: u32,
    /// Where the packet went, in sFlow's encoding (see [`output_code`]).
    pub output: u32,
    /// The frame's length on the wire, without FCS.
    pub frame_len: u32,
    /// The sampling rate in force (1 in `rate`).
    pub rate: u32,
    /// Packets the input port received on this thread since its previous sample here,
    /// this one included.
    pub pool_delta: u64,
    /// The first bytes of the frame.
    pub header: Vec<u8>,
    /// Set for a sample a flow's `sample` action took (see [`FlowSampleTap`]); `None` for
    /// the bridge-wide samplers.
    pub flow: Option<FlowTag>,
}

/// Where samples go: a bounded channel and the count of samples it had no room for.
pub struct SampleSink {
    tx: Sender<Sample>,
    rx: Receiver<Sample>,
    dropped: AtomicU64,
}

impl SampleSink {
    /// A sink holding up to `depth` samples.
    pub fn new(depth: usize) -> Arc<SampleSink> {
        let (tx, rx) = crossbeam_channel::bounded(depth.max(1));
        Arc::new(SampleSink {
            tx,
            rx,
            dropped: AtomicU64::new(0),
        })
    }

    /// The exporter's end.
    pub fn receiver(&self) -> &Receiver<Sample> {
        &self.rx
    }

    /// Samples dropped because the channel was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A bridge's sampling as the configuration sets it.
#[derive(Clone)]
pub struct SamplerConfig {
    /// The exporter's identifier for this bridge, copied into every sample.
    pub id: u32,
    /// One packet in `rate` (at least 1).
    pub rate: u32,
    /// Bytes of each sampled frame to copy (at most [`MAX_HEADER`]).
    pub header_bytes: u16,
    pub sink: Arc<SampleSink>,
}

impl std::fmt::Debug for SamplerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SamplerConfig")
            .field("id", &self.id)
            .field("rate", &self.rate)
            .field("header_bytes", &self.header_bytes)
            .finish()
    }
}

impl SamplerConfig {
    /// The interface index a sample reports for a port: the kernel's, for ports that have
    /// one, else the OpenFlow port number.
    pub fn ifindex(kernel: Option<u32>, ofport: u32) -> u32 {
        kernel.unwrap_or(ofport)
    }
}

/// A bridge's sampler on one poll thread.
pub struct Sampler {
    cfg: SamplerConfig,
    /// Per slot, one more for slots beyond the table: packets until that port's next sample
    /// (1 = the next packet). Each port is its own sFlow data source, so each keeps its own
    /// countdown: what follows a port's last sample is at most `2 * rate - 2` packets.
    skip: Vec<u32>,
    /// Per slot: packets received since that slot's previous sample.
    pool: Vec<u64>,
    /// Per slot: the interface index samples report.
    ifindex: Vec<u32>,
    rng: u64,
    /// Samples of the current batch waiting for their output: (index in the batch, sample).
    pending: Vec<(usize, Sample)>,
}

impl Sampler {
    /// A sampler for ports whose interface indexes are `ifindex` (by slot).
    pub fn new(cfg: SamplerConfig, ifindex: Vec<u32>, seed: u64) -> Sampler {
        let mut s = Sampler {
            pool: vec![0; ifindex.len()],
            skip: vec![1; ifindex.len() + 1],
            ifindex,
            rng: seed | 1,
            pending: Vec::new(),
            cfg,
        };
        s.cfg.rate = s.cfg.rate.max(1);
        s.cfg.header_bytes = s.cfg.header_bytes.min(MAX_HEADER);
        for i in 0..s.skip.len() {
            s.skip[i] = s.next_gap();
        }
        s
    }

    /// The countdown index of `slot` (the spare last one for slots beyond the table).
    #[inline]
    fn skip_index(&self, slot: u16) -> usize {
        usize::from(slot).min(self.skip.len() - 1)
    }

    fn next_gap(&mut self) -> u32 {
        let r = self.cfg.rate;
        if r == 1 {
            return 1;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        // Uniform in 1..=2r-1: mean r.
        let span = u64::from(r) * 2 - 1;
        (self.rng % span) as u32 + 1
    }

    /// Accounts a received batch from slot `slot` and samples from it. True if it took
    /// samples: they wait for [`Sampler::resolve`].
    #[inline]
    pub fn observe(&mut self, slot: u16, rxb: &Batch) -> bool {
        let n = rxb.len() as u32;
        if let Some(p) = self.pool.get_mut(usize::from(slot)) {
            *p += u64::from(n);
        }
        let k = self.skip_index(slot);
        if n < self.skip[k] {
            self.skip[k] -= n;
            return false;
        }
        self.take(slot, rxb);
        !self.pending.is_empty()
    }

    /// The batch indexes of the samples waiting for their output, in order.
    pub fn pending(&self) -> impl Iterator<Item = usize> + '_ {
        self.pending.iter().map(|(i, _)| *i)
    }

    /// Sends the waiting samples, each with the output `output_of` gives for its batch index.
    #[cold]
    #[inline(never)]
    pub fn resolve(&mut self, mut output_of: impl FnMut(usize) -> u32) {
        for (i, mut s) in self.pending.drain(..) {
            s.output = output_of(i);
            match self.cfg.sink.tx.try_send(s) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.cfg.sink.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn take(&mut self, slot: u16, rxb: &Batch) {
        let pkts = rxb.packets();
        let n = pkts.len() as u32;
        let k = self.skip_index(slot);
        // Packets of this batch after the last sample go into the next sample's pool.
        let mut i = self.skip[k] - 1;
        let mut taken_upto = 0u32;
        while i < n {
            let p = &pkts[i as usize];
            let data = p.data();
            let h = data.len().min(usize::from(self.cfg.header_bytes));
            let slot_pool = self.pool.get_mut(usize::from(slot));
            // The pool was credited with the whole batch; the part after this sample
            // belongs to the next one.
            let delta = match slot_pool {
                Some(pool) => {
                    let after = u64::from(n - 1 - i);
                    let d = pool.saturating_sub(after);
                    *pool = after;
                    d
                }
                None => u64::from(i + 1 - taken_upto),
            };
            taken_upto = i + 1;
            let s = Sample {
                sampler: self.cfg.id,
                input: self.ifindex.get(usize::from(slot)).copied().unwrap_or(0),
                output: OUTPUT_UNKNOWN,
                frame_len: data.len() as u32,
                rate: self.cfg.rate,
                pool_delta: delta,
                header: data[..h].to_vec(),
                flow: None,
            };
            self.pending.push((i as usize, s));
            let gap = self.next_gap();
            i += gap;
        }
        self.skip[k] = i - n + 1;
    }
}

/// Where an OpenFlow bridge's `sample` actions send their samples: the flow-based IPFIX
/// exporter's sink and the id it knows the bridge by, or nothing (then a `sample` action
/// that wins its coin toss is counted as unexported and costs nothing more). Read by the poll
/// threads without a lock, set by the configuration.
#[derive(Default)]
pub struct FlowSampleTap {
    cur: arc_swap::ArcSwapOption<(u32, Arc<SampleSink>)>,
}

impl FlowSampleTap {
    /// Sends this bridge's flow samples to `sink` under id `sampler`, or nowhere.
    pub fn set(&self, to: Option<(u32, Arc<SampleSink>)>) {
        self.cur.store(to.map(Arc::new));
    }

    /// Hands one packet a `sample` action chose to the exporter; false if there is none.
    /// `input` is the OpenFlow input port, `rate` the action's 1-in-N.
    pub fn send(&self, tag: FlowTag, input: u32, rate: u32, frame: &[u8]) -> bool {
        let g = self.cur.load();
        let Some(cur) = g.as_deref() else {
            return false;
        };
        let (sampler, sink) = (cur.0, &cur.1);
        let h = frame.len().min(usize::from(MAX_HEADER));
        let s = Sample {
            sampler,
            input,
            output: OUTPUT_UNKNOWN,
            frame_len: frame.len() as u32,
            rate,
            pool_delta: 1,
            header: frame[..h].to_vec(),
            flow: Some(tag),
        };
        if sink.tx.try_send(s).is_err() {
            sink.dropped.fetch_add(1, Ordering::Relaxed);
        }
        true
    }
}

impl PollSet {
    /// Sets (or with `None` removes) bridge `br`'s sampler for `owner` on this thread.
    pub fn set_sampler(
        &mut self,
        br: &str,
        owner: &'static str,
        cfg: Option<SamplerConfig>,
    ) -> Result<(), Error> {
        let seed = self as *const PollSet as u64 ^ 0x9e37_79b9_7f4a_7c15;
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        let s = cfg.map(|c| {
            let mut ifindex = Vec::new();
            for (i, s) in b.ports() {
                let i = usize::from(i);
                if ifindex.len() <= i {
                    ifindex.resize(i + 1, 0);
                }
                ifindex[i] = SamplerConfig::ifindex(s.port.ifindex(), s.ofport);
            }
            Sampler::new(c, ifindex, seed)
        });
        b.set_sampler(owner, s);
        Ok(())
    }
}

impl crate::Datapath {
    /// Sets bridge `br`'s sampler for `owner` on every poll thread that serves it (each owner,
    /// such as sFlow or IPFIX, has its own). Call again after the bridge's ports change
    /// (interface indexes are resolved when it is set).
    pub fn set_sampler(
        &self,
        br: &str,
        owner: &'static str,
        cfg: Option<SamplerConfig>,
    ) -> Result<(), Error> {
        self.on_bridge_threads(br, move |sw, b| sw.set_sampler(b, owner, cfg.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::Pool;

    fn batch(pool: &mut Pool, n: usize, len: usize) -> Batch {
        let mut b = Batch::new();
        for i in 0..n {
            let mut p = pool.alloc().expect("buffer");
            let mut f = vec![0u8; len];
            f[0] = i as u8;
            assert!(p.set_frame(&f));
            b.push(p).map_err(|_| ()).expect("room");
        }
        b
    }

    fn cfg(rate: u32, header: u16, sink: &Arc<SampleSink>) -> SamplerConfig {
        SamplerConfig {
            id: 7,
            rate,
            header_bytes: header,
            sink: sink.clone(),
        }
    }

    #[test]
    fn rate_one_samples_every_packet_with_exact_pools() {
        let sink = SampleSink::new(1024);
        let mut s = Sampler::new(cfg(1, 16, &sink), vec![10, 11], 1);
        let mut pool = Pool::new(64);
        let mut b = batch(&mut pool, 5, 60);
        assert!(s.observe(1, &b));
        s.resolve(|i| 100 + i as u32);
        let got: Vec<Sample> = sink.receiver().try_iter().collect();
        assert_eq!(got.len(), 5);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.input, 11);
            assert_eq!(g.frame_len, 60);
            assert_eq!(g.header.len(), 16);
            assert_eq!(g.header[0], i as u8);
            assert_eq!(g.pool_delta, 1);
            assert_eq!(g.sampler, 7);
            assert_eq!(g.output, 100 + i as u32);
        }
        pool.free_batch(&mut b);
    }

    #[test]
    fn pools_add_up_and_the_rate_holds_on_average() {
        let sink = SampleSink::new(100_000);
        let mut s = Sampler::new(cfg(50, 128, &sink), vec![1, 2, 3], 42);
        let mut pool = Pool::new(64);
        let mut b = batch(&mut pool, 32, 40);
        let mut sent = [0u64; 3];
        for round in 0..20_000u32 {
            let slot = (round % 3) as u16;
            if s.observe(slot, &b) {
                s.resolve(|_| 0);
            }
            sent[slot as usize] += 32;
        }
        let got: Vec<Sample> = sink.receiver().try_iter().collect();
        // 640,000 packets at 1 in 50: 12,800 expected; the gap's spread keeps it near.
        assert!((12_000..13_600).contains(&got.len()), "{}", got.len());
        for (slot, want) in sent.iter().enumerate() {
            let summed: u64 = got
                .iter()
                .filter(|g| g.input == slot as u32 + 1)
                .map(|g| g.pool_delta)
                .sum();
            // What follows a port's last sample is not reported yet: fewer than the
            // longest gap (2 * 50 - 1), since every port counts down on its own.
            let left = s.pool[slot];
            assert_eq!(summed + left, *want, "slot {slot}");
            assert!(left < 99, "{left}");
        }
        assert!(got.iter().all(|g| g.header.len() == 40 && g.rate == 50));
        pool.free_batch(&mut b);
    }

    #[test]
    fn a_full_sink_drops_and_counts() {
        let sink = SampleSink::new(3);
        let mut s = Sampler::new(cfg(1, 8, &sink), vec![1], 3);
        let mut pool = Pool::new(64);
        let mut b = batch(&mut pool, 10, 20);
        assert!(s.observe(0, &b));
        s.resolve(|_| 0);
        assert_eq!(sink.receiver().len(), 3);
        assert_eq!(sink.dropped(), 7);
        pool.free_batch(&mut b);
    }

    #[test]
    fn samples_wait_for_their_output() {
        let sink = SampleSink::new(16);
        let mut s = Sampler::new(cfg(1, 8, &sink), vec![1], 5);
        let mut pool = Pool::new(64);
        let mut b = batch(&mut pool, 3, 20);
        assert!(s.observe(0, &b));
        assert_eq!(s.pending().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(sink.receiver().is_empty());
        s.resolve(|i| [7, OUTPUT_DROPPED, OUTPUT_MULTIPLE | 3][i]);
        let got: Vec<u32> = sink.receiver().try_iter().map(|g| g.output).collect();
        assert_eq!(got, vec![7, 0x4000_0100, 0x8000_0003]);
        assert_eq!(s.pending().count(), 0);
        pool.free_batch(&mut b);
    }

    #[test]
    fn output_codes_are_ovs_ones() {
        assert_eq!(output_code(1, Some(102), false), 102);
        assert_eq!(output_code(1, None, false), 0x8000_0001);
        assert_eq!(output_code(1, Some(0), false), 0x8000_0001);
        assert_eq!(output_code(2, Some(5), false), 0x8000_0002);
        assert_eq!(output_code(3, None, true), 0x8000_0003);
        assert_eq!(output_code(0, None, true), 0x4000_0100);
        assert_eq!(output_code(0, None, false), 0);
    }

    #[test]
    fn gaps_stay_in_range() {
        let sink = SampleSink::new(1);
        let mut s = Sampler::new(cfg(400, 8, &sink), vec![], 9);
        let mut sum = 0u64;
        for _ in 0..100_000 {
            let g = s.next_gap();
            assert!((1..=799).contains(&g));
            sum += u64::from(g);
        }
        let mean = sum / 100_000;
        assert!((390..=410).contains(&mean), "{mean}");
    }
}
