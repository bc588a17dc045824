//! The datapath's monotonic clock, shared by every thread (poll, handler, revalidator) so
//! that timestamps they exchange compare meaningfully.

use std::sync::OnceLock;
use std::time::Instant;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Milliseconds since the first call in this process.
#[inline]
pub fn now_ms() -> u64 {
    origin().elapsed().as_millis() as u64
}
