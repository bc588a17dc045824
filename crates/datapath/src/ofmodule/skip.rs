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
}

impl Default for NextHops {
    fn default() -> NextHops {
        NextHops {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
        }
    }
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
        }
        if s.next[0].as_ref().is_some_and(|x| Arc::ptr_eq(&x.m, m)) {
            return;
        }
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

    /// Lets go of dead megaflows (so their memory is freed).
    pub(super) fn purge(&mut self) {
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
        for s in self.slots.iter_mut() {
            *s = Slot::default();
        }
    }
}
