//! The daemon's view of its database, embedded or external, behind one small API.
//!
//! What: [`Db`] gives the reconfiguration thread and the CLI verbs the same four things in
//! both modes — a snapshot of the tables ferrovsd reads ([`Db::snapshot`]), a way to run a
//! transaction ([`Db::transact`]), whether this daemon may write status ([`Db::may_write`]),
//! and a channel that ticks whenever the contents may have changed ([`Db::changes`]).
//!
//! - **Embedded** (the default): an [`ovsdb::Server`] on `<dbdir>/conf.db` created from the
//!   `Open_vSwitch` schema compiled into the binary, listening on `<rundir>/db.sock` and any
//!   `--remote` (`pssl:` remotes get their TLS files from [`super::ssl::SslOptions`]). Snapshots read the committed rows directly; every commit (from any client, or
//!   our own status writes) ticks the change channel through [`ovsdb::Server::subscribe`].
//! - **External** (`--db unix:PATH` or `tcp:IP:PORT`): a supervisor thread connects with
//!   [`ovsdb::client::Client`], asks for the `ovs_vswitchd` lock as ovs-vswitchd does, monitors
//!   the tables in [`model::TABLES`] into a [`Replica`], and ticks the change channel on every
//!   update and lock change. Status transactions carry an `assert` of the lock, so a daemon that
//!   lost its lock can never overwrite another's status. If the connection drops, the replica is
//!   cleared, the lock is forgotten and the supervisor reconnects once a second; the datapath
//!   keeps forwarding with the configuration it has meanwhile.
//!
//! Invariant: [`Db::snapshot`] returns `None` while the daemon does not (yet) hold the lock or
//! have the initial contents, and the reconfiguration does nothing then, as ovs-vswitchd waits.

use super::model::{self, Tables};
use super::ssl::SslOptions;
use super::vlog;
use crossbeam_channel::{unbounded, Receiver, Sender};
use ovsdb::client::{Client, Replica};
use ovsdb::{Database, DatabaseSchema, Listener, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The `Open_vSwitch` schema, compiled in so a fresh install needs nothing else.
pub const SCHEMA: &str = include_str!("../../../../schema/vswitch.ovsschema");

/// The database name in the schema.
pub const DB_NAME: &str = "Open_vSwitch";

/// The lock ovs-vswitchd holds.
pub const LOCK: &str = "ovs_vswitchd";

const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct External {
    target: String,
    client: Mutex<Option<Client>>,
    replica: Mutex<Replica>,
    have_lock: AtomicBool,
    ready: AtomicBool,
}

enum Backend {
    Embedded {
        server: Server,
        listeners: Mutex<Vec<Listener>>,
    },
    External(Arc<External>),
}

/// See the module documentation.
pub struct Db {
    backend: Backend,
    changes: Receiver<()>,
}

/// The first error in a transaction result array, as `error: details`.
pub fn txn_error(result: &Value) -> Option<String> {
    let arr = result.as_array()?;
    arr.iter().find_map(|r| {
        let e = r.get("error")?.as_str()?;
        Some(match r.get("details").and_then(Value::as_str) {
            Some(d) => format!("{e}: {d}"),
            None => e.to_string(),
        })
    })
}

impl Db {
    /// Opens (or creates) `path`, makes sure the root row exists, and listens on `remotes`.
    pub fn embedded(path: &Path, remotes: &[String], ssl: &SslOptions) -> Result<Db, String> {
        ssl.check()?;
        let schema_json: Value = serde_json::from_str(SCHEMA)
            .map_err(|e| format!("the built-in schema is not JSON: {e}"))?;
        let schema = DatabaseSchema::from_json(&schema_json)
            .map_err(|e| format!("the built-in schema is invalid: {e}"))?;
        let db = Database::open_or_create(path, schema)
            .map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
        if let Some(note) = db.recovery_note() {
            vlog::warn("ovsdb", &format!("{}: {note}", path.display()));
        }
        let server = Server::new(db);
        let changes_in = server.subscribe();
        let (tx, rx) = unbounded();
        std::thread::Builder::new()
            .name("ovsdb-changes".into())
            .spawn(move || {
                while changes_in.recv().is_ok() {
                    if tx.send(()).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let mut listeners = Vec::new();
        for r in remotes {
            let l = if r.starts_with("pssl:") {
                if !ssl.complete() {
                    return Err(format!(
                        "--remote={r} needs --private-key, --certificate and --ca-cert"
                    ));
                }
                server.listen_tls(r, ssl.source(&server))
            } else if ["ssl:", "tcp:"].iter().any(|p| r.starts_with(p)) {
                return Err(format!(
                    "--remote={r}: active remotes are not supported (use ptcp: or pssl:)"
                ));
            } else {
                server.listen(r)
            }
            .map_err(|e| format!("cannot listen on {r}: {e}"))?;
            vlog::info("ovsdb", &format!("serving OVSDB on {}", l.local));
            listeners.push(l);
        }
        let me = Db {
            backend: Backend::Embedded {
                server,
                listeners: Mutex::new(listeners),
            },
            changes: rx,
        };
        me.ensure_root()?;
        Ok(me)
    }

    /// Connects to an external server (the supervisor retries in the background).
    pub fn external(target: &str) -> Result<Db, String> {
        if !(target.starts_with("unix:") || target.starts_with("tcp:")) {
            return Err(format!("--db: '{target}' is not unix:PATH or tcp:IP:PORT"));
        }
        let ext = Arc::new(External {
            target: target.to_string(),
            client: Mutex::new(None),
            replica: Mutex::new(Replica::default()),
            have_lock: AtomicBool::new(false),
            ready: AtomicBool::new(false),
        });
        let (tx, rx) = unbounded();
        let e2 = ext.clone();
        std::thread::Builder::new()
            .name("ovsdb-client".into())
            .spawn(move || supervise(&e2, &tx))
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        Ok(Db {
            backend: Backend::External(ext),
            changes: rx,
        })
    }

    /// Ticks whenever the contents may have changed.
    pub fn changes(&self) -> &Receiver<()> {
        &self.changes
    }

    /// Stops serving the embedded database (its sockets are removed).
    pub fn close_listeners(&self) {
        if let Backend::Embedded { listeners, .. } = &self.backend {
            let all = std::mem::take(&mut *lock(listeners));
            drop(all);
        }
    }

    /// Whether status may be written (always when embedded; with the lock when external).
    pub fn may_write(&self) -> bool {
        match &self.backend {
            Backend::Embedded { .. } => true,
            Backend::External(e) => {
                e.have_lock.load(Ordering::SeqCst) && e.ready.load(Ordering::SeqCst)
            }
        }
    }

    /// The tables ferrovsd reads, or `None` while not ready.
    pub fn snapshot(&self) -> Option<Tables> {
        match &self.backend {
            Backend::Embedded { server, .. } => Some(server.read(|db| {
                let mut t = Tables::new();
                for name in model::TABLES {
                    let Some(table) = db.table(name) else {
                        continue;
                    };
                    let rows = t.entry(name.to_string()).or_default();
                    for r in table.rows() {
                        if let Value::Object(o) = r.to_json(None) {
                            rows.insert(r.uuid().to_string(), o);
                        }
                    }
                }
                t
            })),
            Backend::External(e) => {
                if !self.may_write() {
                    return None;
                }
                Some(lock(&e.replica).tables.clone())
            }
        }
    }

    /// Runs a transaction (operations without the database name); returns the result array,
    /// or the first error. `status` transactions assert the lock in external mode.
    pub fn transact(&self, ops: Vec<Value>, status: bool) -> Result<Value, String> {
        match &self.backend {
            Backend::Embedded { server, .. } => {
                let mut all = vec![json!(DB_NAME)];
                all.extend(ops);
                let r = server.transact(&Value::Array(all));
                match txn_error(&r) {
                    Some(e) => Err(e),
                    None => Ok(r),
                }
            }
            Backend::External(e) => {
                let Some(c) = lock(&e.client).clone() else {
                    return Err(format!("not connected to the database at {}", e.target));
                };
                let mut all = Vec::with_capacity(ops.len() + 1);
                if status {
                    all.push(json!({"op": "assert", "lock": LOCK}));
                }
                let skip = all.len();
                all.extend(ops);
                let r = c
                    .transact(DB_NAME, &all, REQUEST_TIMEOUT)
                    .map_err(|e| e.to_string())?;
                if let Some(err) = txn_error(&r) {
                    return Err(err);
                }
                // Drop the assert's result so callers see their own operations' results.
                Ok(Value::Array(
                    r.as_array()
                        .map(|a| a.iter().skip(skip).cloned().collect())
                        .unwrap_or_default(),
                ))
            }
        }
    }

    /// Inserts the root row if the table is empty.
    pub fn ensure_root(&self) -> Result<(), String> {
        let Some(t) = self.snapshot() else {
            return Ok(());
        };
        if t.get("Open_vSwitch").is_some_and(|r| !r.is_empty()) {
            return Ok(());
        }
        self.transact(
            vec![
                json!({"op": "wait", "table": "Open_vSwitch", "where": [], "columns": ["_uuid"],
                       "until": "==", "rows": [], "timeout": 0}),
                json!({"op": "insert", "table": "Open_vSwitch", "row": {}}),
            ],
            false,
        )
        .map(|_| ())
    }
}

/// The external mode's connection loop.
fn supervise(e: &External, kick: &Sender<()>) {
    let mut warned = false;
    loop {
        match Client::connect(&e.target) {
            Ok((client, notes)) => {
                warned = false;
                vlog::info("ovsdb", &format!("connected to {}", e.target));
                if let Err(err) = session(e, &client, &notes, kick) {
                    vlog::warn("ovsdb", &format!("{}: {err}", e.target));
                }
                client.close();
                *lock(&e.client) = None;
                e.ready.store(false, Ordering::SeqCst);
                e.have_lock.store(false, Ordering::SeqCst);
                *lock(&e.replica) = Replica::default();
                vlog::warn(
                    "ovsdb",
                    &format!("connection to {} lost; retrying", e.target),
                );
            }
            Err(err) => {
                if !warned {
                    vlog::warn(
                        "ovsdb",
                        &format!(
                            "cannot connect to {}: {err}; retrying every second",
                            e.target
                        ),
                    );
                    warned = true;
                }
            }
        }
        if kick.send(()).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn session(
    e: &External,
    client: &Client,
    notes: &Receiver<ovsdb::client::Notification>,
    kick: &Sender<()>,
) -> Result<(), String> {
    let requests: serde_json::Map<String, Value> = model::TABLES
        .iter()
        .map(|t| (t.to_string(), json!({})))
        .collect();
    let init = client
        .monitor(
            DB_NAME,
            json!("ferrovsd"),
            Value::Object(requests),
            REQUEST_TIMEOUT,
        )
        .map_err(|err| format!("monitor failed: {err}"))?;
    {
        let mut r = lock(&e.replica);
        *r = Replica::default();
        r.apply_update(&init);
    }
    *lock(&e.client) = Some(client.clone());
    e.ready.store(true, Ordering::SeqCst);
    let locked = client
        .lock(LOCK, REQUEST_TIMEOUT)
        .map_err(|err| format!("lock request failed: {err}"))?;
    e.have_lock.store(locked, Ordering::SeqCst);
    if !locked {
        vlog::warn(
            "ovsdb",
            &format!("another process holds the {LOCK} lock; waiting for it"),
        );
    }
    let _ = kick.send(());
    for n in notes.iter() {
        match n.method.as_str() {
            "update" => {
                if let Some(u) = n.params.get(1) {
                    lock(&e.replica).apply_update(u);
                }
            }
            "locked" => {
                vlog::info("ovsdb", &format!("acquired the {LOCK} lock"));
                e.have_lock.store(true, Ordering::SeqCst);
            }
            "stolen" => {
                vlog::warn("ovsdb", &format!("the {LOCK} lock was stolen"));
                e.have_lock.store(false, Ordering::SeqCst);
            }
            _ => continue,
        }
        if kick.send(()).is_err() {
            break;
        }
    }
    Err("connection closed".into())
}
