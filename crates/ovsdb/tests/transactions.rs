//! Transaction semantics on a small schema: operations, conditions, mutations, constraints,
//! references, garbage collection, indexes, atomicity and result shapes.

use ovsdb::{Database, DatabaseSchema};
use serde_json::{json, Value};

fn schema() -> serde_json::Value {
    json!({"name": "T", "version": "1.0.0", "tables": {
        "Root": {"isRoot": true, "maxRows": 3, "indexes": [["name"]], "columns": {
            "name": {"type": "string"},
            "kids": {"type": {"key": {"type": "uuid", "refTable": "Kid"}, "min": 0, "max": "unlimited"}},
            "weak": {"type": {"key": {"type": "uuid", "refTable": "Other", "refType": "weak"}, "min": 0, "max": "unlimited"}},
            "wmap": {"type": {"key": "string", "value": {"type": "uuid", "refTable": "Other", "refType": "weak"}, "min": 0, "max": "unlimited"}},
            "n": {"type": "integer"},
            "r": {"type": "real"},
            "color": {"type": {"key": {"type": "string", "enum": ["set", ["red", "green"]]}, "min": 0, "max": 1}},
            "tags": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}},
            "nums": {"type": {"key": {"type": "integer", "minInteger": 0, "maxInteger": 100}, "min": 0, "max": 3}},
            "fixed": {"type": "string", "mutable": false}
        }},
        "Kid": {"columns": {
            "name": {"type": "string"},
            "sub": {"type": {"key": {"type": "uuid", "refTable": "Kid"}, "min": 0, "max": 1}}
        }},
        "Other": {"isRoot": true, "columns": {"v": {"type": "integer"}}},
        "Pin": {"isRoot": true, "columns": {
            "to": {"type": {"key": {"type": "uuid", "refTable": "Other", "refType": "weak"}, "min": 1, "max": 1}}
        }}
    }})
}

fn db() -> Database {
    Database::new(DatabaseSchema::from_json(&schema()).unwrap())
}

fn tx(db: &mut Database, ops: Value) -> Vec<Value> {
    let (r, _) = db.transact_now(&ops);
    r.as_array().unwrap().clone()
}

fn ok(db: &mut Database, ops: Value) -> Vec<Value> {
    let r = tx(db, ops.clone());
    assert!(r.iter().all(|x| x.get("error").is_none()), "{ops} -> {r:?}");
    r
}

fn err(db: &mut Database, ops: Value) -> (String, String) {
    let r = tx(db, ops.clone());
    let e = r
        .iter()
        .find(|x| x.get("error").is_some())
        .unwrap_or_else(|| panic!("{ops} succeeded: {r:?}"));
    (
        e["error"].as_str().unwrap().to_string(),
        e["details"].as_str().unwrap_or("").to_string(),
    )
}

fn count(db: &Database, table: &str) -> usize {
    db.table(table).unwrap().len()
}

fn select(db: &mut Database, table: &str, cond: Value) -> Vec<Value> {
    let r = ok(db, json!([{"op": "select", "table": table, "where": cond}]));
    r[0]["rows"].as_array().unwrap().clone()
}

#[test]
fn insert_select_named_uuid_and_refs() {
    let mut d = db();
    let r = ok(
        &mut d,
        json!([
            {"op": "insert", "table": "Root", "row": {"name": "a", "kids": ["set", [["named-uuid", "k1"], ["named-uuid", "k2"]]]}},
            {"op": "insert", "table": "Kid", "uuid-name": "k1", "row": {"name": "one", "sub": ["named-uuid", "k2"]}},
            {"op": "insert", "table": "Kid", "uuid-name": "k2", "row": {"name": "two"}},
            {"op": "select", "table": "Kid", "where": [["name", "==", "one"]], "columns": ["name", "sub"]}
        ]),
    );
    let k2 = r[2]["uuid"].clone();
    assert_eq!(r[3]["rows"][0], json!({"name": "one", "sub": k2}));
    assert_eq!(count(&d, "Kid"), 2);
    let rows = select(&mut d, "Root", json!([["kids", "includes", k2]]));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["n"], json!(0));
    assert!(rows[0]["_uuid"][1].is_string() && rows[0]["_version"][1].is_string());

    // Duplicate uuid-name, and a named-uuid that is never inserted.
    let (e, _) = err(
        &mut d,
        json!([
        {"op": "insert", "table": "Other", "uuid-name": "x"},
        {"op": "insert", "table": "Other", "uuid-name": "x"}]),
    );
    assert_eq!(e, "duplicate uuid-name");
    let (e, det) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "z", "kids": ["named-uuid", "nope"]}}]),
    );
    assert_eq!(e, "referential integrity violation");
    assert!(det.contains("nope"), "{det}");
    // A strong reference to a random missing row.
    let (e, det) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "z",
        "kids": ["uuid", "01234567-89ab-cdef-0123-456789abcdef"]}}]),
    );
    assert_eq!(e, "referential integrity violation");
    assert!(
        det.contains("01234567-89ab-cdef-0123-456789abcdef") && det.contains("kids"),
        "{det}"
    );
}

#[test]
fn explicit_uuid_and_duplicates() {
    let mut d = db();
    let u = "11111111-2222-4333-8444-555555555555";
    let r = ok(
        &mut d,
        json!([{"op": "insert", "table": "Other", "uuid": ["uuid", u]}]),
    );
    assert_eq!(r[0]["uuid"], json!(["uuid", u]));
    let (e, _) = err(
        &mut d,
        json!([{"op": "insert", "table": "Other", "uuid": ["uuid", u]}]),
    );
    assert_eq!(e, "duplicate uuid");
}

#[test]
fn delete_strongly_referenced_fails_and_gc_collects() {
    let mut d = db();
    let r = ok(
        &mut d,
        json!([
            {"op": "insert", "table": "Root", "uuid-name": "r", "row": {"name": "a", "kids": ["named-uuid", "k1"]}},
            {"op": "insert", "table": "Kid", "uuid-name": "k1", "row": {"name": "one", "sub": ["named-uuid", "k2"]}},
            {"op": "insert", "table": "Kid", "uuid-name": "k2", "row": {"name": "two"}},
            // An unreferenced Kid: collected at commit.
            {"op": "insert", "table": "Kid", "row": {"name": "orphan"}}
        ]),
    );
    assert_eq!(count(&d, "Kid"), 2, "the orphan was garbage-collected");
    let k1 = r[1]["uuid"].clone();
    // Deleting k1 while Root still points to it.
    let (e, det) = err(
        &mut d,
        json!([{"op": "delete", "table": "Kid", "where": [["_uuid", "==", k1]]}]),
    );
    assert_eq!(e, "referential integrity violation");
    assert!(det.contains("Root") && det.contains("kids"), "{det}");
    assert_eq!(count(&d, "Kid"), 2, "rolled back");
    // Dropping the reference collects k1 and, cascading, k2.
    ok(
        &mut d,
        json!([{"op": "mutate", "table": "Root", "where": [], "mutations": [["kids", "delete", k1]]}]),
    );
    assert_eq!(count(&d, "Kid"), 0);
    // Deleting the root row collects its kids too.
    ok(
        &mut d,
        json!([
        {"op": "insert", "table": "Kid", "uuid-name": "k", "row": {"name": "x"}},
        {"op": "mutate", "table": "Root", "where": [], "mutations": [["kids", "insert", ["set", [["named-uuid", "k"]]]]]}]),
    );
    assert_eq!(count(&d, "Kid"), 1);
    ok(
        &mut d,
        json!([{"op": "delete", "table": "Root", "where": []}]),
    );
    assert_eq!(count(&d, "Kid"), 0);
}

#[test]
fn weak_references_are_dropped() {
    let mut d = db();
    let r = ok(
        &mut d,
        json!([
            {"op": "insert", "table": "Other", "uuid-name": "o1", "row": {"v": 1}},
            {"op": "insert", "table": "Other", "uuid-name": "o2", "row": {"v": 2}},
            {"op": "insert", "table": "Root", "row": {"name": "a",
                "weak": ["set", [["named-uuid", "o1"], ["named-uuid", "o2"]]],
                "wmap": ["map", [["x", ["named-uuid", "o1"]], ["y", ["named-uuid", "o2"]]]]}}
        ]),
    );
    let o2 = r[1]["uuid"].clone();
    ok(
        &mut d,
        json!([{"op": "delete", "table": "Other", "where": [["v", "==", 1]]}]),
    );
    let row = &select(&mut d, "Root", json!([]))[0];
    assert_eq!(row["weak"], o2);
    assert_eq!(row["wmap"], json!(["map", [["y", o2]]]));
    // A weak reference inserted already dangling is dropped at commit.
    ok(
        &mut d,
        json!([{"op": "update", "table": "Root", "where": [],
        "row": {"weak": ["uuid", "01234567-89ab-cdef-0123-456789abcdef"]}}]),
    );
    assert_eq!(
        select(&mut d, "Root", json!([]))[0]["weak"],
        json!(["set", []])
    );
    // ...unless that leaves a column below its minimum.
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Pin", "row": {"to": o2}}]),
    );
    let (e, det) = err(
        &mut d,
        json!([{"op": "delete", "table": "Other", "where": []}]),
    );
    assert_eq!(e, "constraint violation");
    assert!(det.contains("Pin"), "{det}");
}

#[test]
fn conditions() {
    let mut d = db();
    ok(
        &mut d,
        json!([
            {"op": "insert", "table": "Root", "row": {"name": "a", "n": 1, "r": 1.5, "color": "red", "tags": ["map", [["k", "v"], ["x", "y"]]], "nums": ["set", [1, 2]]}},
            {"op": "insert", "table": "Root", "row": {"name": "b", "n": 5, "r": 2.5, "tags": ["map", [["k", "w"]]], "nums": 3}},
            {"op": "insert", "table": "Root", "row": {"name": "c", "n": 9, "r": -1.0}}
        ]),
    );
    let names = |rows: Vec<Value>| -> Vec<String> {
        let mut v: Vec<String> = rows
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let q = |d: &mut Database, c: Value| names(select(d, "Root", c));
    assert_eq!(q(&mut d, json!([["n", "<", 5]])), ["a"]);
    assert_eq!(q(&mut d, json!([["n", "<=", 5]])), ["a", "b"]);
    assert_eq!(q(&mut d, json!([["n", ">", 1]])), ["b", "c"]);
    assert_eq!(q(&mut d, json!([["n", ">=", 9]])), ["c"]);
    assert_eq!(q(&mut d, json!([["r", "<", 0]])), ["c"]);
    assert_eq!(q(&mut d, json!([["n", "!=", 5]])), ["a", "c"]);
    assert_eq!(q(&mut d, json!([["color", "==", "red"]])), ["a"]);
    assert_eq!(q(&mut d, json!([["color", "==", ["set", []]]])), ["b", "c"]);
    assert_eq!(
        q(&mut d, json!([["tags", "includes", ["map", [["k", "v"]]]]])),
        ["a"]
    );
    assert_eq!(
        q(&mut d, json!([["tags", "excludes", ["map", [["k", "v"]]]]])),
        ["b", "c"]
    );
    assert_eq!(
        q(&mut d, json!([["nums", "includes", ["set", [1, 2]]]])),
        ["a"]
    );
    assert_eq!(q(&mut d, json!([["nums", "excludes", 3]])), ["a", "c"]);
    assert_eq!(q(&mut d, json!([["n", ">", 0], ["n", "<", 9]])), ["a", "b"]);
    // Bad conditions name what is wrong.
    let (e, det) = err(
        &mut d,
        json!([{"op": "select", "table": "Root", "where": [["nosuch", "==", 1]]}]),
    );
    assert_eq!(e, "unknown column");
    assert!(det.contains("nosuch"));
    let (e, _) = err(
        &mut d,
        json!([{"op": "select", "table": "Root", "where": [["name", "<", "x"]]}]),
    );
    assert_eq!(e, "syntax error");
    let (e, _) = err(
        &mut d,
        json!([{"op": "select", "table": "Root", "where": [["n", "==", "x"]]}]),
    );
    assert_eq!(e, "syntax error");
    let (_, det) = err(
        &mut d,
        json!([{"op": "select", "table": "Nope", "where": []}]),
    );
    assert!(det.contains("Nope"));
}

#[test]
fn mutations() {
    let mut d = db();
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a", "n": 10, "r": 1.0, "nums": ["set", [1, 2]], "tags": ["map", [["a", "1"], ["b", "2"]]]}}]),
    );
    let get = |d: &mut Database, col: &str| select(d, "Root", json!([]))[0][col].clone();
    let m = |d: &mut Database, col: &str, op: &str, v: Value| {
        ok(
            d,
            json!([{"op": "mutate", "table": "Root", "where": [], "mutations": [[col, op, v]]}]),
        )
    };
    m(&mut d, "n", "+=", json!(5));
    assert_eq!(get(&mut d, "n"), json!(15));
    m(&mut d, "n", "-=", json!(3));
    m(&mut d, "n", "*=", json!(4));
    assert_eq!(get(&mut d, "n"), json!(48));
    m(&mut d, "n", "/=", json!(5));
    assert_eq!(get(&mut d, "n"), json!(9));
    m(&mut d, "n", "%=", json!(4));
    assert_eq!(get(&mut d, "n"), json!(1));
    m(&mut d, "r", "*=", json!(2.5));
    assert_eq!(get(&mut d, "r"), json!(2.5));
    m(&mut d, "nums", "+=", json!(10));
    assert_eq!(get(&mut d, "nums"), json!(["set", [11, 12]]));
    m(&mut d, "nums", "insert", json!(["set", [11, 50]]));
    assert_eq!(get(&mut d, "nums"), json!(["set", [11, 12, 50]]));
    m(&mut d, "nums", "delete", json!(["set", [12, 99]]));
    assert_eq!(get(&mut d, "nums"), json!(["set", [11, 50]]));
    m(
        &mut d,
        "tags",
        "insert",
        json!(["map", [["a", "changed"], ["c", "3"]]]),
    );
    assert_eq!(
        get(&mut d, "tags"),
        json!(["map", [["a", "1"], ["b", "2"], ["c", "3"]]])
    );
    m(
        &mut d,
        "tags",
        "delete",
        json!(["map", [["a", "wrong"], ["b", "2"]]]),
    );
    assert_eq!(
        get(&mut d, "tags"),
        json!(["map", [["a", "1"], ["c", "3"]]])
    );
    m(&mut d, "tags", "delete", json!(["set", ["a"]]));
    assert_eq!(get(&mut d, "tags"), json!(["map", [["c", "3"]]]));

    let e = |d: &mut Database, col: &str, op: &str, v: Value| {
        err(
            d,
            json!([{"op": "mutate", "table": "Root", "where": [], "mutations": [[col, op, v]]}]),
        )
    };
    assert_eq!(e(&mut d, "n", "/=", json!(0)).0, "domain error");
    assert_eq!(e(&mut d, "n", "%=", json!(0)).0, "domain error");
    assert_eq!(e(&mut d, "n", "+=", json!(i64::MAX)).0, "range error");
    assert_eq!(e(&mut d, "r", "%=", json!(2.0)).0, "constraint violation");
    assert_eq!(e(&mut d, "name", "+=", json!(1)).0, "constraint violation");
    // 11*10 = 110 > maxInteger 100.
    let (t, det) = e(&mut d, "nums", "*=", json!(10));
    assert_eq!(t, "constraint violation");
    assert!(det.contains("nums") && det.contains("110"), "{det}");
    // Too many elements (max 3).
    assert_eq!(
        e(&mut d, "nums", "insert", json!(["set", [1, 2]])).0,
        "constraint violation"
    );
    // Arithmetic that creates duplicates.
    assert_eq!(e(&mut d, "nums", "*=", json!(0)).0, "constraint violation");
    assert_eq!(
        e(&mut d, "fixed", "insert", json!("x")).0,
        "constraint violation"
    );
    assert_eq!(
        e(&mut d, "_uuid", "insert", json!("x")).0,
        "constraint violation"
    );
    // Nothing above changed the row.
    assert_eq!(get(&mut d, "n"), json!(1));
}

#[test]
fn constraints_and_update() {
    let mut d = db();
    let (e, det) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a", "color": "blue"}}]),
    );
    assert_eq!(e, "constraint violation");
    assert!(det.contains("color") && det.contains("blue"), "{det}");
    let (e, _) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a", "nums": ["set", [1, 2, 3, 4]]}}]),
    );
    assert_eq!(e, "syntax error");
    let (e, _) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": 7}}]),
    );
    assert_eq!(e, "syntax error");
    let (e, det) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"bogus": 7}}]),
    );
    assert_eq!(e, "unknown column");
    assert!(det.contains("bogus"));
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a", "fixed": "f"}}]),
    );
    let r = ok(
        &mut d,
        json!([{"op": "update", "table": "Root", "where": [["name", "==", "a"]], "row": {"n": 3, "color": "green"}}]),
    );
    assert_eq!(r[0], json!({"count": 1}));
    let (e, det) = err(
        &mut d,
        json!([{"op": "update", "table": "Root", "where": [], "row": {"fixed": "g"}}]),
    );
    assert_eq!(e, "constraint violation");
    assert!(det.contains("fixed"));
    let (e, _) = err(
        &mut d,
        json!([{"op": "update", "table": "Root", "where": [], "row": {"_uuid": ["uuid", "01234567-89ab-cdef-0123-456789abcdef"]}}]),
    );
    assert_eq!(e, "constraint violation");
}

#[test]
fn indexes_and_max_rows() {
    let mut d = db();
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a"}}]),
    );
    let (e, det) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a"}}]),
    );
    assert_eq!(e, "constraint violation");
    assert!(
        det.contains("\"a\"") && det.contains("name") && det.contains("Root"),
        "{det}"
    );
    // Swapping names within one transaction is fine.
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "b"}}]),
    );
    ok(
        &mut d,
        json!([
        {"op": "update", "table": "Root", "where": [["name", "==", "a"]], "row": {"name": "tmp"}},
        {"op": "update", "table": "Root", "where": [["name", "==", "b"]], "row": {"name": "a"}},
        {"op": "update", "table": "Root", "where": [["name", "==", "tmp"]], "row": {"name": "b"}}]),
    );
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "c"}}]),
    );
    let (e, det) = err(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "d"}}]),
    );
    assert_eq!(e, "constraint violation");
    assert!(det.contains("maxRows"), "{det}");
}

#[test]
fn atomicity_and_result_shape() {
    let mut d = db();
    let r = tx(
        &mut d,
        json!([
        {"op": "insert", "table": "Other", "row": {"v": 1}},
        {"op": "insert", "table": "Other", "row": {"v": "bad"}},
        {"op": "insert", "table": "Other", "row": {"v": 3}}]),
    );
    assert_eq!(r.len(), 3);
    assert!(r[0]["uuid"].is_array());
    assert_eq!(r[1]["error"], "syntax error");
    assert!(r[2].is_null());
    assert_eq!(count(&d, "Other"), 0);

    // A commit-time failure adds one element.
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a"}}]),
    );
    let r = tx(
        &mut d,
        json!([{"op": "insert", "table": "Root", "row": {"name": "a"}}, {"op": "comment", "comment": "hi"}]),
    );
    assert_eq!(r.len(), 3);
    assert_eq!(r[2]["error"], "constraint violation");

    let r = tx(
        &mut d,
        json!([{"op": "insert", "table": "Other"}, {"op": "abort"}, {"op": "insert", "table": "Other"}]),
    );
    assert_eq!(r[1]["error"], "aborted");
    assert!(r[2].is_null());
    assert_eq!(count(&d, "Other"), 0);

    let r = tx(&mut d, json!([{"op": "assert", "lock": "l"}]));
    assert_eq!(r[0]["error"], "not owner");
    let r = tx(&mut d, json!([{"op": "frobnicate"}]));
    assert_eq!(r[0]["error"], "syntax error");
    let r = tx(&mut d, json!([42]));
    assert_eq!(r[0]["error"], "syntax error");
    ok(
        &mut d,
        json!([{"op": "commit", "durable": true}, {"op": "comment", "comment": "x"}]),
    );
    let (_, c) = d.transact_now(
        &json!([{"op": "insert", "table": "Other"}, {"op": "comment", "comment": "why"}]),
    );
    let c = c.unwrap();
    assert_eq!(c.comments, vec!["why".to_string()]);
    assert_eq!(c.tables["Other"].len(), 1);
    // A no-op update commits nothing.
    let (_, c) =
        d.transact_now(&json!([{"op": "update", "table": "Other", "where": [], "row": {"v": 0}}]));
    assert!(c.is_none());
}

#[test]
fn wait_operation() {
    let mut d = db();
    ok(
        &mut d,
        json!([{"op": "insert", "table": "Other", "row": {"v": 1}}]),
    );
    ok(
        &mut d,
        json!([{"op": "wait", "table": "Other", "where": [], "columns": ["v"], "until": "==", "rows": [{"v": 1}], "timeout": 0}]),
    );
    ok(
        &mut d,
        json!([{"op": "wait", "table": "Other", "where": [], "columns": ["v"], "until": "!=", "rows": [{"v": 2}], "timeout": 0}]),
    );
    let (e, _) = err(
        &mut d,
        json!([{"op": "wait", "table": "Other", "where": [], "columns": ["v"], "until": "==", "rows": [], "timeout": 0}]),
    );
    assert_eq!(e, "timed out");
    // With a timeout, the database reports it as blocked until the deadline.
    let now = std::time::Instant::now();
    let ctx = ovsdb::TxnContext {
        owns_lock: &|_| false,
        started: now,
        now,
    };
    let ops = [
        json!({"op": "wait", "table": "Other", "where": [], "columns": ["v"], "until": "==", "rows": [], "timeout": 1000}),
    ];
    assert!(matches!(
        d.transact(&ops, &ctx),
        ovsdb::TxnOutcome::Blocked { .. }
    ));
    let later = now + std::time::Duration::from_millis(1001);
    let ctx = ovsdb::TxnContext {
        owns_lock: &|_| false,
        started: now,
        now: later,
    };
    match d.transact(&ops, &ctx) {
        ovsdb::TxnOutcome::Done { result, .. } => assert_eq!(result[0]["error"], "timed out"),
        other => panic!("{other:?}"),
    }
    let ctx = ovsdb::TxnContext {
        owns_lock: &|n| n == "me",
        started: now,
        now,
    };
    match d.transact(&[json!({"op": "assert", "lock": "me"})], &ctx) {
        ovsdb::TxnOutcome::Done { result, .. } => assert_eq!(result, json!([{}])),
        other => panic!("{other:?}"),
    }
}
