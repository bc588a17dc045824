//! The database: committed tables, transactions, durability.
//!
//! A [`Database`] owns the committed contents of every table of its schema and, optionally,
//! a [`Storage`] log. It is a plain single-owner value: `transact` takes `&mut self`, reads
//! take `&self`, and the server wraps it in a mutex (one writer at a time, which is also
//! the serialisation order of the log). Rows are `Arc`s, so a commit's [`Commit`] (the list of
//! old/new rows) costs no copies and can be handed to other threads.
//!
//! Commit protocol: run the operations on a working copy ([`crate::txn`]), enforce the
//! database-wide rules, write the change set to the log and fsync, and only then swap the new
//! tables in. The change set is one transaction record of OVSDB's standard file format
//! (`filetxn`): new rows with their non-default columns, modified rows with only the columns
//! that changed (sets and maps as differences), deleted rows as `null`, plus `_date` and the
//! transaction's comments. If the log write fails the transaction fails with an "I/O error"
//! and memory is untouched, so memory never runs ahead of the disk.
//!
//! After a commit the log may be compacted: the schema and one record holding every row are
//! written to a new file that replaces the log (see `storage`). A failed compaction is logged
//! and leaves the (still valid) old log in use.
//!
//! Opening replays the file's records in order onto empty tables. A file in ferrovs's former
//! private format is loaded and at once rewritten in the standard format (logged); if that
//! rewrite fails, opening fails, so the old format is never appended to.

use crate::error::Error;
use crate::filetxn;
use crate::row::{Row, Table};
use crate::schema::DatabaseSchema;
use crate::storage::Storage;
use crate::txn::{RowChange, Step, Txn, TxnContext};
use crate::uuid::Uuid;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The changes made by one committed transaction.
#[derive(Debug, Clone)]
pub struct Commit {
    /// Commit sequence number within this process (1, 2, ...).
    pub seq: u64,
    /// Changed rows by table name.
    pub tables: BTreeMap<String, Vec<RowChange>>,
    /// `comment` operations, in order.
    pub comments: Vec<String>,
}

/// The result of [`Database::transact`].
#[derive(Debug)]
pub enum TxnOutcome {
    /// The transaction ran: `result` is the RFC 7047 result array; `commit` is set if rows
    /// changed.
    Done {
        /// The `result` array.
        result: Value,
        /// The changes, if any.
        commit: Option<Arc<Commit>>,
    },
    /// A `wait` is not satisfied yet: retry after the next commit, or at `until` at the latest
    /// (when it will time out).
    Blocked {
        /// The deadline.
        until: Instant,
    },
}

/// An OVSDB database.
#[derive(Debug)]
pub struct Database {
    pub(crate) schema: Arc<DatabaseSchema>,
    pub(crate) tables: BTreeMap<String, Table>,
    pub(crate) empty: BTreeMap<Uuid, Arc<Row>>,
    storage: Option<Storage>,
    seq: u64,
    recovery_note: Option<String>,
}

impl Database {
    /// An empty in-memory database.
    pub fn new(schema: Arc<DatabaseSchema>) -> Database {
        let tables = schema
            .tables
            .iter()
            .map(|(n, t)| {
                (
                    n.clone(),
                    Table {
                        schema: t.clone(),
                        rows: BTreeMap::new(),
                    },
                )
            })
            .collect();
        Database {
            schema,
            tables,
            empty: BTreeMap::new(),
            storage: None,
            seq: 0,
            recovery_note: None,
        }
    }

    /// Create a new, empty, file-backed database. Fails if `path` exists.
    pub fn create(path: &Path, schema: Arc<DatabaseSchema>) -> io::Result<Database> {
        let mut db = Database::new(schema);
        db.storage = Some(Storage::create(path, db.schema.to_json())?);
        Ok(db)
    }

    /// Open an existing file-backed database, recovering from a torn last record. A file in
    /// the former private format is rewritten in the standard format.
    pub fn open(path: &Path) -> io::Result<Database> {
        let (storage, loaded) = Storage::open(path)?;
        let schema = DatabaseSchema::from_json(&loaded.schema).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: the schema record: {e}", path.display()),
            )
        })?;
        let mut db = Database::new(schema);
        for (i, rec) in loaded.records.iter().enumerate() {
            filetxn::replay(&mut db.tables, rec).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: transaction record {}: {e}", path.display(), i + 1),
                )
            })?;
        }
        if let Some(msg) = &loaded.dropped {
            log::warn!(target: "ovsdb", "{msg}");
        }
        db.recovery_note = loaded.dropped;
        db.storage = Some(storage);
        if loaded.legacy {
            db.compact().map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "{}: rewriting the old-format file in the OVSDB format failed: {e}",
                        path.display()
                    ),
                )
            })?;
            log::warn!(target: "ovsdb", "{}: converted from ferrovs's old private log format to the OVSDB database file format", path.display());
        }
        Ok(db)
    }

    /// Open `path` if it exists, else create it with `schema`.
    pub fn open_or_create(path: &Path, schema: Arc<DatabaseSchema>) -> io::Result<Database> {
        if path.exists() {
            Database::open(path)
        } else {
            Database::create(path, schema)
        }
    }

    /// What recovery dropped on open, if anything.
    pub fn recovery_note(&self) -> Option<&str> {
        self.recovery_note.as_deref()
    }

    /// Compact when the log exceeds `factor` × the snapshot size and `min_bytes`.
    pub fn set_compaction(&mut self, factor: u64, min_bytes: u64) {
        if let Some(s) = &mut self.storage {
            s.factor = factor.max(1);
            s.min_bytes = min_bytes;
        }
    }

    /// Size of the log file (0 for in-memory databases).
    pub fn log_size(&self) -> u64 {
        self.storage.as_ref().map(Storage::size).unwrap_or(0)
    }

    /// The schema.
    pub fn schema(&self) -> &Arc<DatabaseSchema> {
        &self.schema
    }

    /// A table by name.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.get(name)
    }

    /// All tables.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.tables.values()
    }

    /// Run a transaction (the operations, without the leading database name).
    pub fn transact(&mut self, ops: &[Value], ctx: &TxnContext<'_>) -> TxnOutcome {
        let mut txn = Txn::new(self);
        let mut results = Vec::with_capacity(ops.len() + 1);
        for op in ops {
            match txn.execute(op, ctx) {
                Step::Ok(v) => results.push(v),
                Step::Err(e) => {
                    results.push(e.to_json());
                    results.resize(ops.len(), Value::Null);
                    return TxnOutcome::Done {
                        result: Value::Array(results),
                        commit: None,
                    };
                }
                Step::Blocked(until) => return TxnOutcome::Blocked { until },
            }
        }
        let changes = match txn.finalize() {
            Ok(c) => c,
            Err(e) => {
                results.push(e.to_json());
                return TxnOutcome::Done {
                    result: Value::Array(results),
                    commit: None,
                };
            }
        };
        if changes.is_empty() {
            return TxnOutcome::Done {
                result: Value::Array(results),
                commit: None,
            };
        }
        let comments = std::mem::take(&mut txn.comments);
        let work = std::mem::take(&mut txn.work);
        drop(txn);
        if let Some(storage) = &mut self.storage {
            let rec = filetxn::commit_record(&changes, &comments, filetxn::now_ms());
            if let Err(e) = storage.append(&rec) {
                results.push(Error::io(format!("writing the log failed: {e}")).to_json());
                return TxnOutcome::Done {
                    result: Value::Array(results),
                    commit: None,
                };
            }
        }
        for (t, rows) in work {
            if let Some(table) = self.tables.get_mut(&t) {
                table.rows = rows;
            }
        }
        self.seq += 1;
        let commit = Commit {
            seq: self.seq,
            tables: changes.into_iter().collect(),
            comments,
        };
        self.maybe_compact();
        TxnOutcome::Done {
            result: Value::Array(results),
            commit: Some(Arc::new(commit)),
        }
    }

    /// Run a transaction with no session (no locks owned) and no waiting: a `wait` that is not
    /// satisfied fails at once. Convenient for tests and simple embedders.
    pub fn transact_now(&mut self, ops: &Value) -> (Value, Option<Arc<Commit>>) {
        let Some(ops) = ops.as_array() else {
            return (
                json!([Error::syntax("transaction must be an array of operations").to_json()]),
                None,
            );
        };
        let now = Instant::now();
        let later = now
            .checked_add(std::time::Duration::from_secs(1 << 32))
            .unwrap_or(now);
        let ctx = TxnContext {
            owns_lock: &|_| false,
            started: now,
            now: later,
        };
        match self.transact(ops, &ctx) {
            TxnOutcome::Done { result, commit } => (result, commit),
            TxnOutcome::Blocked { .. } => (
                json!([Error::new("timed out", "wait not satisfied").to_json()]),
                None,
            ),
        }
    }

    /// The whole contents as the body of one transaction record (`{table: {uuid: row}}`, each
    /// row with its non-default columns): what compaction writes, without `_date`.
    pub fn snapshot_json(&self) -> Value {
        let mut o = Map::new();
        for (n, t) in &self.tables {
            if t.rows.is_empty() {
                continue;
            }
            let rows: Map<String, Value> = t
                .rows
                .values()
                .map(|r| (r.uuid.to_string(), filetxn::new_row_json(r)))
                .collect();
            o.insert(n.clone(), Value::Object(rows));
        }
        Value::Object(o)
    }

    fn maybe_compact(&mut self) {
        if !self.storage.as_ref().is_some_and(Storage::should_compact) {
            return;
        }
        self.compact_now();
    }

    /// Rewrite the log as the schema plus one record of every row, now. Errors are logged;
    /// the old log stays in use.
    pub fn compact_now(&mut self) {
        if let Err(e) = self.compact() {
            log::error!(target: "ovsdb", "compacting the log failed (the old log is kept): {e}");
        }
    }

    fn compact(&mut self) -> io::Result<()> {
        if self.storage.is_none() {
            return Ok(());
        }
        let snap = filetxn::snapshot_record(self.snapshot_json(), filetxn::now_ms());
        match &mut self.storage {
            Some(storage) => storage.compact(self.schema.to_json(), &snap),
            None => Ok(()),
        }
    }
}
