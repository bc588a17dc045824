//! The database file against Debian's `ovsdb-tool`: it reads what we write (after
//! transactions and after compaction), and we open what it writes (`create` plus `transact`,
//! and its `compact`). Each test fails when `ovsdb-tool` is not installed.

mod common;

use common::{require, vswitch_schema_path};
use ovsdb::{Database, DatabaseSchema};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// Debian's own copy of the schema (package openvswitch-common).
const DEBIAN_SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

fn tool(args: &[&str]) -> String {
    let out = Command::new("ovsdb-tool")
        .args(args)
        .output()
        .expect("running ovsdb-tool");
    assert!(
        out.status.success(),
        "ovsdb-tool {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn ok(db: &mut Database, ops: Value) -> Value {
    let (r, _) = db.transact_now(&ops);
    assert!(
        r.as_array()
            .unwrap()
            .iter()
            .all(|x| x.get("error").is_none()),
        "{r}"
    );
    r
}

/// Sorts what two implementations may order differently (rows, set and map elements) and
/// drops `_version`, which is not stored in the file.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Array(a) if a.len() == 2 && (a[0] == "set" || a[0] == "map") => {
            let mut items: Vec<Value> = a[1].as_array().unwrap().iter().map(normalize).collect();
            items.sort_by_key(|x| x.to_string());
            json!([a[0], items])
        }
        Value::Array(a) => {
            let mut items: Vec<Value> = a.iter().map(normalize).collect();
            if items.iter().all(|x| x.get("_uuid").is_some()) {
                items.sort_by_key(|x| x["_uuid"].to_string());
            }
            Value::Array(items)
        }
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| k.as_str() != "_version")
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// A select of every table, as one transaction.
fn select_all(schema: &DatabaseSchema) -> Vec<Value> {
    schema
        .tables
        .keys()
        .map(|t| json!({"op": "select", "table": t, "where": []}))
        .collect()
}

/// What `ovsdb-tool query` sees in `file`, and what we see, normalised.
fn both_views(file: &Path) -> (Value, Value) {
    let mut db = Database::open(file).unwrap_or_else(|e| panic!("ferrovs cannot open: {e}"));
    let ops = select_all(db.schema());
    let ours = ok(&mut db, Value::Array(ops.clone()));
    let mut txn = vec![json!(db.schema().name)];
    txn.extend(ops);
    let theirs: Value = serde_json::from_str(&tool(&[
        "query",
        file.to_str().unwrap(),
        &Value::Array(txn).to_string(),
    ]))
    .unwrap();
    (normalize(&ours), normalize(&theirs))
}

fn populate(db: &mut Database) {
    ok(
        db,
        json!([
            {"op": "insert", "table": "Open_vSwitch", "uuid-name": "ovs",
             "row": {"bridges": ["named-uuid", "br"], "external_ids": ["map", [["system-id", "s1"]]]}},
            {"op": "insert", "table": "Bridge", "uuid-name": "br",
             "row": {"name": "br0", "ports": ["set", [["named-uuid", "p1"], ["named-uuid", "p2"]]],
                     "external_ids": ["map", [["a", "1"], ["b", "2"]]], "flood_vlans": ["set", [1, 2]]}},
            {"op": "insert", "table": "Port", "uuid-name": "p1",
             "row": {"name": "p1", "interfaces": ["named-uuid", "i1"], "trunks": ["set", [10, 20]]}},
            {"op": "insert", "table": "Interface", "uuid-name": "i1", "row": {"name": "p1", "type": "internal"}},
            {"op": "insert", "table": "Port", "uuid-name": "p2", "row": {"name": "p2", "interfaces": ["named-uuid", "i2"]}},
            {"op": "insert", "table": "Interface", "uuid-name": "i2", "row": {"name": "p2"}},
            {"op": "comment", "comment": "add br0\nwith two ports"}
        ]),
    );
    ok(
        db,
        json!([
            {"op": "mutate", "table": "Bridge", "where": [["name", "==", "br0"]],
             "mutations": [["external_ids", "insert", ["map", [["c", "3"]]]],
                           ["external_ids", "delete", ["set", ["a"]]]]},
            {"op": "update", "table": "Bridge", "where": [], "row": {"flood_vlans": ["set", [3, 4]]}},
            {"op": "update", "table": "Port", "where": [["name", "==", "p1"]],
             "row": {"trunks": ["set", [20, 30]], "tag": 5}}
        ]),
    );
    // Deleting a port: p2 and its interface go (garbage collection), br0's ports shrink.
    ok(
        db,
        json!([{"op": "mutate", "table": "Bridge", "where": [],
                "mutations": [["ports", "delete", ["set", [["uuid",
                    db.table("Port").unwrap().rows().find(|r| r.get("name").unwrap().as_str() == Some("p2")).unwrap().uuid().to_string()]]]]]}]),
    );
}

#[test]
fn ovsdb_tool_reads_what_we_write() {
    require("ovsdb-tool");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("conf.db");
    let schema =
        DatabaseSchema::parse(&std::fs::read_to_string(vswitch_schema_path()).unwrap()).unwrap();
    let mut db = Database::create(&file, schema).unwrap();
    populate(&mut db);
    let f = file.to_str().unwrap();
    assert_eq!(tool(&["db-name", f]).trim(), "Open_vSwitch");
    assert_eq!(tool(&["db-version", f]).trim(), "8.3.1");
    tool(&["db-is-standalone", f]);
    let log = tool(&["-mm", "show-log", f]);
    assert!(log.contains("record 0: \"Open_vSwitch\" schema"), "{log}");
    assert!(log.contains("record 3:"), "{log}");
    assert!(log.contains("add br0\nwith two ports"), "{log}");
    assert!(log.contains("table Bridge insert row \"br0\""), "{log}");
    assert!(log.contains("delete row"), "{log}");
    let (ours, theirs) = both_views(&file);
    assert_eq!(ours, theirs);
    assert_eq!(
        ours[1]["rows"].as_array().unwrap().len(),
        1,
        "one bridge: {ours}"
    );
    assert_eq!(
        ours[1]["rows"][0]["external_ids"],
        json!(["map", [["b", "2"], ["c", "3"]]])
    );

    // After a compaction: schema plus one record.
    db.compact_now();
    drop(db);
    let log = tool(&["show-log", f]);
    assert!(
        log.contains("record 1:") && !log.contains("record 2:"),
        "{log}"
    );
    let (ours2, theirs2) = both_views(&file);
    assert_eq!(ours2, theirs2);
    assert_eq!(ours2, ours);

    // OVS appends to our file; we read its records; OVS compacts it; we read that too.
    tool(&[
        "transact",
        f,
        r#"["Open_vSwitch",{"op":"mutate","table":"Bridge","where":[],"mutations":[["external_ids","insert",["map",[["d","4"]]]]]},{"op":"update","table":"Port","where":[],"row":{"trunks":["set",[]]}}]"#,
    ]);
    let (ours3, theirs3) = both_views(&file);
    assert_eq!(ours3, theirs3);
    assert_eq!(
        ours3[1]["rows"][0]["external_ids"],
        json!(["map", [["b", "2"], ["c", "3"], ["d", "4"]]])
    );
    tool(&["compact", f]);
    let (ours4, theirs4) = both_views(&file);
    assert_eq!(ours4, theirs4);
    assert_eq!(ours4, ours3);
    // And after our transaction on OVS's compacted file, OVS still agrees.
    let mut db = Database::open(&file).unwrap();
    ok(
        &mut db,
        json!([{"op": "update", "table": "Bridge", "where": [], "row": {"fail_mode": "secure"}}]),
    );
    drop(db);
    let (ours5, theirs5) = both_views(&file);
    assert_eq!(ours5, theirs5);
    assert_eq!(ours5[1]["rows"][0]["fail_mode"], json!("secure"));
}

#[test]
fn we_open_what_ovsdb_tool_writes() {
    require("ovsdb-tool");
    assert!(
        Path::new(DEBIAN_SCHEMA).exists(),
        "{DEBIAN_SCHEMA} missing (package openvswitch-common)"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("conf.db");
    let f = file.to_str().unwrap();
    tool(&["create", f, DEBIAN_SCHEMA]);
    let txns = [
        r#"["Open_vSwitch",
            {"op":"insert","table":"Open_vSwitch","uuid-name":"o","row":{"bridges":["named-uuid","b"]}},
            {"op":"insert","table":"Bridge","uuid-name":"b","row":{"name":"br0","ports":["set",[["named-uuid","p"],["named-uuid","q"]]],
              "external_ids":["map",[["x","1"],["y","2"]]],"other_config":["map",[["hwaddr","02:00:00:00:00:01"]]]}},
            {"op":"insert","table":"Port","uuid-name":"p","row":{"name":"p","interfaces":["named-uuid","i"],"trunks":["set",[1,2,3]]}},
            {"op":"insert","table":"Interface","uuid-name":"i","row":{"name":"p","type":"internal","ofport_request":7}},
            {"op":"insert","table":"Port","uuid-name":"q","row":{"name":"q","interfaces":["named-uuid","j"]}},
            {"op":"insert","table":"Interface","uuid-name":"j","row":{"name":"q"}},
            {"op":"comment","comment":"made by ovsdb-tool"}]"#,
        r#"["Open_vSwitch",
            {"op":"mutate","table":"Bridge","where":[],"mutations":[["external_ids","delete",["set",["x"]]],["external_ids","insert",["map",[["z","3"]]]]]},
            {"op":"update","table":"Port","where":[["name","==","p"]],"row":{"trunks":["set",[2,3,4]],"tag":9}},
            {"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["next_cfg","+=",3]]}]"#,
        r#"["Open_vSwitch",
            {"op":"update","table":"Bridge","where":[],"row":{"external_ids":["map",[["y","22"],["z","3"]]]}}]"#,
        r#"["Open_vSwitch",
            {"op":"mutate","table":"Bridge","where":[],"mutations":[["ports","delete",["set",[["uuid","UUID_Q"]]]]]}]"#,
    ];
    for (i, t) in txns.iter().enumerate() {
        let t = if i == 3 {
            let q: Value = serde_json::from_str(&tool(&[
                "query",
                f,
                r#"["Open_vSwitch",{"op":"select","table":"Port","where":[["name","==","q"]],"columns":["_uuid"]}]"#,
            ]))
            .unwrap();
            t.replace("UUID_Q", q[0]["rows"][0]["_uuid"][1].as_str().unwrap())
        } else {
            t.to_string()
        };
        tool(&["transact", f, &t]);
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("\"_is_diff\":true"),
        "OVS wrote differences:\n{text}"
    );
    let (ours, theirs) = both_views(&file);
    assert_eq!(ours, theirs);
    let db = Database::open(&file).unwrap();
    let br = db.table("Bridge").unwrap().rows().next().unwrap().clone();
    assert_eq!(
        br.get("external_ids").unwrap().to_json(),
        json!(["map", [["y", "22"], ["z", "3"]]])
    );
    assert_eq!(br.get("ports").unwrap().len(), 1);
    assert_eq!(db.table("Port").unwrap().len(), 1, "q was collected");
    let p = db.table("Port").unwrap().rows().next().unwrap().clone();
    assert_eq!(
        p.get("trunks").unwrap().to_json(),
        json!(["set", [2, 3, 4]])
    );
    assert_eq!(p.get("tag").unwrap().as_integer(), Some(9));
    let ovs = db
        .table("Open_vSwitch")
        .unwrap()
        .rows()
        .next()
        .unwrap()
        .clone();
    assert_eq!(ovs.get("next_cfg").unwrap().as_integer(), Some(3));
    assert!(db.recovery_note().is_none());
}
