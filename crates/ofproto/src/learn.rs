//! Flows a `learn` action builds, on their way from the pipeline to the flow table.
//!
//! xlate runs a `learn` against the packet's flow and produces a [`LearnedFlow`]: the
//! table, priority, timeouts, cookie, match and actions of the flow to add (or refresh).
//! It cannot add it itself: translations read a published snapshot of the OpenFlow state
//! and never write. So the flow travels as a datapath action (`DpAction::Learn`), which is
//! cached in the megaflow like any other (the learn's source bits are in the megaflow's
//! mask, so one megaflow stands for one learned flow); each packet that runs it hands the
//! flow to the bridge's learn queue, at most once per [`REFRESH_MS`] per megaflow, and the
//! next write session applies the queue (`Ofproto::apply_learned`): it adds the flow, or
//! refreshes it (its idle timer restarts) when it is already there, as OVS's learned flows
//! are refreshed by the packets of the flow that learned them.

use openflow::actions::{port_from_of10, Subfield};
use openflow::{Action, Match};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// The least time between two hand-overs of one megaflow's learned flow.
pub const REFRESH_MS: u64 = 100;

/// `v` (right-aligned) written into the bits `d` names of the learned match.
pub fn match_bits(m: &mut Match, d: &Subfield, v: u128) {
    if d.is_port16() {
        // The 16-bit OpenFlow 1.0 port view: a whole port number.
        m.set_exact(d.field, u128::from(port_from_of10((v << d.ofs) as u16)));
        return;
    }
    let mask = d.mask();
    let (old_v, old_m) = m.get(d.field).map_or((0, 0), |e| (e.value, e.mask_bits()));
    let mask_all = old_m | mask;
    let value = (old_v & !mask) | ((v << d.ofs) & mask);
    if mask_all == d.field.max() {
        m.set_exact(d.field, value);
    } else {
        m.set_masked(d.field, value, mask_all);
    }
}

/// A flow to learn (see the module documentation).
#[derive(Debug)]
pub struct LearnedFlow {
    pub table_id: u8,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub cookie: u64,
    pub send_flow_rem: bool,
    pub match_: Match,
    pub actions: Vec<Action>,
    /// The most flows of this table and cookie to have (0: no limit).
    pub limit: u32,
    /// When a packet last handed it over (milliseconds; 0: never).
    last_ms: AtomicU64,
}

impl LearnedFlow {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        table_id: u8,
        priority: u16,
        idle_timeout: u16,
        hard_timeout: u16,
        cookie: u64,
        send_flow_rem: bool,
        match_: Match,
        actions: Vec<Action>,
        limit: u32,
    ) -> LearnedFlow {
        LearnedFlow {
            table_id,
            priority,
            idle_timeout,
            hard_timeout,
            cookie,
            send_flow_rem,
            match_,
            actions,
            limit,
            last_ms: AtomicU64::new(0),
        }
    }

    /// Whether a packet at `now_ms` should hand the flow over (the first one does, then at
    /// most one per [`REFRESH_MS`]); claims the slot when it should.
    pub fn due(&self, now_ms: u64) -> bool {
        let last = self.last_ms.load(Ordering::Relaxed);
        if last != 0 && now_ms.saturating_sub(last) < REFRESH_MS {
            return false;
        }
        self.last_ms
            .compare_exchange(last, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    fn parts(&self) -> impl PartialEq + Hash + '_ {
        (
            self.table_id,
            self.priority,
            self.idle_timeout,
            self.hard_timeout,
            self.cookie,
            self.send_flow_rem,
            &self.match_,
            &self.actions,
            self.limit,
        )
    }
}

impl PartialEq for LearnedFlow {
    fn eq(&self, o: &LearnedFlow) -> bool {
        self.parts() == o.parts()
    }
}

impl Eq for LearnedFlow {}

impl Hash for LearnedFlow {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.parts().hash(h);
    }
}
