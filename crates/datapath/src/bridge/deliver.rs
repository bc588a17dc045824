//! The delivery sink: where a module hands the packets of one forwarding pass, grouped per
//! destination port and sent one burst per port.
//!
//! What: [`Delivery`] is the output half of the one forwarding contract
//! ([`crate::module::SwitchLogic::forward`]). A module takes the packets of a received batch
//! and gives each one (or copies of it) to the sink: [`Delivery::emit`] for one port,
//! [`Delivery::emit_run`] for a run of packets with one port, [`Delivery::flood`] for every
//! port but the ingress one, [`Delivery::drop_packet`] for a drop. A module that chooses one
//! [`Dest`] per packet calls [`Delivery::by_dest`] instead: it fills one destination per
//! packet for the whole batch, then the sink makes mSwitch's second pass (each packet moved
//! into its port's output batch, a flood copied into each other port's).
//!
//! How: each port slot has one output batch. A packet handed over is pushed into its port's
//! batch (the port goes on the touched list when its batch stops being empty); the fabric
//! sends every touched batch as one burst once the module's pass is over
//! ([`Delivery::flush_all`]). A batch that fills up during the pass is sent early. Nothing
//! here allocates: batches, the destination array and the touched list are the bridge's,
//! sized once.
//!
//! Room for more than one destination per packet: a module running several stages over a
//! packet (the `openflow` module: rewrites, several outputs, `recirc` passes through its
//! caches again, `ct`, tunnel metadata for a tunnel port) runs them inside its `forward` and
//! hands each output to the sink as it is decided; the sink only ever sees final packets for
//! ports. A tunnel is a port (its netdev encapsulates); a recirculation never leaves the
//! module.
//!
//! Tracing: when the bridge's trace budget is armed ([`super::trace`]), the fabric hands the
//! module one packet at a time with [`Delivery::tracing`] true; the module may then describe
//! its decision with [`Delivery::note`], and the fabric reads where the packet went from the
//! output batches. Untraced passes test the flag at most once per batch.

use super::{BridgeStats, PortSlot};
use crate::mirror::Mirrors;
use crate::module::{Dest, VlanMode};
use packet::{Batch, Packet, Pool};

/// See the module documentation.
pub struct Delivery<'a> {
    pub(super) in_port: u16,
    pub(super) slots: &'a mut Vec<Option<PortSlot>>,
    pub(super) live: &'a [u16],
    pub(super) out: &'a mut Vec<Batch>,
    pub(super) touched: &'a mut Vec<u16>,
    pub(super) stats: &'a mut BridgeStats,
    /// The bridge's mirrors, if it has any (egress copies, reserved output ports).
    pub(super) mirrors: Option<&'a mut Mirrors>,
    /// One destination per packet, for [`Delivery::by_dest`].
    pub(super) dests: &'a mut [Dest],
    /// How many packets the last [`Delivery::by_dest`] call chose for (0: not called).
    pub(super) by_dest_len: usize,
    pub(super) tracing: bool,
    /// The module's description of its decision, while tracing.
    pub(super) note: Option<String>,
}

impl<'a> Delivery<'a> {
    /// The slot the packets of this pass came in on.
    #[inline]
    pub fn in_port(&self) -> u16 {
        self.in_port
    }

    /// Queues `pkt` for port slot `port` (freed and counted as stale if there is no such
    /// slot).
    #[inline(always)]
    pub fn emit(&mut self, port: u16, pkt: Packet, pool: &mut Pool) {
        self.enqueue(port, pkt, pool);
    }

    /// Queues every packet of `pkts` (in order) for port slot `port`, leaving it empty: one
    /// call for a run of packets with the same destination. When the port's output batch
    /// is empty and the bridge has no mirrors, the two batches trade storage: no packet is
    /// moved (every batch has room for [`packet::MAX_BATCH`]).
    #[inline]
    pub fn emit_run(&mut self, port: u16, pkts: &mut Batch, pool: &mut Pool) {
        if self.mirrors.is_none() && !pkts.is_empty() {
            if let Some(b) = self.out.get_mut(usize::from(port)) {
                if b.is_empty() {
                    std::mem::swap(b, pkts);
                    self.touched.push(port);
                    return;
                }
            }
        }
        for p in pkts.drain() {
            self.enqueue(port, p, pool);
        }
    }

    /// Frees a packet the module decided to drop (counted as a module drop).
    #[inline]
    pub fn drop_packet(&mut self, pkt: Packet, pool: &mut Pool) {
        self.stats.module_drops += 1;
        pool.free(pkt);
    }

    /// Queues `pkt` for every port of the bridge except `except` (its ingress port): a copy
    /// for each but the last, which takes the packet itself. Freed if there is no other
    /// port.
    #[inline]
    pub fn flood(&mut self, except: u16, pkt: Packet, pool: &mut Pool) {
        let mut last: Option<u16> = None;
        for k in 0..self.live.len() {
            let o = self.live[k];
            if o == except {
                continue;
            }
            if let Some(prev) = last {
                match pool.clone_packet(&pkt) {
                    Some(c) => {
                        self.stats.flood_copies += 1;
                        self.enqueue(prev, c, pool);
                    }
                    None => self.stats.copy_failures += 1,
                }
            }
            last = Some(o);
        }
        match last {
            Some(o) => self.enqueue(o, pkt, pool),
            None => pool.free(pkt),
        }
    }

    /// Delivers a batch whose packets have one destination each (mSwitch's two passes):
    /// `choose` fills `dests[i]` for packet `i` of the batch (it may rewrite packets in
    /// place, not reorder, add or remove them), then every packet goes to its destination
    /// and the batch is left empty. The helper for modules that answer with a [`Dest`].
    #[inline(always)]
    pub fn by_dest(
        &mut self,
        batch: &mut Batch,
        pool: &mut Pool,
        choose: impl FnOnce(&mut Batch, &mut [Dest]),
    ) {
        let n = batch.len().min(self.dests.len());
        choose(batch, &mut self.dests[..n]);
        self.by_dest_len = n;
        if self.tracing {
            self.note_dest();
        }
        let in_port = self.in_port;
        for (i, pkt) in batch.drain().enumerate() {
            match self.dests.get(i).copied().unwrap_or(Dest::Drop) {
                Dest::Port(o) => self.enqueue(o, pkt, pool),
                Dest::Drop => {
                    self.stats.module_drops += 1;
                    pool.free(pkt);
                }
                Dest::Flood => self.flood(in_port, pkt, pool),
            }
        }
    }

    /// The trace note of a one-destination module: its choice for the traced packet.
    #[cold]
    fn note_dest(&mut self) {
        let name = |o: u16| match self.slots.get(usize::from(o)) {
            Some(Some(s)) => s.port.name().to_string(),
            _ => format!("slot {o}"),
        };
        self.note = self.dests.first().map(|d| match *d {
            Dest::Port(o) => format!("port {}", name(o)),
            Dest::Flood => "flood".to_string(),
            Dest::Drop => "drop".to_string(),
        });
    }

    /// Runs `adapt` on each output burst of this pass before it is sent (a module's egress
    /// stage, e.g. VLAN tagging per port); it may free packets into the pool.
    pub fn adapt_bursts(
        &mut self,
        pool: &mut Pool,
        mut adapt: impl FnMut(u16, &mut Batch, &mut Pool),
    ) {
        for k in 0..self.touched.len() {
            let o = self.touched[k];
            if let Some(b) = self.out.get_mut(usize::from(o)) {
                adapt(o, b, pool);
            }
        }
    }

    /// True when this pass is traced: the batch holds one packet, and the module may say
    /// what it decided with [`Delivery::note`].
    #[inline(always)]
    pub fn tracing(&self) -> bool {
        self.tracing
    }

    /// Records the module's decision for the packet being traced (ignored when not
    /// tracing).
    pub fn note(&mut self, what: impl FnOnce() -> String) {
        if self.tracing {
            self.note = Some(what());
        }
    }

    #[inline(always)]
    pub(super) fn enqueue(&mut self, o: u16, pkt: Packet, pool: &mut Pool) {
        if self.mirrors.is_some() {
            self.enqueue_checked(o, pkt, pool);
        } else {
            self.enqueue_raw(o, pkt, pool);
        }
    }

    /// [`Delivery::enqueue`] on a bridge with mirrors: a mirror's output port is reserved for
    /// mirrored copies, as in OVS. Out of line, so the common path stays small.
    #[cold]
    #[inline(never)]
    fn enqueue_checked(&mut self, o: u16, pkt: Packet, pool: &mut Pool) {
        if let Some(m) = self.mirrors.as_deref_mut() {
            if m.is_output(o) {
                m.reserved_drops += 1;
                pool.free(pkt);
                return;
            }
        }
        self.enqueue_raw(o, pkt, pool);
    }

    /// Sends a copy of `p` to the output port of every mirror in `sel` (a bit per mirror).
    pub(super) fn copy_to_mirrors(
        &mut self,
        m: &Mirrors,
        mut sel: u32,
        p: &Packet,
        pool: &mut Pool,
    ) {
        while sel != 0 {
            let i = sel.trailing_zeros();
            sel &= sel - 1;
            match pool.clone_packet(p) {
                Some(c) => self.enqueue_raw(m.output(i), c, pool),
                None => self.stats.copy_failures += 1,
            }
        }
    }

    #[inline(always)]
    fn enqueue_raw(&mut self, o: u16, pkt: Packet, pool: &mut Pool) {
        let Some(b) = self.out.get_mut(o as usize) else {
            self.stats.stale_dest += 1;
            pool.free(pkt);
            return;
        };
        if b.is_empty() {
            self.touched.push(o);
        }
        if let Err(pkt) = b.push(pkt) {
            self.flush(o, pool);
            // `o` is still on the touched list: it went there when its batch first filled.
            let b = &mut self.out[o as usize];
            if let Err(p) = b.push(pkt) {
                pool.free(p);
            }
        }
    }

    #[inline]
    fn flush(&mut self, o: u16, pool: &mut Pool) {
        let Some(b) = self.out.get_mut(o as usize) else {
            return;
        };
        if b.is_empty() {
            return;
        }
        if self.mirrors.is_some() {
            self.mirror_egress(o, pool);
        }
        let Some(b) = self.out.get_mut(o as usize) else {
            return;
        };
        match self.slots.get_mut(o as usize) {
            Some(Some(slot)) => {
                self.stats.tx_bursts += 1;
                self.stats.tx_packets += b.len() as u64;
                slot.port.tx_batch(pool, b);
            }
            _ => {
                self.stats.stale_dest += b.len() as u64;
                pool.free_batch(b);
            }
        }
        // Anything a port left behind is freed so the batch is empty for the next pass.
        pool.free_batch(b);
    }

    /// Copies output batch `o`, as it is about to leave, to the mirrors that select it.
    #[cold]
    #[inline(never)]
    fn mirror_egress(&mut self, o: u16, pool: &mut Pool) {
        if !self.mirrors.as_deref().is_some_and(|m| m.watches_egress(o)) {
            return;
        }
        let Some(m) = self.mirrors.take() else {
            return;
        };
        let vlan = match self.slots.get(usize::from(o)) {
            Some(Some(s)) if m.selects_vlans() => s.vlan.clone(),
            _ => VlanMode::Trunk(None),
        };
        let n = self.out.get(usize::from(o)).map_or(0, Batch::len);
        for k in 0..n {
            let Some(p) = self.out[usize::from(o)].packets().get(k) else {
                break;
            };
            let sel = m.egress(o, &vlan, p);
            if sel == 0 {
                continue;
            }
            let Some(c) = pool.clone_packet(p) else {
                self.stats.copy_failures += u64::from(sel.count_ones());
                continue;
            };
            // One clone made: reuse it for the first mirror, copy again for the others.
            let mut rest = sel;
            let first = rest.trailing_zeros();
            rest &= rest - 1;
            if rest != 0 {
                self.copy_to_mirrors(m, rest, &c, pool);
            }
            self.enqueue_raw(m.output(first), c, pool);
        }
        self.mirrors = Some(m);
    }

    /// Sends every touched output batch, one burst each.
    pub(super) fn flush_all(&mut self, pool: &mut Pool) {
        while let Some(o) = self.touched.pop() {
            self.flush(o, pool);
        }
    }
}
