//! A server and a client port of this crate, connected to each other in one process.

use super::*;
use std::time::{Duration, Instant};

fn opts(kv: &[(&str, &str)]) -> Options {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn sock_path(tag: &str) -> String {
    format!("/tmp/ferrovs-memif-test-{}-{tag}.sock", std::process::id())
}

fn wait_up(ports: &[&MemifPort]) {
    let t = Instant::now();
    while ports.iter().any(|p| p.link_state() != LinkState::Up) {
        assert!(t.elapsed() < Duration::from_secs(10), "link never came up");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn frame(i: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..16].copy_from_slice(&i.to_be_bytes());
    f
}

/// Sends `n` frames from `a` to `b` and returns what `b` received.
fn exchange(
    a: &mut MemifPort,
    b: &mut MemifPort,
    pool: &mut Pool,
    n: u16,
    len: usize,
) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut out = Batch::new();
    for i in 0..n {
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&frame(i, len)));
        assert!(out.push(p).is_ok());
        if out.is_full() || i + 1 == n {
            a.tx_batch(pool, &mut out);
            let mut inb = Batch::new();
            while b.rx_batch(pool, &mut inb) > 0 {
                for p in inb.drain() {
                    got.push(p.data().to_vec());
                    pool.free(p);
                }
            }
        }
    }
    got
}

#[test]
fn options_are_checked() {
    let e = |kv: &[(&str, &str)]| {
        MemifPort::open("m", &opts(kv))
            .err()
            .expect("error")
            .to_string()
    };
    assert_eq!(e(&[("id", "0")]), "port type 'memif' needs option 'socket'");
    assert!(e(&[("socket", "rel"), ("id", "0")]).contains("'socket'"));
    assert!(e(&[("socket", "/tmp/x"), ("id", "-1")]).contains("'id'"));
    assert!(e(&[("socket", "/tmp/x"), ("id", "0"), ("role", "boss")]).contains("'role'"));
    assert!(e(&[("socket", "/tmp/x"), ("id", "0"), ("ring-size", "1000")]).contains("'ring-size'"));
    assert!(
        e(&[("socket", "/tmp/x"), ("id", "0"), ("buffer-size", "100")]).contains("'buffer-size'")
    );
    assert!(e(&[
        ("socket", "/tmp/x"),
        ("id", "0"),
        ("secret", &"s".repeat(25))
    ])
    .contains("'secret'"));
    assert!(e(&[("socket", "/tmp/x"), ("id", "0"), ("mtu", "1")]).contains("unknown option 'mtu'"));
}

#[test]
fn server_and_client_exchange_packets_both_ways() {
    let path = sock_path("pair");
    let mut srv = MemifPort::open(
        "s0",
        &opts(&[("socket", &path), ("id", "3"), ("secret", "pw")]),
    )
    .expect("server");
    // A second interface on the same socket, with another id.
    let other = MemifPort::open("s1", &opts(&[("socket", &path), ("id", "4")])).expect("second id");
    assert!(MemifPort::open("s2", &opts(&[("socket", &path), ("id", "3")])).is_err());
    assert_eq!(srv.link_state(), LinkState::Down);
    let mut cli = MemifPort::open(
        "c0",
        &opts(&[
            ("socket", &path),
            ("id", "3"),
            ("role", "client"),
            ("secret", "pw"),
            ("ring-size", "256"),
        ]),
    )
    .expect("client");
    wait_up(&[&srv, &cli]);
    assert_eq!(other.link_state(), LinkState::Down);
    let mut pool = Pool::new(4096);
    // More than a ring's worth, in bursts: the client offers its buffers as it reads.
    let got = exchange(&mut srv, &mut cli, &mut pool, 1000, 60);
    assert_eq!(got.len(), 1000);
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, f)| *f == frame(i as u16, 60)));
    let got = exchange(&mut cli, &mut srv, &mut pool, 1000, 1500);
    assert_eq!(got.len(), 1000);
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, f)| *f == frame(i as u16, 1500)));
    assert_eq!(srv.stats().tx_packets, 1000);
    assert_eq!(srv.stats().rx_packets, 1000);
    assert_eq!(cli.stats().rx_errors + srv.stats().rx_errors, 0);

    // A peer that does not read: transmit drops and counts, never waits.
    let mut b = Batch::new();
    for i in 0..200u16 {
        let mut out = Batch::new();
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&frame(i, 64)));
        assert!(out.push(p).is_ok());
        for _ in 0..9 {
            let mut p = pool.alloc().expect("buffer");
            assert!(p.set_frame(&frame(i, 64)));
            assert!(out.push(p).is_ok());
        }
        srv.tx_batch(&mut pool, &mut out);
    }
    assert_eq!(srv.stats().tx_dropped, 2000 - 256);
    while cli.rx_batch(&mut pool, &mut b) > 0 {
        pool.free_batch(&mut b);
    }

    // The client goes away: the link goes down; a new client connects again.
    drop(cli);
    let t = Instant::now();
    while srv.link_state() == LinkState::Up {
        assert!(t.elapsed() < Duration::from_secs(5), "link stayed up");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A wrong secret is refused.
    let bad = MemifPort::open(
        "c1",
        &opts(&[
            ("socket", &path),
            ("id", "3"),
            ("role", "client"),
            ("secret", "no"),
        ]),
    )
    .expect("client");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(srv.link_state(), LinkState::Down);
    assert!(
        bad.last_reason().contains("incorrect secret"),
        "{}",
        bad.last_reason()
    );
    drop(bad);
    let mut cli = MemifPort::open(
        "c2",
        &opts(&[
            ("socket", &path),
            ("id", "3"),
            ("role", "client"),
            ("secret", "pw"),
        ]),
    )
    .expect("client");
    wait_up(&[&srv, &cli]);
    assert_eq!(exchange(&mut cli, &mut srv, &mut pool, 10, 64).len(), 10);
    assert!(srv.connects() >= 2);
    drop(srv);
    drop(other);
    let t = Instant::now();
    while cli.link_state() == LinkState::Up {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "client link stayed up"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !std::path::Path::new(&path).exists(),
        "socket file left behind"
    );
}

#[test]
fn several_queue_pairs_and_handles() {
    // Over an abstract-namespace socket (no file).
    let path = sock_path("mq");
    let mut srv = MemifPort::open(
        "s0",
        &opts(&[
            ("socket", &path),
            ("socket-abstract", "true"),
            ("id", "0"),
            ("n_rxq", "2"),
        ]),
    )
    .expect("server");
    let mut cli = MemifPort::open(
        "c0",
        &opts(&[
            ("socket", &path),
            ("socket-abstract", "true"),
            ("id", "0"),
            ("role", "client"),
            ("n_rxq", "2"),
        ]),
    )
    .expect("client");
    wait_up(&[&srv, &cli]);
    // A second client handle transmits on the second S2M ring; the server's queue 1 gets it.
    let mut h = cli.share().expect("share");
    let mut pool = Pool::new(1024);
    let mut out = Batch::new();
    for i in 0..5 {
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&frame(i, 64)));
        assert!(out.push(p).is_ok());
    }
    h.tx_batch(&mut pool, &mut out);
    let mut inb = Batch::new();
    let st = srv.take_rxq(1).expect("queue 1");
    assert_eq!(srv.rxq_batch(1, &mut pool, &mut inb), 0, "queue 1 is gone");
    assert_eq!(
        srv.rxq_batch(0, &mut pool, &mut inb),
        0,
        "ring 1 is queue 1's"
    );
    assert!(srv.put_rxq(1, st).is_ok());
    assert_eq!(srv.rxq_batch(1, &mut pool, &mut inb), 5);
    pool.free_batch(&mut inb);
    assert!(srv.rxq_fd(0).is_some());
    assert!(
        !std::path::Path::new(&path).exists(),
        "an abstract socket has no file"
    );
    drop(h);
}
