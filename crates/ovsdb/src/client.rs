//! A small, blocking OVSDB client (RFC 7047) for talking to another server, e.g. OVS's own
//! `ovsdb-server`.
//!
//! What it does: connects to `unix:PATH` or `tcp:IP:PORT`, sends JSON-RPC requests and waits for
//! their replies ([`Client::request`] and the helpers [`Client::transact`],
//! [`Client::monitor`], [`Client::lock`]), hands every notification the server sends
//! (`update`, `update2`, `locked`, `stolen`, ...) to a channel the caller reads, and answers the
//! server's `echo` probes by itself so an idle client is never disconnected for inactivity.
//!
//! Threads: [`Client::connect`] starts one reader thread per connection. It splits the byte
//! stream with [`JsonStream`], routes replies by `id` to the caller blocked in
//! [`Client::request`] (one bounded channel per request), and forwards notifications. Writes
//! happen on the caller's thread under a mutex, so any number of threads may share a
//! `Client` (it is `Clone + Send + Sync`). When the connection ends (EOF, error, or a stream
//! the reader cannot parse), every waiting request fails, the notification channel is
//! disconnected, and [`Client::is_closed`] turns true: reconnecting is the caller's decision.
//!
//! [`Replica`] keeps a local copy of monitored tables from the initial reply and the `update`
//! notifications of a version-1 monitor, keyed by table and row UUID, rows as JSON objects in
//! wire notation (as the server sent them).

use crate::jsonrpc::JsonStream;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

/// Largest message the client accepts from the server.
const MAX_MESSAGE: usize = 64 << 20;

/// A notification (a message with a method and no id we issued) from the server.
#[derive(Debug, Clone)]
pub struct Notification {
    /// `update`, `update2`, `locked`, `stolen`, ...
    pub method: String,
    /// Its `params` array.
    pub params: Value,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// The server answered with an `error` value.
    Server(Value),
    /// The connection is gone or could not be written.
    Closed(String),
    /// No reply in time.
    Timeout,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Server(v) => write!(f, "server error: {v}"),
            RequestError::Closed(why) => write!(f, "connection closed: {why}"),
            RequestError::Timeout => f.write_str("no reply from the server in time"),
        }
    }
}

type Reply = Result<Value, Value>;

struct Inner {
    writer: Mutex<Box<dyn Write + Send>>,
    pending: Mutex<HashMap<u64, Sender<Reply>>>,
    next_id: AtomicU64,
    closed: AtomicBool,
    kill: Box<dyn Fn() + Send + Sync>,
}

/// A connection to an OVSDB server. Clone freely; see the module documentation.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Client {
    /// Connects to `unix:PATH` (or a bare path) or `tcp:IP:PORT`. Returns the client and the
    /// channel of server notifications.
    pub fn connect(target: &str) -> io::Result<(Client, Receiver<Notification>)> {
        if let Some(addr) = target.strip_prefix("tcp:") {
            let s = TcpStream::connect(addr)?;
            let _ = s.set_nodelay(true);
            let w = s.try_clone()?;
            let k = s.try_clone()?;
            return Ok(Client::start(
                s,
                Box::new(w),
                Box::new(move || {
                    let _ = k.shutdown(Shutdown::Both);
                }),
            ));
        }
        let path = target.strip_prefix("unix:").unwrap_or(target);
        let s = UnixStream::connect(path)?;
        let w = s.try_clone()?;
        let k = s.try_clone()?;
        Ok(Client::start(
            s,
            Box::new(w),
            Box::new(move || {
                let _ = k.shutdown(Shutdown::Both);
            }),
        ))
    }

    fn start<R: Read + Send + 'static>(
        reader: R,
        writer: Box<dyn Write + Send>,
        kill: Box<dyn Fn() + Send + Sync>,
    ) -> (Client, Receiver<Notification>) {
        let inner = Arc::new(Inner {
            writer: Mutex::new(writer),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            kill,
        });
        let (ntx, nrx) = unbounded();
        let client = Client { inner };
        let c2 = client.clone();
        let spawned = thread::Builder::new()
            .name("ovsdb-client".into())
            .spawn(move || c2.read_loop(reader, ntx));
        if spawned.is_err() {
            client.close();
        }
        (client, nrx)
    }

    fn read_loop<R: Read>(&self, mut reader: R, ntx: Sender<Notification>) {
        let mut stream = JsonStream::new(MAX_MESSAGE);
        let mut buf = vec![0u8; 64 * 1024];
        'outer: loop {
            let n = match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            stream.feed(&buf[..n]);
            loop {
                match stream.next_value() {
                    Ok(Some(msg)) => self.handle(msg, &ntx),
                    Ok(None) => break,
                    Err(_) => break 'outer,
                }
            }
        }
        self.close();
    }

    fn handle(&self, msg: Value, ntx: &Sender<Notification>) {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        if let Some(method) = msg.get("method").and_then(Value::as_str) {
            let params = msg.get("params").cloned().unwrap_or_else(|| json!([]));
            if method == "echo" && !id.is_null() {
                let _ = self.send(&json!({"id": id, "result": params, "error": null}));
                return;
            }
            let _ = ntx.send(Notification {
                method: method.to_string(),
                params,
            });
            return;
        }
        let Some(n) = id.as_u64() else { return };
        let Some(tx) = lock(&self.inner.pending).remove(&n) else {
            return;
        };
        let reply = match msg.get("error") {
            Some(e) if !e.is_null() => Err(e.clone()),
            _ => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(reply);
    }

    fn send(&self, msg: &Value) -> io::Result<()> {
        let text = msg.to_string();
        let mut w = lock(&self.inner.writer);
        w.write_all(text.as_bytes())?;
        w.flush()
    }

    /// Closes the connection; waiting requests fail.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        (self.inner.kill)();
        lock(&self.inner.pending).clear();
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Sends `method(params)` and waits up to `timeout` for its reply.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RequestError> {
        if self.is_closed() {
            return Err(RequestError::Closed("connection closed".into()));
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = bounded(1);
        lock(&self.inner.pending).insert(id, tx);
        let msg = json!({"id": id, "method": method, "params": params});
        if let Err(e) = self.send(&msg) {
            lock(&self.inner.pending).remove(&id);
            self.close();
            return Err(RequestError::Closed(e.to_string()));
        }
        match rx.recv_timeout(timeout) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(RequestError::Server(e)),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                lock(&self.inner.pending).remove(&id);
                Err(RequestError::Timeout)
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                Err(RequestError::Closed("connection closed".into()))
            }
        }
    }

    /// `transact` on database `db`: returns the result array.
    pub fn transact(
        &self,
        db: &str,
        ops: &[Value],
        timeout: Duration,
    ) -> Result<Value, RequestError> {
        let mut params = vec![json!(db)];
        params.extend(ops.iter().cloned());
        self.request("transact", Value::Array(params), timeout)
    }

    /// A version-1 `monitor` on `db` with monitor id `id`: returns the initial contents.
    pub fn monitor(
        &self,
        db: &str,
        id: Value,
        requests: Value,
        timeout: Duration,
    ) -> Result<Value, RequestError> {
        self.request("monitor", json!([db, id, requests]), timeout)
    }

    /// `lock`: whether the lock was granted at once (else a `locked` notification follows
    /// when it is).
    pub fn lock(&self, name: &str, timeout: Duration) -> Result<bool, RequestError> {
        let r = self.request("lock", json!([name]), timeout)?;
        Ok(r.get("locked").and_then(Value::as_bool).unwrap_or(false))
    }
}

/// A local copy of monitored tables: table name → row UUID → row (wire-notation JSON object).
#[derive(Debug, Clone, Default)]
pub struct Replica {
    /// The rows.
    pub tables: BTreeMap<String, BTreeMap<String, Map<String, Value>>>,
}

impl Replica {
    /// Applies a version-1 `table-updates` object (a monitor's initial reply or the second
    /// parameter of an `update` notification). A row with `new` replaces or merges into the
    /// local row; a row without `new` is deleted.
    pub fn apply_update(&mut self, updates: &Value) {
        let Some(tables) = updates.as_object() else {
            return;
        };
        for (tname, rows) in tables {
            let Some(rows) = rows.as_object() else {
                continue;
            };
            let table = self.tables.entry(tname.clone()).or_default();
            for (uuid, change) in rows {
                match change.get("new").and_then(Value::as_object) {
                    Some(new) => {
                        let row = table.entry(uuid.clone()).or_default();
                        for (k, v) in new {
                            row.insert(k.clone(), v.clone());
                        }
                    }
                    None => {
                        table.remove(uuid);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, DatabaseSchema, Server};

    fn schema() -> Arc<DatabaseSchema> {
        let s = json!({
            "name": "T", "version": "1.0.0",
            "tables": {"A": {"columns": {"n": {"type": "integer"}}, "isRoot": true}}
        });
        DatabaseSchema::from_json(&s).expect("schema")
    }

    #[test]
    fn request_monitor_lock_against_the_embedded_server() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = dir.path().join("db.sock");
        let server = Server::new(Database::new(schema()));
        let _l = server
            .listen(&format!("punix:{}", sock.display()))
            .expect("listen");
        let (c, notes) = Client::connect(&format!("unix:{}", sock.display())).expect("connect");
        let t = Duration::from_secs(5);
        let init = c
            .monitor("T", json!("m"), json!({"A": {}}), t)
            .expect("monitor");
        let mut rep = Replica::default();
        rep.apply_update(&init);
        assert!(rep.tables.get("A").is_none_or(|t| t.is_empty()));
        assert!(c.lock("L", t).expect("lock"));
        let r = c
            .transact(
                "T",
                &[json!({"op": "insert", "table": "A", "row": {"n": 7}})],
                t,
            )
            .expect("transact");
        assert!(r[0].get("uuid").is_some(), "{r}");
        let n = notes.recv_timeout(t).expect("update");
        assert_eq!(n.method, "update");
        rep.apply_update(&n.params[1]);
        let rows = rep.tables.get("A").expect("table");
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows.values().next().and_then(|r| r.get("n")),
            Some(&json!(7))
        );
        let e = c.request("get_schema", json!(["nosuch"]), t);
        assert!(matches!(e, Err(RequestError::Server(_))), "{e:?}");
        c.close();
        assert!(c.is_closed());
        assert!(c.request("echo", json!([]), t).is_err());
    }
}
