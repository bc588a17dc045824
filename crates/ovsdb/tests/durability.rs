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

fn big_schema() -> Arc<DatabaseSchema> {
    DatabaseSchema::from_json(&json!({"name": "D", "version": "1.0.0", "tables": {
        "A": {"isRoot": true, "columns": {
            "name": {"type": "string"},
            "n": {"type": "integer"},
            "p": {"type": {"key": "string", "min": 0, "max": 3}},
            "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}}
    }}))
    .unwrap()
}

/// The log grows by a few hundred bytes per small change, not by the size of a big value set
/// earlier: records carry changed columns only, and a map column's change as a difference.
#[test]
fn small_change_after_big_value_writes_little() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, big_schema()).unwrap();
    const BIG: usize = 50 << 20;
    ok(
        &mut db,
        json!([{"op": "insert", "table": "A", "row": {"name": "big",
            "external_ids": ["map", [["blob", "x".repeat(BIG)]]]}}]),
    );
    assert!(db.log_size() > BIG as u64);
    let growth = |db: &mut Database, ops: Value| {
        let before = db.log_size();
        ok(db, ops);
        db.log_size() - before
    };
    // An unrelated column of the same row.
    let g = growth(
        &mut db,
        json!([{"op": "mutate", "table": "A", "where": [], "mutations": [["n", "+=", 1]]}]),
    );
    assert!(g < 512, "setting n grew the log by {g} bytes");
    // Another key of the big map itself.
    let g = growth(
        &mut db,
        json!([{"op": "mutate", "table": "A", "where": [],
            "mutations": [["external_ids", "insert", ["map", [["small", "1"]]]]]}]),
    );
    assert!(g < 512, "adding a key grew the log by {g} bytes");
    // A new row elsewhere.
    let g = growth(
        &mut db,
        json!([{"op": "insert", "table": "A", "row": {"name": "other"}}]),
    );
    assert!(g < 512, "inserting a row grew the log by {g} bytes");
    let before = dump(&db);
    drop(db);
    let db = Database::open(&p).unwrap();
    assert_eq!(dump(&db), before);
    let big = db
        .table("A")
        .unwrap()
        .rows()
        .find(|r| r.get("n").unwrap().as_integer() == Some(1));
    let ids = big.unwrap().get("external_ids").unwrap();
    assert_eq!(
        ids.map_get("blob").and_then(|a| a.as_str()).map(str::len),
        Some(BIG)
    );
    assert_eq!(ids.map_get("small").and_then(|a| a.as_str()), Some("1"));
}

/// Map and set changes replay exactly, whether written as differences or (when a bounded
/// set's difference would exceed its maximum) as new values.
#[test]
fn differences_and_bounded_sets_replay_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, big_schema()).unwrap();
    ok(
        &mut db,
        json!([{"op": "insert", "table": "A", "row": {"name": "r", "p": ["set", ["a", "b"]],
            "external_ids": ["map", [["k1", "v1"], ["k2", "v2"], ["k3", "v3"]]]}}]),
    );
    let steps = [
        // Remove a key, change a key, add a key.
        json!({"external_ids": ["map", [["k2", "v2b"], ["k3", "v3"], ["k4", "v4"]]]}),
        // Replace both elements of a 3-bounded set: a 4-element difference.
        json!({"p": ["set", ["c", "d"]]}),
        json!({"p": ["set", ["c", "d", "e"]], "external_ids": ["map", []]}),
        json!({"p": ["set", []], "name": "s"}),
    ];
    for row in steps {
        ok(
            &mut db,
            json!([{"op": "update", "table": "A", "where": [], "row": row}]),
        );
        let want = dump(&db);
        let text = std::fs::read_to_string(&p).unwrap();
        let last = text.lines().last().unwrap().to_string();
        let copy = dir.path().join("copy");
        std::fs::write(&copy, &text).unwrap();
        assert_eq!(dump(&Database::open(&copy).unwrap()), want, "after {last}");
        std::fs::remove_file(&copy).unwrap();
    }
    let text = std::fs::read_to_string(&p).unwrap();
    let records: Vec<Value> = text
        .lines()
        .skip(1)
        .step_by(2)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The bounded-set replacement is written with new values, the map change as a difference.
    let u = records[1]["A"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert_eq!(records[2]["_is_diff"], json!(true));
    assert_eq!(
        records[2]["A"][&u]["external_ids"],
        json!(["map", [["k1", "v1"], ["k2", "v2b"], ["k4", "v4"]]])
    );
    assert!(records[3].get("_is_diff").is_none());
    assert_eq!(records[3]["A"][&u], json!({"p": ["set", ["c", "d"]]}));
}

/// CRC-32 as ferrovs's former log format used it.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn old_record(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = format!("{} {:08x} ", body.len(), crc32(body.as_bytes())).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out.push(b'\n');
    out
}

/// A file in the former private format opens with its contents and is rewritten in the
/// standard format; a torn last record is ignored as before.
#[test]
fn old_format_file_is_converted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let u1 = "00000000-0000-4000-8000-000000000001";
    let u2 = "00000000-0000-4000-8000-000000000002";
    let b1 = "00000000-0000-4000-8000-0000000000b1";
    let mut f = old_record(&json!({"schema": schema().to_json()}));
    f.extend(old_record(&json!({"snapshot": {"A": {
        u1: {"_version": ["uuid", u2], "name": "one", "n": 1, "bs": ["uuid", b1]}},
        "B": {b1: {"_version": ["uuid", u2], "x": 0.5}}}})));
    f.extend(old_record(&json!({"txn": {"A": {
        u1: {"_version": ["uuid", u1], "name": "one", "n": 2, "bs": ["uuid", b1]},
        u2: {"_version": ["uuid", u1], "name": "two", "m": ["map", [["k", "v"]]]}}},
        "comment": "old"})));
    f.extend_from_slice(b"77 0badc0de {\"txn\": ");
    std::fs::write(&p, &f).unwrap();
    let db = Database::open(&p).unwrap();
    assert!(db.recovery_note().unwrap().contains("ignored"));
    let a = db.table("A").unwrap();
    assert_eq!(a.len(), 2);
    let one = a.get(ovsdb::Uuid::parse(u1).unwrap()).unwrap();
    assert_eq!(one.get("n").unwrap().as_integer(), Some(2));
    assert_eq!(db.table("B").unwrap().len(), 1);
    let before = dump(&db);
    drop(db);
    let text = std::fs::read(&p).unwrap();
    assert!(text.starts_with(b"OVSDB JSON "), "the file was rewritten");
    let db = Database::open(&p).unwrap();
    assert!(db.recovery_note().is_none());
    assert_eq!(dump(&db), before);

    // Corruption in the middle of an old-format file is refused, not converted.
    let mut bad = f.clone();
    let i = old_record(&json!({"schema": schema().to_json()})).len() + 30;
    bad[i] ^= 0x20;
    let q = dir.path().join("bad");
    std::fs::write(&q, &bad).unwrap();
    let e = Database::open(&q).unwrap_err().to_string();
    assert!(e.contains("corrupt"), "{e}");
    assert_eq!(
        std::fs::read(&q).unwrap(),
        bad,
        "a refused file is left alone"
    );
}

/// A compaction that fails before its rename leaves the old file in use: later transactions
/// are durable in it.
#[test]
fn failed_compaction_keeps_the_old_log() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, schema()).unwrap();
    populate(&mut db, 1);
    // A directory where the new file would go makes creating it fail.
    std::fs::create_dir(dir.path().join("db.tmp")).unwrap();
    let size = db.log_size();
    db.compact_now();
    assert_eq!(db.log_size(), size, "the old log is still the log");
    populate(&mut db, 2);
    let before = dump(&db);
    drop(db);
    assert_eq!(dump(&Database::open(&p).unwrap()), before);
}

/// After a compaction the log is the new file's handle, not a reopened path: transactions
/// land in the file that was renamed into place even if the name changes afterwards.
#[test]
fn compaction_keeps_the_new_files_handle() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let mut db = Database::create(&p, schema()).unwrap();
    populate(&mut db, 1);
    db.compact_now();
    let moved = dir.path().join("moved");
    std::fs::rename(&p, &moved).unwrap();
    populate(&mut db, 2);
    let before = dump(&db);
    drop(db);
    assert!(!p.exists());
    let text = std::fs::read_to_string(&moved).unwrap();
    assert_eq!(
        text.lines().count(),
        6,
        "schema, snapshot, one transaction:\n{text}"
    );
    assert_eq!(dump(&Database::open(&moved).unwrap()), before);
}
