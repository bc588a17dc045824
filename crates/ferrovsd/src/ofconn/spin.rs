//! A connection reader's short, bounded spin before it sleeps, for peers that talk back to
//! back.
//!
//! `ovs-ofctl add-flows` sends each flow_mod with a barrier and waits for the barrier's
//! reply before it sends the next: 100,000 round trips for 100,000 flows. When the reader
//! sleeps in `read` after each reply, every round trip pays for waking it: on a VM whose idle
//! CPUs halt, the peer's `write` sends an inter-processor interrupt and the reader runs tens
//! of microseconds later. So after a wait that ended soon after it began (the peer is talking
//! back to back), the reader first polls the socket without waiting for up to [`SPIN`],
//! yielding the CPU between polls so anything else runnable on it goes first, and only then
//! sleeps. A wait that ran past [`ARM_WITHIN`] (a peer that pauses, an idle controller)
//! disarms the spin until a wait ends quickly again: an idle connection never spins, and a
//! paused one spins once, for [`SPIN`].

use super::target::Stream;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

/// The longest a reader polls before it sleeps.
pub const SPIN: Duration = Duration::from_micros(50);
/// A wait that ends within this keeps the spin armed for the next one.
pub const ARM_WITHIN: Duration = Duration::from_micros(500);

/// One reader's spin state. See the module documentation.
#[derive(Default)]
pub struct Spin {
    armed: bool,
}

impl Spin {
    /// Reads from `rd` into `buf`: polls for up to [`SPIN`] if armed, then waits as
    /// `rd.read` does (its read timeout applies).
    pub fn read(&mut self, rd: &mut Stream, buf: &mut [u8]) -> std::io::Result<usize> {
        let t0 = Instant::now();
        if self.armed {
            loop {
                match rd.read_now(buf) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    r => return r,
                }
                if t0.elapsed() >= SPIN {
                    break;
                }
                std::thread::yield_now();
            }
        }
        let r = std::io::Read::read(rd, buf);
        self.armed = t0.elapsed() < ARM_WITHIN;
        r
    }
}
