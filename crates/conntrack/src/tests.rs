//! Tracker-level tests: whole packets through `execute_one`, as the pipeline would.

use crate::ct_state::*;
use crate::key::PacketMeta;
use crate::nat::{Nat, NatRange};
use crate::ops::Flush;
use crate::testpkt::*;
use crate::timeout::TimeoutPolicy;
use crate::tracker::{Config, Conntrack, CtRequest, CtResult};
use packet::csum;
use std::net::{IpAddr, Ipv4Addr};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

fn meta(f: &[u8]) -> PacketMeta {
    let (k, o) = flow_of(f);
    PacketMeta::from_flow(&k, &o).expect("IP")
}

fn run(ct: &Conntrack, f: &mut [u8], req: &CtRequest<'_>, now: u64) -> CtResult {
    let m = meta(f);
    ct.execute_one(f, &m, req, now)
}

fn commit(zone: u16) -> CtRequest<'static> {
    CtRequest {
        zone,
        commit: true,
        ..CtRequest::default()
    }
}

fn plain(zone: u16) -> CtRequest<'static> {
    CtRequest {
        zone,
        ..CtRequest::default()
    }
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

/// Checks every checksum of an IPv4 frame built by `testpkt`.
fn sums_ok(f: &[u8]) -> bool {
    let m = meta(f);
    let l3 = usize::from(m.l3);
    let l4 = usize::from(m.l4.unwrap());
    let ip_ok = m.v6 || csum::ipv4_header_ok(&f[l3..l4]);
    ip_ok && csum::l4_checksum_ok(f, l3, l4, m.nw_proto, m.nw_proto != 1)
}

#[test]
fn tcp_firewall_handshake() {
    let ct = Conntrack::default();
    let mut syn = tcp4(A, B, 1000, 80, 100, 0, SYN, b"");
    // Uncommitted: new, nothing stored.
    assert_eq!(run(&ct, &mut syn, &plain(0), 0).state, TRK | NEW);
    assert_eq!(ct.n_conns(), 0);
    let r = run(&ct, &mut syn, &commit(0), 0);
    assert_eq!(r.state, TRK | NEW);
    assert_eq!(r.orig.unwrap().sport, 1000);
    assert_eq!(ct.n_conns(), 1);
    let mut synack = tcp4(B, A, 80, 1000, 500, 101, SYN | ACK, b"");
    assert_eq!(run(&ct, &mut synack, &plain(0), 1).state, TRK | EST | RPL);
    let mut ack = tcp4(A, B, 1000, 80, 101, 501, ACK, b"");
    assert_eq!(run(&ct, &mut ack, &plain(0), 2).state, TRK | EST);
    let mut data = tcp4(A, B, 1000, 80, 101, 501, ACK | PSH, b"GET /");
    assert_eq!(run(&ct, &mut data, &plain(0), 3).state, TRK | EST);
    // Out of window: invalid.
    let mut bad = tcp4(A, B, 1000, 80, 101 + 0x2000_0000, 501, ACK, b"x");
    assert_eq!(run(&ct, &mut bad, &plain(0), 4).state, TRK | INV);
    // Liberal mode lets it through.
    ct.set_tcp_seq_check(false);
    let mut bad = tcp4(A, B, 1000, 80, 101 + 0x2000_0000, 501, ACK, b"x");
    assert_eq!(run(&ct, &mut bad, &plain(0), 4).state, TRK | EST);
    ct.set_tcp_seq_check(true);
    // The other zone knows nothing of it.
    assert_eq!(run(&ct, &mut ack, &plain(1), 5).state, TRK | NEW);
    // A SYN+ACK cannot open a connection; bad flags are invalid.
    let mut sa = tcp4(B, A, 81, 1000, 1, 1, SYN | ACK, b"");
    assert_eq!(run(&ct, &mut sa, &commit(0), 5).state, TRK | INV);
    let mut sf = tcp4(B, A, 81, 1000, 1, 1, SYN | FIN, b"");
    assert_eq!(run(&ct, &mut sf, &commit(0), 5).state, TRK | INV);
    assert_eq!(ct.n_conns(), 1);
    let d = ct.dump(None, false, 6);
    assert_eq!(
        d,
        "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=1000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=1000),protoinfo=(state=ESTABLISHED)\n"
    );
}

#[test]
fn udp_states_and_timeouts() {
    let ct = Conntrack::default();
    let mut q = udp4(A, B, 5000, 53, b"q");
    assert_eq!(run(&ct, &mut q, &commit(0), 0).state, TRK | NEW);
    // Still new one way.
    assert_eq!(run(&ct, &mut q, &plain(0), 10).state, TRK | NEW);
    let mut a = udp4(B, A, 53, 5000, b"a");
    assert_eq!(run(&ct, &mut a, &plain(0), 20).state, TRK | EST | RPL);
    assert_eq!(run(&ct, &mut q, &plain(0), 30).state, TRK | EST);
    // udp_multiple = 30 s from the last packet.
    let e = &ct.entries(None, 30)[0];
    assert_eq!(e.expires_in, 30_000);
    assert_eq!(ct.sweep(30_029, 1000), 0);
    // Expired: treated as absent, then swept.
    assert_eq!(run(&ct, &mut q, &plain(0), 30_030).state, TRK | NEW);
    assert_eq!(ct.sweep(30_030, 1000), 1);
    assert_eq!(ct.n_conns(), 0);
}

#[test]
fn zone_timeout_policy_applies() {
    let ct = Conntrack::default();
    let tp = TimeoutPolicy::from_pairs([("udp_first", 5)]).unwrap();
    ct.policies().set_zone(3, &tp).unwrap();
    let mut q = udp4(A, B, 5000, 53, b"q");
    run(&ct, &mut q, &commit(3), 0);
    run(&ct, &mut q, &commit(0), 0);
    assert_eq!(ct.sweep(5_000, 10), 1);
    assert_eq!(ct.entries(Some(0), 5_000).len(), 1);
}

#[test]
fn icmp_echo_and_related_errors() {
    let ct = Conntrack::default();
    let mut req = icmp4_echo(A, B, 8, 7, 1);
    assert_eq!(run(&ct, &mut req, &commit(0), 0).state, TRK | NEW);
    let mut rep = icmp4_echo(B, A, 0, 7, 1);
    assert_eq!(run(&ct, &mut rep, &plain(0), 1).state, TRK | EST | RPL);
    // An echo reply without a request is invalid.
    let mut stray = icmp4_echo(B, A, 0, 99, 1);
    assert_eq!(run(&ct, &mut stray, &commit(0), 1).state, TRK | INV);

    // UDP and an ICMP port unreachable about it.
    let mut q = udp4(A, B, 5000, 53, b"question");
    run(&ct, &mut q, &commit(0), 2);
    let mut err = icmp4_error(B, A, 3, 3, &q[14..]);
    assert_eq!(run(&ct, &mut err, &plain(0), 3).state, TRK | REL | RPL);
    // An error about a connection that does not exist is invalid.
    let other = udp4(A, B, 5001, 53, b"question");
    let mut err2 = icmp4_error(B, A, 3, 3, &other[14..]);
    assert_eq!(run(&ct, &mut err2, &plain(0), 3).state, TRK | INV);

    // ICMPv6.
    let (a6, b6) = (v6addr(1), v6addr(2));
    let mut r6 = icmp6_echo(a6, b6, 128, 3, 1);
    assert_eq!(run(&ct, &mut r6, &commit(0), 0).state, TRK | NEW);
    let mut p6 = icmp6_echo(b6, a6, 129, 3, 1);
    assert_eq!(run(&ct, &mut p6, &plain(0), 0).state, TRK | EST | RPL);
    let mut u6 = udp6(a6, b6, 1, 2, b"abcdefgh");
    run(&ct, &mut u6, &commit(0), 0);
    let mut e6 = icmp6_error(b6, a6, 1, 4, &u6[14..]);
    assert_eq!(run(&ct, &mut e6, &plain(0), 0).state, TRK | REL | RPL);
    let d = ct.dump(None, false, 1);
    assert!(
        d.contains("icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=7,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.1,id=7,type=0,code=0)"),
        "{d}"
    );
    assert!(d.contains("icmpv6,orig=(src=2001:db8::1,dst=2001:db8::2,id=3,type=128,code=0)"));
}

#[test]
fn mark_label_zone_and_other_protocols() {
    let ct = Conntrack::default();
    let mut g = other4(A, B, 47, b"gre-ish");
    let req = CtRequest {
        zone: 9,
        commit: true,
        set_mark: Some((0xab, 0xff)),
        set_label: Some((1u128 << 100 | 5, u128::MAX)),
        ..CtRequest::default()
    };
    let r = run(&ct, &mut g, &req, 0);
    assert_eq!((r.state, r.zone, r.mark), (TRK | NEW, 9, 0xab));
    let mut back = other4(B, A, 47, b"x");
    let r = run(&ct, &mut back, &plain(9), 1);
    assert_eq!(
        (r.state, r.mark, r.label),
        (TRK | EST | RPL, 0xab, 1u128 << 100 | 5)
    );
    // Masked update keeps the other bits.
    let req2 = CtRequest {
        zone: 9,
        commit: true,
        set_mark: Some((0x100, 0xf00)),
        ..CtRequest::default()
    };
    assert_eq!(run(&ct, &mut g, &req2, 2).mark, 0x1ab);
    assert_eq!(
        ct.dump(Some(9), false, 3),
        "47,orig=(src=10.0.0.1,dst=10.0.0.2,sport=0,dport=0),reply=(src=10.0.0.2,dst=10.0.0.1,sport=0,dport=0),zone=9,mark=427,labels=0x10000000000000000000000005\n"
    );
    assert_eq!(ct.dump(Some(8), false, 3), "");
}

#[test]
fn limits_refuse_new_but_keep_established() {
    let ct = Conntrack::new(Config {
        shards: 4,
        max_conns: 3,
    });
    for p in 0..3 {
        let mut f = udp4(A, B, 1000 + p, 53, b"q");
        assert_eq!(run(&ct, &mut f, &commit(0), 0).state, TRK | NEW);
    }
    // Full: a flood of new connections is refused (+new, not stored) ...
    for p in 0..100 {
        let mut f = udp4(A, B, 2000 + p, 53, b"q");
        let r = run(&ct, &mut f, &commit(0), 1);
        assert_eq!((r.state, r.orig), (TRK | NEW, None));
    }
    assert_eq!(ct.n_conns(), 3);
    assert_eq!(
        ct.counters.full.load(std::sync::atomic::Ordering::Relaxed),
        100
    );
    // ... and the established ones are still there.
    let mut rep = udp4(B, A, 53, 1000, b"a");
    assert_eq!(run(&ct, &mut rep, &plain(0), 2).state, TRK | EST | RPL);

    // Zone limits.
    ct.set_max_conns(100);
    ct.set_zone_limit(5, Some(1));
    let mut f = udp4(A, B, 1, 2, b"q");
    assert!(run(&ct, &mut f, &commit(5), 0).orig.is_some());
    let mut f2 = udp4(A, B, 1, 3, b"q");
    assert!(run(&ct, &mut f2, &commit(5), 0).orig.is_none());
    assert_eq!(ct.zone_limit(5), (1, 1));
    ct.set_default_limit(4);
    assert!(ct
        .limits_text(&[])
        .starts_with("default limit=4\nzone=5,limit=1,count=1"));
    ct.set_zone_limit(5, None);
    assert!(run(&ct, &mut f2, &commit(5), 0).orig.is_some());
    assert_eq!(ct.max_conns(), 100);
}

#[test]
fn force_and_tcp_restart() {
    let ct = Conntrack::default();
    let mut syn = tcp4(A, B, 1000, 80, 100, 0, SYN, b"");
    run(&ct, &mut syn, &commit(0), 0);
    // With force, a reply-direction packet deletes the connection and starts over.
    let mut rev = udp4(B, A, 80, 1000, b"");
    let _ = rev;
    let mut rsyn = tcp4(B, A, 80, 1000, 7, 0, SYN, b"");
    let req = CtRequest {
        commit: true,
        force: true,
        ..CtRequest::default()
    };
    assert_eq!(run(&ct, &mut rsyn, &req, 1).state, TRK | NEW);
    let e = ct.entries(None, 1);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].orig.sport, 80);
    rev.clear();
}

#[test]
fn flush_variants_and_stats() {
    let ct = Conntrack::default();
    for z in [0u16, 1, 1] {
        let mut f = udp4(A, B, 100 + ct.n_conns() as u16, 53, b"q");
        run(&ct, &mut f, &commit(z), 0);
    }
    let mut t = tcp4(A, B, 1, 2, 3, 0, SYN, b"");
    run(&ct, &mut t, &commit(0), 0);
    let s = ct.stats_text(None, true, 1);
    assert_eq!(
        s,
        "Connections Stats:\n    Total: 4\n  TCP: 1\n    Conn per TCP states:\n\t  [SYN_SENT]=1\n  UDP: 3\n"
    );
    assert_eq!(
        ct.stats_text(Some(1), false, 1),
        "Connections Stats:\n    Total: 2\n  UDP: 2\n"
    );
    let b = ct.bkts_text(0);
    assert!(
        b.starts_with("Total Buckets: 256\nCurrent Connections: 4\n\n+---"),
        "{b}"
    );
    assert!(b.contains("\n   0..  7   | "), "{b}");
    assert_eq!(ct.flush(Flush::Zone(1)), 2);
    // By tuple, from the reply side.
    let mut key = crate::key::ConnKey {
        proto: 6,
        sport: 2,
        dport: 1,
        ..Default::default()
    };
    key.src[..4].copy_from_slice(&B);
    key.dst[..4].copy_from_slice(&A);
    assert_eq!(ct.flush(Flush::Tuple(key)), 1);
    assert_eq!(ct.flush(Flush::All), 1);
    assert_eq!(ct.n_conns(), 0);
    assert_eq!(ct.zone_limit(1).1, 0);
}

#[test]
fn snat_round_trip_with_checksums() {
    let ct = Conntrack::default();
    let range = NatRange::new(v4([1, 2, 3, 4]), v4([1, 2, 3, 4]), Some((40000, 40001))).unwrap();
    let nat = Nat::Src(range);
    let req = CtRequest {
        commit: true,
        nat: Some(&nat),
        ..CtRequest::default()
    };
    let apply = Nat::Apply;
    let fwd = CtRequest {
        nat: Some(&apply),
        ..CtRequest::default()
    };
    let server = [8, 8, 8, 8];
    let mut ports = vec![];
    for client in [A, B] {
        let mut syn = tcp4(client, server, 1234, 80, 1, 0, SYN, b"");
        let r = run(&ct, &mut syn, &req, 0);
        assert_eq!(r.state, TRK | NEW | SNAT);
        assert_eq!(&syn[26..30], &[1, 2, 3, 4]);
        assert!(sums_ok(&syn));
        let sport = u16::from_be_bytes([syn[34], syn[35]]);
        ports.push(sport);
        // The reply comes back to the translated tuple and is translated back.
        let mut synack = tcp4(server, [1, 2, 3, 4], 80, sport, 9, 2, SYN | ACK, b"");
        let r = run(&ct, &mut synack, &fwd, 1);
        assert_eq!(r.state, TRK | EST | RPL | DNAT);
        assert_eq!(synack, tcp4(server, client, 80, 1234, 9, 2, SYN | ACK, b""));
        assert_eq!(r.orig.unwrap().src4(), client);
    }
    ports.sort();
    assert_eq!(ports, vec![40000, 40001]);
    // The range is exhausted: a third client is refused (not committed).
    let mut syn = tcp4([10, 0, 0, 3], server, 1234, 80, 1, 0, SYN, b"");
    let r = run(&ct, &mut syn, &req, 0);
    assert_eq!((r.state, r.orig), (TRK | NEW, None));
    assert_eq!(
        ct.counters
            .nat_exhausted
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    let d = ct.dump(None, false, 2);
    assert!(
        d.contains("reply=(src=8.8.8.8,dst=1.2.3.4,sport=80,dport=4000"),
        "{d}"
    );
}

/// OVN's all-zero SNAT (`nat(src)` without addresses): a connection keeps its tuple and is
/// marked source-NATed; when its reply tuple is already held (here by a load-balanced
/// connection DNATed onto the same tuple), its source port moves instead of the commit
/// failing, as in OVS's userspace tracker.
#[test]
fn zero_snat_keeps_the_tuple_or_moves_the_port() {
    let ct = Conntrack::default();
    let server = [8, 8, 8, 8];
    let keep = Nat::Src(NatRange::keep());
    let zero = CtRequest {
        commit: true,
        nat: Some(&keep),
        ..CtRequest::default()
    };
    let mut syn = tcp4(A, server, 1234, 80, 1, 0, SYN, b"");
    let r = run(&ct, &mut syn, &zero, 0);
    assert_eq!(r.state, TRK | NEW | SNAT);
    assert_eq!(syn, tcp4(A, server, 1234, 80, 1, 0, SYN, b""), "unchanged");
    // B:1234 -> VIP:80 DNATed to the server takes the reply tuple server:80 -> B:1234.
    let lb = Nat::Dst(NatRange::new(v4(server), v4(server), None).unwrap());
    let dnat = CtRequest {
        commit: true,
        nat: Some(&lb),
        ..CtRequest::default()
    };
    let mut syn = tcp4(B, [30, 0, 0, 1], 1234, 80, 1, 0, SYN, b"");
    assert_eq!(run(&ct, &mut syn, &dnat, 0).state, TRK | NEW | DNAT);
    // B:1234 -> server:80 directly: same reply tuple, so the source port moves.
    let mut syn = tcp4(B, server, 1234, 80, 1, 0, SYN, b"");
    let r = run(&ct, &mut syn, &zero, 0);
    assert_eq!(r.state, TRK | NEW | SNAT);
    assert_eq!(&syn[26..30], &B, "the address stays");
    let sport = u16::from_be_bytes([syn[34], syn[35]]);
    assert!(sport >= 1024 && sport != 1234, "{sport}");
    assert!(sums_ok(&syn));
    assert_eq!(ct.n_conns(), 3);
}

#[test]
fn dnat_and_icmp_error_translation() {
    let ct = Conntrack::default();
    let vip = [172, 16, 0, 1];
    let backend = [10, 1, 1, 5];
    let range = NatRange::new(v4(backend), v4(backend), Some((8080, 8080))).unwrap();
    let nat = Nat::Dst(range);
    let req = CtRequest {
        commit: true,
        nat: Some(&nat),
        ..CtRequest::default()
    };
    let mut q = udp4(A, vip, 5555, 53, b"question");
    let r = run(&ct, &mut q, &req, 0);
    assert_eq!(r.state, TRK | NEW | DNAT);
    assert_eq!(q, udp4(A, backend, 5555, 8080, b"question"));
    // The backend's reply is translated back to come from the VIP.
    let apply = Nat::Apply;
    let fwd = CtRequest {
        nat: Some(&apply),
        ..CtRequest::default()
    };
    let mut a = udp4(backend, A, 8080, 5555, b"answer");
    assert_eq!(run(&ct, &mut a, &fwd, 1).state, TRK | EST | RPL | SNAT);
    assert_eq!(a, udp4(vip, A, 53, 5555, b"answer"));
    // An ICMP error from the backend about the translated datagram.
    let mut err = icmp4_error(backend, A, 3, 3, &q[14..]);
    let r = run(&ct, &mut err, &fwd, 2);
    assert_eq!(r.state, TRK | REL | RPL | SNAT);
    let orig = udp4(A, vip, 5555, 53, b"question");
    assert_eq!(err, icmp4_error(vip, A, 3, 3, &orig[14..]));
    // Without `nat` in the action, packets are left alone.
    let mut b = udp4(backend, A, 8080, 5555, b"answer");
    let copy = b.clone();
    assert_eq!(run(&ct, &mut b, &plain(0), 3).state, TRK | EST | RPL);
    assert_eq!(b, copy);
}

#[test]
fn snat_ping_ids_and_ipv6() {
    let ct = Conntrack::default();
    let ext = [1, 2, 3, 4];
    let range = NatRange::new(v4(ext), v4(ext), None).unwrap();
    let nat = Nat::Src(range);
    let req = CtRequest {
        commit: true,
        nat: Some(&nat),
        ..CtRequest::default()
    };
    let dst = [9, 9, 9, 9];
    let mut p1 = icmp4_echo(A, dst, 8, 50, 1);
    let mut p2 = icmp4_echo(B, dst, 8, 50, 1);
    run(&ct, &mut p1, &req, 0);
    run(&ct, &mut p2, &req, 0);
    let id1 = u16::from_be_bytes([p1[38], p1[39]]);
    let id2 = u16::from_be_bytes([p2[38], p2[39]]);
    assert_eq!(id1, 50);
    assert_ne!(id2, 50);
    assert!(sums_ok(&p1) && sums_ok(&p2));
    let apply = Nat::Apply;
    let fwd = CtRequest {
        nat: Some(&apply),
        ..CtRequest::default()
    };
    let mut r2 = icmp4_echo(dst, ext, 0, id2, 1);
    assert_eq!(run(&ct, &mut r2, &fwd, 1).state, TRK | EST | RPL | DNAT);
    assert_eq!(r2, icmp4_echo(dst, B, 0, 50, 1));

    let ext6 = v6addr(0x99);
    let r6 = NatRange::new(IpAddr::from(ext6), IpAddr::from(ext6), None).unwrap();
    let nat6 = Nat::Src(r6);
    let req6 = CtRequest {
        commit: true,
        nat: Some(&nat6),
        ..CtRequest::default()
    };
    let mut t = tcp6(v6addr(1), v6addr(2), 4000, 443, 1, 0, SYN, b"");
    assert_eq!(run(&ct, &mut t, &req6, 0).state, TRK | NEW | SNAT);
    assert_eq!(t, tcp6(ext6, v6addr(2), 4000, 443, 1, 0, SYN, b""));
}

#[test]
fn icmpv6_error_of_a_snat_flow_is_translated_back() {
    let ct = Conntrack::default();
    let (client, server, ext, router) = (v6addr(1), v6addr(2), v6addr(0x99), v6addr(0x77));
    let r = NatRange::new(IpAddr::from(ext), IpAddr::from(ext), Some((5000, 5000))).unwrap();
    let nat = Nat::Src(r);
    let req = CtRequest {
        commit: true,
        nat: Some(&nat),
        ..CtRequest::default()
    };
    let mut q = udp6(client, server, 1111, 53, b"question");
    assert_eq!(run(&ct, &mut q, &req, 0).state, TRK | NEW | SNAT);
    assert_eq!(q, udp6(ext, server, 5000, 53, b"question"));
    // A router past the NAT says "hop limit exceeded" to the external address.
    let mut err = icmp6_error(router, ext, 3, 0, &q[14..]);
    let apply = Nat::Apply;
    let fwd = CtRequest {
        nat: Some(&apply),
        ..CtRequest::default()
    };
    assert_eq!(run(&ct, &mut err, &fwd, 1).state, TRK | REL | RPL | DNAT);
    let orig = udp6(client, server, 1111, 53, b"question");
    assert_eq!(err, icmp6_error(router, client, 3, 0, &orig[14..]));
    assert!(sums_ok(&err));
}

#[test]
fn persistent_snat_keeps_the_address() {
    let ct = Conntrack::default();
    let mut range = NatRange::new(v4([1, 1, 1, 1]), v4([1, 1, 1, 200]), None).unwrap();
    range.persistent = true;
    let nat = Nat::Src(range);
    let req = CtRequest {
        commit: true,
        nat: Some(&nat),
        ..CtRequest::default()
    };
    let mut addrs = std::collections::HashSet::new();
    for p in 0..20 {
        let mut f = udp4(A, B, 2000 + p, 53, b"q");
        run(&ct, &mut f, &req, 0);
        addrs.insert([f[26], f[27], f[28], f[29]]);
    }
    assert_eq!(addrs.len(), 1);
}

#[test]
fn concurrent_poll_threads() {
    let ct = std::sync::Arc::new(Conntrack::new(Config {
        shards: 16,
        max_conns: 1_000_000,
    }));
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let ct = ct.clone();
            std::thread::spawn(move || {
                for i in 0..2000u16 {
                    // Threads 0/1 and 2/3 race on the same connections.
                    let src = [10, t / 2, (i >> 8) as u8, i as u8];
                    let mut f = udp4(src, B, 1000, 53, b"q");
                    let r = run(&ct, &mut f, &commit(0), 0);
                    assert!(r.state == TRK | NEW || r.state == TRK | EST, "{r:?}");
                    let mut back = udp4(B, src, 53, 1000, b"a");
                    let r = run(&ct, &mut back, &plain(0), 1);
                    assert_eq!(r.state & (EST | RPL), EST | RPL);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(ct.n_conns(), 4000);
    assert_eq!(ct.entries(None, 2).len(), 4000);
    // The sweep empties it in budgeted steps.
    let mut removed = 0;
    let mut steps = 0;
    while ct.n_conns() > 0 {
        removed += ct.sweep(u64::MAX, 500);
        steps += 1;
        assert!(steps < 100);
    }
    assert_eq!(removed, 4000);
    assert!(steps > 1);
}

#[test]
fn batch_of_borrowed_frames() {
    let ct = Conntrack::default();
    let mut a = tcp4(A, B, 1, 2, 100, 0, SYN, b"");
    let mut b = vec![0u8; 60]; // not IP
    let mut c = udp4(A, B, 3, 4, b"x");
    let (ma, mc) = (meta(&a), meta(&c));
    let mut batch = [
        crate::CtInput {
            frame: &mut a,
            meta: Some(ma),
        },
        crate::CtInput {
            frame: &mut b,
            meta: None,
        },
        crate::CtInput {
            frame: &mut c,
            meta: Some(mc),
        },
    ];
    let mut out = [CtResult::default(); 3];
    ct.execute(&mut batch, &commit(0), 0, &mut out);
    let states: Vec<u32> = out.iter().map(|r| r.state).collect();
    assert_eq!(states, vec![TRK | NEW, TRK | INV, TRK | NEW]);
    assert_eq!(ct.n_conns(), 2);
}

#[test]
fn racing_commits_never_exceed_the_limits_and_sweep_runs_alongside() {
    let ct = std::sync::Arc::new(Conntrack::new(Config {
        shards: 8,
        max_conns: 1000,
    }));
    ct.set_zone_limit(7, Some(300));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sweeper = {
        let (ct, stop) = (ct.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Nothing has expired at time 1: the sweep only reads.
                n += ct.sweep(1, 64);
            }
            n
        })
    };
    let workers: Vec<_> = (0..3u8)
        .map(|t| {
            let ct = ct.clone();
            std::thread::spawn(move || {
                for i in 0..1500u16 {
                    let src = [11, t, (i >> 8) as u8, i as u8];
                    let mut f = udp4(src, B, 1, 2, b"q");
                    run(&ct, &mut f, &commit(if t == 0 { 7 } else { 0 }), 0);
                    assert!(ct.n_conns() <= 1000);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(sweeper.join().unwrap(), 0);
    assert_eq!(ct.n_conns(), 1000);
    let (limit, in_zone) = ct.zone_limit(7);
    assert!(limit == 300 && in_zone <= 300, "{in_zone}");
    assert_eq!(ct.entries(None, 0).len(), 1000);
    assert_eq!(ct.entries(Some(7), 0).len(), in_zone as usize);
    // Everything expires (udp_first = 60 s) and the counts return to zero.
    while ct.n_conns() > 0 {
        ct.sweep(60_000, 100);
    }
    assert_eq!(ct.zone_limit(7), (300, 0));
}

#[test]
fn invalid_inputs_are_counted() {
    let ct = Conntrack::default();
    let mut f = udp4(A, B, 1, 2, b"x");
    let n = f.len();
    f[n - 1] ^= 0xff; // bad checksum
    assert_eq!(run(&ct, &mut f, &commit(0), 0).state, TRK | INV);
    assert_eq!(ct.n_conns(), 0);
    assert_eq!(
        ct.counters
            .invalid
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// SNAT/DNAT then the reply's reverse translation: the reply reaches the original
        /// sender with exactly the tuple it sent, and every checksum verifies.
        #[test]
        fn nat_round_trip(
            client in any::<[u8; 4]>(), server in any::<[u8; 4]>(),
            sport in 1u16.., dport in 1u16.., ext in any::<[u8; 4]>(),
            pmin in 1u16..60000, plen in 0u16..100, snat in any::<bool>(),
            proto in 0u8..3, payload in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            prop_assume!(client != server && ext != server && ext != client);
            let ct = Conntrack::default();
            let range = NatRange::new(v4(ext), v4(ext), Some((pmin, pmin + plen))).unwrap();
            let nat = if snat { Nat::Src(range) } else { Nat::Dst(range) };
            let req = CtRequest { commit: true, nat: Some(&nat), ..CtRequest::default() };
            let mut f = match proto {
                0 => tcp4(client, server, sport, dport, 1, 0, SYN, &payload),
                1 => udp4(client, server, sport, dport, &payload),
                _ => icmp4_echo(client, server, 8, sport, dport),
            };
            let r = run(&ct, &mut f, &req, 0);
            prop_assert_eq!(r.state & (NEW | TRK), NEW | TRK);
            prop_assert!(sums_ok(&f));
            // What the far side sees, reversed, is the reply.
            let m = meta(&f);
            let crate::key::Parsed::Conn { key: sent, .. } = crate::key::parse(&f, &m, 0) else {
                panic!("translated packet does not parse");
            };
            let mut reply = match proto {
                0 => tcp4(sent.dst4(), sent.src4(), sent.dport, sent.sport, 9, 2, SYN | ACK, &payload),
                1 => udp4(sent.dst4(), sent.src4(), sent.dport, sent.sport, &payload),
                _ => icmp4_echo(sent.dst4(), sent.src4(), 0, sent.sport, dport),
            };
            let apply = Nat::Apply;
            let r = run(&ct, &mut reply, &CtRequest { nat: Some(&apply), ..CtRequest::default() }, 1);
            prop_assert_eq!(r.state & (EST | RPL), EST | RPL);
            prop_assert!(sums_ok(&reply));
            let want = match proto {
                0 => tcp4(server, client, dport, sport, 9, 2, SYN | ACK, &payload),
                1 => udp4(server, client, dport, sport, &payload),
                _ => icmp4_echo(server, client, 0, sport, dport),
            };
            prop_assert_eq!(reply, want);
        }

        /// Arbitrary segments in both directions never panic and keep the table sane.
        #[test]
        fn tcp_never_panics(
            segs in proptest::collection::vec(
                (any::<bool>(), any::<u32>(), any::<u32>(), 0u16..0x200, any::<u16>(), 0usize..30),
                1..40),
            liberal in any::<bool>(),
        ) {
            let ct = Conntrack::default();
            ct.set_tcp_seq_check(!liberal);
            for (i, (rev, seq, ack, flags, win, len)) in segs.into_iter().enumerate() {
                let payload = vec![0x55u8; len];
                let (s, d, sp, dp) = if rev { (B, A, 80, 1000) } else { (A, B, 1000, 80) };
                let mut f = tcp4_full(s, d, sp, dp, seq, ack, flags, win, None, &payload);
                let r = run(&ct, &mut f, &commit(0), i as u64);
                prop_assert!(r.state & TRK != 0);
                prop_assert!(ct.n_conns() <= 1);
            }
        }
    }
}
