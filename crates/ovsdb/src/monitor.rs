//! Monitors: what a client watches, and turning commits into `update`/`update2` messages.
//!
//! A [`Monitor`] is created by `monitor` (RFC 7047 §4.1.5, version 1), `monitor_cond` or
//! `monitor_cond_since` (the OVS extensions, versions 2 and 3). Per table it records the
//! columns to report, which kinds of change to report (`initial`, `insert`, `delete`,
//! `modify`) and, for versions 2 and 3, a `where` clause whose conditions are OR-ed (a row is
//! reported if any condition holds; no clause means all rows). Several requests for one table
//! are merged (union of columns, of change kinds and of conditions).
//!
//! [`Monitor::initial`] renders the current contents; [`Monitor::updates`] renders one
//! [`Commit`]: a row that starts matching is an insert, one that stops matching a delete, and
//! a modification is reported only if a monitored column changed. Version 1 sends whole rows
//! (`old` holds only the changed columns); versions 2 and 3 send `initial`/`insert` rows
//! without default-valued columns, `delete: null`, and `modify` as a per-column difference
//! (see [`Datum::diff`]). Monitors are plain data owned by the server's state under its mutex.

use crate::condition::Condition;
use crate::datum::Datum;
use crate::db::Commit;
use crate::error::{Error, Result};
use crate::row::Row;
use crate::schema::{Col, DatabaseSchema, TableSchema};
use crate::Database;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Which protocol flavour a monitor speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `monitor` / `update`
    V1,
    /// `monitor_cond` / `update2`
    V2,
    /// `monitor_cond_since` / `update3`
    V3,
}

#[derive(Debug, Clone)]
struct TableMonitor {
    schema: Arc<TableSchema>,
    cols: Vec<usize>,
    initial: bool,
    insert: bool,
    delete: bool,
    modify: bool,
    /// OR-ed conditions; None = every row.
    conds: Option<Vec<Condition>>,
}

impl TableMonitor {
    fn matches(&self, r: &Row) -> bool {
        match &self.conds {
            None => true,
            Some(cs) => cs.iter().any(|c| match c.column() {
                Some(col) => c.eval(&r.value(col)),
                None => c.eval(&Datum::set_of([])),
            }),
        }
    }

    fn row_json(&self, r: &Row, skip_defaults: bool) -> Value {
        let mut o = Map::new();
        for &i in &self.cols {
            let d = &r.data[i];
            if skip_defaults && *d == self.schema.columns[i].ty.default_datum() {
                continue;
            }
            o.insert(self.schema.columns[i].name.clone(), d.to_json());
        }
        Value::Object(o)
    }
}

/// One client monitor.
#[derive(Debug, Clone)]
pub struct Monitor {
    /// Protocol flavour.
    pub version: Version,
    tables: BTreeMap<String, TableMonitor>,
}

fn flag(sel: Option<&Value>, key: &str) -> Result<bool> {
    match sel.and_then(|s| s.get(key)) {
        None => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(Error::syntax(format!(
            "monitor select \"{key}\" must be a boolean, got {v}"
        ))),
    }
}

impl Monitor {
    /// Parse `<monitor-requests>` (or `<monitor-cond-requests>`).
    pub fn from_json(schema: &DatabaseSchema, version: Version, v: &Value) -> Result<Monitor> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax("monitor requests must be an object"))?;
        let mut tables = BTreeMap::new();
        for (tname, reqs) in o {
            let ts = schema
                .table(tname)
                .ok_or_else(|| Error::syntax(format!("no table named \"{tname}\"")))?
                .clone();
            let list: Vec<&Value> = match reqs {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            let mut tm = TableMonitor {
                schema: ts.clone(),
                cols: Vec::new(),
                initial: false,
                insert: false,
                delete: false,
                modify: false,
                conds: Some(Vec::new()),
            };
            if list.is_empty() {
                tm.initial = true;
                tm.insert = true;
                tm.delete = true;
                tm.modify = true;
                tm.conds = None;
                tm.cols = (0..ts.columns.len()).collect();
            }
            for req in list {
                let ro = req.as_object().ok_or_else(|| {
                    Error::syntax(format!("monitor request for {tname} must be an object"))
                })?;
                match ro.get("columns") {
                    None => tm.cols.extend(0..ts.columns.len()),
                    Some(Value::Array(cols)) => {
                        for c in cols {
                            let name = c
                                .as_str()
                                .ok_or_else(|| Error::syntax(format!("bad column {c}")))?;
                            match ts.lookup(name) {
                                Some(Col::User(i)) => tm.cols.push(i),
                                Some(_) => {}
                                None => {
                                    return Err(Error::syntax(format!(
                                        "no column \"{name}\" in table {tname}"
                                    )))
                                }
                            }
                        }
                    }
                    Some(other) => {
                        return Err(Error::syntax(format!(
                            "monitor columns must be an array, got {other}"
                        )))
                    }
                }
                let sel = ro.get("select");
                tm.initial |= flag(sel, "initial")?;
                tm.insert |= flag(sel, "insert")?;
                tm.delete |= flag(sel, "delete")?;
                tm.modify |= flag(sel, "modify")?;
                match ro.get("where") {
                    Some(w) if version != Version::V1 => {
                        let cs = Condition::parse_where(&ts, Some(w), None)?;
                        if let Some(all) = &mut tm.conds {
                            all.extend(cs);
                        }
                    }
                    _ => tm.conds = None,
                }
            }
            tm.cols.sort_unstable();
            tm.cols.dedup();
            tables.insert(tname.clone(), tm);
        }
        Ok(Monitor { version, tables })
    }

    /// The initial contents (`<table-updates>` or `<table-updates2>`).
    pub fn initial(&self, db: &Database) -> Value {
        let mut out = Map::new();
        for (tname, tm) in &self.tables {
            if !tm.initial {
                continue;
            }
            let Some(t) = db.table(tname) else { continue };
            let mut rows = Map::new();
            for r in t.rows().filter(|r| tm.matches(r)) {
                let u = match self.version {
                    Version::V1 => json!({"new": tm.row_json(r, false)}),
                    _ => json!({"initial": tm.row_json(r, true)}),
                };
                rows.insert(r.uuid().to_string(), u);
            }
            if !rows.is_empty() {
                out.insert(tname.clone(), Value::Object(rows));
            }
        }
        Value::Object(out)
    }

    /// The updates for one commit, or None if nothing monitored changed.
    pub fn updates(&self, commit: &Commit) -> Option<Value> {
        let mut out = Map::new();
        for (tname, changes) in &commit.tables {
            let Some(tm) = self.tables.get(tname) else {
                continue;
            };
            let mut rows = Map::new();
            for ch in changes {
                let old = ch.old.as_deref().filter(|r| tm.matches(r));
                let new = ch.new.as_deref().filter(|r| tm.matches(r));
                let u = match (old, new) {
                    (None, Some(n)) if tm.insert => match self.version {
                        Version::V1 => json!({"new": tm.row_json(n, false)}),
                        _ => json!({"insert": tm.row_json(n, true)}),
                    },
                    (Some(o), None) if tm.delete => match self.version {
                        Version::V1 => json!({"old": tm.row_json(o, false)}),
                        _ => json!({"delete": null}),
                    },
                    (Some(o), Some(n)) if tm.modify => {
                        let changed: Vec<usize> = tm
                            .cols
                            .iter()
                            .copied()
                            .filter(|&i| o.data[i] != n.data[i])
                            .collect();
                        if changed.is_empty() {
                            continue;
                        }
                        match self.version {
                            Version::V1 => {
                                let mut old_cols = Map::new();
                                for &i in &changed {
                                    old_cols.insert(
                                        tm.schema.columns[i].name.clone(),
                                        o.data[i].to_json(),
                                    );
                                }
                                json!({"old": old_cols, "new": tm.row_json(n, false)})
                            }
                            _ => {
                                let mut diff = Map::new();
                                for &i in &changed {
                                    let c = &tm.schema.columns[i];
                                    diff.insert(
                                        c.name.clone(),
                                        o.data[i].diff(&n.data[i], &c.ty).to_json(),
                                    );
                                }
                                json!({"modify": diff})
                            }
                        }
                    }
                    _ => continue,
                };
                rows.insert(ch.uuid.to_string(), u);
            }
            if !rows.is_empty() {
                out.insert(tname.clone(), Value::Object(rows));
            }
        }
        if out.is_empty() {
            None
        } else {
            Some(Value::Object(out))
        }
    }

    /// Replace the conditions (and optionally columns) for `monitor_cond_change`; returns the
    /// update that moves the client from the old view to the new one.
    pub fn change_conditions(&mut self, db: &Database, changes: &Value) -> Result<Value> {
        let o = changes
            .as_object()
            .ok_or_else(|| Error::syntax("monitor_cond_change requests must be an object"))?;
        let mut out = Map::new();
        for (tname, reqs) in o {
            let tm = self
                .tables
                .get_mut(tname)
                .ok_or_else(|| Error::syntax(format!("table {tname} is not monitored")))?;
            let list: Vec<&Value> = match reqs {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            let mut conds: Option<Vec<Condition>> = Some(Vec::new());
            for req in list {
                match req.get("where") {
                    Some(w) => {
                        let cs = Condition::parse_where(&tm.schema, Some(w), None)?;
                        if let Some(all) = &mut conds {
                            all.extend(cs);
                        }
                    }
                    None => conds = None,
                }
            }
            let before = tm.clone();
            tm.conds = conds;
            let Some(t) = db.table(tname) else { continue };
            let mut rows = Map::new();
            for r in t.rows() {
                match (before.matches(r), tm.matches(r)) {
                    (false, true) => {
                        rows.insert(
                            r.uuid().to_string(),
                            json!({"insert": tm.row_json(r, true)}),
                        );
                    }
                    (true, false) => {
                        rows.insert(r.uuid().to_string(), json!({"delete": null}));
                    }
                    _ => {}
                }
            }
            if !rows.is_empty() {
                out.insert(tname.clone(), Value::Object(rows));
            }
        }
        Ok(Value::Object(out))
    }
}
