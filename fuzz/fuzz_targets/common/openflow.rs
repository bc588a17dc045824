//! What every OpenFlow decoder target checks (one target per protocol version).

use openflow::wire::{decode, decode_frame, encode, split};

/// Decoding must never panic, and whatever decodes must re-encode (when the version can say
/// it) to bytes that decode to the same message.
fn check(bytes: &[u8]) {
    if let Ok((h, m, n)) = decode_frame(bytes) {
        assert!(n <= bytes.len());
        if let Ok(enc) = encode(&m, h.version, h.xid) {
            let (m2, n2) = decode(&enc).expect("re-encoded message decodes");
            assert_eq!(n2, enc.len());
            assert_eq!(m2, m);
        }
    }
}

/// Runs the checks on `data` as it comes (stream splitting and decoding), then with the
/// header's version byte forced to `version` and its length made honest, so that version's
/// message layouts are reached whatever the input's first byte.
pub fn run(data: &[u8], version: u8) {
    let _ = split(data);
    check(data);
    if data.len() >= 8 {
        let mut b = data.to_vec();
        let len = b.len().min(65535) as u16;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        b[0] = version;
        check(&b);
    }
}
