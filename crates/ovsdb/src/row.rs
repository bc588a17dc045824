//! Rows and tables.
//!
//! A [`Row`] holds one [`Datum`] per user column, in the schema's column order, plus its
//! `_uuid` and `_version`. Rows are immutable once committed and shared as `Arc<Row>`: a
//! transaction that changes a row builds a new one, and notifications hand the old and new
//! `Arc`s to subscribers without copying. Every row carries an `Arc` of its table schema, so a
//! row found in a change notification can be read by column name.
//!
//! A [`Table`] maps UUIDs to rows in a `BTreeMap` (deterministic order for dumps and tests).

use crate::datum::Datum;
use crate::schema::{Col, TableSchema};
use crate::uuid::Uuid;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One row.
#[derive(Debug, Clone)]
pub struct Row {
    pub(crate) uuid: Uuid,
    pub(crate) version: Uuid,
    pub(crate) schema: Arc<TableSchema>,
    pub(crate) data: Vec<Datum>,
}

impl Row {
    /// A row with every column at its default.
    pub(crate) fn new_default(schema: &Arc<TableSchema>, uuid: Uuid) -> Row {
        let data = schema
            .columns
            .iter()
            .map(|c| c.ty.default_datum())
            .collect();
        Row {
            uuid,
            version: Uuid::random(),
            schema: schema.clone(),
            data,
        }
    }
    /// `_uuid`.
    pub fn uuid(&self) -> Uuid {
        self.uuid
    }
    /// `_version`.
    pub fn version(&self) -> Uuid {
        self.version
    }
    /// The table's schema.
    pub fn table(&self) -> &Arc<TableSchema> {
        &self.schema
    }
    /// A user column's value by name.
    pub fn get(&self, column: &str) -> Option<&Datum> {
        self.schema
            .column_index(column)
            .and_then(|i| self.data.get(i))
    }
    /// A user column's value by position.
    pub fn at(&self, i: usize) -> Option<&Datum> {
        self.data.get(i)
    }
    /// Any column's value, including `_uuid` and `_version`.
    pub fn value(&self, c: Col) -> Cow<'_, Datum> {
        match c {
            Col::User(i) => match self.data.get(i) {
                Some(d) => Cow::Borrowed(d),
                None => Cow::Owned(Datum::set_of([])),
            },
            Col::Uuid => Cow::Owned(Datum::scalar(crate::Atom::Uuid(self.uuid))),
            Col::Version => Cow::Owned(Datum::scalar(crate::Atom::Uuid(self.version))),
        }
    }
    /// Whether two rows hold the same user data.
    pub fn same_data(&self, other: &Row) -> bool {
        self.data == other.data
    }
    /// The row as a JSON `<row>` object with the given columns (None: every column including
    /// `_uuid` and `_version`).
    pub fn to_json(&self, cols: Option<&[Col]>) -> Value {
        let mut o = Map::new();
        match cols {
            Some(cols) => {
                for &c in cols {
                    o.insert(self.schema.col_name(c).to_string(), self.value(c).to_json());
                }
            }
            None => {
                o.insert("_uuid".into(), json!(["uuid", self.uuid.to_string()]));
                o.insert("_version".into(), json!(["uuid", self.version.to_string()]));
                for (c, d) in self.schema.columns.iter().zip(&self.data) {
                    o.insert(c.name.clone(), d.to_json());
                }
            }
        }
        Value::Object(o)
    }
}

/// One table's rows.
#[derive(Debug, Clone)]
pub struct Table {
    pub(crate) schema: Arc<TableSchema>,
    pub(crate) rows: BTreeMap<Uuid, Arc<Row>>,
}

impl Table {
    /// The schema.
    pub fn schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }
    /// Row by UUID.
    pub fn get(&self, uuid: Uuid) -> Option<&Arc<Row>> {
        self.rows.get(&uuid)
    }
    /// All rows, in UUID order.
    pub fn rows(&self) -> impl Iterator<Item = &Arc<Row>> {
        self.rows.values()
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    /// No rows?
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}
