//! The FTP helper under NAT through `execute_one`: messages rewritten to the translated
//! address (the frame growing or shrinking), the sequence skew on later segments both
//! ways, and data connections translated as their expectation says.

use crate::alg::ftp_nat::apply_resize;
use crate::alg::Helper;
use crate::ct_state::*;
use crate::key::PacketMeta;
use crate::nat::{Nat, NatRange};
use crate::testpkt::*;
use crate::tracker::{Conntrack, CtRequest, CtResult};
use packet::csum;
use std::net::{IpAddr, Ipv4Addr};

const ACKF: u16 = ACK | PSH;

fn run(ct: &Conntrack, mut f: Vec<u8>, req: &CtRequest<'_>, now: u64) -> (CtResult, Vec<u8>) {
    let (k, o) = flow_of(&f);
    let m = PacketMeta::from_flow(&k, &o).expect("IP");
    let r = ct.execute_one(&mut f, &m, req, now);
    apply_resize(&mut f, r.resize);
    assert!(csum::ipv4_header_ok(&f[14..34]));
    assert!(csum::l4_checksum_ok(&f, 14, 34, 6, true));
    assert_eq!(
        usize::from(u16::from_be_bytes([f[16], f[17]])) + 14,
        f.len()
    );
    (r, f)
}

fn nat_only(nat: &Nat) -> CtRequest<'_> {
    CtRequest {
        nat: Some(nat),
        ..CtRequest::default()
    }
}

fn commit_nat(nat: &Nat, alg: Helper) -> CtRequest<'_> {
    CtRequest {
        commit: true,
        nat: Some(nat),
        alg,
        ..CtRequest::default()
    }
}

fn one(a: [u8; 4]) -> NatRange {
    let ip = IpAddr::V4(Ipv4Addr::from(a));
    NatRange::new(ip, ip, None).expect("range")
}

fn addrs(f: &[u8]) -> ([u8; 4], [u8; 4]) {
    (
        f[26..30].try_into().expect("4"),
        f[30..34].try_into().expect("4"),
    )
}

fn seq_ack(f: &[u8]) -> (u32, u32) {
    let w = |at: usize| u32::from_be_bytes(f[at..at + 4].try_into().expect("4"));
    (w(38), w(42))
}

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];
const OUTSIDE: [u8; 4] = [192, 168, 100, 200];

/// Active FTP from a client behind SNAT: the `PORT` command names the translated address
/// (the frame grows by 7 bytes), later segments carry the skew, the server's data
/// connection reaches the client.
#[test]
fn active_through_snat() {
    let ct = Conntrack::default();
    let snat = Nat::Src(one(OUTSIDE));
    let apply = Nat::Apply;
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, SERVER, 40000, 21, 100, 0, SYN, b""),
        &commit_nat(&snat, Helper::Ftp),
        0,
    );
    assert_eq!(r.state, TRK | NEW | SNAT);
    assert_eq!(addrs(&f), (OUTSIDE, SERVER));
    let sport = u16::from_be_bytes([f[34], f[35]]);
    let (r, f) = run(
        &ct,
        tcp4(SERVER, OUTSIDE, 21, sport, 500, 101, SYN | ACK, b""),
        &nat_only(&apply),
        1,
    );
    assert_eq!(r.state, TRK | EST | RPL | DNAT);
    assert_eq!(addrs(&f), (SERVER, CLIENT));
    run(
        &ct,
        tcp4(CLIENT, SERVER, 40000, 21, 101, 501, ACK, b""),
        &nat_only(&apply),
        2,
    );
    // PORT 10,0,0,1 -> 192,168,100,200: 7 bytes more.
    let msg = b"PORT 10,0,0,1,195,80\r\n";
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, SERVER, 40000, 21, 101, 501, ACKF, msg),
        &nat_only(&apply),
        3,
    );
    assert_eq!(r.state, TRK | EST | SNAT);
    assert_eq!(r.resize, 7);
    assert_eq!(&f[54..], b"PORT 192,168,100,200,195,80\r\n");
    assert_eq!(seq_ack(&f), (101, 501));
    // The server acknowledges the longer message; the client sees its own numbers.
    let (r, f) = run(
        &ct,
        tcp4(
            SERVER,
            OUTSIDE,
            21,
            sport,
            501,
            101 + 29,
            ACKF,
            b"200 OK\r\n",
        ),
        &nat_only(&apply),
        4,
    );
    assert_eq!(r.state, TRK | EST | RPL | DNAT);
    assert_eq!(seq_ack(&f), (501, 101 + 22));
    // The client's next segment goes out 7 further on.
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, SERVER, 40000, 21, 123, 509, ACKF, b"LIST\r\n"),
        &nat_only(&apply),
        5,
    );
    assert_eq!(r.state, TRK | EST | SNAT);
    assert_eq!(seq_ack(&f), (130, 509));
    assert_eq!(r.resize, 0);
    // The server's data connection to the advertised address reaches the client.
    let (r, f) = run(
        &ct,
        tcp4(SERVER, OUTSIDE, 20, 50000, 9000, 0, SYN, b""),
        &commit_nat(&apply, Helper::None),
        6,
    );
    assert_eq!(r.state, TRK | NEW | REL | DNAT);
    assert_eq!(addrs(&f), (SERVER, CLIENT));
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, SERVER, 50000, 20, 7000, 9001, SYN | ACK, b""),
        &nat_only(&apply),
        7,
    );
    assert_eq!(r.state, TRK | EST | REL | RPL | SNAT);
    assert_eq!(addrs(&f), (OUTSIDE, SERVER));
}

/// Passive FTP to a server behind DNAT: the `227` reply names the address the client
/// connected to (the frame shrinks by 3 bytes), the skew moves the client's
/// acknowledgements, the client's data connection reaches the server.
#[test]
fn passive_to_dnat_server() {
    let ct = Conntrack::default();
    let vip = [1, 2, 3, 4];
    let real = [172, 16, 1, 2];
    let dnat = Nat::Dst(one(real));
    let apply = Nat::Apply;
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, vip, 40000, 21, 100, 0, SYN, b""),
        &commit_nat(&dnat, Helper::Ftp),
        0,
    );
    assert_eq!(r.state, TRK | NEW | DNAT);
    assert_eq!(addrs(&f), (CLIENT, real));
    run(
        &ct,
        tcp4(real, CLIENT, 21, 40000, 500, 101, SYN | ACK, b""),
        &nat_only(&apply),
        1,
    );
    run(
        &ct,
        tcp4(CLIENT, vip, 40000, 21, 101, 501, ACK, b""),
        &nat_only(&apply),
        2,
    );
    let msg = b"227 Entering Passive Mode (172,16,1,2,4,1).\r\n";
    let (r, f) = run(
        &ct,
        tcp4(real, CLIENT, 21, 40000, 501, 101, ACKF, msg),
        &nat_only(&apply),
        3,
    );
    assert_eq!(r.state, TRK | EST | RPL | SNAT);
    assert_eq!(r.resize, -3);
    assert_eq!(addrs(&f), (vip, CLIENT));
    assert_eq!(&f[54..], b"227 Entering Passive Mode (1,2,3,4,4,1).\r\n");
    let sent = msg.len() as u32 - 3;
    // The client acknowledges the shorter message; the server sees its own numbers.
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, vip, 40000, 21, 101, 501 + sent, ACK, b""),
        &nat_only(&apply),
        4,
    );
    assert_eq!(r.state, TRK | EST | DNAT);
    assert_eq!(seq_ack(&f), (101, 501 + msg.len() as u32));
    // The server's next segment goes out 3 back.
    let next = 501 + msg.len() as u32;
    let (r, f) = run(
        &ct,
        tcp4(real, CLIENT, 21, 40000, next, 101, ACKF, b"150 Here\r\n"),
        &nat_only(&apply),
        5,
    );
    assert_eq!(r.state, TRK | EST | RPL | SNAT);
    assert_eq!(seq_ack(&f), (next - 3, 101));
    // The data connection to the advertised address reaches the real server.
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, vip, 40001, 1025, 7, 0, SYN, b""),
        &commit_nat(&apply, Helper::None),
        6,
    );
    assert_eq!(r.state, TRK | NEW | REL | DNAT);
    assert_eq!(addrs(&f), (CLIENT, real));
    let (r, f) = run(
        &ct,
        tcp4(real, CLIENT, 1025, 40001, 900, 8, SYN | ACK, b""),
        &nat_only(&apply),
        7,
    );
    assert_eq!(r.state, TRK | EST | REL | RPL | SNAT);
    assert_eq!(addrs(&f), (vip, CLIENT));
}

/// Without `nat` on the action, nothing is rewritten and no skew applies.
#[test]
fn no_rewrite_without_nat() {
    let ct = Conntrack::default();
    let c = CtRequest {
        commit: true,
        alg: Helper::Ftp,
        ..CtRequest::default()
    };
    let plain = CtRequest::default();
    run(
        &ct,
        tcp4(CLIENT, SERVER, 40000, 21, 100, 0, SYN, b""),
        &c,
        0,
    );
    run(
        &ct,
        tcp4(SERVER, CLIENT, 21, 40000, 500, 101, SYN | ACK, b""),
        &plain,
        1,
    );
    let msg = b"PORT 10,0,0,1,195,80\r\n";
    let (r, f) = run(
        &ct,
        tcp4(CLIENT, SERVER, 40000, 21, 101, 501, ACKF, msg),
        &plain,
        2,
    );
    assert_eq!(r.state, TRK | EST);
    assert_eq!(r.resize, 0);
    assert_eq!(&f[54..], msg);
    assert_eq!(ct.expectations(), 1);
}

/// `nat` on the action of a connection committed without NAT: nothing is translated, so a
/// message is left as sent, even an `EPRT` whose address written back in its short form
/// would change the frame's length; the datapath relies on a length change coming only
/// with translated addresses.
#[test]
fn no_rewrite_on_an_untranslated_connection() {
    let ct = Conntrack::default();
    let (a, b) = (v6addr(1), v6addr(2));
    let c = CtRequest {
        commit: true,
        alg: Helper::Ftp,
        ..CtRequest::default()
    };
    let apply = Nat::Apply;
    let mut syn = tcp6(a, b, 40000, 21, 100, 0, SYN, b"");
    let (k, o) = flow_of(&syn);
    let m = PacketMeta::from_flow(&k, &o).expect("IP");
    ct.execute_one(&mut syn, &m, &c, 0);
    let mut syn_ack = tcp6(b, a, 21, 40000, 500, 101, SYN | ACK, b"");
    let (k, o) = flow_of(&syn_ack);
    let m = PacketMeta::from_flow(&k, &o).expect("IP");
    ct.execute_one(&mut syn_ack, &m, &nat_only(&apply), 1);
    // 2001:db8::1 written out in full: "2001:db8::1" is 28 bytes shorter.
    let msg = b"EPRT |2|2001:0db8:0000:0000:0000:0000:0000:0001|40010|\r\n";
    let mut f = tcp6(a, b, 40000, 21, 101, 501, ACKF, msg);
    let sent = f.clone();
    let (k, o) = flow_of(&f);
    let m = PacketMeta::from_flow(&k, &o).expect("IP");
    let r = ct.execute_one(&mut f, &m, &nat_only(&apply), 2);
    assert_eq!(r.state, TRK | EST);
    assert_eq!(r.resize, 0);
    assert_eq!(f, sent);
    assert_eq!(ct.expectations(), 1);
}
