//! # The tracker: `execute` on the packet path
//!
//! ## What
//! [`Conntrack::execute`] is the `ct()` action for a batch of packets: each packet is
//! parsed, looked up in its zone, its connection's state advanced, NAT applied, and a
//! [`CtResult`] written with the `ct_state` bits, zone, mark, label and original tuple the
//! pipeline matches on after recirculation.
//!
//! ## Decisions (OVS's userspace conntrack semantics)
//! * Unparsable packets (truncated, fragments, bad IPv4 header or L4 checksum, untracked
//!   ICMP types) are `+trk+inv`.
//! * A packet without a connection is `+trk+new` if it may open one (TCP: valid flags and
//!   not SYN+ACK; ICMP: a query request; anything else: yes), else `+trk+inv`. Only with
//!   `commit` is a connection created; uncommitted, nothing is stored.
//! * When the global maximum or the zone's limit is reached, a committing packet stays
//!   `+trk+new` and no connection is created (`full` / `zone_full` count it); existing
//!   connections are never evicted to make room.
//! * Packets of a connection are `+est` (`+rpl` in the reply direction), except that UDP,
//!   generic and ICMP connections stay `+new` for further original-direction packets until
//!   a reply is seen, and a TCP segment outside the window is `+inv` (the connection is not
//!   changed). An ICMP error quoting a packet of a connection is `+rel` (`+rpl` when it
//!   travels in the reply direction).
//! * With `force`, a packet that finds its connection in the reply direction ends it and is
//!   treated as new. A SYN on a TCP connection closed both ways replaces it. Ending is
//!   expiring, as OVS's `conn_force_expire`: the connection stays in the table, expired.
//! * Expired connections are treated as absent on lookup; [`Conntrack::sweep`] frees them,
//!   or a new connection under the same keys takes their place in the table (one update of
//!   the two slots instead of a removal and an insertion: a reopened TCP connection).
//! * A packet without a connection that a helper expected ([`crate::alg`]) is
//!   `+trk+new+rel`, and its connection's packets are `+rel` too.
//! * NAT translates packets only when the action asks for `nat`. `+snat`/`+dnat` are set on
//!   translated packets: SNAT connections' original packets are `+snat`, their replies
//!   `+dnat`, and the other way round for DNAT.
//!
//! ## Threading and cost
//! `&self` everywhere: any number of poll threads call `execute` at once. An established
//! packet costs one hash, one shard read lock (none when the thread's [`ConnCache`] holds
//! the connection: `execute_cached`; no hash either when the cache's last answer was its
//! connection, as for a connection's packets one after the other) and one connection
//! mutex (none for a settled
//! connection: [`Conntrack::update_settled`]); a new connection
//! adds the two shard write locks and atomic counter updates. Nothing on this path
//! allocates except a connection's own 176-byte record and its two table slots.

use crate::cache::ConnCache;
use crate::key::{parse, parse_into, ConnKey, PacketMeta, Parsed, TcpSeg};
use crate::key4::parse_ports4;
use crate::nat::Nat;
use crate::rewrite;
use crate::table::{Conn, ConnState, ProtoState, Table, NAT_SRC};
use crate::tcp::TcpUpdate;
use crate::timeout::{Class, Policies};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

mod create;

/// `ct_state` bits, as OpenFlow's `ct_state` field numbers them.
pub mod ct_state {
    /// Beginning of a new connection.
    pub const NEW: u32 = 0x01;
    /// Part of an existing connection.
    pub const EST: u32 = 0x02;
    /// Related to an existing connection (an ICMP error, or a connection a helper expected).
    pub const REL: u32 = 0x04;
    /// Reply direction.
    pub const RPL: u32 = 0x08;
    /// Invalid.
    pub const INV: u32 = 0x10;
    /// Tracked.
    pub const TRK: u32 = 0x20;
    /// Source address/port translated.
    pub const SNAT: u32 = 0x40;
    /// Destination address/port translated.
    pub const DNAT: u32 = 0x80;
}
use ct_state::*;

/// Packets of a batch parsed and prefetched ahead of their tracking at a time.
pub const BATCH_CHUNK: usize = 16;

/// Numbers trackers (from 1) for their caches.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// OVS's default global connection limit.
pub const DEFAULT_MAX_CONNS: u32 = 3_000_000;

/// What one `ct()` action asks for.
#[derive(Clone, Copy, Debug, Default)]
pub struct CtRequest<'a> {
    /// Zone.
    pub zone: u16,
    /// Create the connection if new; apply mark/label.
    pub commit: bool,
    /// Delete a connection found in the reply direction and start a new one.
    pub force: bool,
    /// NAT.
    pub nat: Option<&'a Nat>,
    /// `(value, mask)` for `ct_mark`, applied on commit.
    pub set_mark: Option<(u32, u32)>,
    /// `(value, mask)` for `ct_label`, applied on commit.
    pub set_label: Option<(u128, u128)>,
    /// The helper a committed connection gets (`alg=ftp|tftp`; see [`crate::alg`]).
    pub alg: crate::alg::Helper,
}

/// What tracking decided for one packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtResult {
    /// `ct_state` bits ([`ct_state`]).
    pub state: u32,
    /// `ct_zone`.
    pub zone: u16,
    /// `ct_mark`.
    pub mark: u32,
    /// `ct_label`.
    pub label: u128,
    /// The connection's original-direction tuple (`ct_nw_src`, ...), when it has one.
    pub orig: Option<ConnKey>,
    /// How many bytes the frame grew (positive) or shrank by: an FTP message rewritten
    /// under NAT ([`crate::alg::ftp_nat`]). The caller applies it: it drops that many bytes
    /// from the end of a shrunk frame, and appends to a grown one the bytes
    /// [`crate::alg::ftp_nat::take_grown_tail`] gives (those of the last frame grown on
    /// the thread: apply it before the next packet is tracked). 0 for nearly every packet.
    pub resize: i8,
}

/// A packet as `execute` sees it.
pub trait CtPacket {
    /// The frame bytes (rewritten in place by NAT) and where its layers are.
    fn frame_and_meta(&mut self) -> Option<(&mut [u8], PacketMeta)>;
}

/// A borrowed frame and its layer offsets: lets a datapath build a batch for `execute`
/// from its own buffers without copying them.
pub struct CtInput<'a> {
    /// The frame.
    pub frame: &'a mut [u8],
    /// Its layers; `None` for a frame that is not IP (it is `+trk+inv`).
    pub meta: Option<PacketMeta>,
}

impl CtPacket for CtInput<'_> {
    fn frame_and_meta(&mut self) -> Option<(&mut [u8], PacketMeta)> {
        let m = self.meta?;
        Some((&mut *self.frame, m))
    }
}

impl CtPacket for (Vec<u8>, PacketMeta) {
    fn frame_and_meta(&mut self) -> Option<(&mut [u8], PacketMeta)> {
        Some((&mut self.0[..], self.1))
    }
}

/// Event counters (relaxed atomics, touched only on rare paths).
#[derive(Default)]
pub struct Counters {
    /// Packets found invalid.
    pub invalid: AtomicU64,
    /// Commits refused by the global maximum.
    pub full: AtomicU64,
    /// Commits refused by a zone limit.
    pub zone_full: AtomicU64,
    /// Commits refused because NAT found no free tuple.
    pub nat_exhausted: AtomicU64,
    /// Connections created.
    pub created: AtomicU64,
    /// Connections removed by expiry.
    pub expired: AtomicU64,
}

/// Per-zone connection counts and limits (fixed arrays: no lock on the commit path).
pub(crate) struct Zones {
    pub count: Box<[AtomicU32]>,
    /// `u32::MAX`: no zone-specific limit (the default applies).
    pub limit: Box<[AtomicU32]>,
    /// 0: unlimited.
    pub default_limit: AtomicU32,
}

/// Tracker configuration.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Table shards (rounded up to a power of two).
    pub shards: usize,
    /// Global connection limit.
    pub max_conns: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            shards: 256,
            max_conns: DEFAULT_MAX_CONNS,
        }
    }
}

/// The connection tracker of one datapath.
pub struct Conntrack {
    pub(crate) table: Table,
    pub(crate) n_conns: AtomicU32,
    pub(crate) max_conns: AtomicU32,
    pub(crate) zones: Zones,
    pub(crate) policies: Policies,
    pub(crate) seq_check: AtomicBool,
    pub(crate) sweep_cursor: Mutex<usize>,
    /// This tracker's number, unique in the process (see [`crate::cache`]).
    pub(crate) id: u64,
    /// The helpers' expectations ([`crate::alg`]).
    pub(crate) expect: crate::alg::Expectations,
    /// Event counters.
    pub counters: Counters,
}

impl Default for Conntrack {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

/// What the locked part of an existing-connection lookup decided.
enum Found {
    /// The packet's result was written.
    Done,
    /// The connection has expired, or was made to (a TCP restart, `force`): treat it as
    /// absent. A new connection under its keys replaces it in the table.
    Expired,
}

impl Conntrack {
    /// An empty tracker.
    pub fn new(cfg: Config) -> Conntrack {
        let zones = Zones {
            count: (0..=u16::MAX as usize).map(|_| AtomicU32::new(0)).collect(),
            limit: (0..=u16::MAX as usize)
                .map(|_| AtomicU32::new(u32::MAX))
                .collect(),
            default_limit: AtomicU32::new(0),
        };
        Conntrack {
            table: Table::new(cfg.shards),
            n_conns: AtomicU32::new(0),
            max_conns: AtomicU32::new(cfg.max_conns),
            zones,
            policies: Policies::new(),
            seq_check: AtomicBool::new(true),
            sweep_cursor: Mutex::new(0),
            id: NEXT_ID.fetch_add(1, Relaxed),
            expect: crate::alg::Expectations::default(),
            counters: Counters::default(),
        }
    }

    /// Tracks a batch: `out[i]` receives the result for `pkts[i]` (`out` at least as long).
    pub fn execute<P: CtPacket>(
        &self,
        pkts: &mut [P],
        req: &CtRequest<'_>,
        now: u64,
        out: &mut [CtResult],
    ) {
        self.execute_batch(None, pkts, req, now, out);
    }

    pub(crate) fn invalid(&self, zone: u16) -> CtResult {
        self.counters.invalid.fetch_add(1, Relaxed);
        CtResult {
            state: TRK | INV,
            zone,
            ..CtResult::default()
        }
    }

    /// [`Conntrack::execute`] with the calling thread's connection cache (see
    /// [`crate::cache`]): the same verdicts, established packets found without the table's
    /// shard lock.
    pub fn execute_cached<P: CtPacket>(
        &self,
        cache: &mut ConnCache,
        pkts: &mut [P],
        req: &CtRequest<'_>,
        now: u64,
        out: &mut [CtResult],
    ) {
        cache.bind(self.id);
        self.execute_batch(Some(cache), pkts, req, now, out);
    }

    /// Parses one packet, hashes its key and tracks it, the verdict into `out`. With a
    /// cache, the connection of its last answer is tried first, before the key is hashed
    /// ([`ConnCache::get_last`]: a connection's packets, either way, one after the other),
    /// and an IPv4 packet with ports other than TCP is parsed by [`parse_ports4`], whose
    /// key ([`crate::key4::Key4`]) stays in registers while it is compared with that
    /// connection's keys; any other packet, and one that
    /// function does not answer, by [`parse_into`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn parse_and_track(
        &self,
        mut cache: Option<&mut ConnCache>,
        frame: &mut [u8],
        meta: &PacketMeta,
        req: &CtRequest<'_>,
        now: u64,
        out: &mut CtResult,
    ) {
        if let Some(c) = cache.as_deref_mut() {
            // IPv4 with ports (not TCP): the key as `parse` finds it, in registers.
            if let Some(k4) = parse_ports4(frame, meta, req.zone) {
                if let Some((conn, reply)) = c.get_last4(&k4) {
                    if let Found::Done = self.update(conn, reply, frame, meta, None, req, now, out)
                    {
                        return;
                    }
                }
                let key = k4.key();
                let h = self.table.hash(&key);
                self.track(cache, frame, meta, &key, h, None, req, now, out);
                return;
            }
        }
        let mut pr = Parsed::Invalid;
        parse_into(frame, meta, req.zone, &mut pr);
        if let (Parsed::Conn { key, tcp }, Some(c)) = (&pr, cache.as_deref_mut()) {
            if let Some((conn, reply)) = c.get_last(key) {
                if let Found::Done =
                    self.update(conn, reply, frame, meta, tcp.as_ref(), req, now, out)
                {
                    return;
                }
            }
        }
        let h = match &pr {
            Parsed::Conn { key, .. } | Parsed::IcmpError { key, .. } => self.table.hash(key),
            Parsed::Invalid => 0,
        };
        self.track_parsed(cache, frame, meta, &pr, h, req, now, out);
    }

    /// A batch in chunks of [`BATCH_CHUNK`]: first every packet of the chunk parsed, its
    /// key hashed and its table bucket prefetched (with `commit`, its reply key's too),
    /// then the records of the connections in those buckets prefetched, then each packet
    /// tracked, so that the chunk's cache misses overlap. A single packet is tracked at
    /// once, and so is a batch whose connections the cache serves.
    fn execute_batch<P: CtPacket>(
        &self,
        mut cache: Option<&mut ConnCache>,
        pkts: &mut [P],
        req: &CtRequest<'_>,
        now: u64,
        out: &mut [CtResult],
    ) {
        if pkts.len() <= 1 || cache.as_deref().is_some_and(ConnCache::serving) {
            for (p, o) in pkts.iter_mut().zip(out.iter_mut()) {
                match p.frame_and_meta() {
                    Some((frame, meta)) => {
                        self.parse_and_track(cache.as_deref_mut(), frame, &meta, req, now, o)
                    }
                    None => *o = self.invalid(req.zone),
                }
            }
            return;
        }
        for (pc, oc) in pkts
            .chunks_mut(BATCH_CHUNK)
            .zip(out.chunks_mut(BATCH_CHUNK))
        {
            let mut parsed = [(Parsed::Invalid, 0u64); BATCH_CHUNK];
            for (p, slot) in pc.iter_mut().zip(parsed.iter_mut()) {
                if let Some((frame, meta)) = p.frame_and_meta() {
                    let pr = parse(frame, &meta, req.zone);
                    let h = match &pr {
                        Parsed::Conn { key, .. } | Parsed::IcmpError { key, .. } => {
                            self.prefetch_key(key, req)
                        }
                        Parsed::Invalid => 0,
                    };
                    *slot = (pr, h);
                }
            }
            for (pr, h) in &parsed[..pc.len()] {
                if !matches!(pr, Parsed::Invalid) {
                    self.table.prefetch_conn(*h);
                }
            }
            for ((p, o), (pr, h)) in pc.iter_mut().zip(oc.iter_mut()).zip(parsed) {
                match p.frame_and_meta() {
                    Some((frame, meta)) => {
                        self.track_parsed(cache.as_deref_mut(), frame, &meta, &pr, h, req, now, o)
                    }
                    None => *o = self.invalid(req.zone),
                }
            }
        }
    }

    /// Hashes `key` and prefetches its bucket (and with `commit` and no NAT, its reply
    /// key's, where the insertion goes); returns the hash.
    #[inline]
    fn prefetch_key(&self, key: &ConnKey, req: &CtRequest<'_>) -> u64 {
        let h = self.table.hash(key);
        self.table.prefetch(h);
        if req.commit && req.nat.is_none() {
            self.table.prefetch(self.table.hash(&key.reverse()));
        }
        h
    }

    /// The first step of a datapath's prefetch for a batch whose `ct` actions then run one
    /// packet at a time: hashes the key of the connection a packet whose flow key is
    /// `flow` will look up for the `ct` action `req`, prefetches its table bucket (with
    /// `commit` and no NAT, its reply key's too) and returns the hash for
    /// [`Conntrack::prefetch_conn`], the second step, which the caller runs on every packet
    /// of the batch after this one. `None` where the key is not known from the flow key
    /// alone ([`ConnKey::from_flow`]: only TCP, UDP, UDP-Lite and SCTP packets that are not
    /// fragments). Hints: nothing changes.
    #[inline]
    pub fn prefetch_flow(&self, flow: &packet::flow::FlowKey, req: &CtRequest<'_>) -> Option<u64> {
        ConnKey::from_flow(flow, req.zone).map(|key| self.prefetch_key(&key, req))
    }

    /// The second step of the prefetch ([`Conntrack::prefetch_flow`]): the records of the
    /// connections in the bucket of `hash`.
    #[inline]
    pub fn prefetch_conn(&self, hash: u64) {
        self.table.prefetch_conn(hash);
    }

    /// Tracks one packet; `now` is in milliseconds.
    pub fn execute_one(
        &self,
        frame: &mut [u8],
        meta: &PacketMeta,
        req: &CtRequest<'_>,
        now: u64,
    ) -> CtResult {
        let mut r = CtResult::default();
        self.parse_and_track(None, frame, meta, req, now, &mut r);
        r
    }

    /// Tracks a parsed packet (`h`: its key's hash), the verdict into `out`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn track_parsed(
        &self,
        cache: Option<&mut ConnCache>,
        frame: &mut [u8],
        meta: &PacketMeta,
        parsed: &Parsed,
        h: u64,
        req: &CtRequest<'_>,
        now: u64,
        out: &mut CtResult,
    ) {
        match parsed {
            Parsed::Invalid => *out = self.invalid(req.zone),
            Parsed::Conn { key, tcp } => {
                self.track(cache, frame, meta, key, h, tcp.as_ref(), req, now, out)
            }
            Parsed::IcmpError { key, quoted } => {
                let hit = self.table.lookup(key, h, |conn, reply| {
                    let st = conn.st.lock();
                    (conn.expires() > now).then_some((
                        st.mark,
                        st.label(),
                        conn.key,
                        conn.rev,
                        conn.nat,
                        reply,
                    ))
                });
                let Some(Some((mark, label, ck, cr, nat, reply))) = hit else {
                    *out = self.invalid(req.zone);
                    return;
                };
                let mut state = TRK | REL;
                if reply {
                    state |= RPL;
                }
                if req.nat.is_some() && nat != 0 {
                    let (k, t) = if reply {
                        (cr, ck.reverse())
                    } else {
                        (ck, cr.reverse())
                    };
                    if let Some(l4) = meta.l4 {
                        rewrite::rewrite_icmp_error(
                            frame,
                            usize::from(meta.l3),
                            usize::from(l4),
                            quoted,
                            &k,
                            &t,
                        );
                    }
                    state |= nat_bits(nat, reply);
                }
                *out = CtResult {
                    state,
                    zone: req.zone,
                    mark,
                    label,
                    orig: Some(ck),
                    resize: 0,
                };
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn track(
        &self,
        mut cache: Option<&mut ConnCache>,
        frame: &mut [u8],
        meta: &PacketMeta,
        key: &ConnKey,
        h: u64,
        tcp: Option<&TcpSeg>,
        req: &CtRequest<'_>,
        now: u64,
        out: &mut CtResult,
    ) {
        // A connection the cache holds is in the table (or leaving it this instant).
        if let Some(c) = cache.as_deref_mut() {
            if let Some((conn, reply)) = c.get(key, h) {
                if let Found::Done = self.update(conn, reply, frame, meta, tcp, req, now, out) {
                    return;
                }
            }
        }
        // Two rounds at most: a lost insertion race re-runs the lookup once.
        for _round in 0..2 {
            let found = self.table.lookup(key, h, |conn, reply| {
                let f = self.update(conn, reply, frame, meta, tcp, req, now, out);
                if let (Found::Done, Some(c)) = (&f, cache.as_deref_mut()) {
                    c.offer(h, conn, reply);
                }
                f
            });
            if let Some(Found::Done) = found {
                return;
            }
            match self.new_conn(frame, meta, key, tcp, req, now) {
                Ok(r) => {
                    *out = r;
                    return;
                }
                Err(()) => continue,
            }
        }
        // Lost the race twice: report it as new without state.
        *out = CtResult {
            state: TRK | NEW,
            zone: req.zone,
            ..CtResult::default()
        };
    }

    /// The per-packet update of an existing connection, under the shard read lock (or
    /// found in the cache): a settled connection's without its mutex
    /// ([`Conntrack::update_settled`]), any other's state under the mutex; then NAT on the
    /// packet. The verdict goes into `out` (written only when `Found::Done`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn update(
        &self,
        conn: &Arc<Conn>,
        reply: bool,
        frame: &mut [u8],
        meta: &PacketMeta,
        tcp: Option<&TcpSeg>,
        req: &CtRequest<'_>,
        now: u64,
        out: &mut CtResult,
    ) -> Found {
        let (state, mark, label) = match self.update_settled(conn, reply, req, now) {
            Some(mark) => (TRK | EST | if reply { RPL } else { 0 }, mark, 0),
            None => {
                // An FTP control connection under `nat` has its acknowledgement unskewed
                // before the window check. Only here: TCP connections never settle, so
                // the settled path (UDP, ICMP) carries no test for it.
                let unskewed = if conn.alg & crate::alg::ALG_FTP != 0 && req.nat.is_some() {
                    self.ftp_unskew_ack(conn, reply, frame, meta, tcp)
                } else {
                    None
                };
                match self.update_locked(conn, reply, unskewed.as_ref().or(tcp), req, now) {
                    Some(v) => v,
                    None => return Found::Expired,
                }
            }
        };
        let mut state = state;
        if state & INV == 0 && req.nat.is_some() && conn.nat != 0 {
            if let Some(l4) = meta.l4 {
                let (from, to) = if reply {
                    (&conn.rev, conn.key.reverse())
                } else {
                    (&conn.key, conn.rev.reverse())
                };
                rewrite::rewrite(frame, usize::from(meta.l3), usize::from(l4), from, &to);
                state |= nat_bits(conn.nat, reply);
            }
        }
        *out = CtResult {
            state,
            zone: req.zone,
            mark,
            label,
            orig: Some(conn.key),
            resize: 0,
        };
        if conn.alg != 0 {
            let nat = req.nat.is_some();
            self.alg_packet(conn, reply, frame, meta, now, false, nat, out);
        }
        Found::Done
    }

    /// A packet of a settled connection (see [`crate::table::SETTLED`]) without taking its
    /// mutex: `Some(mark)` when the packet is `+est` and the connection's expiry was
    /// refreshed; `None` when the slow path must decide (not settled, expired, a request
    /// that changes the connection: `force` in the reply direction, a mark or label to set).
    ///
    /// The verdict is the locked path's: a settled connection's protocol state stays as it
    /// is whatever its packets, so they are `+est` (`+rpl` in reply), its label is zero and
    /// its mark the one published with the flag; its expiry moves to now plus the settled
    /// class's timeout, written only when that moved it (once per millisecond of the clock
    /// at most, so that threads sharing a connection do not write its line per packet), by
    /// a compare-and-swap that never revives an expired connection ([`Conn::refresh`]).
    #[inline]
    fn update_settled(
        &self,
        conn: &Conn,
        reply: bool,
        req: &CtRequest<'_>,
        now: u64,
    ) -> Option<u32> {
        let fast = conn.fast();
        if fast & crate::table::SETTLED == 0
            || (req.force && reply)
            || req.set_mark.is_some()
            || req.set_label.is_some()
        {
            return None;
        }
        let seen = conn.expires();
        if seen <= now {
            return None;
        }
        let class = if conn.key.is_icmp() {
            Class::IcmpReply
        } else {
            Class::OtherBidir
        };
        let at = now.saturating_add(self.policies.timeout_ms(conn.key.zone, class));
        if at != seen && !conn.refresh(seen, at) {
            // Changed under us: let the mutex decide (it sees the newer value).
            return None;
        }
        Some((fast >> 32) as u32)
    }

    /// The locked part of [`Conntrack::update`]: the verdict's state bits, mark and label,
    /// or `None` when the connection has expired or was made to.
    fn update_locked(
        &self,
        conn: &Conn,
        reply: bool,
        tcp: Option<&TcpSeg>,
        req: &CtRequest<'_>,
        now: u64,
    ) -> Option<(u32, u32, u128)> {
        let mut state = TRK;
        let mut st = conn.st.lock();
        if conn.expires() <= now {
            return None;
        }
        if req.force && reply {
            conn.set_expires(0);
            return None;
        }
        let zone = conn.key.zone;
        let mut class = None;
        let mut valid_new = false;
        match (&mut st.proto, tcp) {
            (ProtoState::Tcp(t), Some(seg)) => {
                match t.update(seg, reply, self.seq_check.load(Relaxed)) {
                    TcpUpdate::Valid(c) => class = c,
                    TcpUpdate::Invalid => state |= INV,
                    TcpUpdate::New => {
                        conn.set_expires(0);
                        return None;
                    }
                }
            }
            (ProtoState::Other(s), _) => {
                if reply && *s != 2 {
                    *s = 2;
                } else if *s == 0 {
                    *s = 1;
                    valid_new = true;
                }
                class = Some(match *s {
                    0 => Class::OtherFirst,
                    1 => Class::OtherMultiple,
                    _ => Class::OtherBidir,
                });
            }
            (ProtoState::Icmp(replied), _) => {
                if reply && !*replied {
                    *replied = true;
                } else if !*replied {
                    valid_new = true;
                }
                class = Some(if *replied {
                    Class::IcmpReply
                } else {
                    Class::IcmpFirst
                });
            }
            (ProtoState::Tcp(_), None) => state |= INV,
        }
        if let Some(c) = class {
            conn.set_expires(now.saturating_add(self.policies.timeout_ms(zone, c)));
        }
        if state & INV == 0 {
            if valid_new {
                state |= NEW;
            } else {
                state |= EST;
                if reply {
                    state |= RPL;
                }
            }
            // A related connection keeps the mark and label its parent gave it.
            if req.commit && conn.alg & crate::alg::ALG_RELATED == 0 {
                apply_mark_label(&mut st, req);
            }
        } else {
            self.counters.invalid.fetch_add(1, Relaxed);
        }
        conn.publish(&st);
        Some((state, st.mark, st.label()))
    }

    /// Removes a connection and releases its counts; false if already gone.
    pub(crate) fn remove_conn(&self, conn: &Arc<Conn>) -> bool {
        if self.table.remove(conn) {
            self.release(conn.key.zone);
            true
        } else {
            false
        }
    }

    /// Releases the counts of one connection of `zone` that left the table.
    pub(crate) fn release(&self, zone: u16) {
        self.n_conns.fetch_sub(1, Relaxed);
        self.zones.count[usize::from(zone)].fetch_sub(1, Relaxed);
    }

    /// Turns TCP sequence checking on (the default) or off (liberal mode for every
    /// connection, OVS's `dpctl/ct-disable-tcp-seq-chk`).
    pub fn set_tcp_seq_check(&self, on: bool) {
        self.seq_check.store(on, Relaxed);
    }

    /// Whether TCP sequence checking is on.
    pub fn tcp_seq_check(&self) -> bool {
        self.seq_check.load(Relaxed)
    }

    /// The timeout policies.
    pub fn policies(&self) -> &Policies {
        &self.policies
    }
}

fn apply_mark_label(st: &mut ConnState, req: &CtRequest<'_>) {
    if let Some((v, m)) = req.set_mark {
        st.mark = (st.mark & !m) | (v & m);
    }
    if let Some((v, m)) = req.set_label {
        let l = (st.label() & !m) | (v & m);
        st.set_label(l);
    }
}

fn nat_bits(nat: u8, reply: bool) -> u32 {
    match (nat & NAT_SRC != 0, reply) {
        (true, false) | (false, true) => SNAT,
        (true, true) | (false, false) => DNAT,
    }
}
