//! Fuzzes the control socket's reader: arbitrary bytes fed in arbitrary chunks to the
//! JSON stream splitter and request parser must never panic or grow without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut js = unixctl::JsonStream::new(unixctl::MAX_MESSAGE);
    let split = usize::from(data.first().copied().unwrap_or(1)).max(1);
    for chunk in data.chunks(split) {
        js.feed(chunk);
        loop {
            match js.next_value() {
                Ok(Some(v)) => {
                    let _ = unixctl::parse_request(v);
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
});
