//! The JSON-RPC server driven by a raw client: methods, monitors (v1/v2), locks, wait and
//! cancel, misbehaving clients, and the in-process API.

mod common;

use common::{start, Client};
use ovsdb::server::Config;
use ovsdb::{Database, DatabaseSchema, Server};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn schema() -> Value {
    json!({"name": "P", "version": "2.0.0", "tables": {
        "T": {"columns": {
            "name": {"type": "string"},
            "n": {"type": "integer"},
            "s": {"type": {"key": "string", "min": 0, "max": "unlimited"}},
            "m": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}}}})
}

fn insert(name: &str, n: i64) -> Value {
    json!({"op": "insert", "table": "T", "row": {"name": name, "n": n}})
}

#[test]
fn basic_methods() {
    let (_server, _l, _d, sock) = start(&schema());
    let mut c = Client::connect(&sock);
    assert_eq!(c.call("list_dbs", json!([]))["result"], json!(["P"]));
    assert_eq!(c.call("get_schema", json!(["P"]))["result"], schema());
    assert_eq!(
        c.call("get_schema", json!(["nope"]))["error"]["error"],
        "unknown database"
    );
    assert_eq!(c.call("echo", json!(["x", 1]))["result"], json!(["x", 1]));
    assert_eq!(c.call("frob", json!([]))["error"], "unknown method");
    let r = c.call("transact", json!(["P", insert("a", 1)]));
    assert!(r["result"][0]["uuid"].is_array(), "{r}");
    let r = c.call("transact", json!(["P", {"op": "select", "table": "T", "where": [["name", "==", "a"]], "columns": ["n"]}]));
    assert_eq!(r["result"], json!([{"rows": [{"n": 1}]}]));
    let r = c.call(
        "transact",
        json!(["P", {"op": "insert", "table": "T", "row": {"n": "x"}}]),
    );
    assert_eq!(r["result"][0]["error"], "syntax error");
    assert_eq!(
        c.call("transact", json!(["Q"]))["error"]["error"],
        "unknown database"
    );
}

#[test]
fn monitors_v1_and_v2() {
    let (server, _l, _d, sock) = start(&schema());
    server.transact(&json!([insert("a", 1), insert("b", 2)]));
    let mut c = Client::connect(&sock);
    let r = c.call(
        "monitor",
        json!(["P", "m1", {"T": {"columns": ["name", "n"]}}]),
    );
    assert_eq!(r["result"]["T"].as_object().unwrap().len(), 2);
    let r = c.call("monitor_cond", json!(["P", ["m", 2], {"T": [{"columns": ["name", "n", "s", "m"], "where": [["n", ">", 1]]}]}]));
    let init = r["result"]["T"].as_object().unwrap();
    assert_eq!(init.len(), 1);
    let (_, row) = init.iter().next().unwrap();
    assert_eq!(
        row["initial"],
        json!({"name": "b", "n": 2}),
        "defaults are omitted in update2"
    );
    assert_eq!(
        c.call("monitor", json!(["P", "m1", {"T": {}}]))["error"]["error"],
        "duplicate monitor ID"
    );

    // A change through another client.
    let mut c2 = Client::connect(&sock);
    c2.call("transact", json!(["P", {"op": "update", "table": "T", "where": [["name", "==", "a"]], "row": {"n": 5, "s": ["set", ["x", "y"]], "m": ["map", [["k", "v"]]]}}]));
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(c.recv(Duration::from_secs(5)).expect("update"));
    }
    let u1 = got.iter().find(|m| m["method"] == "update").unwrap();
    assert_eq!(u1["params"][0], "m1");
    let (_, ch) = u1["params"][1]["T"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(ch["old"], json!({"n": 1}));
    assert_eq!(ch["new"], json!({"name": "a", "n": 5}));
    let u2 = got.iter().find(|m| m["method"] == "update2").unwrap();
    assert_eq!(u2["params"][0], json!(["m", 2]));
    let (_, ch) = u2["params"][1]["T"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert!(ch["insert"].is_object(), "row a now matches n > 1: {ch}");

    c2.call("transact", json!(["P", {"op": "mutate", "table": "T", "where": [["name", "==", "a"]],
        "mutations": [["s", "delete", "x"], ["s", "insert", "z"], ["m", "insert", ["map", [["k2", "v2"]]]]]}]));
    // m1 does not watch s or m: only the update2.
    let u2 = c.recv(Duration::from_secs(5)).expect("update2");
    assert_eq!(u2["method"], "update2");
    let (_, ch) = u2["params"][1]["T"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(
        ch["modify"],
        json!({"s": ["set", ["x", "z"]], "m": ["map", [["k2", "v2"]]]})
    );

    // Delete; then the row leaving the condition.
    c2.call("transact", json!(["P", {"op": "update", "table": "T", "where": [["name", "==", "b"]], "row": {"n": 0}}]));
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(c.recv(Duration::from_secs(5)).expect("update"));
    }
    let u2 = got.iter().find(|m| m["method"] == "update2").unwrap();
    let (_, ch) = u2["params"][1]["T"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(ch, &json!({"delete": null}));

    // Cancel: no more updates for m1.
    assert_eq!(c.call("monitor_cancel", json!(["m1"]))["result"], json!({}));
    assert_eq!(
        c.call("monitor_cancel", json!(["m1"]))["error"]["error"],
        "unknown monitor"
    );
    c2.call("transact", json!(["P", insert("c", 7)]));
    let m = c.recv(Duration::from_secs(5)).unwrap();
    assert_eq!(m["method"], "update2");
    assert!(c.recv(Duration::from_millis(300)).is_none());

    // monitor_cond_change narrows the view and reports the difference.
    let r = c.call(
        "monitor_cond_change",
        json!([["m", 2], "m3", {"T": [{"where": [["name", "==", "c"]]}]}]),
    );
    assert_eq!(r["result"], json!({}));
}

#[test]
fn locks() {
    let (_server, _l, _d, sock) = start(&schema());
    let mut a = Client::connect(&sock);
    let mut b = Client::connect(&sock);
    assert_eq!(
        a.call("lock", json!(["L"]))["result"],
        json!({"locked": true})
    );
    assert_eq!(
        b.call("lock", json!(["L"]))["result"],
        json!({"locked": false})
    );
    assert_eq!(
        a.call("lock", json!(["L"]))["error"]["error"],
        "duplicate lock"
    );
    let r = a.call("transact", json!(["P", {"op": "assert", "lock": "L"}]));
    assert_eq!(r["result"], json!([{}]));
    let r = b.call(
        "transact",
        json!(["P", {"op": "assert", "lock": "L"}, insert("x", 1)]),
    );
    assert_eq!(r["result"][0]["error"], "not owner");
    // Steal.
    assert_eq!(
        b.call("steal", json!(["L"]))["result"],
        json!({"locked": true})
    );
    let n = a.recv(Duration::from_secs(5)).unwrap();
    assert_eq!(n["method"], "stolen");
    assert_eq!(n["params"], json!(["L"]));
    // Unlock passes it back to the waiting a.
    assert_eq!(b.call("unlock", json!(["L"]))["result"], json!({}));
    let n = a.recv(Duration::from_secs(5)).unwrap();
    assert_eq!(n["method"], "locked");
    // Disconnecting the owner passes it on too.
    assert_eq!(
        b.call("lock", json!(["L"]))["result"],
        json!({"locked": false})
    );
    drop(a);
    let n = b.recv(Duration::from_secs(5)).unwrap();
    assert_eq!(n["method"], "locked");
}

#[test]
fn wait_blocks_until_commit_timeout_or_cancel() {
    let (server, _l, _d, sock) = start(&schema());
    let mut c = Client::connect(&sock);
    let wait = |name: &str, timeout: u64| {
        json!(["P", {"op": "wait", "table": "T", "where": [["name", "==", name]], "columns": ["name"],
            "until": "!=", "rows": [], "timeout": timeout}, insert(&format!("after-{name}"), 0)])
    };
    // Satisfied by a later commit.
    let id = c.request("transact", wait("w1", 10_000));
    assert!(c.recv(Duration::from_millis(200)).is_none(), "must block");
    // An unrelated commit leaves it blocked.
    server.transact(&json!([insert("unrelated", 1)]));
    assert!(
        c.recv(Duration::from_millis(200)).is_none(),
        "must still block"
    );
    server.transact(&json!([insert("w1", 1)]));
    let r = c.reply(id, &mut Vec::new());
    assert_eq!(r["result"][0], json!({}));
    assert!(r["result"][1]["uuid"].is_array());
    // Times out.
    let t0 = Instant::now();
    let r = c.call("transact", wait("w2", 300));
    assert_eq!(r["result"][0]["error"], "timed out");
    assert!(t0.elapsed() >= Duration::from_millis(250));
    // Canceled.
    let id = c.request("transact", wait("w3", 60_000));
    assert!(c.recv(Duration::from_millis(100)).is_none());
    c.send(&json!({"id": null, "method": "cancel", "params": [id]}));
    let r = c.reply(id, &mut Vec::new());
    assert_eq!(r["error"], "canceled");
    // In-process transact waits the same way.
    let s2 = server.clone();
    let h = std::thread::spawn(move || s2.transact(&wait("w4", 10_000)));
    std::thread::sleep(Duration::from_millis(100));
    server.transact(&json!([insert("w4", 1)]));
    let r = h.join().unwrap();
    assert_eq!(r[0], json!({}));
}

#[test]
fn misbehaving_clients_are_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("db.sock");
    let cfg = Config {
        max_message: 64 * 1024,
        max_queue: 16,
        write_timeout: Duration::from_secs(2),
        ..Config::default()
    };
    let server = Server::with_config(
        Database::new(DatabaseSchema::from_json(&schema()).unwrap()),
        cfg,
    );
    let _l = server.serve_unix(&sock).unwrap();

    // Garbage.
    let mut c = Client::connect(&sock);
    c.s.write_all(b"this is not json").unwrap();
    let m = c.recv(Duration::from_secs(5)).unwrap();
    assert_eq!(m["method"], "error");
    assert!(c.closed_within(Duration::from_secs(5)));

    // Valid JSON, invalid JSON-RPC: answered, connection kept.
    let mut c = Client::connect(&sock);
    c.send(&json!({"id": 1, "method": "transact", "params": "x"}));
    assert_eq!(
        c.recv(Duration::from_secs(5)).unwrap()["error"]["error"],
        "syntax error"
    );
    c.send(&json!([1, 2]));
    assert!(c.recv(Duration::from_secs(5)).unwrap()["error"].is_string());
    assert_eq!(c.call("list_dbs", json!([]))["result"], json!(["P"]));

    // An oversized message.
    let mut c = Client::connect(&sock);
    let big = format!(
        "{{\"id\": 1, \"method\": \"echo\", \"params\": [\"{}\"]}}",
        "x".repeat(100_000)
    );
    let _ = c.s.write_all(big.as_bytes());
    assert!(c.closed_within(Duration::from_secs(5)));

    // A client that monitors but never reads: disconnected once its queue is full; the server
    // and other clients carry on.
    let mut slow = Client::connect(&sock);
    slow.call("monitor", json!(["P", null, {"T": {}}]));
    let filler = "y".repeat(30_000);
    let t0 = Instant::now();
    for i in 0..200 {
        let r = server.transact(
            &json!([{"op": "insert", "table": "T", "row": {"name": format!("{i}{filler}")}}]),
        );
        assert!(r[0]["uuid"].is_array());
    }
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "a stuck client must not stall commits"
    );
    assert!(
        slow.closed_within(Duration::from_secs(10)) || {
            // Drain: the connection must end (EOF) after the buffered data.
            let mut n = 0;
            while slow.recv(Duration::from_millis(500)).is_some() {
                n += 1;
            }
            n < 200
        }
    );
    let mut c = Client::connect(&sock);
    assert_eq!(c.call("list_dbs", json!([]))["result"], json!(["P"]));
    assert_eq!(server.read(|db| db.table("T").unwrap().len()), 200);
}

#[test]
fn subscribe_and_read() {
    let server = Server::new(Database::new(DatabaseSchema::from_json(&schema()).unwrap()));
    let rx = server.subscribe();
    let r = server.transact(&json!(["P", insert("a", 1)]));
    assert!(r[0]["uuid"].is_array());
    let c = rx.recv_timeout(Duration::from_secs(1)).unwrap();
    let ch = &c.tables["T"][0];
    assert!(ch.old.is_none());
    assert_eq!(
        ch.new.as_ref().unwrap().get("name").unwrap().as_str(),
        Some("a")
    );
    server.transact(&json!([{"op": "delete", "table": "T", "where": []}]));
    let c = rx.recv_timeout(Duration::from_secs(1)).unwrap();
    assert!(c.tables["T"][0].new.is_none());
    assert_eq!(server.read(|db| db.table("T").unwrap().len()), 0);
    assert_eq!(
        server.transact(&json!(["Nope"]))[0]["error"],
        "unknown database"
    );
}

#[test]
fn tcp_listener() {
    let server = Server::new(Database::new(DatabaseSchema::from_json(&schema()).unwrap()));
    let l = server.listen("ptcp:0:127.0.0.1").unwrap();
    let mut s = std::net::TcpStream::connect(&l.local).unwrap();
    s.write_all(br#"{"id":7,"method":"list_dbs","params":[]}"#)
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut js = ovsdb::jsonrpc::JsonStream::new(1 << 20);
    let mut buf = [0u8; 4096];
    let v = loop {
        if let Some(v) = js.next_value().unwrap() {
            break v;
        }
        let n = std::io::Read::read(&mut s, &mut buf).unwrap();
        assert!(n > 0);
        js.feed(&buf[..n]);
    };
    assert_eq!(v, json!({"id": 7, "result": ["P"], "error": null}));
}

/// Limits: bytes queued per session, sessions per listener, monitors, locks and blocked
/// transactions per session, the inactivity probe and the message deadline.
#[test]
fn resource_limits_hold_and_the_server_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("db.sock");
    let cfg = Config {
        max_backlog: 100_000,
        max_sessions: 3,
        max_monitors: 2,
        max_locks: 2,
        max_pending: 1,
        message_deadline: Duration::from_secs(1),
        probe_interval: Some(Duration::from_millis(400)),
        ..Config::default()
    };
    let server = Server::with_config(
        Database::new(DatabaseSchema::from_json(&schema()).unwrap()),
        cfg,
    );
    let _l = server.serve_unix(&sock).unwrap();

    // Bytes, not messages: a monitoring client that never reads is cut off by its byte
    // backlog (the message queue, 10,000 deep, never fills here).
    let mut slow = Client::connect(&sock);
    slow.call("monitor", json!(["P", null, {"T": {}}]));
    let filler = "z".repeat(30_000);
    for i in 0..100 {
        server.transact(
            &json!([{"op": "insert", "table": "T", "row": {"name": format!("b{i}{filler}")}}]),
        );
    }
    assert!(
        slow.closed_within(Duration::from_secs(10)),
        "backlog limit not enforced"
    );

    // Per-session resources.
    let mut c = Client::connect(&sock);
    assert!(c.call("monitor", json!(["P", 1, {"T": {}}]))["error"].is_null());
    assert!(c.call("monitor", json!(["P", 2, {"T": {}}]))["error"].is_null());
    let r = c.call("monitor", json!(["P", 3, {"T": {}}]));
    assert_eq!(r["error"]["error"], "resources exhausted", "{r}");
    assert_eq!(c.call("lock", json!(["l1"]))["result"]["locked"], true);
    assert_eq!(c.call("lock", json!(["l2"]))["result"]["locked"], true);
    assert_eq!(
        c.call("lock", json!(["l3"]))["error"]["error"],
        "resources exhausted"
    );
    let wait = |v: i64| {
        json!(["P", {"op": "wait", "table": "T", "where": [["name", "==", format!("never{v}")]],
                     "columns": ["name"], "until": "!=", "rows": [], "timeout": 60_000}])
    };
    let _blocked = c.request("transact", wait(1));
    let id = c.request("transact", wait(2));
    let r = c.reply(id, &mut Vec::new());
    assert_eq!(r["error"]["error"], "resources exhausted", "{r}");
    assert_eq!(c.call("list_dbs", json!([]))["result"], json!(["P"]));

    // Sessions per listener: with 3 slots taken by idle clients, a fourth connection closes
    // the one idle longest and is served.
    drop(c);
    let mut a = Client::connect(&sock);
    std::thread::sleep(Duration::from_millis(50));
    let mut b = Client::connect(&sock);
    let mut d = Client::connect(&sock);
    std::thread::sleep(Duration::from_millis(50));
    b.call("echo", json!([]));
    d.call("echo", json!([]));
    let mut e = Client::connect(&sock);
    assert_eq!(e.call("list_dbs", json!([]))["result"], json!(["P"]));
    assert!(
        a.closed_within(Duration::from_secs(5)),
        "the longest-idle session stays"
    );
    assert_eq!(b.call("list_dbs", json!([]))["result"], json!(["P"]));
    drop((b, d));

    // A message dribbled byte by byte is cut off at the deadline.
    let mut slow = Client::connect(&sock);
    let t0 = Instant::now();
    let msg = br#"{"id": 1, "method": "list_dbs", "params": []}"#;
    let mut closed = false;
    for byte in msg.iter().take(msg.len() - 1) {
        if slow.s.write_all(&[*byte]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(closed || slow.closed_within(Duration::from_secs(3)));
    assert!(t0.elapsed() < Duration::from_secs(5));
    let mut e = Client::connect(&sock);
    assert_eq!(e.call("list_dbs", json!([]))["result"], json!(["P"]));
}

/// TCP sessions are probed: a silent client gets an echo and is closed when it does not
/// answer; one that answers stays.
#[test]
fn tcp_sessions_are_probed() {
    let cfg = Config {
        probe_interval: Some(Duration::from_millis(300)),
        ..Config::default()
    };
    let server = Server::with_config(
        Database::new(DatabaseSchema::from_json(&schema()).unwrap()),
        cfg,
    );
    let l = server.listen("ptcp:0:127.0.0.1").unwrap();
    let mut silent = std::net::TcpStream::connect(&l.local).unwrap();
    let mut answering = std::net::TcpStream::connect(&l.local).unwrap();
    answering
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let t0 = Instant::now();
    let mut echoes = 0;
    let mut js = ovsdb::jsonrpc::JsonStream::new(1 << 20);
    while t0.elapsed() < Duration::from_secs(2) {
        let mut buf = [0u8; 4096];
        if let Ok(n) = answering.read(&mut buf) {
            assert!(n > 0, "the answering client was closed");
            js.feed(&buf[..n]);
            while let Ok(Some(m)) = js.next_value() {
                assert_eq!(m["method"], "echo");
                echoes += 1;
                let r = json!({"id": m["id"], "result": [], "error": null});
                answering.write_all(r.to_string().as_bytes()).unwrap();
            }
        }
    }
    assert!(echoes >= 2, "probes seen: {echoes}");
    silent
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match silent.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("the silent client is still connected: {e}"),
        }
    }
    assert!(String::from_utf8_lossy(&got).contains("\"echo\""));
}
