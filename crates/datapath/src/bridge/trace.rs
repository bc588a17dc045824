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

use std::collections::VecDeque;
use std::fmt::Write as _;

/// Records kept per bridge and poll thread.
pub const MAX_RECORDS: usize = 1024;

/// What happened to one traced packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Packets traced on this bridge and thread before this one.
    pub seq: u64,
    /// The ingress port's name.
    pub in_port: String,
    /// The frame's length.
    pub len: usize,
    /// The module's decision, in its words.
    pub decision: String,
    /// The ports the packet (or its copies) was queued for, in the order sent.
    pub outputs: Vec<String>,
    /// The module dropped it.
    pub dropped: bool,
}

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
/// [`super::Bridge::module_command`]).
pub const COMMANDS: &[crate::module::ModuleCommand] = &[
    crate::module::ModuleCommand {
        verb: "pmd-trace",
        usage: "BR N",
    },
    crate::module::ModuleCommand {
        verb: "pmd-trace-show",
        usage: "BR",
    },
];

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The records of bridge `br` as text (one line per packet) or as a JSON array.
pub fn render(br: &str, t: Option<&Trace>, json: bool) -> String {
    let empty = VecDeque::new();
    let recs = t.map_or(&empty, |t| &t.records);
    let budget = t.map_or(0, |t| t.budget);
    if json {
        let items: Vec<String> = recs
            .iter()
            .map(|r| {
                let outs: Vec<String> = r.outputs.iter().map(|o| json_str(o)).collect();
                format!(
                    "{{\"seq\":{},\"bridge\":{},\"in_port\":{},\"len\":{},\"decision\":{},\"outputs\":[{}],\"dropped\":{}}}",
                    r.seq,
                    json_str(br),
                    json_str(&r.in_port),
                    r.len,
                    json_str(&r.decision),
                    outs.join(","),
                    r.dropped
                )
            })
            .collect();
        return format!("[{}]\n", items.join(","));
    }
    let mut o = String::new();
    for r in recs {
        let fate = if r.dropped && r.outputs.is_empty() {
            "drop".to_string()
        } else if r.outputs.is_empty() {
            "none (yet)".to_string()
        } else {
            r.outputs.join(",")
        };
        let _ = writeln!(
            o,
            "#{} bridge {br} in_port {} len {}: {} -> {fate}",
            r.seq, r.in_port, r.len, r.decision
        );
    }
    if budget > 0 {
        let _ = writeln!(o, "({budget} more packets to trace)");
    }
    o
}

/// Two threads' `pmd-trace-show` outputs as one (text: one after the other; JSON: one array).
pub fn merge(mut a: String, b: &str, json: bool) -> String {
    if !json {
        a.push_str(b);
        return a;
    }
    let inner = |s: &str| {
        s.trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string()
    };
    let parts: Vec<String> = [inner(&a), inner(b)]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    format!("[{}]\n", parts.join(","))
}
