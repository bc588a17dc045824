//! Fuzzes the client's streaming reply decoder: arbitrary bytes fed in arbitrary chunks must
//! never panic, and it counts exactly what it writes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut d = unixctl::ReplyDecoder::new();
    let mut out = Vec::new();
    let split = usize::from(data.first().copied().unwrap_or(1)).max(1);
    for chunk in data.chunks(split) {
        match d.feed(chunk, &mut out) {
            Ok(None) => {}
            Ok(Some(_)) | Err(_) => break,
        }
    }
    assert_eq!(d.written(), out.len() as u64);
});
