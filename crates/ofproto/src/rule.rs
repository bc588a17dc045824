//! OpenFlow rules (flow entries) and their counters.
//!
//! A [`Rule`] is immutable once published: a modify that changes a rule's instructions
//! publishes a new `Rule` with the same id that shares the old one's [`RuleStats`], so
//! counters survive the change (unless `reset_counts` asks otherwise) and any datapath
//! thread still holding the old `Arc` credits the same counters. Counters are atomics so
//! crediting needs only `&Rule`.

use openflow::{FlowModFlags, Instruction, Match};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Packet/byte counters and last-use time of a rule, shared across its versions.
#[derive(Debug, Default)]
pub struct RuleStats {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    /// Milliseconds (the switch's clock) of the last packet; 0 = never.
    pub used_ms: AtomicU64,
}

impl RuleStats {
    /// Adds `packets`/`bytes` seen at `now_ms`.
    pub fn credit(&self, packets: u64, bytes: u64, now_ms: u64) {
        self.packets.fetch_add(packets, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.used_ms.fetch_max(now_ms, Ordering::Relaxed);
    }

    /// (packets, bytes, used_ms).
    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.packets.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            self.used_ms.load(Ordering::Relaxed),
        )
    }

    /// Zeroes the counters (not the last-use time).
    pub fn reset(&self) {
        self.packets.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
    }
}

/// One flow entry.
#[derive(Debug)]
pub struct Rule {
    /// Unique for the life of the switch; kept across modifies.
    pub id: u64,
    pub table_id: u8,
    pub priority: u16,
    /// The match as OpenFlow gave it. Its masked flow key lives in the table's classifier
    /// (`Table::entry`, `Table::rule_matches`), not here: rules are many.
    pub match_: Match,
    pub cookie: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: FlowModFlags,
    pub instructions: Vec<Instruction>,
    /// When the entry was added (ms); modifies keep it.
    pub created_ms: u64,
    /// When a modify last changed it (ms).
    pub modified_ms: u64,
    pub stats: Arc<RuleStats>,
}

impl Rule {
    /// Credits `packets`/`bytes` seen at `now_ms`, honouring the rule's `no_packet_counts`
    /// and `no_byte_counts` flags (the last-use time is always kept: idle timeouts need it).
    pub fn credit(&self, packets: u64, bytes: u64, now_ms: u64) {
        let p = if self.flags.contains(FlowModFlags::NO_PKT_COUNTS) {
            0
        } else {
            packets
        };
        let b = if self.flags.contains(FlowModFlags::NO_BYT_COUNTS) {
            0
        } else {
            bytes
        };
        self.stats.credit(p, b, now_ms);
    }

    /// True if any instruction outputs to `port` (an `out_port` filter): an output or
    /// `enqueue` action to it in apply- or write-actions, nested lists (`clone(...)`) included, and a
    /// `controller` action for `CONTROLLER`, as OVS 3.1 selects flows. An output to a
    /// register's port never matches (its port is known only per packet).
    pub fn outputs_to(&self, port: u32) -> bool {
        fn walk(acts: &[openflow::Action], port: u32) -> bool {
            acts.iter().any(|a| match a {
                openflow::Action::Output { port: p, .. }
                | openflow::Action::Enqueue { port: p, .. } => *p == port,
                openflow::Action::Controller(_) => port == openflow::actions::OFPP_CONTROLLER,
                // Nesting is bounded when the flow_mod is validated.
                openflow::Action::Clone(inner) => walk(inner, port),
                openflow::Action::Ct(ct) => walk(&ct.actions, port),
                _ => false,
            })
        }
        self.instructions.iter().any(|i| match i {
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => walk(a, port),
            _ => false,
        })
    }

    /// True if any instruction sends to group `g`, directly or inside a nested action list
    /// (`clone(...)`), as OVS counts a flow's groups: such a rule goes with the group, and
    /// `out_group` selects it.
    pub fn uses_group(&self, g: u32) -> bool {
        let mut hit = false;
        self.each_group(|x| hit |= x == g);
        hit
    }

    /// Calls `f` with the group of each group action of the rule's apply-actions and
    /// write-actions, nested lists included: once per action, so a rule naming a group
    /// twice gives it twice (OVS's group `ref_count` counts so).
    pub fn each_group(&self, mut f: impl FnMut(u32)) {
        fn walk(acts: &[openflow::Action], f: &mut impl FnMut(u32)) {
            for a in acts {
                match a {
                    openflow::Action::Group(g) => f(*g),
                    // Nesting is bounded when the flow_mod is validated.
                    openflow::Action::Clone(inner) => walk(inner, f),
                    openflow::Action::Ct(ct) => walk(&ct.actions, f),
                    _ => {}
                }
            }
        }
        for i in &self.instructions {
            if let Instruction::ApplyActions(a) | Instruction::WriteActions(a) = i {
                walk(a, &mut f);
            }
        }
    }

    /// The meter this rule's instructions name, if any (the meter instruction, else an
    /// OpenFlow 1.5 meter action).
    pub fn meter(&self) -> Option<u32> {
        self.instructions
            .iter()
            .find_map(|i| match i {
                Instruction::Meter(m) => Some(*m),
                _ => None,
            })
            .or_else(|| {
                self.actions().find_map(|a| match a {
                    openflow::Action::Meter(m) => Some(*m),
                    _ => None,
                })
            })
    }

    /// Every action in apply-actions and write-actions instructions.
    pub fn actions(&self) -> impl Iterator<Item = &openflow::Action> {
        self.instructions.iter().flat_map(|i| match i {
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => a.as_slice(),
            _ => &[],
        })
    }
}
