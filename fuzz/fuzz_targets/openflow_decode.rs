//! Fuzzes the OpenFlow wire decoder: arbitrary bytes are decoded as they come and, with
//! the header's version byte forced to each supported version, so every version's
//! layouts are reached. Decoding must never panic, and whatever decodes must re-encode
//! (when the version can say it) to bytes that decode to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openflow::wire::{decode, decode_frame, encode, split, VERSIONS};

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

fuzz_target!(|data: &[u8]| {
    let _ = split(data);
    check(data);
    if data.len() >= 8 {
        let mut b = data.to_vec();
        // Make the length field honest so the body is reached.
        let len = b.len().min(65535) as u16;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        for v in VERSIONS {
            b[0] = v;
            check(&b);
        }
    }
});
