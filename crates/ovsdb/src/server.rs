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
//! handling under the state mutex) and a writer thread draining a bounded queue of outgoing
//! messages. A client that sends garbage or an oversized message gets an error notification
//! and is disconnected; a client that does not read its updates fills its queue and is
//! disconnected as well (and a blocked write times out), so it can never stall the server or
//! other clients. Disconnection releases the session's locks (passing them on with `locked`
//! notifications), drops its monitors and cancels its blocked transactions.
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
use crate::jsonrpc::{error_reply, notification, reply, JsonStream};
use crate::monitor::{Monitor, Version};
use crate::txn::TxnContext;
use crate::uuid::Uuid;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender, TrySendError};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// How long a write to a client may block.
    pub write_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_message: 64 << 20,
            max_queue: 10_000,
            write_timeout: Duration::from_secs(30),
        }
    }
}

type SessionId = u64;

struct Session {
    out: Sender<Value>,
    monitors: HashMap<String, (Value, Monitor)>,
    kill: Kill,
    dead: bool,
}

/// Shuts a session's socket down (both directions).
pub type Kill = Arc<dyn Fn() + Send + Sync>;

struct Pending {
    session: SessionId,
    id: Value,
    ops: Vec<Value>,
    started: Instant,
    until: Instant,
}

struct State {
    db: Database,
    sessions: HashMap<SessionId, Session>,
    next_session: SessionId,
    locks: HashMap<String, VecDeque<SessionId>>,
    pending: Vec<Pending>,
    subscribers: Vec<Sender<Arc<Commit>>>,
    last_txn: Uuid,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled on every commit and whenever a blocked transaction is queued.
    changed: Condvar,
    config: Config,
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
                        after_commit(&self.shared, &mut st, c);
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
        let stop2 = stop.clone();
        let server = self.clone();
        let thread = thread::Builder::new()
            .name("ovsdb-listen".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stop2.load(Ordering::SeqCst) {
                        break;
                    }
                    match conn {
                        Ok(s) => server.spawn_unix(s),
                        Err(e) => {
                            log::warn!(target: "ovsdb", "accept failed: {e}");
                            thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })?;
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
        let stop2 = stop.clone();
        let server = self.clone();
        let thread = thread::Builder::new()
            .name("ovsdb-listen".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stop2.load(Ordering::SeqCst) {
                        break;
                    }
                    match conn {
                        Ok(s) => server.spawn_tcp(s),
                        Err(e) => {
                            log::warn!(target: "ovsdb", "accept failed: {e}");
                            thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })?;
        Ok(Listener {
            stop,
            wake: Some(Box::new(move || TcpStream::connect(local).is_ok())),
            thread: Some(thread),
            local: local.to_string(),
        })
    }

    fn spawn_unix(&self, s: UnixStream) {
        let (Ok(w), Ok(k)) = (s.try_clone(), s.try_clone()) else {
            return;
        };
        let _ = w.set_write_timeout(Some(self.shared.config.write_timeout));
        self.spawn_session(
            s,
            w,
            Arc::new(move || {
                let _ = k.shutdown(Shutdown::Both);
            }),
        );
    }

    fn spawn_tcp(&self, s: TcpStream) {
        let (Ok(w), Ok(k)) = (s.try_clone(), s.try_clone()) else {
            return;
        };
        let _ = s.set_nodelay(true);
        let _ = w.set_write_timeout(Some(self.shared.config.write_timeout));
        self.spawn_session(
            s,
            w,
            Arc::new(move || {
                let _ = k.shutdown(Shutdown::Both);
            }),
        );
    }

    /// Serve one already-connected stream (e.g. a socketpair in tests) on new threads;
    /// `kill` must shut the stream down so that a blocked read or write returns.
    pub fn serve_stream<S: Read + Write + Send + 'static>(&self, reader: S, writer: S, kill: Kill) {
        self.spawn_session(reader, writer, kill);
    }

    fn spawn_session<R, W>(&self, mut reader: R, mut writer: W, kill: Kill)
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let (tx, rx) = bounded::<Value>(self.shared.config.max_queue);
        let id = {
            let mut st = self.lock();
            let id = st.next_session;
            st.next_session += 1;
            st.sessions.insert(
                id,
                Session {
                    out: tx,
                    monitors: HashMap::new(),
                    kill,
                    dead: false,
                },
            );
            id
        };
        let _ = thread::Builder::new()
            .name("ovsdb-write".into())
            .spawn(move || {
                for msg in rx.iter() {
                    let mut bytes = msg.to_string().into_bytes();
                    bytes.push(b'\n');
                    if writer
                        .write_all(&bytes)
                        .and_then(|_| writer.flush())
                        .is_err()
                    {
                        break;
                    }
                }
            });
        let shared = self.shared.clone();
        let _ = thread::Builder::new()
            .name("ovsdb-read".into())
            .spawn(move || {
                let mut stream = JsonStream::new(shared.config.max_message);
                let mut buf = vec![0u8; 64 * 1024];
                'outer: loop {
                    let n = match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    stream.feed(&buf[..n]);
                    loop {
                        match stream.next_value() {
                            Ok(Some(msg)) => {
                                let mut st = lock_state(&shared);
                                if st.sessions.get(&id).is_none_or(|s| s.dead) {
                                    break 'outer;
                                }
                                handle_message(&shared, &mut st, id, msg);
                            }
                            Ok(None) => break,
                            Err(e) => {
                                let mut st = lock_state(&shared);
                                send(
                                    &mut st,
                                    id,
                                    notification(
                                        "error",
                                        json!([format!("closing the connection: {e}")]),
                                    ),
                                );
                                break 'outer;
                            }
                        }
                    }
                }
                let mut st = lock_state(&shared);
                end_session(&shared, &mut st, id);
            });
    }
}

fn lock_state(shared: &Shared) -> MutexGuard<'_, State> {
    // A panic while holding the lock would be a bug; keep serving rather than cascade.
    match shared.state.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Queue a message to a session; a full queue means a stuck client: disconnect it.
fn send(st: &mut State, id: SessionId, msg: Value) {
    let Some(s) = st.sessions.get_mut(&id) else {
        return;
    };
    if s.dead {
        return;
    }
    match s.out.try_send(msg) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
            log::warn!(target: "ovsdb", "session {id} is not reading its messages; disconnecting it");
            s.dead = true;
            (s.kill)();
        }
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

fn release_lock(st: &mut State, name: &str, id: SessionId) {
    let Some(q) = st.locks.get_mut(name) else {
        return;
    };
    let was_owner = q.front() == Some(&id);
    q.retain(|s| *s != id);
    let next = q.front().copied();
    if q.is_empty() {
        st.locks.remove(name);
    }
    if was_owner {
        if let Some(n) = next {
            send(st, n, notification("locked", json!([name])));
        }
    }
}

fn after_commit(shared: &Shared, st: &mut State, commit: Arc<Commit>) {
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

fn run_transact(
    shared: &Shared,
    st: &mut State,
    sid: SessionId,
    id: Value,
    ops: Vec<Value>,
    started: Instant,
) {
    let owned: Vec<String> = st
        .locks
        .iter()
        .filter(|(_, q)| q.front() == Some(&sid))
        .map(|(n, _)| n.clone())
        .collect();
    let owns = |n: &str| owned.iter().any(|o| o == n);
    let ctx = TxnContext {
        owns_lock: &owns,
        started,
        now: Instant::now(),
    };
    match st.db.transact(&ops, &ctx) {
        TxnOutcome::Done { result, commit } => {
            if let Some(c) = commit {
                // The reply goes out first, then the monitor updates, as ovsdb-server does.
                send(st, sid, reply(&id, result));
                after_commit(shared, st, c);
            } else {
                send(st, sid, reply(&id, result));
            }
        }
        TxnOutcome::Blocked { until } => {
            st.pending.push(Pending {
                session: sid,
                id,
                ops,
                started,
                until,
            });
            shared.changed.notify_all();
        }
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

fn params_of(msg: &Value) -> &[Value] {
    msg.get("params")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn handle_message(shared: &Shared, st: &mut State, sid: SessionId, msg: Value) {
    let Some(obj) = msg.as_object() else {
        send(
            st,
            sid,
            error_reply(&Value::Null, json!("JSON-RPC message must be an object")),
        );
        return;
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        // A reply (to our echo, say) or junk: nothing to answer.
        return;
    };
    let params = params_of(&msg);
    if !obj.get("params").is_some_and(Value::is_array) {
        send(
            st,
            sid,
            error_reply(
                &id,
                json!({"error": "syntax error", "details": "\"params\" must be an array"}),
            ),
        );
        return;
    }
    let dbname = st.db.schema().name.clone();
    let check_db = |p: Option<&Value>| -> Result<(), Value> {
        match p.and_then(Value::as_str) {
            Some(n) if n == dbname => Ok(()),
            Some(n) => Err(
                json!({"error": "unknown database", "details": format!("no database named {n}")}),
            ),
            None => Err(
                json!({"error": "syntax error", "details": "first parameter must be a database name"}),
            ),
        }
    };
    match method {
        "echo" => send(st, sid, reply(&id, Value::Array(params.to_vec()))),
        "list_dbs" => send(st, sid, reply(&id, json!([dbname]))),
        "get_schema" => match check_db(params.first()) {
            Ok(()) => {
                let s = st.db.schema().to_json().clone();
                send(st, sid, reply(&id, s));
            }
            Err(e) => send(st, sid, error_reply(&id, e)),
        },
        "transact" => match check_db(params.first()) {
            Ok(()) => {
                let ops = params[1..].to_vec();
                run_transact(shared, st, sid, id, ops, Instant::now());
            }
            Err(e) => send(st, sid, error_reply(&id, e)),
        },
        "cancel" => {
            let target = params.first().cloned().unwrap_or(Value::Null);
            if let Some(pos) = st
                .pending
                .iter()
                .position(|p| p.session == sid && p.id == target)
            {
                let p = st.pending.remove(pos);
                send(st, sid, error_reply(&p.id, json!("canceled")));
            }
        }
        "monitor" | "monitor_cond" | "monitor_cond_since" => {
            if let Err(e) = check_db(params.first()) {
                send(st, sid, error_reply(&id, e));
                return;
            }
            let version = match method {
                "monitor" => Version::V1,
                "monitor_cond" => Version::V2,
                _ => Version::V3,
            };
            let mid = params.get(1).cloned().unwrap_or(Value::Null);
            let key = mid.to_string();
            let reqs = params.get(2).cloned().unwrap_or(Value::Null);
            if st
                .sessions
                .get(&sid)
                .is_some_and(|s| s.monitors.contains_key(&key))
            {
                send(
                    st,
                    sid,
                    error_reply(
                        &id,
                        json!({"error": "duplicate monitor ID", "details": key}),
                    ),
                );
                return;
            }
            match Monitor::from_json(st.db.schema(), version, &reqs) {
                Ok(m) => {
                    let initial = m.initial(&st.db);
                    let result = match version {
                        Version::V3 => json!([false, st.last_txn.to_string(), initial]),
                        _ => initial,
                    };
                    if let Some(s) = st.sessions.get_mut(&sid) {
                        s.monitors.insert(key, (mid, m));
                    }
                    send(st, sid, reply(&id, result));
                }
                Err(e) => send(st, sid, error_reply(&id, e.to_json())),
            }
        }
        "monitor_cond_change" => {
            let old = params.first().map(Value::to_string).unwrap_or_default();
            let new_id = params.get(1).cloned().unwrap_or(Value::Null);
            let reqs = params.get(2).cloned().unwrap_or(Value::Null);
            let Some(s) = st.sessions.get_mut(&sid) else {
                return;
            };
            let Some((_, mut m)) = s.monitors.remove(&old) else {
                send(
                    st,
                    sid,
                    error_reply(&id, json!({"error": "unknown monitor", "details": old})),
                );
                return;
            };
            match m.change_conditions(&st.db, &reqs) {
                Ok(u) => {
                    let v = m.version;
                    if let Some(s) = st.sessions.get_mut(&sid) {
                        s.monitors.insert(new_id.to_string(), (new_id.clone(), m));
                    }
                    if u.as_object().is_some_and(|o| !o.is_empty()) {
                        let n = match v {
                            Version::V3 => {
                                notification("update3", json!([new_id, st.last_txn.to_string(), u]))
                            }
                            _ => notification("update2", json!([new_id, u])),
                        };
                        send(st, sid, n);
                    }
                    send(st, sid, reply(&id, json!({})));
                }
                Err(e) => {
                    if let Some(s) = st.sessions.get_mut(&sid) {
                        s.monitors.insert(old.clone(), (params[0].clone(), m));
                    }
                    send(st, sid, error_reply(&id, e.to_json()));
                }
            }
        }
        "monitor_cancel" => {
            let key = params.first().map(Value::to_string).unwrap_or_default();
            let removed = st
                .sessions
                .get_mut(&sid)
                .and_then(|s| s.monitors.remove(&key))
                .is_some();
            if removed {
                send(st, sid, reply(&id, json!({})));
            } else {
                send(
                    st,
                    sid,
                    error_reply(&id, json!({"error": "unknown monitor", "details": key})),
                );
            }
        }
        "lock" | "steal" | "unlock" => {
            let Some(name) = params.first().and_then(Value::as_str).map(str::to_string) else {
                send(
                    st,
                    sid,
                    error_reply(
                        &id,
                        json!({"error": "syntax error", "details": "lock name must be a string"}),
                    ),
                );
                return;
            };
            match method {
                "lock" => {
                    let q = st.locks.entry(name.clone()).or_default();
                    if q.contains(&sid) {
                        send(
                            st,
                            sid,
                            error_reply(&id, json!({"error": "duplicate lock", "details": name})),
                        );
                        return;
                    }
                    q.push_back(sid);
                    let locked = q.front() == Some(&sid);
                    send(st, sid, reply(&id, json!({"locked": locked})));
                }
                "steal" => {
                    let q = st.locks.entry(name.clone()).or_default();
                    let victim = q.front().copied().filter(|v| *v != sid);
                    q.retain(|s| *s != sid);
                    q.push_front(sid);
                    send(st, sid, reply(&id, json!({"locked": true})));
                    if let Some(v) = victim {
                        send(st, v, notification("stolen", json!([name])));
                    }
                }
                _ => {
                    release_lock(st, &name, sid);
                    send(st, sid, reply(&id, json!({})));
                }
            }
        }
        _ => {
            if !id.is_null() {
                send(st, sid, error_reply(&id, json!("unknown method")));
            }
        }
    }
}
