//! In-process checks of the port's socket handling and option parsing.

use super::*;

fn opts(kv: &[(&str, &str)]) -> Options {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn server_socket_lives_with_the_port() {
    let dir = std::env::temp_dir().join(format!("ferrovs-vhost-ut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    crate::set_rundir(&dir);
    let mut p = VhostPort::open("vhu0", KIND_SERVER, &Options::new()).expect("open");
    let sock = dir.join("vhu0");
    assert!(sock.exists());
    assert_eq!(p.link_state(), LinkState::Down);
    // A second port on the same live socket is refused; a stale file is replaced.
    assert!(VhostPort::open("vhu0", KIND_SERVER, &Options::new()).is_err());
    // Nothing connected: transmitting drops and counts.
    let mut pool = Pool::new(8);
    let mut b = Batch::new();
    let mut pkt = pool.alloc().expect("buf");
    assert!(pkt.set_frame(&[0u8; 60]));
    b.push(pkt).ok().expect("push");
    p.tx_batch(&mut pool, &mut b);
    assert_eq!(p.stats().tx_dropped, 1);
    p.close();
    assert!(!sock.exists(), "socket file removed with the port");
    // A socket file nobody listens on (a killed switch's) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&sock).expect("bind"));
    assert!(sock.exists());
    let mut p = VhostPort::open("vhu0", KIND_SERVER, &Options::new()).expect("stale socket");
    assert!(std::os::unix::net::UnixStream::connect(&sock).is_ok());
    p.close();
    // Anything else in the way is left alone and the port fails.
    std::fs::write(&sock, b"not a socket").expect("file");
    let e = VhostPort::open("vhu0", KIND_SERVER, &Options::new())
        .err()
        .expect("a regular file in the way");
    assert!(e.to_string().contains("not a socket"), "{e}");
    assert_eq!(std::fs::read(&sock).expect("kept"), b"not a socket");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn options_are_checked() {
    let e = VhostPort::open("c0", KIND_CLIENT, &Options::new())
        .err()
        .expect("needs path");
    assert!(e.to_string().contains("vhost-server-path"), "{e}");
    let e = VhostPort::open("c0", KIND_SERVER, &opts(&[("tx-retries-max", "99")]))
        .err()
        .expect("bad retries");
    assert!(e.to_string().contains("tx-retries-max"), "{e}");
    let e = VhostPort::open("c0", KIND_SERVER, &opts(&[("vhost-server-path", "/x")]))
        .err()
        .expect("server has no path option");
    assert!(e.to_string().contains("unknown option"), "{e}");
    let p = VhostPort::open(
        "c0",
        KIND_CLIENT,
        &opts(&[("vhost-server-path", "/nonexistent/vhost.sock")]),
    )
    .expect("client opens without a server");
    // The connector thread's first attempt fails at once; wait for it (bounded, so a
    // loaded machine slows the test rather than failing it).
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !p.last_reason().contains("connect") && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(p.last_reason().contains("connect"), "{}", p.last_reason());
    assert_eq!(p.link_state(), LinkState::Down);
}
