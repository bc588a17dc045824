//! # The FTP and TFTP helpers (`ct(alg=ftp|tftp)`)
//!
//! ## What
//! A connection committed by a `ct` action with `alg=ftp` (a TCP connection) or
//! `alg=tftp` (a UDP one) remembers its helper. The helper reads the connection's packets
//! and announces the connection they will open next as an *expectation*: for FTP, the
//! data connection that a `PORT`/`EPRT` command (active mode) or a `227`/`229` reply
//! (passive mode) names ([`ftp`]); for TFTP, the server's answer from any port to the
//! client's port. A packet that opens a connection matching an expectation is related:
//! `+trk+new+rel`, and the connection's later packets `+est+rel` (`+rpl` for replies) for
//! as long as it lives. Its `ct_mark` and `ct_label` are the parent's when the expectation
//! was made (a `ct` action does not change them), and its `ct_nw_src`/`ct_tp_dst`...
//! (original tuple) are the parent connection's.
//!
//! These are OVS's userspace conntrack semantics: the helper applies only where the action
//! names it (a connection to port 21 committed without `alg=ftp` has none); an expectation
//! is the data connection's zone, protocol and addresses (the parent's: the address in the
//! message is only checked, against the client's for `PORT`/`EPRT`, the server's for
//! `227`, and the packet is `+inv` when it names another host or does not parse), its
//! destination port, and any source port; the expectation stays while the parent lives
//! (several data connections may use it).
//!
//! ## Bounds
//! At most [`DEFAULT_MAX_EXPECT`] expectations in all; an expectation also lapses
//! [`EXPECT_TTL_MS`] after it was last announced. When the table is full, expectations
//! whose parent is gone are dropped first; if none are, the new one is refused (counted).
//! Only the first 127 bytes of a segment are read, with no state across segments.
//!
//! ## Under NAT
//! A `ct` with `nat` has the FTP helper rewrite the address in `PORT`/`227`/`EPRT` to the
//! translated one and shift the control connection's later sequence numbers by the change
//! in length ([`ftp_nat`]). An expectation carries the NAT its data connection gets (from
//! the parent's NAT and the message's direction, as OVS derives it), applied when a `ct`
//! with `nat` commits that connection: the address only.
//!
//! ## Cost
//! Nothing on the established path but two tests of a byte of the connection record (an
//! FTP control connection's packets under `nat` then read the side table of skews: one
//! relaxed load while it is empty, one of 16 mutexes otherwise); a packet that misses the
//! table pays one relaxed load while no expectation exists, and one of 16
//! mutexes and a hash lookup otherwise. A related connection's packets look up its
//! parent's tuple under one of 16 other mutexes (always the same one for a connection).

pub mod ftp;
pub mod ftp_nat;

use crate::key::{ConnKey, PacketMeta, TcpSeg, PROTO_TCP, PROTO_UDP};
use crate::table::Conn;
use crate::tracker::ct_state::{DNAT, INV, REL, SNAT};
use crate::tracker::{Conntrack, CtResult};
use parking_lot::Mutex;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Weak};

/// The helper a `ct` action names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Helper {
    /// None.
    #[default]
    None,
    /// `alg=ftp`.
    Ftp,
    /// `alg=tftp`.
    Tftp,
}

/// [`Conn::alg`]: the connection's helper is FTP.
pub const ALG_FTP: u8 = 1;
/// [`Conn::alg`]: the connection's helper is TFTP.
pub const ALG_TFTP: u8 = 2;
/// [`Conn::alg`]: the helper bits.
pub const ALG_HELPER: u8 = ALG_FTP | ALG_TFTP;
/// [`Conn::alg`]: the connection was opened as an expected one (it is related).
pub const ALG_RELATED: u8 = 4;

/// Expectations at most, all zones together.
pub const DEFAULT_MAX_EXPECT: usize = 4096;
/// How long an expectation lasts after it was last announced, in milliseconds.
pub const EXPECT_TTL_MS: u64 = 300_000;

/// The helper bits of a connection of protocol `proto` committed with `h`: FTP helps TCP
/// connections, TFTP UDP ones.
pub(crate) fn helper_bits(h: Helper, proto: u8) -> u8 {
    match (h, proto) {
        (Helper::Ftp, PROTO_TCP) => ALG_FTP,
        (Helper::Tftp, PROTO_UDP) => ALG_TFTP,
        _ => 0,
    }
}

/// A helper's name as `dpctl/dump-conntrack` shows it.
pub fn helper_name(alg: u8) -> Option<&'static str> {
    match alg & ALG_HELPER {
        ALG_FTP => Some("ftp"),
        ALG_TFTP => Some("tftp"),
        _ => None,
    }
}

/// What an expectation hands to the connection that matches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The parent connection's original tuple.
    pub parent: ConnKey,
    /// The parent's `ct_mark` when the expectation was made.
    pub mark: u32,
    /// The parent's `ct_label` then.
    pub label: u128,
    /// The NAT a data connection committed with `nat` gets: source NAT (`true`) to, or
    /// destination NAT (`false`) from, this address (as OVS derives it from the parent's
    /// NAT and the direction of the message).
    pub nat: (bool, [u8; 16]),
}

struct Expect {
    parent: Weak<Conn>,
    info: Expected,
    expires: u64,
}

/// Related connections' parent tuples by the connection record's address.
type Parents = HashMap<usize, (Weak<Conn>, ConnKey)>;

/// FTP control connections' sequence skews (original direction, reply direction) by the
/// connection record's address ([`ftp_nat`]).
type Skews = HashMap<usize, (Weak<Conn>, [i32; 2])>;

/// Mutexes each table is split over, so that threads meet on one only when their packets
/// do (a related connection's packets always take the same).
const SHARDS: usize = 16;

/// The expectation table and the related connections' parents.
pub(crate) struct Expectations {
    /// Entries in `map`, readable without a lock; never above `max`.
    n: AtomicUsize,
    /// Picks an expected key's shard (seeded at random: remote hosts cannot aim).
    hasher: RandomState,
    /// By the expected key with source port 0.
    map: [Mutex<HashMap<ConnKey, Expect>>; SHARDS],
    /// A related connection's parent tuple, by its record's address (the `Weak` keeps the
    /// address from being reused while the entry exists).
    related: [Mutex<Parents>; SHARDS],
    /// Entries in `skews`, readable without a lock.
    n_skews: AtomicUsize,
    /// The sequence skews of FTP control connections whose messages NAT rewrote.
    skews: [Mutex<Skews>; SHARDS],
    max: AtomicUsize,
    /// Expectations created.
    pub created: AtomicU64,
    /// Expectations refused: the table was full.
    pub refused: AtomicU64,
}

fn live(c: &Weak<Conn>, now: u64) -> bool {
    c.upgrade()
        .is_some_and(|c| !c.departed.load(Relaxed) && c.expires() > now)
}

fn related_shard(addr: usize) -> usize {
    ((addr >> 6) ^ (addr >> 12)) % SHARDS
}

impl Default for Expectations {
    fn default() -> Self {
        Expectations {
            n: AtomicUsize::new(0),
            hasher: RandomState::new(),
            map: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            related: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            n_skews: AtomicUsize::new(0),
            skews: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            max: AtomicUsize::new(DEFAULT_MAX_EXPECT),
            created: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }
}

impl Expectations {
    fn shard(&self, key: &ConnKey) -> &Mutex<HashMap<ConnKey, Expect>> {
        &self.map[(self.hasher.hash_one(key) as usize) % SHARDS]
    }

    /// The expectation a packet with key `key` (that found no connection) matches.
    #[inline]
    pub(crate) fn expected(&self, key: &ConnKey, now: u64) -> Option<Expected> {
        if self.n.load(Relaxed) == 0 {
            return None;
        }
        self.lookup(key, now)
    }

    #[cold]
    fn lookup(&self, key: &ConnKey, now: u64) -> Option<Expected> {
        let mut k = *key;
        k.sport = 0;
        let map = self.shard(&k).lock();
        let e = map.get(&k)?;
        (e.expires > now && live(&e.parent, now)).then_some(e.info)
    }

    /// Announces the connection `key` (source port ignored) as expected by `parent`.
    fn expect(&self, parent: &Arc<Conn>, mut key: ConnKey, info: Expected, now: u64) {
        key.sport = 0;
        let expires = now.saturating_add(EXPECT_TTL_MS);
        let entry = Expect {
            parent: Arc::downgrade(parent),
            info,
            expires,
        };
        let shard = self.shard(&key);
        {
            let mut map = shard.lock();
            if let Some(e) = map.get_mut(&key) {
                if live(&e.parent, now) {
                    // The first announcement stands; it lasts as long again.
                    e.expires = e.expires.max(expires);
                } else {
                    *e = entry;
                    self.created.fetch_add(1, Relaxed);
                }
                return;
            }
        }
        if !self.reserve() {
            self.prune(now);
            if !self.reserve() {
                self.refused.fetch_add(1, Relaxed);
                return;
            }
        }
        if shard.lock().insert(key, entry).is_some() {
            // Another thread announced it meanwhile: one entry, counted once.
            self.n.fetch_sub(1, Relaxed);
        }
        self.created.fetch_add(1, Relaxed);
    }

    /// Counts one more expectation if under the maximum.
    fn reserve(&self) -> bool {
        let max = self.max.load(Relaxed);
        self.n
            .fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
            .is_ok()
    }

    /// Drops lapsed expectations and those whose parent is gone.
    fn prune(&self, now: u64) {
        for shard in &self.map {
            let mut map = shard.lock();
            let before = map.len();
            map.retain(|_, e| e.expires > now && live(&e.parent, now));
            self.n.fetch_sub(before - map.len(), Relaxed);
        }
    }

    /// Records `conn`'s parent (a related connection just created).
    pub(crate) fn note_related(&self, conn: &Arc<Conn>, parent: ConnKey) {
        let addr = Arc::as_ptr(conn) as usize;
        self.related[related_shard(addr)]
            .lock()
            .insert(addr, (Arc::downgrade(conn), parent));
    }

    /// The parent tuple of a related connection.
    pub(crate) fn parent_of(&self, conn: &Conn) -> Option<ConnKey> {
        let addr = conn as *const Conn as usize;
        self.related[related_shard(addr)]
            .lock()
            .get(&addr)
            .map(|(_, k)| *k)
    }

    /// Drops lapsed expectations, those whose parent is gone, and the parents of related
    /// connections that left the table.
    pub(crate) fn sweep(&self, now: u64) {
        if self.n.load(Relaxed) != 0 {
            self.prune(now);
        }
        for shard in &self.related {
            let mut rel = shard.lock();
            if !rel.is_empty() {
                rel.retain(|_, (c, _)| c.upgrade().is_some_and(|c| !c.departed.load(Relaxed)));
            }
        }
        if self.n_skews.load(Relaxed) != 0 {
            for shard in &self.skews {
                let mut sk = shard.lock();
                let before = sk.len();
                sk.retain(|_, (c, _)| c.upgrade().is_some_and(|c| !c.departed.load(Relaxed)));
                self.n_skews.fetch_sub(before - sk.len(), Relaxed);
            }
        }
    }

    /// A connection's sequence skews (original direction, reply direction).
    pub(crate) fn skew_of(&self, conn: &Conn) -> [i32; 2] {
        if self.n_skews.load(Relaxed) == 0 {
            return [0, 0];
        }
        let addr = conn as *const Conn as usize;
        self.skews[related_shard(addr)]
            .lock()
            .get(&addr)
            .map_or([0, 0], |(_, s)| *s)
    }

    /// Adds `delta` to `conn`'s skew in direction `reply`.
    fn add_skew(&self, conn: &Arc<Conn>, reply: bool, delta: i32) {
        let addr = Arc::as_ptr(conn) as usize;
        let mut sk = self.skews[related_shard(addr)].lock();
        let e = sk.entry(addr).or_insert_with(|| {
            self.n_skews.fetch_add(1, Relaxed);
            (Arc::downgrade(conn), [0, 0])
        });
        let d = &mut e.1[usize::from(reply)];
        *d = d.wrapping_add(delta);
    }

    /// Live expectations (and lapsed ones not yet swept).
    pub(crate) fn len(&self) -> usize {
        self.n.load(Relaxed)
    }

    /// Sets the maximum number of expectations.
    pub(crate) fn set_max(&self, max: usize) {
        self.max.store(max, Relaxed);
    }
}

/// The TCP payload of a frame whose L4 header is at `meta.l4`, bounded by the IP length.
fn tcp_payload<'a>(frame: &'a [u8], meta: &PacketMeta) -> Option<&'a [u8]> {
    let l3 = usize::from(meta.l3);
    let l4 = usize::from(meta.l4?);
    let ip_end = if meta.v6 {
        let plen = frame.get(l3 + 4..l3 + 6)?;
        l3 + 40 + usize::from(u16::from_be_bytes([plen[0], plen[1]]))
    } else {
        let tl = frame.get(l3 + 2..l3 + 4)?;
        l3 + usize::from(u16::from_be_bytes([tl[0], tl[1]]))
    };
    let doff = usize::from(*frame.get(l4 + 12)? >> 4) * 4;
    let start = l4 + doff;
    let end = ip_end.min(frame.len());
    frame.get(start..end.max(start))
}

fn same_addr(v6: bool, a: &[u8; 16], b: &[u8; 16]) -> bool {
    if v6 {
        a == b
    } else {
        a[..4] == b[..4]
    }
}

impl Conntrack {
    /// A packet of a connection with a helper or of a related connection (`conn.alg` not
    /// 0), after its verdict `out` was written: the related bits and parent tuple, and the
    /// helper's reading of the packet. `first`: the packet that created the connection;
    /// `nat`: the `ct` action has `nat` (an FTP message is then rewritten to the
    /// translated address and the connection's sequence skew applied, see [`ftp_nat`]).
    #[cold]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alg_packet(
        &self,
        conn: &Arc<Conn>,
        reply: bool,
        frame: &mut [u8],
        meta: &PacketMeta,
        now: u64,
        first: bool,
        nat: bool,
        out: &mut CtResult,
    ) {
        if conn.alg & ALG_RELATED != 0 {
            out.state |= REL;
            if let Some(p) = self.expect.parent_of(conn) {
                out.orig = Some(p);
            }
        }
        if out.state & INV != 0 {
            return;
        }
        match conn.alg & ALG_HELPER {
            ALG_FTP => self.ftp_packet(conn, reply, frame, meta, now, nat, out),
            ALG_TFTP if first => {
                let info = self.expected_info(conn, reply, out);
                self.expect_data(conn, reply, conn.key.sport, info, now)
            }
            _ => {}
        }
    }

    /// What an expectation announced by a packet of `conn` in direction `reply` carries.
    fn expected_info(&self, conn: &Conn, reply: bool, out: &CtResult) -> Expected {
        let dnat = conn.nat & crate::table::NAT_DST != 0;
        let nat = match (reply, dnat) {
            (true, false) => (true, conn.rev.dst),
            (true, true) => (false, conn.rev.src),
            (false, false) => (false, conn.key.src),
            (false, true) => (true, conn.key.dst),
        };
        Expected {
            parent: conn.key,
            mark: out.mark,
            label: out.label,
            nat,
        }
    }

    /// A valid packet of an FTP control connection.
    #[allow(clippy::too_many_arguments)]
    fn ftp_packet(
        &self,
        conn: &Arc<Conn>,
        reply: bool,
        frame: &mut [u8],
        meta: &PacketMeta,
        now: u64,
        nat: bool,
        out: &mut CtResult,
    ) {
        let Some(l4) = meta.l4 else {
            return;
        };
        if nat {
            // The skew of this direction so far, after the window check saw the sender's
            // own sequence number.
            let skew = self.expect.skew_of(conn)[usize::from(reply)];
            if skew != 0 {
                ftp_nat::adjust_seq_ack(frame, usize::from(l4), skew, 0);
            }
        }
        let Some(payload) = tcp_payload(frame, meta) else {
            return;
        };
        if payload.is_empty() {
            return;
        }
        let v6 = conn.key.v6;
        let (ctl, span) = ftp::parse_span(payload, v6);
        let ftp::FtpCtl::Data { mode, addr, port } = ctl else {
            if ctl == ftp::FtpCtl::Invalid {
                self.ftp_invalid(out);
            }
            return;
        };
        // The address the message should give, as the other end sees the sender.
        let rep = match mode {
            ftp::Mode::Active => conn.rev.dst,
            ftp::Mode::Passive => conn.key.dst,
        };
        let ok = match (mode, addr) {
            (ftp::Mode::Active, Some(a)) => {
                same_addr(v6, &a, &conn.key.src) || same_addr(v6, &a, &rep)
            }
            (ftp::Mode::Passive, Some(a)) => {
                same_addr(v6, &a, &rep) || same_addr(v6, &a, &conn.rev.src)
            }
            (_, None) => true,
        };
        if !ok {
            self.ftp_invalid(out);
            return;
        }
        let info = self.expected_info(conn, reply, out);
        self.expect_data(conn, reply, port, info, now);
        // Rewritten only on a translated connection: on one without NAT the address would
        // go back as it is, or only reformatted (an IPv6 address shortened). The datapath
        // relies on it: a frame that changes length is one whose addresses were translated.
        let Some(span) = span.filter(|_| nat && out.state & (SNAT | DNAT) != 0) else {
            return;
        };
        let text = ftp_nat::addr_text(v6, &rep);
        if let Some(new) = ftp_nat::rewrite_message(frame, meta, span, text.as_bytes()) {
            let delta = new.len() as i32 - frame.len() as i32;
            out.resize = ftp_nat::install(frame, &new);
            if delta != 0 {
                self.expect.add_skew(conn, reply, delta);
            }
        }
    }

    /// A segment of an FTP control connection under a `ct` with `nat`: its acknowledgement
    /// moved down by the other direction's sequence skew ([`ftp_nat`]), in the frame and,
    /// for the window check, in the copy of the segment returned (`None`: no skew).
    #[cold]
    pub(crate) fn ftp_unskew_ack(
        &self,
        conn: &Conn,
        reply: bool,
        frame: &mut [u8],
        meta: &PacketMeta,
        tcp: Option<&TcpSeg>,
    ) -> Option<TcpSeg> {
        let skew = self.expect.skew_of(conn)[usize::from(!reply)];
        let (Some(seg), Some(l4)) = (tcp, meta.l4) else {
            return None;
        };
        if skew == 0 {
            return None;
        }
        ftp_nat::adjust_seq_ack(frame, usize::from(l4), 0, -skew);
        let mut s = *seg;
        s.ack = seg.ack.wrapping_add_signed(-skew);
        Some(s)
    }

    fn ftp_invalid(&self, out: &mut CtResult) {
        out.state |= INV;
        self.counters.invalid.fetch_add(1, Relaxed);
    }

    /// The expectation a helper's packet announces, by the direction it travelled in:
    /// from the server (a reply), the client connects to the server; from the client, the
    /// server connects to the client. Both at `port`, from any source port.
    fn expect_data(&self, conn: &Arc<Conn>, reply: bool, port: u16, info: Expected, now: u64) {
        let mut key = if reply { conn.key } else { conn.rev };
        key.dport = port;
        self.expect.expect(conn, key, info, now);
    }

    /// Live FTP/TFTP expectations.
    pub fn expectations(&self) -> usize {
        self.expect.len()
    }

    /// Sets the maximum number of expectations (default [`DEFAULT_MAX_EXPECT`]).
    pub fn set_max_expectations(&self, max: usize) {
        self.expect.set_max(max);
    }
}
