//! The protocol core of one OpenFlow connection: hello and version negotiation, framing,
//! echo, and the inactivity probe, as a state machine with no socket, no thread and no
//! clock.
//!
//! ## How it is driven
//! The connection's reader ([`super::conn`]) owns a [`Session`]. It hands over whatever
//! bytes the socket gave ([`Session::receive`]) and then calls [`Session::poll`] with the
//! current time until it returns `None`, acting on each [`Event`] in order: send the bytes
//! of a `Transmit`, record the version of `Up`, count, snoop and (when asked) answer a
//! `Received` message, and close on `Close`. [`Session::new`] queues our hello, so the
//! first poll sends it. Nothing else in the session waits or locks: it is owned by one
//! thread and changed through `&mut self`, and its tests run it with a made-up clock.
//!
//! Events come out in the order their causes happened. A message's own event
//! (`Received`) always comes first, then whatever it causes: the reply to an echo, the
//! error for a message in the wrong version, `Up`, or the hello failure and `Close`. The
//! driver answers requests as it gets them, so a `Transmit` goes out after the replies to
//! every earlier message.
//!
//! ## Negotiation
//! We send a hello in our highest version with a bitmap of every version we allow. The
//! connection is up at the highest version both sides support: the peer's bitmap if its
//! hello has one, else every version up to its header's (an undecodable hello counts as
//! one without a bitmap). No common version, or a first message that is not a hello, gets
//! `HELLO_FAILED/INCOMPATIBLE` with a line of text, in the lower of our highest version
//! and the peer's, and the connection closes. Once up, a hello is ignored and any other
//! message in another version gets `BAD_REQUEST/BAD_VERSION` and is otherwise dropped.
//!
//! ## Framing
//! Messages are cut at the header's length. A header whose length is below the header's
//! own 8 bytes cannot be framed: it gets `BAD_REQUEST/BAD_LEN` (in the negotiated version,
//! else the header's) and its 8 bytes are skipped, so the connection carries on with what
//! follows. It does not count as a message.
//!
//! ## Echo and inactivity probe
//! An echo request is answered with an echo reply carrying the same bytes; echo replies
//! are taken in silently. Activity is a complete message, and it counts at the `now` of
//! the poll *after* the one that gave the message out: the driver may take a while to
//! answer (a barrier waits for the datapath), and a peer waiting for an answer is not idle.
//! With nothing received for the probe interval `T` (at least [`MIN_PROBE_MS`]) an up
//! session sends one echo request; with nothing for `2T` it closes, up or not, and says
//! how many bytes of an unfinished message it was holding (a peer that dribbles a message
//! byte by byte is cut off just the same).

use openflow::messages::err::{self, bad_request};
use openflow::wire::{self, DecodeError, Header, Hello, Message};
use openflow::OfError;
use std::collections::VecDeque;

/// The shortest inactivity probe interval.
pub const MIN_PROBE_MS: u64 = 100;
/// Our echo requests use xids just above this (a range controllers rarely use).
const PROBE_XID_BASE: u32 = 0x7f00_0000;
/// Message types with the same number in every version.
const OFPT_HELLO: u8 = 0;
const OFPT_ERROR: u8 = 1;
const OFPT_ECHO_REQUEST: u8 = 2;
const OFPT_ECHO_REPLY: u8 = 3;
/// `OFPHFC_INCOMPATIBLE`.
const HELLO_INCOMPATIBLE: u16 = 0;

/// What the driver must do next. See the module documentation for the order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Send these bytes.
    Transmit(Vec<u8>),
    /// A complete message arrived (every message is reported once, whatever the session
    /// does with it). `request` is true when the driver must answer it: a message in the
    /// negotiated version that is not a hello or an echo.
    Received {
        header: Header,
        bytes: Vec<u8>,
        request: bool,
    },
    /// Negotiation succeeded: the connection speaks this version from now on.
    Up(u8),
    /// Close the connection (after sending the `Transmit`s before this).
    Close(Close),
}

/// Why a session ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// No version in common, or a first message that was not a hello.
    HelloFailed,
    /// Nothing received for twice the probe interval; `partial` bytes of an unfinished
    /// message were buffered.
    Inactive { partial: usize },
}

/// One connection's protocol state. See the module documentation.
#[derive(Debug)]
pub struct Session {
    /// Versions we allow.
    ours: Vec<u8>,
    probe_ms: u64,
    /// The negotiated version, once up.
    version: Option<u8>,
    /// Received bytes; those before `off` are consumed.
    buf: Vec<u8>,
    off: usize,
    out: VecDeque<Event>,
    last_rx_ms: u64,
    /// A message was given out and its activity not yet dated (see the module doc).
    undated: bool,
    /// The probe for the current idle period was sent.
    probed: bool,
    echo_xid: u32,
    closed: bool,
}

impl Session {
    /// A session allowing `versions`, probing after `inactivity_probe_ms` without input,
    /// starting at `now_ms`. Its first event is our hello.
    pub fn new(versions: &[u8], inactivity_probe_ms: u64, now_ms: u64) -> Session {
        let mut s = Session {
            ours: versions.to_vec(),
            probe_ms: inactivity_probe_ms.max(MIN_PROBE_MS),
            version: None,
            buf: Vec::new(),
            off: 0,
            out: VecDeque::new(),
            last_rx_ms: now_ms,
            undated: false,
            probed: false,
            echo_xid: PROBE_XID_BASE,
            closed: false,
        };
        let hello = Message::Hello(Hello::for_versions(versions));
        if let Ok(bytes) = wire::encode(&hello, s.top(), 0) {
            s.out.push_back(Event::Transmit(bytes));
        }
        s
    }

    /// Takes bytes read from the peer (ignored once the session is closed).
    pub fn receive(&mut self, bytes: &[u8]) {
        if self.closed {
            return;
        }
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// The next event at time `now_ms`, or `None` when there is nothing to do until more
    /// bytes arrive or time passes.
    pub fn poll(&mut self, now_ms: u64) -> Option<Event> {
        if std::mem::take(&mut self.undated) {
            self.last_rx_ms = now_ms;
            self.probed = false;
        }
        loop {
            if let Some(ev) = self.out.pop_front() {
                return Some(ev);
            }
            if self.closed {
                return None;
            }
            let rest = self.buf.get(self.off..).unwrap_or_default();
            match Header::parse(rest) {
                Ok(h) if rest.len() >= usize::from(h.length) => {
                    let bytes = rest.get(..usize::from(h.length)).unwrap_or(rest).to_vec();
                    self.off += bytes.len();
                    self.undated = true;
                    let request = self.classify(h, &bytes);
                    return Some(Event::Received {
                        header: h,
                        bytes,
                        request,
                    });
                }
                Ok(_) | Err(DecodeError::Truncated) => {
                    self.compact();
                    return self.timers(now_ms);
                }
                Err(e) => self.bad_frame(&e),
            }
        }
    }

    /// Our highest version (what our hello is sent in).
    fn top(&self) -> u8 {
        self.ours.iter().copied().max().unwrap_or(wire::OFP13)
    }

    fn compact(&mut self) {
        self.buf.drain(..self.off.min(self.buf.len()));
        self.off = 0;
    }

    /// Decides what becomes of a complete message, queueing what it causes; true if the
    /// driver must answer it.
    fn classify(&mut self, h: Header, bytes: &[u8]) -> bool {
        let Some(v) = self.version else {
            self.negotiate(h, bytes);
            return false;
        };
        match h.type_ {
            // A late hello is harmless.
            OFPT_HELLO => false,
            _ if h.version != v => {
                let e = OfError::bad_request(bad_request::BAD_VERSION);
                self.transmit(error_reply(e, v, Some(v), bytes));
                false
            }
            OFPT_ECHO_REQUEST => {
                let data = bytes.get(wire::HEADER_LEN..).unwrap_or_default().to_vec();
                self.transmit(wire::encode(&Message::EchoReply(data), v, h.xid).ok());
                false
            }
            OFPT_ECHO_REPLY => false,
            _ => true,
        }
    }

    fn negotiate(&mut self, h: Header, bytes: &[u8]) {
        if h.type_ != OFPT_HELLO {
            return self.hello_failed(h, "expected a hello".into());
        }
        let hello = match wire::decode(bytes) {
            Ok((Message::Hello(x), _)) => x,
            _ => Hello::default(),
        };
        let best = self
            .ours
            .iter()
            .copied()
            .filter(|v| hello.supports(h.version, *v))
            .max();
        match best {
            Some(v) => {
                self.version = Some(v);
                self.out.push_back(Event::Up(v));
            }
            None => {
                let why = format!(
                    "we support versions {:?}, the peer {}",
                    self.ours, h.version
                );
                self.hello_failed(h, why);
            }
        }
    }

    /// Refuses the peer's first message and closes.
    fn hello_failed(&mut self, h: Header, why: String) {
        let v = self.top().min(h.version.max(1));
        self.transmit(Some(hello_failed_bytes(v, h.xid, why.as_bytes())));
        self.out.push_back(Event::Close(Close::HelloFailed));
        self.closed = true;
    }

    /// Answers and skips a header that cannot be framed.
    fn bad_frame(&mut self, e: &DecodeError) {
        let rest = self.buf.get(self.off..).unwrap_or_default();
        let hdr = rest.get(..wire::HEADER_LEN).unwrap_or(rest).to_vec();
        self.off += hdr.len();
        let v = self
            .version
            .unwrap_or_else(|| hdr.first().copied().unwrap_or(wire::OFP13));
        self.transmit(error_reply(e.to_of_error(), v, self.version, &hdr));
    }

    /// The inactivity probe and its deadline.
    fn timers(&mut self, now_ms: u64) -> Option<Event> {
        let idle = now_ms.saturating_sub(self.last_rx_ms);
        if idle >= self.probe_ms * 2 {
            self.closed = true;
            let partial = self.buf.len() - self.off.min(self.buf.len());
            return Some(Event::Close(Close::Inactive { partial }));
        }
        let v = self.version?;
        if idle >= self.probe_ms && !self.probed {
            self.probed = true;
            self.echo_xid = self.echo_xid.wrapping_add(1);
            let probe = Message::EchoRequest(Vec::new());
            return wire::encode(&probe, v, self.echo_xid)
                .ok()
                .map(Event::Transmit);
        }
        None
    }

    fn transmit(&mut self, bytes: Option<Vec<u8>>) {
        if let Some(b) = bytes {
            self.out.push_back(Event::Transmit(b));
        }
    }
}

/// The error message answering `req` (which it carries, and whose xid it
/// takes even when the header is bad) in version `v`; a version the codec does not speak
/// falls back to 1.5 if above it, else to the negotiated version `up`, else to 1.0.
pub fn error_reply(e: OfError, v: u8, up: Option<u8>, req: &[u8]) -> Option<Vec<u8>> {
    let v = if wire::VERSIONS.contains(&v) {
        v
    } else if v > wire::OFP15 {
        wire::OFP15
    } else {
        up.unwrap_or(wire::OFP10)
    };
    let xid = req
        .get(4..8)
        .map(|x| u32::from_be_bytes([x[0], x[1], x[2], x[3]]))
        .unwrap_or(0);
    wire::encode(&wire::error_reply(e, v, req), v, xid).ok()
}

/// `HELLO_FAILED/INCOMPATIBLE` with text `why`. Built here rather than by the codec: the
/// error message has the same layout in every version, including ones the codec does not
/// speak, and a peer offering only those must still be told.
fn hello_failed_bytes(v: u8, xid: u32, why: &[u8]) -> Vec<u8> {
    let why = why.get(..256).unwrap_or(why);
    let len = (wire::HEADER_LEN + 4 + why.len()) as u16;
    let mut out = Vec::with_capacity(usize::from(len));
    out.extend_from_slice(&[v, OFPT_ERROR]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&xid.to_be_bytes());
    out.extend_from_slice(&err::OFPET_HELLO_FAILED.to_be_bytes());
    out.extend_from_slice(&HELLO_INCOMPATIBLE.to_be_bytes());
    out.extend_from_slice(why);
    out
}

#[cfg(test)]
mod tests;
