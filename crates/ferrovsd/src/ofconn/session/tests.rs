//! The session driven with made-up bytes and a made-up clock.

use super::*;
use openflow::wire::{ErrorMsg, OFP10, OFP13, OFP14, OFP15};

const ALL: [u8; 4] = [OFP10, OFP13, OFP14, OFP15];
const PROBE: u64 = 5000;

fn msg(version: u8, type_: u8, xid: u32, body: &[u8]) -> Vec<u8> {
    let mut m = vec![version, type_];
    m.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    m.extend_from_slice(&xid.to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A hello in `version`, with a bitmap of `bitmap` if given.
fn hello(version: u8, bitmap: Option<&[u8]>) -> Vec<u8> {
    let Some(vs) = bitmap else {
        return msg(version, OFPT_HELLO, 1, &[]);
    };
    let top = vs.iter().copied().max().unwrap_or(0);
    let words: Vec<u32> = (0..=top / 32)
        .map(|w| {
            vs.iter()
                .filter(|v| *v / 32 == w)
                .fold(0u32, |a, v| a | (1 << (v % 32)))
        })
        .collect();
    let len = 4 + 4 * words.len();
    let mut body = vec![0, 1];
    body.extend_from_slice(&(len as u16).to_be_bytes());
    for w in words {
        body.extend_from_slice(&w.to_be_bytes());
    }
    body.resize(len.next_multiple_of(8), 0);
    msg(version, OFPT_HELLO, 1, &body)
}

fn features_request(version: u8, xid: u32) -> Vec<u8> {
    msg(version, 5, xid, &[])
}

/// Every event until the session has nothing to do.
fn drain(s: &mut Session, now: u64) -> Vec<Event> {
    std::iter::from_fn(|| s.poll(now)).collect()
}

/// A session that sent its hello at time 0.
fn fresh(ours: &[u8]) -> Session {
    let mut s = Session::new(ours, PROBE, 0);
    let evs = drain(&mut s, 0);
    assert!(matches!(evs.as_slice(), [Event::Transmit(_)]), "{evs:?}");
    s
}

/// The outcome of a peer's first message: the version, or `None` if refused.
fn negotiate(ours: &[u8], first: &[u8]) -> (Option<u8>, Vec<Event>) {
    let mut s = fresh(ours);
    s.receive(first);
    let evs = drain(&mut s, 1);
    (s.version, evs)
}

/// A session up at the highest of `ours`.
fn up(ours: &[u8]) -> Session {
    let mut s = fresh(ours);
    s.receive(&hello(OFP15, Some(&ALL)));
    drain(&mut s, 0);
    assert!(s.version.is_some());
    s
}

fn transmits(evs: &[Event]) -> Vec<Vec<u8>> {
    evs.iter()
        .filter_map(|e| match e {
            Event::Transmit(b) => Some(b.clone()),
            _ => None,
        })
        .collect()
}

/// (version, xid, error type, code, data) of an error message.
fn error_of(bytes: &[u8]) -> (u8, u32, u16, u16, Vec<u8>) {
    let h = Header::parse(bytes).expect("header");
    assert_eq!(h.type_, OFPT_ERROR);
    assert_eq!(usize::from(h.length), bytes.len());
    let t = u16::from_be_bytes([bytes[8], bytes[9]]);
    let c = u16::from_be_bytes([bytes[10], bytes[11]]);
    (h.version, h.xid, t, c, bytes[12..].to_vec())
}

fn received(evs: &[Event]) -> Vec<(Header, bool)> {
    evs.iter()
        .filter_map(|e| match e {
            Event::Received {
                header, request, ..
            } => Some((*header, *request)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_first_event_is_our_hello_with_every_version_we_allow() {
    let mut s = Session::new(&[OFP10, OFP14], PROBE, 0);
    let Some(Event::Transmit(b)) = s.poll(0) else {
        panic!("no hello")
    };
    let (h, m, _) = wire::decode_frame(&b).unwrap();
    assert_eq!((h.version, h.type_, h.xid), (OFP14, OFPT_HELLO, 0));
    assert_eq!(m, Message::Hello(Hello::for_versions(&[OFP10, OFP14])));
    assert_eq!(s.poll(0), None);
}

#[test]
fn negotiation_picks_the_highest_common_version_of_two_bitmaps() {
    // Every pair of single versions, and every single version against all of ours.
    for ours in ALL {
        for peer in ALL {
            let (v, evs) = negotiate(&[ours], &hello(peer, Some(&[peer])));
            if ours == peer {
                assert_eq!(v, Some(ours));
                assert_eq!(evs.last(), Some(&Event::Up(ours)));
            } else {
                assert_eq!(v, None, "ours {ours} peer {peer}");
                assert_eq!(evs.last(), Some(&Event::Close(Close::HelloFailed)));
            }
        }
        assert_eq!(negotiate(&ALL, &hello(ours, Some(&[ours]))).0, Some(ours));
        assert_eq!(negotiate(&[ours], &hello(OFP15, Some(&ALL))).0, Some(ours));
    }
    // The highest common one, whatever the header says.
    let cases: [(&[u8], &[u8], u8); 5] = [
        (&ALL, &[OFP10, OFP13, OFP14], OFP14),
        (&[OFP10, OFP13], &ALL, OFP13),
        (&[OFP13, OFP15], &[OFP10, OFP13, OFP14], OFP13),
        // Versions we do not know are ignored, in any word of the bitmap.
        (&ALL, &[OFP13, 7, 31, 40], OFP13),
        (&ALL, &[OFP10, 2, 3], OFP10),
    ];
    for (ours, peer, want) in cases {
        for hdr in [OFP10, OFP15, 7] {
            assert_eq!(negotiate(ours, &hello(hdr, Some(peer))).0, Some(want));
        }
    }
}

#[test]
fn a_hello_without_bitmap_offers_every_version_up_to_its_header() {
    let cases: [(&[u8], u8, Option<u8>); 8] = [
        (&ALL, OFP10, Some(OFP10)),
        (&ALL, 2, Some(OFP10)),
        (&ALL, 3, Some(OFP10)),
        (&ALL, OFP13, Some(OFP13)),
        (&ALL, OFP14, Some(OFP14)),
        (&ALL, 9, Some(OFP15)),
        (&[OFP13, OFP14], OFP15, Some(OFP14)),
        (&[OFP13, OFP14], OFP10, None),
    ];
    for (ours, hdr, want) in cases {
        assert_eq!(negotiate(ours, &hello(hdr, None)).0, want, "header {hdr}");
    }
    // A hello whose elements do not parse counts as one without a bitmap.
    let mut bad = msg(OFP14, OFPT_HELLO, 1, &[0, 1, 0, 2, 0, 0, 0, 0]);
    assert_eq!(negotiate(&ALL, &bad).0, Some(OFP14));
    bad[0] = OFP10;
    assert_eq!(negotiate(&[OFP13], &bad).0, None);
}

#[test]
fn an_incompatible_hello_is_refused_and_closes() {
    let (v, evs) = negotiate(&[OFP13, OFP14], &hello(OFP10, Some(&[OFP10])));
    assert_eq!(v, None);
    assert_eq!(received(&evs).len(), 1);
    let [Event::Received { .. }, Event::Transmit(b), Event::Close(Close::HelloFailed)] =
        evs.as_slice()
    else {
        panic!("{evs:?}")
    };
    // In the lower of our highest version and the peer's, with the hello's xid.
    let (ver, xid, t, c, text) = error_of(b);
    assert_eq!((ver, xid, t, c), (OFP10, 1, err::OFPET_HELLO_FAILED, 0));
    assert!(String::from_utf8(text).unwrap().contains("we support"));
    // A peer above us gets it in our highest version.
    let (_, evs) = negotiate(&[OFP13], &hello(OFP15, Some(&[OFP15])));
    assert_eq!(error_of(&transmits(&evs)[0]).0, OFP13);
}

#[test]
fn a_peer_offering_only_versions_the_codec_lacks_is_still_told() {
    let (v, evs) = negotiate(&[OFP13], &hello(3, None));
    assert_eq!(v, None);
    let (ver, _, t, c, _) = error_of(&transmits(&evs)[0]);
    assert_eq!((ver, t, c), (3, err::OFPET_HELLO_FAILED, 0));
    assert_eq!(evs.last(), Some(&Event::Close(Close::HelloFailed)));
}

#[test]
fn the_hello_failure_is_what_the_codec_would_encode() {
    for v in ALL {
        let m = Message::Error(ErrorMsg {
            type_: err::OFPET_HELLO_FAILED,
            code: 0,
            experimenter: None,
            data: b"why".to_vec(),
        });
        assert_eq!(
            hello_failed_bytes(v, 77, b"why"),
            wire::encode(&m, v, 77).unwrap()
        );
    }
}

#[test]
fn a_first_message_that_is_not_a_hello_is_refused() {
    for first in [
        features_request(OFP13, 9),
        msg(OFP13, OFPT_ECHO_REQUEST, 9, &[]),
    ] {
        let (v, evs) = negotiate(&ALL, &first);
        assert_eq!(v, None);
        let (ver, xid, t, c, text) = error_of(&transmits(&evs)[0]);
        assert_eq!((ver, xid, t, c), (OFP13, 9, err::OFPET_HELLO_FAILED, 0));
        assert_eq!(text, b"expected a hello");
        assert_eq!(evs.last(), Some(&Event::Close(Close::HelloFailed)));
    }
}

#[test]
fn a_closed_session_ignores_further_bytes() {
    let mut s = fresh(&ALL);
    let mut bytes = features_request(OFP13, 1);
    bytes.extend(hello(OFP13, None));
    s.receive(&bytes);
    let evs = drain(&mut s, 1);
    assert_eq!(received(&evs).len(), 1, "the hello after it is not read");
    s.receive(&hello(OFP13, None));
    assert_eq!(drain(&mut s, 2), []);
    assert_eq!(drain(&mut s, 1_000_000), [], "no probe, no second close");
}

#[test]
fn once_up_a_message_in_another_version_is_bad_version() {
    let mut s = up(&[OFP13, OFP14]);
    let req = features_request(OFP13, 42);
    s.receive(&req);
    let evs = drain(&mut s, 1);
    assert_eq!(received(&evs), [(Header::parse(&req).unwrap(), false)]);
    let (ver, xid, t, c, data) = error_of(&transmits(&evs)[0]);
    assert_eq!(
        (ver, xid, t, c),
        (OFP14, 42, err::OFPET_BAD_REQUEST, bad_request::BAD_VERSION)
    );
    assert_eq!(data, req);
    // Still up: the next request in the right version is for the driver.
    s.receive(&features_request(OFP14, 43));
    assert!(received(&drain(&mut s, 2))[0].1);
}

#[test]
fn once_up_hellos_are_ignored_and_requests_go_to_the_driver() {
    let mut s = up(&ALL);
    let mut bytes = hello(OFP10, Some(&[OFP10]));
    bytes.extend(features_request(OFP15, 1));
    bytes.extend(msg(OFP15, 14, 2, &[0; 8]));
    s.receive(&bytes);
    let evs = drain(&mut s, 1);
    let got: Vec<(u8, bool)> = received(&evs).iter().map(|(h, r)| (h.type_, *r)).collect();
    assert_eq!(got, [(OFPT_HELLO, false), (5, true), (14, true)]);
    assert_eq!(evs.len(), 3, "nothing sent, no second Up: {evs:?}");
    let Event::Received { bytes: b, .. } = &evs[2] else {
        panic!()
    };
    assert_eq!(b, &msg(OFP15, 14, 2, &[0; 8]));
}

#[test]
fn echo_requests_are_answered_with_the_same_bytes() {
    for v in ALL {
        let mut s = up(&[v]);
        s.receive(&msg(v, OFPT_ECHO_REQUEST, 7, b"ping"));
        let evs = drain(&mut s, 1);
        assert!(!received(&evs)[0].1);
        assert_eq!(transmits(&evs), [msg(v, OFPT_ECHO_REPLY, 7, b"ping")]);
        // A reply is taken in silently.
        s.receive(&msg(v, OFPT_ECHO_REPLY, 8, &[]));
        let evs = drain(&mut s, 2);
        assert_eq!(evs.len(), 1);
        assert!(!received(&evs)[0].1);
    }
}

#[test]
fn negotiation_events_come_in_order() {
    let mut s = fresh(&ALL);
    let mut bytes = hello(OFP13, None);
    bytes.extend(msg(OFP13, OFPT_ECHO_REQUEST, 5, &[]));
    s.receive(&bytes);
    let evs = drain(&mut s, 1);
    assert!(matches!(
        evs.as_slice(),
        [
            Event::Received { request: false, .. },
            Event::Up(OFP13),
            Event::Received { request: false, .. },
            Event::Transmit(_),
        ]
    ));
}

#[test]
fn the_probe_goes_out_at_t_and_the_session_closes_at_2t() {
    let mut s = up(&[OFP13]);
    assert_eq!(drain(&mut s, PROBE - 1), []);
    let evs = drain(&mut s, PROBE);
    assert_eq!(
        transmits(&evs),
        [msg(OFP13, OFPT_ECHO_REQUEST, PROBE_XID_BASE + 1, &[])]
    );
    // One probe per idle period.
    assert_eq!(drain(&mut s, PROBE + 10), []);
    assert_eq!(drain(&mut s, 2 * PROBE - 1), []);
    assert_eq!(
        drain(&mut s, 2 * PROBE),
        [Event::Close(Close::Inactive { partial: 0 })]
    );
    assert_eq!(drain(&mut s, 3 * PROBE), []);
}

#[test]
fn any_message_resets_the_probe() {
    let mut s = up(&[OFP13]);
    drain(&mut s, PROBE);
    // The peer answers the probe at 1.5 T: the next probe is due at 2.5 T.
    s.receive(&msg(OFP13, OFPT_ECHO_REPLY, PROBE_XID_BASE + 1, &[]));
    let t = PROBE + PROBE / 2;
    drain(&mut s, t);
    assert_eq!(drain(&mut s, t + PROBE - 1), []);
    assert_eq!(
        transmits(&drain(&mut s, t + PROBE)),
        [msg(OFP13, OFPT_ECHO_REQUEST, PROBE_XID_BASE + 2, &[])]
    );
    // A request counts too.
    s.receive(&features_request(OFP13, 1));
    drain(&mut s, t + 2 * PROBE - 1);
    assert_eq!(drain(&mut s, t + 3 * PROBE - 2), []);
    assert!(matches!(
        drain(&mut s, t + 4 * PROBE).as_slice(),
        [Event::Close(_)]
    ));
}

#[test]
fn activity_counts_when_the_driver_has_dealt_with_the_message() {
    let mut s = up(&[OFP13]);
    s.receive(&msg(OFP13, 20, 1, &[]));
    assert!(matches!(s.poll(10), Some(Event::Received { .. })));
    // The driver took until 2 T to answer (a barrier waiting for the datapath): the
    // peer is not idle for that.
    assert_eq!(drain(&mut s, 2 * PROBE), []);
    assert_eq!(drain(&mut s, 3 * PROBE - 1), []);
    assert_eq!(transmits(&drain(&mut s, 3 * PROBE)).len(), 1);
}

#[test]
fn before_negotiation_there_is_no_probe_but_the_deadline_holds() {
    let mut s = fresh(&ALL);
    assert_eq!(drain(&mut s, PROBE), []);
    assert_eq!(
        drain(&mut s, 2 * PROBE),
        [Event::Close(Close::Inactive { partial: 0 })]
    );
}

#[test]
fn a_dribbled_message_is_not_activity() {
    let mut s = up(&[OFP13]);
    let m = features_request(OFP13, 1);
    s.receive(&m[..3]);
    assert_eq!(drain(&mut s, PROBE / 2), []);
    s.receive(&m[3..6]);
    assert_eq!(transmits(&drain(&mut s, PROBE)).len(), 1);
    assert_eq!(
        drain(&mut s, 2 * PROBE),
        [Event::Close(Close::Inactive { partial: 6 })]
    );
}

#[test]
fn the_probe_interval_has_a_floor() {
    let mut s = Session::new(&[OFP13], 1, 0);
    drain(&mut s, 0);
    s.receive(&hello(OFP13, None));
    drain(&mut s, 0);
    assert_eq!(drain(&mut s, MIN_PROBE_MS - 1), []);
    assert_eq!(transmits(&drain(&mut s, MIN_PROBE_MS)).len(), 1);
    assert!(matches!(
        drain(&mut s, 2 * MIN_PROBE_MS).as_slice(),
        [Event::Close(_)]
    ));
}

#[test]
fn messages_are_framed_across_reads() {
    let mut s = up(&[OFP13]);
    let mut bytes = features_request(OFP13, 1);
    bytes.extend(msg(OFP13, 14, 2, &[7; 100]));
    bytes.extend(features_request(OFP13, 3));
    let mut got = Vec::new();
    for chunk in bytes.chunks(5) {
        s.receive(chunk);
        got.extend(drain(&mut s, 1));
    }
    let xids: Vec<u32> = received(&got).iter().map(|(h, _)| h.xid).collect();
    assert_eq!(xids, [1, 2, 3]);
    assert_eq!(s.buf.len(), 0);
}

#[test]
fn a_length_below_eight_is_bad_len_and_skips_the_header() {
    let mut s = up(&[OFP14]);
    // Length 4, then a good request.
    let bad = [OFP14, 5, 0, 4, 0, 0, 0, 99];
    let mut bytes = bad.to_vec();
    bytes.extend(features_request(OFP14, 100));
    s.receive(&bytes);
    let evs = drain(&mut s, 1);
    let [Event::Transmit(e), Event::Received { header, .. }] = evs.as_slice() else {
        panic!("{evs:?}")
    };
    let (ver, xid, t, c, data) = error_of(e);
    assert_eq!(
        (ver, xid, t, c),
        (OFP14, 99, err::OFPET_BAD_REQUEST, bad_request::BAD_LEN)
    );
    assert_eq!(data, bad);
    assert_eq!(header.xid, 100);
    // Not activity: the probe is still due at T.
    // (dated at 1, by the poll after the request was given out)
    s.receive(&bad);
    assert_eq!(transmits(&drain(&mut s, PROBE)).len(), 1, "only the error");
    assert_eq!(
        transmits(&drain(&mut s, PROBE + 1)),
        [msg(OFP14, OFPT_ECHO_REQUEST, PROBE_XID_BASE + 1, &[])]
    );
}

#[test]
fn a_bad_length_before_negotiation_is_answered_in_its_own_version() {
    for (v, want) in [(OFP10, OFP10), (OFP15, OFP15), (9, OFP15), (2, OFP10)] {
        let mut s = fresh(&ALL);
        s.receive(&[v, 0, 0, 0, 0, 0, 0, 5]);
        let evs = drain(&mut s, 1);
        assert_eq!(error_of(&transmits(&evs)[0]).0, want, "header {v}");
        assert_eq!(s.version, None, "still waiting for a hello");
        s.receive(&hello(OFP13, None));
        assert_eq!(drain(&mut s, 2).last(), Some(&Event::Up(OFP13)));
    }
}

#[test]
fn error_replies_fall_back_to_a_version_the_codec_speaks() {
    let e = OfError::bad_request(bad_request::BAD_TYPE);
    let req = features_request(OFP13, 0x0102_0304);
    for (v, up, want) in [
        (OFP13, None, OFP13),
        (8, None, OFP15),
        (2, Some(OFP14), OFP14),
        (2, None, OFP10),
    ] {
        let b = error_reply(e, v, up, &req).unwrap();
        let (ver, xid, ..) = error_of(&b);
        assert_eq!((ver, xid), (want, 0x0102_0304));
    }
    // A request too short for an xid is answered with xid 0.
    assert_eq!(
        error_of(&error_reply(e, OFP13, None, &[4, 5]).unwrap()).1,
        0
    );
}
