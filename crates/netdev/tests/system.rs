//! The `system` port against real veth pairs and network namespaces (root only: `#[ignore]`d,
//! run by scripts/test.sh as root). Every test makes its own uniquely named links/namespaces and removes them on
//! the way out, pass or fail.

mod common;

use common::{in_netns, require_root, rx_matching, sh, sysfs, uniq, Cleanup, RawSock};
use etherparse::{NetHeaders, PacketHeaders, PayloadSlice, TransportHeader};
use netdev::{LinkState, Options};
use packet::{Batch, Pool};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ETHERTYPE_TEST: [u8; 2] = [0x88, 0xb5];

/// A test frame: broadcast, our ethertype, `marker` and `seq` in the payload.
fn test_frame(len: usize, marker: u32, seq: u32) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0xaa, 0xbb, 0xcc]);
    f[12..14].copy_from_slice(&ETHERTYPE_TEST);
    f[14..18].copy_from_slice(&marker.to_be_bytes());
    f[18..22].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f[22..].iter_mut().enumerate() {
        *b = (i as u32 ^ seq) as u8;
    }
    f
}

fn is_test(f: &[u8], marker: u32) -> bool {
    f.len() >= 22 && f[12..14] == ETHERTYPE_TEST && f[14..18] == marker.to_be_bytes()
}

fn seq_of(f: &[u8]) -> u32 {
    u32::from_be_bytes([f[18], f[19], f[20], f[21]])
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn frames_flow_both_ways_over_a_veth_pair() {
    require_root("frames_flow_both_ways_over_a_veth_pair");
    let (a, b) = (uniq("fa"), uniq("fb"));
    let mut g = Cleanup::default();
    g.veth(&a, &b);
    let mut port = netdev::open(&a, "system", &Options::new()).expect("open system port");
    assert_eq!(port.kind(), "system");
    assert_eq!(
        port.ifindex().expect("ifindex").to_string(),
        sysfs(&a, "ifindex")
    );
    assert_eq!(
        port.mac().expect("mac"),
        common::parse_mac(&sysfs(&a, "address"))
    );
    assert_eq!(port.link_state(), LinkState::Up);
    let peer = RawSock::bind(&b);
    let mut pool = Pool::new(1024);

    // Port -> peer: 200 frames of mixed sizes in one batch, plus one oversized frame.
    let marker = 0x5157_0001;
    let mut batch = Batch::new();
    for i in 0..200u32 {
        let mut p = pool.alloc().expect("buf");
        assert!(p.set_frame(&test_frame(60 + (i as usize * 7) % 1454, marker, i)));
        batch.push(p).map_err(|_| ()).expect("room");
    }
    let mut p = pool.alloc().expect("buf");
    assert!(p.set_frame(&test_frame(1600, marker, 999)));
    batch.push(p).map_err(|_| ()).expect("room");
    port.tx_batch(&mut pool, &mut batch);
    assert!(batch.is_empty());
    assert_eq!(pool.outstanding(), 0);
    let got = peer.recv_matching(200, Duration::from_secs(3), |f| is_test(f, marker));
    assert_eq!(got.len(), 200, "peer saw {} of 200", got.len());
    for (i, f) in got.iter().enumerate() {
        assert_eq!(
            f,
            &test_frame(60 + (i * 7) % 1454, marker, i as u32),
            "frame {i}"
        );
    }
    let st = port.stats();
    assert_eq!(st.tx_packets, 200);
    assert_eq!(st.tx_errors, 1, "the 1600-byte frame exceeds MTU+14");

    // Peer -> port: 300 frames, more than one batch's worth of polling.
    let marker = 0x5157_0002;
    for i in 0..300u32 {
        peer.send(&test_frame(64 + (i as usize % 1400), marker, i));
    }
    let got = rx_matching(port.as_mut(), &mut pool, 300, Duration::from_secs(3), |f| {
        is_test(f, marker)
    });
    assert_eq!(got.len(), 300, "port saw {} of 300", got.len());
    for (i, f) in got.iter().enumerate() {
        assert_eq!(seq_of(f), i as u32);
        assert_eq!(f, &test_frame(64 + (i % 1400), marker, i as u32));
    }
    assert!(port.stats().rx_packets >= 300);
    // Frames going out of the port's interface (here from another socket on it) are not
    // received by the port.
    let marker = 0x5157_0004;
    let same_side = RawSock::bind(&a);
    same_side.send(&test_frame(100, marker, 1));
    let echo = peer.recv_matching(1, Duration::from_secs(2), |f| is_test(f, marker));
    assert_eq!(echo.len(), 1, "the peer saw the frame");
    let got = rx_matching(
        port.as_mut(),
        &mut pool,
        1,
        Duration::from_millis(200),
        |f| is_test(f, marker),
    );
    assert!(got.is_empty(), "outgoing frame was received");
    assert_eq!(port.stats().rx_errors, 0);
    assert_eq!(pool.outstanding(), 0);

    // Carrier follows the peer.
    sh(&["ip", "link", "set", &b, "down"]);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(port.link_state(), LinkState::Down);
    sh(&["ip", "link", "set", &b, "up"]);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(port.link_state(), LinkState::Up);
    port.close();
    assert_eq!(port.link_state(), LinkState::Down);
}

/// The kernel's receive path moves an in-band 802.1Q tag out of band (`skb_vlan_untag`) before
/// packet sockets see the frame; the port puts it back.
#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn vlan_tags_moved_out_of_band_are_put_back() {
    require_root("vlan_tags_moved_out_of_band_are_put_back");
    let (a, b) = (uniq("va"), uniq("vb"));
    let mut g = Cleanup::default();
    g.veth(&a, &b);
    let mut port = netdev::open(&a, "system", &Options::new()).expect("open");
    let mut pool = Pool::new(256);
    let marker = 0x5157_0005;
    let plain = test_frame(80, marker, 3);
    for (tpid, tci) in [([0x81, 0x00], [0x20, 0x07]), ([0x88, 0xa8], [0x00, 0x64])] {
        let mut tagged = plain[..12].to_vec();
        tagged.extend_from_slice(&tpid);
        tagged.extend_from_slice(&tci);
        tagged.extend_from_slice(&plain[12..]);
        RawSock::bind(&b).send(&tagged);
        let got = rx_matching(port.as_mut(), &mut pool, 1, Duration::from_secs(3), |f| {
            f.len() >= 26 && f[16..18] == ETHERTYPE_TEST && f[18..22] == marker.to_be_bytes()
        });
        assert_eq!(got.len(), 1, "tagged frame not received");
        assert_eq!(got[0], tagged, "tag {tpid:02x?} put back after the MACs");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn errors_name_the_interface() {
    require_root("errors_name_the_interface");
    let name = uniq("nx");
    let e = netdev::open(&name, "system", &Options::new())
        .err()
        .expect("no such interface");
    assert_eq!(
        e.to_string(),
        format!("system port '{name}': no such interface")
    );
}

/// Checks that a captured frame's L4 checksum is right (TCP or UDP over IPv4).
fn l4_checksum_ok(f: &[u8]) -> Option<bool> {
    let h = PacketHeaders::from_ethernet_slice(f).ok()?;
    let Some(NetHeaders::Ipv4(ip, _)) = &h.net else {
        return None;
    };
    match (&h.transport, &h.payload) {
        (Some(TransportHeader::Tcp(t)), PayloadSlice::Tcp(d)) => {
            Some(t.checksum == t.calc_checksum_ipv4(ip, d).ok()?)
        }
        (Some(TransportHeader::Udp(u)), PayloadSlice::Udp(d)) => {
            Some(u.checksum == u.calc_checksum_ipv4(ip, d).ok()?)
        }
        _ => None,
    }
}

fn proto_of(f: &[u8]) -> u8 {
    if f.len() > 23 && f[12..14] == [0x08, 0x00] {
        f[23]
    } else {
        0
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn partial_checksums_from_the_host_stack_are_completed() {
    require_root("partial_checksums_from_the_host_stack_are_completed");
    let (ns, a, b) = (uniq("ns"), uniq("ca"), uniq("cb"));
    let tag = std::process::id() % 200 + 20;
    let host = format!("10.201.{tag}.1");
    let far = format!("10.201.{tag}.2");
    let mut g = Cleanup::default();
    g.netns(&ns);
    g.veth(&a, &b);
    sh(&["ip", "link", "set", &a, "netns", &ns]);
    sh(&[
        "ip",
        "-n",
        &ns,
        "addr",
        "add",
        &format!("{host}/24"),
        "dev",
        &a,
    ]);
    sh(&["ip", "-n", &ns, "link", "set", &a, "up"]);
    sh(&[
        "ip",
        "-n",
        &ns,
        "neigh",
        "add",
        &far,
        "lladdr",
        "02:00:00:00:00:99",
        "dev",
        &a,
    ]);

    let mut port = netdev::open(&b, "system", &Options::new()).expect("open");
    let plain = RawSock::bind(&b);
    let mut pool = Pool::new(512);

    // A TCP SYN and a UDP datagram from a socket in the namespace: veth hands both over with
    // CHECKSUM_PARTIAL.
    let far_tcp: SocketAddr = format!("{far}:7").parse().expect("addr");
    let far_udp: SocketAddr = format!("{far}:9").parse().expect("addr");
    let sender = in_netns(&ns, move || {
        let u = UdpSocket::bind("0.0.0.0:0").expect("udp");
        u.send_to(&[0x5a; 333], far_udp).expect("send udp");
        let _ = TcpStream::connect_timeout(&far_tcp, Duration::from_millis(300));
    });
    let got = rx_matching(port.as_mut(), &mut pool, 2, Duration::from_secs(3), |f| {
        matches!(proto_of(f), 6 | 17)
    });
    sender.join().expect("sender");
    assert!(got.iter().any(|f| proto_of(f) == 6), "no TCP frame seen");
    assert!(got.iter().any(|f| proto_of(f) == 17), "no UDP frame seen");
    for f in &got {
        assert_eq!(l4_checksum_ok(f), Some(true), "bad L4 checksum in {f:02x?}");
    }
    // What a plain packet socket saw, for the record: the checksum was really left partial.
    let raw = plain.recv_matching(4, Duration::from_millis(200), |f| {
        matches!(proto_of(f), 6 | 17)
    });
    let partial = raw
        .iter()
        .filter(|f| l4_checksum_ok(f) == Some(false))
        .count();
    println!(
        "plain socket saw {} frames, {partial} with partial checksums",
        raw.len()
    );
    assert_eq!(port.stats().rx_errors, 0);
}

/// Two namespaces joined through two `system` ports and a forwarding loop: a TCP stream with
/// offloads on (TSO super-packets, partial checksums) gets through intact.
#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn tcp_stream_crosses_two_ports_with_offloads_on() {
    require_root("tcp_stream_crosses_two_ports_with_offloads_on");
    let (ns1, ns2) = (uniq("n1"), uniq("n2"));
    let (a1, b1, a2, b2) = (uniq("s1"), uniq("t1"), uniq("s2"), uniq("t2"));
    let tag = std::process::id() % 200 + 20;
    let ip1 = format!("10.202.{tag}.1");
    let ip2 = format!("10.202.{tag}.2");
    let mut g = Cleanup::default();
    g.netns(&ns1);
    g.netns(&ns2);
    g.veth(&a1, &b1);
    g.veth(&a2, &b2);
    for (ns, a, ip) in [(&ns1, &a1, &ip1), (&ns2, &a2, &ip2)] {
        sh(&["ip", "link", "set", a, "netns", ns]);
        sh(&["ip", "-n", ns, "addr", "add", &format!("{ip}/24"), "dev", a]);
        sh(&["ip", "-n", ns, "link", "set", a, "up"]);
    }
    let p1 = netdev::open(&b1, "system", &Options::new()).expect("open p1");
    let p2 = netdev::open(&b2, "system", &Options::new()).expect("open p2");

    let stop = Arc::new(AtomicBool::new(false));
    let stop_fwd = stop.clone();
    let fwd = std::thread::spawn(move || {
        let (mut p1, mut p2) = (p1, p2);
        let mut pool = Pool::new(2048);
        let mut b = Batch::new();
        while !stop_fwd.load(Ordering::Relaxed) {
            let n1 = p1.rx_batch(&mut pool, &mut b);
            if n1 > 0 {
                p2.tx_batch(&mut pool, &mut b);
            }
            let n2 = p2.rx_batch(&mut pool, &mut b);
            if n2 > 0 {
                p1.tx_batch(&mut pool, &mut b);
            }
            if n1 + n2 == 0 {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        (p1.stats(), p2.stats())
    });

    const BYTES: usize = 16 << 20;
    let listen: SocketAddr = format!("{ip2}:5201").parse().expect("addr");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = in_netns(&ns2, move || {
        let l = TcpListener::bind(listen).expect("listen");
        ready_tx.send(()).expect("ready");
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut total = 0usize;
        let mut sum = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    for (i, b) in buf[..n].iter().enumerate() {
                        sum = sum.wrapping_add(u64::from(*b) * ((total + i) as u64 % 1013 + 1));
                    }
                    total += n;
                }
                Err(e) => panic!("read after {total} bytes: {e}"),
            }
        }
        (total, sum)
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("server ready");
    let t0 = Instant::now();
    let client = in_netns(&ns1, move || {
        let mut s = TcpStream::connect_timeout(&listen, Duration::from_secs(5)).expect("connect");
        s.set_write_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let data: Vec<u8> = (0..BYTES).map(|i| (i * 31 + i / 4093) as u8).collect();
        let mut sum = 0u64;
        for (i, b) in data.iter().enumerate() {
            sum = sum.wrapping_add(u64::from(*b) * (i as u64 % 1013 + 1));
        }
        s.write_all(&data).expect("write");
        s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        sum
    });
    let sent_sum = client.join().expect("client");
    let (total, sum) = server.join().expect("server");
    let secs = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (s1, s2) = fwd.join().expect("forwarder");
    println!(
        "{} MiB in {secs:.2} s = {:.2} Gbit/s; p1 {s1:?}; p2 {s2:?}",
        BYTES >> 20,
        BYTES as f64 * 8.0 / secs / 1e9
    );
    assert_eq!(total, BYTES);
    assert_eq!(sum, sent_sum);
    assert_eq!(s1.rx_errors + s2.rx_errors, 0);
    assert_eq!(
        s1.tx_errors + s2.tx_errors,
        0,
        "no frame over the MTU was sent"
    );
}

/// Rough packet rates on a veth pair: one port transmits 64-byte frames, the other receives.
/// Run with `cargo test --release -p netdev --test system -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark (needs root): run by hand as the comment says"]
fn packet_rates() {
    require_root("packet_rates");
    let (a, b) = (uniq("ra"), uniq("rb"));
    let mut g = Cleanup::default();
    g.veth(&a, &b);
    let mut tx = netdev::open(&a, "system", &Options::new()).expect("open");
    let mut rx = netdev::open(&b, "system", &Options::new()).expect("open");
    let frame = test_frame(64, 0x5157_0003, 0);
    common::measure_rates("", tx.as_mut(), rx.as_mut(), &frame, 3);
}
