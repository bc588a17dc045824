//! Fuzzes the stream splitter that OVSDB and unixctl sessions read JSON-RPC with, against two
//! references.
//!
//! Input: byte 0 picks the read size, byte 1 the size limit, the rest is what the peer sent.
//! Checks, besides "never panics":
//! * chunking does not matter: the bytes fed at once and fed a read at a time give the same
//!   values and the same final state (failed or waiting for more), with any limit;
//! * the splitter agrees with `serde_json`'s own stream reader: with no limit, the values it
//!   returns are the ones `serde_json` finds, in order, and when the input is nothing but
//!   objects and arrays separated by JSON white space it returns all of them and does not fail.
#![no_main]

use jsonstream::JsonStream;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Values returned, and whether the stream failed, after feeding `data` in reads of `chunk`.
fn run(data: &[u8], chunk: usize, max: usize) -> (Vec<Value>, bool) {
    let mut js = JsonStream::new(max);
    let mut values = Vec::new();
    for c in data.chunks(chunk) {
        js.feed(c);
        loop {
            match js.next_value() {
                Ok(Some(v)) => values.push(v),
                Ok(None) => break,
                Err(_) => {
                    assert!(js.next_value().is_err(), "a failed stream stays failed");
                    return (values, true);
                }
            }
        }
    }
    (values, false)
}

/// The objects and arrays `serde_json` reads from `data` before anything else, and whether
/// that was the whole input.
fn reference(data: &[u8]) -> (Vec<Value>, bool) {
    let mut values = Vec::new();
    for v in serde_json::Deserializer::from_slice(data).into_iter::<Value>() {
        match v {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => values.push(v),
            _ => return (values, false),
        }
    }
    (values, true)
}

fuzz_target!(|data: &[u8]| {
    let [split, limit, stream @ ..] = data else {
        return;
    };
    let chunk = usize::from(*split).max(1);
    let max = 1usize << (limit % 24);
    assert_eq!(
        run(stream, chunk, max),
        run(stream, stream.len().max(1), max)
    );

    let (got, failed) = run(stream, chunk, usize::MAX);
    let (want, clean) = reference(stream);
    assert!(
        got.len() <= want.len(),
        "splitter found {got:?}, serde_json {want:?}"
    );
    assert_eq!(got[..], want[..got.len()]);
    if clean {
        assert_eq!(got.len(), want.len());
        assert!(!failed);
    }
});
