//! The `openflow` module: a bridge programmed with OpenFlow flow tables, behind OVS-style
//! caches.
//!
//! ## The fast path (per received batch, in chunks of up to 64 packets)
//! 1. Extract every packet's flow key.
//! 2. The megaflow the previous packet hit: packets of one flow come in runs, and checking
//!    its few mask words is the cheapest lookup there is.
//! 3. Exact-match cache ([`crate::emc`]), for the packets step 2 left: every key hashed and
//!    its slot prefetched, then all probed; a hit gives the megaflow at once.
//! 4. Megaflow cache ([`crate::dpcls`]), for what is left: tuple space search over the
//!    megaflow masks, ranked by hits, each subtable probed for the whole chunk in passes
//!    with prefetching; a hit may be inserted into the EMC.
//! 5. Miss: the packet goes to the handler thread through a bounded queue
//!    ([`crate::udpif`]); the poll thread does not wait. The packet comes back with its
//!    actions (and usually a new megaflow to install) through [`SwitchLogic::poll_pending`].
//!
//! Then, in arrival order, the megaflow's datapath actions run on the packet. A single
//! output (the common case) is collected while consecutive packets go to the same port and
//! handed to the fabric in one call. A megaflow of `[ct(..), recirc(..)]` (a tracked
//! pipeline's first pass) runs its packets through its own loop (`ctrun`), a packet the
//! recirculation shortcut sends on joining that port's collected run. Other actions:
//! rewrites in place, each output a copy (the last one takes the packet itself) handed to
//! the fabric, which batches outputs per port; `NORMAL` through a MAC-learning table;
//! `CONTROLLER` onto the packet-in queue; meters by their bands. Counters are kept in the
//! megaflow and pushed to the OpenFlow rules by the revalidator.
//!
//! With `cache=false` every packet runs the full pipeline on the poll thread instead: the
//! reference the caching datapath is tested against, and the "uncached" benchmark figure.
//! It translates only when it gets the OpenFlow state without waiting, and otherwise keeps
//! the packets, in order, for its next turn.
//!
//! Nothing here waits for a lock the control plane holds (see [`crate::udpif`] for the
//! list): meters run from the published lock-free set, packet-ins go to a lock-free queue,
//! port changes are queued, packet-outs come translated.
//!
//! ## Port numbers
//! The module keeps the bridge's slot <-> OpenFlow port map; the bridge's internal port
//! (`LOCAL`, ofport 65534 in the daemon's numbering) is OpenFlow's 0xfffffffe.

use crate::bridge::LOCAL_OFPORT;
use crate::dpcls::{Dpcls, Megaflow};
use crate::emc::Emc;
use crate::learning::Learning;
use crate::module::{Ctx, Delivery, ModuleCommand, ModuleError, PortInfo, PortLookup, SwitchLogic};
use crate::udpif::{Lane, PortChange, Udpif};
pub(crate) use exec::last_send;
use exec::{Exec, NO_SLOT};

mod ctrun;
mod exec;
mod fastpath;
mod frag;
mod frameless;
mod lookup;
mod skip;
mod tunnel;
mod uniform;

/// This module in the registry ([`crate::registry`]): a caching bridge.
pub const REGISTRATION: crate::registry::Registration = crate::registry::Registration {
    name: "openflow",
    create: || Ok(Box::new(OpenFlow::new(true)?)),
};

use ofproto::odp::DpAction;
use ofproto::switch::OfPort;
use ofproto::Ofproto;
use ofproto::OFPP_LOCAL;
use packet::flow::{self, FlowKey};
use packet::{Batch, Pool};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Fast-path counters of the module.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenFlowStats {
    pub emc_hits: u64,
    pub megaflow_hits: u64,
    pub subtable_lookups: u64,
    pub upcalls: u64,
    pub lost_upcalls: u64,
    pub uncached_xlates: u64,
    pub packet_ins: u64,
    pub meter_drops: u64,
    pub copy_failures: u64,
    pub unknown_port: u64,
    /// `ct` actions run (packets tracked).
    pub ct_executions: u64,
    /// Packets re-injected by `recirc`.
    pub recirculations: u64,
    /// Recirculated passes made without a round: the packet went to the megaflow the
    /// poll thread knew for it (see `skip`); also counted in `recirculations`.
    pub recirc_shortcuts: u64,
    /// Packets dropped for recirculating more than `MAX_RECIRC_DEPTH` times.
    pub recirc_too_deep: u64,
    /// Packets `sample` actions chose and handed to the flow-sample exporter.
    pub flow_samples: u64,
    /// Packets `sample` actions chose while no flow-sample exporter was configured.
    pub flow_samples_unexported: u64,
    /// Tunnel packets dropped for their Geneve options (see `ofproto::tun_md::from_geneve`).
    pub bad_tunnel_options: u64,
    /// Held fragments dropped at a `ct` (of a datagram that did not parse once whole, or
    /// not rebuilt when their datagram completed: see `frag`).
    pub ipf_dropped: u64,
}

/// The OpenFlow number of a bridge ofport.
pub fn to_of(ofport: u32) -> u32 {
    if ofport == LOCAL_OFPORT {
        OFPP_LOCAL
    } else {
        ofport
    }
}

/// See the module documentation.
pub struct OpenFlow {
    exec: Exec,
    emc: Emc,
    dpcls: Dpcls,
    slow: Option<Lane>,
    /// This poll thread's loop counter, which [`Udpif::sync`] waits on.
    epoch: Arc<AtomicU64>,
    /// A replica on another poll thread: the first instance alone keeps the shared state
    /// (ports in ofproto, the NORMAL table, rule expiry) up to date.
    replica: bool,
    /// Whether the EMC is consulted at all (see [`OpenFlow::adapt_emc`]).
    emc_active: bool,
    /// (lookups, subtables probed) in the megaflow cache, and EMC hits, at the last
    /// adaptation.
    adapt_mark: (u64, u64, u64),
    adapt_tick: u64,
    sample_mark: u64,
    /// Sampled megaflow lookups made on EMC hits: (lookups, probes).
    sample: (u64, u64),
    /// Flow keys of the batch being processed (allocated once).
    keys: Vec<FlowKey>,
    /// The extractor's layer offsets for each packet of `keys` (see `ct::Layers`).
    offs: Vec<flow::Offsets>,
    /// The recirculation queue of the previous round, empty, kept for its capacity (see
    /// `drain_recirc`).
    recirc_spare: exec::RecircQueue,
    /// Consecutive packets going to one port, handed to the fabric in one call.
    run_out: Batch,
    /// The megaflow the last batch of received [0] and of recirculated [1] packets ended on
    /// (the first candidate for the next batch of its kind).
    last: [Option<Arc<Megaflow>>; 2],
    /// EMC insertions chosen during a batch's lookups: (batch index, key hash, megaflow).
    offers: Vec<(usize, u32, Arc<Megaflow>)>,
    /// State of the EMC insertion sampling.
    rng: u32,
    /// Whether megaflows of `[ct(..), recirc(..)]` take their own loop (`ctrun`); off only
    /// to compare it with the general one.
    ct_runs: bool,
}

impl OpenFlow {
    /// A bridge whose table 0 holds `priority=0,actions=NORMAL`; with `cache`, the caching
    /// datapath (starting its handler and revalidator threads).
    pub fn new(cache: bool) -> Result<OpenFlow, ModuleError> {
        let udpif = Arc::new(Udpif::new(Ofproto::with_default_flow(
            crate::clock::now_ms(),
        )));
        let slow = if cache {
            Some(
                udpif
                    .lane()
                    .map_err(|e| ModuleError::UpcallThreads(e.to_string()))?,
            )
        } else {
            None
        };
        Ok(OpenFlow::assemble(
            udpif,
            Arc::new(Mutex::new(Learning::new())),
            slow,
            false,
            Emc::default().insert_inv_prob,
        ))
    }

    /// An instance over shared `udpif` and NORMAL table, with empty caches and counters;
    /// its ports arrive through `port_added`.
    fn assemble(
        udpif: Arc<Udpif>,
        normal: Arc<Mutex<Learning>>,
        slow: Option<Lane>,
        replica: bool,
        emc_insert_inv_prob: u32,
    ) -> OpenFlow {
        let epoch = udpif.register_epoch();
        OpenFlow {
            exec: Exec {
                udpif,
                normal,
                slot_of: Vec::new(),
                of_slot: Vec::new(),
                of_slot_big: HashMap::new(),
                stats: OpenFlowStats::default(),
                recirc: exec::RecircQueue::default(),
                depth: 0,
                // Each replica its own sequence: seeded from its loop counter's address.
                rng: (Arc::as_ptr(&epoch) as u64).rotate_left(29) ^ 0x2545_f491_4f6c_dd1d | 1,
                ct_cache: conntrack::ConnCache::new(),
                next: skip::NextHops::default(),
            },
            emc: Emc::new(emc_insert_inv_prob),
            dpcls: Dpcls::new(),
            slow,
            epoch,
            replica,
            emc_active: emc_insert_inv_prob != 0,
            adapt_mark: (0, 0, 0),
            adapt_tick: 0,
            sample_mark: 0,
            sample: (0, 0),
            keys: vec![FlowKey::ZERO; packet::MAX_BATCH],
            offs: vec![flow::Offsets::default(); packet::MAX_BATCH],
            recirc_spare: exec::RecircQueue::default(),
            run_out: Batch::new(),
            last: [None, None],
            offers: Vec::with_capacity(packet::MAX_BATCH),
            rng: 0x1234_5678,
            ct_runs: true,
        }
    }

    /// The state shared with the slow path and the control plane.
    pub fn udpif(&self) -> &Arc<Udpif> {
        &self.exec.udpif
    }

    /// Fast-path counters.
    pub fn stats(&self) -> OpenFlowStats {
        self.exec.stats
    }

    /// Turns the loop for megaflows of `[ct(..), recirc(..)]` (on by default) off or on:
    /// off, their packets take the general action loop, which decides the same (tests
    /// compare the two).
    pub fn set_ct_runs(&mut self, on: bool) {
        self.ct_runs = on;
    }

    /// Megaflows installed in this poll thread's cache.
    pub fn megaflow_count(&self) -> usize {
        self.dpcls.len()
    }

    /// True while upcalls are outstanding (queued or being handled).
    pub fn upcalls_pending(&self) -> bool {
        self.slow.as_ref().is_some_and(|s| s.pending())
    }

    fn set_cache(&mut self, on: bool) -> Result<(), ModuleError> {
        match (on, self.slow.is_some()) {
            (true, false) => {
                self.slow = Some(
                    self.exec
                        .udpif
                        .lane()
                        .map_err(|e| ModuleError::UpcallThreads(e.to_string()))?,
                );
            }
            (false, true) => {
                self.slow = None;
                self.exec.udpif.flush();
                self.dpcls.clear();
                self.emc.clear();
                self.exec.next.clear();
            }
            _ => {}
        }
        Ok(())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for OpenFlow {
    fn drop(&mut self) {
        if let Some(l) = &self.slow {
            self.exec.udpif.idx().drop_lane(l.pmd);
        }
    }
}

impl SwitchLogic for OpenFlow {
    fn name(&self) -> &'static str {
        "openflow"
    }

    #[inline]
    fn forward(&mut self, ctx: &Ctx, batch: &mut Batch, pool: &mut Pool, out: &mut Delivery<'_>) {
        if out.tracing() {
            self.forward_traced(ctx, batch, pool, out);
        } else if !self.tunnel_burst(ctx.now_ms, batch, pool, out) {
            self.forward_batch(ctx, batch, pool, out);
        }
    }

    #[inline]
    fn forward_uniform(
        &mut self,
        ctx: &Ctx,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        self.forward_burst(ctx, batch, pool, out);
    }

    fn poll_pending(&mut self, ctx: &Ctx, pool: &mut Pool, out: &mut Delivery<'_>) -> usize {
        // Single writer: a plain load and store, no locked read-modify-write per iteration.
        let e = &*self.epoch;
        e.store(e.load(Ordering::Relaxed) + 1, Ordering::Release);
        let mut n = 0;
        let Some(slow) = &self.slow else {
            return n;
        };
        while n < packet::MAX_BATCH {
            let Some(c) = slow.answer() else {
                break;
            };
            n += 1;
            match &c.megaflow {
                Some(m) => {
                    if c.install && !m.is_dead() {
                        self.dpcls.insert(Arc::clone(m));
                    }
                    m.account(1, c.pkt.len() as u64, ctx.now_ms);
                    self.exec.execute(
                        ctx.now_ms, c.in_slot, &c.key, None, &m.actions, c.pkt, pool, out,
                    );
                }
                None => {
                    self.exec.execute(
                        ctx.now_ms, c.in_slot, &c.key, None, &c.actions, c.pkt, pool, out,
                    );
                }
            }
        }
        if !self.exec.recirc.is_empty() {
            self.drain_recirc(ctx.now_ms, pool, out);
        }
        n
    }

    fn packet_out(
        &mut self,
        ctx: &Ctx,
        in_port: u32,
        frame: &[u8],
        actions: &[DpAction],
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) -> Result<(), ModuleError> {
        let Some(mut pkt) = pool.alloc() else {
            return Err(ModuleError::PoolExhausted);
        };
        if !pkt.set_frame(frame) {
            pool.free(pkt);
            return Err(ModuleError::FrameTooLong);
        }
        let mut key = FlowKey::ZERO;
        let offs = flow::extract_into(&mut key, frame, in_port);
        let in_slot = self.exec.slot(in_port).unwrap_or(NO_SLOT);
        pkt.in_port = in_slot;
        self.exec.execute(
            ctx.now_ms,
            in_slot,
            &key,
            Some(offs),
            actions,
            pkt,
            pool,
            out,
        );
        if !self.exec.recirc.is_empty() {
            self.drain_recirc(ctx.now_ms, pool, out);
        }
        Ok(())
    }

    fn park(&mut self, parked: bool) {
        let e = &*self.epoch;
        let v = e.load(Ordering::Relaxed);
        let v = if parked {
            v | crate::udpif::PARKED
        } else {
            v & !crate::udpif::PARKED
        };
        e.store(v, Ordering::Release);
    }

    fn busy(&self) -> bool {
        self.upcalls_pending()
    }

    fn fork(&mut self) -> Option<Box<dyn SwitchLogic>> {
        let u = &self.exec.udpif;
        let slow = match &self.slow {
            Some(_) => Some(u.lane().ok()?),
            None => None,
        };
        let mut r = OpenFlow::assemble(
            Arc::clone(u),
            Arc::clone(&self.exec.normal),
            slow,
            true,
            self.emc.insert_inv_prob,
        );
        r.ct_runs = self.ct_runs;
        Some(Box::new(r))
    }

    fn port_added(&mut self, info: &PortInfo) {
        let e = &mut self.exec;
        let i = usize::from(info.idx);
        if e.slot_of.len() <= i {
            e.slot_of.resize(i + 1, 0);
        }
        let of = to_of(info.ofport);
        e.slot_of[i] = of;
        e.map_port(of, Some(info.idx));
        if self.replica {
            return;
        }
        // Queued for the OpenFlow state (this thread must not wait for its lock); port
        // changes alter FLOOD/ALL and failover decisions, so a revalidation round follows.
        e.udpif.port_change(PortChange::Set(OfPort {
            ofport: of,
            name: info.name.clone(),
            live: true,
            no_flood: false,
            admin_down: false,
        }));
        lock(&e.normal).port_added(info);
    }

    fn port_removed(&mut self, idx: u16) {
        let e = &mut self.exec;
        let of = e.of_port(idx);
        if let Some(s) = e.slot_of.get_mut(usize::from(idx)) {
            *s = 0;
        }
        e.map_port(of, None);
        if self.replica {
            return;
        }
        e.udpif.port_change(PortChange::Remove(of));
        lock(&e.normal).port_removed(idx);
    }

    fn port_status(&mut self, idx: u16, up: bool) {
        if self.replica {
            return;
        }
        let of = self.exec.of_port(idx);
        self.exec.udpif.port_change(PortChange::Status {
            ofport: of,
            live: up,
        });
    }

    fn run(&mut self, ctx: &Ctx) {
        self.adapt_emc();
        // Rule expiry runs on the revalidator thread (see `udpif`), never here: it needs the
        // OpenFlow writer, which a bundle commit may hold.
        if !self.replica {
            lock(&self.exec.normal).run(ctx);
        }
        self.dpcls.sweep();
        self.dpcls.rerank();
        self.exec.next.purge();
    }

    fn configure(&mut self, key: &str, value: &str) -> Result<(), ModuleError> {
        let num = |v: &str, lo: u64, hi: u64| {
            v.parse::<u64>()
                .ok()
                .filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| ModuleError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expected: format!("a number in {lo}..={hi}"),
                })
        };
        let u = &self.exec.udpif;
        match key {
            "mac-aging-time" | "mac-table-size" => lock(&self.exec.normal).configure(key, value),
            "cache" => self.set_cache(netdev::parse_bool(key, value).map_err(|_| {
                ModuleError::NotBool {
                    key: key.to_string(),
                    value: value.to_string(),
                }
            })?),
            "emc-insert-inv-prob" => {
                self.emc.insert_inv_prob = num(value, 0, 1 << 20)? as u32;
                self.emc_active = self.emc.insert_inv_prob != 0;
                if !self.emc_active {
                    self.emc.clear();
                }
                Ok(())
            }
            "flow-limit" => {
                let n = num(value, 1, 10_000_000)? as usize;
                u.max_flow_limit.store(n, Ordering::Relaxed);
                let cur = u.flow_limit.load(Ordering::Relaxed);
                u.flow_limit.store(cur.min(n), Ordering::Relaxed);
                Ok(())
            }
            "max-idle" => {
                u.max_idle_ms.store(num(value, 100, 3_600_000)?, Ordering::Relaxed);
                Ok(())
            }
            "max-groups" => {
                // Up to OFPG_MAX, the highest group id: as many as there can be.
                // Applied by the next write session: poll threads take none.
                let n = num(value, 1, 0xffff_ff00)? as u32;
                u.max_groups.store(n, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(ModuleError::UnknownSetting {
                module: "openflow",
                key: key.to_string(),
                settings: "cache, emc-insert-inv-prob, flow-limit, max-groups, max-idle, mac-aging-time, mac-table-size",
            }),
        }
    }

    fn commands(&self) -> &'static [ModuleCommand] {
        // The module's own verbs are its NORMAL table's.
        crate::learning::COMMANDS
    }

    fn command(
        &mut self,
        verb: &str,
        args: &[String],
        json: bool,
        ctx: &Ctx,
        ports: &dyn PortLookup,
    ) -> Result<String, ModuleError> {
        if self.replica {
            // Replicas share the NORMAL table with the first instance, which has already
            // run the verb.
            return Ok(String::new());
        }
        // The OpenFlow verbs (flows, groups, meters, trace) are the control plane's, on the
        // OpenFlow state (crate `ofctl`); the module answers for its MAC table.
        lock(&self.exec.normal).command(verb, args, json, ctx, ports)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.exec.stats;
        let u = &self.exec.udpif.stats;
        vec![
            ("emc_hits", s.emc_hits),
            ("megaflow_hits", s.megaflow_hits),
            ("subtable_lookups", s.subtable_lookups),
            ("upcalls", s.upcalls),
            ("lost_upcalls", s.lost_upcalls),
            ("uncached_xlates", s.uncached_xlates),
            ("megaflows", self.dpcls.len() as u64),
            ("masks", self.dpcls.n_subtables() as u64),
            ("handler_xlates", u.xlates.load(Ordering::Relaxed)),
            ("handler_reused", u.reused.load(Ordering::Relaxed)),
            ("installed", u.installed.load(Ordering::Relaxed)),
            ("flow_limit_hits", u.flow_limit_hits.load(Ordering::Relaxed)),
            ("revalidated", u.revalidations.load(Ordering::Relaxed)),
            ("killed_changed", u.killed_changed.load(Ordering::Relaxed)),
            ("killed_idle", u.killed_idle.load(Ordering::Relaxed)),
            (
                "flow_limit",
                self.exec.udpif.flow_limit.load(Ordering::Relaxed) as u64,
            ),
            ("packet_ins", s.packet_ins),
            (
                "packet_in_overflow",
                self.exec.udpif.packet_in_overflow.load(Ordering::Relaxed),
            ),
            ("meter_drops", s.meter_drops),
            ("copy_failures", s.copy_failures),
            ("unknown_port", s.unknown_port),
            ("bad_tunnel_options", s.bad_tunnel_options),
            ("recirculations", s.recirculations),
            ("recirc_shortcuts", s.recirc_shortcuts),
        ]
    }
}

impl OpenFlow {
    /// The module's pass over one received batch (from [`Delivery::in_port`]).
    #[inline]
    fn forward_batch(
        &mut self,
        ctx: &Ctx,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        let in_slot = out.in_port();
        let in_port = self.exec.of_port(in_slot);
        // Extract every key first, then look them up: keys are written a field at a time
        // and read a word at a time; reading a key long after it was written avoids
        // stalling on store-to-load forwarding.
        for ((k, o), p) in self
            .keys
            .iter_mut()
            .zip(self.offs.iter_mut())
            .zip(batch.packets())
        {
            *o = flow::extract_into(k, p.data(), in_port);
        }
        // A batch comes from one port, and only a tunnel port's packets carry tunnel
        // metadata (it sets it on every one): one test per batch for every other port.
        if batch.packets().first().is_some_and(|p| p.has_tun()) {
            self.tunnel_keys(batch, pool);
        }
        let total = batch.len().min(self.keys.len());
        let pkts = batch.drain();
        if self.slow.is_some() {
            self.process_cached(ctx.now_ms, in_slot, total, pkts, pool, out);
        } else {
            self.process_uncached(ctx.now_ms, in_slot, pkts, pool, out);
        }
        if !self.exec.recirc.is_empty() {
            self.drain_recirc(ctx.now_ms, pool, out);
        }
    }

    /// [`OpenFlow::forward_batch`] for a traced packet (the batch holds one): notes which
    /// cache answered and the datapath actions it gave.
    #[cold]
    #[inline(never)]
    fn forward_traced(
        &mut self,
        ctx: &Ctx,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        let b = self.exec.stats;
        self.forward_batch(ctx, batch, pool, out);
        let s = self.exec.stats;
        let actions = |m: Option<&Arc<Megaflow>>| {
            m.map(|m| ofproto::odp::list_text(&m.actions))
                .unwrap_or_default()
        };
        let mut what = if s.emc_hits > b.emc_hits {
            format!("emc hit, actions:{}", actions(self.last[0].as_ref()))
        } else if s.megaflow_hits > b.megaflow_hits {
            let how = if s.subtable_lookups > b.subtable_lookups {
                "megaflow hit (dpcls)"
            } else {
                "megaflow hit (the previous packet's)"
            };
            format!("{how}, actions:{}", actions(self.last[0].as_ref()))
        } else if s.upcalls > b.upcalls {
            let lost = if s.lost_upcalls > b.lost_upcalls {
                " (queue full: lost)"
            } else {
                ""
            };
            format!("upcall{lost}: actions run when the handler answers")
        } else if s.uncached_xlates > b.uncached_xlates {
            "uncached: full pipeline on the poll thread".to_string()
        } else {
            "-".to_string()
        };
        if s.recirculations > b.recirculations {
            what.push_str(&format!(
                "; {} recirculation(s)",
                s.recirculations - b.recirculations
            ));
        }
        out.note(|| what);
    }

    /// Picks the lookup path for the next second from the last one's traffic (like OVS
    /// choosing a specialised lookup once). The EMC hashes and compares the whole 26-word
    /// key, so it pays only when it saves more than that: it is bypassed when megaflow
    /// lookups need about one subtable probe each (1.25 on average; 1.5 to come back, so
    /// the choice does not flap), and when it answers fewer than half the packets (too many
    /// flows for it, as with 100K flows); while bypassed with costly megaflow lookups it is
    /// retried one second in eight. `emc-insert-inv-prob=0` turns it off for good.
    fn adapt_emc(&mut self) {
        let s = &self.exec.stats;
        let now = (
            s.megaflow_hits + s.upcalls + self.sample.0,
            s.subtable_lookups + self.sample.1,
            s.emc_hits,
        );
        let (l0, p0, e0) = self.adapt_mark;
        self.adapt_mark = now;
        self.adapt_tick = self.adapt_tick.wrapping_add(1);
        if self.emc.insert_inv_prob == 0 {
            self.emc_active = false;
            return;
        }
        let lookups = now.0.saturating_sub(l0);
        let probes = now.1.saturating_sub(p0);
        let emc_hits = now.2.saturating_sub(e0);
        let total = emc_hits
            + now
                .0
                .saturating_sub(l0)
                .saturating_sub(self.sample.0.saturating_sub(self.sample_mark));
        self.sample_mark = self.sample.0;
        if lookups < 64 {
            return;
        }
        let cheap_megaflows = if self.emc_active {
            probes * 4 <= lookups * 5
        } else {
            probes * 2 <= lookups * 3
        };
        let active = if cheap_megaflows {
            false
        } else if self.emc_active {
            // On: keep it while it answers at least half the packets.
            emc_hits * 2 >= total
        } else {
            // Off with costly megaflow lookups: try it again every eighth second.
            self.adapt_tick.is_multiple_of(8)
        };
        if active != self.emc_active {
            self.emc_active = active;
            if !active {
                self.emc.clear();
            }
        }
    }
}
