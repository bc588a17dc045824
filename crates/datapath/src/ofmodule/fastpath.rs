//! The `openflow` module's per-batch paths: the caching one (megaflow the previous packet hit,
//! EMC, megaflow classifier, upcall on a miss) and the uncached reference pipeline, which
//! translates every packet and keeps packets while the OpenFlow state is busy.

use super::ctrun::CtRecirc;
use super::lookup::{Lookup, Tally};
use super::OpenFlow;
use crate::dpcls::{Megaflow, LOOKUP_CHUNK};
use crate::module::Delivery;
use packet::{Packet, Pool};
use std::sync::Arc;

impl OpenFlow {
    /// The caching datapath over one received batch whose keys are in `self.keys`.
    pub(super) fn process_cached(
        &mut self,
        now: u64,
        in_slot: u16,
        total: usize,
        mut pkts: impl Iterator<Item = Packet>,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        let Some(slow) = &self.slow else {
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
        // Received and recirculated packets take turns and hit different megaflows: each
        // kind starts from the megaflow its own previous batch ended on.
        let kind = usize::from(self.exec.depth.min(1));
        let mut prev = self.last[kind].as_ref().filter(|m| !m.is_dead());
        // Counters: one update per run of packets of one megaflow.
        let mut acc: Option<&Arc<Megaflow>> = None;
        let mut run = (0u64, 0u64);
        // Single-output packets are collected per port while consecutive packets go to
        // the same port, and handed to the fabric in one call; the port of the last
        // megaflow seen is resolved once.
        let mut cur_out: Option<u16> = None;
        let mut port_of: (*const Megaflow, Option<u16>) = (std::ptr::null(), None);
        // The megaflow of `[ct(..), recirc(..)]` last seen, ready for its packets (see
        // `ctrun`), and the tracker, got once per batch.
        let mut ct_of: (*const Megaflow, Option<CtRecirc<'_>>) = (std::ptr::null(), None);
        let mut tracker = None;
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
            // Connection tracking: the chunk's table buckets prefetched before the first
            // `ct` runs (`ct::prefetch`).
            crate::ct::prefetch(&self.keys[base..end], &found, &self.exec.ct_cache);
            for ((key, offs), &hit) in self.keys[base..end]
                .iter()
                .zip(&self.offs[base..end])
                .zip(found.iter())
            {
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
                    // A fragment takes the general path, whose `ct` reassembles
                    // (`ofmodule::frag`): one test of a key byte the lookup just read.
                    if self.ct_runs && key.nw_frag == 0 {
                        if !std::ptr::eq(ct_of.0, Arc::as_ptr(m)) {
                            ct_of = (Arc::as_ptr(m), CtRecirc::of(m));
                        }
                        if let Some(run) = &mut ct_of.1 {
                            let t = *tracker.get_or_insert_with(crate::ct::tracker);
                            let Some((slot, pkt)) = self
                                .exec
                                .ct_then_recirc(t, run, now, in_slot, key, *offs, pkt, pool, out)
                            else {
                                continue;
                            };
                            collect(&mut self.run_out, &mut cur_out, slot, pkt, pool, out);
                            continue;
                        }
                    }
                    // Keep each port's packets in order: what is collected goes first.
                    if let Some(c) = cur_out.take() {
                        out.emit_run(c, &mut self.run_out, pool);
                    }
                    self.exec.execute_with(
                        now,
                        in_slot,
                        key,
                        Some(*offs),
                        &m.actions,
                        Some(m.last_send),
                        pkt,
                        pool,
                        out,
                    );
                    continue;
                };
                if !std::ptr::eq(port_of.0, Arc::as_ptr(m)) {
                    port_of = (Arc::as_ptr(m), self.exec.slot(p));
                    if kind == 1 {
                        // A recirculated pass: the shortcut's candidate (see `skip`).
                        self.exec.next.learn(m);
                    }
                }
                let Some(slot) = port_of.1 else {
                    self.exec.stats.unknown_port += 1;
                    out.drop_packet(pkt, pool);
                    continue;
                };
                collect(&mut self.run_out, &mut cur_out, slot, pkt, pool, out);
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
        let keep = match (prev, &self.last[kind]) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !keep {
            let next = prev.cloned();
            self.last[kind] = next;
        }
        // EMC insertions chosen during the lookups, made now that nothing borrows it.
        for (i, h, m) in self.offers.drain(..) {
            if let Some(k) = self.keys.get(i) {
                self.emc.insert(h, k.as_words(), &m);
            }
        }
    }

    /// Re-injects the packets `recirc` actions queued, round after round (a round's
    /// packets may recirculate again, up to `MAX_RECIRC_DEPTH`), through the same caches
    /// and slow path as received packets; consecutive packets of one ingress port form
    /// one batch.
    pub(super) fn drain_recirc(&mut self, now: u64, pool: &mut Pool, out: &mut Delivery<'_>) {
        let mut depth = 0u8;
        // The two queues trade places each round and keep their capacity. A round from one
        // ingress slot that fits a batch (what one received batch recirculates) is one
        // batch, its key array lent to the pipeline as `self.keys` for it; otherwise
        // packets of one slot in a row form a batch, their keys copied into `self.keys`.
        let mut queued = std::mem::take(&mut self.recirc_spare);
        let mut pkts = Vec::with_capacity(self.keys.len());
        while !self.exec.recirc.is_empty() {
            depth = depth.saturating_add(1);
            self.exec.depth = depth;
            std::mem::swap(&mut queued, &mut self.exec.recirc);
            let first_slot = queued.pkts.first().map(|p| p.1);
            let one_batch = queued.pkts.len() <= self.keys.len()
                && queued.keys.len() == queued.pkts.len()
                && queued.pkts.iter().all(|p| Some(p.1) == first_slot);
            match first_slot {
                Some(slot) if one_batch => {
                    for (i, (o, _, p)) in queued.pkts.drain(..).enumerate() {
                        self.offs[i] = o;
                        pkts.push(p);
                    }
                    std::mem::swap(&mut self.keys, &mut queued.keys);
                    self.run_recirculated(now, slot, &mut pkts, pool, out);
                    std::mem::swap(&mut self.keys, &mut queued.keys);
                }
                _ => {
                    let mut group = None;
                    for (i, (o, slot, p)) in queued.pkts.drain(..).enumerate() {
                        if let Some(g) =
                            group.filter(|g| *g != slot || pkts.len() >= self.keys.len())
                        {
                            self.run_recirculated(now, g, &mut pkts, pool, out);
                        }
                        group = Some(slot);
                        if let Some(k) = queued.keys.get(i) {
                            self.keys[pkts.len()] = *k;
                        }
                        self.offs[pkts.len()] = o;
                        pkts.push(p);
                    }
                    if let Some(g) = group {
                        self.run_recirculated(now, g, &mut pkts, pool, out);
                    }
                }
            }
            queued.keys.clear();
        }
        self.recirc_spare = queued;
        self.exec.depth = 0;
    }

    /// One batch of recirculated packets from `slot` (keys in `self.keys`); empties `pkts`.
    fn run_recirculated(
        &mut self,
        now: u64,
        slot: u16,
        pkts: &mut Vec<Packet>,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        let n = pkts.len();
        if self.slow.is_some() {
            self.process_cached(now, slot, n, pkts.drain(..), pool, out);
        } else {
            self.process_uncached(now, slot, pkts.drain(..), pool, out);
        }
    }

    /// The uncached pipeline over one received batch whose keys are in `self.keys`: each
    /// packet translated against the published OpenFlow state (a snapshot, which never
    /// waits for the control plane).
    pub(super) fn process_uncached(
        &mut self,
        now: u64,
        in_slot: u16,
        mut pkts: impl Iterator<Item = Packet>,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        let udpif = Arc::clone(&self.exec.udpif);
        let of = udpif.snapshot();
        for ((key, offs), pkt) in self.keys.iter().zip(&self.offs).zip(pkts.by_ref()) {
            self.exec
                .uncached(&of, now, in_slot, key, Some(*offs), pkt, pool, out);
        }
        for pkt in pkts {
            out.drop_packet(pkt, pool);
        }
        drop(of);
        // No revalidator runs for this pipeline: flows its `learn`s produced are applied
        // here, when that costs little.
        udpif.apply_learned_now();
    }
}

/// Adds `pkt`, going to port slot `slot`, to the packets collected for `cur_out` (`run`),
/// handing those to the fabric first when they go elsewhere.
#[inline(always)]
fn collect(
    run: &mut packet::Batch,
    cur_out: &mut Option<u16>,
    slot: u16,
    pkt: Packet,
    pool: &mut Pool,
    out: &mut Delivery<'_>,
) {
    if *cur_out != Some(slot) {
        if let Some(c) = *cur_out {
            out.emit_run(c, run, pool);
        }
        *cur_out = Some(slot);
    }
    if let Err(p) = run.push(pkt) {
        // Never: what is collected is at most one received batch.
        out.drop_packet(p, pool);
    }
}
