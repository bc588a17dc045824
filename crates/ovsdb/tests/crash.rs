//! Kill -9 a real writer process at random moments, during a stream of transactions and during
//! compactions, and check after each kill that the file opens and holds every transaction the
//! writer acknowledged (and at most the one transaction it was in the middle of).
//!
//! The writer is this test binary itself, re-run with `WRITER_DB` set so that [`writer`]
//! runs instead of returning at once: it appends transactions to the database file and
//! prints `ack N` after each one is committed (that is, fsynced), and `compact N` just before
//! each compaction it starts. Transaction N inserts the row `n = N` (with padding, so
//! compactions take a while), sets the counter row to N, and when N is a multiple of 5
//! deletes the row `n = N - 3`.

use ovsdb::{Database, DatabaseSchema};
use serde_json::json;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const KILLS: usize = 20;
const PAD: usize = 2048;

fn schema() -> Arc<DatabaseSchema> {
    DatabaseSchema::from_json(&json!({"name": "C", "version": "1.0.0", "tables": {
        "R": {"isRoot": true, "columns": {
            "n": {"type": "integer"},
            "pad": {"type": "string"},
            "counter": {"type": "boolean"}}}
    }}))
    .unwrap()
}

/// The rows `n` and the counter after transactions `1..=last` (with `deleted` the ones
/// transaction N removes).
fn expected(last: i64) -> (BTreeSet<i64>, i64) {
    let mut rows = BTreeSet::new();
    for n in 1..=last {
        rows.insert(n);
        if n % 5 == 0 {
            rows.remove(&(n - 3));
        }
    }
    (rows, last)
}

/// The rows `n` and the counter value in the file.
fn contents(db: &Database) -> (BTreeSet<i64>, i64) {
    let mut rows = BTreeSet::new();
    let mut counter = 0;
    for r in db.table("R").unwrap().rows() {
        let n = r.get("n").unwrap().as_integer().unwrap();
        if r.get("counter").unwrap().first().and_then(|a| a.as_bool()) == Some(true) {
            counter = n;
        } else {
            rows.insert(n);
        }
    }
    (rows, counter)
}

/// The writer, when run as the child process; otherwise nothing.
#[test]
fn writer() {
    let Some(path) = std::env::var_os("WRITER_DB") else {
        return;
    };
    let path = Path::new(&path);
    let mut db = Database::open_or_create(path, schema()).unwrap();
    db.set_compaction(2, 64 << 10);
    let (_, mut n) = contents(&db);
    if n == 0 {
        let (r, _) = db.transact_now(&json!([
            {"op": "insert", "table": "R", "row": {"n": 0, "counter": true}}
        ]));
        assert!(r[0].get("error").is_none(), "{r}");
    }
    let out = std::io::stdout();
    let pad = "p".repeat(PAD);
    loop {
        n += 1;
        let mut ops = vec![
            json!({"op": "insert", "table": "R", "row": {"n": n, "pad": pad}}),
            json!({"op": "update", "table": "R", "where": [["counter", "==", true]], "row": {"n": n}}),
        ];
        if n % 5 == 0 {
            ops.push(json!({"op": "delete", "table": "R",
                "where": [["n", "==", n - 3], ["counter", "==", false]]}));
        }
        let (r, _) = db.transact_now(&serde_json::Value::Array(ops));
        assert!(
            r.as_array()
                .unwrap()
                .iter()
                .all(|x| x.get("error").is_none()),
            "{r}"
        );
        let mut o = out.lock();
        writeln!(o, "ack {n}").unwrap();
        o.flush().unwrap();
        if n % 7 == 0 {
            writeln!(o, "compact {n}").unwrap();
            o.flush().unwrap();
            drop(o);
            db.compact_now();
        }
    }
}

/// A small xorshift generator; the seed is printed so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn sigkill_during_writes_and_compaction_loses_nothing_acknowledged() {
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conf.db");
    let exe = std::env::current_exe().unwrap();
    let mut acked_total = 0i64;
    let mut compactions_hit = 0;
    for kill in 0..KILLS {
        let mut child = Command::new(&exe)
            .args(["--exact", "writer", "--nocapture", "--test-threads=1"])
            .env("WRITER_DB", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Even rounds: kill right after a compaction starts; odd rounds: after some acks.
        let during_compaction = kill % 2 == 0;
        let acks_first = 1 + rng.below(60) as usize;
        let mut acks = 0;
        let mut last_ack = acked_total;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("round {kill}: the writer went quiet (seed {seed})"));
            if let Some(n) = line.strip_prefix("ack ") {
                last_ack = n.parse().unwrap();
                acks += 1;
                if !during_compaction && acks >= acks_first {
                    break;
                }
            } else if line.starts_with("compact ") && during_compaction && acks >= acks_first {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.below(if during_compaction {
            3000
        } else {
            1500
        })));
        child.kill().unwrap();
        child.wait().unwrap();
        // Lines printed before the kill are acknowledgements too.
        for line in rx.iter() {
            if let Some(n) = line.strip_prefix("ack ") {
                last_ack = n.parse().unwrap();
            }
        }
        reader.join().unwrap();
        assert!(
            last_ack > acked_total,
            "round {kill}: no progress (seed {seed})"
        );

        let db = Database::open(&path)
            .unwrap_or_else(|e| panic!("round {kill}: the file does not open: {e} (seed {seed})"));
        let got = contents(&db);
        let want = expected(last_ack);
        // At most one more transaction, the one under way at the kill, may be there.
        let want_next = expected(last_ack + 1);
        assert!(
            got == want || got == want_next,
            "round {kill}: acknowledged up to {last_ack}, file has counter {} and {} rows \
             (seed {seed})",
            got.1,
            got.0.len()
        );
        if got == want_next {
            eprintln!(
                "round {kill}: the unacknowledged transaction {} made it",
                last_ack + 1
            );
        }
        if let Some(note) = db.recovery_note() {
            eprintln!("round {kill}: {note}");
        }
        if dir.path().join("conf.db.tmp").exists() {
            compactions_hit += 1;
        }
        acked_total = got.1;
    }
    eprintln!("{KILLS} kills, {acked_total} transactions, {compactions_hit} kills left a half-written compaction behind");
    assert!(acked_total > KILLS as i64);
}
