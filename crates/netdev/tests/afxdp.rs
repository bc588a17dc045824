//! The `afxdp` port against real veth pairs (root only: `#[ignore]`d, run by scripts/test.sh as
//! root; a kernel without AF_XDP fails them). Every test makes its own uniquely named links and namespaces and
//! removes them on the way out, pass or fail; every test checks that closing the port leaves
//! no XDP program on the interface.

mod common;

use common::{in_netns, require_root, rx_matching, sh, sysfs, uniq, Cleanup, RawSock};
use etherparse::{NetHeaders, PacketHeaders, PayloadSlice, TransportHeader};
use netdev::afxdp::{AfxdpPort, XdpMode};
use netdev::{LinkState, Options, Port};
use packet::{Batch, Pool};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::Duration;

const ETHERTYPE_TEST: [u8; 2] = [0x88, 0xb5];

/// Fails the test unless it runs as root with AF_XDP in the kernel.
fn usable(test: &str) -> bool {
    require_root(test);
    // SAFETY: plain socket call; the descriptor is closed right away.
    let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW, 0) };
    assert!(
        fd >= 0,
        "{test}: AF_XDP unavailable in this kernel ({})",
        std::io::Error::last_os_error()
    );
    // SAFETY: closing the descriptor we just opened.
    unsafe { libc::close(fd) };
    true
}

fn opts(kv: &[(&str, &str)]) -> Options {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether `ip link show` reports an XDP program on `ifname`.
fn xdp_attached(ifname: &str) -> bool {
    let out = Command::new("ip")
        .args(["link", "show", "dev", ifname])
        .output()
        .expect("ip link show");
    String::from_utf8_lossy(&out.stdout).contains("xdp")
}

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

/// Sends and receives over a veth pair with the port in `mode`, then closes it.
fn frames_flow_both_ways(mode: &str, tag: &str) {
    let (a, b) = (uniq(&format!("{tag}a")), uniq(&format!("{tag}b")));
    let mut g = Cleanup::default();
    g.veth(&a, &b);
    let mut port = AfxdpPort::open(&a, &opts(&[("xdp-mode", mode)])).expect("open afxdp port");
    assert_eq!(port.xdp_mode().as_str(), mode);
    assert_eq!(port.kind(), "afxdp");
    assert_eq!(
        port.ifindex().expect("ifindex").to_string(),
        sysfs(&a, "ifindex")
    );
    assert_eq!(
        port.mac().expect("mac"),
        common::parse_mac(&sysfs(&a, "address"))
    );
    assert_eq!(port.link_state(), LinkState::Up);
    assert!(xdp_attached(&a), "no XDP program on {a} after open");
    let peer = RawSock::bind(&b);
    let mut pool = Pool::new(1024);

    // Peer -> port: 300 frames of many sizes (more than one batch).
    let marker = 0x5158_0001;
    for i in 0..300u32 {
        peer.send(&test_frame(60 + (i as usize * 5) % 1454, marker, i));
    }
    let got = rx_matching(&mut port, &mut pool, 300, Duration::from_secs(3), |f| {
        is_test(f, marker)
    });
    assert_eq!(got.len(), 300, "{mode}: port saw {} of 300", got.len());
    for (i, f) in got.iter().enumerate() {
        assert_eq!(seq_of(f), i as u32);
        assert_eq!(f, &test_frame(60 + (i * 5) % 1454, marker, i as u32));
    }
    assert_eq!(pool.outstanding(), 0);

    // Port -> peer: 200 frames in one batch, plus one over the MTU.
    let marker = 0x5158_0002;
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
    assert_eq!(got.len(), 200, "{mode}: peer saw {} of 200", got.len());
    for (i, f) in got.iter().enumerate() {
        assert_eq!(
            f,
            &test_frame(60 + (i * 7) % 1454, marker, i as u32),
            "frame {i}"
        );
    }

    // Many batches back to back: frames are recycled through the completion ring.
    let marker = 0x5158_0003;
    let total = 5000u32;
    for chunk in 0..total / 100 {
        for i in 0..100u32 {
            let mut p = pool.alloc().expect("buf");
            assert!(p.set_frame(&test_frame(64, marker, chunk * 100 + i)));
            batch.push(p).map_err(|_| ()).expect("room");
        }
        port.tx_batch(&mut pool, &mut batch);
    }
    let got = peer.recv_matching(total as usize, Duration::from_secs(5), |f| {
        is_test(f, marker)
    });
    let st = port.stats();
    println!("{mode}: peer saw {} of {total}; {st:?}", got.len());
    assert_eq!(
        got.len() as u64 + st.tx_dropped,
        u64::from(total),
        "every frame was sent or counted as dropped"
    );
    assert!(got.len() as u32 > total / 2, "most frames get through");
    assert_eq!(st.tx_errors, 1, "the 1600-byte frame exceeds MTU+14");
    assert!(st.rx_packets >= 300);
    assert_eq!(st.rx_errors, 0);

    // Carrier follows the peer.
    sh(&["ip", "link", "set", &b, "down"]);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(port.link_state(), LinkState::Down);
    sh(&["ip", "link", "set", &b, "up"]);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(port.link_state(), LinkState::Up);

    port.close();
    assert_eq!(port.link_state(), LinkState::Down);
    assert!(
        !xdp_attached(&a),
        "{mode}: XDP program left on {a} after close"
    );
    // Dropping a closed port is harmless; dropping an open one detaches too.
    drop(port);
    let port = netdev::open(&a, "afxdp", &opts(&[("xdp-mode", mode)])).expect("reopen");
    assert!(xdp_attached(&a));
    drop(port);
    assert!(
        !xdp_attached(&a),
        "{mode}: XDP program left on {a} after drop"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn native_mode_frames_flow_both_ways() {
    if usable("native_mode_frames_flow_both_ways") {
        frames_flow_both_ways("native", "n");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn generic_mode_frames_flow_both_ways() {
    if usable("generic_mode_frames_flow_both_ways") {
        frames_flow_both_ways("generic", "g");
    }
}

/// veth has native XDP but no zero-copy sockets: best-effort settles on native, and asking
/// for zero-copy fails with an error that names the interface, the mode and the call.
#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn best_effort_and_zerocopy_on_veth() {
    if !usable("best_effort_and_zerocopy_on_veth") {
        return;
    }
    let (a, b) = (uniq("ea"), uniq("eb"));
    let mut g = Cleanup::default();
    g.veth(&a, &b);
    let e = AfxdpPort::open(&a, &opts(&[("xdp-mode", "native-with-zerocopy")]))
        .err()
        .expect("veth has no zero-copy AF_XDP");
    let msg = e.to_string();
    println!("{msg}");
    assert!(
        msg.starts_with(&format!("afxdp port '{a}': native-with-zerocopy: ")),
        "{msg}"
    );
    assert!(msg.contains("bind(XDP_ZEROCOPY)"), "{msg}");
    assert!(!xdp_attached(&a), "a failed open left a program behind");

    let port = AfxdpPort::open(&a, &Options::new()).expect("best effort");
    assert_eq!(port.xdp_mode(), XdpMode::Native);
    assert_eq!(
        port.options(),
        vec![("xdp-mode".to_string(), "best-effort".to_string())]
    );
    // A second port on the same interface is refused: the program belongs to a live port.
    let e = AfxdpPort::open(&a, &Options::new())
        .err()
        .expect("interface in use");
    assert!(
        e.to_string()
            .contains(&format!("in use by ferrovs process {}", std::process::id())),
        "{e}"
    );
    drop(port);
    assert!(!xdp_attached(&a));

    let e = AfxdpPort::open(&uniq("nx"), &Options::new())
        .err()
        .expect("no such interface");
    assert_eq!(
        e.to_string(),
        format!("afxdp port '{}': no such interface", uniq("nx"))
    );
}

/// An IPv4/UDP frame from port `sport`, carrying `marker` and `seq`: the kernel's transmit
/// hash spreads different ports over a device's queues.
fn udp_frame(sport: u16, marker: u32, seq: u32) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + 8];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0xaa, 0xbb, 0xcc]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&36u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 204, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 204, 0, 2]);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&9u16.to_be_bytes());
    f[38..40].copy_from_slice(&16u16.to_be_bytes());
    f[42..46].copy_from_slice(&marker.to_be_bytes());
    f[46..50].copy_from_slice(&seq.to_be_bytes());
    f
}

fn is_udp_test(f: &[u8], marker: u32) -> bool {
    f.len() >= 50 && f[12..14] == [0x08, 0x00] && f[23] == 17 && f[42..46] == marker.to_be_bytes()
}

/// Two queues: frames of 200 flows from the peer spread over both receive queues (veth
/// delivers on the queue the peer transmitted on), and the port polls both. With one queue
/// polled, what arrives on the other goes to the kernel stack (`XDP_PASS`).
#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn two_queues_are_both_polled() {
    if !usable("two_queues_are_both_polled") {
        return;
    }
    let (a, b) = (uniq("qa"), uniq("qb"));
    let mut g = Cleanup::default();
    sh(&[
        "ip",
        "link",
        "add",
        &a,
        "numtxqueues",
        "2",
        "numrxqueues",
        "2",
        "type",
        "veth",
        "peer",
        "name",
        &b,
        "numtxqueues",
        "2",
        "numrxqueues",
        "2",
    ]);
    g.on_drop(&["ip", "link", "del", &a]);
    for n in [&a, &b] {
        sh(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{n}.disable_ipv6=1"),
        ]);
        sh(&["ip", "link", "set", n, "up"]);
    }
    let mut port = AfxdpPort::open(&a, &opts(&[("xdp-mode", "native"), ("n_rxq", "2")]))
        .expect("open with two queues");
    assert_eq!(
        port.options(),
        vec![
            ("xdp-mode".to_string(), "native".to_string()),
            ("n_rxq".to_string(), "2".to_string())
        ]
    );
    let peer = RawSock::bind(&b);
    let marker = 0x5158_0004;
    for i in 0..200u32 {
        peer.send(&udp_frame(10_000 + i as u16, marker, i));
    }
    let mut pool = Pool::new(1024);
    let got = rx_matching(&mut port, &mut pool, 200, Duration::from_secs(3), |f| {
        is_udp_test(f, marker)
    });
    let per_queue = port.rxq_packets();
    println!("per-queue frames: {per_queue:?}");
    assert_eq!(got.len(), 200);
    assert!(
        per_queue.iter().all(|&n| n > 0),
        "both queues received: {per_queue:?}"
    );
    drop(port);
    assert!(!xdp_attached(&a));

    let mut port = AfxdpPort::open(&a, &opts(&[("xdp-mode", "native")])).expect("open");
    let stack = RawSock::bind(&a);
    let marker = 0x5158_0005;
    for i in 0..40u32 {
        peer.send(&udp_frame(10_000 + i as u16, marker, i));
    }
    let got = rx_matching(&mut port, &mut pool, 40, Duration::from_millis(500), |f| {
        is_udp_test(f, marker)
    });
    let passed = stack.recv_matching(40, Duration::from_millis(500), |f| is_udp_test(f, marker));
    println!(
        "queue 0 to the port: {}, queue 1 to the stack: {}",
        got.len(),
        passed.len()
    );
    assert_eq!(got.len() + passed.len(), 40);
    assert!(!got.is_empty() && !passed.is_empty());
    drop(port);
    assert!(!xdp_attached(&a));
}

/// Child half of the crash test: opens the port named by `FV_AFXDP_CHILD`, says so, waits to
/// be killed. Does nothing in a normal test run.
#[test]
#[ignore]
fn child_holds_port() {
    let Ok(ifname) = std::env::var("FV_AFXDP_CHILD") else {
        return;
    };
    let _port = AfxdpPort::open(&ifname, &opts(&[("xdp-mode", "native")])).expect("child open");
    println!("READY");
    std::thread::sleep(Duration::from_secs(60));
}

/// Runs `child_holds_port` on `ifname` in a new process and SIGKILLs it once the port is open.
fn open_and_crash(ifname: &str) {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "child_holds_port",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FV_AFXDP_CHILD", ifname)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let out = child.stdout.take().expect("stdout");
    let ready = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("READY"));
    child.kill().expect("SIGKILL child");
    child.wait().expect("reap child");
    assert!(ready, "child did not open the port");
}

/// A daemon that dies without closing its port leaves its program attached; the next open
/// replaces it, and `remove_stale` removes it.
#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn stale_programs_are_replaced_and_removed() {
    if !usable("stale_programs_are_replaced_and_removed") {
        return;
    }
    let (a, b) = (uniq("sa"), uniq("sb"));
    let mut g = Cleanup::default();
    g.veth(&a, &b);

    open_and_crash(&a);
    assert!(xdp_attached(&a), "the killed process's program stays");
    let mut port = AfxdpPort::open(&a, &opts(&[("xdp-mode", "generic")]))
        .expect("open over a stale program (in the other mode)");
    let peer = RawSock::bind(&b);
    let mut pool = Pool::new(256);
    let marker = 0x5158_0006;
    peer.send(&test_frame(80, marker, 1));
    let got = rx_matching(&mut port, &mut pool, 1, Duration::from_secs(2), |f| {
        is_test(f, marker)
    });
    assert_eq!(got.len(), 1, "the new port receives");
    // remove_stale leaves a live port's program alone.
    assert_eq!(netdev::afxdp::remove_stale(&a).expect("remove_stale"), 0);
    port.close();
    assert!(!xdp_attached(&a));

    open_and_crash(&a);
    assert!(xdp_attached(&a));
    assert_eq!(netdev::afxdp::remove_stale(&a).expect("remove_stale"), 1);
    assert!(!xdp_attached(&a), "remove_stale detached it");
    assert_eq!(netdev::afxdp::remove_stale(&a).expect("remove_stale"), 0);

    // A port of this very process that was forgotten without closing counts as stale too.
    let port = AfxdpPort::open(&a, &opts(&[("xdp-mode", "native")])).expect("open");
    port.leak_for_tests();
    assert!(xdp_attached(&a));
    let port = AfxdpPort::open(&a, &opts(&[("xdp-mode", "native")])).expect("reopen");
    drop(port);
    assert!(!xdp_attached(&a));
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

/// The L4 checksum field as the host stack leaves it under `CHECKSUM_PARTIAL`: the folded
/// pseudo-header sum, not complemented. `None` unless IPv4 TCP/UDP.
fn is_pseudo_header_sum(f: &[u8]) -> Option<bool> {
    let ihl = usize::from(f.get(14)? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*f.get(16)?, *f.get(17)?]));
    let proto = *f.get(23)?;
    let l4 = 14 + ihl;
    let field = match proto {
        6 => l4 + 16,
        17 => l4 + 6,
        _ => return None,
    };
    let mut sum: u32 = 0;
    for w in f.get(26..34)?.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    sum += u32::from(proto) + (total - ihl) as u32;
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let got = u16::from_be_bytes([*f.get(field)?, *f.get(field + 1)?]);
    Some(got == sum as u16)
}

/// What XDP hands over when the veth peer is the host stack: a TCP SYN and a UDP datagram
/// from sockets in a namespace, in native and generic mode, with the peer's transmit checksum
/// offload on (the default) and off. Offload on: the frames arrive with the L4 checksum left
/// partial (pseudo-header sum only) — XDP does not complete it. Offload off: complete.
#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn partial_checksums_from_a_veth_peer() {
    if !usable("partial_checksums_from_a_veth_peer") {
        return;
    }
    let mut case = 0u32;
    for mode in ["native", "generic"] {
        for offload in [true, false] {
            case += 1;
            let (ns, a, b) = (
                uniq(&format!("c{case}")),
                uniq(&format!("c{case}a")),
                uniq(&format!("c{case}b")),
            );
            let tag = std::process::id() % 200 + 20 + case;
            let host = format!("10.203.{tag}.1");
            let far = format!("10.203.{tag}.2");
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
            if !offload {
                sh(&["ip", "netns", "exec", &ns, "ethtool", "-K", &a, "tx", "off"]);
            }
            let mut port = AfxdpPort::open(&b, &opts(&[("xdp-mode", mode)])).expect("open");
            let mut pool = Pool::new(512);
            let far_tcp: SocketAddr = format!("{far}:7").parse().expect("addr");
            let far_udp: SocketAddr = format!("{far}:9").parse().expect("addr");
            let sender = in_netns(&ns, move || {
                let u = UdpSocket::bind("0.0.0.0:0").expect("udp");
                u.send_to(&[0x5a; 333], far_udp).expect("send udp");
                let _ = TcpStream::connect_timeout(&far_tcp, Duration::from_millis(300));
            });
            let got = rx_matching(&mut port, &mut pool, 2, Duration::from_secs(3), |f| {
                matches!(proto_of(f), 6 | 17)
            });
            sender.join().expect("sender");
            assert!(got.iter().any(|f| proto_of(f) == 6), "{mode}: no TCP frame");
            assert!(
                got.iter().any(|f| proto_of(f) == 17),
                "{mode}: no UDP frame"
            );
            for f in &got {
                let complete = l4_checksum_ok(f) == Some(true);
                let partial = is_pseudo_header_sum(f) == Some(true);
                println!(
                    "{mode}, peer tx offload {}: {} frame: checksum {}",
                    if offload { "on" } else { "off" },
                    if proto_of(f) == 6 { "TCP" } else { "UDP" },
                    if complete {
                        "complete"
                    } else if partial {
                        "PARTIAL (pseudo-header sum only)"
                    } else {
                        "wrong"
                    }
                );
                if offload {
                    assert!(
                        complete || partial,
                        "neither complete nor partial: {f:02x?}"
                    );
                } else {
                    assert!(complete, "offload off, yet incomplete: {f:02x?}");
                }
            }
            drop(port);
            assert!(!xdp_attached(&b));
        }
    }
}

/// Rough packet rates on a veth pair: an `afxdp` port transmits 64-byte frames, another
/// receives. Run with `cargo test --release -p netdev --test afxdp -- --ignored --nocapture
/// packet_rates`.
#[test]
#[ignore = "benchmark (needs root): run by hand as the comment says"]
fn packet_rates() {
    if !usable("packet_rates") {
        return;
    }
    for mode in ["native", "generic"] {
        let (a, b) = (uniq("ra"), uniq("rb"));
        let mut g = Cleanup::default();
        g.veth(&a, &b);
        let mut tx = AfxdpPort::open(&a, &opts(&[("xdp-mode", mode)])).expect("open");
        let mut rx = AfxdpPort::open(&b, &opts(&[("xdp-mode", mode)])).expect("open");
        let frame = test_frame(64, 0x5158_0007, 0);
        common::measure_rates(&format!("{mode}: "), &mut tx, &mut rx, &frame, 3);
    }
}
