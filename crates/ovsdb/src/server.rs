//! The JSON-RPC server and the embedding API.
//!
//! [`Server`] is a cheap, cloneable, `Send + Sync` handle on one shared state: the
//! [`Database`], the client sessions with their monitors, the lock queues, the transactions
//! blocked in `wait`, and the in-process subscribers. All of it sits behind a single mutex, so
//! a commit, the monitor updates it causes and the reply to its `transact` are queued to every
//! session in commit order while the lock is held. Long work done under the lock is bounded by
//! the size of a transaction and of its updates.
//!
//! Sessions: each accepted connection gets a reader thread (bytes → [`JsonStream`] → request
//! handling under the state mutex) and a writer thread draining the session's queue of
//! serialised messages. Everything a client can make the server hold is bounded
//! ([`Config`]): a client that sends garbage or an oversized message gets an error
//! notification and is disconnected; one that does not read fills its queue (`max_backlog`
//! bytes, `max_queue` messages) and is disconnected (and a blocked write times out), so it can
//! never stall the server or other clients; a message must arrive within `message_deadline` of
//! its first byte; TCP sessions are probed with `echo` after `probe_interval` of silence.
//! Each listener holds at most `max_sessions` sessions, the longest-idle one making room for
//! a newcomer (the `connlimit` crate); idle sessions are cheap (small stacks, no
//! preallocated queue). Disconnection releases the session's locks (passing them on with
//! `locked` notifications), drops its monitors and cancels its blocked transactions.
//! Per-session monitors, locks and blocked transactions are capped in `methods.rs`.
//!
//! Locks follow RFC 7047 §4.1.8-10: per name, a queue of sessions whose head owns the lock;
//! `steal` puts the thief at the head and notifies the previous owner with `stolen` (it stays
//! queued). Blocked transactions are retried after every commit and by a timer thread at their
//! deadline; `cancel` aborts one.
//!
//! Embedding: [`Server::transact`] runs a transaction in-process (blocking while a `wait`
//! waits), [`Server::subscribe`] returns a channel receiving every [`Commit`], and
//! [`Server::read`] runs a closure on the current contents. Listening: [`Server::listen`]
//! takes `punix:PATH` (or a bare path) or `ptcp:PORT[:IP]`, each served on its own thread until
//! the returned [`Listener`] is stopped or dropped; [`Server::listen_tls`] ([`tls_remote`])
//! serves `pssl:PORT[:IP]`.

use crate::db::{Commit, Database, TxnOutcome};
use crate::error::Error;
use crate::jsonrpc::{notification, JsonStream};
use crate::methods::{handle_message, release_lock, run_transact};
use crate::monitor::{Monitor, Version};
use crate::txn::TxnContext;
use crate::uuid::Uuid;
use connlimit::{Backoff, MessageClock, Slot, Slots};
use crossbeam_channel::{unbounded, Receiver, Sender, TrySendError};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

pub mod tls_remote;
pub use tls_remote::TlsSource;

/// Tunables.
#[derive(Debug, Clone)]
pub struct Config {
    /// Largest accepted JSON-RPC message, in bytes.
    pub max_message: usize,
    /// Outgoing messages queued per session before it is considered stuck and dropped.
    pub max_queue: usize,
    /// Outgoing bytes queued per session beyond which it is considered stuck and dropped
    /// (one message larger than this is still sent when nothing else is queued).
    pub max_backlog: usize,
    /// How long a write to a client may block.
    pub write_timeout: Duration,
    /// Sessions per listener; when full, the longest-idle session makes room.
    pub max_sessions: usize,
    /// Monitors, lock names and blocked (`wait`) transactions one session may hold.
    pub max_monitors: usize,
    pub max_locks: usize,
    pub max_pending: usize,
    /// Inactivity probe on TCP sessions: after this long without a message an `echo` is
    /// sent, and the session is closed if nothing arrives for as long again (`None`: off).
    /// Unix-socket sessions are not probed, as in ovsdb-server.
    pub probe_interval: Option<Duration>,
    /// How long a message may take to arrive once its first byte has (a peer dribbling a
    /// message byte by byte is cut off). Checked every half second.
    pub message_deadline: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_message: 64 << 20,
            max_queue: 10_000,
            max_backlog: 64 << 20,
            write_timeout: Duration::from_secs(30),
            max_sessions: 1024,
            max_monitors: 1024,
            max_locks: 1024,
            max_pending: 1024,
            probe_interval: Some(Duration::from_secs(5)),
            message_deadline: connlimit::MESSAGE_DEADLINE,
        }
    }
}

pub(crate) type SessionId = u64;

pub(crate) struct Session {
    /// Serialised messages for the writer thread.
    out: Sender<Vec<u8>>,
    /// Bytes queued on `out` and not yet written.
    backlog: Arc<AtomicUsize>,
    max_backlog: usize,
    max_queue: usize,
    pub(crate) monitors: HashMap<String, (Value, Monitor)>,
    kill: Kill,
    dead: bool,
}

/// Shuts a session's socket down (both directions).
pub type Kill = Arc<dyn Fn() + Send + Sync>;

pub(crate) struct Pending {
    pub(crate) session: SessionId,
    pub(crate) id: Value,
    pub(crate) ops: Vec<Value>,
    pub(crate) started: Instant,
    pub(crate) until: Instant,
}

pub(crate) struct State {
    pub(crate) db: Database,
    pub(crate) sessions: HashMap<SessionId, Session>,
    next_session: SessionId,
    pub(crate) locks: HashMap<String, VecDeque<SessionId>>,
    pub(crate) pending: Vec<Pending>,
    subscribers: Vec<Sender<Arc<Commit>>>,
    pub(crate) last_txn: Uuid,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// Signalled on every commit and whenever a blocked transaction is queued.
    pub(crate) changed: Condvar,
    pub(crate) config: Config,
}

/// A handle on a running OVSDB server. Clone freely.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

/// A listening socket served by a background thread. Dropping it stops accepting (existing
/// sessions continue).
pub struct Listener {
    stop: Arc<AtomicBool>,
    /// Connects to the listener to unblock its `accept`; false if that was impossible.
    wake: Option<Box<dyn Fn() -> bool + Send>>,
    thread: Option<thread::JoinHandle<()>>,
    /// The bound address: a socket path, or `IP:PORT`.
    pub local: String,
}

impl Listener {
    /// Stop accepting connections. The accept thread is woken by a connection to the socket
    /// and joined; if the socket can no longer be reached (its file was removed), the thread is
    /// left to exit at its next wake-up, which no client can cause any more.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let woke = self.wake.take().is_some_and(|w| w());
        if let Some(t) = self.thread.take() {
            if woke {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Server {
    /// Wrap a database with default tunables.
    pub fn new(db: Database) -> Server {
        Server::with_config(db, Config::default())
    }

    /// Wrap a database.
    pub fn with_config(db: Database, config: Config) -> Server {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                db,
                sessions: HashMap::new(),
                next_session: 1,
                locks: HashMap::new(),
                pending: Vec::new(),
                subscribers: Vec::new(),
                last_txn: Uuid::ZERO,
            }),
            changed: Condvar::new(),
            config,
        });
        let weak = Arc::downgrade(&shared);
        let _ = thread::Builder::new()
            .name("ovsdb-timer".into())
            .spawn(move || timer_loop(weak));
        Server { shared }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock_state(&self.shared)
    }

    /// Run `f` on the current contents.
    pub fn read<R>(&self, f: impl FnOnce(&Database) -> R) -> R {
        f(&self.lock().db)
    }

    /// Receive every future commit.
    pub fn subscribe(&self) -> Receiver<Arc<Commit>> {
        let (tx, rx) = unbounded();
        self.lock().subscribers.push(tx);
        rx
    }

    /// Run a transaction in-process and return its RFC 7047 result array. `ops` is an array of
    /// operations, optionally preceded by the database name (as on the wire). Blocks while a
    /// `wait` operation waits (until its timeout).
    pub fn transact(&self, ops: &Value) -> Value {
        let Some(arr) = ops.as_array() else {
            return json!([Error::syntax("transaction must be an array").to_json()]);
        };
        let mut st = self.lock();
        let ops: &[Value] = match arr.first() {
            Some(Value::String(name)) if *name == st.db.schema().name => &arr[1..],
            Some(Value::String(name)) => {
                return json!([
                    Error::new("unknown database", format!("no database named {name}")).to_json()
                ])
            }
            _ => arr,
        };
        let started = Instant::now();
        loop {
            let ctx = TxnContext {
                owns_lock: &|_| false,
                started,
                now: Instant::now(),
            };
            match st.db.transact(ops, &ctx) {
                TxnOutcome::Done { result, commit } => {
                    if let Some(c) = commit {
                        after_commit(&self.shared, &mut st, c, None);
                    }
                    return result;
                }
                TxnOutcome::Blocked { until } => {
                    let wait = until
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_millis(1));
                    st = match self.shared.changed.wait_timeout(st, wait) {
                        Ok((g, _)) => g,
                        Err(p) => p.into_inner().0,
                    };
                }
            }
        }
    }

    /// Listen on `punix:PATH`, `unix:PATH` (treated the same), a bare path, or
    /// `ptcp:PORT[:IP]` (IP defaults to 127.0.0.1; port 0 picks a free one).
    pub fn listen(&self, target: &str) -> io::Result<Listener> {
        if let Some(rest) = target.strip_prefix("ptcp:") {
            let (port, ip) = match rest.split_once(':') {
                Some((p, ip)) => (p, ip.trim_start_matches('[').trim_end_matches(']')),
                None => (rest, "127.0.0.1"),
            };
            let port: u16 = port.parse().map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("bad port in {target}"))
            })?;
            return self.serve_tcp(&format!(
                "{}:{port}",
                if ip.contains(':') {
                    format!("[{ip}]")
                } else {
                    ip.to_string()
                }
            ));
        }
        let path = target
            .strip_prefix("punix:")
            .or_else(|| target.strip_prefix("unix:"))
            .unwrap_or(target);
        self.serve_unix(Path::new(path))
    }

    /// Serve a unix socket at `path` (an existing socket file there is replaced).
    pub fn serve_unix(&self, path: &Path) -> io::Result<Listener> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        let stop = Arc::new(AtomicBool::new(false));
        let server = self.clone();
        let name = format!("ovsdb {}", path.display());
        let slots = Slots::new(name.clone(), self.shared.config.max_sessions);
        let thread = accept_loop(
            "ovsdb-listen",
            name,
            stop.clone(),
            move || listener.accept().map(|(s, _)| s),
            move |s| server.spawn_unix(s, &slots),
        )?;
        let p: PathBuf = path.to_path_buf();
        let wake_path = p.clone();
        Ok(Listener {
            stop,
            wake: Some(Box::new(move || {
                let woke = UnixStream::connect(&wake_path).is_ok();
                let _ = std::fs::remove_file(&wake_path);
                woke
            })),
            thread: Some(thread),
            local: p.display().to_string(),
        })
    }

    /// Serve TCP on `addr` (e.g. `127.0.0.1:6640`).
    pub fn serve_tcp(&self, addr: &str) -> io::Result<Listener> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let server = self.clone();
        let name = format!("ovsdb ptcp:{local}");
        let slots = Slots::new(name.clone(), self.shared.config.max_sessions);
        let thread = accept_loop(
            "ovsdb-listen",
            name,
            stop.clone(),
            move || listener.accept().map(|(s, _)| s),
            move |s| server.spawn_tcp(s, &slots),
        )?;
        Ok(Listener {
            stop,
            wake: Some(Box::new(move || TcpStream::connect(local).is_ok())),
            thread: Some(thread),
            local: local.to_string(),
        })
    }

    fn spawn_unix(&self, s: UnixStream, slots: &Arc<Slots>) {
        let (Ok(w), Ok(k), Ok(k2)) = (s.try_clone(), s.try_clone(), s.try_clone()) else {
            return;
        };
        let Some(slot) = slots.admit(Box::new(move || {
            let _ = k2.shutdown(Shutdown::Both);
        })) else {
            return;
        };
        let _ = w.set_write_timeout(Some(self.shared.config.write_timeout));
        let _ = s.set_read_timeout(Some(READ_TICK));
        let kill: Kill = Arc::new(move || {
            let _ = k.shutdown(Shutdown::Both);
        });
        self.spawn_session(s, w, kill, Some(slot), None);
    }

    fn spawn_tcp(&self, s: TcpStream, slots: &Arc<Slots>) {
        let (Ok(w), Ok(k), Ok(k2)) = (s.try_clone(), s.try_clone(), s.try_clone()) else {
            return;
        };
        let Some(slot) = slots.admit(Box::new(move || {
            let _ = k2.shutdown(Shutdown::Both);
        })) else {
            return;
        };
        let _ = s.set_nodelay(true);
        let _ = w.set_write_timeout(Some(self.shared.config.write_timeout));
        let _ = s.set_read_timeout(Some(READ_TICK));
        let kill: Kill = Arc::new(move || {
            let _ = k.shutdown(Shutdown::Both);
        });
        let probe = self.shared.config.probe_interval;
        self.spawn_session(s, w, kill, Some(slot), probe);
    }

    /// Serve one already-connected stream (e.g. a socketpair in tests) on new threads;
    /// `kill` must shut the stream down so that a blocked read or write returns. If the
    /// reader has a read timeout, the session also enforces the message deadline and, with
    /// `probe`, the inactivity probe (see [`Config::probe_interval`]).
    pub fn serve_stream<S: Read + Write + Send + 'static>(
        &self,
        reader: S,
        writer: S,
        kill: Kill,
        probe: Option<Duration>,
    ) {
        self.spawn_session(reader, writer, kill, None, probe);
    }

    fn spawn_session<R, W>(
        &self,
        reader: R,
        mut writer: W,
        kill: Kill,
        slot: Option<Slot>,
        probe: Option<Duration>,
    ) where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        // Unbounded as a channel (a bounded one preallocates every slot: 320 KB a session),
        // bounded by `send` in bytes and messages.
        let (tx, rx) = unbounded::<Vec<u8>>();
        let backlog = Arc::new(AtomicUsize::new(0));
        let id = {
            let mut st = self.lock();
            let id = st.next_session;
            st.next_session += 1;
            st.sessions.insert(
                id,
                Session {
                    out: tx,
                    backlog: Arc::clone(&backlog),
                    max_backlog: self.shared.config.max_backlog,
                    max_queue: self.shared.config.max_queue,
                    monitors: HashMap::new(),
                    kill,
                    dead: false,
                },
            );
            id
        };
        let _ = thread::Builder::new()
            .name("ovsdb-write".into())
            .stack_size(WRITER_STACK)
            .spawn(move || {
                for bytes in rx.iter() {
                    let ok = writer.write_all(&bytes).and_then(|_| writer.flush());
                    backlog.fetch_sub(bytes.len(), Ordering::AcqRel);
                    if ok.is_err() {
                        break;
                    }
                }
            });
        let shared = self.shared.clone();
        let _ = thread::Builder::new()
            .name("ovsdb-read".into())
            .stack_size(READER_STACK)
            .spawn(move || {
                read_session(&shared, id, reader, slot.as_ref(), probe);
                let mut st = lock_state(&shared);
                end_session(&shared, &mut st, id);
            });
    }
}

/// How often a session's reader wakes up to check its deadlines.
const READ_TICK: Duration = Duration::from_millis(500);
/// Thread stacks: a reader parses and runs requests (serde_json bounds nesting at 128 levels),
/// a writer only writes bytes. Small stacks keep idle sessions cheap.
const READER_STACK: usize = 512 << 10;
const WRITER_STACK: usize = 64 << 10;

/// A session's reader: bytes → messages → [`handle_message`], until the peer closes, breaks
/// the protocol, misses a deadline, or the session is killed.
fn read_session<R: Read>(
    shared: &Shared,
    id: SessionId,
    mut reader: R,
    slot: Option<&Slot>,
    probe: Option<Duration>,
) {
    let mut stream = JsonStream::new(shared.config.max_message);
    let mut buf = vec![0u8; 16 * 1024];
    let mut clock = MessageClock::default();
    let mut last_msg = Instant::now();
    let mut probed = false;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                0
            }
            Err(_) => return,
        };
        stream.feed(&buf[..n]);
        loop {
            match stream.next_value() {
                Ok(Some(msg)) => {
                    last_msg = Instant::now();
                    probed = false;
                    if let Some(s) = slot {
                        s.idle();
                    }
                    let mut st = lock_state(shared);
                    if st.sessions.get(&id).is_none_or(|s| s.dead) {
                        return;
                    }
                    handle_message(shared, &mut st, id, msg);
                }
                Ok(None) => break,
                Err(e) => {
                    let mut st = lock_state(shared);
                    let why = format!("closing the connection: {e}");
                    send(&mut st, id, notification("error", json!([why])));
                    return;
                }
            }
        }
        clock.update(stream.buffered() > 0);
        if clock.expired(shared.config.message_deadline) {
            let secs = shared.config.message_deadline.as_secs_f64();
            log::warn!(target: "ovsdb", "session {id}: a message has been arriving for over {secs} s; disconnecting");
            let mut st = lock_state(shared);
            let why = "closing the connection: message took too long to arrive";
            send(&mut st, id, notification("error", json!([why])));
            return;
        }
        if let Some(p) = probe {
            let idle = last_msg.elapsed();
            if idle >= p * 2 {
                log::warn!(target: "ovsdb", "session {id}: no reply to inactivity probe after {} ms; disconnecting", idle.as_millis());
                return;
            }
            if idle >= p && !probed {
                probed = true;
                let mut st = lock_state(shared);
                send(
                    &mut st,
                    id,
                    json!({"id": "echo", "method": "echo", "params": []}),
                );
            }
        }
    }
}

fn lock_state(shared: &Shared) -> MutexGuard<'_, State> {
    // A panic while holding the lock would be a bug; keep serving rather than cascade.
    match shared.state.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Queue a message to a session. A session whose unsent bytes would pass `max_backlog` (or
/// whose queue is full) is not reading: it is disconnected, with a log line.
pub(crate) fn send(st: &mut State, id: SessionId, msg: Value) {
    send_all(st, id, std::slice::from_ref(&msg));
}

/// Queue messages to a session as one write, in order (see [`send`]).
pub(crate) fn send_all(st: &mut State, id: SessionId, msgs: &[Value]) {
    let Some(s) = st.sessions.get_mut(&id) else {
        return;
    };
    if s.dead || msgs.is_empty() {
        return;
    }
    let mut bytes = Vec::new();
    for m in msgs {
        // Serializing a `Value` into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut bytes, m);
        bytes.push(b'\n');
    }
    let len = bytes.len();
    let before = s.backlog.fetch_add(len, Ordering::AcqRel);
    let why = if before > 0 && before + len > s.max_backlog {
        Some(format!(
            "{} bytes unsent (the limit is {})",
            before + len,
            s.max_backlog
        ))
    } else if s.out.len() >= s.max_queue {
        Some("its queue of messages is full".to_string())
    } else {
        match s.out.try_send(bytes) {
            Ok(()) => None,
            Err(TrySendError::Full(_)) => Some("its queue of messages is full".to_string()),
            Err(TrySendError::Disconnected(_)) => Some("its writer has stopped".to_string()),
        }
    };
    if let Some(why) = why {
        s.backlog.fetch_sub(len, Ordering::AcqRel);
        log::warn!(target: "ovsdb", "session {id} is not reading its messages ({why}); disconnecting it");
        s.dead = true;
        (s.kill)();
    }
}

fn end_session(shared: &Shared, st: &mut State, id: SessionId) {
    // Dropping the session drops its queue's sender: the writer flushes and closes.
    st.sessions.remove(&id);
    st.pending.retain(|p| p.session != id);
    let names: Vec<String> = st
        .locks
        .iter()
        .filter(|(_, q)| q.contains(&id))
        .map(|(n, _)| n.clone())
        .collect();
    for n in names {
        release_lock(st, &n, id);
    }
    let _ = shared;
}

/// After a commit: monitor updates to every session that asked for them, then blocked
/// transactions retried. `reply` is the committing session's transact reply: it leaves in the
/// same write as that session's own updates, reply first (the order ovsdb-server uses), so a
/// client that reads the reply finds its own changes right behind it — IDL-based tools such
/// as `ovs-tcpdump` look up the rows they inserted as soon as their commit returns.
pub(crate) fn after_commit(
    shared: &Shared,
    st: &mut State,
    commit: Arc<Commit>,
    reply: Option<(SessionId, Value)>,
) {
    st.last_txn = Uuid::random();
    let last = st.last_txn;
    let mut msgs: Vec<(SessionId, Value)> = Vec::new();
    for (sid, s) in &st.sessions {
        for (key, (mid, m)) in &s.monitors {
            let _ = key;
            if let Some(u) = m.updates(&commit) {
                let msg = match m.version {
                    Version::V1 => notification("update", json!([mid, u])),
                    Version::V2 => notification("update2", json!([mid, u])),
                    Version::V3 => notification("update3", json!([mid, last.to_string(), u])),
                };
                msgs.push((*sid, msg));
            }
        }
    }
    let mut first = reply;
    if let Some((rsid, r)) = first.take() {
        let mut mine = vec![r];
        mine.extend(
            msgs.iter()
                .filter(|(s, _)| *s == rsid)
                .map(|(_, m)| m.clone()),
        );
        msgs.retain(|(s, _)| *s != rsid);
        send_all(st, rsid, &mine);
    }
    for (sid, m) in msgs {
        send(st, sid, m);
    }
    st.subscribers.retain(|s| s.send(commit.clone()).is_ok());
    shared.changed.notify_all();
    retry_pending(shared, st, false);
}

/// Retry blocked transactions (after a commit, or on a timer tick when `expired_only`).
fn retry_pending(shared: &Shared, st: &mut State, expired_only: bool) {
    let now = Instant::now();
    // Take the list: a transaction that blocks again is pushed back by `run_transact`, and one
    // that commits retries whatever is pending at that point (recursively, once per commit).
    let list = std::mem::take(&mut st.pending);
    for p in list {
        if expired_only && p.until > now {
            st.pending.push(p);
            continue;
        }
        run_transact(shared, st, p.session, p.id, p.ops, p.started);
    }
}

fn timer_loop(weak: std::sync::Weak<Shared>) {
    loop {
        let Some(shared) = weak.upgrade() else { return };
        let mut st = lock_state(&shared);
        retry_pending(&shared, &mut st, true);
        let now = Instant::now();
        let next = st.pending.iter().map(|p| p.until).min();
        let wait = next
            .map(|t| t.saturating_duration_since(now))
            .unwrap_or(Duration::from_millis(500));
        let wait = wait.clamp(Duration::from_millis(1), Duration::from_millis(500));
        let _ = shared.changed.wait_timeout(st, wait);
    }
}

/// Runs a listener's accept loop on a thread named `thread_name`: each connection `accept`
/// returns goes to `serve`, a failed accept backs off (logged under `name`), and the loop
/// ends at the first connection after `stop` is set (the listener's `wake` makes one).
pub(crate) fn accept_loop<S>(
    thread_name: &str,
    name: String,
    stop: Arc<AtomicBool>,
    mut accept: impl FnMut() -> io::Result<S> + Send + 'static,
    mut serve: impl FnMut(S) + Send + 'static,
) -> io::Result<thread::JoinHandle<()>> {
    thread::Builder::new()
        .name(thread_name.into())
        .spawn(move || {
            let mut backoff = Backoff::new(name);
            loop {
                let conn = accept();
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                match conn {
                    Ok(s) => {
                        backoff.ok();
                        serve(s);
                    }
                    Err(e) => backoff.failed(&e),
                }
            }
        })
}
