//! Versioned OpenFlow state: one writer, readers that never wait for it.
//!
//! ## What
//! [`Versions`] keeps two copies of a bridge's [`Ofproto`] (left-right). Readers — the
//! datapath's upcall handler, its revalidator, the uncached pipeline — take a
//! [`Versions::read`] guard on the *published* copy; the control plane changes the other one
//! through a [`Versions::write`] guard, and dropping that guard publishes it. So a bundle
//! commit of a million flow_mods runs while upcalls are translated against the state before
//! it, and readers see either the state before a change or the state after, never a partial
//! one.
//!
//! ## How
//! * `current` names the published copy. A write session locks the writer mutex, then
//!   write-locks the other copy — waiting only for readers that took it before the last
//!   publication (an upcall, a chunk of megaflows: short) — and first *catches it up*: the
//!   previous session's changes are replayed onto it from the published copy. Each table
//!   records which rule ids changed (`Table::take_changes`); the replay copies those ids' rules
//!   (the same classifier `Arc`s, so counters stay shared) or removes them, so a publication
//!   costs O(changes), not O(table): `ovs-ofctl add-flows` publishes once per flow_mod, into
//!   tables of 100K rules. Groups and meters likewise: a group_mod or meter_mod records the
//!   ids it added, replaced or removed (`IdChanges`), and the replay makes each such id's
//!   entry what the published copy has (the same `Arc<Group>`, buckets and counters, the
//!   same live meter `Arc` and meter_mod) or removes it; so adding N groups one group_mod at a
//!   time costs O(N), not O(N^2), and the next session's replay O(ids changed). A list that
//!   outgrows its map (more than twice its size plus 1024: a switch changed many times
//!   outside `Versions`) gives way to a whole copy. A transaction that fails
//!   (`Ofproto::atomically`) keeps the ids it recorded, and records again those its undo
//!   journal restores: they are replayed with the restored values. Ports, limits and table
//!   settings are copied when their generation differs; scalars (version, rule id counter,
//!   fail-open, TLV table...) always.
//! * A bundle commit that adopted whole subtables (`Ofproto::adopt_adds`) records their
//!   masks, not their rules' ids. The replay takes each such subtable from the published
//!   copy as it is, the same `Arc` (`Classifier::share_subtable`): only the rules' ids are
//!   filed in the copy's id index, nothing is hashed by value again, so the session after a
//!   100K-flow commit (whichever thread opens it: the dispatch loop's tick, the next
//!   flow_mod) costs about 10 ms, not the 90 ms of the commit's insertions over again.
//!   The first later change to that subtable, on either copy, copies it (copy-on-write);
//!   the other copy then changes its own in place. If the copy still has a subtable with
//!   that mask (the session emptied it first), the rules are copied in one by one.
//! * The writer's logs (flow-removed records, flow-monitor events, packet-ins) travel with
//!   the write session, not with a copy: taken out when a session ends, put back into the
//!   copy the next one writes.
//! * On drop, the session takes the copy's change record, releases its write lock and
//!   stores `current`: new readers take the new copy; readers still on the old one finish
//!   undisturbed, and the next write session waits for them before catching that copy up.
//! * A reader loads `current` and *try*-locks that copy for reading. The writer only ever
//!   write-locks the copy that is not current, so this fails only if a publication happened
//!   between the load and the lock; the reader then loads `current` again. It never blocks.
//!
//! ## Invariants
//! * Both copies share every counter the datapath credits: rule and group statistics
//!   (atomics behind `Arc`s), table lookup counts, meters (one published meter set, which
//!   the writer changes one meter's shard at a time: `MeterTable::set`), the
//!   recirculation ids.
//! * After a catch-up, the copy's groups, meters and meter_mods equal the published
//!   copy's: every change to them goes through `group_mod`, `meter_mod` or a failed
//!   transaction's restore, and each records the ids it touched.
//! * Nothing a reader does needs the writer. A thread must not take a write guard while it
//!   holds a read guard (the write session could wait for that very reader).
//! * Memory: the classifier indexes (subtable hash tables, the id map) exist twice, except
//!   a subtable shared after a commit until either copy changes it; rules —
//!   the classifier's rule with its masked value included, since each table files rules
//!   under their own ids and the copies share them (`Classifier::insert_shared`) — groups
//!   and meters once.

use super::Ofproto;
use crate::table::Cls;
use crate::table::TableChanges;
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

/// A read guard on the published copy: hold it for one upcall or one chunk of work, not
/// longer (the next write session waits for it once it is no longer current).
pub type Snapshot<'a> = RwLockReadGuard<'a, Ofproto>;

/// The logs that belong to the writer, not to a copy.
#[derive(Default)]
pub(crate) struct Logs {
    removed: VecDeque<super::FlowRemoved>,
    flow_events: VecDeque<super::FlowEvent>,
    monitoring: bool,
    flow_event_overflow: u64,
    packet_ins: VecDeque<super::PacketIn>,
    packet_in_overflow: u64,
}

/// The group and meter ids a copy changed since its last publication, for the other copy
/// to replay (see the module documentation). An id may repeat; `all` replaces the lists
/// once they outgrow the maps (a switch changed many times outside [`Versions`]).
#[derive(Default)]
pub(crate) struct IdChanges {
    groups: Vec<u32>,
    meters: Vec<u32>,
    all: bool,
}

/// Beyond this many ids more than twice a map's size, a list gives way to `all`.
const ID_SLACK: usize = 1024;

impl IdChanges {
    /// Group `id` was added, replaced or removed.
    pub(crate) fn group(&mut self, id: u32, n_groups: usize) {
        if !self.all {
            self.groups.push(id);
            self.bound(n_groups, self.groups.len());
        }
    }

    /// Meter `id` (its live meter or its meter_mod) was added, replaced or removed.
    pub(crate) fn meter(&mut self, id: u32, n_meters: usize) {
        if !self.all {
            self.meters.push(id);
            self.bound(n_meters, self.meters.len());
        }
    }

    fn bound(&mut self, map_len: usize, list_len: usize) {
        if list_len > map_len.saturating_mul(2).saturating_add(ID_SLACK) {
            *self = IdChanges {
                all: true,
                ..IdChanges::default()
            };
        }
    }
}

/// What the copy that is not current still lacks.
#[derive(Default)]
struct Pending {
    tables: Vec<(usize, TableChanges)>,
    ids: IdChanges,
    logs: Logs,
}

/// See the module documentation.
pub struct Versions {
    copies: [RwLock<Ofproto>; 2],
    /// Index of the published copy.
    current: AtomicUsize,
    writer: Mutex<Pending>,
    /// Publications so far.
    published: AtomicU64,
}

/// A write session (see the module documentation): derefs to the copy being changed;
/// dropping it publishes that copy.
pub struct Writer<'a> {
    v: &'a Versions,
    pending: MutexGuard<'a, Pending>,
    copy: Option<RwLockWriteGuard<'a, Ofproto>>,
    idx: usize,
}

/// Rules of tables emptied at once are freed on another thread beyond this many.
const DEFER_FREE_RULES: usize = super::DEFER_FREE_RULES;

impl Ofproto {
    /// Takes the record of every table change since the last call.
    fn take_changes(&mut self) -> Vec<(usize, TableChanges)> {
        self.tables
            .iter_mut()
            .enumerate()
            .filter_map(|(i, t)| {
                let c = t.take_changes();
                (!c.is_empty()).then_some((i, c))
            })
            .collect()
    }

    pub(crate) fn take_logs(&mut self) -> Logs {
        Logs {
            removed: std::mem::take(&mut self.removed),
            flow_events: std::mem::take(&mut self.flow_events),
            monitoring: std::mem::take(&mut self.monitoring),
            flow_event_overflow: std::mem::take(&mut self.flow_event_overflow),
            packet_ins: std::mem::take(&mut self.packet_ins),
            packet_in_overflow: std::mem::take(&mut self.packet_in_overflow),
        }
    }

    pub(crate) fn put_logs(&mut self, l: Logs) {
        self.removed = l.removed;
        self.flow_events = l.flow_events;
        self.monitoring = l.monitoring;
        self.flow_event_overflow = l.flow_event_overflow;
        self.packet_ins = l.packet_ins;
        self.packet_in_overflow = l.packet_in_overflow;
    }

    /// Brings this copy up to `from` given the table changes and the group and meter ids
    /// changed on `from` since the two were equal; returns the contents of tables emptied
    /// meanwhile, for the caller to free.
    fn catch_up(
        &mut self,
        changes: &[(usize, TableChanges)],
        ids: &IdChanges,
        from: &Ofproto,
    ) -> Vec<Cls> {
        let mut graveyard = Vec::new();
        for (i, ch) in changes {
            if let (Some(t), Some(f)) = (self.tables.get_mut(*i), from.tables.get(*i)) {
                graveyard.extend(t.catch_up(ch, f));
            }
        }
        if ids.all {
            self.groups.clone_from(&from.groups);
            self.meters.clone_from(&from.meters);
            self.meter_specs.clone_from(&from.meter_specs);
        } else {
            for id in &ids.groups {
                copy_entry(&mut self.groups, &from.groups, *id);
            }
            for id in &ids.meters {
                copy_entry(&mut self.meters, &from.meters, *id);
                copy_entry(&mut self.meter_specs, &from.meter_specs, *id);
            }
        }
        if self.meta_gen != from.meta_gen {
            self.ports.clone_from(&from.ports);
            for (t, f) in self.tables.iter_mut().zip(&from.tables) {
                t.copy_config(f);
            }
            self.meta_gen = from.meta_gen;
        }
        self.next_id = from.next_id;
        self.version = from.version;
        self.invalid_ttl_to_controller = from.invalid_ttl_to_controller;
        self.miss_send_len = from.miss_send_len;
        self.fail_open = from.fail_open;
        self.tlv.clone_from(&from.tlv);
        self.learners.clone_from(&from.learners);
        self.limits = from.limits;
        graveyard
    }

    /// A second copy sharing every rule, group, meter and counter (see the module
    /// documentation). O(rules), once per bridge.
    fn twin(&self) -> Ofproto {
        Ofproto {
            tables: self.tables.iter().map(|t| t.twin()).collect(),
            groups: self.groups.clone(),
            meters: self.meters.clone(),
            meter_table: self.meter_table.clone(),
            meter_specs: self.meter_specs.clone(),
            ports: self.ports.clone(),
            next_id: self.next_id,
            version: self.version,
            meta_gen: self.meta_gen,
            changed: IdChanges::default(),
            undo: None,
            removed: VecDeque::new(),
            flow_events: VecDeque::new(),
            monitoring: false,
            flow_event_overflow: 0,
            packet_ins: VecDeque::new(),
            packet_in_overflow: 0,
            invalid_ttl_to_controller: self.invalid_ttl_to_controller,
            miss_send_len: self.miss_send_len,
            fail_open: self.fail_open,
            tlv: self.tlv.clone(),
            recirc: std::sync::Arc::clone(&self.recirc),
            learners: self.learners.clone(),
            dead_learned: Vec::new(),
            limits: self.limits,
        }
    }
}

/// Makes `to`'s entry for `id` what `from`'s is: the same value (groups and live meters are
/// `Arc`s, so both copies share them and their counters), or none.
fn copy_entry<V: Clone>(
    to: &mut std::collections::BTreeMap<u32, V>,
    from: &std::collections::BTreeMap<u32, V>,
    id: u32,
) {
    match from.get(&id) {
        Some(v) => {
            to.insert(id, v.clone());
        }
        None => {
            to.remove(&id);
        }
    }
}

/// Frees tables taken out whole: on a short-lived thread when they hold at least
/// [`DEFER_FREE_RULES`] rules, here otherwise.
pub(super) fn free_later(graveyard: Vec<Cls>) {
    let n: usize = graveyard.iter().map(|c| c.len()).sum();
    if n >= DEFER_FREE_RULES {
        let spawned = std::thread::Builder::new()
            .name("free-rules".into())
            .spawn(move || drop(graveyard));
        // If no thread can be made, the closure (and the tables) drop here instead.
        drop(spawned);
    }
}

impl Versions {
    /// Versioned state starting as `of` (its logs stay with the writer).
    pub fn new(mut of: Ofproto) -> Versions {
        let logs = of.take_logs();
        // The twin equals `of`: nothing to replay.
        of.changed = IdChanges::default();
        let twin = of.twin();
        Versions {
            copies: [RwLock::new(of), RwLock::new(twin)],
            current: AtomicUsize::new(0),
            writer: Mutex::new(Pending {
                tables: Vec::new(),
                ids: IdChanges::default(),
                logs,
            }),
            published: AtomicU64::new(0),
        }
    }

    /// The published state. Never waits for the writer (see the module documentation).
    pub fn read(&self) -> Snapshot<'_> {
        let mut tries = 0u32;
        loop {
            let i = self.current.load(Ordering::SeqCst);
            match self.copies[i].try_read() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                // A publication happened since the load: the other copy is current now.
                Err(TryLockError::WouldBlock) => {
                    tries += 1;
                    if tries.is_multiple_of(64) {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
        }
    }

    /// A write session; waits for another session to end, and for readers of the copy it
    /// will change that came before the last publication.
    pub fn write(&self) -> Writer<'_> {
        let pending = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let idx = 1 - self.current.load(Ordering::SeqCst);
        let copy = self.copies[idx].write().unwrap_or_else(|e| e.into_inner());
        self.begin(pending, copy, idx)
    }

    /// A write session if one can start without waiting.
    pub fn try_write(&self) -> Option<Writer<'_>> {
        self.try_begin(|_| true)
    }

    /// A write session if one can start without waiting *and* its catch-up replays at most
    /// `max_changes` rule changes: for a thread that must not stall (a poll thread applying
    /// a port change) right after a large bundle was published. A table emptied by the last
    /// session counts as over the bound (freeing it may be large).
    pub fn try_write_bounded(&self, max_changes: usize) -> Option<Writer<'_>> {
        self.try_begin(|p| {
            let mut n = 0usize;
            for (_, c) in &p.tables {
                if c.cleared {
                    return false;
                }
                n = n.saturating_add(c.len());
            }
            n <= max_changes
        })
    }

    /// A write session if neither lock has to be waited for and `admit` accepts what the
    /// session would have to catch up.
    fn try_begin(&self, admit: impl FnOnce(&Pending) -> bool) -> Option<Writer<'_>> {
        let pending = match self.writer.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        if !admit(&pending) {
            return None;
        }
        let idx = 1 - self.current.load(Ordering::SeqCst);
        let copy = match self.copies[idx].try_write() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(self.begin(pending, copy, idx))
    }

    fn begin<'a>(
        &'a self,
        mut pending: MutexGuard<'a, Pending>,
        mut copy: RwLockWriteGuard<'a, Ofproto>,
        idx: usize,
    ) -> Writer<'a> {
        let changes = std::mem::take(&mut pending.tables);
        let ids = std::mem::take(&mut pending.ids);
        {
            // Only this session write-locks, and never the current copy: this does not wait.
            let from = self.copies[1 - idx]
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let graveyard = copy.catch_up(&changes, &ids, &from);
            drop(from);
            free_later(graveyard);
        }
        copy.put_logs(std::mem::take(&mut pending.logs));
        Writer {
            v: self,
            pending,
            copy: Some(copy),
            idx,
        }
    }

    /// How many write sessions have been published.
    pub fn publications(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }
}

impl Deref for Writer<'_> {
    type Target = Ofproto;
    fn deref(&self) -> &Ofproto {
        // Present from creation until drop.
        self.copy.as_deref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for Writer<'_> {
    fn deref_mut(&mut self) -> &mut Ofproto {
        self.copy.as_deref_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        let Some(mut copy) = self.copy.take() else {
            return;
        };
        self.pending.tables = copy.take_changes();
        self.pending.ids = std::mem::take(&mut copy.changed);
        self.pending.logs = copy.take_logs();
        drop(copy);
        self.v.current.store(self.idx, Ordering::SeqCst);
        self.v.published.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[path = "versions_ids_tests.rs"]
mod ids_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::actions::OFPP_ANY;
    use openflow::oxm::Field;
    use openflow::{Action, FlowMod, FlowModCommand, Instruction, Match};
    use packet::flow::FlowKey;

    fn flow(cmd: FlowModCommand, port: u32, out: u32) -> FlowMod {
        let mut fm = FlowMod::new(cmd);
        fm.priority = 100;
        fm.match_ = Match::new().with(Field::InPort, u128::from(port));
        fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(out)])];
        fm
    }

    fn out_port(of: &Ofproto, in_port: u32) -> Option<u32> {
        let mut k = FlowKey::ZERO;
        k.in_port = in_port;
        let mut wc = FlowKey::ZERO;
        let r = of.tables()[0].lookup(&k, &mut wc)?;
        r.actions().find_map(|a| match a {
            Action::Output { port, .. } => Some(*port),
            _ => None,
        })
    }

    fn rules(of: &Ofproto) -> Vec<(u64, String)> {
        let mut v: Vec<(u64, String)> = of
            .tables()
            .iter()
            .flat_map(|t| t.iter())
            .map(|r| (r.id, format!("{:?} {:?}", r.match_, r.instructions)))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn readers_see_the_published_copy_while_a_session_writes() {
        let v = Versions::new(Ofproto::new());
        v.write()
            .flow_mod(&flow(FlowModCommand::Add, 1, 2), 0)
            .expect("add");
        let mut w = v.write();
        w.flow_mod(&flow(FlowModCommand::Modify, 1, 3), 0)
            .expect("modify");
        w.flow_mod(&flow(FlowModCommand::Add, 2, 1), 0)
            .expect("add");
        // The session is not published: readers still see the state before it, and do
        // not wait.
        {
            let r = v.read();
            assert_eq!(out_port(&r, 1), Some(2));
            assert_eq!(out_port(&r, 2), None);
        }
        let version = w.version();
        drop(w);
        let r = v.read();
        assert_eq!(r.version(), version);
        assert_eq!(out_port(&r, 1), Some(3));
        assert_eq!(out_port(&r, 2), Some(1));
    }

    #[test]
    fn a_bounded_session_is_refused_after_a_large_publication() {
        let v = Versions::new(Ofproto::new());
        {
            let mut w = v.write();
            for p in 1..=100 {
                w.flow_mod(&flow(FlowModCommand::Add, p, p + 1), 0)
                    .expect("add");
            }
        }
        // 100 rule changes to replay onto the other copy: over a bound of 64.
        assert!(v.try_write_bounded(64).is_none());
        assert!(v.try_write_bounded(100).is_some());
        // That session caught the copy up; the next one has nothing to replay.
        assert!(v.try_write_bounded(0).is_some());
        // A table emptied counts as over any bound.
        v.write()
            .flow_mod(&FlowMod::new(FlowModCommand::Delete), 0)
            .expect("delete all");
        assert!(v.try_write_bounded(usize::MAX).is_none());
        // An open session refuses it too.
        let w = v.write();
        assert!(v.try_write_bounded(usize::MAX).is_none());
        drop(w);
        let a = rules(&v.write());
        let b = rules(&v.write());
        assert_eq!(a, b);
        assert!(a.is_empty());
    }

    #[test]
    fn both_copies_converge_and_share_rules_and_counters() {
        let v = Versions::new(Ofproto::with_default_flow(0));
        for p in 1..50 {
            v.write()
                .flow_mod(&flow(FlowModCommand::Add, p, p + 1), 0)
                .expect("add");
        }
        v.write()
            .flow_mod(&flow(FlowModCommand::DeleteStrict, 7, OFPP_ANY), 0)
            .expect("delete");
        v.write()
            .flow_mod(&flow(FlowModCommand::Modify, 9, 99), 0)
            .expect("modify");
        // A delete of everything followed by adds in one session, then a failed bundle.
        {
            let mut w = v.write();
            w.flow_mod(&FlowMod::new(FlowModCommand::Delete), 0)
                .expect("delete all");
            w.flow_mod(&flow(FlowModCommand::Add, 3, 4), 0)
                .expect("add");
            let r: Result<(), openflow::OfError> = w.atomically(|o| {
                o.flow_mod(&flow(FlowModCommand::Add, 5, 6), 0)?;
                Err(openflow::OfError::bad_request(0))
            });
            assert!(r.is_err());
        }
        // Two more sessions: each copy has been caught up and written at least once.
        let a = rules(&v.write());
        let b = rules(&v.write());
        assert_eq!(a, b);
        assert_eq!(a.len(), 1);
        let r = v.read();
        assert_eq!(rules(&r), a);
        // The same Arc<Rule> in both copies.
        let id = a[0].0;
        let ra = r.tables()[0].get(id).cloned().expect("rule");
        drop(r);
        let w = v.write();
        assert!(std::sync::Arc::ptr_eq(
            &ra,
            w.tables()[0].get(id).expect("rule")
        ));
    }

    /// `priority=100,ip,nw_dst=10.0.B.I/PLEN,actions=output:OUT` (`B` apart per batch).
    fn ip_flow(b: u32, i: u32, plen: u32, out: u32) -> FlowMod {
        let mut fm = FlowMod::new(FlowModCommand::Add);
        fm.priority = 100;
        fm.match_ = Match::new().with(Field::EthType, 0x0800).with_masked(
            Field::Ipv4Dst,
            u128::from(0x0a00_0000 | (b << 8) | i),
            u128::from(u32::MAX.checked_shr(plen).map_or(u32::MAX, |m| !m)),
        );
        if i.is_multiple_of(7) {
            fm.idle_timeout = 60;
        }
        fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(out)])];
        fm
    }

    /// Commits `fms` as a bundle adopted whole; true if it was.
    fn adopt(w: &mut Writer<'_>, fms: &[FlowMod]) -> bool {
        let mut built = super::super::BuiltAdds::default();
        for fm in fms {
            let p = super::super::PreparedAdd::new(fm.clone(), &mut None).expect("prepared");
            assert!(built.push(p).is_ok(), "filed");
        }
        let r: Result<bool, openflow::OfError> =
            w.atomically(|o| Ok(o.adopt_adds(built, 0).is_ok()));
        r.expect("commit")
    }

    /// Both copies: the same rules (the same `Arc`s), lookups and timed rules.
    fn assert_copies_equal(v: &Versions) {
        let w = v.write();
        let r = v.read();
        assert_eq!(rules(&w), rules(&r));
        for t in 0..2 {
            let (a, b) = (&w.tables()[t], &r.tables()[t]);
            for rule in a.iter() {
                let (x, y) = (a.entry(rule.id), b.entry(rule.id));
                assert!(x.zip(y).is_some_and(|(x, y)| std::sync::Arc::ptr_eq(x, y)));
            }
            let timed = |t: &crate::table::Table| {
                let mut v: Vec<u64> = t.timed().map(|r| r.id).collect();
                v.sort_unstable();
                v
            };
            assert_eq!(timed(a), timed(b));
            assert_eq!(a.n_subtables(), b.n_subtables());
        }
        for i in 0..300u32 {
            let mut k = FlowKey::ZERO;
            k.dl_type = 0x0800;
            k.nw_dst = (0x0a00_0000 | i).to_be_bytes();
            let (mut wa, mut wb) = (FlowKey::ZERO, FlowKey::ZERO);
            let a = w.tables()[0].lookup(&k, &mut wa).map(|r| r.id);
            let b = r.tables()[0].lookup(&k, &mut wb).map(|r| r.id);
            assert_eq!((a, wa), (b, wb), "{i}");
        }
    }

    #[test]
    fn a_copy_shares_the_subtables_a_bundle_adopted() {
        let v = Versions::new(Ofproto::with_default_flow(0));
        // A /32 rule and a /24 one, then a bundle of /32s (a mask the table has: one by
        // one) and one of /30s (adopted whole, shared by the other copy).
        v.write().flow_mod(&ip_flow(0, 255, 32, 1), 0).expect("add");
        v.write().flow_mod(&ip_flow(1, 0, 24, 1), 0).expect("add");
        let f32: Vec<FlowMod> = (0..100).map(|i| ip_flow(0, i, 32, 2)).collect();
        assert!(!adopt(&mut v.write(), &f32), "the /32 subtable is there");
        let f30: Vec<FlowMod> = (0..50).map(|i| ip_flow(0, 100 + 4 * i, 30, 3)).collect();
        assert!(adopt(&mut v.write(), &f30));
        assert_copies_equal(&v);
        // Counters are shared: credited through the published copy, read in the other.
        let id = {
            let r = v.read();
            let rule = r.tables()[0].iter().find(|r| r.idle_timeout != 0).cloned();
            let rule = rule.expect("a timed rule");
            rule.stats.credit(3, 300, 1);
            rule.id
        };
        let w = v.write();
        let stats = w.tables()[0].get(id).map(|r| r.stats.get());
        assert_eq!(stats.map(|s| (s.0, s.1)), Some((3, 300)));
        drop(w);
        // Later changes in and beside the shared subtable, on either copy.
        for s in 0..4u32 {
            let mut w = v.write();
            w.flow_mod(&ip_flow(0, 100 + 4 * s, 30, 9), 0)
                .expect("modify by add");
            let mut del = ip_flow(0, 104 + 4 * s, 30, 0);
            del.command = FlowModCommand::DeleteStrict;
            w.flow_mod(&del, 0).expect("delete");
            w.flow_mod(&ip_flow(2, s, 32, 4), 0).expect("add");
        }
        assert_copies_equal(&v);
        // The /24 rule goes and, in the same session, a bundle of /24s is adopted: the
        // lagging copy still has a /24 subtable, so it takes the rules one by one.
        {
            let mut w = v.write();
            let mut del = ip_flow(1, 0, 24, 0);
            del.command = FlowModCommand::DeleteStrict;
            w.flow_mod(&del, 0).expect("delete");
            let f24: Vec<FlowMod> = (0..10).map(|i| ip_flow(i + 10, 0, 24, 5)).collect();
            assert!(adopt(&mut w, &f24));
        }
        assert_copies_equal(&v);
        // A bundle adopted, then everything deleted in the next session, then adopted again.
        // One rule asks for a flow-removed message: the delete of everything, on the copy
        // that shared the subtable, reports it (and only it).
        let mut f28: Vec<FlowMod> = (0..16).map(|i| ip_flow(3, 16 * i, 28, 6)).collect();
        f28[3].flags = openflow::FlowModFlags::SEND_FLOW_REM;
        assert!(adopt(&mut v.write(), &f28));
        {
            let mut w = v.write();
            assert!(w.take_removed().is_empty());
            w.flow_mod(&FlowMod::new(FlowModCommand::Delete), 0)
                .expect("delete all");
            let removed = w.take_removed();
            assert_eq!(removed.len(), 1);
            assert_eq!(removed[0].rule.match_, f28[3].match_);
        }
        f28[3].flags = openflow::FlowModFlags::empty();
        assert!(adopt(&mut v.write(), &f28));
        assert_copies_equal(&v);
        assert_eq!(v.read().tables()[0].len(), 16);
        // A failed bundle that adopted: rolled back on one copy, nothing for the other.
        {
            let mut w = v.write();
            let r: Result<(), openflow::OfError> = w.atomically(|o| {
                let mut built = super::super::BuiltAdds::default();
                for fm in &f30 {
                    let p =
                        super::super::PreparedAdd::new(fm.clone(), &mut None).expect("prepared");
                    assert!(built.push(p).is_ok());
                }
                assert!(o.adopt_adds(built, 0).is_ok());
                Err(openflow::OfError::bad_request(0))
            });
            assert!(r.is_err());
        }
        assert_copies_equal(&v);
        assert_eq!(v.read().tables()[0].len(), 16);
    }

    #[test]
    fn logs_stay_with_the_writer() {
        let v = Versions::new(Ofproto::new());
        let mut fm = flow(FlowModCommand::Add, 1, 2);
        fm.flags = openflow::FlowModFlags::SEND_FLOW_REM;
        v.write().flow_mod(&fm, 0).expect("add");
        v.write()
            .flow_mod(&flow(FlowModCommand::Delete, 1, OFPP_ANY), 0)
            .expect("delete");
        // Two sessions later the record is still there, whichever copy is written.
        v.write();
        assert_eq!(v.write().take_removed().len(), 1);
        assert!(v.write().take_removed().is_empty());
    }

    #[test]
    fn a_reader_on_the_old_copy_does_not_block_the_publication() {
        let v = Versions::new(Ofproto::new());
        let old = v.read();
        v.write()
            .flow_mod(&flow(FlowModCommand::Add, 1, 2), 0)
            .expect("add");
        // The old reader still sees the old state; a new reader sees the new one.
        assert_eq!(out_port(&old, 1), None);
        assert_eq!(out_port(&v.read(), 1), Some(2));
        // The next session must change the old copy: it cannot start while its reader is
        // there.
        assert!(v.try_write().is_none());
        drop(old);
        assert!(v.try_write().is_some());
    }
}
