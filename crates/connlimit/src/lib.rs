//! # connlimit — bounded connection tables for the control-plane listeners
//!
//! Every listener of ferrovsd (OVSDB `db.sock` and TCP remotes, OpenFlow management sockets and
//! controller listeners, the unixctl socket) serves each connection on its own threads, so an
//! unbounded number of connections is an unbounded number of threads and buffers. This crate
//! gives each listener a fixed number of [`Slots`] and an accept [`Backoff`].
//!
//! **Slots.** A connection is admitted with [`Slots::admit`], which returns a [`Slot`] guard
//! (dropping it frees the slot) and takes a `kill` closure that shuts the connection's socket
//! down. The connection calls [`Slot::busy`] while it works on a request and [`Slot::idle`]
//! when it is done, which also records the time of its last activity. When every slot is
//! taken, a new connection does not get refused: the connection that has been idle the
//! longest is killed to make room (it can reconnect) and a warning names the listener. A
//! flood of idle connections therefore costs at most `max` connections' resources and never
//! locks legitimate clients such as `ovs-vsctl` or `ovs-appctl` out. Only when every
//! connection is busy is the newcomer refused ([`Slots::admit`] returns `None`).
//!
//! **Backoff.** Accept errors (the descriptor limit, `ENOBUFS`) are not the peer's fault and
//! repeat at once if retried at once; [`Backoff::failed`] sleeps 10 ms, doubling to 1 s, and
//! logs once per episode; [`Backoff::ok`] resets it.
//!
//! Thread safety: `Slots` is shared (`Arc`) between the accept thread and the connections;
//! one mutex protects the table, and is held only for table updates and the eviction scan
//! (`O(max)`, on admission when full).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Shuts a connection down so that its threads end.
pub type Kill = Box<dyn Fn() + Send + Sync>;

struct Entry {
    kill: Kill,
    last: Instant,
    busy: bool,
}

struct Table {
    next: u64,
    live: HashMap<u64, Entry>,
    evicted: u64,
    refused: u64,
}

/// The connection slots of one listener. See the module documentation.
pub struct Slots {
    name: String,
    max: usize,
    table: Mutex<Table>,
}

/// A connection's hold on a slot; dropping it frees the slot.
pub struct Slot {
    slots: Arc<Slots>,
    id: u64,
}

/// Counters for status output and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotStats {
    pub live: usize,
    pub max: usize,
    pub evicted: u64,
    pub refused: u64,
}

impl Slots {
    /// Slots for the listener called `name` (used in log lines), at most `max` (at least 1).
    pub fn new(name: impl Into<String>, max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            name: name.into(),
            max: max.max(1),
            table: Mutex::new(Table {
                next: 0,
                live: HashMap::new(),
                evicted: 0,
                refused: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        match self.table.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Admits a connection, evicting the longest-idle one if the table is full; `None` when
    /// every connection is busy (the caller closes the newcomer).
    pub fn admit(self: &Arc<Self>, kill: Kill) -> Option<Slot> {
        let victim = {
            let mut t = self.lock();
            let mut victim = None;
            if t.live.len() >= self.max {
                let oldest = t
                    .live
                    .iter()
                    .filter(|(_, e)| !e.busy)
                    .min_by_key(|(_, e)| e.last)
                    .map(|(id, _)| *id);
                match oldest.and_then(|id| t.live.remove(&id)) {
                    Some(e) => {
                        t.evicted += 1;
                        victim = Some(e);
                    }
                    None => {
                        t.refused += 1;
                        drop(t);
                        log::warn!(
                            "{}: all {} connections are busy; refusing a new one",
                            self.name,
                            self.max
                        );
                        return None;
                    }
                }
            }
            let id = t.next;
            t.next += 1;
            t.live.insert(
                id,
                Entry {
                    kill,
                    last: Instant::now(),
                    busy: false,
                },
            );
            (victim, id)
        };
        let (victim, id) = victim;
        if let Some(v) = victim {
            log::warn!(
                "{}: {} connections (the limit); closing the one idle longest ({} s)",
                self.name,
                self.max,
                v.last.elapsed().as_secs()
            );
            (v.kill)();
        }
        Some(Slot {
            slots: Arc::clone(self),
            id,
        })
    }

    /// Current counters.
    pub fn stats(&self) -> SlotStats {
        let t = self.lock();
        SlotStats {
            live: t.live.len(),
            max: self.max,
            evicted: t.evicted,
            refused: t.refused,
        }
    }
}

impl Slot {
    fn set(&self, busy: bool) {
        let mut t = self.slots.lock();
        if let Some(e) = t.live.get_mut(&self.id) {
            e.busy = busy;
            e.last = Instant::now();
        }
    }

    /// The connection started work on a request: it is not evicted until [`Slot::idle`].
    pub fn busy(&self) {
        self.set(true);
    }

    /// The connection finished a request (or completed a message): it is active now, and
    /// evictable again.
    pub fn idle(&self) {
        self.set(false);
    }

    /// Whether this connection was evicted (its slot given to another).
    pub fn evicted(&self) -> bool {
        !self.slots.lock().live.contains_key(&self.id)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().live.remove(&self.id);
    }
}

/// Back-off after failed `accept` calls. See the module documentation.
pub struct Backoff {
    name: String,
    delay: Duration,
    logged: bool,
}

const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

impl Backoff {
    pub fn new(name: impl Into<String>) -> Backoff {
        Backoff {
            name: name.into(),
            delay: BACKOFF_MIN,
            logged: false,
        }
    }

    /// An accept failed: log (once until the next success) and sleep, longer each time.
    pub fn failed(&mut self, e: &std::io::Error) {
        if !self.logged {
            log::warn!(
                "{}: accept failed ({e}); backing off up to {} ms",
                self.name,
                BACKOFF_MAX.as_millis()
            );
            self.logged = true;
        }
        std::thread::sleep(self.delay);
        self.delay = (self.delay * 2).min(BACKOFF_MAX);
    }

    /// The current delay (for tests).
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// An accept succeeded.
    pub fn ok(&mut self) {
        if self.logged {
            log::info!("{}: accepting again", self.name);
        }
        self.delay = BACKOFF_MIN;
        self.logged = false;
    }
}

/// A deadline for finishing a message that has started to arrive: a peer that sends the first
/// bytes of a message and then dribbles the rest (or nothing) must not hold the connection
/// forever. `MessageClock::update(partial)` is called after each read with whether bytes of an
/// unfinished message are buffered; [`MessageClock::expired`] tells when to disconnect.
#[derive(Debug, Default)]
pub struct MessageClock {
    since: Option<Instant>,
}

impl MessageClock {
    pub fn update(&mut self, partial: bool) {
        match (partial, self.since) {
            (false, _) => self.since = None,
            (true, None) => self.since = Some(Instant::now()),
            (true, Some(_)) => {}
        }
    }

    /// Whether an unfinished message has been arriving for longer than `limit`.
    pub fn expired(&self, limit: Duration) -> bool {
        self.since.is_some_and(|t| t.elapsed() > limit)
    }
}

/// How long a started message may take to arrive completely (the largest messages, 64 MiB
/// OVSDB transactions, arrive in well under a second on a local socket).
pub const MESSAGE_DEADLINE: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counter_kill(c: &Arc<AtomicUsize>) -> Kill {
        let c = Arc::clone(c);
        Box::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn full_table_evicts_the_longest_idle_and_spares_busy_ones() {
        let slots = Slots::new("test", 2);
        let (k0, k1, k2) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let s0 = slots.admit(counter_kill(&k0)).expect("admitted");
        std::thread::sleep(Duration::from_millis(5));
        let s1 = slots.admit(counter_kill(&k1)).expect("admitted");
        // s0 is older but busy: s1 goes.
        s0.busy();
        let s2 = slots
            .admit(counter_kill(&k2))
            .expect("admitted by eviction");
        assert_eq!(k0.load(Ordering::SeqCst), 0);
        assert_eq!(k1.load(Ordering::SeqCst), 1);
        assert!(s1.evicted() && !s0.evicted());
        // Both busy: the next one is refused, nobody is killed.
        s2.busy();
        assert!(slots.admit(counter_kill(&k2)).is_none());
        assert_eq!(k0.load(Ordering::SeqCst) + k2.load(Ordering::SeqCst), 0);
        let st = slots.stats();
        assert_eq!((st.live, st.evicted, st.refused), (2, 1, 1));
        // Dropping a slot frees it (an evicted slot's drop frees nothing twice).
        drop(s1);
        assert_eq!(slots.stats().live, 2);
        drop(s0);
        assert_eq!(slots.stats().live, 1);
        assert!(slots.admit(counter_kill(&k0)).is_some());
    }

    #[test]
    fn backoff_doubles_to_a_ceiling_and_resets() {
        let mut b = Backoff::new("test");
        let e = std::io::Error::from_raw_os_error(24);
        b.failed(&e);
        b.failed(&e);
        assert_eq!(b.delay(), BACKOFF_MIN * 4);
        b.ok();
        assert_eq!(b.delay(), BACKOFF_MIN);
    }

    #[test]
    fn message_clock_runs_only_while_a_message_is_partial() {
        let mut m = MessageClock::default();
        m.update(true);
        std::thread::sleep(Duration::from_millis(3));
        assert!(m.expired(Duration::from_millis(1)));
        m.update(false);
        assert!(!m.expired(Duration::ZERO));
    }
}
