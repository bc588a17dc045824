//! # jsonstream — splitting a byte stream into JSON values
//!
//! OVSDB (RFC 7047) and OVS's unixctl channel both send JSON-RPC texts back to back on a stream
//! with no length prefix or delimiter, so a reader must find where each value ends.
//! [`JsonStream`] scans incoming bytes once, tracking nesting depth and string/escape state,
//! and hands each complete top-level object or array to `serde_json` (which bounds recursion
//! depth): the cost is linear in the bytes received, however a value is split across reads.
//! JSON white space between values is skipped; any other top-level byte (form feed too), a
//! value larger than the configured limit, or invalid JSON is an error after which the stream
//! is unusable (servers then close the connection). Memory use is bounded by the limit plus one read buffer. The
//! scanner never panics on any input; fuzz targets check this.

use serde_json::Value;

/// JSON's white space (RFC 8259: space, tab, line feed, carriage return; not form feed).
fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Incremental splitter of a byte stream into JSON values.
#[derive(Debug)]
pub struct JsonStream {
    buf: Vec<u8>,
    /// Bytes of `buf` already scanned.
    scanned: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    started: bool,
    max: usize,
    failed: bool,
}

impl JsonStream {
    /// A reader accepting values of at most `max` bytes.
    pub fn new(max: usize) -> Self {
        JsonStream {
            buf: Vec::new(),
            scanned: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            started: false,
            max,
            failed: false,
        }
    }

    /// Append received bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes buffered and not yet returned.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next complete value, `Ok(None)` if more bytes are needed, or an error (fatal).
    pub fn next_value(&mut self) -> Result<Option<Value>, String> {
        if self.failed {
            return Err("stream already failed".into());
        }
        let r = self.scan();
        if r.is_err() {
            self.failed = true;
            self.buf.clear();
        }
        r
    }

    fn scan(&mut self) -> Result<Option<Value>, String> {
        if !self.started {
            let skip = self.buf.iter().take_while(|b| is_json_space(**b)).count();
            if skip > 0 {
                self.buf.drain(..skip);
            }
            match self.buf.first() {
                None => return Ok(None),
                Some(b'{') | Some(b'[') => {
                    self.started = true;
                    self.scanned = 0;
                    self.depth = 0;
                }
                Some(&b) => {
                    return Err(format!(
                        "unexpected byte 0x{b:02x} between JSON-RPC messages"
                    ))
                }
            }
        }
        let mut end = None;
        for (i, &b) in self.buf.iter().enumerate().skip(self.scanned) {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            None => {
                self.scanned = self.buf.len();
                if self.buf.len() > self.max {
                    return Err(format!("message exceeds the {} byte limit", self.max));
                }
                Ok(None)
            }
            Some(n) => {
                if n > self.max {
                    return Err(format!("message exceeds the {} byte limit", self.max));
                }
                let v = serde_json::from_slice::<Value>(&self.buf[..n])
                    .map_err(|e| format!("invalid JSON: {e}"));
                self.buf.drain(..n);
                self.started = false;
                self.scanned = 0;
                self.in_string = false;
                self.escaped = false;
                v.map(Some)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splits_back_to_back_values_in_any_chunking() {
        let text = br#" {"a": "}\"{", "b": [1, {"c": 2}]}
[1,2]{"id":1}  "#;
        for chunk in 1..text.len() {
            let mut s = JsonStream::new(1 << 20);
            let mut got = Vec::new();
            for c in text.chunks(chunk) {
                s.feed(c);
                while let Some(v) = s.next_value().unwrap() {
                    got.push(v);
                }
            }
            assert_eq!(got.len(), 3, "chunk {chunk}");
            assert_eq!(got[0]["a"], json!("}\"{"));
            assert_eq!(got[2], json!({"id": 1}));
        }
    }

    /// Only JSON's white space may separate values (found by fuzzing against `serde_json`:
    /// a form feed before a value was skipped).
    #[test]
    fn only_json_white_space_between_values() {
        let mut s = JsonStream::new(100);
        s.feed(b" \t\r\n{}");
        assert_eq!(s.next_value(), Ok(Some(json!({}))));
        s.feed(b"\x0c{}");
        assert!(s.next_value().is_err());
    }

    #[test]
    fn rejects_garbage_and_huge() {
        let mut s = JsonStream::new(100);
        s.feed(b"hello");
        assert!(s.next_value().is_err());
        assert!(s.next_value().is_err());
        let mut s = JsonStream::new(100);
        s.feed(b"[");
        s.feed(&[b' '; 200]);
        assert!(s.next_value().is_err());
        let mut s = JsonStream::new(100);
        s.feed(b"{\"a\": tru}");
        assert!(s.next_value().is_err());
        let mut s = JsonStream::new(1 << 20);
        let deep: String = "[".repeat(10_000) + &"]".repeat(10_000);
        s.feed(deep.as_bytes());
        assert!(
            s.next_value().is_err(),
            "serde_json's recursion limit must reject this"
        );
    }
}
