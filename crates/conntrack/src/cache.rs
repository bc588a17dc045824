//! # A poll thread's cache of connections
//!
//! ## What
//! [`ConnCache`] remembers, for one thread, the connections its packets found lately, by
//! key hash, so that a packet of an established connection finds it without taking the
//! table shard's read lock ([`crate::table`]): on one core those two atomic operations are
//! about a tenth of a packet's whole cost through a `ct` pipeline at 1K connections (W8 in
//! docs/benchmarks.md), and with several poll threads the lock word is a shared line. The
//! tracker uses it through [`crate::Conntrack::execute_cached`]; everything else about a
//! packet (the connection's mutex, its state, NAT) is as without it.
//!
//! ## How
//! 1024 buckets of four entries, one cache line each; an entry holds the connection, which
//! direction the key was, and 32 bits of the key's hash, compared before the key itself.
//! A connection found in the table is remembered with probability 1/16 (and where a bucket
//! has an empty, departed or random entry), so that with more connections than entries the
//! cache costs the table path little: remembering takes a reference, forgetting drops one.
//! The entry of the last lookup answered is tried first, against both keys of its
//! connection, before the packet's key is hashed ([`ConnCache::get_last`], or
//! [`ConnCache::get_last4`] for an IPv4 key with ports still in registers): consecutive
//! packets of one connection, in either direction, are then found without the hash or the
//! bucket; a connection in the table under either key is the one the table would find for
//! it, so this answers as `get` or the table would.
//! When fewer than half the lookups of a window of [`WINDOW`] find their connection (too
//! many connections for it, as with 100K), the cache steps aside for the next [`REST`]
//! packets, which go to the table alone, and is tried again after.
//!
//! ## Invariants
//! * An entry is used only while its connection is in the table: [`crate::table::Table`]
//!   marks a connection departed (`Conn::departed`) when it removes it, and a departed entry
//!   reads as a miss. A packet that races with the removal is tracked against the departing
//!   connection, as it would have been a moment earlier.
//! * A cache serves one tracker: it records the tracker's id and empties itself when used
//!   with another.
//! * Memory: the cache keeps at most 4096 connections alive after the table dropped them
//!   (until their entries are replaced); the tracker's limits count table connections.
//!
//! ## Threading
//! `&mut self`: one per thread (`Send`, not shared).

use crate::key::ConnKey;
use crate::key4::Key4;
use crate::table::Conn;
use std::sync::atomic::Ordering::Acquire;
use std::sync::Arc;

const WAYS: usize = 4;
const BUCKETS: usize = 1024;
/// Lookups over which the hit rate is judged.
pub const WINDOW: u32 = 4096;
/// Packets the cache sits out after a window with a low hit rate.
pub const REST: u32 = 1 << 16;

#[derive(Clone, Default)]
struct Entry {
    conn: Option<Arc<Conn>>,
    tag: u32,
    reply: bool,
}

#[derive(Clone, Default)]
#[repr(align(64))]
struct Bucket([Entry; WAYS]);

/// See the module documentation.
pub struct ConnCache {
    /// Empty until the cache is first used (a bridge without `ct` never allocates it).
    buckets: Box<[Bucket]>,
    /// The tracker the entries come from (0: none yet).
    owner: u64,
    rng: u32,
    /// A found connection is remembered when `rng & sample == 0`.
    sample: u32,
    /// Lookups and hits in the current window; packets left to sit out.
    window: (u32, u32),
    rest: u32,
    /// The entry (bucket times [`WAYS`] plus way) of the last lookup answered: checked
    /// first, against both of its connection's keys ([`ConnCache::get_last`]).
    last: usize,
    /// Lookups answered (for tests and statistics).
    pub hits: u64,
}

impl Default for ConnCache {
    fn default() -> Self {
        ConnCache::new()
    }
}

impl ConnCache {
    /// An empty cache (allocated on first use).
    pub fn new() -> ConnCache {
        ConnCache {
            buckets: Box::new([]),
            owner: 0,
            rng: 0x9e37_79b9,
            sample: 15,
            window: (0, 0),
            rest: 0,
            last: 0,
            hits: 0,
        }
    }

    /// A cache that remembers every connection found (tests: every path taken at once).
    #[cfg(test)]
    pub(crate) fn eager() -> ConnCache {
        ConnCache {
            sample: 0,
            ..ConnCache::new()
        }
    }

    /// Makes the cache serve the tracker numbered `owner`, forgetting another's entries.
    #[inline]
    pub(crate) fn bind(&mut self, owner: u64) {
        if self.owner != owner {
            if self.buckets.is_empty() {
                self.buckets = vec![Bucket::default(); BUCKETS].into_boxed_slice();
            }
            self.clear();
            self.owner = owner;
        }
    }

    /// True while the cache answers lookups (bound to a tracker and not sitting out a
    /// window of low hits): its packets' connections are then mostly found without the
    /// table, and prefetching their table buckets would be wasted work.
    #[inline]
    pub fn serving(&self) -> bool {
        self.rest == 0 && !self.buckets.is_empty()
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        for b in self.buckets.iter_mut() {
            *b = Bucket::default();
        }
    }

    #[inline]
    fn bucket(hash: u64) -> usize {
        hash as usize & (BUCKETS - 1)
    }

    /// The live connection remembered under `key` (hash `hash`), with its direction.
    #[inline]
    pub(crate) fn get(&mut self, key: &ConnKey, hash: u64) -> Option<(&Arc<Conn>, bool)> {
        if self.rest > 0 {
            self.rest -= 1;
            return None;
        }
        let (n, hit) = self.window;
        if n >= WINDOW {
            self.window = (0, 0);
            if hit * 2 < n {
                self.rest = REST;
                return None;
            }
        }
        self.window.0 += 1;
        let tag = (hash >> 32) as u32;
        let bi = Self::bucket(hash);
        let b = self.buckets.get(bi)?;
        let (way, e) = b.0.iter().enumerate().find(|(_, e)| {
            e.tag == tag
                && e.conn
                    .as_ref()
                    .is_some_and(|c| c.key_of(e.reply) == key && !c.departed.load(Acquire))
        })?;
        self.hits += 1;
        self.window.1 += 1;
        self.last = bi * WAYS + way;
        e.conn.as_ref().map(|c| (c, e.reply))
    }

    /// [`ConnCache::get`] without the key's hash, for the connection of the last lookup
    /// answered: `Some` when `key` is either of its keys (the direction: which one) and it
    /// is still in the table, counted as `get` counts a hit. `None` (nothing counted) when
    /// it is not, or when `get` would not answer (resting, or a window to judge first):
    /// the caller then hashes the key and calls `get`. The table holds each connection
    /// under both its keys and no key twice, so a live connection with `key` among them is
    /// the one `get` or the table would find, in the same direction.
    #[inline(always)]
    pub(crate) fn get_last(&mut self, key: &ConnKey) -> Option<(&Arc<Conn>, bool)> {
        self.get_last_by(|k| k == key)
    }

    /// [`ConnCache::get_last`] for an IPv4 key with ports, compared in registers
    /// ([`ConnKey::is4`]).
    #[inline(always)]
    pub(crate) fn get_last4(&mut self, key: &Key4) -> Option<(&Arc<Conn>, bool)> {
        self.get_last_by(|k| k.is4(key))
    }

    /// [`ConnCache::get_last`] for the key that `is` finds equal.
    #[inline(always)]
    fn get_last_by(&mut self, is: impl Fn(&ConnKey) -> bool) -> Option<(&Arc<Conn>, bool)> {
        if self.rest > 0 || self.window.0 >= WINDOW {
            return None;
        }
        let c = self
            .buckets
            .get(self.last / WAYS)?
            .0
            .get(self.last % WAYS)?
            .conn
            .as_ref()?;
        let reply = if is(&c.key) {
            false
        } else if is(&c.rev) {
            true
        } else {
            return None;
        };
        if c.departed.load(Acquire) {
            return None;
        }
        self.window.0 += 1;
        self.window.1 += 1;
        self.hits += 1;
        Some((c, reply))
    }

    /// Offers `conn`, found in the table under a key of hash `hash` in direction `reply`:
    /// remembered now and then (see the module documentation).
    #[inline]
    pub(crate) fn offer(&mut self, hash: u64, conn: &Arc<Conn>, reply: bool) {
        if self.rest > 0 {
            return;
        }
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        if x & self.sample != 0 {
            return;
        }
        let Some(b) = self.buckets.get_mut(Self::bucket(hash)) else {
            return;
        };
        let free =
            b.0.iter()
                .position(|e| e.conn.as_ref().is_none_or(|c| c.departed.load(Acquire)));
        let way = free.unwrap_or((x >> 4) as usize % WAYS);
        if let Some(e) = b.0.get_mut(way) {
            *e = Entry {
                conn: Some(Arc::clone(conn)),
                tag: (hash >> 32) as u32,
                reply,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ct_state::*;
    use crate::key::PacketMeta;
    use crate::nat::{Nat, NatRange};
    use crate::ops::Flush;
    use crate::testpkt::*;
    use crate::tracker::{Config, Conntrack, CtRequest, CtResult};
    use proptest::prelude::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn track(
        ct: &Conntrack,
        cache: Option<&mut ConnCache>,
        f: &mut Vec<u8>,
        req: &CtRequest<'_>,
        now: u64,
    ) -> CtResult {
        let (k, o) = flow_of(f);
        let m = PacketMeta::from_flow(&k, &o).expect("IP");
        let mut out = [CtResult::default()];
        let mut batch = [(std::mem::take(f), m)];
        match cache {
            Some(c) => ct.execute_cached(c, &mut batch, req, now, &mut out),
            None => ct.execute(&mut batch, req, now, &mut out),
        }
        *f = std::mem::take(&mut batch[0].0);
        out[0]
    }

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    /// A tracker, an eager cache, and a committing and a plain request.
    fn fresh() -> (Conntrack, ConnCache, CtRequest<'static>, CtRequest<'static>) {
        let commit = CtRequest {
            commit: true,
            ..CtRequest::default()
        };
        (
            Conntrack::new(Config::default()),
            ConnCache::eager(),
            commit,
            CtRequest::default(),
        )
    }

    #[test]
    fn a_connection_that_left_the_table_is_not_found_in_the_cache() {
        let (ct, mut c, commit, plain) = fresh();
        let mut a = udp4(A, B, 1, 2, b"x");
        let mut b = udp4(B, A, 2, 1, b"y");
        assert_eq!(
            track(&ct, Some(&mut c), &mut a, &commit, 0).state,
            TRK | NEW
        );
        assert_eq!(
            track(&ct, Some(&mut c), &mut b, &plain, 1).state,
            TRK | EST | RPL
        );
        assert_eq!(track(&ct, Some(&mut c), &mut a, &plain, 2).state, TRK | EST);
        let hits = c.hits;
        assert_eq!(
            track(&ct, Some(&mut c), &mut b, &plain, 3).state,
            TRK | EST | RPL
        );
        assert_eq!(c.hits, hits + 1, "the reply was found in the cache");
        assert_eq!(ct.flush(Flush::All), 1);
        assert_eq!(track(&ct, Some(&mut c), &mut a, &plain, 4).state, TRK | NEW);
        assert_eq!(track(&ct, Some(&mut c), &mut b, &plain, 5).state, TRK | NEW);
        assert_eq!(c.hits, hits + 1);
    }

    #[test]
    fn the_last_answer_serves_both_directions_with_their_own_state() {
        let (ct, mut c, commit, plain) = fresh();
        let mut a = udp4(A, B, 1, 2, b"x");
        let mut b = udp4(B, A, 2, 1, b"y");
        let mut other = udp4(A, B, 3, 2, b"z");
        track(&ct, Some(&mut c), &mut a, &commit, 0);
        track(&ct, Some(&mut c), &mut b, &plain, 1);
        track(&ct, Some(&mut c), &mut a, &plain, 2);
        let hits = c.hits;
        for now in 3..9 {
            assert_eq!(
                track(&ct, Some(&mut c), &mut a, &plain, now).state,
                TRK | EST
            );
            assert_eq!(
                track(&ct, Some(&mut c), &mut b, &plain, now).state,
                TRK | EST | RPL
            );
        }
        assert_eq!(c.hits, hits + 12, "every packet answered from the cache");
        // Another connection's key is not taken for the last one's.
        assert_eq!(
            track(&ct, Some(&mut c), &mut other, &plain, 9).state,
            TRK | NEW
        );
        assert_eq!(c.hits, hits + 12);
        assert_eq!(ct.flush(Flush::All), 1);
        assert_eq!(
            track(&ct, Some(&mut c), &mut b, &plain, 10).state,
            TRK | NEW
        );
        assert_eq!(c.hits, hits + 12);
    }

    #[test]
    fn a_cache_used_with_another_tracker_forgets_the_first_ones_connections() {
        let one = Conntrack::new(Config::default());
        let two = Conntrack::new(Config::default());
        let mut c = ConnCache::eager();
        let commit = CtRequest {
            commit: true,
            ..CtRequest::default()
        };
        let mut a = udp4(A, B, 1, 2, b"x");
        track(&one, Some(&mut c), &mut a, &commit, 0);
        for now in 1..3 {
            assert_ne!(
                track(&one, Some(&mut c), &mut a, &commit, now).state & TRK,
                0
            );
        }
        assert_eq!(c.hits, 1, "the third packet was found in the cache");
        assert_eq!(
            track(&two, Some(&mut c), &mut a, &CtRequest::default(), 2).state,
            TRK | NEW
        );
        assert_eq!(c.hits, 1);
    }

    #[test]
    fn a_cache_that_mostly_misses_sits_out_and_comes_back() {
        use crate::table::{ConnState, ProtoState};
        let key = ConnKey {
            proto: 17,
            sport: 1,
            dport: 2,
            ..ConnKey::default()
        };
        let conn = Arc::new(Conn::new(
            key,
            key.reverse(),
            0,
            ConnState {
                proto: ProtoState::Other(0),
                mark: 0,
                label: [0; 2],
            },
            1,
        ));
        let other = ConnKey { sport: 9, ..key };
        let mut c = ConnCache::eager();
        c.bind(7);
        c.offer(5, &conn, false);
        assert!(c.get(&key, 5).is_some());
        for _ in 0..WINDOW {
            assert!(c.get(&other, 6).is_none());
        }
        for _ in 0..REST {
            assert!(c.get(&key, 5).is_none(), "resting");
        }
        assert!(c.get(&key, 5).is_some(), "back after the rest");
    }

    /// One step of a random history: a packet of one of a few flows (either direction,
    /// two zones, with commit, force or NAT), time passing, a flush or a sweep.
    #[derive(Clone, Debug)]
    enum Step {
        Packet {
            flow: u8,
            reply: bool,
            zone: u16,
            how: u8,
            flags: u16,
        },
        Wait(u64),
        Flush(Option<u16>),
        Sweep,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => (0u8..6, any::<bool>(), 0u16..2, 0u8..5, any::<u16>()).prop_map(
                |(flow, reply, zone, how, flags)| Step::Packet { flow, reply, zone, how, flags }
            ),
            2 => (0u64..120_000).prop_map(Step::Wait),
            1 => proptest::option::of(0u16..2).prop_map(Step::Flush),
            1 => Just(Step::Sweep),
        ]
    }

    fn frame(flow: u8, reply: bool, flags: u16) -> Vec<u8> {
        let (s, d) = if reply { (B, A) } else { (A, B) };
        let (sp, dp) = if reply { (80, 1000) } else { (1000, 80) };
        match flow {
            0 | 1 => udp4(s, d, sp + u16::from(flow), dp, b"data"),
            2 => icmp4_echo(s, d, if reply { 0 } else { 8 }, 7, 1),
            3 => other4(s, d, 47, b"gre"),
            _ => tcp4(
                s,
                d,
                sp,
                dp,
                u32::from(flags) * 1000,
                u32::from(flags) * 7,
                flags & 0x1f,
                b"",
            ),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The cache changes nothing a packet sees: a tracker used through a cache and one
        /// used without give every packet the same verdict and the same bytes.
        #[test]
        fn with_and_without_the_cache_every_verdict_is_the_same(
            steps in proptest::collection::vec(step(), 1..80),
        ) {
            let plain_ct = Conntrack::new(Config::default());
            let cached_ct = Conntrack::new(Config::default());
            let mut cache = ConnCache::eager();
            let nat = Nat::Src(NatRange {
                addr_min: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                addr_max: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                port_min: 0,
                port_max: 0,
                persistent: false,
                hash: false,
                random: false,
            });
            let mut now = 1;
            for s in steps {
                match s {
                    Step::Packet { flow, reply, zone, how, flags } => {
                        let req = CtRequest {
                            zone,
                            commit: how >= 2,
                            force: how == 3,
                            nat: (how == 4).then_some(&nat),
                            ..CtRequest::default()
                        };
                        let mut f1 = frame(flow, reply, flags);
                        let mut f2 = f1.clone();
                        let r1 = track(&plain_ct, None, &mut f1, &req, now);
                        let r2 = track(&cached_ct, Some(&mut cache), &mut f2, &req, now);
                        prop_assert_eq!(r1, r2);
                        prop_assert_eq!(f1, f2);
                    }
                    Step::Wait(ms) => now += ms,
                    Step::Flush(zone) => {
                        let what = zone.map_or(Flush::All, Flush::Zone);
                        prop_assert_eq!(plain_ct.flush(what), cached_ct.flush(what));
                    }
                    Step::Sweep => {
                        prop_assert_eq!(plain_ct.sweep(now, 1000), cached_ct.sweep(now, 1000));
                    }
                }
            }
            prop_assert_eq!(plain_ct.dump(None, true, now), cached_ct.dump(None, true, now));
        }
    }
}
