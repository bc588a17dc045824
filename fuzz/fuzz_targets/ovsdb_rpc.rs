//! Fuzzes the OVSDB server's input path: arbitrary bytes, fed in arbitrary chunks, through the
//! streaming JSON-RPC reader; every `transact` request runs against a small database (with
//! strong/weak references, garbage collection, an index, constraints), every `monitor*`
//! request is parsed and rendered, and commits are rendered as monitor updates. Nothing may
//! panic, and the database must stay internally consistent (no dangling strong reference).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ovsdb::monitor::{Monitor, Version};
use ovsdb::{Database, DatabaseSchema};
use serde_json::json;

fn schema() -> std::sync::Arc<DatabaseSchema> {
    let s = json!({"name": "F", "version": "1.0.0", "tables": {
        "R": {"isRoot": true, "maxRows": 8, "indexes": [["name"]], "columns": {
            "name": {"type": "string"},
            "n": {"type": {"key": {"type": "integer", "minInteger": -5, "maxInteger": 1000}}},
            "x": {"type": "real"},
            "b": {"type": "boolean"},
            "e": {"type": {"key": {"type": "string", "enum": ["set", ["a", "b"]]}, "min": 0, "max": 1}},
            "kids": {"type": {"key": {"type": "uuid", "refTable": "K"}, "min": 0, "max": "unlimited"}},
            "w": {"type": {"key": {"type": "uuid", "refTable": "R", "refType": "weak"}, "min": 0, "max": 4}},
            "m": {"type": {"key": "string", "value": {"type": "uuid", "refTable": "K"}, "min": 0, "max": "unlimited"}},
            "f": {"type": "string", "mutable": false}}},
        "K": {"columns": {
            "v": {"type": {"key": "integer", "min": 0, "max": "unlimited"}},
            "next": {"type": {"key": {"type": "uuid", "refTable": "K"}, "min": 0, "max": 1}}}}
    }});
    DatabaseSchema::from_json(&s).expect("fuzz schema")
}

fuzz_target!(|data: &[u8]| {
    let mut db = Database::new(schema());
    let mut monitors: Vec<Monitor> = Vec::new();
    let mut js = ovsdb::jsonrpc::JsonStream::new(1 << 16);
    let split = usize::from(data.first().copied().unwrap_or(1)).max(1);
    'outer: for chunk in data.chunks(split) {
        js.feed(chunk);
        loop {
            match js.next_value() {
                Ok(Some(msg)) => {
                    let params = msg.get("params").cloned().unwrap_or_default();
                    match msg.get("method").and_then(|m| m.as_str()) {
                        Some("transact") => {
                            let ops = json!(params
                                .as_array()
                                .map(|a| a.iter().skip(1).cloned().collect::<Vec<_>>())
                                .unwrap_or_default());
                            let (_, commit) = db.transact_now(&ops);
                            if let Some(c) = commit {
                                for m in &monitors {
                                    let _ = m.updates(&c);
                                }
                            }
                        }
                        Some(m @ ("monitor" | "monitor_cond")) => {
                            let v = if m == "monitor" {
                                Version::V1
                            } else {
                                Version::V2
                            };
                            if let Ok(mon) = Monitor::from_json(
                                db.schema(),
                                v,
                                params.get(2).unwrap_or(&json!(null)),
                            ) {
                                let _ = mon.initial(&db);
                                if monitors.len() < 4 {
                                    monitors.push(mon);
                                }
                            }
                        }
                        _ => {}
                    }
                }
                Ok(None) => break,
                Err(_) => break 'outer,
            }
        }
    }
    // Invariant: every strong reference points at an existing row.
    for t in db.tables() {
        for r in t.rows() {
            for (i, c) in t.schema().columns.iter().enumerate() {
                for (base, key) in [(Some(&c.ty.key), true), (c.ty.value.as_ref(), false)] {
                    let Some(b) = base else { continue };
                    let (Some(rt), ovsdb::RefType::Strong) = (&b.ref_table, b.ref_type) else {
                        continue;
                    };
                    let target = db.table(rt).expect("ref table");
                    for u in r.at(i).expect("column").uuids_of(key) {
                        assert!(target.get(u).is_some(), "dangling strong ref");
                    }
                }
            }
        }
    }
});
