//! # unixctl — the control channel `ovs-appctl` speaks
//!
//! Open vSwitch daemons take commands on a unix stream socket carrying JSON-RPC 1.0 objects
//! with no framing: a request is `{"id": ID, "method": "NAME", "params": ["ARG", ...]}` and the
//! reply is `{"id": ID, "result": "TEXT", "error": null}` or `{"id": ID, "result": null,
//! "error": "TEXT"}`. Because there is no framing, a reader must parse a stream of
//! concatenated JSON values; [`JsonStream`] (the `jsonstream` crate, shared with OVSDB) does that
//! in one pass over the bytes and bounds how much an unfinished value may buffer: requests to
//! [`MAX_MESSAGE`]. A reply a client collects whole ([`call`]) may be [`MAX_REPLY`] bytes.
//!
//! [`serve`] runs a server that hands each request to a handler; [`call`] and [`call_to`] are
//! the client used by the `ferrovs` CLI. Both interoperate with OVS's own `ovs-appctl` and
//! Python `ovs.unixctl`. A handler may answer with a result made piece by piece
//! ([`Reply::Stream`]), which goes out as it is made; [`call_to`] writes a result out as it
//! arrives (see [`reply`]), so neither side holds a large reply whole.

use connlimit::{Backoff, MessageClock, Slot, Slots};
use serde_json::{json, Value};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The most bytes one request may occupy before the peer is cut off.
pub const MAX_MESSAGE: usize = 4 << 20;
/// The most bytes of one reply the client accepts: replies (a dump of a million flows) are
/// much larger than requests, and come from the daemon the client chose to ask.
pub const MAX_REPLY: usize = 1 << 30;
/// The most connections served at once (the longest-idle one makes room for a newcomer).
pub const MAX_CONNECTIONS: usize = 64;
/// How long writing one reply may block on a client that does not read.
pub const REPLY_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

pub use jsonstream::JsonStream;

pub mod reply;
pub use reply::{Outcome, ReplyDecoder};

/// A handler's successful answer.
pub enum Reply {
    /// The whole result text.
    Text(String),
    /// The result text in pieces, made as the reply is written.
    Stream(Box<dyn Iterator<Item = String> + Send>),
}

impl From<String> for Reply {
    fn from(s: String) -> Reply {
        Reply::Text(s)
    }
}

/// A request taken off the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Vec<String>,
}

/// Checks that a JSON value is a well-formed unixctl request.
pub fn parse_request(v: Value) -> Result<Request, (Value, String)> {
    let id = v.get("id").cloned().unwrap_or(Value::Null);
    let Some(obj) = v.as_object() else {
        return Err((id, "request is not a JSON object".into()));
    };
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.clone(),
        _ => return Err((id, "request has no \"method\" string".into())),
    };
    let params = match obj.get("params") {
        Some(Value::Array(a)) => {
            let mut out = Vec::with_capacity(a.len());
            for p in a {
                match p {
                    Value::String(s) => out.push(s.clone()),
                    _ => return Err((id, "\"params\" must be an array of strings".into())),
                }
            }
            out
        }
        None | Some(Value::Null) => Vec::new(),
        _ => return Err((id, "\"params\" must be an array of strings".into())),
    };
    Ok(Request { id, method, params })
}

/// Serves requests on `listener` forever (until the listener fails), calling `handler` for
/// each one on the connection's own thread.
///
/// Limits: at most [`MAX_CONNECTIONS`] connections; when all are taken, the one idle longest
/// is closed to admit the newcomer (so idle clients can never lock `ovs-appctl` out); a
/// request must arrive completely within [`connlimit::MESSAGE_DEADLINE`] of its first byte;
/// a failing `accept` backs off instead of spinning.
pub fn serve<H, R>(listener: UnixListener, handler: H)
where
    H: Fn(&str, &[String]) -> Result<R, String> + Send + Sync + 'static,
    R: Into<Reply>,
{
    let handler = Arc::new(handler);
    let slots = Slots::new("unixctl", MAX_CONNECTIONS);
    let mut backoff = Backoff::new("unixctl");
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => {
                backoff.ok();
                s
            }
            Err(e) => {
                backoff.failed(&e);
                continue;
            }
        };
        let Ok(k) = stream.try_clone() else { continue };
        let Some(slot) = slots.admit(Box::new(move || {
            let _ = k.shutdown(Shutdown::Both);
        })) else {
            continue;
        };
        let h = Arc::clone(&handler);
        let _ = std::thread::Builder::new()
            .name("unixctl".into())
            .spawn(move || {
                let _ = serve_conn(stream, &*h, &slot);
            });
    }
}

/// How often a connection's thread wakes to check its message deadline.
const POLL: Duration = Duration::from_millis(500);

fn serve_conn<H, R>(mut stream: UnixStream, handler: &H, slot: &Slot) -> io::Result<()>
where
    H: Fn(&str, &[String]) -> Result<R, String>,
    R: Into<Reply>,
{
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(REPLY_WRITE_TIMEOUT))?;
    let mut js = JsonStream::new(MAX_MESSAGE);
    let mut clock = MessageClock::default();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => js.feed(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        loop {
            match js.next_value() {
                Ok(Some(v)) => {
                    // Replies to our own notifications would never come: ignore replies.
                    if v.get("method").is_none() && v.get("result").is_some() {
                        continue;
                    }
                    slot.busy();
                    let (id, answer) = match parse_request(v) {
                        Ok(req) => (req.id, handler(&req.method, &req.params).map(Into::into)),
                        Err((id, why)) => (id, Err(why)),
                    };
                    let mut w = io::BufWriter::with_capacity(1 << 16, &stream);
                    let written = match answer {
                        Ok(Reply::Stream(mut pieces)) => {
                            reply::write_streamed(&mut w, &id, &mut *pieces)
                        }
                        Ok(Reply::Text(text)) => serde_json::to_writer(
                            &mut w,
                            &json!({"id": id, "result": text, "error": null}),
                        )
                        .map_err(io::Error::from),
                        Err(why) => serde_json::to_writer(
                            &mut w,
                            &json!({"id": id, "result": null, "error": why}),
                        )
                        .map_err(io::Error::from),
                    }
                    .and_then(|()| w.flush());
                    drop(w);
                    slot.idle();
                    written?;
                }
                Ok(None) => break,
                Err(why) => {
                    let reply = json!({"id": null, "result": null, "error": why});
                    let _ = stream.write_all(reply.to_string().as_bytes());
                    return Ok(());
                }
            }
        }
        clock.update(js.buffered() > 0);
        if clock.expired(connlimit::MESSAGE_DEADLINE) {
            log::warn!(
                "unixctl: a request has been arriving for over {} s; closing the connection",
                connlimit::MESSAGE_DEADLINE.as_secs()
            );
            let reply =
                json!({"id": null, "result": null, "error": "request took too long to arrive"});
            let _ = stream.write_all(reply.to_string().as_bytes());
            return Ok(());
        }
    }
}

/// Why a client call failed before a reply came.
#[derive(Debug)]
pub enum CallError {
    Connect(io::Error),
    Io(io::Error),
    Protocol(String),
    /// The reply could not be written where the caller asked.
    Output(io::Error),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Connect(e) => write!(f, "cannot connect: {e}"),
            CallError::Io(e) => write!(f, "transaction error: {e}"),
            CallError::Protocol(m) => write!(f, "protocol error: {m}"),
            CallError::Output(e) => write!(f, "writing the reply: {e}"),
        }
    }
}

/// Sends one request and waits for its reply: `Ok(Ok(result))` or `Ok(Err(error text))`.
/// The result may be up to [`MAX_REPLY`] bytes.
pub fn call(
    socket: &Path,
    method: &str,
    params: &[String],
    timeout: Duration,
) -> Result<Result<String, String>, CallError> {
    let mut text = Bounded(Vec::new());
    match call_to(socket, method, params, timeout, &mut text)? {
        Outcome::Ok => Ok(Ok(String::from_utf8_lossy(&text.0).into_owned())),
        Outcome::Err(e) => Ok(Err(e)),
    }
}

/// A sink that refuses to grow past [`MAX_REPLY`].
struct Bounded(Vec<u8>);

impl Write for Bounded {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.0.len() + b.len() > MAX_REPLY {
            return Err(io::Error::other(format!(
                "reply longer than {MAX_REPLY} bytes"
            )));
        }
        self.0.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sends one request and writes the reply's result to `out` as it arrives, of any size;
/// returns how the reply ended. `timeout` bounds each wait for the daemon, not the whole
/// reply. A failure to write to `out` is [`CallError::Output`].
pub fn call_to(
    socket: &Path,
    method: &str,
    params: &[String],
    timeout: Duration,
    out: &mut dyn Write,
) -> Result<Outcome, CallError> {
    let mut s = UnixStream::connect(socket).map_err(CallError::Connect)?;
    s.set_read_timeout(Some(timeout)).map_err(CallError::Io)?;
    s.set_write_timeout(Some(timeout)).map_err(CallError::Io)?;
    let req = json!({"id": 0, "method": method, "params": params});
    s.write_all(req.to_string().as_bytes())
        .map_err(CallError::Io)?;
    let mut dec = ReplyDecoder::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = s.read(&mut buf).map_err(CallError::Io)?;
        if n == 0 {
            return Err(CallError::Protocol(
                "connection closed before a reply".into(),
            ));
        }
        match dec.feed(&buf[..n], out) {
            Ok(Some(outcome)) => return Ok(outcome),
            Ok(None) => {}
            Err(reply::DecodeError::Malformed(m)) => return Err(CallError::Protocol(m)),
            Err(reply::DecodeError::Sink(e)) => return Err(CallError::Output(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_splits_concatenated_and_partial_values() {
        let mut js = JsonStream::new(MAX_MESSAGE);
        js.feed(br#"{"id":1,"method":"a","params":[]}{"id":2,"me"#);
        let v = js.next_value().expect("ok").expect("value");
        assert_eq!(v["id"], 1);
        assert!(js.next_value().expect("ok").is_none());
        js.feed(br#"thod":"b","params":["x"]}  "#);
        let r = parse_request(js.next_value().expect("ok").expect("value")).expect("req");
        assert_eq!(r.method, "b");
        assert_eq!(r.params, vec!["x".to_string()]);
        assert!(js.next_value().expect("ok").is_none());
    }

    #[test]
    fn malformed_requests_are_errors_not_panics() {
        let mut js = JsonStream::new(MAX_MESSAGE);
        js.feed(b"}{");
        assert!(js.next_value().is_err());
        for bad in [
            json!([1, 2]),
            json!({"id": 1}),
            json!({"id": 1, "method": 5}),
            json!({"id": 1, "method": "m", "params": [1]}),
            json!({"id": 1, "method": "m", "params": "x"}),
        ] {
            assert!(parse_request(bad).is_err());
        }
    }

    #[test]
    fn server_and_client_talk() {
        let dir = std::env::temp_dir().join(format!("unixctl-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let sock = dir.join("t.ctl");
        let _ = std::fs::remove_file(&sock);
        let l = UnixListener::bind(&sock).expect("bind");
        std::thread::spawn(move || {
            serve(l, |m, p| match m {
                "echo" => Ok(p.join(" ")),
                _ => Err(format!("unknown command '{m}'")),
            })
        });
        let t = Duration::from_secs(5);
        let r = call(&sock, "echo", &["a".into(), "b".into()], t).expect("call");
        assert_eq!(r, Ok("a b".to_string()));
        let r = call(&sock, "nope", &[], t).expect("call");
        assert_eq!(r, Err("unknown command 'nope'".to_string()));
        // Garbage gets an error reply and a closed connection, and the server keeps serving.
        let mut s = UnixStream::connect(&sock).expect("connect");
        s.write_all(b"]]]").expect("write");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        assert!(out.contains("\"error\":\"unexpected byte"), "{out}");
        assert!(call(&sock, "echo", &[], t).expect("call").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn streamed_results_arrive_whole_and_in_order() {
        let dir = std::env::temp_dir().join(format!("unixctl-stream-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let sock = dir.join("t.ctl");
        let _ = std::fs::remove_file(&sock);
        let l = UnixListener::bind(&sock).expect("bind");
        let line = |i: u32| format!(" n={i}, \"quoted\" \\ tab\there\n");
        std::thread::spawn(move || {
            serve(l, move |m, _| match m {
                "many" => Ok(Reply::Stream(Box::new((0..200_000).map(line)))),
                "one" => Ok(Reply::Text("one\n".into())),
                _ => Err(format!("unknown command '{m}'")),
            })
        });
        let t = Duration::from_secs(5);
        let mut got = Vec::new();
        let o = call_to(&sock, "many", &[], t, &mut got).expect("call");
        assert_eq!(o, Outcome::Ok);
        let want: String = (0..200_000).map(line).collect();
        assert!(
            got == want.as_bytes(),
            "{} bytes, want {}",
            got.len(),
            want.len()
        );
        assert_eq!(call(&sock, "many", &[], t).expect("call"), Ok(want));
        assert_eq!(
            call(&sock, "one", &[], t).expect("call"),
            Ok("one\n".into())
        );
        let mut got = Vec::new();
        let o = call_to(&sock, "nope", &[], t, &mut got).expect("call");
        assert_eq!(o, Outcome::Err("unknown command 'nope'".into()));
        assert!(got.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
