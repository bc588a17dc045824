//! Megaflows whose actions are a `ct` and then a `recirc` (a tracked pipeline's first pass,
//! `ct(table=N)`), run without the general action loop.
//!
//! What: the caching datapath's per-batch loop (`OpenFlow::process_cached`) recognises a
//! megaflow whose actions are exactly `[ct(..), recirc(id)]` once per run of packets that hit
//! it ([`CtRecirc::of`]: the tracker's request, and the verdict each packet's `ct` overwrites,
//! made once, not per packet), and runs each packet through [`Exec::ct_then_recirc`]: the
//! `ct`, then the recirculation, shortcut to the next pass's megaflow where the poll thread
//! knows it (`skip`), its candidates made ready for the run's packets once (`skip::Plan`).
//! A shortcut packet's port is handed back, so that it joins the batch's collected single
//! outputs instead of being sent one at a time.
//!
//! Why it is the same: it is `Exec::execute_with` for those two actions, step for step
//! (the counters, the depth limit, which packets take the queue and with which key),
//! without the per-action dispatch and with the request made once per run instead of once
//! per packet; a shortcut packet keeps its order on its port, as collected single outputs
//! do. A proptest (`tests/ct_run.rs`) runs the same traffic through a module with and
//! without it ([`OpenFlow::set_ct_runs`]) and compares what leaves each port, the counters,
//! the rules' statistics and the tracker's connections.
//!
//! [`OpenFlow::set_ct_runs`]: super::OpenFlow::set_ct_runs

use super::exec::{Exec, MAX_RECIRC_DEPTH};
use super::skip::Plan;
use crate::ct::RecircWords;
use crate::dpcls::Megaflow;
use crate::module::Delivery;
use conntrack::{Conntrack, CtRequest, CtResult};
use ofproto::odp::DpAction;
use ofproto::odp_ct::CtAction;
use packet::flow::{FlowKey, Offsets};
use packet::{Packet, Pool};

/// A megaflow's `[ct(..), recirc(id)]`, ready for its packets.
pub(super) struct CtRecirc<'a> {
    /// The megaflow.
    pub(super) m: &'a Megaflow,
    pub(super) ct: &'a CtAction,
    pub(super) req: CtRequest<'a>,
    pub(super) id: u32,
    /// The verdict of the packet being run: every `execute_flow_cached` writes all of it, so
    /// it is made once per run, not once per packet.
    pub(super) res: CtResult,
    /// The shortcut's candidates made ready for the megaflow's packets (see `skip::Plan`),
    /// made again when they changed.
    pub(super) plan: Plan,
}

impl<'a> CtRecirc<'a> {
    /// `Some` when `m`'s actions are exactly a `ct` and then a `recirc`.
    #[inline]
    pub(super) fn of(m: &'a Megaflow) -> Option<CtRecirc<'a>> {
        match &m.actions[..] {
            [DpAction::Ct(ct), DpAction::Recirc(id)] => Some(CtRecirc {
                m,
                ct,
                req: ct.request(),
                id: *id,
                res: CtResult::default(),
                plan: Plan::STALE,
            }),
            _ => None,
        }
    }
}

impl Exec {
    /// `execute_with` of `[ct(..), recirc(id)]` (`run`) on `pkt`, whose key is `key` and
    /// layers `offs`, with the tracker `t`: `Some((slot, pkt))` when the recirculation was
    /// shortcut to a megaflow that sends the packet to port slot `slot` (the caller sends
    /// it); `None` when the packet was queued for recirculation or dropped.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn ct_then_recirc(
        &mut self,
        t: &Conntrack,
        run: &mut CtRecirc<'_>,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        offs: Offsets,
        mut pkt: Packet,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) -> Option<(u16, Packet)> {
        t.execute_flow_cached(
            &mut self.ct_cache,
            pkt.data_mut(),
            key,
            &offs,
            &run.req,
            now_ms,
            &mut run.res,
        );
        let res = &run.res;
        self.stats.ct_executions += 1;
        let clean = crate::ct::left_bytes(run.ct, res).then_some(offs);
        if self.depth >= MAX_RECIRC_DEPTH {
            self.stats.recirc_too_deep += 1;
            out.drop_packet(pkt, pool);
            return None;
        }
        self.stats.recirculations += 1;
        if clean.is_some() && self.recirc.is_empty() {
            if !self.next.current(&run.plan) {
                run.plan = self.next.plan(run.m, run.id);
            }
            let view = RecircWords::new(key, run.id, Some(res));
            if let Some((m, port)) = self.next.find_planned(&run.plan, &view) {
                // The recirculated pass, as its first lookup stage would have made it.
                m.account(1, pkt.len() as u64, now_ms);
                self.stats.megaflow_hits += 1;
                self.stats.recirc_shortcuts += 1;
                match self.slot(port) {
                    Some(slot) => return Some((slot, pkt)),
                    None => {
                        self.stats.unknown_port += 1;
                        out.drop_packet(pkt, pool);
                        return None;
                    }
                }
            }
        }
        // A frame whose FTP message was rewritten under NAT to another length (the tracker
        // rewrites only translated connections, so such a frame is never `clean` and never
        // takes the shortcut above: the test stays off the established path).
        if res.resize != 0 {
            pkt = crate::ct::resized(pkt, res.resize);
        }
        self.push_recirc(key, clean, run.id, Some(res), in_slot, pkt);
        None
    }
}
