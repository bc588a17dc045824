//! The traced forwarding pass: packets watched one at a time, for the fast-path trace
//! ([`super::trace`]) and for packet samples ([`crate::sample`]), which must learn where the
//! module sent their packet.
//!
//! What: a sample is picked on ingress, before the module runs, and waits in its sampler
//! until the bridge knows where the packet went. Its `output` is then encoded as OVS 3.1
//! does for sFlow: one output, that port's kernel interface index (`0x80000001` if it has
//! none); `n` outputs, `0x80000000 | n` (a flood counts every port it is sent to, the
//! bridge's internal port included); none, `0x40000100` (dropped, reason unknown). A traced
//! packet gets a [`TraceRecord`].
//!
//! How: only batches that hold a sample, or arrive while a trace is armed, come here, so
//! other batches pay one test. The batch is handed to the module in pieces: the packets
//! between watched ones in runs, each watched one alone, after which the output batches
//! say where it went (before they are sent).
//! * Modules that answer with destinations ([`Delivery::by_dest`]): the packet's [`Dest`]
//!   gives a sample's output. A flood counts the bridge's ports other than the input port,
//!   before any egress filtering (a VLAN the port does not carry still counts it).
//! * Other modules (the `openflow` module): what it queued for ports, and whether it
//!   dropped the packet. The count covers what the cached actions do, `NORMAL` and
//!   recirculations run in the same pass included. A packet that misses the caches goes to
//!   the slow path and is sent later: its output is reported as unknown (0), its trace as
//!   having no output yet. Packets keep their order.

use super::trace::TraceRecord;
use super::{Bridge, Delivery, PortSlot};
use crate::module::{Ctx, Dest};
use crate::sample::{output_code, OUTPUT_UNKNOWN};
use packet::Pool;

/// The kernel interface index of port slot `o`, if it has one.
fn kernel_ifindex(slots: &[Option<PortSlot>], o: u16) -> Option<u32> {
    slots
        .get(usize::from(o))
        .and_then(|s| s.as_ref())
        .and_then(|s| s.port.ifindex())
}

/// Where one watched packet went.
#[derive(Default)]
struct Seen {
    /// The output slots it (or its copies) was queued for, in order.
    ports: Vec<u16>,
    /// Packets queued for them.
    outputs: u32,
    dropped: bool,
    /// Its destination, if the module answered with one.
    dest: Option<Dest>,
    /// Flood fan-out (the bridge's other ports) and the first of them, for a sample of a
    /// flooded packet.
    flood: u32,
    flood_first: Option<u16>,
    note: Option<String>,
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

    /// Runs the receive batch (from `in_port`) through the module in pieces, each watched
    /// packet alone (see the module documentation); then sends the samples.
    #[cold]
    #[inline(never)]
    pub(super) fn forward_watched(&mut self, in_port: u16, ctx: &Ctx, pool: &mut Pool) {
        let idx = self.sampled_indexes();
        let mut codes = vec![OUTPUT_UNKNOWN; idx.len()];
        for p in self.rxb.drain() {
            if let Err(p) = self.sample_rest.push(p) {
                // Never: both hold at most one batch.
                pool.free(p);
            }
        }
        let total = self.sample_rest.len();
        let mut at = 0;
        while at < total {
            let traced = self.trace.as_ref().is_some_and(|t| t.budget > 0);
            let sample = idx.binary_search(&at);
            if !traced && sample.is_err() {
                // A run up to the next sample.
                let next = idx.iter().copied().find(|&i| i > at).unwrap_or(total);
                self.run_piece(in_port, ctx, pool, next - at, false);
                at = next;
                continue;
            }
            let len = self.sample_rest.packets().first().map_or(0, |p| p.len());
            let seen = self.run_piece(in_port, ctx, pool, 1, traced);
            if let Ok(k) = sample {
                codes[k] = self.sample_code(&seen);
            }
            if traced {
                self.record(in_port, len, seen);
            }
            at += 1;
        }
        for (_, s) in self.samplers.iter_mut() {
            s.resolve(|i| idx.binary_search(&i).map_or(OUTPUT_UNKNOWN, |k| codes[k]));
        }
    }

    /// Hands the first `n` packets of `sample_rest` to the module as one batch and sends
    /// what it delivered; when `n` is 1, says where that packet went.
    fn run_piece(
        &mut self,
        in_port: u16,
        ctx: &Ctx,
        pool: &mut Pool,
        n: usize,
        tracing: bool,
    ) -> Seen {
        for p in self.sample_rest.drain_front(n) {
            if let Err(p) = self.rxb.push(p) {
                pool.free(p);
            }
        }
        let mut seen = Seen::default();
        if self.rxb.is_empty() {
            return seen;
        }
        let drops = self.stats.module_drops;
        let mut watch = |d: &Delivery<'_>| {
            let reserved = |o: u16| d.mirrors.as_deref().is_some_and(|m| m.is_output(o));
            for &o in d.touched.iter() {
                if reserved(o) {
                    continue;
                }
                let k = d.out.get(usize::from(o)).map_or(0, |b| b.len());
                if k > 0 {
                    seen.ports.push(o);
                    seen.outputs += k as u32;
                }
            }
            if d.by_dest_len > 0 {
                seen.dest = d.dests.first().copied();
                seen.flood = d.live.iter().filter(|&&o| o != in_port).count() as u32;
                seen.flood_first = d.live.iter().copied().find(|&o| o != in_port);
            }
            seen.dropped = d.stats.module_drops > drops;
            seen.note = d.note.clone();
        };
        self.with_delivery(
            in_port,
            tracing,
            pool,
            |m, rxb, pool, out| {
                m.forward(ctx, rxb, pool, out);
                pool.free_batch(rxb);
            },
            if n == 1 { Some(&mut watch) } else { None },
        );
        seen
    }

    /// A sample's output field for a packet seen going where `s` says.
    fn sample_code(&self, s: &Seen) -> u32 {
        let slots = &self.slots[..];
        match s.dest {
            Some(Dest::Port(o)) => output_code(1, kernel_ifindex(slots, o), false),
            Some(Dest::Drop) => output_code(0, None, true),
            Some(Dest::Flood) => {
                let single = s.flood_first.and_then(|o| kernel_ifindex(slots, o));
                output_code(s.flood, single, true)
            }
            None => {
                let single = s
                    .ports
                    .last()
                    .and_then(|&o| kernel_ifindex(slots, o))
                    .filter(|_| s.outputs == 1);
                output_code(s.outputs, single, s.dropped)
            }
        }
    }

    /// Adds the record of a traced packet.
    fn record(&mut self, in_port: u16, len: usize, s: Seen) {
        let name = |o: u16| self.port_name(o).unwrap_or("?").to_string();
        let r = TraceRecord {
            seq: 0,
            in_port: name(in_port),
            len,
            decision: s.note.unwrap_or_else(|| "-".into()),
            outputs: s.ports.iter().map(|&o| name(o)).collect(),
            dropped: s.dropped,
        };
        if let Some(t) = self.trace.as_deref_mut() {
            t.push(r);
        }
    }
}
