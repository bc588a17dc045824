//! The megaflow cache: cached OpenFlow decisions, each valid for every packet that agrees
//! with one flow on the bits of a mask (a *megaflow*), looked up by tuple space search.
//!
//! ## Layout
//! One [`Subtable`] per distinct mask. A subtable keeps the list of key words its mask does
//! not zero out (a "miniflow" of the mask, chosen once when the subtable is created), so a
//! lookup hashes and compares only those words — typically three to six of the key's 26.
//! Entries live in a [`FlowTable`] keyed by that masked hash (seeded per cache, so traffic
//! cannot aim at one bucket).
//!
//! ## Batched lookup
//! [`Dpcls::lookup_batch`] looks a batch of keys up one subtable at a time, in three
//! passes over the keys still unresolved: hash each and prefetch its bucket; read the
//! bucket and prefetch the candidate megaflow; compare. Each packet's memory accesses are
//! issued a whole pass before they are needed, so their latency overlaps the other
//! packets' work instead of stalling one packet after another.
//!
//! Megaflows never overlap in a useful way (any match is a correct match: every megaflow's
//! actions are right for every packet it covers), so a lookup returns the first hit and
//! subtables are simply ranked by how many hits they had: [`Dpcls::rerank`] re-sorts them,
//! busiest first, so the common case probes one subtable.
//!
//! ## Sharing
//! A [`Megaflow`] is shared (`Arc`) between the poll thread's cache, the handler's index and
//! the revalidator. It is immutable except for its counters and its `dead` flag: a changed
//! decision is a new megaflow, and the flag makes a deleted one unusable at once, before the
//! poll thread gets round to unlinking it. Counters are written only by the poll thread (plain
//! load/store on atomics: no lock prefix on the fast path) and read by the revalidator.

use crate::flowtable::{prefetch, FlowTable};
use ofproto::odp::DpAction;
use ofproto::Rule;
use packet::flow::{FlowKey, FLOW_KEY_WORDS};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Words of a flow key.
pub type Words = [u64; FLOW_KEY_WORDS];

/// The most keys [`Dpcls::lookup_batch`] takes at once.
pub const LOOKUP_CHUNK: usize = 64;

/// Key words a megaflow keeps inline for the lookup compare; masks with more non-zero
/// words compare against the full key instead.
pub const INLINE_WORDS: usize = 8;

/// One cached decision. The fields a packet touches come first, in two cache lines (the
/// type is 64-byte aligned): the compact key the lookup compares, then the dead flag, the
/// counters and a single output port.
#[repr(C, align(64))]
pub struct Megaflow {
    /// The masked key's non-zero-mask words, in mask order; `cidx`/`cmask` say which key
    /// words and with what mask (so a key can be checked against this one megaflow cheaply).
    ckey: [u64; INLINE_WORDS],
    pub dead: AtomicBool,
    /// Number of valid words in `ckey` (0 when the mask has more than [`INLINE_WORDS`]).
    n_ckey: u8,
    cidx: [u8; INLINE_WORDS],
    /// The port of the actions when they are exactly one output, else `None`.
    pub single_output: Option<u32>,
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    pub used_ms: AtomicU64,
    cmask: [u64; INLINE_WORDS],
    pub actions: Vec<DpAction>,
    /// The actions' last send that may take the packet without a copy (see
    /// `ofmodule::last_send`), found once here rather than per packet.
    pub last_send: Option<usize>,
    // ---- cold: the slow path's view ----
    pub id: u64,
    /// The flow that was translated (its masked form is `key`).
    pub flow: FlowKey,
    /// `flow & mask`, as words.
    pub key: Words,
    pub mask: Words,
    /// The OpenFlow rules (and group buckets) the decision came from, for statistics.
    pub rules: Vec<Arc<Rule>>,
    pub buckets: Vec<(u32, usize)>,
    /// ofproto version the actions were computed at.
    pub version: AtomicU64,
    pub created_ms: u64,
    /// The poll thread whose cache holds it (each thread has its own copy of a megaflow, so
    /// counting never bounces a cache line between threads).
    pub pmd: u32,
    /// Counters already pushed to the rules.
    pub pushed: Mutex<(u64, u64)>,
}

impl Megaflow {
    /// A live megaflow.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u64,
        flow: FlowKey,
        mask: FlowKey,
        actions: Vec<DpAction>,
        rules: Vec<Arc<Rule>>,
        buckets: Vec<(u32, usize)>,
        version: u64,
        now_ms: u64,
    ) -> Megaflow {
        let m = mask.to_words();
        let mut k = flow.to_words();
        for (a, b) in k.iter_mut().zip(m.iter()) {
            *a &= b;
        }
        let mut ckey = [0u64; INLINE_WORDS];
        let mut cidx = [0u8; INLINE_WORDS];
        let mut cmask = [0u64; INLINE_WORDS];
        let mut n = 0usize;
        let nonzero = m.iter().filter(|w| **w != 0).count();
        if nonzero <= INLINE_WORDS {
            for (i, w) in m.iter().enumerate() {
                if *w != 0 {
                    ckey[n] = k[i];
                    cidx[n] = i as u8;
                    cmask[n] = *w;
                    n += 1;
                }
            }
        }
        // `tnl_push` hands the packet to the tunnel port (which pushes), `tnl_pop` (not
        // NORMAL's, which also learns) to the internal port (whose wrapper pops): each is
        // a single output to the fast paths.
        let single_output = match actions.as_slice() {
            [DpAction::Output(p)] => Some(*p),
            [DpAction::TnlPush(t)] => Some(t.port),
            [DpAction::TnlPop { normal: false, .. }] => Some(ofproto::OFPP_LOCAL),
            _ => None,
        };
        let last_send = crate::ofmodule::last_send(&actions);
        Megaflow {
            dead: AtomicBool::new(false),
            n_ckey: n as u8,
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            used_ms: AtomicU64::new(0),
            single_output,
            ckey,
            cidx,
            cmask,
            actions,
            last_send,
            id,
            flow,
            key: k,
            mask: m,
            rules,
            buckets,
            version: AtomicU64::new(version),
            created_ms: now_ms,
            pmd: 0,
            pushed: Mutex::new((0, 0)),
        }
    }

    /// True if `key` is covered.
    #[inline]
    pub fn covers(&self, key: &Words) -> bool {
        key.iter()
            .zip(self.mask.iter())
            .zip(self.key.iter())
            .all(|((k, m), v)| k & m == *v)
    }

    /// True if `key` is covered, checking only the mask's non-zero words (the fast check the
    /// poll thread makes against the previous packet's megaflow).
    #[inline(always)]
    pub fn covers_fast(&self, key: &Words) -> bool {
        let n = usize::from(self.n_ckey);
        if n == 0 {
            return self.covers(key);
        }
        let mut same = true;
        for j in 0..n {
            let i = usize::from(self.cidx[j]);
            same &= key
                .get(i)
                .is_some_and(|w| w & self.cmask[j] == self.ckey[j]);
        }
        same
    }

    /// [`Megaflow::covers_fast`] for a key given word by word (`word(i)` is word `i`),
    /// which need not exist as a key; `None` when this megaflow keeps no compact key (its
    /// mask has more than [`INLINE_WORDS`] non-zero words).
    #[inline(always)]
    pub fn covers_words(&self, word: impl Fn(usize) -> u64) -> Option<bool> {
        let n = usize::from(self.n_ckey);
        if n == 0 {
            return None;
        }
        let mut same = true;
        for j in 0..n {
            same &= word(usize::from(self.cidx[j])) & self.cmask[j] == self.ckey[j];
        }
        Some(same)
    }

    /// The compact compare's words, `(key word, mask, masked value)` in mask order; none
    /// when this megaflow keeps no compact key (see [`Megaflow::covers_words`]).
    pub fn compact_words(&self) -> impl Iterator<Item = (usize, u64, u64)> + '_ {
        let n = usize::from(self.n_ckey);
        (0..n).map(|j| (usize::from(self.cidx[j]), self.cmask[j], self.ckey[j]))
    }

    /// Adds `packets`/`bytes` used at `now_ms`. Single writer (the poll thread).
    #[inline]
    pub fn account(&self, packets: u64, bytes: u64, now_ms: u64) {
        let p = self.packets.load(Ordering::Relaxed);
        self.packets.store(p + packets, Ordering::Relaxed);
        let b = self.bytes.load(Ordering::Relaxed);
        self.bytes.store(b + bytes, Ordering::Relaxed);
        self.used_ms.store(now_ms, Ordering::Relaxed);
    }

    /// True once deleted.
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    // Multiply, then fold the high half down: a multiply alone only moves entropy upward,
    // and the varying part of a key word is often its top bytes (an address).
    let x = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 32)
}

#[inline(always)]
fn finish(h: u64) -> u64 {
    let mut x = h ^ (h >> 33);
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// All megaflows sharing one mask.
pub struct Subtable {
    pub mask: Words,
    /// Indices of the mask's non-zero words (`n_idx` of them; a key has at most 26).
    idx: [u8; FLOW_KEY_WORDS],
    n_idx: usize,
    /// The mask's non-zero words, in `idx` order (the first [`INLINE_WORDS`]).
    cmask: [u64; INLINE_WORDS],
    table: FlowTable,
    seed: u64,
    pub hits: std::cell::Cell<u64>,
}

impl Subtable {
    fn new(mask: Words, seed: u64) -> Subtable {
        let mut idx = [0u8; FLOW_KEY_WORDS];
        let mut cmask = [0u64; INLINE_WORDS];
        let mut n_idx = 0;
        for (i, m) in mask.iter().enumerate() {
            if *m != 0 {
                idx[n_idx] = i as u8;
                if let Some(c) = cmask.get_mut(n_idx) {
                    *c = *m;
                }
                n_idx += 1;
            }
        }
        Subtable {
            mask,
            idx,
            n_idx,
            cmask,
            table: FlowTable::new(),
            seed,
            hits: std::cell::Cell::new(0),
        }
    }

    #[inline(always)]
    fn hash_key(&self, key: &Words) -> u64 {
        let mut h = self.seed;
        for &i in &self.idx[..self.n_idx] {
            let i = usize::from(i);
            h = mix(h, key[i] & self.mask[i]);
        }
        finish(h)
    }

    /// [`Subtable::hash_key`] for a mask of exactly `N` non-zero words (`N` known at
    /// compile time: the loop unrolls and the word list stays in registers).
    #[inline(always)]
    fn hash_n<const N: usize>(&self, key: &Words) -> u64 {
        let mut h = self.seed;
        for j in 0..N {
            let i = usize::from(self.idx[j]);
            h = mix(h, key[i] & self.cmask[j]);
        }
        finish(h)
    }

    /// [`Subtable::matches`] for a mask of exactly `N` (at most [`INLINE_WORDS`]) words.
    #[inline(always)]
    fn matches_n<const N: usize>(&self, m: &Megaflow, key: &Words) -> bool {
        let mut same = true;
        for j in 0..N {
            let i = usize::from(self.idx[j]);
            same &= key[i] & self.cmask[j] == m.ckey[j];
        }
        same
    }

    /// One subtable's part of [`Dpcls::lookup_batch`], specialised by mask size: `N` is
    /// the number of non-zero mask words, or 0 for the general form.
    #[inline(always)]
    fn probe_batch<'a, const N: usize>(
        &'a self,
        keys: &[FlowKey],
        todo: &mut [u8; LOOKUP_CHUNK],
        n_todo: &mut usize,
        found: &mut [Option<&'a Arc<Megaflow>>; LOOKUP_CHUNK],
        hashes: &mut [u64; LOOKUP_CHUNK],
    ) -> u64 {
        let n = (*n_todo).min(LOOKUP_CHUNK);
        let hash = |k: &Words| {
            if N == 0 {
                self.hash_key(k)
            } else {
                self.hash_n::<N>(k)
            }
        };
        let same = |m: &Megaflow, k: &Words| {
            if N == 0 || usize::from(m.n_ckey) != N {
                self.matches(m, k)
            } else {
                self.matches_n::<N>(m, k)
            }
        };
        // Pass 1: hash on this mask; fetch the bucket.
        for &i in &todo[..n] {
            let i = usize::from(i) % LOOKUP_CHUNK;
            if let Some(k) = keys.get(i) {
                let h = hash(k.as_words());
                hashes[i] = h;
                self.table.prefetch(h);
            }
        }
        // Pass 2: the entry with that hash, if any; fetch the megaflow.
        for &i in &todo[..n] {
            let i = usize::from(i) % LOOKUP_CHUNK;
            let c = self.table.first(hashes[i]);
            if let Some(m) = c {
                // Both hot lines: the compact key, then the flag and counters.
                let p = Arc::as_ptr(m).cast::<u8>();
                prefetch(p);
                prefetch(p.wrapping_add(64));
            }
            found[i] = c;
        }
        // Pass 3: compare; what did not match stays on the list.
        let mut kept = 0;
        let mut hits = 0;
        for t in 0..n {
            let i = usize::from(todo[t]) % LOOKUP_CHUNK;
            let Some(key) = keys.get(i).map(|k| k.as_words()) else {
                found[i] = None;
                continue;
            };
            let hit = match found[i] {
                Some(m) if same(m, key) => Some(m),
                // Another entry with the same hash: look for the key's own.
                Some(_) => self.table.find(hashes[i], |m| self.matches(m, key)),
                None => None,
            };
            match hit {
                Some(m) if !m.is_dead() => {
                    hits += 1;
                    found[i] = Some(m);
                }
                _ => {
                    found[i] = None;
                    todo[kept] = todo[t];
                    kept += 1;
                }
            }
        }
        self.hits.set(self.hits.get() + hits);
        *n_todo = kept;
        n as u64
    }

    #[inline(always)]
    fn hash_masked(&self, masked: &Words) -> u64 {
        let mut h = self.seed;
        for &i in &self.idx[..self.n_idx] {
            h = mix(h, masked[usize::from(i)]);
        }
        finish(h)
    }

    #[inline(always)]
    fn find(&self, key: &Words) -> Option<&Arc<Megaflow>> {
        let h = self.hash_key(key);
        self.table.find(h, |m| self.matches(m, key))
    }

    /// True if megaflow `m` of this subtable covers `key`.
    #[inline(always)]
    fn matches(&self, m: &Megaflow, key: &Words) -> bool {
        let n = self.n_idx;
        if n <= INLINE_WORDS && usize::from(m.n_ckey) == n {
            // A plain loop, not a slice compare: that would call memcmp.
            let mut same = true;
            for j in 0..n {
                let i = usize::from(self.idx[j]);
                same &= key[i] & self.mask[i] == m.ckey[j];
            }
            return same;
        }
        self.idx[..n].iter().all(|&i| {
            let i = usize::from(i);
            key[i] & self.mask[i] == m.key[i]
        })
    }

    /// Number of megaflows.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// The megaflow classifier. Owned by one thread; see the module documentation.
pub struct Dpcls {
    subtables: Vec<Subtable>,
    count: usize,
    /// Seed of every subtable's hash.
    seed: u64,
}

impl Default for Dpcls {
    fn default() -> Self {
        Dpcls::new()
    }
}

impl Dpcls {
    /// An empty cache with a random hash seed.
    pub fn new() -> Dpcls {
        use std::hash::BuildHasher;
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x243f_6a88_u64);
        Dpcls {
            subtables: Vec::new(),
            count: 0,
            seed,
        }
    }

    /// Number of megaflows.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of subtables (distinct masks).
    pub fn n_subtables(&self) -> usize {
        self.subtables.len()
    }

    /// Finds a live megaflow covering `key`; also returns how many subtables were probed.
    #[inline]
    pub fn lookup(&self, key: &Words) -> (Option<&Arc<Megaflow>>, u32) {
        let mut probed = 0;
        for st in self.subtables.iter() {
            probed += 1;
            if let Some(m) = st.find(key) {
                if !m.is_dead() {
                    st.hits.set(st.hits.get() + 1);
                    return (Some(m), probed);
                }
            }
        }
        (None, probed)
    }

    /// Looks up several keys at once (see the module documentation). `keys` are the
    /// batch's keys (at most [`LOOKUP_CHUNK`]); `todo[..*n_todo]` lists the indices still to
    /// resolve. Each one found is written to `found` and taken off the list; what remains
    /// on it found nothing. Returns the number of subtable probes made.
    pub fn lookup_batch<'a>(
        &'a self,
        keys: &[FlowKey],
        todo: &mut [u8; LOOKUP_CHUNK],
        n_todo: &mut usize,
        found: &mut [Option<&'a Arc<Megaflow>>; LOOKUP_CHUNK],
    ) -> u64 {
        let mut hashes = [0u64; LOOKUP_CHUNK];
        let mut probed = 0u64;
        let keys = &keys[..keys.len().min(LOOKUP_CHUNK)];
        const _: () = assert!(INLINE_WORDS == 8);
        for st in self.subtables.iter() {
            if *n_todo == 0 {
                break;
            }
            let (t, f, h) = (&mut *todo, &mut *found, &mut hashes);
            probed += match st.n_idx {
                1 => st.probe_batch::<1>(keys, t, n_todo, f, h),
                2 => st.probe_batch::<2>(keys, t, n_todo, f, h),
                3 => st.probe_batch::<3>(keys, t, n_todo, f, h),
                4 => st.probe_batch::<4>(keys, t, n_todo, f, h),
                5 => st.probe_batch::<5>(keys, t, n_todo, f, h),
                6 => st.probe_batch::<6>(keys, t, n_todo, f, h),
                7 => st.probe_batch::<7>(keys, t, n_todo, f, h),
                8 => st.probe_batch::<8>(keys, t, n_todo, f, h),
                _ => st.probe_batch::<0>(keys, t, n_todo, f, h),
            };
        }
        probed
    }

    /// Like [`Dpcls::lookup`] without counting hits (for readers that do not own the
    /// ranking).
    pub fn peek(&self, key: &Words) -> Option<&Arc<Megaflow>> {
        self.subtables
            .iter()
            .filter_map(|st| st.find(key))
            .find(|m| !m.is_dead())
    }

    /// Inserts a megaflow. A live megaflow with the same mask and key is replaced.
    pub fn insert(&mut self, mf: Arc<Megaflow>) {
        let si = match self.subtables.iter().position(|s| s.mask == mf.mask) {
            Some(i) => i,
            None => {
                self.subtables.push(Subtable::new(mf.mask, self.seed));
                self.subtables.len() - 1
            }
        };
        let st = &mut self.subtables[si];
        let h = st.hash_masked(&mf.key);
        let key = mf.key;
        let before = st.table.len();
        st.table.upsert(h, mf, |m| m.key == key);
        self.count += st.table.len() - before;
    }

    /// Removes the megaflow with this mask, key and id. Returns true if it was there.
    pub fn remove(&mut self, mf: &Megaflow) -> bool {
        let Some(si) = self.subtables.iter().position(|s| s.mask == mf.mask) else {
            return false;
        };
        let st = &mut self.subtables[si];
        let h = st.hash_masked(&mf.key);
        let (key, id) = (mf.key, mf.id);
        let removed = st.table.remove(h, |m| m.key == key && m.id == id);
        if removed {
            self.count -= 1;
            if st.table.is_empty() {
                self.subtables.remove(si);
            }
        }
        removed
    }

    /// Drops every dead megaflow. Returns how many.
    pub fn sweep(&mut self) -> usize {
        let mut n = 0;
        for st in self.subtables.iter_mut() {
            let before = st.table.len();
            st.table.retain(|m| !m.is_dead());
            n += before - st.table.len();
        }
        self.subtables.retain(|s| !s.table.is_empty());
        self.count -= n;
        n
    }

    /// Re-sorts subtables by hits (busiest first) and halves the counts, so the ranking
    /// follows the recent traffic.
    pub fn rerank(&mut self) {
        self.subtables
            .sort_by_key(|s| std::cmp::Reverse(s.hits.get()));
        for s in self.subtables.iter_mut() {
            s.hits.set(s.hits.get() / 2);
        }
    }

    /// Every megaflow.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Megaflow>> {
        self.subtables.iter().flat_map(|s| s.table.iter())
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        for m in self.iter() {
            m.dead.store(true, Ordering::Release);
        }
        self.subtables.clear();
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mf(id: u64, dst: [u8; 4], plen: u32, port: u32) -> Arc<Megaflow> {
        let flow = FlowKey {
            in_port: 1,
            dl_type: 0x0800,
            nw_dst: dst,
            ..FlowKey::ZERO
        };
        let m = if plen == 0 {
            0
        } else {
            u32::MAX << (32 - plen)
        };
        let mask = FlowKey {
            in_port: u32::MAX,
            dl_type: 0xffff,
            nw_dst: m.to_be_bytes(),
            ..FlowKey::ZERO
        };
        Arc::new(Megaflow::new(
            id,
            flow,
            mask,
            vec![DpAction::Output(port)],
            vec![],
            vec![],
            1,
            0,
        ))
    }

    fn key(dst: [u8; 4]) -> Words {
        FlowKey {
            in_port: 1,
            dl_type: 0x0800,
            nw_dst: dst,
            nw_ttl: 64,
            tp_src: 99,
            ..FlowKey::ZERO
        }
        .to_words()
    }

    #[test]
    fn lookup_insert_remove_sweep() {
        let mut d = Dpcls::new();
        d.insert(mf(1, [10, 0, 0, 1], 32, 2));
        d.insert(mf(2, [10, 1, 0, 0], 16, 3));
        assert_eq!(d.len(), 2);
        assert_eq!(d.n_subtables(), 2);
        let (m, _) = d.lookup(&key([10, 0, 0, 1]));
        assert_eq!(m.map(|m| m.id), Some(1));
        let (m, _) = d.lookup(&key([10, 1, 200, 7]));
        assert_eq!(m.map(|m| m.id), Some(2));
        assert!(d.lookup(&key([10, 2, 0, 1])).0.is_none());
        // A dead megaflow is never returned, even before it is swept.
        let a = d.peek(&key([10, 0, 0, 1])).cloned().expect("a");
        a.dead.store(true, Ordering::Release);
        assert!(d.lookup(&key([10, 0, 0, 1])).0.is_none());
        assert_eq!(d.sweep(), 1);
        assert_eq!(d.n_subtables(), 1);
        let b = d.peek(&key([10, 1, 0, 0])).cloned().expect("b");
        assert!(d.remove(&b));
        assert!(d.is_empty());
    }

    #[test]
    fn keys_differing_only_in_high_bytes_spread_over_the_table() {
        // Addresses vary in the high bytes of their key word; their hashes must still vary
        // in the low bits a hash table indexes with.
        let st = Subtable::new(mf(0, [10, 0, 0, 0], 32, 1).mask, 0x243f_6a88_85a3_08d3);
        let mut low = std::collections::HashSet::new();
        for i in 0..4096u32 {
            let b = i.to_be_bytes();
            low.insert(st.hash_key(&key([10, 0, b[2], b[3]])) & 0xfff);
        }
        assert!(
            low.len() > 2500,
            "only {} distinct low-12-bit values",
            low.len()
        );
    }

    #[test]
    fn rerank_puts_busy_subtables_first() {
        let mut d = Dpcls::new();
        d.insert(mf(1, [10, 0, 0, 1], 32, 2));
        d.insert(mf(2, [10, 1, 0, 0], 16, 3));
        for _ in 0..10 {
            d.lookup(&key([10, 1, 0, 5]));
        }
        d.rerank();
        let (_, probed) = d.lookup(&key([10, 1, 0, 5]));
        assert_eq!(probed, 1);
    }

    #[test]
    fn batched_lookup_agrees_with_single_lookups() {
        let mut d = Dpcls::new();
        let mut id = 0;
        for a in 0..40u8 {
            for b in 0..25u8 {
                id += 1;
                d.insert(mf(id, [10, 0, a, b], 32, 2));
            }
            id += 1;
            d.insert(mf(id, [10, 1, a, 0], 24, 3));
        }
        id += 1;
        d.insert(mf(id, [10, 2, 0, 0], 16, 4));
        // Some dead entries: never returned, by either path.
        for k in [[10, 0, 3, 3], [10, 1, 7, 0]] {
            let m = d.peek(&key(k)).cloned().expect("present");
            m.dead.store(true, Ordering::Release);
        }
        let mut x = 12345u32;
        for _round in 0..50 {
            let keys: Vec<FlowKey> = (0..LOOKUP_CHUNK)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let b = x.to_be_bytes();
                    FlowKey {
                        in_port: 1,
                        dl_type: 0x0800,
                        nw_dst: [10, b[0] % 4, b[1] % 48, b[2] % 30],
                        ..FlowKey::ZERO
                    }
                })
                .collect();
            let mut todo = [0u8; LOOKUP_CHUNK];
            for (i, t) in todo.iter_mut().enumerate() {
                *t = i as u8;
            }
            let mut n = LOOKUP_CHUNK;
            let mut found = [None; LOOKUP_CHUNK];
            let probes = d.lookup_batch(&keys, &mut todo, &mut n, &mut found);
            assert!(probes >= LOOKUP_CHUNK as u64);
            let mut misses = 0;
            for (i, k) in keys.iter().enumerate() {
                let single = d.lookup(&k.to_words()).0.map(|m| m.id);
                assert_eq!(found[i].map(|m| m.id), single, "key {i}");
                misses += usize::from(single.is_none());
            }
            assert_eq!(n, misses);
            for &i in &todo[..n] {
                assert!(found[usize::from(i)].is_none());
            }
        }
    }
}
