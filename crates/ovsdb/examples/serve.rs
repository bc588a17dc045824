//! Serve an OVSDB database from a schema file.
//!
//! ```text
//! cargo run -p ovsdb --example serve -- SCHEMA DBFILE REMOTE...
//! cargo run -p ovsdb --example serve -- schema/vswitch.ovsschema /tmp/conf.db punix:/tmp/db.sock
//! ```
//!
//! `DBFILE` is created from the schema if missing (use `-` for an in-memory database).
//! `REMOTE` is `punix:PATH` or `ptcp:PORT[:IP]`. Prints one line per commit to stderr and
//! runs until killed.

use ovsdb::{Database, DatabaseSchema, Server};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: serve SCHEMA DBFILE|- REMOTE...");
        return ExitCode::from(2);
    }
    let text = match std::fs::read_to_string(&args[0]) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("serve: {}: {e}", args[0]);
            return ExitCode::FAILURE;
        }
    };
    let schema = match DatabaseSchema::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("serve: {}: {e}", args[0]);
            return ExitCode::FAILURE;
        }
    };
    let db = if args[1] == "-" {
        Ok(Database::new(schema))
    } else {
        Database::open_or_create(Path::new(&args[1]), schema)
    };
    let db = match db {
        Ok(d) => d,
        Err(e) => {
            eprintln!("serve: {}: {e}", args[1]);
            return ExitCode::FAILURE;
        }
    };
    let server = Server::new(db);
    let mut listeners = Vec::new();
    for remote in &args[2..] {
        match server.listen(remote) {
            Ok(l) => {
                eprintln!("serve: listening on {}", l.local);
                listeners.push(l);
            }
            Err(e) => {
                eprintln!("serve: {remote}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let commits = server.subscribe();
    for c in commits.iter() {
        let n: usize = c.tables.values().map(Vec::len).sum();
        let tables: Vec<&str> = c.tables.keys().map(String::as_str).collect();
        eprintln!(
            "serve: commit {}: {n} row(s) changed in {}",
            c.seq,
            tables.join(", ")
        );
    }
    ExitCode::SUCCESS
}
