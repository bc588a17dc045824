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

    fn op_insert(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let mut uuid = match op.get("uuid") {
            None => None,
            Some(u) => Some(
                u.as_array()
                    .filter(|a| a.len() == 2 && a[0] == "uuid")
                    .and_then(|a| a[1].as_str())
                    .and_then(Uuid::parse)
                    .ok_or_else(|| Error::syntax(format!("bad \"uuid\" {u}")))?,
            ),
        };
        if let Some(n) = op.get("uuid-name") {
            let name = n
                .as_str()
                .ok_or_else(|| Error::syntax("uuid-name must be a string"))?;
            match self.symbols.get_mut(name) {
                Some(s) if s.created => {
                    return Err(Error::new(
                        "duplicate uuid-name",
                        format!("uuid-name \"{name}\" is already used"),
                    ))
                }
                Some(s) => {
                    if let Some(u) = uuid {
                        if u != s.uuid {
                            return Err(Error::syntax(format!(
                                "uuid-name \"{name}\" was referenced before an insert gave it an explicit uuid"
                            )));
                        }
                    }
                    s.created = true;
                    uuid = Some(s.uuid);
                }
                None => {
                    let u = uuid.unwrap_or_else(Uuid::random);
                    self.symbols.insert(
                        name.to_string(),
                        Symbol {
                            uuid: u,
                            created: true,
                        },
                    );
                    uuid = Some(u);
                }
            }
        }
        let uuid = uuid.unwrap_or_else(Uuid::random);
        let values = self.parse_row(&ts, op.get("row"), false)?;
        if self.db.tables.values().any(|t| t.rows.contains_key(&uuid))
            || self.work.values().any(|t| t.contains_key(&uuid))
        {
            return Err(Error::new(
                "duplicate uuid",
                format!("a row with uuid {uuid} already exists"),
            ));
        }
        let mut row = Row::new_default(&ts, uuid);
        for (i, d) in values {
            row.data[i] = d;
        }
        self.rows_mut(tname).insert(uuid, Arc::new(row));
        Ok(json!({"uuid": ["uuid", uuid.to_string()]}))
    }

    fn op_select(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let cols = parse_columns(&ts, op.get("columns"))?;
        let rows = self.rows(tname);
        let out: Vec<Value> = self
            .matching(tname, &conds)
            .into_iter()
            .filter_map(|u| rows.get(&u))
            .map(|r| r.to_json(cols.as_deref()))
            .collect();
        Ok(json!({"rows": out}))
    }

    fn op_update(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let values = self.parse_row(
            &ts,
            Some(
                op.get("row")
                    .ok_or_else(|| Error::syntax("update lacks \"row\""))?,
            ),
            true,
        )?;
        let hits = self.matching(tname, &conds);
        let rows = self.rows_mut(tname);
        for u in &hits {
            if let Some(r) = rows.get_mut(u) {
                let r = Arc::make_mut(r);
                for (i, d) in &values {
                    r.data[*i] = d.clone();
                }
            }
        }
        Ok(json!({"count": hits.len()}))
    }

    fn op_mutate(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let ms = op
            .get("mutations")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::syntax("mutate lacks a \"mutations\" array"))?;
        let mut muts = Vec::with_capacity(ms.len());
        for m in ms {
            let mut r = resolver(&mut self.symbols);
            muts.push(Mutation::from_json(&ts, m, Some(&mut r))?);
        }
        let hits = self.matching(tname, &conds);
        let rows = self.rows_mut(tname);
        for u in &hits {
            if let Some(r) = rows.get_mut(u) {
                let r = Arc::make_mut(r);
                for m in &muts {
                    let cs = &ts.columns[m.col];
                    let what = format!("table {} column {}", ts.name, cs.name);
                    let d = m.apply(&r.data[m.col], &what)?;
                    d.check_constraints(&cs.ty)
                        .map_err(|e| Error::constraint(format!("{what}: {e}")))?;
                    r.data[m.col] = d;
                }
            }
        }
        Ok(json!({"count": hits.len()}))
    }

    fn op_delete(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let hits = self.matching(tname, &conds);
        let rows = self.rows_mut(tname);
        for u in &hits {
            rows.remove(u);
        }
        Ok(json!({"count": hits.len()}))
    }

    fn op_wait(&mut self, op: &Value, ctx: &TxnContext<'_>) -> std::result::Result<Value, StepErr> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let cols = parse_columns(&ts, op.get("columns"))?
            .unwrap_or_else(|| (0..ts.columns.len()).map(Col::User).collect());
        let until = str_member(op, "until")?;
        if until != "==" && until != "!=" {
            return Err(Error::syntax(format!(
                "wait \"until\" must be \"==\" or \"!=\", not \"{until}\""
            ))
            .into());
        }
        let timeout = match op.get("timeout") {
            None => None,
            Some(t) => Some(
                t.as_u64()
                    .ok_or_else(|| Error::syntax("wait timeout must be a non-negative integer"))?,
            ),
        };
        let given = op
            .get("rows")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::syntax("wait lacks a \"rows\" array"))?;
        let mut expected: Vec<Vec<Datum>> = Vec::with_capacity(given.len());
        for g in given {
            let o = g
                .as_object()
                .ok_or_else(|| Error::syntax(format!("wait row must be an object, got {g}")))?;
            let mut vals = Vec::with_capacity(cols.len());
            for &c in &cols {
                let cname = ts.col_name(c);
                let v = o
                    .get(cname)
                    .ok_or_else(|| Error::syntax(format!("wait row {g} lacks column {cname}")))?;
                let mut r = resolver(&mut self.symbols);
                vals.push(
                    Datum::from_json(ts.col_type(c), v, Some(&mut r))
                        .map_err(|e| e.context(format!("wait on table {tname}")))?,
                );
            }
            if o.len() != cols.len() {
                return Err(Error::syntax(format!(
                    "wait row {g} has columns not listed in \"columns\""
                ))
                .into());
            }
            expected.push(vals);
        }
        let rows = self.rows(tname);
        let mut actual: Vec<Vec<Datum>> = self
            .matching(tname, &conds)
            .into_iter()
            .filter_map(|u| rows.get(&u))
            .map(|r| cols.iter().map(|&c| r.value(c).into_owned()).collect())
            .collect();
        actual.sort();
        expected.sort();
        let equal = actual == expected;
        if equal == (until == "==") {
            return Ok(json!({}));
        }
        match timeout {
            Some(t) if t > 0 => {
                let deadline = ctx
                    .started
                    .checked_add(std::time::Duration::from_millis(t.min(1 << 40)))
                    .unwrap_or(ctx.now + std::time::Duration::from_secs(86_400));
                if ctx.now < deadline {
                    return Err(StepErr::Blocked(deadline));
                }
                Err(Error::new("timed out", format!("wait on table {tname} timed out")).into())
            }
            _ => Err(Error::new(
                "timed out",
                format!("wait on table {tname} was not satisfied"),
            )
            .into()),
        }
    }

    /// Enforce the database-wide rules and compute the change set.
    pub(crate) fn finalize(&mut self) -> Result<Vec<(String, Vec<RowChange>)>> {
        let mut unresolved: Vec<&String> = self
            .symbols
            .iter()
            .filter(|(_, s)| !s.created)
            .map(|(n, _)| n)
            .collect();
        if !unresolved.is_empty() {
            unresolved.sort();
            return Err(Error::integrity(format!(
                "named-uuid \"{}\" is referenced but no row was inserted with that uuid-name",
                unresolved[0]
            )));
        }
        if self.work.is_empty() {
            return Ok(Vec::new());
        }
        let schema = self.db.schema.clone();
        let deleted_in = self.tables_with_deletions();
        self.check_strong_refs(&deleted_in)?;
        self.collect_garbage();
        let deleted_in = self.tables_with_deletions();
        self.drop_weak_refs(&deleted_in)?;

        let mut changes = Vec::new();
        let tables: Vec<String> = self.work.keys().cloned().collect();
        for tname in tables {
            let Some(ts) = schema.table(&tname).cloned() else {
                continue;
            };
            let empty = BTreeMap::new();
            let old = self
                .db
                .tables
                .get(&tname)
                .map(|t| &t.rows)
                .unwrap_or(&empty);
            let Some(new) = self.work.get_mut(&tname) else {
                continue;
            };
            let mut list = Vec::new();
            for (u, o) in old {
                match new.get_mut(u) {
                    None => list.push(RowChange {
                        uuid: *u,
                        old: Some(o.clone()),
                        new: None,
                    }),
                    Some(n) if Arc::ptr_eq(n, o) => {}
                    Some(n) if n.same_data(o) => *n = o.clone(),
                    Some(n) => {
                        let mut r = (**n).clone();
                        r.version = Uuid::random();
                        *n = Arc::new(r);
                        list.push(RowChange {
                            uuid: *u,
                            old: Some(o.clone()),
                            new: Some(n.clone()),
                        });
                    }
                }
            }
            for (u, n) in new.iter() {
                if !old.contains_key(u) {
                    list.push(RowChange {
                        uuid: *u,
                        old: None,
                        new: Some(n.clone()),
                    });
                }
            }
            if list.is_empty() {
                continue;
            }
            if let Some(max) = ts.max_rows {
                if new.len() as u64 > max {
                    return Err(Error::constraint(format!(
                        "transaction causes table {tname} to have {} rows, more than its maxRows {max}",
                        new.len()
                    )));
                }
            }
            check_indexes(&ts, new)?;
            changes.push((tname, list));
        }
        Ok(changes)
    }

    fn tables_with_deletions(&self) -> HashSet<String> {
        let mut out = HashSet::new();
        for (t, rows) in &self.work {
            if let Some(old) = self.db.tables.get(t) {
                if old.rows.keys().any(|u| !rows.contains_key(u)) {
                    out.insert(t.clone());
                }
            }
        }
        out
    }

    /// Every strong reference in a row that changed, or into a table that lost rows, must
    /// point at an existing row.
    fn check_strong_refs(&self, deleted_in: &HashSet<String>) -> Result<()> {
        for (tname, ts) in &self.db.schema.tables {
            let ref_cols: Vec<(usize, bool, &str)> = ref_columns(ts, Some(RefType::Strong));
            if ref_cols.is_empty() {
                continue;
            }
            let touches_deleted = ref_cols.iter().any(|(_, _, t)| deleted_in.contains(*t));
            let in_work = self.work.contains_key(tname);
            if !touches_deleted && !in_work {
                continue;
            }
            let committed = self.db.tables.get(tname);
            for row in self.rows(tname).values() {
                let unchanged = committed
                    .and_then(|t| t.rows.get(&row.uuid))
                    .is_some_and(|o| Arc::ptr_eq(o, row));
                for &(i, key, target) in &ref_cols {
                    if unchanged && !deleted_in.contains(target) {
                        continue;
                    }
                    for u in row.data[i].uuids_of(key) {
                        if self.rows(target).contains_key(&u) {
                            continue;
                        }
                        let existed = self
                            .db
                            .tables
                            .get(target)
                            .is_some_and(|t| t.rows.contains_key(&u));
                        let cname = &ts.columns[i].name;
                        return Err(Error::integrity(if existed {
                            format!(
                                "cannot delete {target} row {u} because it is referenced by column {cname} of {tname} row {}",
                                row.uuid
                            )
                        } else {
                            format!(
                                "column {cname} of {tname} row {} refers to nonexistent {target} row {u}",
                                row.uuid
                            )
                        }));
                    }
                }
            }
        }
        Ok(())
    }

    /// Delete rows of non-root tables that no strong reference reaches, cascading.
    fn collect_garbage(&mut self) {
        let schema = self.db.schema.clone();
        if schema.tables.values().all(|t| t.is_root) {
            return;
        }
        let non_root: HashSet<&str> = schema
            .tables
            .values()
            .filter(|t| !t.is_root)
            .map(|t| t.name.as_str())
            .collect();
        let mut count: HashMap<Uuid, usize> = HashMap::new();
        for (tname, ts) in &schema.tables {
            let cols: Vec<_> = ref_columns(ts, Some(RefType::Strong))
                .into_iter()
                .filter(|(_, _, t)| non_root.contains(t))
                .collect();
            if cols.is_empty() {
                continue;
            }
            for row in self.rows(tname).values() {
                for &(i, key, _) in &cols {
                    for u in row.data[i].uuids_of(key) {
                        *count.entry(u).or_default() += 1;
                    }
                }
            }
        }
        let mut doomed: Vec<(String, Uuid)> = Vec::new();
        for t in &non_root {
            for u in self.rows(t).keys() {
                if count.get(u).copied().unwrap_or(0) == 0 {
                    doomed.push((t.to_string(), *u));
                }
            }
        }
        while let Some((t, u)) = doomed.pop() {
            let Some(row) = self.rows_mut(&t).remove(&u) else {
                continue;
            };
            let Some(ts) = schema.table(&t) else { continue };
            for (i, key, target) in ref_columns(ts, Some(RefType::Strong)) {
                if !non_root.contains(target) {
                    continue;
                }
                for v in row.data[i].uuids_of(key) {
                    if let Some(c) = count.get_mut(&v) {
                        *c = c.saturating_sub(1);
                        if *c == 0 && self.rows(target).contains_key(&v) {
                            doomed.push((target.to_string(), v));
                        }
                    }
                }
            }
        }
    }

    /// Remove weak references to rows that do not exist.
    fn drop_weak_refs(&mut self, deleted_in: &HashSet<String>) -> Result<()> {
        let schema = self.db.schema.clone();
        for (tname, ts) in &schema.tables {
            let cols = ref_columns(ts, Some(RefType::Weak));
            if cols.is_empty() {
                continue;
            }
            let touches_deleted = cols.iter().any(|(_, _, t)| deleted_in.contains(*t));
            if !touches_deleted && !self.work.contains_key(tname) {
                continue;
            }
            let mut fixes: Vec<(Uuid, usize, Datum)> = Vec::new();
            for row in self.rows(tname).values() {
                for &(i, key, target) in &cols {
                    let d = &row.data[i];
                    let dangling: Vec<Uuid> = d
                        .uuids_of(key)
                        .filter(|u| !self.rows(target).contains_key(u))
                        .collect();
                    if dangling.is_empty() {
                        continue;
                    }
                    let gone = |a: &Atom| a.as_uuid().is_some_and(|u| dangling.contains(&u));
                    let nd = match d {
                        Datum::Set(s) => {
                            Datum::Set(s.iter().filter(|a| !gone(a)).cloned().collect())
                        }
                        Datum::Map(m) => Datum::Map(
                            m.iter()
                                .filter(|(k, v)| !(if key { gone(k) } else { gone(v) }))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        ),
                    };
                    if (nd.len() as u64) < ts.columns[i].ty.min {
                        return Err(Error::constraint(format!(
                            "removing dangling weak references leaves column {} of {tname} row {} with too few elements",
                            ts.columns[i].name, row.uuid
                        )));
                    }
                    fixes.push((row.uuid, i, nd));
                }
            }
            if fixes.is_empty() {
                continue;
            }
            let rows = self.rows_mut(tname);
            for (u, i, d) in fixes {
                if let Some(r) = rows.get_mut(&u) {
                    Arc::make_mut(r).data[i] = d;
                }
            }
        }
        Ok(())
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
