//! `ferrovs add-flows BR FILE|-`: adds a flow file of any size as one OpenFlow bundle over
//! the bridge's management socket (`<rundir>/<BR>.mgmt`), as `ovs-ofctl --bundle add-flows`
//! does, so the whole file is added or none of it.
//!
//! How: the file is read and parsed a line at a time (blank lines and `#` comments skipped),
//! so a parse error names its line before anything is committed. After the handshake
//! (OpenFlow 1.3 to 1.5, the highest both sides have; 1.3 uses the ONF bundle messages) the
//! client opens bundle 1 with `ATOMIC | ORDERED`, sends each flow as a bundle add whose xid
//! (and the flow_mod's) is its line number, then a barrier (so that every add has been
//! answered: a refused add is not in the bundle, and committing the rest would add part of
//! the file), then a commit and a second barrier. The daemon applies
//! the commit in one step and answers the barrier once the datapath's caches hold the new
//! flows, so the command returns when they forward. An error the daemon sends for an add or
//! for the commit is printed with the line it names, and the bundle is discarded (closing the
//! connection discards it too).
//!
//! Memory: writes go out in 256 KiB batches, and nothing is kept per line, so a million-flow
//! file costs the client its read buffer, not its size. A reader thread takes the daemon's
//! messages (errors, echo requests, the replies) so neither side waits on a full socket.
//!
//! Progress: when standard error is a terminal and the file has more than
//! [`PROGRESS_AFTER`] flows, one line there counts the flows sent (and the share of the
//! file read), updated in place.

use openflow::messages::OfError;
use openflow::wire::msg::{bct, OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::{self, BundleAdd, BundleControl, Message};
use openflow::FlowModCommand;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Flows sent before a progress line appears.
pub const PROGRESS_AFTER: u64 = 10_000;
const BATCH_BYTES: usize = 256 << 10;
const BUNDLE_ID: u32 = 1;
const FLAGS: u16 = OFPBF_ATOMIC | OFPBF_ORDERED;
// Line numbers are below 2^31; the control messages use xids above.
const XID_HELLO: u32 = 0xffff_ff00;
const XID_OPEN: u32 = 0xffff_ff01;
const XID_COMMIT: u32 = 0xffff_ff02;
const XID_BARRIER: u32 = 0xffff_ff03;
const XID_DISCARD: u32 = 0xffff_ff04;
const XID_STAGED: u32 = 0xffff_ff05;

/// What went wrong, and the exit status for it (1: refused, 2: cannot reach or read).
struct Fail(u8, String);

/// Runs `add-flows BR PATH` against the daemon whose run directory is `rundir`.
pub fn run(rundir: &Path, br: &str, path: &str, timeout: Duration) -> ExitCode {
    match add_flows(rundir, br, path, timeout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(code, msg)) => {
            eprintln!("ferrovs: add-flows: {msg}");
            ExitCode::from(code)
        }
    }
}

/// The daemon's messages, as the reader thread passes them on.
enum Event {
    Msg(u32, Message),
    Closed(String),
}

struct Conn {
    w: Arc<Mutex<UnixStream>>,
    rx: Receiver<Event>,
    version: u8,
    out: Vec<u8>,
}

impl Conn {
    fn send(&mut self, m: &Message, xid: u32) -> Result<(), Fail> {
        let b = wire::encode(m, self.version, xid)
            .map_err(|e| Fail(1, format!("cannot encode message {xid}: {e}")))?;
        self.out.extend_from_slice(&b);
        if self.out.len() >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Fail> {
        if self.out.is_empty() {
            return Ok(());
        }
        let mut w = self
            .w
            .lock()
            .map_err(|_| Fail(2, "writer lock poisoned".into()))?;
        w.write_all(&self.out)
            .map_err(|e| Fail(2, format!("connection to the daemon lost: {e}")))?;
        self.out.clear();
        Ok(())
    }

    /// An error the daemon sent about one of ours, as text, if one is waiting.
    fn pending_error(&mut self) -> Result<(), Fail> {
        while let Ok(ev) = self.rx.try_recv() {
            check(ev)?;
        }
        Ok(())
    }
}

/// Turns an event into an error if it is one; replies and anything else pass.
fn check(ev: Event) -> Result<Option<(u32, Message)>, Fail> {
    match ev {
        Event::Closed(why) => Err(Fail(2, format!("the daemon closed the connection: {why}"))),
        Event::Msg(xid, Message::Error(e)) => {
            let err = match e.experimenter {
                Some(_) => OfError::nx(e.code),
                None => OfError::new(e.type_, e.code),
            };
            let kind = err
                .type_name()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default();
            Err(Fail(1, format!("{}: {err}{kind}", what(xid))))
        }
        Event::Msg(xid, m) => Ok(Some((xid, m))),
    }
}

fn what(xid: u32) -> String {
    match xid {
        XID_HELLO => "handshake".into(),
        XID_OPEN => "bundle open".into(),
        XID_COMMIT => "bundle commit".into(),
        XID_BARRIER => "barrier".into(),
        XID_DISCARD => "bundle discard".into(),
        XID_STAGED => "barrier after the adds".into(),
        n => format!("line {n}"),
    }
}

fn add_flows(rundir: &Path, br: &str, path: &str, timeout: Duration) -> Result<(), Fail> {
    let (input, size): (Box<dyn Read>, Option<u64>) = if path == "-" {
        (Box::new(std::io::stdin()), None)
    } else {
        let f = std::fs::File::open(path).map_err(|e| Fail(1, format!("{path}: {e}")))?;
        let size = f.metadata().ok().map(|m| m.len()).filter(|n| *n > 0);
        (Box::new(f), size)
    };
    let mgmt = rundir.join(format!("{br}.mgmt"));
    let stream = UnixStream::connect(&mgmt).map_err(|e| {
        Fail(
            2,
            format!(
                "{}: {e} (is ferrovsd running, and is {br} a bridge?)",
                mgmt.display()
            ),
        )
    })?;
    let mut conn = handshake(stream, &mgmt, timeout)?;
    let open = BundleControl {
        bundle_id: BUNDLE_ID,
        ctrl_type: bct::OPEN_REQUEST,
        flags: FLAGS,
        props: Vec::new(),
    };
    conn.send(&Message::BundleControl(open), XID_OPEN)?;
    let mut progress = Progress::new(size);
    let sent = send_lines(&mut conn, input, path, &mut progress);
    let sent = match sent {
        Ok(n) => n,
        Err(f) => {
            discard(&mut conn);
            return Err(f);
        }
    };
    // Every add answered first: a refused add is not in the bundle, and committing the
    // rest would add part of the file.
    conn.send(&Message::BarrierRequest, XID_STAGED)?;
    conn.flush()?;
    if let Err(f) = wait_barrier(&mut conn, XID_STAGED, timeout) {
        discard(&mut conn);
        progress.done(sent, false);
        return Err(f);
    }
    let commit = BundleControl {
        bundle_id: BUNDLE_ID,
        ctrl_type: bct::COMMIT_REQUEST,
        flags: FLAGS,
        props: Vec::new(),
    };
    conn.send(&Message::BundleControl(commit), XID_COMMIT)?;
    conn.send(&Message::BarrierRequest, XID_BARRIER)?;
    conn.flush()?;
    progress.committing(sent);
    let r = wait_barrier(&mut conn, XID_BARRIER, timeout);
    progress.done(sent, r.is_ok());
    r
}

/// Hello both ways and the version: the highest both have, at least 1.3 (bundles).
fn handshake(stream: UnixStream, mgmt: &Path, timeout: Duration) -> Result<Conn, Fail> {
    let lost = |e: std::io::Error| Fail(2, format!("{}: {e}", mgmt.display()));
    let mut r = stream.try_clone().map_err(lost)?;
    let mut w = stream;
    let hello = Message::Hello(wire::Hello::for_versions(&wire::VERSIONS));
    let h = wire::encode(&hello, wire::OFP15, XID_HELLO)
        .map_err(|e| Fail(2, format!("cannot encode hello: {e}")))?;
    w.write_all(&h).map_err(lost)?;
    r.set_read_timeout(Some(timeout)).map_err(lost)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (peer, peer_version) = loop {
        if let Ok((frames, _)) = wire::split(&buf) {
            if let Some(f) = frames.first() {
                let h = wire::Header::parse(f).map_err(|e| Fail(2, format!("handshake: {e}")))?;
                if h.type_ != 0 {
                    return Err(Fail(2, "handshake: the daemon did not say hello".into()));
                }
                let peer = match wire::decode(f) {
                    Ok((Message::Hello(x), _)) => x,
                    _ => wire::Hello::default(),
                };
                let used = usize::from(h.length);
                buf.drain(..used);
                break (peer, h.version);
            }
        }
        let n = r.read(&mut chunk).map_err(lost)?;
        if n == 0 {
            return Err(Fail(
                2,
                "handshake: the daemon closed the connection".into(),
            ));
        }
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
    };
    let version = wire::VERSIONS
        .iter()
        .copied()
        .filter(|v| *v >= wire::OFP13 && peer.supports(peer_version, *v))
        .max()
        .ok_or_else(|| {
            Fail(
                2,
                "the daemon offers no OpenFlow version with bundles".into(),
            )
        })?;
    r.set_read_timeout(None).map_err(lost)?;
    let w = Arc::new(Mutex::new(w));
    let (tx, rx) = mpsc::channel();
    let w2 = Arc::clone(&w);
    std::thread::spawn(move || read_loop(r, buf, w2, version, tx));
    Ok(Conn {
        w,
        rx,
        version,
        out: Vec::with_capacity(BATCH_BYTES + 4096),
    })
}

/// The reader thread: passes errors and replies on, answers echo requests. Ends at EOF, on
/// bad framing, or when the main thread is gone.
fn read_loop(
    mut r: UnixStream,
    mut buf: Vec<u8>,
    w: Arc<Mutex<UnixStream>>,
    version: u8,
    tx: mpsc::Sender<Event>,
) {
    let mut chunk = vec![0u8; 65536];
    loop {
        let (frames, used) = match wire::split(&buf) {
            Ok((f, used)) => (f.into_iter().map(<[u8]>::to_vec).collect::<Vec<_>>(), used),
            Err(e) => {
                let _ = tx.send(Event::Closed(format!("bad framing: {e}")));
                return;
            }
        };
        buf.drain(..used);
        for f in frames {
            let Ok((h, m, _)) = wire::decode_frame(&f) else {
                continue; // a message we cannot decode cannot be ours to wait for
            };
            if let Message::EchoRequest(d) = m {
                if let (Ok(b), Ok(mut w)) = (
                    wire::encode(&Message::EchoReply(d), version, h.xid),
                    w.lock(),
                ) {
                    let _ = w.write_all(&b);
                }
                continue;
            }
            if tx.send(Event::Msg(h.xid, m)).is_err() {
                return;
            }
        }
        match r.read(&mut chunk) {
            Ok(0) => {
                let _ = tx.send(Event::Closed("end of stream".into()));
                return;
            }
            Ok(n) => buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.send(Event::Closed(e.to_string()));
                return;
            }
        }
    }
}

/// Parses and sends every flow of `input`; returns how many were sent.
fn send_lines(
    conn: &mut Conn,
    input: Box<dyn Read>,
    path: &str,
    progress: &mut Progress,
) -> Result<u64, Fail> {
    let mut rd = BufReader::with_capacity(1 << 20, input);
    let mut line = String::new();
    let mut lineno: u32 = 0;
    let mut sent = 0u64;
    let mut read_bytes = 0u64;
    loop {
        line.clear();
        let n = rd
            .read_line(&mut line)
            .map_err(|e| Fail(1, format!("{path}: line {}: {e}", lineno + 1)))?;
        if n == 0 {
            break;
        }
        read_bytes += n as u64;
        lineno = lineno
            .checked_add(1)
            .filter(|l| *l < XID_HELLO)
            .ok_or_else(|| Fail(1, format!("{path}: too many lines")))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fm = openflow::text::parse_flow(t, FlowModCommand::Add)
            .map_err(|e| Fail(1, format!("line {lineno}: {e}")))?;
        let inner = wire::encode(&Message::FlowMod(fm), conn.version, lineno)
            .map_err(|e| Fail(1, format!("line {lineno}: {e}")))?;
        let add = BundleAdd {
            bundle_id: BUNDLE_ID,
            flags: FLAGS,
            message: inner,
            props: Vec::new(),
        };
        conn.send(&Message::BundleAdd(add), lineno)?;
        sent += 1;
        if sent.is_multiple_of(4096) {
            conn.pending_error()?;
            progress.tick(sent, read_bytes);
        }
    }
    conn.flush()?;
    conn.pending_error()?;
    Ok(sent)
}

/// Waits for the barrier's reply; an error before it (for an add or the commit) fails.
fn wait_barrier(conn: &mut Conn, xid: u32, timeout: Duration) -> Result<(), Fail> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = match conn.rx.recv_timeout(left) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => {
                return Err(Fail(
                    2,
                    format!("no answer to the {} in {} s", what(xid), timeout.as_secs()),
                ))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Fail(2, "the daemon closed the connection".into()))
            }
        };
        if let Some((x, Message::BarrierReply)) = check(ev)? {
            if x == xid {
                return Ok(());
            }
        }
    }
}

/// Best effort: tell the daemon to drop the bundle (closing the connection drops it too).
fn discard(conn: &mut Conn) {
    let d = BundleControl {
        bundle_id: BUNDLE_ID,
        ctrl_type: bct::DISCARD_REQUEST,
        flags: FLAGS,
        props: Vec::new(),
    };
    if conn.send(&Message::BundleControl(d), XID_DISCARD).is_ok() {
        let _ = conn.flush();
    }
}

/// The progress line on standard error (a terminal only).
struct Progress {
    on: bool,
    size: Option<u64>,
    shown: bool,
    last: Instant,
}

impl Progress {
    fn new(size: Option<u64>) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
            size,
            shown: false,
            last: Instant::now(),
        }
    }

    fn tick(&mut self, sent: u64, read: u64) {
        if !self.on || sent < PROGRESS_AFTER || self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        self.shown = true;
        let share = self
            .size
            .map(|s| format!(" ({}% of the file)", (read.min(s) * 100) / s))
            .unwrap_or_default();
        eprint!("\radd-flows: {sent} flows sent{share}   ");
    }

    fn committing(&mut self, sent: u64) {
        if self.on && sent >= PROGRESS_AFTER {
            self.shown = true;
            eprint!("\radd-flows: {sent} flows sent, committing...        ");
        }
    }

    fn done(&mut self, sent: u64, ok: bool) {
        if self.shown {
            if ok {
                eprintln!("\radd-flows: {sent} flows added                      ");
            } else {
                eprintln!();
            }
        }
    }
}
