//! End-to-end tests of the `ferrovs-pktgen` binary.
//!
//! The first group needs nothing special: it drives the generator against the `null` port
//! (a sink that accepts everything, or with `rx_gen` a source), which exercises the whole
//! loop, the stop conditions, the rate limiter against a real clock, and the JSON summary.
//!
//! The second group needs root: it makes a network namespace with a veth pair (names unique
//! to this process, removed by a guard even when an assertion fails), runs the generator's
//! receiver on one end and its transmitter on the other — as two processes over `system`
//! ports, and as one `txrx` process over `afxdp` ports in native mode — and checks that what
//! was sent is exactly what arrived. Those tests need root: they are `#[ignore]`d and scripts/test.sh runs them as root.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ferrovs-pktgen");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {BIN}: {e}"))
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "summary is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64()
        .unwrap_or_else(|| panic!("{path:?} is not a count in {v}"))
}

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number in {v}"))
}

#[test]
fn tx_to_null_stops_at_count() {
    let v = json_of(&run(&[
        "tx", "-t", "null", "-i", "sink", "-n", "100000", "-d", "0", "--json", "-q",
    ]));
    assert_eq!(u(&v, &["tx", "packets"]), 100_000);
    assert_eq!(u(&v, &["tx", "bytes"]), 100_000 * 60);
    assert_eq!(v["stopped_by"], "count");
    assert_eq!(v["rx"], Value::Null);
    assert_eq!(u(&v, &["frame_len"]), 60);
}

#[test]
fn rate_limit_holds_against_the_clock() {
    // 5000 frames at 50 kpps take 0.1 s minus the first burst (1 ms of traffic = 50 frames).
    let t = Instant::now();
    let v = json_of(&run(&[
        "tx", "-t", "null", "-i", "sink", "-n", "5000", "-r", "50000", "--json", "-q",
    ]));
    let took = t.elapsed();
    assert_eq!(u(&v, &["tx", "packets"]), 5000);
    let secs = f(&v, &["tx", "seconds"]);
    assert!(secs >= 0.098, "5000 frames at 50 kpps in {secs} s");
    assert!(took >= Duration::from_millis(98));
    let pps = f(&v, &["tx", "pps"]);
    assert!(pps <= 51_000.0, "{pps} pps over a 50 kpps limit");
}

#[test]
fn rx_from_null_generator_counts_foreign_frames() {
    let v = json_of(&run(&[
        "rx",
        "-t",
        "null",
        "-i",
        "src",
        "-o",
        "rx_gen=60",
        "-n",
        "10000",
        "-d",
        "5",
        "--json",
        "-q",
    ]));
    assert!(u(&v, &["rx", "packets"]) >= 10_000);
    assert_eq!(u(&v, &["rx", "matched"]), 0, "null frames carry no probe");
    assert_eq!(v["stopped_by"], "count");
    assert_eq!(v["tx"], Value::Null);
}

#[test]
fn large_frames_and_many_flows() {
    let v = json_of(&run(&[
        "tx", "-t", "null", "-i", "sink", "-s", "1518", "-f", "100000", "--vary", "both", "-n",
        "1000", "--json", "-q",
    ]));
    assert_eq!(u(&v, &["tx", "bytes"]), 1000 * 1514);
    // 70000 flows do not fit in the 64512 source ports from 1024 up: refused before running.
    let out = run(&[
        "tx", "-t", "null", "-i", "sink", "-f", "70000", "--vary", "sport", "--sport", "1024",
        "-n", "10",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("source ports"));
}

#[test]
fn bad_arguments_are_refused() {
    for (args, code) in [
        (vec!["tx", "-i", "x", "-t", "null", "-s", "63"], 2),
        (vec!["tx", "-i", "x", "-t", "null", "-s", "1519"], 2),
        (vec!["tx", "-i", "x", "-t", "null", "-b", "0"], 2),
        (vec!["tx", "-i", "x", "-t", "nosuch"], 1),
        (vec!["tx", "-i", "x", "-t", "null", "-o", "bogus"], 1),
        (vec!["tx", "-i", "x", "-t", "null", "-o", "rx_gen=1"], 1),
        (vec!["tx", "-i", "x", "-t", "null", "--dst-mac", "1:2:3"], 1),
        (vec!["tx", "-i", "x", "-t", "null", "--rx-iface", "y"], 1),
        (vec!["tx", "-i", "x", "-t", "null", "--duration=-1"], 1),
    ] {
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}

// ---- root-only: real veth pairs ----

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A namespace with a veth pair `a`/`b` in it, both up; the namespace (and so the pair) is
/// deleted on drop.
struct Netns {
    name: String,
    a: String,
    b: String,
}

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("fvpg{}{tag}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        sh(&["ip", "netns", "add", &name]);
        let n = Netns {
            name,
            a: "pga".into(),
            b: "pgb".into(),
        };
        sh(&[
            "ip", "-n", &n.name, "link", "add", &n.a, "type", "veth", "peer", "name", &n.b,
        ]);
        for i in [&n.a, &n.b] {
            let _ = Command::new("ip")
                .args(["netns", "exec", &n.name, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{i}.disable_ipv6=1"))
                .output();
            sh(&["ip", "-n", &n.name, "link", "set", i, "up"]);
        }
        n
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, BIN]).args(args);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn system_ports_tx_to_rx_across_a_veth() {
    assert!(is_root(), "system_ports_tx_to_rx_across_a_veth needs root");
    let ns = Netns::new("s");
    let mut rx = ns
        .cmd(&[
            "rx",
            "-i",
            &ns.b,
            "-d",
            "20",
            "-n",
            "20000",
            "--idle-timeout",
            "2",
            "--json",
            "-q",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rx");
    // The receiver announces itself on stderr once its port is open.
    let mut err = BufReader::new(rx.stderr.take().expect("stderr"));
    let mut banner = String::new();
    err.read_line(&mut banner).expect("rx banner");
    assert!(banner.contains("rx on"), "rx said: {banner}");

    let tx = ns
        .cmd(&[
            "tx", "-i", &ns.a, "-n", "20000", "-r", "200000", "-f", "64", "--json", "-q",
        ])
        .output()
        .expect("tx");
    let tv = json_of(&tx);
    let rx = rx.wait_with_output().expect("rx wait");
    let rv = json_of(&rx);
    let sent = u(&tv, &["tx", "packets"]);
    assert_eq!(sent + u(&tv, &["tx", "dropped"]), 20_000);
    assert!(sent >= 19_000, "tx ring dropped too much: {tv}");
    assert_eq!(u(&rv, &["rx", "matched"]), sent, "rx {rv}\ntx {tv}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn afxdp_txrx_native_counts_and_latency() {
    assert!(is_root(), "afxdp_txrx_native_counts_and_latency needs root");
    let ns = Netns::new("x");
    let out = ns
        .cmd(&[
            "txrx",
            "-t",
            "afxdp",
            "-o",
            "xdp-mode=native",
            "-i",
            &ns.a,
            "--rx-iface",
            &ns.b,
            "-n",
            "50000",
            "-r",
            "500000",
            "--json",
            "-q",
        ])
        .output()
        .expect("txrx");
    let v = json_of(&out);
    let sent = u(&v, &["tx", "packets"]);
    assert_eq!(sent + u(&v, &["tx", "dropped"]), 50_000);
    assert!(sent >= 45_000, "{v}");
    assert_eq!(u(&v, &["rx", "matched"]), sent, "{v}");
    assert_eq!(u(&v, &["latency_ns", "samples"]), sent);
    let (min, p50, p99, max) = (
        u(&v, &["latency_ns", "min"]),
        u(&v, &["latency_ns", "p50"]),
        u(&v, &["latency_ns", "p99"]),
        u(&v, &["latency_ns", "max"]),
    );
    assert!(min > 0 && min <= p50 && p50 <= p99 && p99 <= max, "{v}");
    // Closing the ports took the XDP programs away again.
    let link = Command::new("ip")
        .args(["-n", &ns.name, "link", "show"])
        .output()
        .expect("ip link");
    assert!(
        !String::from_utf8_lossy(&link.stdout).contains("xdp"),
        "XDP program left behind"
    );
}
