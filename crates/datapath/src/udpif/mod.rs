//! The slow path of the caching OpenFlow datapath: upcall handlers and the revalidator.
//!
//! ## Threads and what they share
//! * Each **poll thread** owns its exact-match cache and megaflow classifier (a bridge served
//!   by several poll threads has one module replica per thread, each with its own caches and
//!   its own copy of every megaflow it uses). On a miss it puts the packet on the bounded
//!   upcall queue, with the name of its reply lane, and goes on; a full queue drops the
//!   packet and counts a lost upcall. It never waits for the slow path.
//! * The **handler** thread takes upcalls. It first looks in its own index of installed
//!   megaflows (so packets of a flow that was just set up do not each cost a translation),
//!   otherwise runs `ofproto::xlate`, creates the megaflow (mask = the wildcards xlate
//!   reported) and sends packet, actions and new megaflow back to the poll thread, which
//!   installs it and executes the actions.
//! * The **revalidator** thread, every half second or when asked: pushes megaflow counters
//!   to the OpenFlow rules and groups (so dump-flows counters and idle timeouts are right),
//!   expires megaflows idle for `max-idle` (10 s), re-translates megaflows computed at an
//!   older ofproto version and kills those whose result changed, enforces the flow limit,
//!   and adapts that limit to how long a round took (OVS's rule). About once a second it
//!   also removes the OpenFlow rules whose idle or hard timeout has passed (scanning only the
//!   rules that have one), right after pushing the counters their idle time depends on.
//!
//! [`Udpif`] is what they share: the OpenFlow state as [`ofproto::Versions`] (two copies:
//! the control plane changes one in a write session, [`Udpif::of`], whose end publishes it;
//! the datapath reads the published one through [`Udpif::snapshot`], which never waits),
//! the meters as the datapath runs them, the packet-in queue, the megaflow index (handler
//! and revalidator), counters, and the request/completion sequence numbers of revalidation
//! rounds.
//!
//! ## What the datapath may wait for: nothing the control plane holds
//! A bundle commit holds the write session for as long as a million flow_mods take; the
//! datapath must forward at full rate and set up new flows meanwhile. So no datapath thread
//! takes the writer, and none blocks on it:
//! * the handler translates each upcall against a snapshot of the published state, so flows
//!   are set up during a long commit against the state before it (their megaflows carry
//!   that version and are revalidated once the commit is published);
//! * the revalidator reads a snapshot per chunk of [`REVALIDATE_CHUNK`] megaflows (the next
//!   write session waits for at most one chunk before it changes that copy); counters go to
//!   the rules' and groups' shared atomics; rule expiry, which deletes rules, takes the
//!   writer only if it is free ([`Udpif::try_of`]) and otherwise leaves it to the control
//!   plane's next write session (`expiry_due`), so it is never waited for;
//! * cached lookups read the poll thread's own caches; misses go to the handler through a
//!   bounded queue and come back through the lane, both without waiting;
//! * meters run through [`Udpif::meters`], the `Ofproto`'s lock-free published meter set
//!   (atomic buckets, see `ofproto::meter`);
//! * packet-ins go onto a bounded lock-free queue that the control plane drains;
//! * NORMAL's MAC table is shared by the bridge's poll threads only (the control plane
//!   reaches it through module commands, which run on the poll thread);
//! * port changes the fabric reports on the poll thread are queued and applied by the next
//!   write session ([`Udpif::of`] applies them first), at once when a session can open
//!   without waiting and has at most [`PORT_CHANGE_CATCH_UP`] rule changes to catch up, or
//!   by the revalidator's next round;
//! * the uncached reference pipeline (`cache=false`) translates each batch on the poll
//!   thread against a snapshot;
//! * packet-outs arrive already translated to datapath actions.
//!
//! A control-plane thread must not open a write session while it holds a snapshot (the
//! session may have to wait for that very snapshot). `tests/writer_held.rs` holds the writer
//! (and runs a 200,000-flow_mod bundle) while traffic runs, and checks that every one of
//! these paths keeps forwarding, that new flows get megaflows and that rounds go on.
//!
//! ## Staleness
//! A killed megaflow is marked dead before anything else; the poll thread treats a dead
//! megaflow as a miss, so it cannot be used again. [`Udpif::sync`] — what the control
//! plane calls after changing rules, before acknowledging the change — waits for a
//! revalidation round that started after the change, then for every poll thread serving
//! the bridge to pass through its loop twice, so no batch that began with the old decision
//! is still running. The round runs on the caller's thread unless another is running (then
//! the revalidator is asked for one): rounds `sync` counts on hold `round_lock`, so a round
//! that began after the call and has ended is enough for any caller.
//! A change is published when its write session ends, before the control plane calls
//! `sync`. The handler holds the index lock across take-snapshot, translate and insert; the
//! revalidator lists the megaflows under the same lock, and every chunk's snapshot is
//! taken after that listing. So a megaflow translated against a snapshot older than the
//! change is in the round's list with its older version (and is re-translated against a
//! snapshot that has the change), or it was translated after the listing, hence after the
//! publication, against a snapshot that has the change.
//!
//! ## Files
//! This file holds the shared state and the control plane's API; `handler` the upcall handler
//! threads, `revalidator` the revalidator thread and its rounds.

use crate::clock;
use crate::dpcls::{Dpcls, Megaflow};
use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender, TrySendError};
use ofproto::learn::LearnedFlow;
use ofproto::meter::MeterTable;
use ofproto::odp::DpAction;
use ofproto::switch::{OfPort, PacketIn};
use ofproto::{Ofproto, Snapshot, Versions, Writer};
use packet::flow::FlowKey;
use packet::Packet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod handler;
pub mod native;
mod revalidator;
use self::handler::*;
pub use self::revalidator::*;

/// Set in a poll thread's loop counter while the thread sleeps between batches: nothing
/// needs to wait for it.
pub const PARKED: u64 = 1 << 63;

/// Upcalls that may wait for a handler.
pub const UPCALL_QUEUE: usize = 4096;
/// The flow limit's ceiling, as OVS's `flow-limit` default.
pub const DEFAULT_FLOW_LIMIT: usize = 200_000;
/// Idle megaflows are removed after this long (OVS's `max-idle`).
pub const DEFAULT_MAX_IDLE_MS: u64 = 10_000;
/// How often the revalidator runs without being asked.
pub const REVALIDATE_EVERY: Duration = Duration::from_millis(500);
/// [`Udpif::kick_soon`] wakes the revalidator at most this often; for [`KICK_HOT`] after a
/// kick, the revalidator also looks again this often unasked, so a change whose kick was
/// coalesced away is revalidated at most this much later.
pub const KICK_COALESCE_MS: u64 = 5;
/// How long the revalidator keeps looking every [`KICK_COALESCE_MS`] after a kick.
pub const KICK_HOT: Duration = Duration::from_millis(50);
/// How often the revalidator removes rules whose idle or hard timeout has passed (OpenFlow
/// timeouts are in seconds; OVS checks about once a second too).
pub const EXPIRE_EVERY: Duration = Duration::from_millis(1000);
/// Megaflows the revalidator handles per snapshot of the OpenFlow state.
pub const REVALIDATE_CHUNK: usize = 256;
/// Learned flows queued for the next write session at most (a full queue drops; the
/// packets of a megaflow hand its flow over again, see `ofproto::learn`).
pub const LEARN_QUEUE: usize = 4096;
/// The most rule changes a poll thread replays to apply a port change itself; beyond that
/// (a bundle was just published) the revalidator applies it.
pub const PORT_CHANGE_CATCH_UP: usize = 64;

/// A packet that missed the caches.
pub struct Upcall {
    pub pkt: Packet,
    pub key: FlowKey,
    pub in_slot: u16,
    /// The poll thread's lane (see [`Lane`]).
    pub pmd: u32,
    pub reply: Sender<Completed>,
}

/// The handler's answer: what to do with the packet, and maybe a megaflow to install.
pub struct Completed {
    pub pkt: Packet,
    pub key: FlowKey,
    pub in_slot: u16,
    /// The actions, when there is no megaflow (otherwise the megaflow's).
    pub actions: Vec<DpAction>,
    /// The megaflow the actions came from (new or already installed), for accounting.
    pub megaflow: Option<Arc<Megaflow>>,
    /// True if the poll thread should install `megaflow`.
    pub install: bool,
}

/// Slow-path counters (all monotonic).
#[derive(Default)]
pub struct UdpifStats {
    pub upcalls: AtomicU64,
    pub xlates: AtomicU64,
    pub reused: AtomicU64,
    pub installed: AtomicU64,
    pub not_cached: AtomicU64,
    pub flow_limit_hits: AtomicU64,
    pub revalidations: AtomicU64,
    pub killed_changed: AtomicU64,
    pub killed_idle: AtomicU64,
    pub killed_limit: AtomicU64,
    pub rounds: AtomicU64,
    pub last_round_us: AtomicU64,
}

/// The handler/revalidator side's index of installed megaflows, one classifier per poll
/// thread (lane).
#[derive(Default)]
pub struct Index {
    lanes: std::collections::BTreeMap<u32, Dpcls>,
    next_id: u64,
}

impl Index {
    /// Megaflows over all lanes.
    pub fn len(&self) -> usize {
        self.lanes.values().map(|d| d.len()).sum()
    }

    /// True if no lane has a megaflow.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every megaflow, lane by lane.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Megaflow>> {
        self.lanes.values().flat_map(|d| d.iter())
    }

    /// The lanes that hold megaflows.
    pub fn lanes(&self) -> impl Iterator<Item = u32> + '_ {
        self.lanes.keys().copied()
    }

    /// Removes `m` from its lane.
    pub fn remove(&mut self, m: &Megaflow) -> bool {
        self.lanes.get_mut(&m.pmd).is_some_and(|d| d.remove(m))
    }

    /// Forgets every megaflow.
    pub fn clear(&mut self) {
        for d in self.lanes.values() {
            for m in d.iter() {
                m.dead.store(true, Ordering::Release);
            }
        }
        self.lanes.clear();
    }

    /// Forgets one lane's megaflows (its poll thread went away), marking them dead.
    pub fn drop_lane(&mut self, pmd: u32) {
        if let Some(d) = self.lanes.remove(&pmd) {
            for m in d.iter() {
                m.dead.store(true, Ordering::Release);
            }
        }
    }
}

/// A port change reported by the fabric (see [`Udpif::port_change`]).
#[derive(Clone, Debug)]
pub enum PortChange {
    /// A port added (or its description changed).
    Set(OfPort),
    /// A port's link went up or down.
    Status { ofport: u32, live: bool },
    /// A port removed.
    Remove(u32),
}

/// See the module documentation.
pub struct Udpif {
    ofproto: Versions,
    /// The meters, run by poll threads without the `Ofproto` lock.
    pub meters: MeterTable,
    /// The TLV table as poll threads read received Geneve options with it (republished by
    /// [`Udpif::tlv_mod`]).
    pub tlv: arc_swap::ArcSwap<ofproto::tlv::TlvTable>,
    /// Port changes not yet applied to the `Ofproto` (see the module documentation).
    port_changes: (Sender<PortChange>, Receiver<PortChange>),
    pub index: Mutex<Index>,
    pub stats: UdpifStats,
    pub flow_limit: AtomicUsize,
    pub max_flow_limit: AtomicUsize,
    pub max_idle_ms: AtomicU64,
    /// The most groups (`max-groups` setting), applied to the OpenFlow state by the next
    /// write session ([`ofproto::Limits::groups`]).
    pub max_groups: AtomicU32,
    /// One counter per poll thread serving the bridge, incremented every loop.
    epochs: Mutex<Vec<std::sync::Weak<AtomicU64>>>,
    next_lane: std::sync::atomic::AtomicU32,
    /// The running handler and revalidator, shared by every lane.
    slowpath: Mutex<std::sync::Weak<Slowpath>>,
    packet_ins: (Sender<PacketIn>, Receiver<PacketIn>),
    /// Flows `learn` actions produced, for the next write session (bounded, lock-free).
    learned: (Sender<Arc<LearnedFlow>>, Receiver<Arc<LearnedFlow>>),
    /// Learned flows dropped because the queue was full.
    pub learn_overflow: AtomicU64,
    /// Learned flows the table refused (a bad match, a full table).
    pub learn_failed: AtomicU64,
    /// Upcalls taken off the queue and not yet answered.
    pub handling: AtomicUsize,
    pub packet_in_overflow: AtomicU64,
    reval_req: Mutex<u64>,
    reval_cv: Condvar,
    /// When [`Udpif::kick_soon`] last woke the revalidator (`clock::now_ms`).
    last_kick_ms: AtomicU64,
    reval_done: Mutex<u64>,
    done_cv: Condvar,
    /// Held across every round [`Udpif::sync`] may count on (the revalidator's and
    /// `sync`'s own), with the number of such rounds begun, counted under it.
    round_lock: Mutex<()>,
    rounds_begun: AtomicU64,
    stop: AtomicBool,
    /// True while a revalidator thread runs (otherwise [`Udpif::sync`] has nothing to wait
    /// for: the uncached pipeline reads the tables for every packet).
    revalidating: AtomicBool,
    /// Set by the revalidator when rule expiry was due but the writer was busy: the next
    /// write session runs it (see the module documentation).
    expiry_due: AtomicBool,
    /// Where the bridge's `sample` actions send their samples.
    pub flow_samples: crate::sample::FlowSampleTap,
    /// The tunnel tables' generation the last revalidation round saw
    /// (`netdev::tunnel::table::generation`): when it moves, every megaflow is checked.
    tnl_gen: AtomicU64,
}

/// The handler and revalidator threads of one udpif and the upcall queue into them; shared
/// by every poll thread's [`Lane`], stopped when the last lane lets go.
pub struct Slowpath {
    pub udpif: Arc<Udpif>,
    pub upcalls: Sender<Box<Upcall>>,
    threads: Vec<JoinHandle<()>>,
}

/// One poll thread's connection to the slow path: the shared queue in, its own queue of
/// answers back, and its loop counter.
pub struct Lane {
    pub slow: Arc<Slowpath>,
    pub pmd: u32,
    reply: Sender<Completed>,
    completed: Receiver<Completed>,
    /// Upcalls sent and not yet answered (the handler answers every one it takes).
    in_flight: std::cell::Cell<u64>,
}

impl Lane {
    /// Hands a missed packet to the handler; gives it back if the queue is full.
    #[inline]
    pub fn upcall(&self, pkt: Packet, key: FlowKey, in_slot: u16) -> Result<(), Box<Upcall>> {
        let u = Box::new(Upcall {
            pkt,
            key,
            in_slot,
            pmd: self.pmd,
            reply: self.reply.clone(),
        });
        match self.slow.upcalls.try_send(u) {
            Ok(()) => {
                self.in_flight.set(self.in_flight.get() + 1);
                Ok(())
            }
            Err(TrySendError::Full(u)) | Err(TrySendError::Disconnected(u)) => Err(u),
        }
    }

    /// The next answer from the handler, if one is waiting.
    #[inline]
    pub fn answer(&self) -> Option<Completed> {
        let c = self.completed.try_recv().ok()?;
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
        Some(c)
    }

    /// True while an upcall of this lane is queued, being handled or answered but not yet
    /// taken: counted on this side, so there is no moment when a packet in the handler's
    /// hands looks settled.
    pub fn pending(&self) -> bool {
        self.in_flight.get() > 0
    }
}

impl Drop for Slowpath {
    fn drop(&mut self) {
        self.udpif.revalidating.store(false, Ordering::Release);
        self.udpif.stop.store(true, Ordering::Release);
        self.udpif.reval_cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Udpif {
    /// Shared state around `of`.
    pub fn new(of: Ofproto) -> Udpif {
        native::install();
        Udpif {
            meters: of.meter_table(),
            tlv: arc_swap::ArcSwap::from_pointee(of.tlv.clone()),
            ofproto: Versions::new(of),
            port_changes: unbounded(),
            index: Mutex::new(Index::default()),
            stats: UdpifStats::default(),
            flow_limit: AtomicUsize::new(10_000.min(DEFAULT_FLOW_LIMIT)),
            max_flow_limit: AtomicUsize::new(DEFAULT_FLOW_LIMIT),
            max_idle_ms: AtomicU64::new(DEFAULT_MAX_IDLE_MS),
            max_groups: AtomicU32::new(ofproto::DEFAULT_MAX_GROUPS),
            epochs: Mutex::new(Vec::new()),
            next_lane: std::sync::atomic::AtomicU32::new(0),
            slowpath: Mutex::new(std::sync::Weak::new()),
            packet_ins: bounded(ofproto::switch::LOG_CAPACITY),
            learned: bounded(LEARN_QUEUE),
            learn_overflow: AtomicU64::new(0),
            learn_failed: AtomicU64::new(0),
            handling: AtomicUsize::new(0),
            packet_in_overflow: AtomicU64::new(0),
            reval_req: Mutex::new(0),
            reval_cv: Condvar::new(),
            last_kick_ms: AtomicU64::new(0),
            reval_done: Mutex::new(0),
            done_cv: Condvar::new(),
            round_lock: Mutex::new(()),
            rounds_begun: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            revalidating: AtomicBool::new(false),
            expiry_due: AtomicBool::new(false),
            flow_samples: Default::default(),
            tnl_gen: AtomicU64::new(netdev::tunnel::table::generation()),
        }
    }

    /// A write session on the OpenFlow state (after applying the port changes queued
    /// meanwhile, and rule expiry if the revalidator found it due); dropping it publishes the
    /// changes. For the control plane only: never from the datapath's threads, and never
    /// while holding a [`Udpif::snapshot`] (see the module documentation).
    pub fn of(&self) -> Writer<'_> {
        let mut g = self.ofproto.write();
        self.housekeeping(&mut g);
        g
    }

    /// Applies a TLV-table mod ([`Ofproto::tlv_mod`]) and republishes the table to the
    /// poll threads.
    pub fn tlv_mod(
        &self,
        command: ofproto::tlv::TlvTableCommand,
        maps: &[ofproto::tlv::TlvMap],
    ) -> Result<(), ofproto::OfError> {
        let mut of = self.of();
        of.tlv_mod(command, maps)?;
        self.tlv.store(std::sync::Arc::new(of.tlv.clone()));
        Ok(())
    }

    /// A write session if one can start without waiting.
    pub fn try_of(&self) -> Option<Writer<'_>> {
        let mut g = self.ofproto.try_write()?;
        self.housekeeping(&mut g);
        Some(g)
    }

    /// The published OpenFlow state, for reading. Never waits (the writer changes the other
    /// copy); hold it for one upcall or one chunk of work.
    pub fn snapshot(&self) -> Snapshot<'_> {
        self.ofproto.read()
    }

    /// What every write session does first: queued port changes, learned flows, due
    /// expiry.
    fn housekeeping(&self, of: &mut Ofproto) {
        let limits = of.limits();
        let groups = self.max_groups.load(Ordering::Relaxed);
        if limits.groups != groups {
            of.set_limits(ofproto::Limits { groups, ..limits });
        }
        self.apply_port_changes(of);
        self.apply_learned(of);
        if self.expiry_due.swap(false, Ordering::AcqRel) && of.expire(clock::now_ms()) > 0 {
            // Their megaflows go in the next round.
            self.kick();
        }
    }

    fn apply_learned(&self, of: &mut Ofproto) {
        let now = clock::now_ms();
        for f in self.learned.1.try_iter() {
            if of.apply_learned(&f, now).is_err() {
                self.learn_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Applies queued learned flows from a poll thread if a write session opens at once
    /// with little to catch up (as for port changes); otherwise they wait for the next
    /// session. For the uncached pipeline, which runs no revalidator.
    pub fn apply_learned_now(&self) {
        if self.learned.1.is_empty() {
            return;
        }
        if let Some(mut g) = self.ofproto.try_write_bounded(PORT_CHANGE_CATCH_UP) {
            self.apply_learned(&mut g);
        }
    }

    /// Queues a flow a `learn` action produced (from any thread; never waits) and asks
    /// the revalidator to apply it if no write session comes first.
    pub fn push_learned(&self, f: Arc<LearnedFlow>) {
        if self.learned.0.try_send(f).is_err() {
            self.learn_overflow.fetch_add(1, Ordering::Relaxed);
        }
        self.kick();
    }

    fn apply_port_changes(&self, of: &mut Ofproto) {
        for c in self.port_changes.1.try_iter() {
            match c {
                PortChange::Set(p) => of.set_port(p),
                PortChange::Status { ofport, live } => {
                    if let Some(p) = of.ports().get(&ofport).cloned() {
                        of.set_port(OfPort { live, ..p });
                    }
                }
                PortChange::Remove(ofport) => of.remove_port(ofport),
            }
        }
    }

    /// Records a port change from the poll thread: applied now if a write session can open
    /// at once with little to catch up ([`PORT_CHANGE_CATCH_UP`] rule changes), else by the
    /// next session or the revalidator's next round; either way a revalidation round is
    /// asked for. So a port going up on a poll thread right after a 100K-flow bundle does not
    /// replay that bundle on the poll thread.
    pub fn port_change(&self, c: PortChange) {
        // Unbounded but fed only by port additions, removals and link changes.
        let _ = self.port_changes.0.send(c);
        if let Some(mut g) = self.ofproto.try_write_bounded(PORT_CHANGE_CATCH_UP) {
            self.apply_port_changes(&mut g);
        }
        self.kick();
    }

    /// Locks the megaflow index.
    pub fn idx(&self) -> MutexGuard<'_, Index> {
        lock(&self.index)
    }

    /// Queues a packet-in (bounded, lock-free; overflow counted).
    pub fn push_packet_in(&self, p: PacketIn) {
        if self.packet_ins.0.try_send(p).is_err() {
            self.packet_in_overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes the queued packet-ins, oldest first.
    pub fn take_packet_ins(&self) -> Vec<PacketIn> {
        self.packet_ins.1.try_iter().collect()
    }

    /// Waits until a revalidation round that started after this call has finished and the
    /// poll thread has gone round its loop twice. Returns false if that took longer than
    /// `timeout` (the change is still applied; caches catch up).
    ///
    /// With no megaflow installed and no upcall being handled there is nothing a round
    /// could change (an upcall still queued is translated after the caller's change), so
    /// this returns at once: a stream of flow_mods each followed by a barrier, as
    /// `ovs-ofctl add-flows` sends, costs no wake-ups while no traffic is cached.
    ///
    /// Otherwise the round runs on the calling thread when no other round is running, so a
    /// barrier costs no hand-off to the revalidator and back (two wake-ups per flow_mod of
    /// `ovs-ofctl add-flows` while any traffic is cached); a round that began after this
    /// call and finished meanwhile (another barrier's) is enough. While a round is running
    /// elsewhere, the revalidator is asked for one and waited for, as before.
    pub fn sync(&self, timeout: Duration) -> bool {
        if !self.revalidating.load(Ordering::Acquire) {
            return true;
        }
        // `handling` first: a handler that translated before the change is counted until
        // its megaflow is in the index.
        if self.handling.load(Ordering::SeqCst) == 0 && self.idx().is_empty() {
            return true;
        }
        let deadline = Instant::now() + timeout;
        let begun = self.rounds_begun.load(Ordering::SeqCst);
        let ran_here = match self.round_lock.try_lock() {
            Ok(_g) => {
                self.counted_round(begun);
                true
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                let _g = e.into_inner();
                self.counted_round(begun);
                true
            }
            Err(std::sync::TryLockError::WouldBlock) => false,
        };
        if !ran_here && !self.wait_for_round(deadline) {
            return false;
        }
        self.wait_for_poll_threads(deadline)
    }

    /// With `round_lock` held: runs a round unless one began after `begun` was read (and,
    /// as the lock is free, has finished).
    fn counted_round(&self, begun: u64) {
        if self.rounds_begun.load(Ordering::SeqCst) == begun {
            self.rounds_begun.fetch_add(1, Ordering::SeqCst);
            round(self);
        }
    }

    /// Asks the revalidator for a round and waits until one that started after this call
    /// has finished; false at `deadline`.
    fn wait_for_round(&self, deadline: Instant) -> bool {
        let want = {
            let mut r = lock(&self.reval_req);
            *r += 1;
            *r
        };
        self.reval_cv.notify_all();
        let mut done = lock(&self.reval_done);
        while *done < want {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            done = match self.done_cv.wait_timeout(done, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        true
    }

    /// Waits until every poll thread that is not parked has gone round its loop twice;
    /// false at `deadline`.
    fn wait_for_poll_threads(&self, deadline: Instant) -> bool {
        let epochs: Vec<Arc<AtomicU64>> = {
            let mut v = lock(&self.epochs);
            v.retain(|w| w.strong_count() > 0);
            v.iter().filter_map(|w| w.upgrade()).collect()
        };
        for e in epochs {
            let e0 = e.load(Ordering::Acquire) & !PARKED;
            // A parked thread is between batches: the loop counter with the flag set is
            // larger than any target.
            while e.load(Ordering::Acquire) < e0 + 2 {
                if Instant::now() >= deadline {
                    return false;
                }
                if Arc::strong_count(&e) == 1 {
                    // Its poll thread let go meanwhile.
                    break;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        true
    }

    /// Registers a poll thread's loop counter for [`Udpif::sync`] to wait on.
    pub fn register_epoch(&self) -> Arc<AtomicU64> {
        let e = Arc::new(AtomicU64::new(0));
        lock(&self.epochs).push(Arc::downgrade(&e));
        e
    }

    /// A lane into the slow path for one poll thread, starting the handler and revalidator
    /// threads if none are running.
    pub fn lane(self: &Arc<Self>) -> std::io::Result<Lane> {
        let slow = {
            let mut w = lock(&self.slowpath);
            match w.upgrade() {
                Some(s) => s,
                None => {
                    let s = Arc::new(start(Arc::clone(self))?);
                    *w = Arc::downgrade(&s);
                    s
                }
            }
        };
        let (reply, completed) = unbounded::<Completed>();
        Ok(Lane {
            slow,
            pmd: self.next_lane.fetch_add(1, Ordering::Relaxed),
            reply,
            completed,
            in_flight: std::cell::Cell::new(0),
        })
    }

    /// Requests a revalidation round without waiting for it.
    pub fn kick(&self) {
        *lock(&self.reval_req) += 1;
        self.reval_cv.notify_all();
    }

    /// Like [`Udpif::kick`] for changes that come in bursts (flow_mods): wakes the
    /// revalidator at most once per [`KICK_COALESCE_MS`]. A change made right after a kick
    /// is picked up by the revalidator's next look, which comes within that time while it is
    /// hot (see `revalidator_main`), so 100,000 flow_mods cost a few hundred rounds, not
    /// 100,000 wake-ups, and no change waits longer than [`KICK_COALESCE_MS`] plus a round.
    pub fn kick_soon(&self) {
        let now = clock::now_ms();
        let last = self.last_kick_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= KICK_COALESCE_MS
            && self
                .last_kick_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.kick();
        }
    }

    /// Kills every megaflow (e.g. after a bulk change where revalidating is pointless).
    pub fn flush(&self) {
        let mut idx = self.idx();
        idx.clear();
    }
}
