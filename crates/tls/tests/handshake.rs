//! The relay against itself over loopback, with certificates made by Debian's `ovs-pki`
//! (scripts/env.sh installs it; a missing `ovs-pki` fails these tests).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::Duration;
use tls::TlsConfig;

/// A PKI with its switch and controller CAs, a switch and a controller certificate, and a
/// controller certificate from an unrelated PKI.
struct Pki {
    dir: PathBuf,
}

fn ovs_pki(dir: &Path, args: &[&str]) {
    let out = Command::new("ovs-pki")
        .arg(format!("--dir={}", dir.join("pki").display()))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("ovs-pki must be installed (scripts/env.sh installs openvswitch-pki)");
    assert!(
        out.status.success(),
        "ovs-pki {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pki() -> &'static Pki {
    static P: OnceLock<Pki> = OnceLock::new();
    P.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tls-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let other = dir.join("other");
        std::fs::create_dir_all(&other).expect("temp dir");
        ovs_pki(&dir, &["init"]);
        ovs_pki(&dir, &["-b", "req+sign", "sw", "switch"]);
        ovs_pki(&dir, &["-b", "req+sign", "ctl", "controller"]);
        ovs_pki(&other, &["init"]);
        ovs_pki(&other, &["-b", "req+sign", "ctl", "controller"]);
        Pki { dir }
    })
}

impl Pki {
    fn switch(&self) -> TlsConfig {
        let d = &self.dir;
        TlsConfig::load(
            &d.join("sw-privkey.pem"),
            &d.join("sw-cert.pem"),
            &d.join("pki/controllerca/cacert.pem"),
        )
        .expect("switch config")
    }
    fn controller(&self, other: bool) -> TlsConfig {
        let d = if other {
            self.dir.join("other")
        } else {
            self.dir.clone()
        };
        TlsConfig::load(
            &d.join("ctl-privkey.pem"),
            &d.join("ctl-cert.pem"),
            &self.dir.join("pki/switchca/cacert.pem"),
        )
        .expect("controller config")
    }
}

fn pair() -> (TcpListener, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    (l, c)
}

#[test]
fn load_errors_name_the_file() {
    let p = pki();
    let d = &p.dir;
    let ca = d.join("pki/controllerca/cacert.pem");
    let missing = d.join("nope.pem");
    let e = TlsConfig::load(&missing, &d.join("sw-cert.pem"), &ca).expect_err("missing key");
    assert!(e.contains("private key") && e.contains("nope.pem"), "{e}");
    // A certificate where the key should be: no key in it.
    let e =
        TlsConfig::load(&d.join("sw-cert.pem"), &d.join("sw-cert.pem"), &ca).expect_err("no key");
    assert!(
        e.contains("sw-cert.pem") && e.contains("no PEM private key"),
        "{e}"
    );
    let e = TlsConfig::load(&d.join("sw-privkey.pem"), &d.join("sw-privkey.pem"), &ca)
        .expect_err("no cert");
    assert!(
        e.contains("certificate") && e.contains("sw-privkey.pem"),
        "{e}"
    );
    let e = TlsConfig::load(&d.join("sw-privkey.pem"), &d.join("ctl-cert.pem"), &ca)
        .expect_err("mismatch");
    assert!(e.contains("does not belong"), "{e}");
    let e = TlsConfig::load(&d.join("sw-privkey.pem"), &d.join("sw-cert.pem"), &missing)
        .expect_err("no CA");
    assert!(
        e.contains("CA certificate") && e.contains("nope.pem"),
        "{e}"
    );
}

#[test]
fn a_megabyte_each_way_then_a_clean_close() {
    let p = pki();
    let (sw, ctl) = (p.switch(), p.controller(false));
    let (l, c) = pair();
    let server = thread::spawn(move || {
        let (s, _) = l.accept().expect("accept");
        let mut plain = tls::accept(s, &sw).expect("server handshake");
        // Echo until EOF.
        let mut w = plain.try_clone().expect("clone");
        let n = std::io::copy(&mut plain, &mut w).expect("echo");
        w.shutdown(std::net::Shutdown::Write).expect("shutdown");
        n
    });
    let plain = tls::connect(c, "127.0.0.1", &ctl).expect("client handshake");
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    let mut w = plain.try_clone().expect("clone");
    let d2 = data.clone();
    let writer = thread::spawn(move || {
        w.write_all(&d2).expect("write");
        w.shutdown(std::net::Shutdown::Write).expect("shutdown");
    });
    let mut got = Vec::new();
    let mut r = plain;
    r.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    r.read_to_end(&mut got).expect("read back");
    writer.join().expect("writer");
    assert_eq!(got.len(), data.len());
    assert!(got == data, "the echo differs");
    assert_eq!(server.join().expect("server"), data.len() as u64);
}

#[test]
fn a_client_from_another_ca_is_refused() {
    let p = pki();
    let (sw, bad) = (p.switch(), p.controller(true));
    let (l, c) = pair();
    let server = thread::spawn(move || {
        let (s, _) = l.accept().expect("accept");
        tls::accept(s, &sw).map(|_| ())
    });
    // With TLS 1.3 the client may finish before the server judges its certificate; either
    // way it must never read anything.
    if let Ok(mut s) = tls::connect(c, "127.0.0.1", &bad) {
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut b = [0u8; 16];
        assert_eq!(s.read(&mut b).unwrap_or(0), 0);
    }
    let e = server.join().expect("server").expect_err("refused");
    assert!(
        e.contains("UnknownIssuer") || e.contains("certificate"),
        "{e}"
    );
}

#[test]
fn a_server_from_another_ca_is_refused() {
    let p = pki();
    // The "switch" presents a controller certificate from the other PKI.
    let d = p.dir.join("other");
    let bad_server = TlsConfig::load(
        &d.join("ctl-privkey.pem"),
        &d.join("ctl-cert.pem"),
        &p.dir.join("pki/controllerca/cacert.pem"),
    )
    .expect("config");
    let ctl = p.controller(false);
    let (l, c) = pair();
    let server = thread::spawn(move || {
        let (s, _) = l.accept().expect("accept");
        let _ = tls::accept(s, &bad_server);
    });
    let e = tls::connect(c, "127.0.0.1", &ctl).expect_err("refused");
    assert!(
        e.contains("UnknownIssuer") || e.contains("certificate"),
        "{e}"
    );
    server.join().expect("server");
}

#[test]
fn garbage_fails_the_handshake_quickly() {
    let p = pki();
    let sw = p.switch();
    let (l, mut c) = pair();
    let server = thread::spawn(move || {
        let (s, _) = l.accept().expect("accept");
        let t0 = std::time::Instant::now();
        let r = tls::accept(s, &sw).map(|_| ());
        (r, t0.elapsed())
    });
    let junk: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let _ = c.write_all(&junk);
    let (r, took) = server.join().expect("server");
    assert!(r.is_err());
    assert!(took < Duration::from_secs(5), "{took:?}");
}
