//! Transaction records of the standard OVSDB database file: what a commit writes and how a
//! record is replayed.
//!
//! After the schema, every record of a standalone database file (ovsdb(5)) is a JSON object
//! mapping table names to `{"<uuid>": <row>|null}` plus optional members whose names start
//! with `_`: `"_date"` (commit time, milliseconds since the epoch), `"_comment"` (the
//! transaction's `comment` operations joined by LF) and `"_is_diff"`. A row is `null` when
//! deleted; a new row lists its non-default columns; a modified row lists only the columns
//! that changed, each as an RFC 7047 `<value>` (`["uuid", …]`, `["set", […]]`,
//! `["map", […]]`).
//!
//! The value of a changed column in a modified row is, when the record has
//! `"_is_diff": true`, a *difference* for every column that may hold more than one element
//! (`max` > 1): for a set the elements to add or remove (the symmetric difference), for a map
//! the pairs to add, the keys whose value changes (with the new value) and the pairs to remove
//! (with their current value). Columns of at most one element, and every column of a new row,
//! carry the new value. Without `_is_diff` every value is the new value. This is what OVS
//! itself writes (Open vSwitch 2.15 and later write `_is_diff` records), so a small change to
//! a large map, e.g. one key of a 50 MB `external_ids`, costs a few bytes in the log.
//!
//! [`commit_record`] writes a diff record unless some bounded column's difference would hold
//! more elements than the column's `max` (replacing both elements of a 2-element set gives
//! a 4-element difference), which OVS's reader refuses; then it writes new values instead.
//! [`replay`] reads both forms. Replay checks every value's type and cardinality against the
//! schema but trusts the file for referential integrity and other constraints, as the records
//! were committed under them. Rows replayed get fresh `_version`s: versions are not stored in
//! the file, as in OVS.

use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::row::{Row, Table};
use crate::schema::TableSchema;
use crate::txn::RowChange;
use crate::uuid::Uuid;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, for `_date`.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A new row: its non-default columns.
pub(crate) fn new_row_json(row: &Row) -> Value {
    let mut o = Map::new();
    for (c, d) in row.schema.columns.iter().zip(&row.data) {
        if *d != c.ty.default_datum() {
            o.insert(c.name.clone(), d.to_json());
        }
    }
    Value::Object(o)
}

/// A modified row: the changed columns, as differences when `diff`. Returns `None` when a
/// difference does not fit its column's `max` (so the record must use new values).
fn modified_row_json(old: &Row, new: &Row, diff: bool) -> Option<Value> {
    let mut o = Map::new();
    for ((c, a), b) in new.schema.columns.iter().zip(&old.data).zip(&new.data) {
        if a == b {
            continue;
        }
        let v = if diff && c.ty.max != 1 {
            let d = a.diff(b, &c.ty);
            if d.len() as u64 > c.ty.max {
                return None;
            }
            d.to_json()
        } else {
            b.to_json()
        };
        o.insert(c.name.clone(), v);
    }
    Some(Value::Object(o))
}

fn changes_json(changes: &[(String, Vec<RowChange>)], diff: bool) -> Option<Map<String, Value>> {
    let mut body = Map::new();
    for (t, list) in changes {
        let mut rows = Map::new();
        for c in list {
            let v = match (&c.old, &c.new) {
                (_, None) => Value::Null,
                (None, Some(n)) => new_row_json(n),
                (Some(o), Some(n)) => modified_row_json(o, n, diff)?,
            };
            rows.insert(c.uuid.to_string(), v);
        }
        if !rows.is_empty() {
            body.insert(t.clone(), Value::Object(rows));
        }
    }
    Some(body)
}

/// The record for one commit.
pub(crate) fn commit_record(
    changes: &[(String, Vec<RowChange>)],
    comments: &[String],
    date_ms: u64,
) -> Value {
    let (mut body, diff) = match changes_json(changes, true) {
        Some(b) => (b, true),
        None => (changes_json(changes, false).unwrap_or_default(), false),
    };
    body.insert("_date".into(), json!(date_ms));
    if diff {
        body.insert("_is_diff".into(), json!(true));
    }
    let comment = comments.join("\n");
    if !comment.is_empty() {
        body.insert("_comment".into(), json!(comment));
    }
    Value::Object(body)
}

/// The record compaction writes: every row of every table as a new row.
pub(crate) fn snapshot_record(contents: Value, date_ms: u64) -> Value {
    let mut body = match contents {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    body.insert("_date".into(), json!(date_ms));
    body.insert("_comment".into(), json!("compacted by ferrovs"));
    Value::Object(body)
}

/// Applies one column's value from a record to `row`.
fn apply_column(ts: &TableSchema, row: &mut Row, name: &str, v: &Value, diff: bool) -> Result<()> {
    let i = ts
        .column_index(name)
        .ok_or_else(|| Error::syntax(format!("table {} has no column {name}", ts.name)))?;
    let ty = &ts.columns[i].ty;
    let ctx = |e: Error| e.context(format!("column {name} of table {}", ts.name));
    if !diff || ty.max == 1 {
        row.data[i] = Datum::from_json(ty, v, None).map_err(ctx)?;
        return Ok(());
    }
    let d = Datum::from_json(&ty.any_count(), v, None).map_err(ctx)?;
    match (&mut row.data[i], d) {
        (Datum::Set(cur), Datum::Set(d)) => {
            for a in d {
                if !cur.remove(&a) {
                    cur.insert(a);
                }
            }
        }
        (Datum::Map(cur), Datum::Map(d)) => {
            for (k, v) in d {
                if cur.get(&k) == Some(&v) {
                    cur.remove(&k);
                } else {
                    cur.insert(k, v);
                }
            }
        }
        _ => return Err(ctx(Error::syntax("difference of the wrong kind"))),
    }
    let n = row.data[i].len() as u64;
    if n < ty.min || n > ty.max {
        return Err(ctx(Error::syntax(format!(
            "applying the difference leaves {n} elements, outside the column's bounds"
        ))));
    }
    Ok(())
}

/// Replays one transaction record (or a compaction's snapshot) onto `tables`.
pub(crate) fn replay(tables: &mut BTreeMap<String, Table>, rec: &Value) -> Result<()> {
    let o = rec
        .as_object()
        .ok_or_else(|| Error::syntax("transaction record is not an object"))?;
    let diff = match o.get("_is_diff") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(v) => return Err(Error::syntax(format!("_is_diff is {v}, not a boolean"))),
    };
    for (tname, rows) in o {
        if tname.starts_with('_') {
            continue;
        }
        let table = tables
            .get_mut(tname)
            .ok_or_else(|| Error::syntax(format!("no table named {tname}")))?;
        let ts = table.schema.clone();
        let rows = rows
            .as_object()
            .ok_or_else(|| Error::syntax(format!("the rows of table {tname} are not an object")))?;
        for (u, r) in rows {
            let uuid = Uuid::parse(u)
                .ok_or_else(|| Error::syntax(format!("bad row uuid {u:?} in table {tname}")))?;
            let cols = match r {
                Value::Null => {
                    if table.rows.remove(&uuid).is_none() {
                        return Err(Error::syntax(format!(
                            "deletes row {u} of table {tname}, which does not exist"
                        )));
                    }
                    continue;
                }
                Value::Object(cols) => cols,
                _ => {
                    return Err(Error::syntax(format!(
                        "row {u} of table {tname} is neither an object nor null"
                    )))
                }
            };
            let (mut row, diff) = match table.rows.get(&uuid) {
                Some(old) => {
                    let mut row = (**old).clone();
                    row.version = Uuid::random();
                    (row, diff)
                }
                None => (Row::new_default(&ts, uuid), false),
            };
            for (name, v) in cols {
                if name == "_version" {
                    continue;
                }
                apply_column(&ts, &mut row, name, v, diff)
                    .map_err(|e| e.context(format!("row {u}")))?;
            }
            table.rows.insert(uuid, Arc::new(row));
        }
    }
    Ok(())
}
