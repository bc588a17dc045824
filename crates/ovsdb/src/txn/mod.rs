//! The transaction engine (RFC 7047 §5.2 operations, §4.1.3 `transact`).
//!
//! A [`Txn`] runs the operations of one `transact` request against a private working copy:
//! each table is cloned on first write (a `BTreeMap` of `Arc<Row>`, so the clone copies
//! pointers, not data) and reads fall through to the committed table otherwise. Nothing the
//! operations do is visible to anyone until [`Txn::finalize`] has succeeded and the caller has
//! swapped the working tables in, which makes every transaction atomic: any error simply drops
//! the working copy.
//!
//! `finalize` enforces the whole-database rules in this order: every `named-uuid` used was
//! inserted; no strong reference dangles (a deleted row still referenced is a "referential
//! integrity violation"); unreferenced rows of non-root tables are garbage-collected,
//! cascading; weak references to rows that no longer exist are removed (and the column's
//! minimum re-checked); unique indexes and `maxRows` hold. Rows whose data ended up unchanged
//! keep their old `Arc` and `_version`; changed rows get a fresh `_version`. Per-column type
//! and constraint checks happen earlier, when each operation parses its values.
//!
//! A `wait` that is not yet satisfied and whose timeout has not expired makes the whole
//! transaction [`Step::Blocked`]: the caller retries it after later commits or at the deadline.
//!
//! ## Files
//! This file holds the transaction's state and the dispatch of operations; `ops` the operations,
//! `commit` the rules checked at the end and the change set.

use crate::condition::{Condition, Mutation};
use crate::datum::{is_ref, Atom, Datum};
use crate::error::{Error, Result};
use crate::row::Row;
use crate::schema::{Col, TableSchema};
use crate::types::RefType;
use crate::uuid::Uuid;
use crate::Database;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

mod commit;
mod ops;

/// What the caller knows about the session running the transaction.
pub struct TxnContext<'a> {
    /// Does the session own this lock? (for `assert`)
    pub owns_lock: &'a dyn Fn(&str) -> bool,
    /// When the transaction was first attempted (wait timeouts count from here).
    pub started: Instant,
    /// Now.
    pub now: Instant,
}

impl Default for TxnContext<'_> {
    fn default() -> Self {
        let now = Instant::now();
        TxnContext {
            owns_lock: &|_| false,
            started: now,
            now,
        }
    }
}

/// One row changed by a commit.
#[derive(Debug, Clone)]
pub struct RowChange {
    /// The row.
    pub uuid: Uuid,
    /// Before (None: inserted).
    pub old: Option<Arc<Row>>,
    /// After (None: deleted).
    pub new: Option<Arc<Row>>,
}

pub(crate) enum Step {
    Ok(Value),
    Err(Error),
    Blocked(Instant),
}

struct Symbol {
    uuid: Uuid,
    created: bool,
}

type Rows = BTreeMap<Uuid, Arc<Row>>;

pub(crate) struct Txn<'a> {
    db: &'a Database,
    pub(crate) work: BTreeMap<String, Rows>,
    symbols: HashMap<String, Symbol>,
    pub(crate) comments: Vec<String>,
}

fn resolver(symbols: &mut HashMap<String, Symbol>) -> impl FnMut(&str) -> Result<Uuid> + '_ {
    move |name: &str| {
        Ok(symbols
            .entry(name.to_string())
            .or_insert_with(|| Symbol {
                uuid: Uuid::random(),
                created: false,
            })
            .uuid)
    }
}

fn str_member<'v>(op: &'v Value, key: &str) -> Result<&'v str> {
    op.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::syntax(format!("operation lacks a \"{key}\" string member: {op}")))
}

impl<'a> Txn<'a> {
    pub(crate) fn new(db: &'a Database) -> Self {
        Txn {
            db,
            work: BTreeMap::new(),
            symbols: HashMap::new(),
            comments: Vec::new(),
        }
    }

    fn table_schema(&self, name: &str) -> Result<Arc<TableSchema>> {
        self.db
            .schema
            .table(name)
            .cloned()
            .ok_or_else(|| Error::syntax(format!("no table named \"{name}\"")))
    }

    fn rows(&self, table: &str) -> &Rows {
        match self.work.get(table) {
            Some(r) => r,
            None => self
                .db
                .tables
                .get(table)
                .map(|t| &t.rows)
                .unwrap_or(&self.db.empty),
        }
    }

    fn rows_mut(&mut self, table: &str) -> &mut Rows {
        if !self.work.contains_key(table) {
            let copy = self
                .db
                .tables
                .get(table)
                .map(|t| t.rows.clone())
                .unwrap_or_default();
            self.work.insert(table.to_string(), copy);
        }
        self.work.entry(table.to_string()).or_default()
    }

    fn matching(&self, table: &str, conds: &[Condition]) -> Vec<Uuid> {
        let rows = self.rows(table);
        // Fast path: `_uuid == X` narrows to one row.
        for c in conds {
            if let Condition::Compare {
                col: Col::Uuid,
                func: crate::condition::Function::Eq,
                arg,
            } = c
            {
                let Some(u) = arg.first().and_then(Atom::as_uuid) else {
                    return Vec::new();
                };
                return match rows.get(&u) {
                    Some(r) if conds.iter().all(|c| eval(c, r)) => vec![u],
                    _ => Vec::new(),
                };
            }
        }
        rows.values()
            .filter(|r| conds.iter().all(|c| eval(c, r)))
            .map(|r| r.uuid)
            .collect()
    }

    /// Execute one operation.
    pub(crate) fn execute(&mut self, op: &Value, ctx: &TxnContext<'_>) -> Step {
        match self.execute_inner(op, ctx) {
            Ok(v) => Step::Ok(v),
            Err(StepErr::E(e)) => Step::Err(e),
            Err(StepErr::Blocked(t)) => Step::Blocked(t),
        }
    }

    fn execute_inner(
        &mut self,
        op: &Value,
        ctx: &TxnContext<'_>,
    ) -> std::result::Result<Value, StepErr> {
        if !op.is_object() {
            return Err(Error::syntax(format!("operation must be an object, got {op}")).into());
        }
        let name = str_member(op, "op")?;
        let v = match name {
            "insert" => self.op_insert(op)?,
            "select" => self.op_select(op)?,
            "update" => self.op_update(op)?,
            "mutate" => self.op_mutate(op)?,
            "delete" => self.op_delete(op)?,
            "wait" => self.op_wait(op, ctx)?,
            "commit" => {
                if !op.get("durable").is_some_and(Value::is_boolean) {
                    return Err(Error::syntax("commit needs a boolean \"durable\"").into());
                }
                json!({})
            }
            "abort" => return Err(Error::new("aborted", "aborted by request").into()),
            "comment" => {
                self.comments.push(str_member(op, "comment")?.to_string());
                json!({})
            }
            "assert" => {
                let lock = str_member(op, "lock")?;
                if !(ctx.owns_lock)(lock) {
                    return Err(Error::new(
                        "not owner",
                        format!("this session does not own lock \"{lock}\""),
                    )
                    .into());
                }
                json!({})
            }
            other => return Err(Error::syntax(format!("unknown operation \"{other}\"")).into()),
        };
        Ok(v)
    }

    fn parse_row(
        &mut self,
        ts: &TableSchema,
        v: Option<&Value>,
        for_update: bool,
    ) -> Result<Vec<(usize, Datum)>> {
        let Some(v) = v else { return Ok(Vec::new()) };
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax(format!("row must be an object, got {v}")))?;
        let mut out = Vec::with_capacity(o.len());
        for (k, val) in o {
            let i = match ts.lookup(k) {
                Some(Col::User(i)) => i,
                Some(_) => {
                    return Err(Error::constraint(format!(
                        "column {k} of table {} cannot be written",
                        ts.name
                    )))
                }
                None => {
                    return Err(Error::new(
                        "unknown column",
                        format!("no column \"{k}\" in table {}", ts.name),
                    ))
                }
            };
            let cs = &ts.columns[i];
            if for_update && !cs.mutable {
                return Err(Error::constraint(format!(
                    "cannot update immutable column {k} of table {}",
                    ts.name
                )));
            }
            let mut r = resolver(&mut self.symbols);
            let d = Datum::from_json(&cs.ty, val, Some(&mut r))
                .map_err(|e| e.context(format!("table {} column {k}", ts.name)))?;
            d.check_constraints(&cs.ty)
                .map_err(|m| Error::constraint(format!("table {} column {k}: {m}", ts.name)))?;
            out.push((i, d));
        }
        Ok(out)
    }

    fn parse_where(&mut self, ts: &TableSchema, op: &Value) -> Result<Vec<Condition>> {
        let mut r = resolver(&mut self.symbols);
        let w = op
            .get("where")
            .ok_or_else(|| Error::syntax(format!("operation lacks \"where\": {op}")))?;
        Condition::parse_where(ts, Some(w), Some(&mut r))
    }
}

fn check_indexes(ts: &TableSchema, rows: &Rows) -> Result<()> {
    for ix in &ts.indexes {
        let mut seen: BTreeMap<Vec<&Datum>, Uuid> = BTreeMap::new();
        for r in rows.values() {
            let key: Vec<&Datum> = ix.iter().map(|&i| &r.data[i]).collect();
            if let Some(first) = seen.insert(key.clone(), r.uuid) {
                let names: Vec<&str> = ix.iter().map(|&i| ts.columns[i].name.as_str()).collect();
                let vals: Vec<String> = key.iter().map(|d| d.to_json().to_string()).collect();
                return Err(Error::constraint(format!(
                    "transaction causes rows {first} and {} of table {} to have identical values ({}) for the index on column(s) {}",
                    r.uuid,
                    ts.name,
                    vals.join(", "),
                    names.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// (column index, whether the key (true) or the value (false) refers, target table).
pub(crate) fn ref_columns(ts: &TableSchema, kind: Option<RefType>) -> Vec<(usize, bool, &str)> {
    let mut out = Vec::new();
    for (i, c) in ts.columns.iter().enumerate() {
        for (b, key) in [(Some(&c.ty.key), true), (c.ty.value.as_ref(), false)] {
            if let Some(b) = b {
                if is_ref(b) && kind.is_none_or(|k| k == b.ref_type) {
                    if let Some(t) = &b.ref_table {
                        out.push((i, key, t.as_str()));
                    }
                }
            }
        }
    }
    out
}

fn eval(c: &Condition, r: &Row) -> bool {
    match c.column() {
        Some(col) => c.eval(&r.value(col)),
        None => c.eval(&Datum::set_of([])),
    }
}

/// Parse an optional `columns` array.
pub(crate) fn parse_columns(ts: &TableSchema, v: Option<&Value>) -> Result<Option<Vec<Col>>> {
    let Some(v) = v else { return Ok(None) };
    let arr = v
        .as_array()
        .ok_or_else(|| Error::syntax(format!("\"columns\" must be an array, got {v}")))?;
    let mut out = Vec::with_capacity(arr.len());
    for c in arr {
        let name = c
            .as_str()
            .ok_or_else(|| Error::syntax(format!("bad column name {c}")))?;
        let col = ts.lookup(name).ok_or_else(|| {
            Error::new(
                "unknown column",
                format!("no column \"{name}\" in table {}", ts.name),
            )
        })?;
        if !out.contains(&col) {
            out.push(col);
        }
    }
    Ok(Some(out))
}

enum StepErr {
    E(Error),
    Blocked(Instant),
}

impl From<Error> for StepErr {
    fn from(e: Error) -> Self {
        StepErr::E(e)
    }
}
