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
//! handed to the fabric in one call. Other actions: rewrites in place, each output a copy
//! (the last one takes the packet itself) handed to the fabric, which batches outputs per
//! port; `NORMAL` through a MAC-learning table; `CONTROLLER` onto the packet-in queue;
//! meters by their bands. Counters are kept in the megaflow and pushed to the OpenFlow rules
//! by the revalidator.
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

use crate::bridge::OFPP_LOCAL as BRIDGE_LOCAL;
use crate::dpcls::{Dpcls, Megaflow, LOOKUP_CHUNK};
use crate::emc::{key_hash, Emc};
use crate::learning::Learning;
use crate::module::{Ctx, Dest, Emitter, ModuleCommand, PortInfo, PortLookup, SwitchLogic};
use crate::udpif::{Lane, PortChange, Udpif};
use ofproto::meter::{remark_dscp, Verdict};
use ofproto::odp::{self, DpAction};
use ofproto::switch::{OfPort, PacketIn};
use ofproto::Ofproto;
use openflow::actions::{OFPCML_NO_BUFFER, OFPP_LOCAL};
use packet::flow::{self, FlowKey};
use packet::{Batch, Packet, Pool};
use std::collections::{HashMap, VecDeque};
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
    /// Uncached pipeline: packets dropped because too many waited for the OpenFlow state.
    pub uncached_deferred_drops: u64,
    pub unknown_port: u64,
}

/// The OpenFlow number of a bridge ofport.
pub fn to_of(ofport: u32) -> u32 {
    if ofport == BRIDGE_LOCAL {
        OFPP_LOCAL
    } else {
        ofport
    }
}

/// The caches a batch is looked up in (borrowed for the batch).
struct Lookup<'a> {
    emc: &'a Emc,
    emc_on: bool,
    dpcls: &'a Dpcls,
}

/// What the lookups count and choose to insert.
struct Tally<'s> {
    stats: &'s mut OpenFlowStats,
    sample: &'s mut (u64, u64),
    offers: &'s mut Vec<(usize, u32, Arc<Megaflow>)>,
    rng: &'s mut u32,
}

impl<'a> Lookup<'a> {
    /// Finds the megaflow of each key of `keys` (one chunk of a batch, starting at batch
    /// index `base`), writing it to `found` (`None`: a miss, for the slow path). In stages,
    /// each over the keys the previous one left: the megaflow the previous packet hit,
    /// the EMC (every slot prefetched before any is read), then the megaflow classifier's
    /// batched lookup. Returns the megaflow of the chunk's last packet found, for the next
    /// chunk's first stage.
    #[inline(always)]
    fn classify(
        &self,
        keys: &[FlowKey],
        base: usize,
        mut prev: Option<&'a Arc<Megaflow>>,
        found: &mut [Option<&'a Arc<Megaflow>>; LOOKUP_CHUNK],
        t: &mut Tally<'_>,
    ) -> Option<&'a Arc<Megaflow>> {
        let keys = &keys[..keys.len().min(LOOKUP_CHUNK)];
        let mut todo = [0u8; LOOKUP_CHUNK];
        let mut n_todo = 0;
        // Stage 1: packets of one flow (or of flows sharing a megaflow) come in runs, and
        // checking a mask's few words is cheaper than hashing and probing.
        match prev {
            Some(m) if !m.is_dead() => {
                for (i, k) in keys.iter().enumerate() {
                    if m.covers_fast(k.as_words()) {
                        found[i] = Some(m);
                    } else {
                        todo[n_todo] = i as u8;
                        n_todo += 1;
                    }
                }
                t.stats.megaflow_hits += (keys.len() - n_todo) as u64;
                if n_todo == 0 {
                    return prev;
                }
            }
            _ => {
                for (i, slot) in todo.iter_mut().enumerate().take(keys.len()) {
                    *slot = i as u8;
                }
                n_todo = keys.len();
            }
        }
        // Stage 2: the EMC.
        let mut hashes = [0u32; LOOKUP_CHUNK];
        if self.emc_on && n_todo > 0 {
            for &i in &todo[..n_todo] {
                let i = usize::from(i);
                let h = key_hash(keys[i].as_words());
                hashes[i] = h;
                self.emc.prefetch(h);
            }
            let mut kept = 0;
            for x in 0..n_todo {
                let i = usize::from(todo[x]);
                let w = keys[i].as_words();
                match self.emc.lookup(hashes[i], w) {
                    Some(m) => {
                        found[i] = Some(m);
                        t.stats.emc_hits += 1;
                        // Sample the megaflow path now and then, so `adapt_emc` knows what
                        // a lookup without the EMC would cost.
                        if t.stats.emc_hits & 63 == 0 {
                            let (_, probed) = self.dpcls.lookup(w);
                            *t.sample = (t.sample.0 + 1, t.sample.1 + u64::from(probed));
                        }
                    }
                    None => {
                        todo[kept] = todo[x];
                        kept += 1;
                    }
                }
            }
            n_todo = kept;
        }
        // Stage 3: the megaflow classifier, batched.
        if n_todo > 0 {
            let asked = todo;
            let n_asked = n_todo;
            t.stats.subtable_lookups +=
                self.dpcls.lookup_batch(keys, &mut todo, &mut n_todo, found);
            for &i in &asked[..n_asked] {
                let i = usize::from(i);
                if let Some(m) = found[i] {
                    t.stats.megaflow_hits += 1;
                    if self.emc_on && self.emc.sample(t.rng) {
                        t.offers.push((base + i, hashes[i], Arc::clone(m)));
                    }
                }
            }
        }
        if let Some(m) = found[..keys.len()].iter().rev().flatten().next() {
            prev = Some(m);
        }
        prev
    }
}

/// What executing actions needs: ports, the NORMAL table, counters and shared state.
struct Exec {
    udpif: Arc<Udpif>,
    /// The NORMAL action's MAC table, shared by every replica of the module (one per poll
    /// thread), so an address learned on one thread is known on all.
    normal: Arc<Mutex<Learning>>,
    slot_of: Vec<u32>,
    /// OpenFlow port -> slot for ports below 4096 (the common case), else `of_slot_big`.
    of_slot: Vec<u16>,
    of_slot_big: HashMap<u32, u16>,
    stats: OpenFlowStats,
}

const NO_SLOT: u16 = u16::MAX;
const SMALL_PORTS: u32 = 4096;

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
    /// Consecutive packets going to one port, handed to the fabric in one call.
    run_out: Batch,
    /// The megaflow the last batch ended on (the first candidate for the next batch).
    last: Option<Arc<Megaflow>>,
    /// EMC insertions chosen during a batch's lookups: (batch index, key hash, megaflow).
    offers: Vec<(usize, u32, Arc<Megaflow>)>,
    /// State of the EMC insertion sampling.
    rng: u32,
    /// Uncached pipeline: packets that found the OpenFlow state busy, kept in order for the
    /// next turn (see [`crate::udpif`]).
    deferred: VecDeque<(FlowKey, u16, Packet)>,
}

/// Packets the uncached pipeline keeps while the OpenFlow state is busy; more are dropped
/// (and counted).
const DEFER_MAX: usize = 512;

impl OpenFlow {
    /// A bridge whose table 0 holds `priority=0,actions=NORMAL`; with `cache`, the caching
    /// datapath (starting its handler and revalidator threads).
    pub fn new(cache: bool) -> Result<OpenFlow, String> {
        let udpif = Arc::new(Udpif::new(Ofproto::with_default_flow(
            crate::clock::now_ms(),
        )));
        let slow = if cache {
            Some(
                udpif
                    .lane()
                    .map_err(|e| format!("cannot start the upcall threads: {e}"))?,
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
            run_out: Batch::new(),
            last: None,
            offers: Vec::with_capacity(packet::MAX_BATCH),
            rng: 0x1234_5678,
            deferred: VecDeque::new(),
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

    /// Megaflows installed in this poll thread's cache.
    pub fn megaflow_count(&self) -> usize {
        self.dpcls.len()
    }

    /// True while upcalls are outstanding (queued or being handled).
    pub fn upcalls_pending(&self) -> bool {
        self.slow.as_ref().is_some_and(|s| s.pending())
    }

    fn set_cache(&mut self, on: bool) -> Result<(), String> {
        match (on, self.slow.is_some()) {
            (true, false) => {
                self.slow = Some(
                    self.exec
                        .udpif
                        .lane()
                        .map_err(|e| format!("cannot start the upcall threads: {e}"))?,
                );
            }
            (false, true) => {
                self.slow = None;
                self.exec.udpif.flush();
                self.dpcls.clear();
                self.emc.clear();
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

impl Exec {
    #[inline(always)]
    fn slot(&self, ofport: u32) -> Option<u16> {
        if ofport < SMALL_PORTS {
            match self.of_slot.get(ofport as usize) {
                Some(&s) if s != NO_SLOT => Some(s),
                _ => None,
            }
        } else {
            self.of_slot_big.get(&ofport).copied()
        }
    }

    fn map_port(&mut self, ofport: u32, slot: Option<u16>) {
        if ofport < SMALL_PORTS {
            let i = ofport as usize;
            if self.of_slot.len() <= i {
                self.of_slot.resize(i + 1, NO_SLOT);
            }
            self.of_slot[i] = slot.unwrap_or(NO_SLOT);
        } else {
            match slot {
                Some(s) => {
                    self.of_slot_big.insert(ofport, s);
                }
                None => {
                    self.of_slot_big.remove(&ofport);
                }
            }
        }
    }

    fn of_port(&self, slot: u16) -> u32 {
        self.slot_of.get(usize::from(slot)).copied().unwrap_or(0)
    }

    /// The uncached pipeline: translate and execute on the poll thread, with the OpenFlow
    /// state `of` the caller got without waiting.
    #[allow(clippy::too_many_arguments)]
    fn uncached(
        &mut self,
        of: &mut Ofproto,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        pkt: Packet,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        self.stats.uncached_xlates += 1;
        let x = ofproto::xlate(of, key, Some(pkt.data()), None);
        let len = pkt.len() as u64;
        for r in &x.rules {
            r.credit(1, len, now_ms);
        }
        for &(g, b) in &x.buckets {
            if let Some(grp) = of.group_mut(g) {
                grp.packet_count += 1;
                grp.byte_count += len;
                if let Some(p) = grp.bucket_packets.get_mut(b) {
                    *p += 1;
                }
                if let Some(p) = grp.bucket_bytes.get_mut(b) {
                    *p += len;
                }
            }
        }
        self.execute(now_ms, in_slot, key, &x.actions, pkt, pool, out);
    }

    /// Sends `pkt` out of OpenFlow port `p` (the commonest action list).
    #[inline(always)]
    /// Executes `actions` on `pkt`, consuming it.
    #[allow(clippy::too_many_arguments)]
    fn execute(
        &mut self,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        actions: &[DpAction],
        mut pkt: Packet,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        // Fast case: a single output.
        if let [DpAction::Output(p)] = actions {
            match self.slot(*p) {
                Some(slot) => out.emit(slot, pkt, pool),
                None => {
                    self.stats.unknown_port += 1;
                    out.drop_packet(pkt, pool);
                }
            }
            return;
        }
        // The last action that sends the packet somewhere may take it without a copy.
        let last_send = actions
            .iter()
            .rposition(|a| matches!(a, DpAction::Output(_) | DpAction::Normal));
        let mut offs = None;
        for (i, a) in actions.iter().enumerate() {
            match a {
                DpAction::Output(p) => {
                    let Some(slot) = self.slot(*p) else {
                        self.stats.unknown_port += 1;
                        continue;
                    };
                    if Some(i) == last_send {
                        out.emit(slot, pkt, pool);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(c) => out.emit(slot, c, pool),
                        None => self.stats.copy_failures += 1,
                    }
                }
                DpAction::Normal => {
                    if Some(i) == last_send {
                        let dest = lock(&self.normal).lookup_packet(now_ms, in_slot, &mut pkt);
                        self.normal_deliver(dest, in_slot, pkt, pool, out);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(mut c) => {
                            let dest = lock(&self.normal).lookup_packet(now_ms, in_slot, &mut c);
                            self.normal_deliver(dest, in_slot, c, pool, out);
                        }
                        None => self.stats.copy_failures += 1,
                    }
                }
                DpAction::Controller {
                    max_len,
                    reason,
                    table_id,
                    cookie,
                } => {
                    let n = if *max_len == OFPCML_NO_BUFFER {
                        pkt.len()
                    } else {
                        usize::from(*max_len).min(pkt.len())
                    };
                    self.stats.packet_ins += 1;
                    self.udpif.push_packet_in(PacketIn {
                        data: pkt.data()[..n].to_vec(),
                        total_len: pkt.len(),
                        reason: *reason,
                        table_id: *table_id,
                        cookie: *cookie,
                        key: *key,
                    });
                }
                DpAction::Clone(sub) => match pool.clone_packet(&pkt) {
                    Some(c) => self.execute(now_ms, in_slot, key, sub, c, pool, out),
                    None => self.stats.copy_failures += 1,
                },
                DpAction::Meter(id) => {
                    // Lock-free: the meters are published apart from the OpenFlow state.
                    let verdict = self.udpif.meters.apply(*id, pkt.len(), now_ms * 1000);
                    match verdict {
                        Verdict::Pass => {}
                        Verdict::Drop => {
                            self.stats.meter_drops += 1;
                            out.drop_packet(pkt, pool);
                            return;
                        }
                        Verdict::Remark { prec_level } => {
                            let mut k = FlowKey::ZERO;
                            flow::extract_into(&mut k, pkt.data(), 0);
                            let dscp = remark_dscp(k.nw_tos >> 2, prec_level);
                            odp::apply(
                                &mut pkt,
                                &DpAction::SetIpTos {
                                    tos: dscp << 2,
                                    mask: 0xfc,
                                },
                                &mut offs,
                            );
                        }
                    }
                }
                DpAction::SetQueue(_) | DpAction::SetTunnelId(_) => {}
                rewrite => odp::apply(&mut pkt, rewrite, &mut offs),
            }
        }
        out.drop_packet(pkt, pool);
    }

    fn normal_deliver(
        &mut self,
        dest: Dest,
        in_slot: u16,
        pkt: Packet,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        match dest {
            Dest::Port(p) => out.emit(p, pkt, pool),
            Dest::Drop => out.drop_packet(pkt, pool),
            Dest::Flood => {
                let targets: Vec<u16> = (0..self.slot_of.len() as u16)
                    .filter(|&s| s != in_slot && self.slot_of[usize::from(s)] != 0)
                    .collect();
                let Some((&last, rest)) = targets.split_last() else {
                    out.drop_packet(pkt, pool);
                    return;
                };
                for &s in rest {
                    match pool.clone_packet(&pkt) {
                        Some(c) => out.emit(s, c, pool),
                        None => self.stats.copy_failures += 1,
                    }
                }
                out.emit(last, pkt, pool);
            }
        }
    }
}

impl SwitchLogic for OpenFlow {
    fn name(&self) -> &'static str {
        "openflow"
    }

    fn lookup(&mut self, _ctx: &Ctx, _batch: &mut Batch, dests: &mut [Dest]) {
        // Never called: `custom_process` is true.
        dests.fill(Dest::Drop);
    }

    fn custom_process(&self) -> bool {
        true
    }

    fn process(
        &mut self,
        ctx: &Ctx,
        in_slot: u16,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        let now = ctx.now_ms;
        let in_port = self.exec.of_port(in_slot);
        // Extract every key first, then look them up: keys are written a field at a time
        // and read a word at a time; reading a key long after it was written avoids
        // stalling on store-to-load forwarding.
        for (k, p) in self.keys.iter_mut().zip(batch.packets()) {
            flow::extract_into(k, p.data(), in_port);
        }
        let total = batch.len().min(self.keys.len());
        let mut pkts = batch.drain();
        let Some(slow) = &self.slow else {
            // Packets kept for later go first: nothing overtakes them.
            let udpif = Arc::clone(&self.exec.udpif);
            let mut of = if self.deferred.is_empty() {
                udpif.try_of()
            } else {
                None
            };
            for (key, pkt) in self.keys.iter().zip(pkts.by_ref()) {
                match of.as_deref_mut() {
                    Some(of) => self.exec.uncached(of, now, in_slot, key, pkt, pool, out),
                    None if self.deferred.len() < DEFER_MAX => {
                        self.deferred.push_back((*key, in_slot, pkt));
                    }
                    None => {
                        self.exec.stats.uncached_deferred_drops += 1;
                        out.drop_packet(pkt, pool);
                    }
                }
            }
            for pkt in pkts {
                out.drop_packet(pkt, pool);
            }
            return;
        };
        let lookup = Lookup {
            emc: &self.emc,
            emc_on: self.emc_active,
            dpcls: &self.dpcls,
        };
        // The megaflow the previous packet hit (at first, the previous batch's last one).
        let mut prev = self.last.as_ref().filter(|m| !m.is_dead());
        // Counters: one update per run of packets of one megaflow.
        let mut acc: Option<&Arc<Megaflow>> = None;
        let mut run = (0u64, 0u64);
        // Single-output packets are collected per port while consecutive packets go to
        // the same port, and handed to the fabric in one call; the port of the last
        // megaflow seen is resolved once.
        let mut cur_out: Option<u16> = None;
        let mut port_of: (*const Megaflow, Option<u16>) = (std::ptr::null(), None);
        let mut base = 0;
        while base < total {
            let end = (base + LOOKUP_CHUNK).min(total);
            let mut found = [None; LOOKUP_CHUNK];
            prev = lookup.classify(
                &self.keys[base..end],
                base,
                prev,
                &mut found,
                &mut Tally {
                    stats: &mut self.exec.stats,
                    sample: &mut self.sample,
                    offers: &mut self.offers,
                    rng: &mut self.rng,
                },
            );
            for (key, &hit) in self.keys[base..end].iter().zip(found.iter()) {
                let Some(pkt) = pkts.next() else {
                    break;
                };
                let Some(m) = hit else {
                    self.exec.stats.upcalls += 1;
                    if let Err(u) = slow.upcall(pkt, *key, in_slot) {
                        self.exec.stats.lost_upcalls += 1;
                        out.drop_packet(u.pkt, pool);
                    }
                    continue;
                };
                match acc {
                    Some(a) if Arc::ptr_eq(a, m) => {
                        run.0 += 1;
                        run.1 += pkt.len() as u64;
                    }
                    _ => {
                        if let Some(a) = acc {
                            a.account(run.0, run.1, now);
                        }
                        acc = Some(m);
                        run = (1, pkt.len() as u64);
                    }
                }
                let Some(p) = m.single_output else {
                    // Keep each port's packets in order: what is collected goes first.
                    if let Some(c) = cur_out.take() {
                        out.emit_run(c, &mut self.run_out, pool);
                    }
                    self.exec
                        .execute(now, in_slot, key, &m.actions, pkt, pool, out);
                    continue;
                };
                if !std::ptr::eq(port_of.0, Arc::as_ptr(m)) {
                    port_of = (Arc::as_ptr(m), self.exec.slot(p));
                }
                let Some(slot) = port_of.1 else {
                    self.exec.stats.unknown_port += 1;
                    out.drop_packet(pkt, pool);
                    continue;
                };
                if cur_out != Some(slot) {
                    if let Some(c) = cur_out {
                        out.emit_run(c, &mut self.run_out, pool);
                    }
                    cur_out = Some(slot);
                }
                if let Err(p) = self.run_out.push(pkt) {
                    // Never: what is collected is at most one received batch.
                    out.drop_packet(p, pool);
                }
            }
            base = end;
        }
        for pkt in pkts {
            out.drop_packet(pkt, pool);
        }
        if let Some(c) = cur_out {
            out.emit_run(c, &mut self.run_out, pool);
        }
        if let Some(a) = acc {
            a.account(run.0, run.1, now);
        }
        let keep = match (prev, &self.last) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !keep {
            let next = prev.cloned();
            self.last = next;
        }
        // EMC insertions chosen during the lookups, made now that nothing borrows it.
        for (i, h, m) in self.offers.drain(..) {
            if let Some(k) = self.keys.get(i) {
                self.emc.insert(h, k.as_words(), &m);
            }
        }
    }

    fn poll_pending(&mut self, ctx: &Ctx, pool: &mut Pool, out: &mut dyn Emitter) -> usize {
        // Single writer: a plain load and store, no locked read-modify-write per iteration.
        let e = &*self.epoch;
        e.store(e.load(Ordering::Relaxed) + 1, Ordering::Release);
        // Kept by the uncached pipeline (also when the cache was turned on since).
        let mut n = self.run_deferred(ctx, pool, out);
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
                    self.exec
                        .execute(ctx.now_ms, c.in_slot, &c.key, &m.actions, c.pkt, pool, out);
                }
                None => {
                    self.exec
                        .execute(ctx.now_ms, c.in_slot, &c.key, &c.actions, c.pkt, pool, out);
                }
            }
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
        out: &mut dyn Emitter,
    ) -> Result<(), String> {
        let Some(mut pkt) = pool.alloc() else {
            return Err("packet pool exhausted".into());
        };
        if !pkt.set_frame(frame) {
            pool.free(pkt);
            return Err("frame too long for a packet buffer".into());
        }
        let key = flow::extract(frame, in_port);
        let in_slot = self.exec.slot(in_port).unwrap_or(NO_SLOT);
        pkt.in_port = in_slot;
        self.exec
            .execute(ctx.now_ms, in_slot, &key, actions, pkt, pool, out);
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
        self.upcalls_pending() || !self.deferred.is_empty()
    }

    fn fork(&mut self) -> Option<Box<dyn SwitchLogic>> {
        let u = &self.exec.udpif;
        let slow = match &self.slow {
            Some(_) => Some(u.lane().ok()?),
            None => None,
        };
        Some(Box::new(OpenFlow::assemble(
            Arc::clone(u),
            Arc::clone(&self.exec.normal),
            slow,
            true,
            self.emc.insert_inv_prob,
        )))
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
        // Rule expiry runs on the revalidator thread (see `udpif`), never here: the poll
        // thread must not wait for the ofproto lock a bundle commit may hold.
        if !self.replica {
            lock(&self.exec.normal).run(ctx);
        }
        self.dpcls.sweep();
        self.dpcls.rerank();
    }

    fn configure(&mut self, key: &str, value: &str) -> Result<(), String> {
        let num = |v: &str, lo: u64, hi: u64| -> Result<u64, String> {
            v.parse::<u64>()
                .ok()
                .filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| format!("{key}: '{v}' is not a number in {lo}..={hi}"))
        };
        let u = &self.exec.udpif;
        match key {
            "mac-aging-time" | "mac-table-size" => lock(&self.exec.normal).configure(key, value),
            "cache" => self.set_cache(netdev::parse_bool(key, value).map_err(|e| e.to_string())?),
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
            _ => Err(format!(
                "module 'openflow' has no setting '{key}' (settings: cache, emc-insert-inv-prob, flow-limit, max-idle, mac-aging-time, mac-table-size)"
            )),
        }
    }

    fn commands(&self) -> &'static [ModuleCommand] {
        crate::ofcommands::COMMANDS
    }

    fn command(
        &mut self,
        verb: &str,
        args: &[String],
        json: bool,
        ctx: &Ctx,
        ports: &dyn PortLookup,
    ) -> Result<String, String> {
        if self.replica {
            // Replicas share the tables and the NORMAL table with the first instance, which
            // has already run the verb.
            return Ok(String::new());
        }
        if matches!(verb, "fdb-show" | "fdb-flush" | "fdb-stats") {
            return lock(&self.exec.normal).command(verb, args, json, ctx, ports);
        }
        // The daemon runs everything else on its own thread with the OpenFlow state it kept
        // when it created the module; this path (on the poll thread) is for in-process users
        // such as benchmarks and tests.
        crate::ofcommands::run_as(
            &self.exec.udpif,
            verb,
            args,
            json,
            ctx.now_ms,
            crate::ofcommands::Caller::PollThread,
        )
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
            ("uncached_deferred_drops", s.uncached_deferred_drops),
            ("unknown_port", s.unknown_port),
        ]
    }
}

impl OpenFlow {
    /// The uncached pipeline's kept packets, in order, if the OpenFlow state is free now.
    fn run_deferred(&mut self, ctx: &Ctx, pool: &mut Pool, out: &mut dyn Emitter) -> usize {
        if self.deferred.is_empty() {
            return 0;
        }
        let udpif = Arc::clone(&self.exec.udpif);
        let Some(mut of) = udpif.try_of() else {
            return 0;
        };
        let n = self.deferred.len();
        for (key, in_slot, pkt) in self.deferred.drain(..) {
            self.exec
                .uncached(&mut of, ctx.now_ms, in_slot, &key, pkt, pool, out);
        }
        n
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
