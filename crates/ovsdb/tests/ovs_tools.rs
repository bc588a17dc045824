//! The server driven by Debian's Open vSwitch tools (`ovs-vsctl`, `ovsdb-client`) and the
//! Python `ovs` IDL, with the project's `schema/vswitch.ovsschema`. Each test fails when its
//! tool is not installed (scripts/test.sh installs them).

mod common;

use common::{require, start, vswitch_schema, vswitch_schema_path};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn vsctl(sock: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("ovs-vsctl")
        .arg(format!("--db=unix:{}", sock.display()))
        .args(["--no-wait", "--timeout=20"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}

fn ok(sock: &Path, args: &[&str]) -> String {
    vsctl(sock, args).unwrap_or_else(|e| panic!("ovs-vsctl {args:?} failed: {e}"))
}

fn client(args: &[&str]) -> String {
    let out = Command::new("timeout")
        .arg("20")
        .arg("ovsdb-client")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ovsdb-client {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn schema_file_is_accepted_by_ovsdb_tool() {
    require("ovsdb-tool");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("conf.db");
    let p = vswitch_schema_path();
    let st = Command::new("ovsdb-tool")
        .arg("create")
        .arg(&db)
        .arg(&p)
        .status()
        .unwrap();
    assert!(st.success());
    let v = Command::new("ovsdb-tool")
        .arg("schema-version")
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), "8.3.1");
    // Our parser accepts it too, with every table the issue lists.
    let s = ovsdb::DatabaseSchema::from_json(&vswitch_schema()).unwrap();
    for t in [
        "Open_vSwitch",
        "Bridge",
        "Port",
        "Interface",
        "Controller",
        "Manager",
        "Mirror",
        "QoS",
        "Queue",
        "Flow_Table",
        "SSL",
        "NetFlow",
        "sFlow",
        "IPFIX",
        "Flow_Sample_Collector_Set",
        "AutoAttach",
        "Datapath",
        "CT_Zone",
        "CT_Timeout_Policy",
    ] {
        assert!(s.table(t).is_some(), "{t}");
    }
}

#[test]
fn ovs_vsctl_workflow() {
    require("ovs-vsctl");
    let (server, _l, _d, sock) = start(&vswitch_schema());
    let commits = server.subscribe();
    let s = sock.as_path();
    ok(s, &["init"]);
    ok(s, &["add-br", "br0"]);
    let e = vsctl(s, &["add-br", "br0"]).unwrap_err();
    assert!(e.contains("already exists"), "{e}");
    ok(s, &["--may-exist", "add-br", "br0"]);
    ok(
        s,
        &[
            "add-port",
            "br0",
            "p1",
            "--",
            "set",
            "Interface",
            "p1",
            "type=internal",
            "options:remote_ip=192.0.2.1",
            "ofport_request=7",
        ],
    );
    ok(s, &["add-port", "br0", "p2", "tag=10"]);
    ok(s, &["--may-exist", "add-port", "br0", "p2"]);
    assert_eq!(ok(s, &["list-br"]), "br0\n");
    assert_eq!(ok(s, &["list-ports", "br0"]), "p1\np2\n");
    assert_eq!(ok(s, &["port-to-br", "p1"]), "br0\n");
    ok(
        s,
        &[
            "set",
            "Bridge",
            "br0",
            "other-config:datapath-id=0000000000000001",
            "fail_mode=secure",
            "protocols=OpenFlow10,OpenFlow13",
        ],
    );
    assert_eq!(
        ok(s, &["get", "Bridge", "br0", "fail_mode"]).trim(),
        "secure"
    );
    assert_eq!(
        ok(s, &["get", "Bridge", "br0", "other-config:datapath-id"]).trim(),
        "\"0000000000000001\""
    );
    assert_eq!(
        ok(s, &["get", "Interface", "p1", "options:remote_ip"]).trim(),
        "\"192.0.2.1\""
    );
    assert_eq!(ok(s, &["get", "Port", "p2", "tag"]).trim(), "10");
    let list = ok(s, &["list", "Interface", "p1"]);
    assert!(
        list.contains("ofport_request      : 7") && list.contains("type                : internal"),
        "{list}"
    );
    let found = ok(
        s,
        &[
            "--bare",
            "--columns=name",
            "find",
            "Interface",
            "type=internal",
        ],
    );
    let mut names: Vec<&str> = found.split_whitespace().collect();
    names.sort();
    assert_eq!(names, ["br0", "p1"]);
    ok(
        s,
        &["remove", "Bridge", "br0", "other-config", "datapath-id"],
    );
    assert_eq!(
        ok(s, &["get", "Bridge", "br0", "other-config"]).trim(),
        "{}"
    );
    ok(s, &["clear", "Bridge", "br0", "fail_mode"]);
    assert_eq!(ok(s, &["get", "Bridge", "br0", "fail_mode"]).trim(), "[]");
    ok(s, &["set-fail-mode", "br0", "standalone"]);
    ok(
        s,
        &[
            "set-controller",
            "br0",
            "tcp:127.0.0.1:6653",
            "punix:/tmp/x.ctl",
        ],
    );
    assert_eq!(
        ok(s, &["get-controller", "br0"]),
        "punix:/tmp/x.ctl\ntcp:127.0.0.1:6653\n"
    );
    ok(s, &["del-controller", "br0"]);
    assert_eq!(
        server.read(|db| db.table("Controller").unwrap().len()),
        0,
        "garbage-collected"
    );
    let show = ok(s, &["show"]);
    assert!(
        show.contains("Bridge br0") && show.contains("Port p1") && show.contains("tag: 10"),
        "{show}"
    );
    // Bad values: a schema violation is reported, nothing changes.
    let e = vsctl(s, &["set", "Port", "p2", "vlan_mode=bogus"]).unwrap_err();
    assert!(e.contains("bogus"), "{e}");
    ok(s, &["del-port", "br0", "p1"]);
    let e = vsctl(s, &["del-port", "br0", "nope"]).unwrap_err();
    assert!(e.contains("no port named nope"), "{e}");
    ok(s, &["--if-exists", "del-port", "br0", "nope"]);
    ok(s, &["del-br", "br0"]);
    ok(s, &["--if-exists", "del-br", "br0"]);
    assert_eq!(ok(s, &["list-br"]), "");
    // Ports and interfaces went with the bridge (not root tables).
    server.read(|db| {
        for t in ["Bridge", "Port", "Interface"] {
            assert_eq!(db.table(t).unwrap().len(), 0, "{t}");
        }
        assert_eq!(db.table("Open_vSwitch").unwrap().len(), 1);
    });
    assert!(commits.try_iter().count() >= 10);
}

#[test]
fn ovsdb_client_workflow() {
    require("ovsdb-client");
    let (server, _l, _d, sock) = start(&vswitch_schema());
    let remote = format!("unix:{}", sock.display());
    let r = remote.as_str();
    assert_eq!(client(&["list-dbs", r]), "Open_vSwitch\n");
    let schema: Value = serde_json::from_str(&client(&["get-schema", r, "Open_vSwitch"])).unwrap();
    // ovsdb-client re-serialises (e.g. sorts enums): compare the structure.
    let ours = vswitch_schema();
    assert_eq!(schema["version"], ours["version"]);
    for (t, tv) in ours["tables"].as_object().unwrap() {
        let cols: Vec<&String> = tv["columns"].as_object().unwrap().keys().collect();
        let theirs: Vec<&String> = schema["tables"][t]["columns"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(cols, theirs, "{t}");
    }
    assert_eq!(
        client(&["get-schema-version", r, "Open_vSwitch"]).trim(),
        "8.3.1"
    );
    let out = client(&[
        "transact",
        r,
        r#"["Open_vSwitch",
        {"op": "insert", "table": "Open_vSwitch", "row": {"bridges": ["named-uuid", "b"]}},
        {"op": "insert", "table": "Bridge", "uuid-name": "b", "row": {"name": "brA"}}]"#,
    ]);
    let res: Value = serde_json::from_str(&out).unwrap();
    assert!(res[1]["uuid"].is_array(), "{res}");
    let out = client(&[
        "transact",
        r,
        r#"["Open_vSwitch",
        {"op": "delete", "table": "Bridge", "where": []}]"#,
    ]);
    let res: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(res[1]["error"], "referential integrity violation", "{res}");
    let dump = client(&["dump", r, "Open_vSwitch"]);
    assert!(
        dump.contains("Bridge table") && dump.contains("brA"),
        "{dump}"
    );

    // monitor (v1) and monitor-cond (v2) see later changes.
    let spawn = |args: &[&str]| {
        let mut child = Command::new("ovsdb-client")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    };
    let (mut m1, rx1) = spawn(&[
        "--format=json",
        "monitor",
        r,
        "Open_vSwitch",
        "Bridge",
        "name,fail_mode",
    ]);
    let (mut m2, rx2) = spawn(&[
        "--format=json",
        "monitor-cond",
        r,
        "Open_vSwitch",
        r#"[["name","==","brB"]]"#,
        "Bridge",
        "name",
    ]);
    let wait_for = |rx: &mpsc::Receiver<String>, needle: &str| -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if line.contains(needle) {
                return true;
            }
        }
        false
    };
    assert!(wait_for(&rx1, "brA"), "initial contents");
    std::thread::sleep(Duration::from_millis(300));
    let res = server.transact(&json!(["Open_vSwitch",
        {"op": "insert", "table": "Bridge", "uuid-name": "b", "row": {"name": "brB", "fail_mode": "secure"}},
        {"op": "mutate", "table": "Open_vSwitch", "where": [], "mutations": [["bridges", "insert", ["named-uuid", "b"]]]}]));
    assert!(res[0]["uuid"].is_array(), "{res}");
    assert!(
        wait_for(&rx1, r#""insert","brB","secure""#),
        "monitor saw the insert"
    );
    assert!(
        wait_for(&rx2, r#""insert","brB""#),
        "monitor-cond saw the insert"
    );
    server.transact(&json!([{"op": "update", "table": "Bridge", "where": [["name", "==", "brA"]], "row": {"fail_mode": "standalone"}}]));
    assert!(wait_for(&rx1, "standalone"), "monitor saw the modification");
    let _ = m1.kill();
    let _ = m2.kill();
    let _ = m1.wait();
    let _ = m2.wait();
}

#[test]
fn python_idl() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/idl_test.py");
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let python = [venv.to_string_lossy().to_string(), "python3".to_string()]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .args(["-c", "import ovs.db.idl"])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        });
    let python = python.expect(
        "no Python with the ovs package: install tests/requirements.txt into .venv \
         (scripts/test.sh does)",
    );
    let (server, _l, _d, sock) = start(&vswitch_schema());
    server.transact(&json!([
        {"op": "insert", "table": "Open_vSwitch", "row": {"bridges": ["named-uuid", "b"]}},
        {"op": "insert", "table": "Bridge", "uuid-name": "b", "row": {"name": "existing"}}]));
    let out = Command::new("timeout")
        .arg("60")
        .arg(&python)
        .arg(&script)
        .arg(&sock)
        .arg(vswitch_schema_path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    assert_eq!(v["bridges"], json!(["existing", "pybr"]));
    let cfg = server.read(|db| {
        let t = db.table("Bridge").unwrap();
        t.rows()
            .find(|r| r.get("name").and_then(|d| d.as_str()) == Some("pybr"))
            .map(|r| r.get("other_config").unwrap().clone())
    });
    assert_eq!(
        cfg.unwrap().map_get("from").and_then(|a| a.as_str()),
        Some("python")
    );
}
