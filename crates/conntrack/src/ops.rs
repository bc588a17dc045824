//! # Operations: expiry sweep, dump, flush, statistics, limits
//!
//! ## What
//! What the daemon exposes as OVS's `dpctl/*` conntrack commands, plus [`Conntrack::sweep`],
//! the incremental expiry the control thread runs. None of it is on the packet path.
//!
//! * [`Conntrack::sweep`] visits shards round-robin from a cursor, examining at least one
//!   whole shard and stopping once `budget` connections were examined; expired ones are
//!   collected under the shard's read lock (poll threads keep reading it) and then removed
//!   with the write locks of their two shards. Calling it every 100 ms with a budget of a
//!   few thousand keeps a table of millions within a few seconds of exact expiry.
//! * [`Conntrack::dump`] prints one line per connection in `ovs-appctl dpctl/dump-conntrack`
//!   format (`tcp,orig=(src=..,dst=..,sport=..,dport=..),reply=(..),zone=..,mark=..,
//!   labels=0x..,protoinfo=(state=..)`), with `timeout=` (seconds left) when `stats`.
//! * [`Conntrack::flush`]: everything, one zone, or the connection a tuple names (in either
//!   direction), as `dpctl/flush-conntrack`.
//! * [`Conntrack::stats_text`] is `dpctl/ct-stats-show`, [`Conntrack::bkts_text`] is
//!   `dpctl/ct-bkts` (the buckets are the table's shards), [`Conntrack::limits_text`] is
//!   `dpctl/ct-get-limits`.
//!
//! ## Threading
//! All take `&self` and may run while poll threads execute; a dump is a consistent view of
//! each shard, not of the whole table at one instant.

use crate::key::{ConnKey, PROTO_ICMP, PROTO_ICMPV6, PROTO_SCTP, PROTO_TCP, PROTO_UDP};
use crate::table::{Conn, ProtoState};
use crate::tcp::state::NAMES as TCP_STATE_NAMES;
use crate::tracker::Conntrack;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// One connection as a dump reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnEntry {
    /// Original-direction tuple (with zone).
    pub orig: ConnKey,
    /// Reply-direction tuple.
    pub reply: ConnKey,
    /// `ct_mark`.
    pub mark: u32,
    /// `ct_label`.
    pub label: u128,
    /// Milliseconds until expiry (0 if already expired).
    pub expires_in: u64,
    /// For TCP, the state a dump shows (see [`crate::tcp::TcpConn::display_state`]).
    pub tcp_state: Option<u8>,
    /// The connection's helper (`ftp`, `tftp`), if it has one.
    pub helper: Option<&'static str>,
}

/// What `flush` removes.
#[derive(Clone, Copy, Debug)]
pub enum Flush {
    /// Every connection.
    All,
    /// Every connection of a zone.
    Zone(u16),
    /// The connection with this tuple (either direction; the key's zone counts).
    Tuple(ConnKey),
}

fn proto_name(p: u8) -> Option<&'static str> {
    Some(match p {
        PROTO_ICMP => "icmp",
        PROTO_ICMPV6 => "icmpv6",
        PROTO_TCP => "tcp",
        PROTO_UDP => "udp",
        PROTO_SCTP => "sctp",
        136 => "udplite",
        33 => "dccp",
        2 => "igmp",
        _ => return None,
    })
}

fn fmt_tuple(s: &mut String, k: &ConnKey) {
    if k.v6 {
        let _ = write!(
            s,
            "src={},dst={}",
            Ipv6Addr::from(k.src),
            Ipv6Addr::from(k.dst)
        );
    } else {
        let _ = write!(
            s,
            "src={},dst={}",
            Ipv4Addr::from(k.src4()),
            Ipv4Addr::from(k.dst4())
        );
    }
    if k.is_icmp() {
        let _ = write!(
            s,
            ",id={},type={},code={}",
            k.sport, k.icmp_type, k.icmp_code
        );
    } else {
        let _ = write!(s, ",sport={},dport={}", k.sport, k.dport);
    }
}

impl ConnEntry {
    /// The `dpctl/dump-conntrack` line (without the trailing newline).
    pub fn format(&self, stats: bool) -> String {
        let mut s = String::with_capacity(160);
        match proto_name(self.orig.proto) {
            Some(n) => s.push_str(n),
            None => {
                let _ = write!(s, "{}", self.orig.proto);
            }
        }
        s.push_str(",orig=(");
        fmt_tuple(&mut s, &self.orig);
        s.push_str("),reply=(");
        fmt_tuple(&mut s, &self.reply);
        s.push(')');
        if self.orig.zone != 0 {
            let _ = write!(s, ",zone={}", self.orig.zone);
        }
        if stats {
            let _ = write!(s, ",timeout={}", self.expires_in / 1000);
        }
        if self.mark != 0 {
            let _ = write!(s, ",mark={}", self.mark);
        }
        if self.label != 0 {
            let _ = write!(s, ",labels={:#x}", self.label);
        }
        if let Some(t) = self.tcp_state {
            let name = TCP_STATE_NAMES.get(usize::from(t)).copied().unwrap_or("?");
            let _ = write!(s, ",protoinfo=(state={name})");
        }
        if let Some(h) = self.helper {
            let _ = write!(s, ",helper={h}");
        }
        s
    }
}

impl Conntrack {
    fn entry(conn: &Conn, now: u64) -> ConnEntry {
        let st = conn.st.lock();
        ConnEntry {
            orig: conn.key,
            reply: conn.rev,
            mark: st.mark,
            label: st.label(),
            expires_in: conn.expires().saturating_sub(now),
            tcp_state: match st.proto {
                ProtoState::Tcp(t) => Some(t.display_state()),
                _ => None,
            },
            helper: crate::alg::helper_name(conn.alg),
        }
    }

    /// Every live connection (of `zone` if given), unordered.
    pub fn entries(&self, zone: Option<u16>, now: u64) -> Vec<ConnEntry> {
        let mut v = Vec::new();
        for i in 0..self.table.n_shards() {
            self.table.for_each_in_shard(i, |c| {
                if zone.is_none_or(|z| z == c.key.zone) {
                    let e = Self::entry(c, now);
                    if e.expires_in > 0 {
                        v.push(e);
                    }
                }
            });
        }
        v
    }

    /// `dpctl/dump-conntrack [zone=N]`: one line per connection, sorted.
    pub fn dump(&self, zone: Option<u16>, stats: bool, now: u64) -> String {
        let mut lines: Vec<String> = self
            .entries(zone, now)
            .iter()
            .map(|e| e.format(stats))
            .collect();
        lines.sort();
        let mut s = String::new();
        for l in lines {
            s.push_str(&l);
            s.push('\n');
        }
        s
    }

    fn collect(&self, mut pred: impl FnMut(&Conn) -> bool) -> Vec<Arc<Conn>> {
        let mut v = Vec::new();
        for i in 0..self.table.n_shards() {
            self.table.for_each_in_shard(i, |c| {
                if pred(c) {
                    v.push(c.clone());
                }
            });
        }
        v
    }

    /// `dpctl/flush-conntrack`; returns the number of connections removed.
    pub fn flush(&self, what: Flush) -> usize {
        let victims = match what {
            Flush::All => self.collect(|_| true),
            Flush::Zone(z) => self.collect(|c| c.key.zone == z),
            Flush::Tuple(k) => {
                let h = self.table.hash(&k);
                self.table
                    .lookup(&k, h, |c, _| c.clone())
                    .into_iter()
                    .collect()
            }
        };
        victims.iter().filter(|c| self.remove_conn(c)).count()
    }

    /// Removes expired connections, examining about `budget` of them from where the last
    /// call stopped; returns how many were removed.
    pub fn sweep(&self, now: u64, budget: usize) -> usize {
        let mut cursor = self.sweep_cursor.lock();
        let n = self.table.n_shards();
        let mut examined = 0usize;
        let mut removed = 0usize;
        let mut visited = 0;
        while visited < n && (visited == 0 || examined < budget) {
            let i = *cursor % n;
            *cursor = (i + 1) % n;
            visited += 1;
            let mut dead = Vec::new();
            self.table.for_each_in_shard(i, |c| {
                examined += 1;
                if c.expires() <= now {
                    dead.push(c.clone());
                }
            });
            for c in &dead {
                // Re-check: a packet may not revive an expired connection (lookups treat
                // it as absent), so it is safe to remove.
                if self.remove_conn(c) {
                    removed += 1;
                }
            }
        }
        self.counters.expired.fetch_add(removed as u64, Relaxed);
        self.expect.sweep(now);
        removed
    }

    /// Current number of connections.
    pub fn n_conns(&self) -> u32 {
        self.n_conns.load(Relaxed)
    }

    /// `dpctl/ct-set-maxconns`.
    pub fn set_max_conns(&self, n: u32) {
        self.max_conns.store(n, Relaxed);
    }

    /// `dpctl/ct-get-maxconns`.
    pub fn max_conns(&self) -> u32 {
        self.max_conns.load(Relaxed)
    }

    /// `dpctl/ct-set-limits default=N`: the limit of zones without their own (0: none).
    pub fn set_default_limit(&self, n: u32) {
        self.zones.default_limit.store(n, Relaxed);
    }

    /// `dpctl/ct-set-limits zone=Z,limit=N` (`None`: back to the default,
    /// `dpctl/ct-del-limits`). A limit of 0 means unlimited.
    pub fn set_zone_limit(&self, zone: u16, limit: Option<u32>) {
        let v = limit.map_or(u32::MAX, |l| l.min(u32::MAX - 1));
        self.zones.limit[usize::from(zone)].store(v, Relaxed);
    }

    /// The limit in force for `zone` and its current count.
    pub fn zone_limit(&self, zone: u16) -> (u32, u32) {
        let l = match self.zones.limit[usize::from(zone)].load(Relaxed) {
            u32::MAX => self.zones.default_limit.load(Relaxed),
            l => l,
        };
        (l, self.zones.count[usize::from(zone)].load(Relaxed))
    }

    /// `dpctl/ct-get-limits [zone=N,...]`: OVS's text (`default limit=N` then
    /// `zone=Z,limit=L,count=C` per zone with a limit of its own or asked for).
    pub fn limits_text(&self, zones: &[u16]) -> String {
        let mut s = format!("default limit={}", self.zones.default_limit.load(Relaxed));
        let own: Vec<u16> = if zones.is_empty() {
            (0..=u16::MAX)
                .filter(|&z| self.zones.limit[usize::from(z)].load(Relaxed) != u32::MAX)
                .collect()
        } else {
            zones.to_vec()
        };
        for z in own {
            let (l, c) = self.zone_limit(z);
            let _ = write!(s, "\nzone={z},limit={l},count={c}");
        }
        s
    }

    /// `dpctl/ct-stats-show [zone=N] [-m]`: connections per protocol (ICMPv6 counted with
    /// ICMP, as OVS does), and with `verbose` the TCP connections per state.
    pub fn stats_text(&self, zone: Option<u16>, verbose: bool, now: u64) -> String {
        let entries = self.entries(zone, now);
        const KEYS: [&str; 8] = [
            "TCP", "UDP", "UDPLITE", "SCTP", "ICMP", "DCCP", "IGMP", "Other",
        ];
        let mut per = [0usize; KEYS.len()];
        let mut tcp_states = [0usize; TCP_STATE_NAMES.len()];
        for e in &entries {
            let i = match e.orig.proto {
                PROTO_TCP => 0,
                PROTO_UDP => 1,
                136 => 2,
                PROTO_SCTP => 3,
                PROTO_ICMP | PROTO_ICMPV6 => 4,
                33 => 5,
                2 => 6,
                _ => 7,
            };
            per[i] += 1;
            if let Some(t) = e.tcp_state {
                if let Some(c) = tcp_states.get_mut(usize::from(t)) {
                    *c += 1;
                }
            }
        }
        let mut s = format!("Connections Stats:\n    Total: {}\n", entries.len());
        for (i, k) in KEYS.iter().enumerate() {
            if per[i] == 0 {
                continue;
            }
            let _ = writeln!(s, "  {k}: {}", per[i]);
            if i == 0 && verbose {
                s.push_str("    Conn per TCP states:\n");
                for (st, &c) in tcp_states.iter().enumerate() {
                    if c != 0 {
                        let _ = writeln!(s, "\t  [{}]={c}", TCP_STATE_NAMES[st]);
                    }
                }
            }
        }
        s
    }

    /// `dpctl/ct-bkts [gt=N]`: connections per shard (shards play OVS's buckets), in OVS's
    /// layout; counts not above `gt` print as `.`.
    pub fn bkts_text(&self, gt: u32) -> String {
        let lens = self.table.shard_lens();
        let total: usize = lens.iter().sum::<usize>() / 2;
        let mut s = format!(
            "Total Buckets: {}\nCurrent Connections: {}\n\n",
            lens.len(),
            total
        );
        if total == 0 {
            return s;
        }
        s.push_str("+-----------+-----------------------------------------+\n");
        s.push_str("|  Buckets  |         Connections per Buckets         |\n");
        s.push_str("+-----------+-----------------------------------------+");
        for (i, l) in lens.iter().enumerate() {
            if i % 8 == 0 {
                let _ = write!(s, "\n {:3}..{:3}   | ", i, i + 7);
            }
            let n = l / 2;
            if n > gt as usize {
                let _ = write!(s, "{n:5}");
            } else {
                let _ = write!(s, "{:>5}", ".");
            }
        }
        s.push_str("\n\n");
        s
    }

    /// Approximate bytes held: connection records plus table slots.
    pub fn memory_bytes(&self) -> usize {
        let per_conn = std::mem::size_of::<Conn>() + 16; // Arc counts
        self.n_conns() as usize * per_conn + self.table.table_bytes()
    }
}
