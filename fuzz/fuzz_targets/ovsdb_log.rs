//! Fuzzes OVSDB log replay: the database file the daemon opens at startup, which may be torn
//! by a crash, corrupted on disk, or written by someone hostile.
//!
//! Input, by its first byte:
//! * `J`: the rest is JSON records, one per line; the harness frames each line as a record of
//!   OVSDB's standard file format (length and SHA-1), so hostile but well-framed records reach
//!   replay (random bytes almost never carry a valid digest);
//! * `L`: the same, framed in ferrovs's former private format (length and CRC-32), which is
//!   converted at open;
//! * anything else: the rest is the file, byte for byte (framing, digest checks, torn-tail
//!   recovery).
//!
//! The bytes are written to a file (in `/dev/shm` when there is one) and opened with
//! [`Database::open`]. Nothing may panic. A database that opens must answer a select on every
//! table with exactly the rows it holds; it must take (or cleanly refuse) a transaction that
//! deletes and inserts rows; and reopening the file, before and after a compaction, must give
//! back the same contents with nothing left to recover.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ovsdb::Database;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Tables exercised per input, to bound the work on schemas with very many tables.
const MAX_TABLES_EXERCISED: usize = 16;

fn path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let shm = PathBuf::from("/dev/shm");
        let dir = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("ferrovs-fuzz-ovsdb-log-{}.db", std::process::id()))
    })
}

/// CRC-32 (IEEE 802.3, reflected), as the former log format's record header carries it.
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

/// Frames every non-empty line of `lines` as one record of the standard format.
fn frame(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() + 64);
    for body in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        out.extend(ovsdb::record::frame(body));
    }
    out
}

/// Frames every non-empty line of `lines` as one record of the former private format.
fn frame_legacy(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() + 64);
    for body in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        out.extend_from_slice(format!("{} {:08x} ", body.len(), crc32(body)).as_bytes());
        out.extend_from_slice(body);
        out.push(b'\n');
    }
    out
}

/// Every table answers a select with the rows it holds; returns the tables' names.
fn check_selects(db: &mut Database) -> Vec<String> {
    let names: Vec<String> = db
        .schema()
        .tables
        .keys()
        .take(MAX_TABLES_EXERCISED)
        .cloned()
        .collect();
    for name in &names {
        let (r, commit) = db.transact_now(&json!([{"op": "select", "table": name, "where": []}]));
        assert!(commit.is_none(), "a select changed the database");
        let rows = r[0]["rows"].as_array().expect("select answers rows");
        assert_eq!(rows.len(), db.table(name).expect("schema table").len());
    }
    names
}

/// Removes the input file when an input is done, however it ends.
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(path());
    }
}

/// Reopens the file: same contents, nothing to recover.
fn reopen_same(want: &Value) -> Database {
    let db = Database::open(path()).expect("a log this process wrote reopens");
    assert_eq!(db.recovery_note(), None);
    assert_eq!(&db.snapshot_json(), want);
    db
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = match mode {
        b'J' => frame(rest),
        b'L' => frame_legacy(rest),
        _ => rest.to_vec(),
    };
    let path = path();
    let _cleanup = Cleanup;
    std::fs::write(path, &bytes).expect("writing the fuzz input file");
    let Ok(mut db) = Database::open(path) else {
        return;
    };
    let names = check_selects(&mut db);
    let snap = db.snapshot_json();
    drop(db);
    let mut db = reopen_same(&snap);

    if let Some(first) = names.first() {
        let root = db
            .schema()
            .tables
            .values()
            .find(|t| t.is_root)
            .map(|t| t.name.clone())
            .unwrap_or_else(|| first.clone());
        let _ = db.transact_now(&json!([{"op": "delete", "table": first, "where": []}]));
        let _ = db.transact_now(&json!([{"op": "insert", "table": root, "row": {}}]));
        check_selects(&mut db);
    }
    let snap = db.snapshot_json();
    drop(db);
    let mut db = reopen_same(&snap);
    db.compact_now();
    drop(db);
    reopen_same(&snap);
});
