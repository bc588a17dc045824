//! `ferrovs-bench-w8`: benchmark W8 for the connection tracker alone (no OpenFlow pipeline,
//! no ports): packets already in memory go through `Conntrack::execute` in batches of 32 on
//! the calling thread.
//!
//! * **est N**: N established TCP connections (handshake done), then ACK segments cycling
//!   over all N, `ct(zone=0)` without commit: the per-packet lookup and state update.
//! * **new**: UDP datagrams of distinct tuples with `ct(commit)`: connection creation.
//! * **new+snat**: the same with `ct(commit,nat(src=10.255.0.0-10.255.0.255:1024-65535))`.
//!
//! The new-connection runs create `--batch` connections per round (timed) and flush the
//! table between rounds (not timed). The growth of the resident set while the connections are created gives the bytes
//! per connection (meaningful at 100K), next to what the tracker accounts for itself. Usage:
//! `ferrovs-bench-w8 [--conns 1,1000,100000] [--seconds S] [--json]`.

use conntrack::key::PacketMeta;
use conntrack::testpkt::{flow_of, tcp4, udp4, ACK, SYN};
use conntrack::{Config, Conntrack, CtRequest, CtResult, Flush, Nat, NatRange};
use datapath::cycles;
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Resident set size in bytes (from /proc/self/statm; 0 if unreadable).
fn rss() -> isize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<isize>().ok())
        .map_or(0, |pages| pages * 4096)
}

const BATCH: usize = 32;

fn ip(n: u32) -> [u8; 4] {
    n.to_be_bytes()
}

fn pkt(f: Vec<u8>) -> (Vec<u8>, PacketMeta) {
    let (k, o) = flow_of(&f);
    let m = PacketMeta::from_flow(&k, &o).expect("IP frame");
    (f, m)
}

struct Run {
    name: String,
    mpps: f64,
    ns_per_pkt: f64,
    cycles_per_pkt: f64,
    /// Packets per second of this thread's CPU time (user + system), in millions: the rate
    /// a core would reach if the thread had it to itself (the machine is shared).
    mpps_cpu: f64,
}

/// This thread's CPU time in seconds (utime + stime from /proc/thread-self/stat).
fn thread_cpu() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let Some(rest) = s.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs `step` (which handles `n` packets per call) for about `secs`.
fn timed(name: String, secs: f64, mut step: impl FnMut() -> usize) -> Run {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(200) {
        step();
    }
    let t0 = Instant::now();
    let cpu0 = thread_cpu();
    let c0 = cycles::now();
    let mut n = 0usize;
    while t0.elapsed().as_secs_f64() < secs {
        for _ in 0..64 {
            n += step();
        }
    }
    let c1 = cycles::now();
    let dt = t0.elapsed().as_secs_f64();
    let cpu = thread_cpu() - cpu0;
    Run {
        name,
        mpps_cpu: if cpu > 0.0 { n as f64 / cpu / 1e6 } else { 0.0 },
        mpps: n as f64 / dt / 1e6,
        ns_per_pkt: dt * 1e9 / n as f64,
        cycles_per_pkt: (c1 - c0) as f64 / n as f64,
    }
}

fn established(conns: u32, secs: f64) -> (Run, f64, usize) {
    let ct = Conntrack::new(Config::default());
    let held0 = rss();
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
    let per_conn = (rss() - held0) as f64 / f64::from(conns);
    // The measured traffic: one ACK per connection, cycled through.
    let mut pkts: Vec<(Vec<u8>, PacketMeta)> = (0..conns)
        .map(|i| {
            let sp = 1024 + (i % 50_000) as u16;
            pkt(tcp4(client(i), server, sp, 80, 1001, 5001, ACK, b""))
        })
        .collect();
    // Shuffle so consecutive packets do not sit in consecutive memory.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..pkts.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        pkts.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut out = vec![CtResult::default(); BATCH];
    let mut pos = 0usize;
    let total = pkts.len();
    let run = timed(format!("est {conns}"), secs, || {
        let end = (pos + BATCH).min(total);
        let n = end - pos;
        ct.execute(&mut pkts[pos..end], &plain, 1, &mut out[..n]);
        pos = if end == total { 0 } else { end };
        n
    });
    assert!(out
        .iter()
        .take(1)
        .all(|r| r.state & conntrack::ct_state::EST != 0));
    let est = ct.memory_bytes() / conns as usize;
    (run, per_conn, est)
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
    let frames: Vec<(Vec<u8>, PacketMeta)> = (0..round)
        .map(|i| pkt(udp4(ip(0x0b00_0000 + i), [10, 200, 0, 1], 4000, 53, b"q")))
        .collect();
    let mut work = frames.clone();
    let mut out = vec![CtResult::default(); BATCH];
    let mut created = 0u64;
    let mut elapsed = 0f64;
    let mut cpu = 0f64;
    let mut cyc = 0u64;
    while elapsed < secs {
        let t0 = Instant::now();
        let cpu0 = thread_cpu();
        let c0 = cycles::now();
        for chunk in work.chunks_mut(BATCH) {
            let n = chunk.len();
            ct.execute(chunk, &req, 0, &mut out[..n]);
        }
        cyc += cycles::now() - c0;
        elapsed += t0.elapsed().as_secs_f64();
        cpu += thread_cpu() - cpu0;
        created += u64::from(ct.n_conns());
        assert_eq!(ct.n_conns(), round);
        ct.flush(Flush::All);
        // NAT rewrote the frames: restore them (untimed).
        if snat {
            work.clone_from(&frames);
        }
    }
    Run {
        mpps_cpu: if cpu > 0.0 {
            created as f64 / cpu / 1e6
        } else {
            0.0
        },
        name: if snat { "new+snat" } else { "new" }.to_string(),
        mpps: created as f64 / elapsed / 1e6,
        ns_per_pkt: elapsed * 1e9 / created as f64,
        cycles_per_pkt: cyc as f64 / created as f64,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut conns = vec![1u32, 1000, 100_000];
    let mut secs = 3.0f64;
    let mut json = false;
    let mut round = 200_000u32;
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
            "--json" => json = true,
            _ => return usage(),
        }
    }
    let mut runs = Vec::new();
    let mut mem = Vec::new();
    for &n in &conns {
        let (r, per, est) = established(n, secs);
        mem.push((n, per, est));
        runs.push(r);
    }
    runs.push(new_conns(false, secs, round));
    runs.push(new_conns(true, secs, round));
    if json {
        let v = serde_json::json!({
            "runs": runs.iter().map(|r| serde_json::json!({
                "name": r.name, "mpps": r.mpps, "ns_per_pkt": r.ns_per_pkt,
                "cycles_per_pkt": r.cycles_per_pkt, "mpps_per_cpu_second": r.mpps_cpu,
            })).collect::<Vec<_>>(),
            "bytes_per_conn": mem.iter().map(|(n, b, e)| serde_json::json!({"conns": n, "rss_bytes": b, "accounted_bytes": e})).collect::<Vec<_>>(),
        });
        println!("{v}");
    } else {
        println!("W8 (tracker alone, one thread, batches of {BATCH})");
        for r in &runs {
            println!(
                "{:<12} {:>8.2} Mpps {:>8.1} ns/pkt {:>8.0} cycles/pkt {:>8.2} Mpps per CPU-second",
                r.name, r.mpps, r.ns_per_pkt, r.cycles_per_pkt, r.mpps_cpu
            );
        }
        for (n, b, e) in &mem {
            println!(
                "memory at {n} connections: {b:.0} bytes/connection (RSS growth), {e} accounted"
            );
        }
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: ferrovs-bench-w8 [--conns 1,1000,100000] [--seconds S] [--round N] [--json]");
    ExitCode::from(2)
}
