//! Fuzzes OVSDB schema parsing: the daemon reads a schema file at startup, the log's first
//! record carries one, and `ovsdb-client` hands them to us over the wire.
//!
//! Input: the schema's JSON text. Besides "never panics", a schema that parses must be what
//! the rest of the crate relies on: its own JSON (returned by `get_schema` and written to the
//! log) parses again to the same tables; every column is found by name at its position; every
//! column type survives `to_json`/`from_json`; index columns and reference targets exist. An
//! empty database on it must answer a select on every table, take (or cleanly refuse) a row
//! of defaults, and report exactly the rows it holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ovsdb::{Col, ColumnType, Database, DatabaseSchema};
use serde_json::json;

/// Bounds the work per input: a schema of thousands of tables is valid but teaches nothing
/// the first few do not.
const MAX_TABLES_EXERCISED: usize = 16;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(schema) = DatabaseSchema::parse(text) else {
        return;
    };
    let again = DatabaseSchema::from_json(schema.to_json()).expect("a schema's own JSON parses");
    assert_eq!(again.name, schema.name);
    assert_eq!(again.version, schema.version);
    assert!(again.tables.keys().eq(schema.tables.keys()));

    for (name, t) in &schema.tables {
        assert_eq!(&t.name, name);
        let t2 = &again.tables[name];
        assert_eq!(t2.indexes, t.indexes);
        assert_eq!(t2.is_root, t.is_root);
        assert!(t.columns.windows(2).all(|w| w[0].name < w[1].name));
        for (i, c) in t.columns.iter().enumerate() {
            assert_eq!(t.lookup(&c.name), Some(Col::User(i)));
            assert_eq!(t2.columns[i].ty, c.ty);
            assert_eq!(
                ColumnType::from_json(&c.ty.to_json()).ok().as_ref(),
                Some(&c.ty)
            );
            assert!(c.ty.min <= c.ty.max);
            for b in [Some(&c.ty.key), c.ty.value.as_ref()].into_iter().flatten() {
                if let Some(rt) = &b.ref_table {
                    assert!(schema.tables.contains_key(rt), "refTable {rt}");
                }
            }
        }
        for ix in &t.indexes {
            assert!(!ix.is_empty());
            assert!(ix.iter().all(|&i| i < t.columns.len()));
        }
    }
    if schema.tables.values().all(|t| !t.is_root) {
        panic!("with no isRoot table every table must count as root");
    }

    let mut db = Database::new(schema.clone());
    for name in schema.tables.keys().take(MAX_TABLES_EXERCISED) {
        let _ = db.transact_now(&json!([{"op": "insert", "table": name, "row": {}}]));
        let (r, commit) = db.transact_now(&json!([{"op": "select", "table": name, "where": []}]));
        assert!(commit.is_none(), "a select changed the database");
        let rows = r[0]["rows"].as_array().expect("select answers rows");
        let table = db.table(name).expect("every schema table exists");
        assert_eq!(rows.len(), table.len());
    }
});
