//! Helpers for the tests that need a kernel: root check, commands, namespaces and veth pairs
//! that are removed even when a test fails, and a plain AF_PACKET socket to talk to a port.
#![allow(dead_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::time::{Duration, Instant};

/// Fails the test unless it runs as root. The tests that need a kernel are `#[ignore]`d so a
/// plain `cargo test` leaves them out; `scripts/test.sh` runs them as root with
/// `--include-ignored`, and one run by hand without root fails instead of passing silently.
pub fn require_root(test: &str) {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "{test} needs root (network namespaces, veth, AF_PACKET, TAP): run it as root"
    );
}

/// A short name unique to this process and test: `fv<pid><tag>`, at most 15 bytes.
pub fn uniq(tag: &str) -> String {
    let n = format!("fv{}{}", std::process::id() % 1_000_000, tag);
    assert!(n.len() < 16, "{n} too long");
    n
}

/// Runs a command, failing the test with its stderr if it does not succeed.
pub fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs a command; true if it succeeded.
pub fn sh_ok(args: &[&str]) -> bool {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs a command and ignores the outcome.
pub fn sh_quiet(args: &[&str]) {
    let _ = Command::new(args[0]).args(&args[1..]).output();
}

/// Commands run (in reverse order, errors ignored) when dropped: namespace and link removal.
#[derive(Default)]
pub struct Cleanup {
    cmds: Vec<Vec<String>>,
}

impl Cleanup {
    pub fn on_drop(&mut self, args: &[&str]) {
        self.cmds.push(args.iter().map(|s| s.to_string()).collect());
    }

    /// Creates network namespace `name`, deleted on drop.
    pub fn netns(&mut self, name: &str) {
        sh_quiet(&["ip", "netns", "del", name]);
        sh(&["ip", "netns", "add", name]);
        self.on_drop(&["ip", "netns", "del", name]);
        sh(&["ip", "-n", name, "link", "set", "lo", "up"]);
    }

    /// Creates veth pair `a`/`b` in the root namespace (deleted on drop), both up, IPv6 off
    /// so that no router solicitations wander through the test.
    pub fn veth(&mut self, a: &str, b: &str) {
        sh_quiet(&["ip", "link", "del", a]);
        sh_quiet(&["ip", "link", "del", b]);
        sh(&["ip", "link", "add", a, "type", "veth", "peer", "name", b]);
        // Either end may have been moved into a namespace: try both.
        self.on_drop(&["ip", "link", "del", a]);
        self.on_drop(&["ip", "link", "del", b]);
        for n in [a, b] {
            sh_quiet(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{n}.disable_ipv6=1"),
            ]);
            sh(&["ip", "link", "set", n, "up"]);
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in self.cmds.iter().rev() {
            let args: Vec<&str> = c.iter().map(|s| s.as_str()).collect();
            sh_quiet(&args);
        }
    }
}

/// Runs `f` on a new thread that has joined network namespace `ns`.
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("open netns");
        // SAFETY: setns on this thread only, with a namespace file we hold open.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Reads `/sys/class/net/IF/FILE`.
pub fn sysfs(ifname: &str, file: &str) -> String {
    std::fs::read_to_string(format!("/sys/class/net/{ifname}/{file}"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (d, p) in m.iter_mut().zip(s.split(':')) {
        *d = u8::from_str_radix(p, 16).expect("hex");
    }
    m
}

/// A plain AF_PACKET socket bound to one interface (no rings, no vnet header).
pub struct RawSock {
    fd: OwnedFd,
}

impl RawSock {
    pub fn bind(ifname: &str) -> RawSock {
        let idx: i32 = sysfs(ifname, "ifindex").parse().expect("ifindex");
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket call.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let size: libc::c_int = 16 << 20;
        // SAFETY: sets an int option from a live int.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&size as *const libc::c_int).cast(),
                4,
            )
        };
        // SAFETY: zeroed sockaddr_ll is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = idx;
        // SAFETY: valid sockaddr_ll and its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
        RawSock { fd }
    }

    pub fn send(&self, frame: &[u8]) {
        // SAFETY: sends from a live slice.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(
            n,
            frame.len() as isize,
            "send: {}",
            std::io::Error::last_os_error()
        );
    }

    /// Receives frames until `keep` has accepted `want` of them or `within` passes; returns
    /// the accepted ones (only incoming frames: outgoing copies are skipped).
    pub fn recv_matching(
        &self,
        want: usize,
        within: Duration,
        mut keep: impl FnMut(&[u8]) -> bool,
    ) -> Vec<Vec<u8>> {
        let end = Instant::now() + within;
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        while got.len() < want && Instant::now() < end {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, 50) };
            if r <= 0 {
                continue;
            }
            // SAFETY: zeroed sockaddr_ll is valid; recvfrom writes at most its size.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut flen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buffer and address are live and sized as passed.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut flen,
                )
            };
            if n <= 0 || from.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let f = &buf[..n as usize];
            if keep(f) {
                got.push(f.to_vec());
            }
        }
        got
    }
}

/// Polls `port` until `want` frames accepted by `keep` arrived or `within` passed.
pub fn rx_matching(
    port: &mut dyn netdev::Port,
    pool: &mut packet::Pool,
    want: usize,
    within: Duration,
    mut keep: impl FnMut(&[u8]) -> bool,
) -> Vec<Vec<u8>> {
    let end = Instant::now() + within;
    let mut got = Vec::new();
    let mut b = packet::Batch::new();
    while got.len() < want && Instant::now() < end {
        if port.rx_batch(pool, &mut b) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        for p in b.packets() {
            if keep(p.data()) {
                got.push(p.data().to_vec());
            }
        }
        pool.free_batch(&mut b);
    }
    got
}

/// Sends copies of `frame` from `tx` in batches of 64 for `secs` seconds while draining `rx`,
/// then prints the rates: `tx Mpps (dropped), rx Mpps (dropped)` after `label`.
pub fn measure_rates(
    label: &str,
    tx: &mut dyn netdev::Port,
    rx: &mut dyn netdev::Port,
    frame: &[u8],
    secs: u64,
) {
    let mut pool = packet::Pool::new(4096);
    let mut batch = packet::Batch::new();
    let t0 = Instant::now();
    let mut received = 0u64;
    while t0.elapsed() < Duration::from_secs(secs) {
        for _ in 0..64 {
            let mut p = pool.alloc().expect("buf");
            p.set_frame(frame);
            batch.push(p).map_err(|_| ()).expect("room");
        }
        tx.tx_batch(&mut pool, &mut batch);
        loop {
            let n = rx.rx_batch(&mut pool, &mut batch);
            received += n as u64;
            pool.free_batch(&mut batch);
            if n == 0 {
                break;
            }
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let (ts, rs) = (tx.stats(), rx.stats());
    println!(
        "{label}tx {:.2} Mpps (dropped {}), rx {:.2} Mpps (dropped {})",
        ts.tx_packets as f64 / elapsed / 1e6,
        ts.tx_dropped,
        received as f64 / elapsed / 1e6,
        rs.rx_dropped
    );
}
