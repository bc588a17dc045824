//! The FTP and TFTP helpers through `execute_one`: expectations made by control packets,
//! the related connections' `ct_state`, mark, label and original tuple, the bounds.

use crate::alg::{Helper, EXPECT_TTL_MS};
use crate::ct_state::*;
use crate::key::PacketMeta;
use crate::ops::Flush;
use crate::testpkt::*;
use crate::tracker::{Conntrack, CtRequest, CtResult};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const ACKF: u16 = ACK | PSH;

fn run(ct: &Conntrack, f: &mut [u8], req: &CtRequest<'_>, now: u64) -> CtResult {
    let (k, o) = flow_of(f);
    let m = PacketMeta::from_flow(&k, &o).expect("IP");
    ct.execute_one(f, &m, req, now)
}

fn plain() -> CtRequest<'static> {
    CtRequest::default()
}

fn commit_alg(alg: Helper) -> CtRequest<'static> {
    CtRequest {
        commit: true,
        alg,
        ..CtRequest::default()
    }
}

/// An FTP control connection A:40000 -> B:21 committed with `req`, handshake done. Returns
/// the next sequence numbers of client and server.
fn control(ct: &Conntrack, req: &CtRequest<'_>) -> (u32, u32) {
    let r = run(ct, &mut tcp4(A, B, 40000, 21, 100, 0, SYN, b""), req, 0);
    assert_eq!(r.state, TRK | NEW);
    let r = run(
        ct,
        &mut tcp4(B, A, 21, 40000, 500, 101, SYN | ACK, b""),
        &plain(),
        1,
    );
    assert_eq!(r.state, TRK | EST | RPL);
    let r = run(
        ct,
        &mut tcp4(A, B, 40000, 21, 101, 501, ACK, b""),
        &plain(),
        2,
    );
    assert_eq!(r.state, TRK | EST);
    (101, 501)
}

/// The server's message `msg` on the control connection; its verdict.
fn from_server(ct: &Conntrack, seqs: &mut (u32, u32), msg: &[u8], now: u64) -> u32 {
    let mut f = tcp4(B, A, 21, 40000, seqs.1, seqs.0, ACKF, msg);
    seqs.1 += msg.len() as u32;
    run(ct, &mut f, &plain(), now).state
}

/// The client's message `msg` on the control connection; its verdict.
fn from_client(ct: &Conntrack, seqs: &mut (u32, u32), msg: &[u8], now: u64) -> u32 {
    let mut f = tcp4(A, B, 40000, 21, seqs.0, seqs.1, ACKF, msg);
    seqs.0 += msg.len() as u32;
    run(ct, &mut f, &plain(), now).state
}

#[test]
fn passive_data_connection_is_related() {
    let ct = Conntrack::default();
    let mut s = control(&ct, &commit_alg(Helper::Ftp));
    let st = from_server(
        &ct,
        &mut s,
        b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n",
        3,
    );
    assert_eq!(st, TRK | EST | RPL);
    assert_eq!(ct.expectations(), 1);
    // Uncommitted: +new+rel, the parent's tuple.
    let r = run(
        &ct,
        &mut tcp4(A, B, 40001, 1025, 7, 0, SYN, b""),
        &plain(),
        4,
    );
    assert_eq!(r.state, TRK | NEW | REL);
    assert_eq!(r.orig.map(|k| k.dport), Some(21));
    // Committed, then its packets are +est+rel both ways.
    let c = CtRequest {
        commit: true,
        ..CtRequest::default()
    };
    let r = run(&ct, &mut tcp4(A, B, 40001, 1025, 7, 0, SYN, b""), &c, 5);
    assert_eq!(r.state, TRK | NEW | REL);
    let r = run(
        &ct,
        &mut tcp4(B, A, 1025, 40001, 900, 8, SYN | ACK, b""),
        &plain(),
        6,
    );
    assert_eq!(r.state, TRK | EST | REL | RPL);
    assert_eq!(r.orig.map(|k| (k.sport, k.dport)), Some((40000, 21)));
    let r = run(
        &ct,
        &mut tcp4(A, B, 40001, 1025, 8, 901, ACK, b""),
        &plain(),
        7,
    );
    assert_eq!(r.state, TRK | EST | REL);
    // Another source port matches too: the expectation stays while the parent lives.
    let r = run(
        &ct,
        &mut tcp4(A, B, 40005, 1025, 7, 0, SYN, b""),
        &plain(),
        8,
    );
    assert_eq!(r.state, TRK | NEW | REL);
    // Another port, or the other direction, does not.
    let r = run(
        &ct,
        &mut tcp4(A, B, 40001, 1026, 7, 0, SYN, b""),
        &plain(),
        8,
    );
    assert_eq!(r.state, TRK | NEW);
    let r = run(
        &ct,
        &mut tcp4(B, A, 40001, 1025, 7, 0, SYN, b""),
        &plain(),
        8,
    );
    assert_eq!(r.state, TRK | NEW);
    // The dump names the control connection's helper.
    let d = ct.dump(None, false, 9);
    assert!(
        d.contains("dport=40000),protoinfo=(state=ESTABLISHED),helper=ftp"),
        "{d}"
    );
    assert_eq!(d.matches("helper=").count(), 1, "{d}");
}

#[test]
fn active_data_connection_is_related() {
    let ct = Conntrack::default();
    let mut s = control(&ct, &commit_alg(Helper::Ftp));
    // 156 * 256 + 74 = 40010.
    let st = from_client(&ct, &mut s, b"PORT 10,0,0,1,156,74\r\n", 3);
    assert_eq!(st, TRK | EST);
    let r = run(&ct, &mut tcp4(B, A, 20, 40010, 7, 0, SYN, b""), &plain(), 4);
    assert_eq!(r.state, TRK | NEW | REL);
    // Not from the client's side.
    let r = run(&ct, &mut tcp4(A, B, 20, 40010, 7, 0, SYN, b""), &plain(), 4);
    assert_eq!(r.state, TRK | NEW);
}

#[test]
fn without_helper_nothing_is_expected() {
    let ct = Conntrack::default();
    let c = CtRequest {
        commit: true,
        ..CtRequest::default()
    };
    let mut s = control(&ct, &c);
    from_server(
        &ct,
        &mut s,
        b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n",
        3,
    );
    from_client(&ct, &mut s, b"PORT 10,0,0,1,156,74\r\n", 4);
    assert_eq!(ct.expectations(), 0);
    let r = run(
        &ct,
        &mut tcp4(A, B, 40001, 1025, 7, 0, SYN, b""),
        &plain(),
        5,
    );
    assert_eq!(r.state, TRK | NEW);
    assert!(!ct.dump(None, false, 6).contains("helper"));
}

#[test]
fn bad_messages_are_invalid_and_expect_nothing() {
    let ct = Conntrack::default();
    let mut s = control(&ct, &commit_alg(Helper::Ftp));
    // Another host's address (a bounce): invalid.
    let st = from_client(&ct, &mut s, b"PORT 10,0,0,9,156,74\r\n", 3);
    assert_eq!(st, TRK | EST | INV);
    let st = from_server(
        &ct,
        &mut s,
        b"227 Entering Passive Mode (10,0,0,9,4,1).\r\n",
        4,
    );
    assert_eq!(st, TRK | EST | RPL | INV);
    // Malformed: invalid.
    let st = from_client(&ct, &mut s, b"PORT 10,0,0,1,999,1\r\n", 5);
    assert_eq!(st, TRK | EST | INV);
    // Anything else passes untouched.
    assert_eq!(from_client(&ct, &mut s, b"RETR file\r\n", 6), TRK | EST);
    assert_eq!(ct.expectations(), 0);
    // The connection is unharmed: a good command still works.
    assert_eq!(
        from_client(&ct, &mut s, b"PORT 10,0,0,1,156,74\r\n", 7),
        TRK | EST
    );
    assert_eq!(ct.expectations(), 1);
}

#[test]
fn mark_and_label_come_from_the_parent() {
    let ct = Conntrack::default();
    let c = CtRequest {
        commit: true,
        alg: Helper::Ftp,
        set_mark: Some((5, u32::MAX)),
        set_label: Some((0x77, u128::MAX)),
        ..CtRequest::default()
    };
    let mut s = control(&ct, &c);
    from_server(
        &ct,
        &mut s,
        b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n",
        3,
    );
    let c2 = CtRequest {
        commit: true,
        set_mark: Some((9, u32::MAX)),
        ..CtRequest::default()
    };
    let r = run(&ct, &mut tcp4(A, B, 40001, 1025, 7, 0, SYN, b""), &c2, 4);
    assert_eq!((r.state, r.mark, r.label), (TRK | NEW | REL, 5, 0x77));
    let r = run(&ct, &mut tcp4(A, B, 40001, 1025, 7, 0, SYN, b""), &c2, 5);
    assert_eq!(r.mark, 5);
}

#[test]
fn expectations_lapse_with_parent_and_time() {
    let ct = Conntrack::default();
    let mut s = control(&ct, &commit_alg(Helper::Ftp));
    from_server(
        &ct,
        &mut s,
        b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n",
        3,
    );
    let syn = || tcp4(A, B, 40001, 1025, 7, 0, SYN, b"");
    // After the time to live.
    let late = 3 + EXPECT_TTL_MS;
    assert_eq!(run(&ct, &mut syn(), &plain(), late).state, TRK | NEW);
    // Announced again, it holds; gone with its parent.
    from_server(
        &ct,
        &mut s,
        b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n",
        10,
    );
    assert_eq!(run(&ct, &mut syn(), &plain(), 11).state, TRK | NEW | REL);
    let parent = tcp4(A, B, 40000, 21, 0, 0, SYN, b"");
    let (k, o) = flow_of(&parent);
    let m = PacketMeta::from_flow(&k, &o).unwrap();
    let key = match crate::key::parse(&parent, &m, 0) {
        crate::key::Parsed::Conn { key, .. } => key,
        _ => panic!("parse"),
    };
    assert_eq!(ct.flush(Flush::Tuple(key)), 1);
    assert_eq!(run(&ct, &mut syn(), &plain(), 12).state, TRK | NEW);
    ct.sweep(13, 1000);
    assert_eq!(ct.expectations(), 0);
}

#[test]
fn the_table_is_bounded() {
    let ct = Conntrack::default();
    ct.set_max_expectations(2);
    let mut s = control(&ct, &commit_alg(Helper::Ftp));
    for p in 1..=3u8 {
        let m = format!("227 Entering Passive Mode (10,0,0,2,4,{p}).\r\n");
        from_server(&ct, &mut s, m.as_bytes(), 3);
    }
    assert_eq!(ct.expectations(), 2);
    assert_eq!(
        ct.expect.refused.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    let r = run(
        &ct,
        &mut tcp4(A, B, 40001, 1024 + 3, 7, 0, SYN, b""),
        &plain(),
        4,
    );
    assert_eq!(r.state, TRK | NEW);
    let r = run(
        &ct,
        &mut tcp4(A, B, 40001, 1024 + 2, 7, 0, SYN, b""),
        &plain(),
        4,
    );
    assert_eq!(r.state, TRK | NEW | REL);
}

#[test]
fn zones_are_apart() {
    let ct = Conntrack::default();
    let mut s = control(&ct, &commit_alg(Helper::Ftp));
    from_server(
        &ct,
        &mut s,
        b"227 Entering Passive Mode (10,0,0,2,4,1).\r\n",
        3,
    );
    let z = CtRequest {
        zone: 7,
        ..CtRequest::default()
    };
    let r = run(&ct, &mut tcp4(A, B, 40001, 1025, 7, 0, SYN, b""), &z, 4);
    assert_eq!(r.state, TRK | NEW);
}

#[test]
fn ipv6_eprt_and_229() {
    let ct = Conntrack::default();
    let (a, b) = (v6addr(1), v6addr(2));
    let req = commit_alg(Helper::Ftp);
    run(&ct, &mut tcp6(a, b, 40000, 21, 100, 0, SYN, b""), &req, 0);
    run(
        &ct,
        &mut tcp6(b, a, 21, 40000, 500, 101, SYN | ACK, b""),
        &plain(),
        1,
    );
    let m = format!("EPRT |2|{}|40010|\r\n", std::net::Ipv6Addr::from(a));
    let r = run(
        &ct,
        &mut tcp6(a, b, 40000, 21, 101, 501, ACKF, m.as_bytes()),
        &plain(),
        2,
    );
    assert_eq!(r.state, TRK | EST);
    let seq = 101 + m.len() as u32;
    let e = b"229 Entering Extended Passive Mode (|||6446|)\r\n";
    let r = run(
        &ct,
        &mut tcp6(b, a, 21, 40000, 501, seq, ACKF, e),
        &plain(),
        3,
    );
    assert_eq!(r.state, TRK | EST | RPL);
    let r = run(&ct, &mut tcp6(b, a, 20, 40010, 7, 0, SYN, b""), &plain(), 4);
    assert_eq!(r.state, TRK | NEW | REL);
    let r = run(
        &ct,
        &mut tcp6(a, b, 40011, 6446, 7, 0, SYN, b""),
        &plain(),
        4,
    );
    assert_eq!(r.state, TRK | NEW | REL);
    // An EPRT naming another host.
    let m = format!("EPRT |2|{}|40012|\r\n", std::net::Ipv6Addr::from(v6addr(9)));
    let seq2 = seq;
    let r = run(
        &ct,
        &mut tcp6(
            a,
            b,
            40000,
            21,
            seq2,
            501 + e.len() as u32,
            ACKF,
            m.as_bytes(),
        ),
        &plain(),
        5,
    );
    assert_eq!(r.state, TRK | EST | INV);
}

#[test]
fn tftp_reply_from_any_port_is_related() {
    let ct = Conntrack::default();
    let r = run(
        &ct,
        &mut udp4(A, B, 5000, 69, b"\0\x01f\0octet\0"),
        &commit_alg(Helper::Tftp),
        0,
    );
    assert_eq!(r.state, TRK | NEW);
    assert_eq!(ct.expectations(), 1);
    let c = CtRequest {
        commit: true,
        ..CtRequest::default()
    };
    let r = run(&ct, &mut udp4(B, A, 6000, 5000, b"\0\x03\0\x01data"), &c, 1);
    assert_eq!(r.state, TRK | NEW | REL);
    let r = run(
        &ct,
        &mut udp4(A, B, 5000, 6000, b"\0\x04\0\x01"),
        &plain(),
        2,
    );
    assert_eq!(r.state, TRK | EST | REL | RPL);
    let r = run(
        &ct,
        &mut udp4(B, A, 6000, 5000, b"\0\x03\0\x02"),
        &plain(),
        3,
    );
    assert_eq!(r.state, TRK | EST | REL);
    assert!(ct
        .dump(None, false, 4)
        .contains("sport=69,dport=5000),helper=tftp"));
    // Without the helper: new.
    let ct = Conntrack::default();
    run(&ct, &mut udp4(A, B, 5000, 69, b"x"), &c, 0);
    let r = run(&ct, &mut udp4(B, A, 6000, 5000, b"y"), &plain(), 1);
    assert_eq!(r.state, TRK | NEW);
}

#[test]
fn helper_only_for_its_protocol() {
    let ct = Conntrack::default();
    run(
        &ct,
        &mut udp4(A, B, 5000, 21, b"x"),
        &commit_alg(Helper::Ftp),
        0,
    );
    run(
        &ct,
        &mut tcp4(A, B, 5000, 69, 1, 0, SYN, b""),
        &commit_alg(Helper::Tftp),
        0,
    );
    assert!(!ct.dump(None, false, 1).contains("helper"));
    assert_eq!(ct.expectations(), 0);
}
