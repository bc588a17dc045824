//! The recirculation shortcut: a packet whose pass ends in `recirc` (after a `ct`, usually)
//! goes straight to the next pass's megaflow when this poll thread already knows it, instead
//! of being queued, its key written, and looked up again in a batch of its own.
//!
//! What: per recirculation id, the last two megaflows (with a single output) that
//! recirculated packets of that id hit on this thread ([`NextHops`]). When a pass ends in
//! `recirc(id)`, the packet is unchanged since its key was extracted and nothing is queued
//! for recirculation yet, the candidates are checked against the key the packet would be
//! re-injected with, read word by word from the pass's key and the `ct` verdict without
//! writing it (`ct::RecircWords`), each candidate's words sorted once, when it is learned,
//! into those of the pass's key and those of the verdict (`ct::RecircCheck`: the
//! `recirc_id` half and the words a recirculation zeroes settled then, no per-word
//! dispatch per packet); a live megaflow that covers it takes the packet as the
//! recirculated pass would have: its counters count the packet, and the packet goes to its
//! port. Otherwise the packet is queued as before (and the recirculated pass teaches the
//! cache its megaflow).
//!
//! The `[ct, recirc]` loop (`ctrun`) goes one step further for a run of packets of one
//! megaflow: a [`Plan`] of the candidates, made when the run's first packet needs it and
//! again whenever the candidates change, decides each candidate's words of the pass's key
//! once for the whole run where the megaflow's own mask reads all the bits the check reads
//! (every packet of the megaflow has those bits), so that a packet's check is usually one
//! mask and compare of the verdict's first word ([`NextHops::find_planned`]: the same
//! decisions as [`NextHops::find`], in the same order; `tests/ct_skip.rs` pins the plan's
//! parts to the whole check).
//!
//! Why it is the same decision: it is the recirculated pass's first lookup stage (the
//! megaflow the previous packet hit, checked on its mask's words), made earlier. A megaflow
//! is immutable; a changed decision is a new megaflow and the old one is marked dead at once
//! (rule changes, `ct_state`/`ct_mark`/`ct_label`/zone changes are all in the key the
//! candidate is checked against). The recirculated megaflow stays in the cache with its
//! counters, so `dpctl/dump-flows` and the rules' statistics do not change, nor does
//! `ofproto/trace` (the control plane's translation). A packet changed by an action (a
//! rewrite, a translating `ct(nat)`) takes the queue: its key needs a fresh extraction.
//!
//! Order: a packet is only shortcut while nothing is queued for recirculation in this
//! round, so packets of one flow leave in the order they came (one queued, the next
//! shortcut would overtake it).

use crate::ct::{RecircCheck, RecircWords};
use crate::dpcls::Megaflow;
use std::sync::Arc;

/// Recirculation ids kept (direct-mapped by the id's low bits).
const SLOTS: usize = 64;

#[derive(Default)]
struct Slot {
    id: u32,
    /// Most recent first.
    next: [Option<Candidate>; 2],
}

/// A megaflow of the slot's recirculation id, its output port and its compact compare made
/// ready for that id (`ct::RecircCheck`: no per-word dispatch when a packet is checked).
struct Candidate {
    m: Arc<Megaflow>,
    port: u32,
    check: RecircCheck,
}

/// See the module documentation.
pub(super) struct NextHops {
    slots: Box<[Slot]>,
    /// Changes whenever the candidates do: a [`Plan`] made at another one is stale.
    gen: u64,
}

impl Default for NextHops {
    fn default() -> NextHops {
        NextHops {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            gen: 0,
        }
    }
}

/// The candidates of one recirculation id made ready for the packets of one megaflow that
/// recirculate under it ([`NextHops::plan`]): each candidate's check on the pass's words is
/// decided once, where the megaflow's mask reads all the bits it reads (those bits are the
/// same in every packet of the megaflow), and what is left per packet is, most often, one
/// mask and compare of the verdict's first word.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    gen: u64,
    slot: usize,
    tests: [Test; 2],
}

impl Plan {
    /// A plan no [`NextHops`] is at (made on first use).
    pub(super) const STALE: Plan = Plan {
        gen: u64::MAX,
        slot: 0,
        tests: [Test::Never, Test::Never],
    };
}

/// What is left of one candidate's check for each packet of a megaflow.
#[derive(Clone, Copy)]
enum Test {
    /// No packet of the megaflow can match it (or there is no candidate).
    Never,
    /// The pass's words match: the verdict's first word, masked, must equal the value.
    Ct0 { mask: u64, val: u64 },
    /// The whole check (`ct::RecircCheck::covers`).
    Full,
}

impl NextHops {
    /// Notes that a packet recirculated under `m`'s recirculation id hit `m`.
    pub(super) fn learn(&mut self, m: &Arc<Megaflow>) {
        let Some(port) = m.single_output else {
            return;
        };
        let id = m.flow.recirc_id;
        let Some(check) = RecircCheck::new(m.compact_words(), id) else {
            return;
        };
        let Some(s) = self.slots.get_mut(id as usize % SLOTS) else {
            return;
        };
        if s.id != id {
            *s = Slot {
                id,
                next: [None, None],
            };
            self.gen += 1;
        }
        if s.next[0].as_ref().is_some_and(|x| Arc::ptr_eq(&x.m, m)) {
            return;
        }
        self.gen += 1;
        if s.next[1].as_ref().is_some_and(|x| Arc::ptr_eq(&x.m, m)) {
            s.next.swap(0, 1);
            return;
        }
        s.next[1] = s.next[0].take();
        s.next[0] = Some(Candidate {
            m: Arc::clone(m),
            port,
            check,
        });
    }

    /// The live megaflow known for `id` that covers the recirculated key `key`, with its
    /// output port.
    #[inline(always)]
    pub(super) fn find(&self, id: u32, key: &RecircWords<'_>) -> Option<(&Megaflow, u32)> {
        let s = self.slots.get(id as usize % SLOTS)?;
        if s.id != id {
            return None;
        }
        for c in s.next.iter().flatten() {
            if c.check.covers(key) && !c.m.is_dead() {
                return Some((&c.m, c.port));
            }
        }
        None
    }

    /// The candidates of `id` made ready for the packets of `m` ([`Plan`]), `m` being a
    /// megaflow whose packets recirculate under `id`.
    pub(super) fn plan(&self, m: &Megaflow, id: u32) -> Plan {
        let mut plan = Plan {
            gen: self.gen,
            slot: id as usize % SLOTS,
            tests: [Test::Never, Test::Never],
        };
        let Some(s) = self.slots.get(plan.slot).filter(|s| s.id == id) else {
            return plan;
        };
        for (t, c) in plan.tests.iter_mut().zip(&s.next) {
            let Some(c) = c else {
                continue;
            };
            *t = match (c.check.first_on(&m.mask, &m.key), c.check.ct0_only()) {
                (Some(false), _) => Test::Never,
                (Some(true), Some((mask, val))) => Test::Ct0 { mask, val },
                _ => Test::Full,
            };
        }
        plan
    }

    /// True when `plan` was made with the candidates as they are.
    #[inline(always)]
    pub(super) fn current(&self, plan: &Plan) -> bool {
        plan.gen == self.gen
    }

    /// [`NextHops::find`] for a packet of the megaflow that `plan` (current) was made for.
    #[inline(always)]
    pub(super) fn find_planned(
        &self,
        plan: &Plan,
        key: &RecircWords<'_>,
    ) -> Option<(&Megaflow, u32)> {
        let s = self.slots.get(plan.slot)?;
        for (t, c) in plan.tests.iter().zip(&s.next) {
            let hit = match t {
                Test::Never => continue,
                Test::Ct0 { mask, val } => key.ct(0) & mask == *val,
                Test::Full => c.as_ref().is_some_and(|c| c.check.covers(key)),
            };
            if let Some(c) = c.as_ref().filter(|c| hit && !c.m.is_dead()) {
                return Some((&c.m, c.port));
            }
        }
        None
    }

    /// Lets go of dead megaflows (so their memory is freed).
    pub(super) fn purge(&mut self) {
        self.gen += 1;
        for s in self.slots.iter_mut() {
            for n in s.next.iter_mut() {
                if n.as_ref().is_some_and(|c| c.m.is_dead()) {
                    *n = None;
                }
            }
        }
    }

    /// Forgets everything (the megaflow cache was emptied).
    pub(super) fn clear(&mut self) {
        self.gen += 1;
        for s in self.slots.iter_mut() {
            *s = Slot::default();
        }
    }
}
