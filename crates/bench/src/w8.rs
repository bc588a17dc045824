//! `ferrovs-bench-w8`: benchmark W8 for the connection tracker alone (no OpenFlow pipeline,
//! no ports): `Conntrack::execute` on batches of 32 packets on the calling thread.
//!
//! * **est N**: N established TCP connections (handshake done), then ACK segments cycling
//!   over all N in a shuffled order, `ct(zone=0)` without commit: the per-packet lookup and
//!   state update.
//! * **new**: UDP datagrams of distinct tuples with `ct(commit)`: connection creation
//!   (the table is flushed, untimed, whenever every tuple was committed).
//! * **new+snat**: the same with `ct(commit,nat(src=10.255.0.0-10.255.0.255:1024-65535))`.
//!
//! Before each batch the next 32 frames are copied into a working batch, as a receive path
//! leaves them in cache for the pipeline; only `execute` is timed (TSC). Windows of 1,000
//! batches are timed and the median window is reported, so that a shared machine's
//! preemptions do not decide the figure. The growth of the resident set while the
//! connections are created gives the bytes per connection (meaningful at 100K), next to
//! what the tracker accounts for itself. Usage:
//! `ferrovs-bench-w8 [--conns 1,1000,100000] [--seconds S] [--round N] [--only est|new]
//! [--json]`.

use conntrack::key::PacketMeta;
use conntrack::testpkt::{flow_of, tcp4, udp4, ACK, SYN};
use conntrack::{Config, Conntrack, CtRequest, CtResult, Flush, Nat, NatRange};
use datapath::cycles;
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const BATCH: usize = 32;

/// Resident set size in bytes (from /proc/self/statm; 0 if unreadable).
fn rss() -> isize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<isize>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn ip(n: u32) -> [u8; 4] {
    n.to_be_bytes()
}

type Frame = (Vec<u8>, PacketMeta);

fn pkt(f: Vec<u8>) -> Frame {
    let (k, o) = flow_of(&f);
    let m = PacketMeta::from_flow(&k, &o).expect("IP frame");
    (f, m)
}

struct Run {
    name: String,
    mpps: f64,
    ns_per_pkt: f64,
    cycles_per_pkt: f64,
}

/// Runs `step` (one batch: returns packets and TSC ticks spent in `execute`) in windows of
/// 1,000 batches for about `secs`; reports the median window.
fn timed(name: String, secs: f64, mut step: impl FnMut() -> (usize, u64)) -> Run {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(200) {
        step();
    }
    let t0 = Instant::now();
    let mut windows = Vec::new();
    while t0.elapsed().as_secs_f64() < secs || windows.is_empty() {
        let (mut n, mut ticks) = (0usize, 0u64);
        for _ in 0..1000 {
            let (k, t) = step();
            n += k;
            ticks += t;
        }
        windows.push(ticks as f64 / n.max(1) as f64);
    }
    windows.sort_by(f64::total_cmp);
    let cyc = windows[windows.len() / 2];
    let ns = cyc * 1e9 / cycles::hz() as f64;
    Run {
        name,
        mpps: 1e3 / ns,
        ns_per_pkt: ns,
        cycles_per_pkt: cyc,
    }
}

/// Copies the next frames (cycling) into the working batch; returns how many.
fn refill(work: &mut [Frame], frames: &[Frame], pos: &mut usize) -> usize {
    for w in work.iter_mut() {
        let (f, m) = &frames[*pos];
        w.0.clear();
        w.0.extend_from_slice(f);
        w.1 = *m;
        *pos = (*pos + 1) % frames.len();
    }
    work.len()
}

fn established(conns: u32, secs: f64) -> (Run, f64, usize) {
    let ct = Conntrack::new(Config::default());
    let rss0 = rss();
    let client = |i: u32| ip(0x0a00_0000 + i);
    let server = [10, 200, 0, 1];
    let commit = CtRequest {
        commit: true,
        ..CtRequest::default()
    };
    let plain = CtRequest::default();
    let mut out = [CtResult::default(); 1];
    for i in 0..conns {
        let sp = 1024 + (i % 50_000) as u16;
        let mut syn = [pkt(tcp4(client(i), server, sp, 80, 1000, 0, SYN, b""))];
        ct.execute(&mut syn, &commit, 0, &mut out);
        let mut sa = [pkt(tcp4(
            server,
            client(i),
            80,
            sp,
            5000,
            1001,
            SYN | ACK,
            b"",
        ))];
        ct.execute(&mut sa, &plain, 0, &mut out);
        let mut ack = [pkt(tcp4(client(i), server, sp, 80, 1001, 5001, ACK, b""))];
        ct.execute(&mut ack, &plain, 0, &mut out);
        assert_eq!(
            out[0].state,
            conntrack::ct_state::TRK | conntrack::ct_state::EST
        );
    }
    assert_eq!(ct.n_conns(), conns);
    let per_conn = (rss() - rss0) as f64 / f64::from(conns);
    let accounted = ct.memory_bytes() / conns as usize;
    // The measured traffic: one ACK per connection, shuffled.
    let mut frames: Vec<Frame> = (0..conns)
        .map(|i| {
            let sp = 1024 + (i % 50_000) as u16;
            pkt(tcp4(client(i), server, sp, 80, 1001, 5001, ACK, b""))
        })
        .collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..frames.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        frames.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut out = vec![CtResult::default(); BATCH];
    let mut work: Vec<Frame> = vec![frames[0].clone(); BATCH];
    let mut pos = 0usize;
    let run = timed(format!("est {conns}"), secs, || {
        let n = refill(&mut work, &frames, &mut pos);
        let c0 = cycles::now();
        ct.execute(&mut work, &plain, 1, &mut out);
        (n, cycles::now() - c0)
    });
    assert!(out
        .iter()
        .all(|r| r.state == conntrack::ct_state::TRK | conntrack::ct_state::EST));
    (run, per_conn, accounted)
}

fn new_conns(snat: bool, secs: f64, round: u32) -> Run {
    let ct = Conntrack::new(Config::default());
    let range = NatRange::new(
        IpAddr::V4(Ipv4Addr::new(10, 255, 0, 0)),
        IpAddr::V4(Ipv4Addr::new(10, 255, 0, 255)),
        Some((1024, 65535)),
    )
    .expect("range");
    let nat = Nat::Src(range);
    let req = CtRequest {
        commit: true,
        nat: snat.then_some(&nat),
        ..CtRequest::default()
    };
    // `round` distinct tuples: sources 11.x.y.z, one datagram each.
    let frames: Vec<Frame> = (0..round.max(BATCH as u32))
        .map(|i| pkt(udp4(ip(0x0b00_0000 + i), [10, 200, 0, 1], 4000, 53, b"q")))
        .collect();
    let mut work: Vec<Frame> = vec![frames[0].clone(); BATCH];
    let mut out = vec![CtResult::default(); BATCH];
    let mut pos = 0usize;
    let name = if snat { "new+snat" } else { "new" }.to_string();
    let run = timed(name, secs, || {
        if pos + BATCH > frames.len() {
            // Every tuple was committed: start over on an empty table (not timed).
            ct.flush(Flush::All);
            pos = 0;
        }
        let n = refill(&mut work, &frames, &mut pos);
        let c0 = cycles::now();
        ct.execute(&mut work, &req, 0, &mut out);
        let t = cycles::now() - c0;
        assert!(out.iter().all(|r| r.orig.is_some()), "a commit failed");
        (n, t)
    });
    run
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut conns = vec![1u32, 1000, 100_000];
    let mut secs = 3.0f64;
    let mut json = false;
    let mut round = 200_000u32;
    let mut only: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--conns" => match it.next().map(|v| {
                v.split(',')
                    .map(|c| c.trim().parse::<u32>())
                    .collect::<Result<Vec<_>, _>>()
            }) {
                Some(Ok(c)) if !c.is_empty() && c.iter().all(|&n| n > 0) => conns = c,
                _ => return usage(),
            },
            "--seconds" => match it.next().and_then(|v| v.parse::<f64>().ok()) {
                Some(s) if s > 0.0 => secs = s,
                _ => return usage(),
            },
            "--round" => match it.next().and_then(|v| v.parse::<u32>().ok()) {
                Some(r) if r > 0 => round = r,
                _ => return usage(),
            },
            "--only" => match it.next().map(String::as_str) {
                Some(o @ ("est" | "new")) => only = Some(o.to_string()),
                _ => return usage(),
            },
            "--json" => json = true,
            _ => return usage(),
        }
    }
    let mut runs = Vec::new();
    let mut mem = Vec::new();
    if only.as_deref() != Some("new") {
        for &n in &conns {
            let (r, per, acc) = established(n, secs);
            mem.push((n, per, acc));
            runs.push(r);
        }
    }
    if only.as_deref() != Some("est") {
        runs.push(new_conns(false, secs, round));
        runs.push(new_conns(true, secs, round));
    }
    if json {
        let v = serde_json::json!({
            "runs": runs.iter().map(|r| serde_json::json!({
                "name": r.name, "mpps": r.mpps, "ns_per_pkt": r.ns_per_pkt,
                "cycles_per_pkt": r.cycles_per_pkt,
            })).collect::<Vec<_>>(),
            "bytes_per_conn": mem.iter().map(|(n, b, a)| serde_json::json!({
                "conns": n, "rss_bytes": b, "accounted_bytes": a,
            })).collect::<Vec<_>>(),
        });
        println!("{v}");
    } else {
        println!(
            "W8 (tracker alone, one thread, batches of {BATCH}, median of 1,000-batch windows)"
        );
        for r in &runs {
            println!(
                "{:<12} {:>8.2} Mpps {:>8.1} ns/pkt {:>8.0} cycles/pkt",
                r.name, r.mpps, r.ns_per_pkt, r.cycles_per_pkt
            );
        }
        for (n, b, a) in &mem {
            println!(
                "memory at {n} connections: {b:.0} bytes/connection (RSS growth), {a} accounted"
            );
        }
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: ferrovs-bench-w8 [--conns 1,1000,100000] [--seconds S] [--round N] [--only est|new] [--json]"
    );
    ExitCode::from(2)
}
