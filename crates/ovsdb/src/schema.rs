//! Database schemas (RFC 7047 §3.2 `<database-schema>`, `<table-schema>`, `<column-schema>`).
//!
//! A [`DatabaseSchema`] is parsed once from JSON and then shared read-only (`Arc`) by the
//! database, its rows and every server thread. Parsing checks everything the rest of the crate
//! relies on: identifiers are well formed, user columns do not start with `_` (the implicit
//! `_uuid` and `_version` columns are reserved), every `refTable` names a table of this schema,
//! index columns exist, and `version` is `x.y.z`. Columns are addressed by position ([`Col`])
//! after name lookup, so rows are plain vectors. Following RFC 7047, when no table is marked
//! `isRoot` every table counts as a root table (no garbage collection).
//!
//! The original JSON text is kept and returned verbatim by `get_schema`.

use crate::error::{Error, Result};
use crate::types::{AtomicType, ColumnType};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One column.
#[derive(Debug, Clone)]
pub struct ColumnSchema {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: ColumnType,
    /// Not persisted across restarts (we still keep it in memory).
    pub ephemeral: bool,
    /// Can be changed after insert.
    pub mutable: bool,
}

/// A column address: one of the two implicit columns, or a user column by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Col {
    /// `_uuid`
    Uuid,
    /// `_version`
    Version,
    /// A column of the schema, by index into [`TableSchema::columns`].
    User(usize),
}

/// One table.
#[derive(Debug)]
pub struct TableSchema {
    /// Name.
    pub name: String,
    /// The user columns, in schema order (sorted by name).
    pub columns: Vec<ColumnSchema>,
    by_name: HashMap<String, usize>,
    /// Maximum number of rows.
    pub max_rows: Option<u64>,
    /// Root table (rows live without being referenced)?
    pub is_root: bool,
    /// Unique indexes, as column positions.
    pub indexes: Vec<Vec<usize>>,
    uuid_type: ColumnType,
}

impl TableSchema {
    /// Find a column by name, including `_uuid` and `_version`.
    pub fn lookup(&self, name: &str) -> Option<Col> {
        match name {
            "_uuid" => Some(Col::Uuid),
            "_version" => Some(Col::Version),
            _ => self.by_name.get(name).map(|&i| Col::User(i)),
        }
    }
    /// A user column's position by name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
    /// The type of a column.
    pub fn col_type(&self, c: Col) -> &ColumnType {
        match c {
            Col::User(i) => &self.columns[i].ty,
            Col::Uuid | Col::Version => &self.uuid_type,
        }
    }
    /// The name of a column.
    pub fn col_name(&self, c: Col) -> &str {
        match c {
            Col::User(i) => &self.columns[i].name,
            Col::Uuid => "_uuid",
            Col::Version => "_version",
        }
    }

    fn from_json(name: &str, v: &Value) -> Result<TableSchema> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax(format!("table {name} must be an object")))?;
        let mut columns = Vec::new();
        let mut max_rows = None;
        let mut is_root = false;
        let mut index_names: Vec<Vec<String>> = Vec::new();
        for (k, val) in o {
            match k.as_str() {
                "columns" => {
                    let cols = val.as_object().ok_or_else(|| {
                        Error::syntax(format!("table {name}: columns must be an object"))
                    })?;
                    let sorted: BTreeMap<&String, &Value> = cols.iter().collect();
                    for (cname, cv) in sorted {
                        if !is_identifier(cname) || cname.starts_with('_') {
                            return Err(Error::syntax(format!(
                                "table {name}: \"{cname}\" is not a valid column name"
                            )));
                        }
                        columns.push(
                            parse_column(cname, cv)
                                .map_err(|e| e.context(format!("table {name} column {cname}")))?,
                        );
                    }
                }
                "maxRows" => {
                    max_rows = Some(val.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                        Error::syntax(format!("table {name}: maxRows must be a positive integer"))
                    })?)
                }
                "isRoot" => {
                    is_root = val.as_bool().ok_or_else(|| {
                        Error::syntax(format!("table {name}: isRoot must be a boolean"))
                    })?
                }
                "indexes" => {
                    let arr = val.as_array().ok_or_else(|| {
                        Error::syntax(format!("table {name}: indexes must be an array"))
                    })?;
                    for ix in arr {
                        let cols = ix.as_array().filter(|a| !a.is_empty()).ok_or_else(|| {
                            Error::syntax(format!("table {name}: bad index {ix}"))
                        })?;
                        let mut names = Vec::new();
                        for c in cols {
                            names.push(
                                c.as_str()
                                    .ok_or_else(|| {
                                        Error::syntax(format!("table {name}: bad index {ix}"))
                                    })?
                                    .to_string(),
                            );
                        }
                        index_names.push(names);
                    }
                }
                other => {
                    return Err(Error::syntax(format!(
                        "table {name}: unknown member \"{other}\""
                    )))
                }
            }
        }
        if !o.contains_key("columns") {
            return Err(Error::syntax(format!("table {name} has no columns")));
        }
        let by_name = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i))
            .collect();
        let mut t = TableSchema {
            name: name.to_string(),
            columns,
            by_name,
            max_rows,
            is_root,
            indexes: Vec::new(),
            uuid_type: ColumnType::scalar(AtomicType::Uuid),
        };
        for names in index_names {
            let mut ix = Vec::new();
            for n in &names {
                let i = t.column_index(n).ok_or_else(|| {
                    Error::syntax(format!("table {name}: index column \"{n}\" does not exist"))
                })?;
                ix.push(i);
            }
            t.indexes.push(ix);
        }
        Ok(t)
    }
}

fn parse_column(name: &str, v: &Value) -> Result<ColumnSchema> {
    let o = v
        .as_object()
        .ok_or_else(|| Error::syntax("column must be an object"))?;
    let mut ty = None;
    let mut ephemeral = false;
    let mut mutable = true;
    for (k, val) in o {
        match k.as_str() {
            "type" => ty = Some(ColumnType::from_json(val)?),
            "ephemeral" => {
                ephemeral = val
                    .as_bool()
                    .ok_or_else(|| Error::syntax("ephemeral must be a boolean"))?
            }
            "mutable" => {
                mutable = val
                    .as_bool()
                    .ok_or_else(|| Error::syntax("mutable must be a boolean"))?
            }
            other => return Err(Error::syntax(format!("unknown column member \"{other}\""))),
        }
    }
    let ty = ty.ok_or_else(|| Error::syntax("column has no type"))?;
    Ok(ColumnSchema {
        name: name.to_string(),
        ty,
        ephemeral,
        mutable,
    })
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A whole database schema.
#[derive(Debug)]
pub struct DatabaseSchema {
    /// Database name, e.g. `Open_vSwitch`.
    pub name: String,
    /// Schema version `x.y.z`.
    pub version: String,
    /// Optional checksum string, as OVS schemas carry.
    pub cksum: Option<String>,
    /// Tables by name.
    pub tables: BTreeMap<String, Arc<TableSchema>>,
    json: Value,
}

impl DatabaseSchema {
    /// Parse and validate a schema.
    pub fn from_json(v: &Value) -> Result<Arc<DatabaseSchema>> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax("schema must be a JSON object"))?;
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| is_identifier(n))
            .ok_or_else(|| Error::syntax("schema lacks a valid \"name\""))?
            .to_string();
        let version = o
            .get("version")
            .and_then(Value::as_str)
            .filter(|s| {
                let parts: Vec<&str> = s.split('.').collect();
                parts.len() == 3
                    && parts
                        .iter()
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            })
            .ok_or_else(|| Error::syntax("schema lacks a \"version\" of the form x.y.z"))?
            .to_string();
        let cksum = match o.get("cksum") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(Error::syntax("cksum must be a string")),
        };
        for k in o.keys() {
            if !matches!(k.as_str(), "name" | "version" | "cksum" | "tables") {
                return Err(Error::syntax(format!("schema: unknown member \"{k}\"")));
            }
        }
        let tables_json: &Map<String, Value> = o
            .get("tables")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::syntax("schema lacks a \"tables\" object"))?;
        let mut tables = BTreeMap::new();
        for (tname, tv) in tables_json {
            if !is_identifier(tname) {
                return Err(Error::syntax(format!(
                    "\"{tname}\" is not a valid table name"
                )));
            }
            tables.insert(tname.clone(), TableSchema::from_json(tname, tv)?);
        }
        // Reference targets must exist.
        for t in tables.values() {
            for c in &t.columns {
                for b in [Some(&c.ty.key), c.ty.value.as_ref()].into_iter().flatten() {
                    if let Some(rt) = &b.ref_table {
                        if !tables.contains_key(rt) {
                            return Err(Error::syntax(format!(
                                "table {} column {} refers to unknown table \"{rt}\"",
                                t.name, c.name
                            )));
                        }
                    }
                }
            }
        }
        if tables.values().all(|t| !t.is_root) {
            for t in tables.values_mut() {
                t.is_root = true;
            }
        }
        let tables = tables.into_iter().map(|(k, t)| (k, Arc::new(t))).collect();
        Ok(Arc::new(DatabaseSchema {
            name,
            version,
            cksum,
            tables,
            json: v.clone(),
        }))
    }

    /// Parse from JSON text.
    pub fn parse(text: &str) -> Result<Arc<DatabaseSchema>> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::syntax(format!("schema is not JSON: {e}")))?;
        Self::from_json(&v)
    }

    /// The schema as given.
    pub fn to_json(&self) -> &Value {
        &self.json
    }

    /// A table by name.
    pub fn table(&self, name: &str) -> Option<&Arc<TableSchema>> {
        self.tables.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_validates() {
        let s = DatabaseSchema::from_json(&json!({
            "name": "T", "version": "1.0.0",
            "tables": {
                "A": {"columns": {"b": {"type": {"key": {"type": "uuid", "refTable": "B"}, "min": 0, "max": "unlimited"}},
                                  "name": {"type": "string"}},
                      "isRoot": true, "indexes": [["name"]], "maxRows": 3},
                "B": {"columns": {"x": {"type": "integer", "mutable": false}}}
            }
        }))
        .unwrap();
        let a = s.table("A").unwrap();
        assert!(a.is_root);
        assert!(!s.table("B").unwrap().is_root);
        assert_eq!(a.indexes, vec![vec![a.column_index("name").unwrap()]]);
        assert_eq!(a.lookup("_uuid"), Some(Col::Uuid));
        assert!(!s.table("B").unwrap().columns[0].mutable);

        let bad = [
            json!({"name": "T", "version": "1.0", "tables": {}}),
            json!({"name": "T", "version": "1.0.0", "tables": {"A": {"columns": {"_x": {"type": "integer"}}}}}),
            json!({"name": "T", "version": "1.0.0", "tables": {"A": {"columns": {"x": {"type": {"key": {"type": "uuid", "refTable": "Z"}}}}}}}),
            json!({"name": "T", "version": "1.0.0", "tables": {"A": {"columns": {"x": {"type": "integer"}}, "indexes": [["y"]]}}}),
            json!({"name": "T", "version": "1.0.0", "tables": {"A": {"columns": {"x": {"type": "int"}}}}}),
            json!({"name": "T", "version": "1.0.0", "tables": {"A": {"columns": {"x": {"type": {"key": "integer", "min": 2}}}}}}),
        ];
        for b in bad {
            assert!(DatabaseSchema::from_json(&b).is_err(), "{b}");
        }
        // No isRoot anywhere: everything is root.
        let s = DatabaseSchema::from_json(&json!({"name": "T", "version": "1.0.0",
            "tables": {"A": {"columns": {"x": {"type": "integer"}}}}}))
        .unwrap();
        assert!(s.table("A").unwrap().is_root);
    }
}
