//! The fast-path trace (VPP's `do_trace`): what happened to the next N packets a bridge
//! receives, recorded by the poll thread as it forwards them.
//!
//! What: `ferrovs pmd-trace BR N` arms a budget of N packets on the bridge (on each poll
//! thread that serves it); `ferrovs pmd-trace-show BR` prints one record per traced packet:
//! the bridge, the ingress port, the module's decision (for `openflow`, the cache that
//! answered — EMC, megaflow or upcall — and the datapath actions; for the other modules,
//! the destination they chose), the ports the packet (or its copies) was queued for, or
//! that it was dropped. `pmd-trace BR 0` disarms it and forgets the records.
//!
//! How: while a budget is armed, the bridge runs its traced forwarding pass
//! (`forward_pass::<true>`): each packet goes to the module alone, the module may note its
//! decision ([`crate::module::Delivery::note`]), and the output batches tell where the
//! packet went before they are sent. The untraced pass tests for an armed trace once per
//! batch. A traced packet is sent in a burst of its own; nothing else changes. At most
//! [`MAX_RECORDS`] records are kept (the oldest are dropped first).

pub use crate::report::{ThreadTrace, TraceRecord};
use std::collections::VecDeque;

/// Records kept per bridge and poll thread.
pub const MAX_RECORDS: usize = 1024;

/// A bridge's trace budget and records.
#[derive(Debug, Default)]
pub struct Trace {
    /// Packets still to trace.
    pub budget: u64,
    pub(super) seq: u64,
    pub records: VecDeque<TraceRecord>,
}

impl Trace {
    pub(super) fn push(&mut self, mut r: TraceRecord) {
        r.seq = self.seq;
        self.seq += 1;
        self.budget = self.budget.saturating_sub(1);
        if self.records.len() >= MAX_RECORDS {
            self.records.pop_front();
        }
        self.records.push_back(r);
    }
}

/// The verbs a bridge answers itself, whatever its module (see
/// [`super::Bridge::module_command`]). `pmd-trace-show` is a report
/// ([`crate::Datapath::trace_report`]), laid out by the daemon.
pub const COMMANDS: &[crate::module::ModuleCommand] = &[crate::module::ModuleCommand {
    verb: "pmd-trace",
    usage: "BR N",
}];

/// What one poll thread's trace of a bridge holds (nothing when none was armed).
pub fn report(t: Option<&Trace>) -> ThreadTrace {
    t.map_or_else(ThreadTrace::default, |t| ThreadTrace {
        budget: t.budget,
        records: t.records.iter().cloned().collect(),
    })
}
