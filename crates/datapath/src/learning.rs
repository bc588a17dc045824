//! The `learning` module: a VLAN-aware MAC learning bridge.
//!
//! ## Behaviour (as OVS's NORMAL action, for what it covers)
//! * Each port is a trunk (all VLANs tagged, or the `trunks=` list; untagged frames are VLAN 0)
//!   or an access port (`tag=N`: untagged frames belong to VLAN N; tagged frames other than
//!   priority-tagged VLAN 0 are dropped). Frames whose VLAN the port does not carry are dropped.
//! * The source (VLAN, MAC) of every unicast-sourced frame is learned on its ingress port; a
//!   MAC seen on a new port moves there (a *station move*, counted).
//! * Unicast to a known (VLAN, MAC): sent to that port (dropped if that is the ingress port).
//!   Unknown unicast, broadcast and multicast: flooded to every other port carrying the VLAN.
//! * Entries age out `mac-aging-time` seconds (default 300) after they were last seen. The table
//!   holds at most `mac-table-size` entries (default 2048, as OVS); learning a new MAC into a
//!   full table evicts the least recently seen one.
//! * On egress, frames are tagged for trunk ports and untagged for access ports, so a frame
//!   crosses between access and trunk ports with the right 802.1Q header.
//!
//! ## How
//! The table is a hash map keyed by `vlan << 48 | mac` with a process-random seed (so hosts
//! cannot pick colliding MACs). Eviction order is kept in a FIFO of (key, time) records that is
//! lazily corrected: a popped record whose entry was seen again since is re-queued, which gives
//! exact LRU at amortised O(1). Lookup keeps a one-entry cache of the last source and the last
//! destination (validated by a table generation number), which removes the hash lookups for
//! the common case of a batch of one conversation.
//!
//! The VLAN a frame belongs to travels in `Packet::meta`: bits 0-11 the VLAN, bit 15 set when
//! the frame still carries its 802.1Q tag. Egress work happens only when some port is an
//! access port or has a trunk list ([`SwitchLogic::wants_egress`]); a bridge of plain trunk
//! ports never touches packet bytes.

use crate::fasthash::{FastMap, FastState};
use crate::module::ModuleError;
use crate::module::{
    Ctx, Delivery, Dest, ModuleCommand, PortInfo, PortLookup, SwitchLogic, VlanMode,
};
use packet::{Batch, Pool};
use std::collections::VecDeque;

/// This module in the registry ([`crate::registry`]).
pub const REGISTRATION: crate::registry::Registration = crate::registry::Registration {
    name: "learning",
    create: || Ok(Box::new(Learning::new())),
};

/// Default seconds after which an unseen MAC is forgotten.
pub const DEFAULT_AGING_S: u64 = 300;
/// Default table size limit.
pub const DEFAULT_TABLE_SIZE: usize = 2048;

const TAGGED: u16 = 0x8000;
const VLAN_MASK: u16 = 0x0fff;

#[derive(Clone, Copy, Debug)]
struct Entry {
    port: u16,
    seen_ms: u64,
}

/// Counters of the learning module.
#[derive(Clone, Copy, Debug, Default)]
pub struct LearningStats {
    pub learned: u64,
    pub moved: u64,
    pub expired: u64,
    pub evicted: u64,
    pub flooded: u64,
    pub forwarded: u64,
    pub dropped_vlan: u64,
    pub dropped_short: u64,
    pub dropped_same_port: u64,
}

/// See the module documentation.
pub struct Learning {
    table: FastMap<u64, Entry>,
    lru: VecDeque<(u64, u64)>,
    aging_ms: u64,
    max_entries: usize,
    gen: u64,
    ports: Vec<Option<VlanMode>>,
    any_vlan_cfg: bool,
    last_src: (u64, u16, u64),
    last_dst: (u64, u64, u16, u64),
    stats: LearningStats,
}

impl Default for Learning {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
fn mac_key(vlan: u16, mac: &[u8]) -> u64 {
    let mut k = u64::from(vlan & VLAN_MASK) << 48;
    for (i, b) in mac.iter().take(6).enumerate() {
        k |= u64::from(*b) << (8 * (5 - i));
    }
    k
}

fn key_mac(k: u64) -> String {
    let b = k.to_be_bytes();
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        b[2], b[3], b[4], b[5], b[6], b[7]
    )
}

impl Learning {
    /// An empty bridge with OVS's defaults.
    pub fn new() -> Learning {
        Learning {
            table: FastMap::with_hasher(FastState::random()),
            lru: VecDeque::new(),
            aging_ms: DEFAULT_AGING_S * 1000,
            max_entries: DEFAULT_TABLE_SIZE,
            gen: 1,
            ports: Vec::new(),
            any_vlan_cfg: false,
            last_src: (u64::MAX, 0, 0),
            last_dst: (u64::MAX, 0, 0, 0),
            stats: LearningStats::default(),
        }
    }

    /// Module counters.
    pub fn stats(&self) -> LearningStats {
        self.stats
    }

    /// Number of learned entries.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when nothing is learned.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Forgets every entry.
    pub fn flush(&mut self) {
        self.table.clear();
        self.lru.clear();
        self.gen += 1;
    }

    fn vlan_mode(&self, port: u16) -> &VlanMode {
        static TRUNK_ALL: VlanMode = VlanMode::Trunk(None);
        match self.ports.get(port as usize) {
            Some(Some(m)) => m,
            _ => &TRUNK_ALL,
        }
    }

    fn recompute_vlan_cfg(&mut self) {
        self.any_vlan_cfg = self
            .ports
            .iter()
            .flatten()
            .any(|m| !matches!(m, VlanMode::Trunk(None)));
    }

    /// Learns `key` on `port` at `now`. Returns false if the table could not take it.
    fn learn(&mut self, key: u64, port: u16, now: u64) {
        if let Some(e) = self.table.get_mut(&key) {
            if e.port != port {
                e.port = port;
                self.stats.moved += 1;
                self.gen += 1;
            }
            e.seen_ms = now;
            return;
        }
        while self.table.len() >= self.max_entries {
            if !self.evict_one() {
                return;
            }
        }
        self.table.insert(key, Entry { port, seen_ms: now });
        self.lru.push_back((key, now));
        self.stats.learned += 1;
        self.gen += 1;
    }

    /// Evicts the least recently seen entry. False if nothing could be evicted.
    fn evict_one(&mut self) -> bool {
        while let Some((key, t)) = self.lru.pop_front() {
            match self.table.get(&key) {
                Some(e) if e.seen_ms > t => {
                    let s = e.seen_ms;
                    self.lru.push_back((key, s));
                }
                Some(_) => {
                    self.table.remove(&key);
                    self.stats.evicted += 1;
                    self.gen += 1;
                    return true;
                }
                None => {}
            }
        }
        false
    }

    fn expire(&mut self, now: u64) {
        let aging = self.aging_ms;
        let before = self.table.len();
        self.table
            .retain(|_, e| now.saturating_sub(e.seen_ms) <= aging);
        let gone = before - self.table.len();
        if gone > 0 {
            self.stats.expired += gone as u64;
            self.gen += 1;
        }
        // Drop LRU records of keys that are gone, so the FIFO stays bounded.
        if self.lru.len() > 2 * self.table.len() + 64 {
            let table = &self.table;
            self.lru.retain(|(k, _)| table.contains_key(k));
        }
    }

    /// Counts `n` packets forwarded on an answer [`Learning::lookup_packet`] gave once for
    /// all of them (a uniform burst, see `ofmodule`'s single-pass encapsulation).
    pub fn count_forwarded(&mut self, n: u64) {
        self.stats.forwarded += n;
    }

    #[inline(always)]
    pub fn lookup_packet(&mut self, now: u64, in_port: u16, pkt: &mut packet::Packet) -> Dest {
        let d = pkt.data();
        if d.len() < 14 {
            self.stats.dropped_short += 1;
            return Dest::Drop;
        }
        let ethertype = u16::from_be_bytes([d[12], d[13]]);
        let (vid, tagged) = if ethertype == 0x8100 || ethertype == 0x88a8 {
            if d.len() < 18 {
                self.stats.dropped_short += 1;
                return Dest::Drop;
            }
            (u16::from_be_bytes([d[14], d[15]]) & VLAN_MASK, true)
        } else {
            (0, false)
        };
        let vlan = if self.any_vlan_cfg {
            match self.vlan_mode(in_port) {
                VlanMode::Access(t) => {
                    if tagged && vid != 0 {
                        self.stats.dropped_vlan += 1;
                        return Dest::Drop;
                    }
                    *t
                }
                m => {
                    if !m.carries(vid) {
                        self.stats.dropped_vlan += 1;
                        return Dest::Drop;
                    }
                    vid
                }
            }
        } else {
            vid
        };
        pkt.meta = vlan | if tagged { TAGGED } else { 0 };
        let d = pkt.data();
        // Learn the source (unicast sources only).
        if d[6] & 1 == 0 {
            let sk = mac_key(vlan, &d[6..12]);
            let (lk, lp, lt) = self.last_src;
            if !(lk == sk && lp == in_port && now.saturating_sub(lt) < 1000) {
                self.learn(sk, in_port, now);
                self.last_src = (sk, in_port, now);
            }
        }
        if d[0] & 1 != 0 {
            self.stats.flooded += 1;
            return Dest::Flood;
        }
        let dk = mac_key(vlan, &d[0..6]);
        let (ck, cgen, cport, cseen) = self.last_dst;
        let port = if ck == dk && cgen == self.gen && now.saturating_sub(cseen) <= self.aging_ms {
            Some(cport)
        } else {
            match self.table.get(&dk) {
                Some(e) if now.saturating_sub(e.seen_ms) <= self.aging_ms => {
                    self.last_dst = (dk, self.gen, e.port, e.seen_ms);
                    Some(e.port)
                }
                _ => None,
            }
        };
        match port {
            Some(p) if p == in_port => {
                self.stats.dropped_same_port += 1;
                Dest::Drop
            }
            Some(p) => {
                self.stats.forwarded += 1;
                Dest::Port(p)
            }
            None => {
                self.stats.flooded += 1;
                Dest::Flood
            }
        }
    }

    fn fdb_show(&self, now: u64, json: bool, ports: &dyn PortLookup) -> String {
        let mut rows: Vec<(u16, u16, String, u64)> = self
            .table
            .iter()
            .filter(|(_, e)| now.saturating_sub(e.seen_ms) <= self.aging_ms)
            .map(|(k, e)| {
                (
                    e.port,
                    (k >> 48) as u16,
                    key_mac(*k),
                    now.saturating_sub(e.seen_ms) / 1000,
                )
            })
            .collect();
        rows.sort_by(|a, b| (a.1, &a.2).cmp(&(b.1, &b.2)));
        let name = |idx: u16| -> (String, u32) {
            ports
                .info(idx)
                .map(|i| (i.name, i.ofport))
                .unwrap_or_else(|| ("?".into(), 0))
        };
        if json {
            let v: Vec<_> = rows
                .iter()
                .map(|(p, vlan, mac, age)| {
                    let (n, of) = name(*p);
                    serde_json::json!({"port": of, "port_name": n, "vlan": vlan, "mac": mac, "age": age})
                })
                .collect();
            return serde_json::Value::Array(v).to_string();
        }
        let mut s = String::from(" port  VLAN  MAC                Age\n");
        for (p, vlan, mac, age) in rows {
            let (_, of) = name(p);
            let ps = if of == crate::LOCAL_OFPORT {
                "LOCAL".to_string()
            } else {
                of.to_string()
            };
            s.push_str(&format!("{ps:>5}  {vlan:>4}  {mac}  {age:>3}\n"));
        }
        s
    }

    fn fdb_stats(&self, json: bool) -> String {
        let s = &self.stats;
        if json {
            return serde_json::json!({
                "entries": self.table.len(), "max": self.max_entries,
                "aging_s": self.aging_ms / 1000, "learned": s.learned, "moved": s.moved,
                "expired": s.expired, "evicted": s.evicted,
            })
            .to_string();
        }
        format!(
            "Statistics for bridge:\n  Current/maximum MAC entries in the table: {}/{}\n  Current static MAC entries in the table : 0\n  Total number of learned MAC entries     : {}\n  Total number of expired MAC entries     : {}\n  Total number of evicted MAC entries     : {}\n  Total number of port moved MAC entries  : {}\n",
            self.table.len(),
            self.max_entries,
            s.learned,
            s.expired,
            s.evicted,
            s.moved
        )
    }
}

/// The MAC table's verbs (also the `openflow` module's, for its NORMAL table).
pub(crate) const COMMANDS: &[ModuleCommand] = &[
    ModuleCommand {
        verb: "fdb-show",
        usage: "BR",
    },
    ModuleCommand {
        verb: "fdb-flush",
        usage: "BR",
    },
    ModuleCommand {
        verb: "fdb-stats",
        usage: "BR",
    },
];

impl Learning {
    /// Chooses the destination of every packet of `batch` (`dests.len() == batch.len()`);
    /// strips a VLAN tag from a tagged frame it takes in.
    pub fn classify(&mut self, ctx: &Ctx, batch: &mut Batch, dests: &mut [Dest]) {
        let now = ctx.now_ms;
        for (pkt, d) in batch.packets_mut().iter_mut().zip(dests.iter_mut()) {
            let in_port = pkt.in_port;
            *d = self.lookup_packet(now, in_port, pkt);
        }
    }

    /// The egress stage: adapts a burst for port `port` to its VLAN mode (tags, untags, or
    /// frees what the port does not carry).
    pub fn egress(&mut self, port: u16, batch: &mut Batch, pool: &mut Pool) {
        let mode = self.vlan_mode(port).clone();
        batch.retain_or_free(pool, |p| {
            let vlan = p.meta & VLAN_MASK;
            let tagged = p.meta & TAGGED != 0;
            if !mode.carries(vlan) {
                return false;
            }
            match mode {
                VlanMode::Access(_) => {
                    if tagged {
                        if !p.remove_at(12, 4) {
                            return false;
                        }
                        p.meta &= !TAGGED;
                    }
                    true
                }
                VlanMode::Trunk(_) => {
                    if vlan != 0 && !tagged {
                        let Some(tag) = p.insert_at(12, 4) else {
                            return false;
                        };
                        tag[0] = 0x81;
                        tag[1] = 0x00;
                        tag[2..4].copy_from_slice(&vlan.to_be_bytes());
                        p.meta |= TAGGED;
                    }
                    true
                }
            }
        });
    }
}

impl SwitchLogic for Learning {
    fn name(&self) -> &'static str {
        "learning"
    }

    fn forward(&mut self, ctx: &Ctx, batch: &mut Batch, pool: &mut Pool, out: &mut Delivery<'_>) {
        out.by_dest(batch, pool, |batch, dests| self.classify(ctx, batch, dests));
        // The egress stage: each burst adapted to its port's VLAN mode.
        if self.any_vlan_cfg {
            out.adapt_bursts(pool, |port, burst, pool| self.egress(port, burst, pool));
        }
    }

    fn port_added(&mut self, info: &PortInfo) {
        let i = info.idx as usize;
        if self.ports.len() <= i {
            self.ports.resize(i + 1, None);
        }
        self.ports[i] = Some(info.vlan.clone());
        self.recompute_vlan_cfg();
    }

    fn port_removed(&mut self, idx: u16) {
        if let Some(m) = self.ports.get_mut(idx as usize) {
            *m = None;
        }
        self.recompute_vlan_cfg();
        let before = self.table.len();
        self.table.retain(|_, e| e.port != idx);
        if before != self.table.len() {
            self.gen += 1;
        }
        self.last_src = (u64::MAX, 0, 0);
    }

    fn run(&mut self, ctx: &Ctx) {
        self.expire(ctx.now_ms);
    }

    fn configure(&mut self, key: &str, value: &str) -> Result<(), ModuleError> {
        match key {
            "mac-aging-time" => {
                let s: u64 = value
                    .parse()
                    .ok()
                    .filter(|s| (1..=1_000_000).contains(s))
                    .ok_or_else(|| ModuleError::BadValue {
                        key: key.to_string(),
                        value: value.to_string(),
                        expected: "a number of seconds in 1..=1000000".into(),
                    })?;
                self.aging_ms = s * 1000;
                Ok(())
            }
            "mac-table-size" => {
                let n: usize = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=1_000_000).contains(n))
                    .ok_or_else(|| ModuleError::BadValue {
                        key: key.to_string(),
                        value: value.to_string(),
                        expected: "a size in 1..=1000000".into(),
                    })?;
                self.max_entries = n;
                while self.table.len() > self.max_entries {
                    if !self.evict_one() {
                        break;
                    }
                }
                Ok(())
            }
            _ => Err(ModuleError::UnknownSetting {
                module: "learning",
                key: key.to_string(),
                settings: "mac-aging-time, mac-table-size",
            }),
        }
    }

    fn commands(&self) -> &'static [ModuleCommand] {
        COMMANDS
    }

    fn command(
        &mut self,
        verb: &str,
        args: &[String],
        json: bool,
        ctx: &Ctx,
        ports: &dyn PortLookup,
    ) -> Result<String, ModuleError> {
        if let Some(arg) = args.first() {
            return Err(ModuleError::UnexpectedArgument {
                verb: verb.to_string(),
                arg: arg.clone(),
            });
        }
        match verb {
            "fdb-show" => Ok(self.fdb_show(ctx.now_ms, json, ports)),
            "fdb-flush" => {
                self.flush();
                Ok("table successfully flushed\n".into())
            }
            "fdb-stats" => Ok(self.fdb_stats(json)),
            _ => Err(ModuleError::NoSuchVerb {
                module: "learning",
                verb: verb.to_string(),
            }),
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("mac_entries", self.table.len() as u64),
            ("learned", s.learned),
            ("moved", s.moved),
            ("expired", s.expired),
            ("evicted", s.evicted),
            ("flooded", s.flooded),
            ("forwarded", s.forwarded),
            ("dropped_vlan", s.dropped_vlan),
            ("dropped_short", s.dropped_short),
            ("dropped_same_port", s.dropped_same_port),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::Pool;

    fn frame(dst: [u8; 6], src: [u8; 6], vlan: Option<u16>) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        if let Some(v) = vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&v.to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(60, 0);
        f
    }

    fn info(idx: u16, vlan: VlanMode) -> PortInfo {
        PortInfo {
            idx,
            ofport: u32::from(idx) + 1,
            name: format!("p{idx}"),
            vlan,
        }
    }

    fn run1(l: &mut Learning, pool: &mut Pool, now: u64, in_port: u16, f: &[u8]) -> Dest {
        let mut b = Batch::new();
        let mut p = pool.alloc().expect("buf");
        p.set_frame(f);
        p.in_port = in_port;
        assert!(b.push(p).is_ok());
        let mut d = [Dest::Drop];
        l.classify(&Ctx { now_ms: now }, &mut b, &mut d);
        pool.free_batch(&mut b);
        d[0]
    }

    const A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];
    const BCAST: [u8; 6] = [0xff; 6];

    #[test]
    fn learns_floods_forwards_and_moves() {
        let mut pool = Pool::new(8);
        let mut l = Learning::new();
        for i in 0..3 {
            l.port_added(&info(i, VlanMode::Trunk(None)));
        }
        assert_eq!(
            run1(&mut l, &mut pool, 0, 0, &frame(B, A, None)),
            Dest::Flood
        );
        assert_eq!(
            run1(&mut l, &mut pool, 1, 1, &frame(A, B, None)),
            Dest::Port(0)
        );
        assert_eq!(
            run1(&mut l, &mut pool, 2, 0, &frame(B, A, None)),
            Dest::Port(1)
        );
        assert_eq!(
            run1(&mut l, &mut pool, 3, 0, &frame(BCAST, A, None)),
            Dest::Flood
        );
        // A moves to port 2.
        assert_eq!(
            run1(&mut l, &mut pool, 4, 2, &frame(B, A, None)),
            Dest::Port(1)
        );
        assert_eq!(
            run1(&mut l, &mut pool, 5, 1, &frame(A, B, None)),
            Dest::Port(2)
        );
        assert_eq!(l.stats().moved, 1);
        // Destination on the ingress port: dropped.
        assert_eq!(
            run1(&mut l, &mut pool, 6, 2, &frame(A, B, None)),
            Dest::Drop
        );
        assert_eq!(pool.outstanding(), 0);
    }

    #[test]
    fn entries_age_out() {
        let mut pool = Pool::new(8);
        let mut l = Learning::new();
        l.configure("mac-aging-time", "10").expect("cfg");
        assert!(l.configure("mac-aging-time", "x").is_err());
        run1(&mut l, &mut pool, 0, 0, &frame(B, A, None));
        assert_eq!(
            run1(&mut l, &mut pool, 9_000, 1, &frame(A, B, None)),
            Dest::Port(0)
        );
        // A last seen at 0; at 10.5 s it is forgotten even before the sweep.
        assert_eq!(
            run1(&mut l, &mut pool, 10_500, 1, &frame(A, B, None)),
            Dest::Flood
        );
        l.run(&Ctx { now_ms: 10_500 });
        assert_eq!(l.len(), 1);
        assert_eq!(l.stats().expired, 1);
    }

    #[test]
    fn table_limit_evicts_least_recently_seen() {
        let mut pool = Pool::new(8);
        let mut l = Learning::new();
        l.configure("mac-table-size", "2").expect("cfg");
        let m = |i: u8| [2, 0, 0, 0, 1, i];
        run1(&mut l, &mut pool, 0, 0, &frame(BCAST, m(1), None));
        run1(&mut l, &mut pool, 1, 0, &frame(BCAST, m(2), None));
        // m(1) seen again later than m(2) (past the 1 s source cache).
        run1(&mut l, &mut pool, 2000, 0, &frame(BCAST, m(1), None));
        run1(&mut l, &mut pool, 2001, 1, &frame(BCAST, m(3), None));
        assert_eq!(l.len(), 2);
        assert_eq!(l.stats().evicted, 1);
        // Sourced from m(3), already known: nothing new is learned by these lookups.
        assert_eq!(
            run1(&mut l, &mut pool, 2002, 1, &frame(m(1), m(3), None)),
            Dest::Port(0)
        );
        assert_eq!(
            run1(&mut l, &mut pool, 2003, 1, &frame(m(2), m(3), None)),
            Dest::Flood
        );
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn vlans_separate_tables_and_access_ports_drop_tagged() {
        let mut pool = Pool::new(8);
        let mut l = Learning::new();
        l.port_added(&info(0, VlanMode::Access(10)));
        l.port_added(&info(1, VlanMode::Access(20)));
        l.port_added(&info(2, VlanMode::Trunk(None)));
        assert!(l.any_vlan_cfg);
        run1(&mut l, &mut pool, 0, 0, &frame(BCAST, A, None));
        // B on the trunk in VLAN 10 reaches A; in VLAN 20 it does not know A.
        assert_eq!(
            run1(&mut l, &mut pool, 1, 2, &frame(A, B, Some(10))),
            Dest::Port(0)
        );
        assert_eq!(
            run1(&mut l, &mut pool, 2, 2, &frame(A, B, Some(20))),
            Dest::Flood
        );
        // Tagged frame on an access port: dropped.
        assert_eq!(
            run1(&mut l, &mut pool, 3, 0, &frame(B, A, Some(10))),
            Dest::Drop
        );
        assert_eq!(l.stats().dropped_vlan, 1);
    }

    #[test]
    fn egress_tags_and_untags() {
        let mut pool = Pool::new(8);
        let mut l = Learning::new();
        l.port_added(&info(0, VlanMode::Access(10)));
        l.port_added(&info(1, VlanMode::Trunk(None)));
        l.port_added(&info(2, VlanMode::Access(20)));
        // Untagged from access port 0 (VLAN 10) to the trunk: gets a tag.
        let mut b = Batch::new();
        let mut p = pool.alloc().expect("buf");
        p.set_frame(&frame(BCAST, A, None));
        p.in_port = 0;
        assert!(b.push(p).is_ok());
        let mut d = [Dest::Drop];
        l.classify(&Ctx { now_ms: 0 }, &mut b, &mut d);
        let mut c = Batch::new();
        assert!(c
            .push(pool.clone_packet(&b.packets()[0]).expect("clone"))
            .is_ok());
        l.egress(1, &mut b, &mut pool);
        assert_eq!(&b.packets()[0].data()[12..16], &[0x81, 0, 0, 10]);
        // The same frame must not reach access port 2 (VLAN 20).
        l.egress(2, &mut c, &mut pool);
        assert!(c.is_empty());
        // Tagged from the trunk to access port 0: untagged.
        let mut b2 = Batch::new();
        let mut p = pool.alloc().expect("buf");
        p.set_frame(&frame(BCAST, B, Some(10)));
        p.in_port = 1;
        assert!(b2.push(p).is_ok());
        l.classify(&Ctx { now_ms: 0 }, &mut b2, &mut d);
        l.egress(0, &mut b2, &mut pool);
        assert_eq!(&b2.packets()[0].data()[12..14], &[0x08, 0x00]);
        pool.free_batch(&mut b);
        pool.free_batch(&mut b2);
        assert_eq!(pool.outstanding(), 0);
    }
}
