//! The durable log: reopen, torn-write recovery at every byte offset, corruption, compaction.

use ovsdb::{Database, DatabaseSchema};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

fn schema() -> Arc<DatabaseSchema> {
    DatabaseSchema::from_json(&json!({"name": "D", "version": "1.0.0", "tables": {
        "A": {"isRoot": true, "columns": {
            "name": {"type": "string"},
            "n": {"type": "integer"},
            "bs": {"type": {"key": {"type": "uuid", "refTable": "B"}, "min": 0, "max": "unlimited"}},
            "m": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}},
        "B": {"columns": {"x": {"type": "real"}}}
    }}))
    .unwrap()
}

fn dump(db: &Database) -> Value {
    let mut o = serde_json::Map::new();
    for t in db.tables() {
        // `_version` is not stored in the file: a reopened row gets a fresh one.
        let rows: Vec<Value> = t
            .rows()
            .map(|r| {
                let mut v = r.to_json(None);
                v.as_object_mut().unwrap().remove("_version");
                v
            })
            .collect();
        o.insert(t.schema().name.clone(), Value::Array(rows));
    }
    Value::Object(o)
}

fn ok(db: &mut Database, ops: Value) {
    let (r, _) = db.transact_now(&ops);
    assert!(
        r.as_array()
            .unwrap()
            .iter()
            .all(|x| x.get("error").is_none()),
        "{r}"
    );
}

fn populate(db: &mut Database, i: i64) {
    ok(
        db,
        json!([
            {"op": "insert", "table": "A", "row": {"name": format!("a{i}"), "n": i, "bs": ["named-uuid", "b"],
                "m": ["map", [["k", format!("v{i}")]]]}},
            {"op": "insert", "table": "B", "uuid-name": "b", "row": {"x": i as f64 / 2.0}},
            {"op": "mutate", "table": "A", "where": [["n", "<", i]], "mutations": [["n", "+=", 100]]},
            {"op": "comment", "comment": format!("step {i}")}
        ]),
    );
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

#[test]
fn reopen_restores_everything() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, schema()).unwrap();
    for i in 0..5 {
        populate(&mut db, i);
    }
    ok(
        &mut db,
        json!([{"op": "delete", "table": "A", "where": [["n", "==", 104]]}]),
    );
    let before = dump(&db);
    drop(db);
    let db = Database::open(&p).unwrap();
    assert_eq!(dump(&db), before);
    assert!(db.recovery_note().is_none());
    assert!(
        Database::create(&p, schema()).is_err(),
        "create must not clobber"
    );
}

#[test]
fn torn_last_record_is_dropped_at_every_offset() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, schema()).unwrap();
    populate(&mut db, 1);
    populate(&mut db, 2);
    let before_last = dump(&db);
    let start = file_len(&p);
    populate(&mut db, 3);
    let after_last = dump(&db);
    let end = file_len(&p);
    drop(db);
    let full = std::fs::read(&p).unwrap();
    for cut in start..=end {
        let q = dir.path().join(format!("cut{cut}"));
        std::fs::write(&q, &full[..cut as usize]).unwrap();
        let mut db = Database::open(&q).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        if cut == end {
            assert_eq!(dump(&db), after_last);
            assert!(db.recovery_note().is_none());
        } else {
            assert_eq!(dump(&db), before_last, "cut at {cut}");
            assert_eq!(db.recovery_note().is_some(), cut > start, "cut at {cut}");
            assert_eq!(file_len(&q), start, "the torn tail is truncated away");
            // The log stays usable after recovery.
            populate(&mut db, 9);
            let now = dump(&db);
            drop(db);
            assert_eq!(dump(&Database::open(&q).unwrap()), now);
        }
        std::fs::remove_file(&q).unwrap();
    }
}

#[test]
fn corrupt_last_record_dropped_corrupt_middle_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, schema()).unwrap();
    populate(&mut db, 1);
    let mid_start = file_len(&p);
    populate(&mut db, 2);
    let before_last = dump(&db);
    let last_start = file_len(&p);
    populate(&mut db, 3);
    drop(db);
    let full = std::fs::read(&p).unwrap();

    // A flipped byte inside the last record's JSON: detected by the checksum, dropped.
    let mut bad = full.clone();
    let i = (last_start as usize + full.len()) / 2;
    bad[i] ^= 0x20;
    let q = dir.path().join("last");
    std::fs::write(&q, &bad).unwrap();
    let db = Database::open(&q).unwrap();
    assert_eq!(dump(&db), before_last);
    assert!(db.recovery_note().unwrap().contains("dropped"));

    // The same damage in a middle record: refuse to open rather than lose later commits.
    let mut bad = full.clone();
    let i = (mid_start + last_start) as usize / 2;
    bad[i] ^= 0x20;
    let q = dir.path().join("mid");
    std::fs::write(&q, &bad).unwrap();
    let e = Database::open(&q).unwrap_err();
    assert!(e.to_string().contains("corrupt"), "{e}");

    // Garbage appended after a good log is dropped.
    let mut bad = full.clone();
    bad.extend_from_slice(b"123 deadbeef {\"txn\": {}}\n");
    let q = dir.path().join("junk");
    std::fs::write(&q, &bad).unwrap();
    let db = Database::open(&q).unwrap();
    assert!(db.recovery_note().is_some());
}

#[test]
fn compaction_bounds_the_log_and_keeps_contents() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, schema()).unwrap();
    db.set_compaction(2, 0);
    ok(
        &mut db,
        json!([{"op": "insert", "table": "A", "row": {"name": "counter", "n": 0}}]),
    );
    let mut max_size = 0;
    for _ in 0..500 {
        ok(
            &mut db,
            json!([{"op": "mutate", "table": "A", "where": [["name", "==", "counter"]], "mutations": [["n", "+=", 1]]}]),
        );
        max_size = max_size.max(db.log_size());
    }
    assert!(max_size < 4096, "log grew to {max_size} bytes");
    let before = dump(&db);
    drop(db);
    let db = Database::open(&p).unwrap();
    assert_eq!(dump(&db), before);
    assert_eq!(
        db.table("A")
            .unwrap()
            .rows()
            .next()
            .unwrap()
            .get("n")
            .unwrap()
            .as_integer(),
        Some(500)
    );
    assert!(!dir.path().join("db.tmp").exists());
}
