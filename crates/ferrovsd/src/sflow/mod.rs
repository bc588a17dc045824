//! sFlow export: OVSDB's `sFlow` table onto the datapath's packet sampler, and an exporter
//! thread that sends sFlow version 5 datagrams to the collectors.
//!
//! What: for each bridge whose `sflow` column names a row ([`config`]), the poll threads
//! sample one received packet in `sampling` ([`datapath::sample`]) and the exporter sends each
//! sample as a flow sample (input port, frame length, the first `header` bytes, the sampling
//! rate, the exact sample pool and the drop count) and, every `polling` seconds, a counter
//! sample per port of the bridge (the interface counters `ovs-vsctl list Interface` shows).
//! Datagrams name the agent address and, as sub-agent, the bridge's index in the exporter.
//!
//! How: one exporter thread for the daemon, started with the first configured bridge and
//! stopped with the last. It batches flow samples into datagrams of at most
//! [`wire::MAX_DATAGRAM`] bytes, sent when full or 100 ms after their first sample, to every
//! target of the bridge over one UDP socket per address family. Counter samples read the
//! ports' statistics through one datapath control call per bridge and poll.
//!
//! Limits: samples wait in a bounded channel ([`datapath::sample::SINK_DEPTH`]); when the
//! exporter falls behind, the poll threads drop samples and count them, and the count goes
//! out in every flow sample's `drops` field. The output port is the one the switching logic
//! chose, encoded as OVS does (see `datapath::sample::output_code`): a port's ifIndex,
//! `0x80000000 | n` for n ports, `0x40000100` for a drop; a packet the `openflow` module sent
//! to its slow path (a cache miss) is reported with output unknown (0).
//!
//! Threads: [`Sflow::configure`] runs on the reconfiguration thread; the exporter thread owns
//! the sockets and sequence numbers.

pub mod config;
pub mod wire;

use crate::collector::{Applied, Sockets};
use crate::vswitch::{model::Tables, vlog};
use config::SflowConfig;
use crossbeam_channel::{select, unbounded, Receiver, Sender};
use datapath::sample::{Sample, SampleSink, SamplerConfig, SINK_DEPTH};
use datapath::Datapath;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wire::{Datagram, FlowSample, IfCounters};

/// This exporter's name for its samplers on the datapath.
const OWNER: &str = "sflow";
/// How long a datagram with samples waits for more before it is sent.
const FLUSH_AFTER: Duration = Duration::from_millis(100);

/// What the exporter needs to know about one bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Export {
    id: u32,
    bridge: String,
    agent: IpAddr,
    targets: Vec<SocketAddr>,
    polling: u32,
}

struct Running {
    tx: Sender<Vec<Export>>,
    thread: Option<JoinHandle<()>>,
    sink: Arc<SampleSink>,
}

#[derive(Default)]
struct Inner {
    running: Option<Running>,
    applied: Applied<SflowConfig>,
}

/// The daemon's sFlow exporter. See the module documentation.
#[derive(Default)]
pub struct Sflow {
    inner: Mutex<Inner>,
}

impl Sflow {
    /// Applies the database's sFlow rows: samplers set or removed on the datapath, the
    /// exporter told what to send where. `ports_changed` re-sets every sampler (interface
    /// indexes are resolved when one is set). Returns warnings for the log when it changed
    /// something (nothing when the settings are as last applied).
    pub fn configure(&self, pmd: &Arc<Datapath>, t: &Tables, ports_changed: bool) -> Vec<String> {
        let (wanted, mut warnings) = config::from_tables(t);
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *g;
        let Some(gone) = inner.applied.changes(&wanted, ports_changed) else {
            return Vec::new();
        };
        for b in gone {
            // The bridge may be gone too: nothing to remove then.
            let _ = pmd.set_sampler(&b, OWNER, None);
        }
        if wanted.is_empty() {
            stop(inner.running.take());
            return warnings;
        }
        let running = inner
            .running
            .get_or_insert_with(|| start(Arc::downgrade(pmd)));
        let mut exports = Vec::new();
        for (bridge, cfg) in wanted {
            let id = inner.applied.id(&bridge);
            let (agent, why) = config::resolve(&cfg);
            if let Some(w) = why {
                warnings.push(format!(
                    "bridge {bridge}: sFlow: {w}; using {agent} (the address towards the first target)"
                ));
            }
            let sc = SamplerConfig {
                id,
                rate: cfg.sampling,
                header_bytes: cfg.header,
                sink: running.sink.clone(),
            };
            if let Err(e) = pmd.set_sampler(&bridge, OWNER, Some(sc)) {
                warnings.push(format!("bridge {bridge}: sFlow: {e}"));
                continue;
            }
            exports.push(Export {
                id,
                bridge: bridge.clone(),
                agent,
                targets: cfg.targets.clone(),
                polling: cfg.polling,
            });
            inner.applied.insert(bridge, cfg, id);
        }
        let _ = running.tx.send(exports);
        warnings
    }
}

impl Drop for Sflow {
    fn drop(&mut self) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        stop(g.running.take());
    }
}

fn start(pmd: Weak<Datapath>) -> Running {
    let (tx, rx) = unbounded();
    let sink = SampleSink::new(SINK_DEPTH);
    let s = sink.clone();
    let thread = std::thread::Builder::new()
        .name("sflow".into())
        .spawn(move || Exporter::new(s, pmd).run(&rx))
        .map_err(|e| vlog::err("sflow", &format!("cannot start the sFlow exporter: {e}")))
        .ok();
    Running { tx, thread, sink }
}

fn stop(r: Option<Running>) {
    if let Some(mut r) = r {
        drop(r.tx);
        if let Some(t) = r.thread.take() {
            let _ = t.join();
        }
    }
}

/// Per bridge, on the exporter thread.
struct BridgeState {
    export: Export,
    seq: u32,
    pending: Option<(Datagram, Instant)>,
    next_poll: Instant,
}

struct Exporter {
    sink: Arc<SampleSink>,
    pmd: Weak<Datapath>,
    bridges: HashMap<u32, BridgeState>,
    /// Per (bridge, ifIndex): flow sample sequence and summed sample pool.
    sources: HashMap<(u32, u32), (u32, u64)>,
    /// Per (bridge, ifIndex): counter sample sequence.
    counter_seq: HashMap<(u32, u32), u32>,
    socks: Sockets,
    started: Instant,
}

impl Exporter {
    fn new(sink: Arc<SampleSink>, pmd: Weak<Datapath>) -> Exporter {
        Exporter {
            sink,
            pmd,
            bridges: HashMap::new(),
            sources: HashMap::new(),
            counter_seq: HashMap::new(),
            socks: Sockets::new(),
            started: Instant::now(),
        }
    }

    fn run(mut self, cfg: &Receiver<Vec<Export>>) {
        let samples = self.sink.receiver().clone();
        loop {
            let wait = self
                .next_deadline()
                .saturating_duration_since(Instant::now());
            select! {
                recv(cfg) -> m => match m {
                    Ok(list) => self.reconfigure(list),
                    Err(_) => return,
                },
                recv(samples) -> s => if let Ok(s) = s { self.add_sample(&s) },
                default(wait) => {}
            }
            // Take whatever else is queued before looking at the clock again.
            for s in samples.try_iter().take(SINK_DEPTH) {
                self.add_sample(&s);
            }
            self.timers();
        }
    }

    fn reconfigure(&mut self, list: Vec<Export>) {
        let now = Instant::now();
        let mut next = HashMap::new();
        for e in list {
            let st = match self.bridges.remove(&e.id) {
                Some(mut st) => {
                    if st.export.polling != e.polling {
                        st.next_poll = now + poll_interval(e.polling);
                    }
                    st.export = e;
                    st
                }
                None => BridgeState {
                    next_poll: now + poll_interval(e.polling),
                    export: e,
                    seq: 0,
                    pending: None,
                },
            };
            next.insert(st.export.id, st);
        }
        for (_, mut st) in self.bridges.drain() {
            // A bridge that stopped exporting: send what it had.
            if let Some((d, _)) = st.pending.take() {
                dispatch(&self.socks, &mut st, d, self.started);
            }
        }
        self.bridges = next;
        let ids: Vec<u32> = self.bridges.keys().copied().collect();
        self.sources.retain(|(b, _), _| ids.contains(b));
        self.counter_seq.retain(|(b, _), _| ids.contains(b));
    }

    fn add_sample(&mut self, s: &Sample) {
        let drops = self.sink.dropped() as u32;
        let Some(st) = self.bridges.get_mut(&s.sampler) else {
            return;
        };
        let src = self.sources.entry((s.sampler, s.input)).or_default();
        src.0 = src.0.wrapping_add(1);
        src.1 = src.1.wrapping_add(s.pool_delta);
        let fs = FlowSample {
            seq: src.0,
            source_ifindex: s.input,
            rate: s.rate,
            pool: src.1 as u32,
            drops,
            input: s.input,
            output: s.output,
            frame_len: s.frame_len,
            header: &s.header,
        };
        let need = wire::flow_sample_len(s.header.len());
        if st.pending.as_ref().is_some_and(|(d, _)| !d.fits(need)) {
            if let Some((d, _)) = st.pending.take() {
                dispatch(&self.socks, st, d, self.started);
            }
        }
        if st.pending.is_none() {
            st.pending = Some((Datagram::new(st.export.agent, st.export.id), Instant::now()));
        }
        if let Some((d, _)) = st.pending.as_mut() {
            d.flow_sample(&fs);
        }
    }

    fn next_deadline(&self) -> Instant {
        let far = Instant::now() + Duration::from_secs(1);
        self.bridges
            .values()
            .flat_map(|st| {
                let flush = st.pending.as_ref().map(|(_, t)| *t + FLUSH_AFTER);
                let poll = (st.export.polling > 0).then_some(st.next_poll);
                flush.into_iter().chain(poll)
            })
            .min()
            .unwrap_or(far)
            .min(far)
    }

    fn timers(&mut self) {
        let now = Instant::now();
        let mut due = Vec::new();
        for st in self.bridges.values_mut() {
            if st
                .pending
                .as_ref()
                .is_some_and(|(_, t)| now >= *t + FLUSH_AFTER)
            {
                if let Some((d, _)) = st.pending.take() {
                    dispatch(&self.socks, st, d, self.started);
                }
            }
            if st.export.polling > 0 && now >= st.next_poll {
                st.next_poll = now + poll_interval(st.export.polling);
                due.push(st.export.id);
            }
        }
        for id in due {
            self.poll_counters(id);
        }
    }

    /// Sends a counter sample for every port of bridge `id`.
    fn poll_counters(&mut self, id: u32) {
        let Some(pmd) = self.pmd.upgrade() else {
            return;
        };
        let Some(st) = self.bridges.get_mut(&id) else {
            return;
        };
        let mut ports: Vec<IfCounters> = crate::vswitch::status::read_datapath(&pmd)
            .into_values()
            .filter(|p| p.bridge == st.export.bridge)
            .map(|p| IfCounters {
                ifindex: SamplerConfig::ifindex(p.ifindex, p.ofport),
                if_type: 6,
                speed: 0,
                direction: 0,
                status: if p.up { 3 } else { 1 },
                in_octets: p.stats.rx_bytes,
                in_ucast: p.stats.rx_packets as u32,
                in_discards: p.stats.rx_dropped as u32,
                in_errors: p.stats.rx_errors as u32,
                out_octets: p.stats.tx_bytes,
                out_ucast: p.stats.tx_packets as u32,
                out_discards: p.stats.tx_dropped as u32,
                out_errors: p.stats.tx_errors as u32,
            })
            .collect();
        ports.sort_by_key(|c| c.ifindex);
        let mut d: Option<Datagram> = None;
        for c in &ports {
            if d.as_ref()
                .is_some_and(|d| !d.fits(wire::COUNTER_SAMPLE_LEN))
            {
                if let Some(full) = d.take() {
                    dispatch(&self.socks, st, full, self.started);
                }
            }
            let dg = d.get_or_insert_with(|| Datagram::new(st.export.agent, st.export.id));
            let seq = self.counter_seq.entry((id, c.ifindex)).or_default();
            *seq = seq.wrapping_add(1);
            dg.counter_sample(*seq, c);
        }
        if let Some(last) = d {
            dispatch(&self.socks, st, last, self.started);
        }
    }
}

fn poll_interval(secs: u32) -> Duration {
    Duration::from_secs(u64::from(secs.max(1)))
}

/// Numbers, stamps and sends a datagram of `st`'s bridge: sequence numbers follow the order
/// datagrams leave in.
fn dispatch(socks: &Sockets, st: &mut BridgeState, d: Datagram, started: Instant) {
    st.seq = st.seq.wrapping_add(1);
    let bytes = d.finish(st.seq, started.elapsed().as_millis() as u32);
    let _ = socks.send(&st.export.targets, &bytes);
}
