//! The output port of sampled packets ([`crate::sample`]): where the module sent each one.
//!
//! What: a sample is picked on ingress, before the module runs, and waits in its sampler
//! until the bridge knows where the packet went. Its `output` is then encoded as OVS 3.1
//! does for sFlow: one output, that port's kernel interface index (`0x80000001` if it has
//! none); `n` outputs, `0x80000000 | n` (a flood counts every port it is sent to, the
//! bridge's internal port included); none, `0x40000100` (dropped, reason unknown).
//!
//! How: only batches that hold a sample come here, so other batches pay one test.
//! * Modules that answer with destinations ([`SwitchLogic::lookup`]): the sampled packet's
//!   [`Dest`] gives it. A flood counts the bridge's ports other than the input port, before
//!   any egress filtering (a VLAN the port does not carry still counts it).
//! * Modules that process packets themselves ([`SwitchLogic::process`], the `openflow`
//!   module): the batch is handed over in pieces, each sampled packet alone through an
//!   emitter that counts what the module does with it (outputs, and whether it freed it as
//!   a drop). The count covers what the cached actions do, `NORMAL` and recirculations run in
//!   the same pass included. A packet that misses the caches goes to the slow path and is
//!   sent later: its output is reported as unknown (0). Packets keep their order.
//!
//! [`SwitchLogic::lookup`]: crate::module::SwitchLogic::lookup
//! [`SwitchLogic::process`]: crate::module::SwitchLogic::process

use super::{Bridge, Fabric, PortSlot};
use crate::module::{Ctx, Dest, Emitter};
use crate::sample::{output_code, OUTPUT_UNKNOWN};
use packet::{Batch, Packet, Pool};

/// The kernel interface index of port slot `o`, if it has one.
fn kernel_ifindex(slots: &[Option<PortSlot>], o: u16) -> Option<u32> {
    slots
        .get(usize::from(o))
        .and_then(|s| s.as_ref())
        .and_then(|s| s.port.ifindex())
}

/// An emitter that counts what happens to one packet on its way to the fabric.
struct Counting<'a> {
    inner: &'a mut dyn Emitter,
    outputs: u32,
    last: u16,
    dropped: bool,
}

impl Emitter for Counting<'_> {
    fn emit(&mut self, port: u16, pkt: Packet, pool: &mut Pool) {
        self.outputs += 1;
        self.last = port;
        self.inner.emit(port, pkt, pool);
    }

    fn emit_run(&mut self, port: u16, pkts: &mut Batch, pool: &mut Pool) {
        if !pkts.is_empty() {
            self.outputs += pkts.len() as u32;
            self.last = port;
        }
        self.inner.emit_run(port, pkts, pool);
    }

    fn drop_packet(&mut self, pkt: Packet, pool: &mut Pool) {
        self.dropped = true;
        self.inner.drop_packet(pkt, pool);
    }
}

impl Bridge {
    /// The batch indexes the samplers took samples at, in order, each once.
    fn sampled_indexes(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = self
            .samplers
            .iter()
            .flat_map(|(_, s)| s.pending())
            .collect();
        idx.sort_unstable();
        idx.dedup();
        idx
    }

    /// Sends the samples of a batch of `n` packets from `in_port` whose destinations are in
    /// `self.dests`.
    #[cold]
    #[inline(never)]
    pub(super) fn resolve_from_dests(&mut self, in_port: u16, n: usize) {
        let Bridge {
            samplers,
            dests,
            slots,
            live,
            ..
        } = self;
        let (dests, slots, live) = (&dests[..], &slots[..], &live[..]);
        let others = || live.iter().copied().filter(|&o| o != in_port);
        let flood = others().count() as u32;
        let code = |i: usize| match dests.get(i).filter(|_| i < n) {
            Some(Dest::Port(o)) => output_code(1, kernel_ifindex(slots, *o), false),
            Some(Dest::Drop) => output_code(0, None, true),
            Some(Dest::Flood) => {
                let single = others().next().and_then(|o| kernel_ifindex(slots, o));
                output_code(flood, single, true)
            }
            None => OUTPUT_UNKNOWN,
        };
        for (_, s) in samplers.iter_mut() {
            s.resolve(&code);
        }
    }

    /// Runs the module's own processing over the receive batch (from `in_port`), which holds
    /// samples: the packets before, between and after the sampled ones go in runs, each
    /// sampled one alone, counted; then the samples are sent.
    #[cold]
    #[inline(never)]
    pub(super) fn process_sampled(&mut self, ctx: &Ctx, in_port: u16, pool: &mut Pool) {
        let idx = self.sampled_indexes();
        let mut codes = vec![OUTPUT_UNKNOWN; idx.len()];
        let Bridge {
            module,
            slots,
            out,
            touched,
            rxb,
            stats,
            mirrors,
            sample_rest: rest,
            samplers,
            ..
        } = self;
        for p in rxb.drain() {
            if let Err(p) = rest.push(p) {
                // Never: both hold at most one batch.
                pool.free(p);
            }
        }
        let mut fab = Fabric {
            module: None,
            slots,
            out,
            touched,
            stats,
            mirrors: mirrors.as_deref_mut(),
        };
        let module = module.as_mut();
        let mut run = |n: usize, rxb: &mut Batch, pool: &mut Pool, out: &mut dyn Emitter| {
            for p in rest.drain_front(n) {
                if let Err(p) = rxb.push(p) {
                    pool.free(p);
                }
            }
            if !rxb.is_empty() {
                module.process(ctx, in_port, rxb, pool, out);
                pool.free_batch(rxb);
            }
        };
        let mut at = 0;
        for (k, &i) in idx.iter().enumerate() {
            run(i.saturating_sub(at), rxb, pool, &mut fab);
            let mut c = Counting {
                inner: &mut fab,
                outputs: 0,
                last: 0,
                dropped: false,
            };
            run(1, rxb, pool, &mut c);
            let (n, last, dropped) = (c.outputs, c.last, c.dropped);
            let single = kernel_ifindex(&fab.slots[..], last).filter(|_| n == 1);
            codes[k] = output_code(n, single, dropped);
            at = i + 1;
        }
        run(usize::MAX, rxb, pool, &mut fab);
        fab.flush_all(pool);
        for (_, s) in samplers.iter_mut() {
            s.resolve(|i| idx.binary_search(&i).map_or(OUTPUT_UNKNOWN, |k| codes[k]));
        }
    }
}
