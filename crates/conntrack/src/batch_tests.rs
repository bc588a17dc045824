//! The batch path: [`Conntrack::execute`] parses and prefetches a chunk before tracking it,
//! and the datapath prefetches from flow keys ([`ConnKey::from_flow`]); both must change
//! nothing but timing.

use crate::ct_state::*;
use crate::key::{parse, ConnKey, PacketMeta, Parsed};
use crate::testpkt::*;
use crate::tracker::{Conntrack, CtRequest, CtResult, BATCH_CHUNK};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

fn meta(f: &[u8]) -> PacketMeta {
    let (k, o) = flow_of(f);
    PacketMeta::from_flow(&k, &o).expect("IP")
}

/// The key known from the flow key is the key the tracker parses, for the protocols it
/// covers; the others have none.
#[test]
fn from_flow_is_the_parsed_key() {
    let frames = [
        tcp4(A, B, 1000, 80, 1, 0, SYN, b""),
        tcp6(v6addr(1), v6addr(2), 1000, 80, 1, 0, SYN, b"x"),
        udp4(A, B, 53, 5353, b"abc"),
        udp6(v6addr(3), v6addr(4), 53, 5353, b"abc"),
    ];
    for f in &frames {
        let (k, o) = flow_of(f);
        let m = PacketMeta::from_flow(&k, &o).expect("IP");
        let Parsed::Conn { key, .. } = parse(f, &m, 9) else {
            panic!("not a connection");
        };
        assert_eq!(ConnKey::from_flow(&k, 9), Some(key));
    }
    for f in [icmp4_echo(A, B, 8, 7, 1), other4(A, B, 47, b"gre")] {
        assert_eq!(ConnKey::from_flow(&flow_of(&f).0, 0), None);
    }
}

/// Packets of many connections, both directions, some invalid: through `execute` in one
/// batch (several chunks) and one at a time on a second tracker, the same verdicts and the
/// same bytes.
#[test]
fn a_batch_decides_as_one_packet_at_a_time() {
    let mut frames = Vec::new();
    for i in 0..(2 * BATCH_CHUNK as u16 + 5) {
        let a = [10, 0, (i >> 8) as u8, i as u8];
        frames.push(tcp4(a, B, 1000 + i, 80, 100, 0, SYN, b""));
        frames.push(udp4(a, B, 2000 + i, 53, b"q"));
        frames.push(udp4(B, a, 53, 2000 + i, b"r"));
        if i % 7 == 0 {
            frames.push(tcp4(B, a, 80, 1000 + i, 500, 101, SYN | ACK, b""));
        }
        if i % 5 == 0 {
            let mut bad = udp4(a, B, 9, 9, b"bad");
            let n = bad.len();
            bad[n - 1] ^= 0xff; // Wrong checksum: invalid.
            frames.push(bad);
        }
    }
    for req in [
        CtRequest {
            commit: true,
            zone: 3,
            ..CtRequest::default()
        },
        CtRequest::default(),
    ] {
        let (batch, single) = (Conntrack::default(), Conntrack::default());
        for round in 0..2u64 {
            let mut pkts: Vec<(Vec<u8>, PacketMeta)> =
                frames.iter().map(|f| (f.clone(), meta(f))).collect();
            let mut out = vec![CtResult::default(); pkts.len()];
            batch.execute(&mut pkts, &req, round, &mut out);
            for (i, f) in frames.iter().enumerate() {
                let mut g = f.clone();
                let m = meta(&g);
                let want = single.execute_one(&mut g, &m, &req, round);
                assert_eq!(out[i], want, "packet {i}, round {round}");
                assert_eq!(pkts[i].0, g);
            }
            if req.commit {
                assert!(out.iter().any(|r| r.state & EST != 0) || round == 0);
            }
        }
        assert_eq!(batch.n_conns(), single.n_conns());
    }
}
