//! The `internal` (TAP) port against the host stack (root only: `#[ignore]`d, run by scripts/test.sh as root).

mod common;

use common::{parse_mac, require_root, rx_matching, sh, sysfs, uniq, Cleanup, RawSock};
use etherparse::{Icmpv4Type, NetHeaders, PacketBuilder, PacketHeaders, TransportHeader};
use netdev::{LinkState, Options, Port};
use packet::{Batch, Pool};
use std::net::UdpSocket;
use std::path::Path;
use std::time::Duration;

const FAKE_MAC: [u8; 6] = [2, 0, 0, 0x5a, 0x5a, 0x01];

fn send(port: &mut dyn Port, pool: &mut Pool, frame: &[u8]) {
    let mut b = Batch::new();
    let mut p = pool.alloc().expect("buf");
    assert!(p.set_frame(frame));
    b.push(p).map_err(|_| ()).expect("room");
    port.tx_batch(pool, &mut b);
}

/// An ARP reply "FAKE_MAC has `ip`" addressed to `to_mac`/`to_ip`.
fn arp_reply(ip: [u8; 4], to_mac: [u8; 6], to_ip: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::with_capacity(42);
    f.extend_from_slice(&to_mac);
    f.extend_from_slice(&FAKE_MAC);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2]);
    f.extend_from_slice(&FAKE_MAC);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&to_mac);
    f.extend_from_slice(&to_ip);
    f
}

/// True once interface `name` has disappeared (the kernel finishes unregistering
/// asynchronously), within two seconds.
fn gone_soon(name: &str) -> bool {
    let end = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < end {
        if !Path::new(&format!("/sys/class/net/{name}")).exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn host_stack_talks_through_the_tap() {
    require_root("host_stack_talks_through_the_tap");
    let name = uniq("tp");
    let tag = (std::process::id() % 200 + 20) as u8;
    let host_ip = [10, 203, tag, 1];
    let far_ip = [10, 203, tag, 2];
    let mut g = Cleanup::default();
    let mut port = netdev::open(&name, "internal", &Options::new()).expect("open internal port");
    // If the test fails, make sure the device goes even if the port is leaked.
    g.on_drop(&["ip", "link", "del", &name]);
    sh(&[
        "sysctl",
        "-qw",
        &format!("net.ipv6.conf.{name}.disable_ipv6=1"),
    ]);
    let host_ip_s = format!(
        "{}.{}.{}.{}",
        host_ip[0], host_ip[1], host_ip[2], host_ip[3]
    );
    sh(&[
        "ip",
        "addr",
        "add",
        &format!("{host_ip_s}/24"),
        "dev",
        &name,
    ]);
    let host_mac = port.mac().expect("mac");
    assert_eq!(host_mac, parse_mac(&sysfs(&name, "address")));
    assert_eq!(
        port.ifindex().expect("ifindex").to_string(),
        sysfs(&name, "ifindex")
    );
    let mut pool = Pool::new(256);

    // The host sends a UDP datagram to far_ip: first an ARP request arrives on the port.
    let sock = UdpSocket::bind((host_ip_s.as_str(), 0)).expect("bind");
    let far = std::net::SocketAddr::from((far_ip, 9999));
    sock.send_to(b"hello from the host", far).expect("send");
    let arp = rx_matching(port.as_mut(), &mut pool, 1, Duration::from_secs(3), |f| {
        f.len() >= 42 && f[12..14] == [0x08, 0x06] && f[38..42] == far_ip
    });
    assert_eq!(arp.len(), 1, "no ARP request for the far address");
    assert_eq!(&arp[0][6..12], &host_mac);

    // Answer it through tx_batch; the queued datagram follows.
    send(
        port.as_mut(),
        &mut pool,
        &arp_reply(far_ip, host_mac, host_ip),
    );
    let udp = rx_matching(port.as_mut(), &mut pool, 1, Duration::from_secs(3), |f| {
        f.len() > 42 && f[12..14] == [0x08, 0x00] && f[23] == 17 && f[0..6] == FAKE_MAC
    });
    assert_eq!(udp.len(), 1, "the UDP datagram did not arrive");
    assert!(udp[0].ends_with(b"hello from the host"));

    // An ICMP echo request written to the tap is answered by the host.
    let mut echo = Vec::new();
    PacketBuilder::ethernet2(FAKE_MAC, host_mac)
        .ipv4(far_ip, host_ip, 64)
        .icmpv4_echo_request(0x4242, 7)
        .write(&mut echo, b"ping through ferrovs")
        .expect("build");
    send(port.as_mut(), &mut pool, &echo);
    let reply = rx_matching(port.as_mut(), &mut pool, 1, Duration::from_secs(3), |f| {
        let Ok(h) = PacketHeaders::from_ethernet_slice(f) else {
            return false;
        };
        matches!(
            (&h.net, &h.transport),
            (Some(NetHeaders::Ipv4(ip, _)), Some(TransportHeader::Icmpv4(i)))
                if ip.destination == far_ip
                    && matches!(i.icmp_type, Icmpv4Type::EchoReply(e) if e.id == 0x4242 && e.seq == 7)
        )
    });
    assert_eq!(reply.len(), 1, "no echo reply from the host");
    let st = port.stats();
    assert_eq!(st.tx_packets, 2);
    assert!(st.rx_packets >= 3);
    assert_eq!(st.tx_errors + st.rx_errors, 0);
    assert_eq!(port.link_state(), LinkState::Up);
    assert_eq!(pool.outstanding(), 0);

    // Closing removes the device.
    port.close();
    assert_eq!(port.link_state(), LinkState::Down);
    assert!(gone_soon(&name), "tap device still there after close");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn tap_name_taken_by_another_kind_of_interface_is_an_error() {
    require_root("tap_name_taken_by_another_kind_of_interface_is_an_error");
    let (a, b) = (uniq("ta"), uniq("tb"));
    let mut g = Cleanup::default();
    g.veth(&a, &b);
    let e = netdev::open(&a, "internal", &Options::new())
        .err()
        .expect("a veth is not a tap");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("internal port '{a}': TUNSETIFF failed")),
        "{msg}"
    );
    // And the veth is still there.
    assert!(Path::new(&format!("/sys/class/net/{a}")).exists());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn dropping_the_port_removes_the_device() {
    require_root("dropping_the_port_removes_the_device");
    let name = uniq("td");
    let mut g = Cleanup::default();
    let port = netdev::open(&name, "internal", &Options::new()).expect("open");
    g.on_drop(&["ip", "link", "del", &name]);
    assert!(Path::new(&format!("/sys/class/net/{name}")).exists());
    drop(port);
    assert!(gone_soon(&name), "tap device still there after drop");
}

/// An idle port backs off (it does not read on every call), but a frame that arrives is read
/// within `MAX_IDLE_SKIP + 1` calls, and a port with traffic is read on every call.
#[test]
#[ignore = "needs root: scripts/test.sh runs it with --include-ignored"]
fn idle_back_off_is_bounded_and_traffic_resets_it() {
    require_root("idle_back_off_is_bounded_and_traffic_resets_it");
    let name = uniq("ti");
    let mut g = Cleanup::default();
    let mut port = netdev::open(&name, "internal", &Options::new()).expect("open");
    g.on_drop(&["ip", "link", "del", &name]);
    sh(&[
        "sysctl",
        "-qw",
        &format!("net.ipv6.conf.{name}.disable_ipv6=1"),
    ]);
    let host = RawSock::bind(&name);
    let mut pool = Pool::new(64);
    let mut b = Batch::new();
    let frame = |seq: u8| {
        let mut f = vec![0xffu8; 6];
        f.extend_from_slice(&FAKE_MAC);
        f.extend_from_slice(&[0x88, 0xb5, seq]);
        f.resize(60, 0);
        f
    };
    let calls_until_frame = |port: &mut Box<dyn Port>, pool: &mut Pool, b: &mut Batch| {
        for call in 1..=1000u32 {
            let n = port.rx_batch(pool, b);
            let hit = b.packets().iter().any(|p| p.data()[12..14] == [0x88, 0xb5]);
            pool.free_batch(b);
            if n > 0 && hit {
                return call;
            }
        }
        panic!("frame not received in 1000 calls");
    };
    for _round in 0..3 {
        // Long idle: the back-off reaches its maximum. (The host may still send a router
        // solicitation from before IPv6 was disabled: drop whatever comes.)
        for _ in 0..500 {
            port.rx_batch(&mut pool, &mut b);
            pool.free_batch(&mut b);
        }
        host.send(&frame(1));
        std::thread::sleep(Duration::from_millis(20));
        let calls = calls_until_frame(&mut port, &mut pool, &mut b);
        assert!(
            calls <= netdev::tap::MAX_IDLE_SKIP + 1,
            "an idle port took {calls} calls to read a waiting frame"
        );
        // Right after traffic the next frame is read on the next call.
        host.send(&frame(2));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(calls_until_frame(&mut port, &mut pool, &mut b), 1);
    }
    assert_eq!(pool.outstanding(), 0);
    assert_eq!(port.stats().rx_errors, 0);
}
