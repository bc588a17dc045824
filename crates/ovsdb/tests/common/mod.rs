//! Helpers shared by the integration tests.
#![allow(dead_code)]

use ovsdb::jsonrpc::JsonStream;
use ovsdb::{Database, DatabaseSchema, Listener, Server};
use serde_json::Value;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub fn vswitch_schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/vswitch.ovsschema")
}

/// An in-memory server for `schema_path`, listening on a socket in a fresh temp dir.
pub fn start(schema: &Value) -> (Server, Listener, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("db.sock");
    let server = Server::new(Database::new(DatabaseSchema::from_json(schema).unwrap()));
    let l = server.serve_unix(&sock).unwrap();
    (server, l, dir, sock)
}

pub fn vswitch_schema() -> Value {
    serde_json::from_str(&std::fs::read_to_string(vswitch_schema_path()).unwrap()).unwrap()
}

/// Fails the test unless this OVS tool is installed (scripts/test.sh installs them): a
/// missing peer is a failure, never a silent pass.
pub fn require(tool: &str) {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "{tool} is not installed (apt-get install openvswitch-common openvswitch-switch)"
    );
}

/// A raw JSON-RPC client.
pub struct Client {
    pub s: UnixStream,
    js: JsonStream,
    next: u64,
}

impl Client {
    pub fn connect(path: &Path) -> Client {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        Client {
            s,
            js: JsonStream::new(1 << 26),
            next: 1,
        }
    }
    pub fn send(&mut self, v: &Value) {
        self.s.write_all(v.to_string().as_bytes()).unwrap();
    }
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        self.send(&serde_json::json!({"id": id, "method": method, "params": params}));
        id
    }
    /// Next message, or None after `timeout` (or on EOF).
    pub fn recv(&mut self, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(v)) = self.js.next_value() {
                return Some(v);
            }
            if Instant::now() > deadline {
                return None;
            }
            let mut buf = [0u8; 65536];
            match self.s.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.js.feed(&buf[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return None,
            }
        }
    }
    /// Wait for the reply to `id`, collecting notifications on the way.
    pub fn reply(&mut self, id: u64, notes: &mut Vec<Value>) -> Value {
        loop {
            let m = self.recv(Duration::from_secs(10)).expect("no reply");
            if m["id"] == serde_json::json!(id) && m.get("method").is_none() {
                return m;
            }
            notes.push(m);
        }
    }
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.reply(id, &mut Vec::new())
    }
    /// Is the connection closed by the server (EOF) within `timeout`?
    pub fn closed_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let mut buf = [0u8; 65536];
            match self.s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return true,
            }
        }
        false
    }
}
