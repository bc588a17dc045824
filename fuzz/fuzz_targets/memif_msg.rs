//! Fuzzes the memif control channel: any record must decode to a message or an error (never
//! panic), a decoded message must encode back to a record that decodes the same, and a server
//! session fed any sequence of records (without the descriptors a real client would pass)
//! must end with an error or keep going, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdev::memif::ctl::{Iface, ServerSession, Step};
use netdev::memif::msg::{decode, encode, MSG_SIZE};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = decode(data) {
        assert_eq!(decode(&encode(&m)).ok(), Some(m));
    }
    let lookup = |id: u32| {
        (id < 4).then_some(Iface {
            secret: [0; 24],
            busy: id == 3,
        })
    };
    let mut s = ServerSession::new();
    for rec in data.chunks(MSG_SIZE) {
        let Ok(m) = decode(rec) else { continue };
        match s.on_msg(m, None, &lookup) {
            Ok(Step::Closed(_)) | Err(_) => break,
            Ok(_) => {}
        }
    }
});
