//! A packet without a connection: whether it may open one, and with `commit` the
//! connection's creation, in steps: room reserved under the zone limit and the global
//! maximum, the first state, the insertion under both keys (for NAT, the first free
//! translated tuple), the packet translated.

use super::ct_state::*;
use super::{apply_mark_label, nat_bits, Conntrack, CtRequest, CtResult};
use crate::alg;
use crate::key::{self, ConnKey, PacketMeta, TcpSeg};
use crate::nat::{for_each_candidate, Nat};
use crate::rewrite;
use crate::table::{Conn, ConnState, ProtoState, Taken, NAT_DST, NAT_SRC};
use crate::tcp::{self, TcpConn};
use crate::timeout::Class;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

thread_local! {
    static RNG: std::cell::Cell<u64> = std::cell::Cell::new({
        let s = std::collections::hash_map::RandomState::new();
        std::hash::BuildHasher::hash_one(&s, 0u8) | 1
    });
}

fn random_u64() -> u64 {
    RNG.with(|c| {
        let mut x = c.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        x
    })
}

/// How the insertion of a new connection ended.
enum Insertion {
    /// Inserted.
    Done(Arc<Conn>),
    /// Another thread committed the same connection first: look it up again.
    Lost,
    /// No room under any candidate tuple.
    Failed,
}

impl Conntrack {
    /// A packet without a (live) connection. `Err` asks the caller to look up again (another
    /// thread created the connection first).
    pub(super) fn new_conn(
        &self,
        frame: &mut [u8],
        meta: &PacketMeta,
        key: &ConnKey,
        tcp: Option<&TcpSeg>,
        req: &CtRequest<'_>,
        now: u64,
    ) -> Result<CtResult, ()> {
        let Some(proto) = opening_state(key, tcp) else {
            return Ok(self.invalid(req.zone));
        };
        let exp = self.expect.expected(key, now);
        let mut new_only = CtResult {
            state: TRK | NEW,
            zone: req.zone,
            ..CtResult::default()
        };
        if let Some(e) = &exp {
            new_only.state |= REL;
            new_only.mark = e.mark;
            new_only.label = e.label;
            new_only.orig = Some(e.parent);
        }
        if !req.commit || !self.reserve(req.zone) {
            return Ok(new_only);
        }
        let (mut st, expires) = self.first_state(proto, req, now);
        let mut alg = alg::helper_bits(req.alg, key.proto);
        if let Some(e) = &exp {
            // The parent's mark and label, not the action's.
            st.mark = e.mark;
            st.set_label(e.label);
            alg |= alg::ALG_RELATED;
        }
        let (mark, label) = (st.mark, st.label());
        let nat = req.nat.filter(|n| !matches!(n, Nat::Apply));
        let inserted = match (&exp, req.nat) {
            (Some(e), Some(_)) => self.insert_related_nat(key, e, st, expires, alg, now),
            _ => self.insert_new(key, st, expires, nat, alg, now),
        };
        let conn = match inserted {
            Insertion::Done(conn) => conn,
            Insertion::Lost => {
                self.unreserve(req.zone);
                return Err(());
            }
            Insertion::Failed => {
                self.unreserve(req.zone);
                return Ok(new_only);
            }
        };
        self.counters.created.fetch_add(1, Relaxed);
        let mut state = TRK | NEW;
        if conn.nat != 0 {
            state |= translate_first(frame, meta, &conn);
        }
        let mut r = CtResult {
            state,
            zone: req.zone,
            mark,
            label,
            orig: Some(conn.key),
            resize: 0,
        };
        if conn.alg != 0 {
            if let Some(e) = &exp {
                self.expect.note_related(&conn, e.parent);
            }
            let nat = req.nat.is_some();
            self.alg_packet(&conn, false, frame, meta, now, true, nat, &mut r);
        }
        Ok(r)
    }

    /// Reserves room for one connection in `zone`: under the zone's limit, then under the
    /// global maximum. False (and the refusal counted) if either is reached.
    #[inline]
    fn reserve(&self, zone: u16) -> bool {
        let zone = usize::from(zone);
        let zl = match self.zones.limit[zone].load(Relaxed) {
            u32::MAX => self.zones.default_limit.load(Relaxed),
            l => l,
        };
        // Compare-and-swap increments: a count never passes its limit, even for a moment.
        let below = |limit: u32| move |n: u32| (limit == 0 || n < limit).then_some(n + 1);
        if self.zones.count[zone]
            .fetch_update(Relaxed, Relaxed, below(zl))
            .is_err()
        {
            self.counters.zone_full.fetch_add(1, Relaxed);
            return false;
        }
        let max = self.max_conns.load(Relaxed);
        if max == 0
            || self
                .n_conns
                .fetch_update(Relaxed, Relaxed, below(max))
                .is_err()
        {
            self.zones.count[zone].fetch_sub(1, Relaxed);
            self.counters.full.fetch_add(1, Relaxed);
            return false;
        }
        true
    }

    /// Gives back what [`Conntrack::reserve`] took.
    fn unreserve(&self, zone: u16) {
        self.release(zone);
    }

    /// A committed connection's first state: its protocol's, the first-packet expiry, the
    /// mark and label the request sets.
    #[inline]
    fn first_state(&self, proto: ProtoState, req: &CtRequest<'_>, now: u64) -> (ConnState, u64) {
        let class = match proto {
            ProtoState::Tcp(_) => Class::TcpFirst,
            ProtoState::Icmp(_) => Class::IcmpFirst,
            ProtoState::Other(_) => Class::OtherFirst,
        };
        let mut st = ConnState {
            proto,
            mark: 0,
            label: [0; 2],
        };
        apply_mark_label(&mut st, req);
        (
            st,
            now.saturating_add(self.policies.timeout_ms(req.zone, class)),
        )
    }

    /// Inserts the connection of `key` in state `st`, expiring at `expires`, with helper
    /// and related bits `alg`: without NAT under `key`'s reverse,
    /// with it under the first candidate translated tuple whose reverse is free (counting
    /// an exhausted range).
    #[inline]
    fn insert_new(
        &self,
        key: &ConnKey,
        st: ConnState,
        expires: u64,
        nat: Option<&Nat>,
        alg: u8,
        now: u64,
    ) -> Insertion {
        let nat_flag = match nat {
            Some(Nat::Src(_)) => NAT_SRC,
            Some(Nat::Dst(_)) => NAT_DST,
            _ => 0,
        };
        let mut outcome = Insertion::Failed;
        let hk = self.table.hash(key);
        let mut attempt = |rev: &ConnKey| -> bool {
            if nat_flag != 0 && self.holds_live(rev, now) {
                return false;
            }
            let conn = Arc::new(Conn::new_alg(*key, *rev, nat_flag, alg, st, expires));
            outcome = self.insert_clearing_expired(conn, hk, now);
            !matches!(outcome, Insertion::Failed)
        };
        match nat {
            Some(n) => {
                if !for_each_candidate(key, n, self.nat_hash(key, n), &mut attempt) {
                    self.counters.nat_exhausted.fetch_add(1, Relaxed);
                }
            }
            None => {
                attempt(&key.reverse());
            }
        }
        outcome
    }

    /// Inserts a connection an expectation `e` announced, committed by a `ct` with `nat`:
    /// translated as the expectation says (the address only, as OVS does), whatever the
    /// action's range.
    fn insert_related_nat(
        &self,
        key: &ConnKey,
        e: &alg::Expected,
        st: ConnState,
        expires: u64,
        alg: u8,
        now: u64,
    ) -> Insertion {
        let (src_nat, addr) = e.nat;
        let mut rev = key.reverse();
        let flag = if src_nat {
            rev.dst = addr;
            NAT_SRC
        } else {
            rev.src = addr;
            NAT_DST
        };
        if self.holds_live(&rev, now) {
            return Insertion::Failed;
        }
        let conn = Arc::new(Conn::new_alg(*key, rev, flag, alg, st, expires));
        self.insert_clearing_expired(conn, self.table.hash(key), now)
    }

    /// True if a connection that has not expired holds `key` (an expired one is absent for
    /// NAT's choice of a tuple, as for lookups: the insertion clears it).
    fn holds_live(&self, key: &ConnKey, now: u64) -> bool {
        self.table
            .lookup(key, self.table.hash(key), |c, _| c.expires() > now)
            .unwrap_or(false)
    }

    /// Inserts `conn` (`hk`: its original key's hash) under both its keys. An expired
    /// connection under both takes its place in the table; an expired holder of either
    /// key alone is removed and the insertion retried; a live one that holds the original
    /// key committed this connection first.
    #[inline]
    fn insert_clearing_expired(&self, conn: Arc<Conn>, hk: u64, now: u64) -> Insertion {
        let dead = |c: &Conn| c.expires() <= now;
        for _ in 0..3 {
            match self.table.insert(conn.clone(), hk, dead) {
                Ok(None) => return Insertion::Done(conn),
                Ok(Some(old)) => {
                    self.release(old.key.zone);
                    return Insertion::Done(conn);
                }
                Err(Taken { conn: other, rev }) => {
                    if other.expires() <= now {
                        self.remove_conn(&other);
                        continue;
                    }
                    return if rev {
                        Insertion::Failed
                    } else {
                        Insertion::Lost
                    };
                }
            }
        }
        Insertion::Failed
    }

    /// Where a NAT range's search for a free tuple starts: random, by the addresses alone
    /// (`persistent`), or by the whole tuple.
    fn nat_hash(&self, key: &ConnKey, n: &Nat) -> u64 {
        match n {
            Nat::Src(r) | Nat::Dst(r) if r.random => random_u64(),
            Nat::Src(r) | Nat::Dst(r) if r.persistent => self
                .table
                .hash_any(&(key.src, key.dst, key.zone, key.proto)),
            _ => self.table.hash(key),
        }
    }
}

/// The state of a connection the packet opens, `None` if it may not open one (TCP: bad
/// flags or SYN+ACK, or no segment parsed; ICMP: not a query request).
#[inline]
fn opening_state(key: &ConnKey, tcp: Option<&TcpSeg>) -> Option<ProtoState> {
    match (key.proto, tcp) {
        (key::PROTO_TCP, Some(seg)) => {
            tcp::valid_new(seg.flags).then(|| ProtoState::Tcp(TcpConn::new(seg)))
        }
        (key::PROTO_TCP, None) => None,
        (p, _) if key::is_icmp_proto(p) => {
            key::icmp_is_request(key.v6, key.icmp_type).then_some(ProtoState::Icmp(false))
        }
        _ => Some(ProtoState::Other(0)),
    }
}

/// Translates the first packet of a NAT connection to its tuple; its `+snat`/`+dnat` bit.
fn translate_first(frame: &mut [u8], meta: &PacketMeta, conn: &Conn) -> u32 {
    let Some(l4) = meta.l4 else {
        return 0;
    };
    rewrite::rewrite(
        frame,
        usize::from(meta.l3),
        usize::from(l4),
        &conn.key,
        &conn.rev.reverse(),
    );
    nat_bits(conn.nat, false)
}
