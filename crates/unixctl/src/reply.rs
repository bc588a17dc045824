//! Replies in pieces, both ways.
//!
//! A reply's `result` can be a dump of a million flows. [`ReplyDecoder`] takes a reply object
//! in chunks as they come off the socket and writes the `result` text to a sink as it is
//! decoded, so a client never holds the whole reply; the other members (`id`, `error`) are
//! small and kept. [`write_streamed`] is the server's side: it writes a reply whose result is
//! produced piece by piece, escaping each piece as it goes.
//!
//! The decoder accepts the members in any order (OVS's daemons and ours order them
//! differently) and any JSON value for each. A value other than the result string may take at
//! most [`crate::MAX_MESSAGE`] bytes. Malformed input is an error naming what was wrong, never
//! a panic.

use serde_json::Value;
use std::io::{self, Write};

/// How a reply ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `error` was null or absent: the result was written to the sink.
    Ok,
    /// The `error` member's text (a string's contents, else its JSON).
    Err(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening brace.
    Start,
    /// After `{` or `,`: a member name or (after `{` only) the closing brace.
    Name {
        first: bool,
    },
    /// Inside a member name.
    NameText {
        escaped: bool,
    },
    Colon,
    Value,
    /// Inside the result string; `hex` collects a `\u` escape's digits.
    Text {
        escaped: bool,
    },
    Hex,
    /// Inside any other value; `depth` counts open brackets, `string`/`escaped` track strings.
    Other {
        depth: u32,
        string: bool,
        escaped: bool,
    },
    /// After a value: `,` or `}`.
    After,
    Done,
}

/// What one step of [`ReplyDecoder::feed`] did.
enum Step {
    /// Consumed that many bytes (0: the byte is read again in the new state).
    Took(usize),
    /// The object is complete.
    Finished,
}

/// Decodes one unixctl reply object fed in chunks (see the module documentation).
pub struct ReplyDecoder {
    state: State,
    name: Vec<u8>,
    value: Vec<u8>,
    hex: Vec<u8>,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
    error: Option<Value>,
    wrote: u64,
}

impl Default for ReplyDecoder {
    fn default() -> Self {
        Self::new()
    }
}

/// A decoding failure: malformed input, or the sink refused bytes.
#[derive(Debug)]
pub enum DecodeError {
    Malformed(String),
    Sink(io::Error),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Malformed(m) => write!(f, "{m}"),
            DecodeError::Sink(e) => write!(f, "{e}"),
        }
    }
}

fn bad<T>(what: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError::Malformed(what.into()))
}

impl ReplyDecoder {
    pub fn new() -> ReplyDecoder {
        ReplyDecoder {
            state: State::Start,
            name: Vec::new(),
            value: Vec::new(),
            hex: Vec::new(),
            high: None,
            error: None,
            wrote: 0,
        }
    }

    /// Bytes of result text written to the sink so far.
    pub fn written(&self) -> u64 {
        self.wrote
    }

    /// Feeds the next chunk. Returns the outcome once the object is complete (bytes after it
    /// are ignored), `None` while more is needed.
    pub fn feed(
        &mut self,
        data: &[u8],
        out: &mut dyn Write,
    ) -> Result<Option<Outcome>, DecodeError> {
        let mut i = 0;
        while i < data.len() {
            match self.step(&data[i..], out)? {
                Step::Took(n) => i += n,
                Step::Finished => return Ok(Some(self.finish())),
            }
        }
        Ok(None)
    }

    /// Runs the state machine on the start of `rest` (never empty): one byte, or a run of
    /// plain result text, or nothing when the byte is to be read again in the new state.
    #[inline]
    fn step(&mut self, rest: &[u8], out: &mut dyn Write) -> Result<Step, DecodeError> {
        let b = rest[0];
        match self.state {
            State::Start => match b {
                b'{' => self.state = State::Name { first: true },
                _ if b.is_ascii_whitespace() => {}
                _ => return bad(format!("reply does not start with '{{' (byte {b:#04x})")),
            },
            State::Name { first } => match b {
                b'"' => {
                    self.name.clear();
                    self.state = State::NameText { escaped: false };
                }
                b'}' if first => return Ok(Step::Finished),
                _ if b.is_ascii_whitespace() => {}
                _ => return bad(format!("expected a member name, got byte {b:#04x}")),
            },
            State::NameText { escaped } => self.name_byte(escaped, b)?,
            State::Colon => match b {
                b':' => self.state = State::Value,
                _ if b.is_ascii_whitespace() => {}
                _ => return bad(format!("expected ':', got byte {b:#04x}")),
            },
            State::Value => return Ok(self.value_start(b)),
            State::Text { escaped: false } => return self.text(rest, out),
            State::Text { escaped: true } => self.text_escape(b, out)?,
            State::Hex => self.hex_digit(b, out)?,
            State::Other {
                depth,
                string,
                escaped,
            } => return self.other_byte(depth, string, escaped, b, out),
            State::After => match b {
                b',' => self.state = State::Name { first: false },
                b'}' => return Ok(Step::Finished),
                _ if b.is_ascii_whitespace() => {}
                _ => return bad(format!("expected ',' or '}}', got byte {b:#04x}")),
            },
            State::Done => return Ok(Step::Finished),
        }
        Ok(Step::Took(1))
    }

    /// A byte of a member name.
    #[inline]
    fn name_byte(&mut self, escaped: bool, b: u8) -> Result<(), DecodeError> {
        if self.name.len() > 256 {
            return bad("member name longer than 256 bytes");
        }
        match (escaped, b) {
            (false, b'"') => self.state = State::Colon,
            (false, b'\\') => {
                self.name.push(b);
                self.state = State::NameText { escaped: true };
            }
            _ => {
                self.name.push(b);
                self.state = State::NameText { escaped: false };
            }
        }
        Ok(())
    }

    /// The first byte of a value: the result string is streamed, any other value collected.
    #[inline]
    fn value_start(&mut self, b: u8) -> Step {
        if b.is_ascii_whitespace() {
            return Step::Took(1);
        }
        if self.name == b"result" && b == b'"' {
            self.state = State::Text { escaped: false };
            Step::Took(1)
        } else {
            self.value.clear();
            self.state = State::Other {
                depth: 0,
                string: false,
                escaped: false,
            };
            Step::Took(0) // the byte starts the value
        }
    }

    /// Result text outside an escape: a run of plain bytes goes out in one write; then the
    /// closing quote or a backslash.
    #[inline]
    fn text(&mut self, rest: &[u8], out: &mut dyn Write) -> Result<Step, DecodeError> {
        let run = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\')
            .unwrap_or(rest.len());
        if run > 0 {
            if self.high.take().is_some() {
                return bad("unpaired surrogate in result");
            }
            self.put(out, &rest[..run])?;
            return Ok(Step::Took(run));
        }
        if rest[0] == b'"' {
            if self.high.is_some() {
                return bad("unpaired surrogate in result");
            }
            self.state = State::After;
        } else {
            self.state = State::Text { escaped: true };
        }
        Ok(Step::Took(1))
    }

    /// The byte after a backslash in the result.
    #[inline]
    fn text_escape(&mut self, b: u8, out: &mut dyn Write) -> Result<(), DecodeError> {
        let c = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                self.hex.clear();
                self.state = State::Hex;
                return Ok(());
            }
            _ => return bad(format!("bad escape '\\{}' in result", b as char)),
        };
        if self.high.take().is_some() {
            return bad("unpaired surrogate in result");
        }
        self.put(out, &[c])?;
        self.state = State::Text { escaped: false };
        Ok(())
    }

    /// A digit of a `\u` escape in the result.
    #[inline]
    fn hex_digit(&mut self, b: u8, out: &mut dyn Write) -> Result<(), DecodeError> {
        if !b.is_ascii_hexdigit() {
            return bad("bad \\u escape in result");
        }
        self.hex.push(b);
        if self.hex.len() == 4 {
            self.unicode(out)?;
            self.state = State::Text { escaped: false };
        }
        Ok(())
    }

    /// A byte of a value other than the result string: tracks strings and brackets until a
    /// `,` or `}` at depth 0 ends the value (that byte is then read again).
    #[inline]
    fn other_byte(
        &mut self,
        depth: u32,
        string: bool,
        escaped: bool,
        b: u8,
        out: &mut dyn Write,
    ) -> Result<Step, DecodeError> {
        if self.value.len() >= crate::MAX_MESSAGE {
            return bad("a reply member other than the result is too long");
        }
        let (depth, string, escaped) = match (string, escaped, b) {
            (true, true, _) => (depth, true, false),
            (true, false, b'\\') => (depth, true, true),
            (true, false, b'"') => (depth, false, false),
            (true, false, _) => (depth, true, false),
            (false, _, b'"') => (depth, true, false),
            (false, _, b'{' | b'[') => (depth + 1, false, false),
            (false, _, b'}' | b']') if depth > 0 => (depth - 1, false, false),
            (false, _, b',' | b'}') if depth == 0 => {
                self.end_value(out)?;
                self.state = State::After;
                return Ok(Step::Took(0));
            }
            (false, _, _) => (depth, false, false),
        };
        self.value.push(b);
        self.state = State::Other {
            depth,
            string,
            escaped,
        };
        Ok(Step::Took(1))
    }

    fn put(&mut self, out: &mut dyn Write, bytes: &[u8]) -> Result<(), DecodeError> {
        self.wrote += bytes.len() as u64;
        out.write_all(bytes).map_err(DecodeError::Sink)
    }

    fn unicode(&mut self, out: &mut dyn Write) -> Result<(), DecodeError> {
        let s = std::str::from_utf8(&self.hex).unwrap_or("");
        let Ok(u) = u16::from_str_radix(s, 16) else {
            return bad("bad \\u escape in result");
        };
        let c = match (self.high.take(), u) {
            (None, 0xd800..=0xdbff) => {
                self.high = Some(u);
                return Ok(());
            }
            (Some(h), 0xdc00..=0xdfff) => {
                char::from_u32(0x10000 + ((u32::from(h) - 0xd800) << 10) + (u32::from(u) - 0xdc00))
            }
            (Some(_), _) | (None, 0xdc00..=0xdfff) => return bad("unpaired surrogate in result"),
            (None, u) => char::from_u32(u32::from(u)),
        };
        let Some(c) = c else {
            return bad("bad \\u escape in result");
        };
        let mut buf = [0u8; 4];
        self.put(out, c.encode_utf8(&mut buf).as_bytes())
    }

    /// A member other than the result string is complete in `self.value`.
    fn end_value(&mut self, out: &mut dyn Write) -> Result<(), DecodeError> {
        let v: Value = match serde_json::from_slice(&self.value) {
            Ok(v) => v,
            Err(e) => return bad(format!("bad value of reply member: {e}")),
        };
        match self.name.as_slice() {
            b"error" => self.error = Some(v),
            // A result that is not a string is shown as its JSON.
            b"result" if !v.is_null() => self.put(out, v.to_string().as_bytes())?,
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Outcome {
        self.state = State::Done;
        match self.error.take() {
            None | Some(Value::Null) => Outcome::Ok,
            Some(Value::String(s)) => Outcome::Err(s),
            Some(v) => Outcome::Err(v.to_string()),
        }
    }
}

/// Writes `s` as the inside of a JSON string (no quotes).
pub fn write_escaped(w: &mut dyn Write, s: &str) -> io::Result<()> {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                w.write_all(&bytes[start..i])?;
                write!(w, "\\u{b:04x}")?;
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        w.write_all(&bytes[start..i])?;
        w.write_all(esc)?;
        start = i + 1;
    }
    w.write_all(&bytes[start..])
}

/// Writes a successful reply to request `id` whose result is the concatenation of `pieces`,
/// each escaped as it comes.
pub fn write_streamed(
    w: &mut dyn Write,
    id: &Value,
    pieces: &mut dyn Iterator<Item = String>,
) -> io::Result<()> {
    w.write_all(b"{\"id\":")?;
    w.write_all(id.to_string().as_bytes())?;
    w.write_all(b",\"result\":\"")?;
    for p in pieces {
        write_escaped(w, &p)?;
    }
    w.write_all(b"\",\"error\":null}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Decodes `bytes` fed `step` bytes at a time.
    fn decode(bytes: &[u8], step: usize) -> Result<(String, Outcome), String> {
        let mut d = ReplyDecoder::new();
        let mut out = Vec::new();
        for c in bytes.chunks(step.max(1)) {
            if let Some(o) = d.feed(c, &mut out).map_err(|e| e.to_string())? {
                return Ok((String::from_utf8_lossy(&out).into_owned(), o));
            }
        }
        Err("incomplete".into())
    }

    #[test]
    fn decodes_what_serde_writes_in_any_chunking_and_member_order() {
        let text = "cookie=0x0, table=0 \"q\" \\ back\n\ttab \u{1} é 😀 /\n";
        let replies = [
            json!({"id": 7, "result": text, "error": null}).to_string(),
            format!(
                "{{ \"error\" : null , \"id\" : [1, {{\"a\": \"}}\"}}] , \"result\" : {} }}",
                serde_json::to_string(text).expect("json")
            ),
        ];
        for r in &replies {
            for step in [1, 2, 3, 7, 64, 4096] {
                let (got, o) = decode(r.as_bytes(), step).expect("decodes");
                assert_eq!(o, Outcome::Ok);
                assert_eq!(got, text, "step {step}: {r}");
            }
        }
        // Escapes written out in full, surrogate pairs included.
        let (got, _) = decode(
            br#"{"result":"\u0041\u00e9\ud83d\ude00\/","error":null}"#,
            1,
        )
        .expect("decodes");
        assert_eq!(got, "Aé😀/");
    }

    #[test]
    fn errors_and_other_results() {
        let r = json!({"id": 0, "result": null, "error": "no such bridge"}).to_string();
        assert_eq!(
            decode(r.as_bytes(), 5).expect("decodes"),
            (String::new(), Outcome::Err("no such bridge".into()))
        );
        let r = json!({"id": 0, "result": {"a": [1, 2]}, "error": null}).to_string();
        assert_eq!(
            decode(r.as_bytes(), 3).expect("decodes").0,
            r#"{"a":[1,2]}"#
        );
        assert_eq!(decode(b"{}", 1).expect("decodes").1, Outcome::Ok);
    }

    #[test]
    fn malformed_replies_are_errors() {
        for bad in [
            &b"[1]"[..],
            b"{\"result\" 1}",
            b"{\"result\":\"\\x\"}",
            b"{\"result\":\"\\ud800x\"}",
            b"{\"result\":\"\\udc00\"}",
            b"{\"result\":\"\\u12g4\"}",
            b"{\"error\":nul}",
            b"{\"result\":\"a\" \"b\"}",
            b"{,}",
        ] {
            assert!(decode(bad, 1).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn streamed_replies_decode_to_their_pieces() {
        let pieces = ["line \"1\"\n", "", "tab\there\n", "ctl \u{7}\n", "é\n"];
        let mut w = Vec::new();
        let mut it = pieces.iter().map(|s| s.to_string());
        write_streamed(&mut w, &json!(3), &mut it).expect("write");
        let v: Value = serde_json::from_slice(&w).expect("valid JSON");
        assert_eq!(v["result"], pieces.concat());
        assert_eq!(v["id"], 3);
        assert!(v["error"].is_null());
        assert_eq!(decode(&w, 2).expect("decodes").0, pieces.concat());
    }
}
