//! Settled connections ([`crate::table::SETTLED`]): their packets are tracked without the
//! connection's mutex, with the verdicts, marks and expiry the locked path gives.

use crate::ct_state::*;
use crate::key::{ConnKey, PacketMeta};
use crate::table::{Conn, SETTLED};
use crate::testpkt::*;
use crate::tracker::{Conntrack, CtRequest, CtResult};
use std::sync::Arc;

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

fn track(t: &Conntrack, f: &[u8], req: &CtRequest<'_>, now: u64) -> CtResult {
    let mut f = f.to_vec();
    let (k, o) = flow_of(&f);
    let m = PacketMeta::from_flow(&k, &o).expect("IP");
    t.execute_one(&mut f, &m, req, now)
}

fn conn_of(t: &Conntrack, key: &ConnKey) -> Arc<Conn> {
    t.table
        .lookup(key, t.table.hash(key), |c, _| c.clone())
        .expect("connection in the table")
}

fn udp_key(zone: u16) -> ConnKey {
    let mut key = ConnKey {
        sport: 1000,
        dport: 53,
        zone,
        proto: 17,
        ..ConnKey::default()
    };
    key.src[..4].copy_from_slice(&A);
    key.dst[..4].copy_from_slice(&B);
    key
}

/// A UDP connection settles once seen both ways (not before); then its packets are
/// tracked while the test holds its mutex (the locked path would wait forever), with the
/// locked path's verdicts, and its expiry moves with them.
#[test]
fn a_settled_connection_is_tracked_without_its_mutex() {
    let t = Arc::new(Conntrack::default());
    let commit = CtRequest {
        commit: true,
        ..CtRequest::default()
    };
    let plain = CtRequest::default();
    let (q, r) = (udp4(A, B, 1000, 53, b"q"), udp4(B, A, 53, 1000, b"r"));
    assert_eq!(track(&t, &q, &commit, 1000).state, TRK | NEW);
    let c = conn_of(&t, &udp_key(0));
    assert_eq!(c.fast() & SETTLED, 0);
    assert_eq!(track(&t, &q, &plain, 1000).state, TRK | NEW);
    assert_eq!(c.fast() & SETTLED, 0);
    assert_eq!(track(&t, &r, &plain, 2000).state, TRK | EST | RPL);
    assert_ne!(c.fast() & SETTLED, 0);
    let bidir = t
        .policies()
        .timeout_ms(0, crate::timeout::Class::OtherBidir);
    assert_eq!(c.expires(), 2000 + bidir);
    let guard = c.st.lock();
    let (tx, rx) = std::sync::mpsc::channel();
    let t2 = Arc::clone(&t);
    let worker = std::thread::spawn(move || {
        let a = track(&t2, &q, &CtRequest::default(), 5000);
        let b = track(&t2, &r, &CtRequest::default(), 6000);
        let _ = tx.send((a, b));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(30));
    drop(guard);
    let _ = worker.join();
    let (a, b) = got.expect("a settled connection's packets wait for its mutex");
    assert_eq!(a.state, TRK | EST);
    assert_eq!(b.state, TRK | EST | RPL);
    assert_eq!(a.orig, Some(udp_key(0)));
    assert_eq!(c.expires(), 6000 + bidir);
}

/// What changes a settled connection still goes through its mutex: a mark set by a commit
/// is published with the flag and reported by the next packets; a label unsettles the
/// connection (its packets report it from the locked path); `force` in the reply direction
/// ends it; an expired connection is not revived.
#[test]
fn changes_to_a_settled_connection_take_the_locked_path() {
    let t = Conntrack::default();
    let commit = CtRequest {
        commit: true,
        ..CtRequest::default()
    };
    let plain = CtRequest::default();
    let (q, r) = (udp4(A, B, 1000, 53, b"q"), udp4(B, A, 53, 1000, b"r"));
    track(&t, &q, &commit, 1000);
    track(&t, &r, &plain, 1000);
    let c = conn_of(&t, &udp_key(0));
    assert_ne!(c.fast() & SETTLED, 0);
    let mark = CtRequest {
        commit: true,
        set_mark: Some((7, u32::MAX)),
        ..CtRequest::default()
    };
    assert_eq!(track(&t, &q, &mark, 1100).mark, 7);
    assert_eq!(c.fast(), SETTLED | 7 << 32);
    let res = track(&t, &r, &plain, 1200);
    assert_eq!((res.state, res.mark, res.label), (TRK | EST | RPL, 7, 0));
    let label = CtRequest {
        commit: true,
        set_label: Some((0x55, u128::MAX)),
        ..CtRequest::default()
    };
    assert_eq!(track(&t, &q, &label, 1300).label, 0x55);
    assert_eq!(c.fast(), 0);
    let res = track(&t, &q, &plain, 1400);
    assert_eq!((res.state, res.mark, res.label), (TRK | EST, 7, 0x55));
    // Another settled connection, ended by `force` from the reply direction.
    let (q2, r2) = (udp4(A, B, 2000, 53, b"q"), udp4(B, A, 53, 2000, b"r"));
    track(&t, &q2, &commit, 1000);
    track(&t, &r2, &plain, 1000);
    let mut k2 = udp_key(0);
    k2.sport = 2000;
    let c2 = conn_of(&t, &k2);
    assert_ne!(c2.fast() & SETTLED, 0);
    let force = CtRequest {
        commit: true,
        force: true,
        ..CtRequest::default()
    };
    assert_eq!(track(&t, &r2, &force, 1500).state, TRK | NEW);
    assert_eq!(c2.expires(), 0);
    // Expired: its packets find no connection, and leave it expired.
    let exp = c.expires();
    assert_eq!(track(&t, &q, &plain, exp).state, TRK | NEW);
    assert_eq!(c.expires(), exp);
}
