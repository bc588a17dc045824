//! Per-bridge IPFIX export: OVSDB's `IPFIX` table onto the datapath's packet sampler, and an
//! exporter thread that turns samples into IPFIX flow records (RFC 7011).
//!
//! What: a bridge whose `ipfix` column names a row samples one received packet in `sampling`
//! (400 by default) and sends flow records to every `targets` collector (`IP[:PORT]`, port
//! 4739 by default) in observation domain `obs_domain_id` (0 by default). As in OVS, records
//! are aggregated in a flow cache only when both `cache_active_timeout` (seconds) and
//! `cache_max_flows` are above 0: a record then goes out when it has been in the cache for the
//! active timeout, or when the cache is full (all records, end reason "lack of resources").
//! Otherwise every sample is a one-packet record. Counts are of sampled packets (not scaled
//! by the rate), as OVS exports them. [`packet::sampled`] says what a record is keyed on,
//! [`wire`] what the records and templates hold.
//!
//! Flow-based IPFIX: an OpenFlow `sample` action on a bridge sends the packets it picks to
//! the collector set it names ([`flowsets`] reads the `Flow_Sample_Collector_Set` rows); their
//! records go to that set's `IPFIX` row's targets, in the observation domain the action names,
//! cached under the row's cache settings like the bridge's own. Each bridge's datapath tap
//! ([`datapath::sample::FlowSampleTap`]) is pointed at this exporter while the bridge has a
//! collector set.
//!
//! Each exporter (a bridge's, a collector set's) counts what it sampled and sent into
//! [`board::Board`], which OpenFlow's `NXST_IPFIX_BRIDGE` / `NXST_IPFIX_FLOW` statistics
//! read (`ovs-ofctl dump-ipfix-bridge`, `dump-ipfix-flow`).
//!
//! Not here: `obs_point_id` in the records, the `other_config` sampling switches, and egress
//! interfaces (egress is 0, unknown). A row that sets them is used for the rest.
//!
//! Threads: [`Ipfix::configure`] runs on the reconfiguration thread; one exporter thread,
//! started with the first configured bridge and stopped with the last, owns the caches,
//! sockets and sequence numbers. Samples reach it through the bounded channel of
//! [`datapath::sample`] (dropped and counted by the poll threads when it is full).

pub mod board;
pub mod flowsets;
pub mod wire;

use crate::collector::Sockets;
use crate::collector::{Applied, ExportRow};
use crate::vswitch::model::Tables;
use board::{Board, Counters};
use crossbeam_channel::{select, unbounded, Receiver, Sender};
use datapath::sample::{Sample, SampleSink, SamplerConfig, SINK_DEPTH};
use datapath::udpif::Udpif;
use datapath::Datapath;
use packet::sampled::{self, SampledKey};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wire::{Message, Record};

/// IPFIX's collector port.
pub const DEFAULT_PORT: u16 = 4739;
const OWNER: &str = "ipfix";
/// Bytes of each sampled frame the key is read from.
const HEADER_BYTES: u16 = 128;
/// How long a message with records waits for more before it is sent.
const FLUSH_AFTER: Duration = Duration::from_millis(100);
/// How often templates are sent again (collectors that start later learn them).
const TEMPLATE_EVERY: Duration = Duration::from_secs(10);

/// One bridge's IPFIX settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpfixConfig {
    pub targets: Vec<SocketAddr>,
    pub sampling: u32,
    pub domain: u32,
    pub active_timeout: u32,
    pub max_flows: u32,
}

impl IpfixConfig {
    fn caching(&self) -> bool {
        self.active_timeout > 0 && self.max_flows > 0
    }
}

/// Each bridge's IPFIX row, by bridge name, and warnings naming what was refused.
pub fn from_tables(t: &Tables) -> (Vec<(String, IpfixConfig)>, Vec<String>) {
    crate::collector::export_rows(t, "ipfix", "IPFIX", "IPFIX", read_row)
}

/// An `IPFIX` row's settings; `None` without a usable target.
pub(crate) fn read_row(r: &mut ExportRow<'_>) -> Option<IpfixConfig> {
    let max = i64::from(u32::MAX);
    let sampling = r.int("sampling", 1, max, 400) as u32;
    let domain = r.int("obs_domain_id", 0, max, 0) as u32;
    let active_timeout = r.int("cache_active_timeout", 0, max, 0) as u32;
    let max_flows = r.int("cache_max_flows", 0, max, 0) as u32;
    let targets = r.targets(DEFAULT_PORT);
    (!targets.is_empty()).then_some(IpfixConfig {
        targets,
        sampling,
        domain,
        active_timeout,
        max_flows,
    })
}

/// Marks the exporter ids of flow-sample taps, apart from the bridges' sampler ids.
const FLOW_TAP: u32 = 0x8000_0000;

/// What the exporter is told on every change: the bridges' samplers by id, and the
/// collector sets by (flow tap id, set id).
#[derive(Default)]
struct Plan {
    bridges: Vec<(u32, IpfixConfig, Arc<Counters>)>,
    sets: HashMap<(u32, u32), IpfixConfig>,
    /// Each collector set's counters, by the same key as `sets`.
    set_counters: HashMap<(u32, u32), Arc<Counters>>,
}

struct Running {
    tx: Sender<Plan>,
    thread: Option<JoinHandle<()>>,
    sink: Arc<SampleSink>,
}

#[derive(Default)]
struct Inner {
    running: Option<Running>,
    applied: Applied<IpfixConfig>,
    flow_applied: Applied<BTreeMap<u32, IpfixConfig>>,
}

/// The daemon's IPFIX exporter. See the module documentation.
#[derive(Default)]
pub struct Ipfix {
    inner: Mutex<Inner>,
}

impl Ipfix {
    /// Applies the database's IPFIX rows (see [`crate::sflow::Sflow::configure`], which this
    /// mirrors) and its collector sets, whose samples come from the OpenFlow bridges in
    /// `udpifs`; `board` gets the exporters' counters ([`board`]). Returns warnings when it
    /// changed something.
    pub fn configure(
        &self,
        pmd: &Arc<Datapath>,
        t: &Tables,
        ports_changed: bool,
        udpifs: &BTreeMap<String, Arc<Udpif>>,
        board: &Board,
    ) -> Vec<String> {
        let (wanted, mut warnings) = from_tables(t);
        let (sets, w) = flowsets::from_tables(t);
        warnings.extend(w);
        let wanted_sets: Vec<(String, BTreeMap<u32, IpfixConfig>)> = sets
            .into_iter()
            .filter(|(b, _)| udpifs.contains_key(b))
            .collect();
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *g;
        let a = inner.applied.changes(&wanted, ports_changed);
        let b = inner.flow_applied.changes(&wanted_sets, ports_changed);
        if a.is_none() && b.is_none() {
            return Vec::new();
        }
        // Either changed: the exporter gets the whole plan again.
        let gone = a
            .or_else(|| inner.applied.changes(&wanted, true))
            .unwrap_or_default();
        let gone_sets = b
            .or_else(|| inner.flow_applied.changes(&wanted_sets, true))
            .unwrap_or_default();
        for b in gone {
            let _ = pmd.set_sampler(&b, OWNER, None);
            board.set_bridge(&b, false);
        }
        for b in gone_sets {
            if let Some(u) = udpifs.get(&b) {
                u.flow_samples.set(None);
            }
            board.set_sets(&b, &[]);
        }
        if wanted.is_empty() && wanted_sets.is_empty() {
            stop(inner.running.take());
            return warnings;
        }
        let running = inner.running.get_or_insert_with(start);
        let mut plan = Plan::default();
        for (bridge, cfg) in wanted {
            let id = inner.applied.id(&bridge);
            let sc = SamplerConfig {
                id,
                rate: cfg.sampling,
                header_bytes: HEADER_BYTES,
                sink: running.sink.clone(),
            };
            if let Err(e) = pmd.set_sampler(&bridge, OWNER, Some(sc)) {
                warnings.push(format!("bridge {bridge}: IPFIX: {e}"));
                board.set_bridge(&bridge, false);
                continue;
            }
            let counters = board.set_bridge(&bridge, true).unwrap_or_default();
            plan.bridges.push((id, cfg.clone(), counters));
            inner.applied.insert(bridge, cfg, id);
        }
        for (bridge, sets) in wanted_sets {
            let id = inner.flow_applied.id(&bridge);
            if let Some(u) = udpifs.get(&bridge) {
                u.flow_samples
                    .set(Some((id | FLOW_TAP, running.sink.clone())));
            }
            let ids: Vec<u32> = sets.keys().copied().collect();
            let mut counters = board.set_sets(&bridge, &ids);
            for (set, cfg) in &sets {
                plan.sets.insert((id | FLOW_TAP, *set), cfg.clone());
                let c = counters.remove(set).unwrap_or_default();
                plan.set_counters.insert((id | FLOW_TAP, *set), c);
            }
            inner.flow_applied.insert(bridge, sets, id);
        }
        let _ = running.tx.send(plan);
        warnings
    }
}

impl Drop for Ipfix {
    fn drop(&mut self) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        stop(g.running.take());
    }
}

fn start() -> Running {
    let (tx, rx) = unbounded();
    let sink = SampleSink::new(SINK_DEPTH);
    let s = sink.clone();
    let thread = std::thread::Builder::new()
        .name("ipfix".into())
        .spawn(move || Exporter::new(s).run(&rx))
        .map_err(|e| {
            crate::vswitch::vlog::err("ipfix", &format!("cannot start the IPFIX exporter: {e}"))
        })
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

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One bridge on the exporter thread.
struct BridgeState {
    cfg: IpfixConfig,
    counters: Arc<Counters>,
    cache: HashMap<SampledKey, Record>,
    /// Records waiting to be sent, and since when.
    out: Vec<Record>,
    out_since: Option<Instant>,
}

/// A record stream's key: a bridge's sampler `(id, 0, 0)`, or a flow tap's collector set in
/// one observation domain `(tap id, set id, domain)`.
type StreamKey = (u32, u32, u32);

struct Exporter {
    sink: Arc<SampleSink>,
    bridges: HashMap<StreamKey, BridgeState>,
    /// The collector sets, by (flow tap id, set id).
    sets: HashMap<(u32, u32), IpfixConfig>,
    set_counters: HashMap<(u32, u32), Arc<Counters>>,
    /// Per observation domain: data records sent, and when templates last went out.
    domains: HashMap<u32, (u32, Option<Instant>)>,
    socks: Sockets,
}

impl Exporter {
    fn new(sink: Arc<SampleSink>) -> Exporter {
        Exporter {
            sink,
            bridges: HashMap::new(),
            sets: HashMap::new(),
            set_counters: HashMap::new(),
            domains: HashMap::new(),
            socks: Sockets::new(),
        }
    }

    fn run(mut self, cfg: &Receiver<Plan>) {
        let samples = self.sink.receiver().clone();
        loop {
            let wait = self
                .next_deadline()
                .saturating_duration_since(Instant::now());
            select! {
                recv(cfg) -> m => match m {
                    Ok(plan) => self.reconfigure(plan),
                    Err(_) => {
                        self.flush_all(wire::END_FORCED);
                        return;
                    }
                },
                recv(samples) -> s => if let Ok(s) = s { self.add_sample(&s) },
                default(wait) => {}
            }
            for s in samples.try_iter().take(SINK_DEPTH) {
                self.add_sample(&s);
            }
            self.timers();
        }
    }

    fn reconfigure(&mut self, plan: Plan) {
        let mut next = HashMap::new();
        for (id, cfg, counters) in plan.bridges {
            let key = (id, 0, 0);
            let st = match self.bridges.remove(&key) {
                Some(mut st) if st.cfg.targets == cfg.targets && st.cfg.domain == cfg.domain => {
                    st.cfg = cfg;
                    st.counters = counters;
                    st
                }
                old => {
                    if let Some(mut st) = old {
                        evict_all(&mut st, wire::END_FORCED);
                        self.send(&mut st);
                    }
                    self.fresh(cfg, counters)
                }
            };
            next.insert(key, st);
        }
        // A collector set's streams live on while the set keeps its settings.
        let flow_keys: Vec<StreamKey> = self
            .bridges
            .keys()
            .filter(|k| k.0 & FLOW_TAP != 0)
            .copied()
            .collect();
        for key in flow_keys {
            let keep = match (
                self.sets.get(&(key.0, key.1)),
                plan.sets.get(&(key.0, key.1)),
            ) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            };
            if keep {
                if let Some(st) = self.bridges.remove(&key) {
                    next.insert(key, st);
                }
            }
        }
        let old: Vec<StreamKey> = self.bridges.keys().copied().collect();
        for key in old {
            if let Some(mut st) = self.bridges.remove(&key) {
                evict_all(&mut st, wire::END_FORCED);
                self.send(&mut st);
            }
        }
        self.bridges = next;
        self.sets = plan.sets;
        self.set_counters = plan.set_counters;
    }

    /// A new record stream; its collectors learn the templates first.
    fn fresh(&mut self, cfg: IpfixConfig, counters: Arc<Counters>) -> BridgeState {
        self.domains.entry(cfg.domain).or_default().1 = None;
        BridgeState {
            cfg,
            counters,
            cache: HashMap::new(),
            out: Vec::new(),
            out_since: None,
        }
    }

    /// The stream a sample belongs to; a flow sample's is made on its first sample, none if
    /// its collector set does not exist.
    fn stream(&mut self, s: &Sample) -> Option<&mut BridgeState> {
        let key = match s.flow {
            None => (s.sampler, 0, 0),
            Some(tag) => (s.sampler, tag.collector_set_id, tag.obs_domain_id),
        };
        if !self.bridges.contains_key(&key) {
            let tag = s.flow?;
            let mut cfg = self.sets.get(&(key.0, key.1))?.clone();
            cfg.domain = tag.obs_domain_id;
            let counters = self
                .set_counters
                .get(&(key.0, key.1))
                .cloned()
                .unwrap_or_default();
            let st = self.fresh(cfg, counters);
            self.bridges.insert(key, st);
        }
        self.bridges.get_mut(&key)
    }

    fn add_sample(&mut self, s: &Sample) {
        let Some(st) = self.stream(s) else {
            return;
        };
        let c = Arc::clone(&st.counters);
        Counters::inc(&c.pkts);
        let Some((key, ip_len)) = sampled::parse(s.input, &s.header) else {
            Counters::inc(&c.error_pkts);
            return;
        };
        match key.ip.as_ref().map(|ip| ip.src) {
            Some(std::net::IpAddr::V4(_)) => Counters::inc(&c.ipv4_pkts),
            Some(std::net::IpAddr::V6(_)) => Counters::inc(&c.ipv6_pkts),
            None => {}
        }
        let now = now_ms();
        let octets = if key.ip.is_some() {
            u64::from(ip_len)
        } else {
            0
        };
        if !st.cfg.caching() {
            Counters::inc(&c.flows);
            st.out.push(Record {
                key,
                start_ms: now,
                end_ms: now,
                packets: 1,
                octets,
                l2_octets: u64::from(s.frame_len),
                reason: wire::END_ACTIVE,
            });
            st.out_since.get_or_insert_with(Instant::now);
            return;
        }
        if !st.cache.contains_key(&key) {
            if st.cache.len() >= st.cfg.max_flows as usize {
                evict_all(st, wire::END_RESOURCES);
            }
            Counters::inc(&c.flows);
        }
        let r = st.cache.entry(key.clone()).or_insert_with(|| Record {
            key,
            start_ms: now,
            end_ms: now,
            packets: 0,
            octets: 0,
            l2_octets: 0,
            reason: wire::END_ACTIVE,
        });
        r.end_ms = now;
        r.packets += 1;
        r.octets += octets;
        r.l2_octets += u64::from(s.frame_len);
        c.current_flows
            .store(st.cache.len() as u64, Ordering::Relaxed);
    }

    fn next_deadline(&self) -> Instant {
        let far = Instant::now() + Duration::from_millis(500);
        self.bridges
            .values()
            .filter_map(|st| st.out_since.map(|t| t + FLUSH_AFTER))
            .min()
            .unwrap_or(far)
            .min(far)
    }

    fn timers(&mut self) {
        let now = now_ms();
        let ids: Vec<StreamKey> = self.bridges.keys().copied().collect();
        for id in ids {
            let Some(mut st) = self.bridges.remove(&id) else {
                continue;
            };
            if st.cfg.caching() {
                let timeout = u64::from(st.cfg.active_timeout) * 1000;
                let due: Vec<SampledKey> = st
                    .cache
                    .iter()
                    .filter(|(_, r)| now.saturating_sub(r.start_ms) >= timeout)
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in due {
                    if let Some(r) = st.cache.remove(&k) {
                        st.out.push(r);
                        st.out_since.get_or_insert_with(Instant::now);
                    }
                }
                st.counters
                    .current_flows
                    .store(st.cache.len() as u64, Ordering::Relaxed);
            }
            if st.out_since.is_some_and(|t| t.elapsed() >= FLUSH_AFTER) {
                self.send(&mut st);
            }
            self.bridges.insert(id, st);
        }
    }

    fn flush_all(&mut self, reason: u8) {
        let ids: Vec<StreamKey> = self.bridges.keys().copied().collect();
        for id in ids {
            if let Some(mut st) = self.bridges.remove(&id) {
                evict_all(&mut st, reason);
                self.send(&mut st);
            }
        }
    }

    /// Sends `st`'s waiting records in as many messages as they need.
    fn send(&mut self, st: &mut BridgeState) {
        st.out_since = None;
        let mut rest = std::mem::take(&mut st.out).into_iter().peekable();
        while rest.peek().is_some() {
            let (seq, last_t) = self.domains.entry(st.cfg.domain).or_default();
            let templates = last_t.is_none_or(|t| t.elapsed() >= TEMPLATE_EVERY);
            let mut m = Message::new(templates);
            while let Some(r) = rest.peek() {
                if !m.add(r) {
                    break;
                }
                rest.next();
            }
            if m.records() == 0 {
                // A record that cannot fit even alone: impossible with these templates.
                rest.next();
                continue;
            }
            let n = m.records();
            let secs = (now_ms() / 1000) as u32;
            let bytes = m.finish(secs, *seq, st.cfg.domain);
            *seq = seq.wrapping_add(n);
            if templates {
                *last_t = Some(Instant::now());
            }
            let (sent, failed) = self.socks.send(&st.cfg.targets, &bytes);
            st.counters.tx_pkts.fetch_add(sent, Ordering::Relaxed);
            st.counters.tx_errors.fetch_add(failed, Ordering::Relaxed);
        }
    }
}

/// Moves every cached record of `st` to its send queue with end reason `reason`.
fn evict_all(st: &mut BridgeState, reason: u8) {
    for (_, mut r) in st.cache.drain() {
        r.reason = reason;
        st.out.push(r);
    }
    st.counters.current_flows.store(0, Ordering::Relaxed);
    if !st.out.is_empty() {
        st.out_since.get_or_insert_with(Instant::now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_and_defaults() {
        let mut t = Tables::new();
        let row = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        t.entry("Bridge".into()).or_default().insert(
            "b".into(),
            row(json!({"name": "br0", "ipfix": ["uuid", "i"]})),
        );
        t.entry("IPFIX".into()).or_default().insert(
            "i".into(),
            row(
                json!({"targets": ["set", ["127.0.0.1", "x"]], "obs_domain_id": 7,
                       "cache_active_timeout": 5, "cache_max_flows": -1}),
            ),
        );
        let (c, w) = from_tables(&t);
        let c = &c[0].1;
        assert_eq!(c.targets, vec!["127.0.0.1:4739".parse().expect("addr")]);
        assert_eq!(
            (c.sampling, c.domain, c.active_timeout, c.max_flows),
            (400, 7, 5, 0)
        );
        assert!(!c.caching());
        assert_eq!(w.len(), 2, "{w:?}");
    }
}
