//! Single-pass encapsulation: outer bursts handed to the underlay bridge on the poll thread
//! that encapsulated them, instead of through the underlay port's receive queue.
//!
//! ## What
//! Without this, a tunnel port's outer packets cross to the underlay's internal port through
//! its queue ([`super::table::Bursts`]) and are received there, on queue 0, by whichever
//! poll thread holds it, which then runs the underlay bridge's whole pipeline on them
//! (extraction and lookup, packet by packet): two datapath passes. While a poll thread has
//! opened a [`Scope`] (the datapath does so around each poll), a tunnel port's transmit
//! instead leaves each outer burst here, in the thread's own hand-over list, and the
//! datapath takes it ([`take`]) right after the bridge's pass and forwards it through the
//! underlay bridge's copy on the same thread. A burst whose packets share one outer header
//! template and a fixed TOS is marked [`Handover::uniform`]: its packets differ only in the
//! UDP source port, the lengths and the checksums, so the underlay bridge may decide once
//! for the whole burst (see `datapath`'s `SwitchLogic::forward_uniform`).
//!
//! ## Invariants
//! Nothing waits and nothing allocates once warm: the list keeps its capacity, and a
//! burst's batch is the underlay queue's spare batch, recycled there ([`recycle`]). Outside
//! a scope (control-plane packet-outs, tests of this crate) transmit uses the queue, as
//! before. The list belongs to one thread; nothing here is shared.

use super::table::Underlay;
use packet::{Batch, Pool};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;

/// An outer burst waiting for its underlay bridge (see the module documentation).
pub struct Handover {
    pub underlay: Arc<Underlay>,
    pub batch: Batch,
    /// The packets share one outer header template and a fixed TOS: they differ only in
    /// the UDP source port, lengths and checksums.
    pub uniform: bool,
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LIST: RefCell<VecDeque<Handover>> = const { RefCell::new(VecDeque::new()) };
}

/// While alive, tunnel ports transmitting on this thread leave their outer bursts in the
/// thread's hand-over list; the previous state comes back on drop.
pub struct Scope {
    was: bool,
}

impl Scope {
    /// Opens a scope on the calling thread.
    #[inline]
    pub fn enter() -> Scope {
        Scope {
            was: ON.with(|c| c.replace(true)),
        }
    }
}

impl Drop for Scope {
    #[inline]
    fn drop(&mut self) {
        ON.with(|c| c.set(self.was));
    }
}

/// Leaves `h` in the thread's list if a scope is open; otherwise gives it back.
#[inline]
pub(super) fn offer(h: Handover) -> Result<(), Handover> {
    if !ON.with(Cell::get) {
        return Err(h);
    }
    LIST.with(|l| l.borrow_mut().push_back(h));
    Ok(())
}

/// Whether bursts are waiting in the thread's list.
#[inline]
pub fn pending() -> bool {
    LIST.with(|l| !l.borrow().is_empty())
}

/// The oldest waiting burst of the thread's list.
#[inline]
pub fn take() -> Option<Handover> {
    LIST.with(|l| l.borrow_mut().pop_front())
}

/// Sends `h` the two-pass way: onto its underlay port's receive queue (for a burst whose
/// underlay bridge is not served by this thread). Counts and frees the packets if the
/// queue is full.
pub fn queue(h: Handover, pool: &mut Pool) {
    let _ = h.underlay.inject.send(h.batch, pool);
}

/// Gives a forwarded burst's emptied batch back to its underlay queue for reuse.
#[inline]
pub fn recycle(underlay: &Underlay, mut batch: Batch, pool: &mut Pool) {
    pool.free_batch(&mut batch);
    underlay.inject.recycle(batch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_stay_on_the_thread_only_inside_a_scope() {
        let u = super::super::table::add_underlay("direct-test0", [2, 0, 0, 0, 0, 1]);
        let h = || Handover {
            underlay: Arc::clone(&u),
            batch: Batch::new(),
            uniform: true,
        };
        assert!(offer(h()).is_err());
        {
            let _s = Scope::enter();
            assert!(offer(h()).is_ok());
            {
                let _inner = Scope::enter();
                assert!(offer(h()).is_ok());
            }
            // The outer scope is still open.
            assert!(offer(h()).is_ok());
        }
        assert!(offer(h()).is_err());
        assert!(pending());
        let mut n = 0;
        while take().is_some() {
            n += 1;
        }
        assert_eq!(n, 3);
        assert!(!pending());
        // Another thread has its own list.
        std::thread::spawn(|| assert!(!pending()))
            .join()
            .expect("thread");
    }
}
