//! Recirculation ids: where a packet resumes after `ct(table=N)`.
//!
//! A `ct(..., table=N)` ends the datapath pass: the datapath tracks the packet and
//! re-injects it with a fresh `recirc_id` and its connection-tracking fields, and the
//! pipeline resumes in table N with the pipeline state the packet had (registers and
//! `metadata`), which the datapath does not carry. That state is *frozen* here: the first
//! translation that needs it gets an id, every later translation with the same state gets
//! the same id (so megaflows, keyed on `recirc_id`, stay few), and the translation of the
//! re-injected packet reads it back. Ids are never reused while the bridge lives; the
//! table is bounded ([`MAX_IDS`]) and a translation that would exceed it fails (the
//! packet is dropped and the trace says why).
//!
//! The table also holds the bridge's continuation key ([`RecircIds::key`]): 16 random bytes
//! drawn when the bridge's state is created, which every continuation of a paused pipeline
//! carries (see [`crate::continuation`]), so that one from another bridge or an earlier
//! process is refused as stale.
//!
//! Threading: a mutex held for a hash-map probe, only by translations (the handler thread,
//! the uncached pipeline, traces), never by the poll threads' cached path.

use std::collections::HashMap;
use std::sync::Mutex;

/// Most frozen states a bridge keeps.
pub const MAX_IDS: usize = 65_536;

/// The pipeline state a recirculated packet resumes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frozen {
    /// Table to resume in.
    pub table: u8,
    /// `reg0`..`reg15` at the `ct`.
    pub regs: [u32; packet::flow::N_REGS],
    /// `metadata` at the `ct`.
    pub metadata: u64,
}

#[derive(Default)]
struct Inner {
    by_state: HashMap<Frozen, u32>,
    by_id: HashMap<u32, Frozen>,
}

/// See the module documentation.
pub struct RecircIds {
    inner: Mutex<Inner>,
    key: [u8; 16],
}

impl Default for RecircIds {
    fn default() -> RecircIds {
        RecircIds {
            inner: Mutex::default(),
            key: random_key(),
        }
    }
}

/// 16 unpredictable bytes: the standard library's per-process random hash keys, mixed with
/// the time and a counter so that two bridges of one process differ.
fn random_key() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut out = [0u8; 16];
    for (i, half) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_u128(t);
        h.write_usize(i);
        half.copy_from_slice(&h.finish().to_be_bytes());
    }
    out
}

impl RecircIds {
    /// The id of `state`, allocated on first use; `None` when the table is full.
    pub fn id(&self, state: &Frozen) -> Option<u32> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = g.by_state.get(state) {
            return Some(*id);
        }
        if g.by_id.len() >= MAX_IDS {
            return None;
        }
        // Ids start at 1 (0 is "not recirculated").
        let id = g.by_id.len() as u32 + 1;
        g.by_state.insert(*state, id);
        g.by_id.insert(id, *state);
        Some(id)
    }

    /// The bridge's continuation key (see the module documentation).
    pub fn key(&self) -> [u8; 16] {
        self.key
    }

    /// The state `id` stands for.
    pub fn get(&self, id: u32) -> Option<Frozen> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.by_id.get(&id).copied()
    }

    /// Ids in use.
    pub fn len(&self) -> usize {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.by_id.len()
    }

    /// True when no id was allocated.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_state_same_id() {
        let r = RecircIds::default();
        let a = Frozen {
            table: 1,
            regs: [0; packet::flow::N_REGS],
            metadata: 0,
        };
        let mut b = a;
        b.regs[3] = 7;
        let ia = r.id(&a).unwrap();
        let ib = r.id(&b).unwrap();
        assert_ne!(ia, ib);
        assert_ne!(ia, 0);
        assert_eq!(r.id(&a), Some(ia));
        assert_eq!(r.get(ib), Some(b));
        assert_eq!(r.get(999), None);
        assert_eq!(r.len(), 2);
    }
}
