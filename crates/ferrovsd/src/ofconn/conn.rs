//! One OpenFlow connection: its socket and threads, and the per-connection state
//! asynchronous messages depend on.
//!
//! ## Protocol
//! Negotiation, framing, echo and the inactivity probe are the I/O-free [`Session`]'s
//! ([`super::session`]): the reader gives it what it reads and the time, and does what its
//! events say — send bytes, record the negotiated version, answer a request
//! ([`super::handle`]), close. Roles are [`super::role`]'s. Everything here is the I/O
//! around them.
//!
//! ## Threads
//! [`run`] is the reader: it owns the receive side and loops reading with a 100 ms timeout
//! (which is also how often the session's timers are looked at), answering each request in
//! order; while the peer talks back to back it polls briefly before it sleeps
//! ([`super::spin`]). A peer streaming a bundle's adds expects no answer until it sends
//! something else, so after a short read that ended with a bundle add the reader waits
//! [`BUNDLE_BATCH_WAIT`] before reading again: `ovs-ofctl --bundle add-flows` of 100K flows
//! then costs a few thousand reads instead of one read and one wake-up per flow.
//!
//! Everything to be sent — replies, echo probes, asynchronous messages from the dispatcher —
//! goes through one bounded queue to a writer thread, so messages leave in the order they
//! were produced and a slow peer never blocks the dispatcher (asynchronous
//! messages that find the queue full are dropped and counted; replies wait). A reply that
//! finds nothing queued or being written is written by the reader itself under the same
//! lock the writer holds while it writes (`out`), which keeps the order and saves two
//! thread hand-offs per request: a barrier after every flow_mod, as `ovs-ofctl add-flows`
//! sends, costs one system call instead of two wake-ups. Both threads end when the peer
//! closes, a write fails, the session gives up (hello failure, inactivity), or
//! [`Conn::close`] is called; the connection then leaves the bridge's list.
//!
//! The negotiated version is published in an atomic (0 until then) for the dispatcher's
//! threads; the role, async configuration and the rest live in [`ConnState`] behind a
//! mutex, as other connections' role requests and the dispatcher read and change them.

use super::role::Role;
use super::session::{self, Close, Event, Session};
use super::{lock, BridgeOf};
use crate::ofconn::target::Stream;
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender, TrySendError};
use openflow::actions::OFPCML_NO_BUFFER;
use openflow::wire::nicira::{NxMessage, PacketIn2, NXPIF_NXT_PACKET_IN2};
use openflow::wire::{self, Message};
use openflow::OfError;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Outgoing messages a connection may queue.
pub const OUT_QUEUE: usize = 4096;
/// Bytes of replies queued per connection before the reader waits for the peer to read.
pub const OUT_QUEUE_BYTES: usize = 32 << 20;
/// Bytes queued beyond which asynchronous messages (packet-ins, flow-removed, port status,
/// monitor updates) are dropped and counted, as a slow controller must not grow memory.
pub const ASYNC_QUEUE_BYTES: usize = 16 << 20;
/// How long a reply may wait for room before the connection is closed.
pub const REPLY_WAIT: Duration = Duration::from_secs(10);
/// After a short read that ended with a bundle add, the reader waits this long before the
/// next read, so that a streamed bundle arrives in few large reads (see `reader`).
pub const BUNDLE_BATCH_WAIT: Duration = Duration::from_micros(100);
/// `OFPT_BUNDLE_ADD_MESSAGE` (OpenFlow 1.4 and later).
const BUNDLE_ADD: u8 = 34;

/// What kind of peer this is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnKind {
    /// A client of `<bridge>.mgmt` (ovs-ofctl): not a controller.
    Mgmt,
    /// A controller, named by its configured target.
    Controller(String),
}

impl ConnKind {
    pub fn is_controller(&self) -> bool {
        matches!(self, ConnKind::Controller(_))
    }
    pub fn target(&self) -> Option<&String> {
        match self {
            ConnKind::Controller(t) => Some(t),
            ConnKind::Mgmt => None,
        }
    }
}

/// Async-config masks in OpenFlow 1.4 property order: packet-in slave/master, port-status
/// slave/master, flow-removed slave/master, role-status slave/master, table-status
/// slave/master, requestforward slave/master.
pub type AsyncMasks = [u32; 12];

/// The spec's defaults: masters get every packet-in, port-status and flow-removed reason;
/// slaves only port-status. Role status (every reason) and table status (vacancy down and
/// up) go to both; request forwarding only to connections that ask for it.
pub const DEFAULT_ASYNC: AsyncMasks = [0, 0x7, 0x7, 0x7, 0, 0xf, 0x7, 0x7, 0x18, 0x18, 0, 0];

/// Asynchronous message kinds, as indexes into [`AsyncMasks`] pairs.
pub mod kind {
    pub const PACKET_IN: usize = 0;
    pub const PORT_STATUS: usize = 1;
    pub const FLOW_REMOVED: usize = 2;
    pub const ROLE_STATUS: usize = 3;
    pub const TABLE_STATUS: usize = 4;
    pub const REQUESTFORWARD: usize = 5;
}

/// Mutable per-connection state.
pub struct ConnState {
    pub role: Role,
    pub async_masks: AsyncMasks,
    pub miss_send_len: u16,
    /// Nicira: flow_mod commands carry a table id in their high byte.
    pub table_id_ext: bool,
    /// Nicira flow format (0 OpenFlow 1.0, 2 NXM).
    pub flow_format: u32,
    /// `NXPIF_*` chosen with `NXT_SET_PACKET_IN_FORMAT`: 0 standard, 2 `NXT_PACKET_IN2`.
    pub packet_in_format: u32,
    pub controller_id: u16,
    tokens: f64,
    refill: Instant,
    /// Changes applied since the last sync with the datapath caches.
    pub dirty: bool,
    /// Open bundles.
    pub bundles: super::bundle::Bundles,
    /// Flow monitors.
    pub monitors: Vec<super::monitor::Monitor>,
}

/// See the module documentation.
pub struct Conn {
    pub id: u64,
    pub kind: ConnKind,
    pub peer: String,
    version: AtomicU8,
    tx: Sender<Vec<u8>>,
    /// Messages queued on `tx` and not yet written.
    queued: AtomicUsize,
    /// Bytes queued on `tx` and not yet written.
    queued_bytes: AtomicUsize,
    /// The sending half of the socket, held by whoever writes.
    out: Mutex<Stream>,
    bridge: Weak<BridgeOf>,
    pub st: Mutex<ConnState>,
    closed: AtomicBool,
    stream: Stream,
    pub rx_msgs: AtomicU64,
    pub tx_msgs: AtomicU64,
    pub async_drops: AtomicU64,
    pub pin_sent: AtomicU64,
    pub pin_dropped: AtomicU64,
    rate: (f64, f64),
}

impl Conn {
    /// The negotiated version (0 before negotiation).
    pub fn version(&self) -> u8 {
        self.version.load(Ordering::Acquire)
    }

    pub fn is_up(&self) -> bool {
        self.version() != 0 && !self.closed.load(Ordering::Acquire)
    }

    /// Closes the connection (both threads end soon after).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.stream.shutdown();
    }

    /// One line for `get-controller`.
    pub fn describe(&self) -> String {
        let role = lock(&self.st).role.name();
        format!(
            "peer {} version 0x{:02x} role {role} rx {} tx {} packet_in sent {} rate-limited {} async dropped {}",
            self.peer,
            self.version(),
            self.rx_msgs.load(Ordering::Relaxed),
            self.tx_msgs.load(Ordering::Relaxed),
            self.pin_sent.load(Ordering::Relaxed),
            self.pin_dropped.load(Ordering::Relaxed),
            self.async_drops.load(Ordering::Relaxed),
        )
    }

    /// Sends raw bytes: written at once if nothing is queued ahead of them, else queued.
    /// A reply waits while more than [`OUT_QUEUE_BYTES`] (or [`OUT_QUEUE`] messages) are
    /// queued, which holds back the reader that produces replies; a peer that reads nothing
    /// for [`REPLY_WAIT`] is disconnected.
    pub fn send_raw(&self, bytes: Vec<u8>) {
        let deadline = Instant::now() + REPLY_WAIT;
        while self.queued_bytes.load(Ordering::Acquire) > OUT_QUEUE_BYTES
            || self.queued.load(Ordering::Acquire) >= OUT_QUEUE
        {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            if Instant::now() >= deadline {
                super::log(&format!(
                    "{}: {} bytes of replies unread for {} s; disconnecting",
                    self.peer,
                    self.queued_bytes.load(Ordering::Acquire),
                    REPLY_WAIT.as_secs()
                ));
                self.close();
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        {
            let mut out = lock(&self.out);
            if self.queued.load(Ordering::Acquire) == 0 {
                self.write_locked(&mut out, &bytes);
                return;
            }
            // Counted before the lock goes, so a later reply cannot overtake this one.
            self.queued.fetch_add(1, Ordering::AcqRel);
            self.queued_bytes.fetch_add(bytes.len(), Ordering::AcqRel);
        }
        let len = bytes.len();
        if self.tx.send_timeout(bytes, REPLY_WAIT).is_err() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.queued_bytes.fetch_sub(len, Ordering::AcqRel);
            self.close();
        }
    }

    /// Writes one message with the `out` lock held; a failed write closes the connection.
    fn write_locked(&self, out: &mut Stream, bytes: &[u8]) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        if let Some(b) = self.bridge.upgrade() {
            b.snoop(bytes);
        }
        if out.write_all(bytes).is_err() {
            self.close();
            return;
        }
        self.tx_msgs.fetch_add(1, Ordering::Relaxed);
    }

    /// Encodes a message as this bridge sends it: `tun_metadata` matches at the lengths its
    /// TLV table maps (see `openflow::tun_metadata::with_map_lengths`).
    fn encode(&self, m: &Message, xid: u32) -> Result<Vec<u8>, wire::EncodeError> {
        let lens = self
            .bridge
            .upgrade()
            .map(|b| b.udpif.tlv.load().lengths())
            .unwrap_or([0; 64]);
        openflow::tun_metadata::with_map_lengths(lens, || wire::encode(m, self.version(), xid))
    }

    /// Encodes and queues a reply.
    pub fn send(&self, m: &Message, xid: u32) {
        match self.encode(m, xid) {
            Ok(b) => self.send_raw(b),
            Err(e) => super::log(&format!("cannot encode a reply: {e}")),
        }
    }

    /// Encodes and queues an asynchronous message (dropped if the queue is full).
    pub fn send_async(&self, m: &Message) {
        if !self.is_up() {
            return;
        }
        let Ok(b) = self.encode(m, 0) else {
            return;
        };
        let len = b.len();
        if self.queued_bytes.load(Ordering::Acquire) + len > ASYNC_QUEUE_BYTES
            || self.queued.load(Ordering::Acquire) >= OUT_QUEUE
        {
            self.async_drops.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.queued_bytes.fetch_add(len, Ordering::AcqRel);
        match self.tx.try_send(b) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.queued.fetch_sub(1, Ordering::AcqRel);
                self.queued_bytes.fetch_sub(len, Ordering::AcqRel);
                self.async_drops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether this connection takes asynchronous message `kind` (see [`kind`]) with
    /// `reason`.
    pub(super) fn wants(&self, st: &ConnState, kind: usize, reason: u8) -> bool {
        if !self.is_up() {
            return false;
        }
        // Management clients get asynchronous messages only after asking for them with a
        // non-zero miss_send_len, which an asynchronous configuration sets too (as in OVS).
        if self.kind == ConnKind::Mgmt && st.miss_send_len == 0 {
            return false;
        }
        let idx = kind * 2 + usize::from(st.role != Role::Slave);
        let mask = st.async_masks.get(idx).copied().unwrap_or(0);
        reason < 32 && mask & (1 << reason) != 0
    }

    /// The packet-in message for this connection, if it wants it and the rate allows.
    ///
    /// Only connections whose controller id (`NXT_SET_CONTROLLER_ID`, 0 until set) is the
    /// packet-in's get it: a `controller(id=N)` action's N, else 0, as OVS routes them. The
    /// reason (OVS's numbering, from the pipeline or a `controller(...)` action) is sent as
    /// the connection's version has it (see [`wire_reason`]).
    pub fn packet_in(&self, p: &ofproto::switch::PacketIn) -> Option<Message> {
        let (reason, controller_id) = match &p.extra {
            Some(x) => (wire_reason(x.reason, self.version()), x.controller_id),
            None => (wire_reason(p.reason as u8, self.version()), 0),
        };
        let mut st = lock(&self.st);
        if st.controller_id != controller_id || !self.wants(&st, kind::PACKET_IN, reason) {
            return None;
        }
        // Token bucket.
        let now = Instant::now();
        let dt = now.duration_since(st.refill).as_secs_f64();
        st.refill = now;
        st.tokens = (st.tokens + dt * self.rate.0).min(self.rate.1);
        if st.tokens < 1.0 {
            drop(st);
            self.pin_dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        st.tokens -= 1.0;
        let mut len = p.data.len();
        if p.reason == ofproto::odp::PacketInReason::NoMatch && st.miss_send_len != OFPCML_NO_BUFFER
        {
            len = len.min(usize::from(st.miss_send_len));
        }
        let format = st.packet_in_format;
        drop(st);
        self.pin_sent.fetch_add(1, Ordering::Relaxed);
        let full = self.version() != wire::OFP10 || format == NXPIF_NXT_PACKET_IN2;
        let tlv = self.bridge.upgrade().map(|b| b.udpif.tlv.load_full());
        let m = super::pin_meta::metadata(
            &p.key,
            &p.meta,
            tlv.as_deref().unwrap_or(&ofproto::tlv::TlvTable::default()),
            full,
        );
        if format == NXPIF_NXT_PACKET_IN2 {
            let (userdata, continuation) = match &p.extra {
                Some(x) => (x.userdata.clone(), x.continuation.clone()),
                None => (Vec::new(), Vec::new()),
            };
            return Some(Message::Nx(NxMessage::PacketIn2(PacketIn2 {
                data: p.data.get(..len).unwrap_or(&p.data).to_vec(),
                total_len: u32::try_from(p.total_len).unwrap_or(u32::MAX),
                buffer_id: openflow::messages::OFP_NO_BUFFER,
                table_id: p.table_id,
                cookie: p.cookie,
                reason,
                metadata: m,
                userdata,
                continuation,
            })));
        }
        Some(Message::PacketIn(wire::PacketIn {
            buffer_id: openflow::messages::OFP_NO_BUFFER,
            total_len: u16::try_from(p.total_len).unwrap_or(u16::MAX),
            reason,
            table_id: p.table_id,
            cookie: p.cookie,
            match_: m,
            data: p.data.get(..len).unwrap_or(&p.data).to_vec(),
        }))
    }

    /// The flow-removed message for this connection, if it wants it.
    pub fn flow_removed(&self, r: &ofproto::switch::FlowRemoved) -> Option<Message> {
        let reason = r.reason as u8;
        if !self.wants(&lock(&self.st), kind::FLOW_REMOVED, reason) {
            return None;
        }
        let rule = &r.rule;
        let (packets, bytes, _) = rule.stats.get();
        let alive = r.at_ms.saturating_sub(rule.created_ms);
        Some(Message::FlowRemoved(wire::FlowRemoved {
            cookie: rule.cookie,
            priority: rule.priority,
            reason,
            table_id: rule.table_id,
            duration_sec: (alive / 1000) as u32,
            duration_nsec: ((alive % 1000) * 1_000_000) as u32,
            idle_timeout: rule.idle_timeout,
            hard_timeout: rule.hard_timeout,
            packet_count: packets,
            byte_count: bytes,
            match_: rule.match_.clone(),
        }))
    }

    /// The port-status message for this connection, if it wants it.
    pub fn port_status(&self, reason: u8, p: &wire::Port) -> Option<Message> {
        if !self.wants(&lock(&self.st), kind::PORT_STATUS, reason) {
            return None;
        }
        if self.version() == wire::OFP10 && p.port_no > 0xff00 && p.port_no < 0xffff_fff8 {
            return None;
        }
        Some(Message::PortStatus(wire::PortStatus {
            reason,
            port: p.clone(),
        }))
    }
}

/// Tells the dispatcher a port_mod changed a port's config (it re-reads the ports).
pub(crate) fn mark_port_dirty(b: &BridgeOf) {
    b.port_dirty.store(true, Ordering::Release);
}

pub(crate) fn take_port_dirty(b: &BridgeOf) -> bool {
    b.port_dirty.swap(false, Ordering::AcqRel)
}

fn writer(c: Arc<Conn>, rx: Receiver<Vec<u8>>) {
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => {
                let mut out = lock(&c.out);
                c.write_locked(&mut out, &m);
                c.queued.fetch_sub(1, Ordering::AcqRel);
                c.queued_bytes.fetch_sub(m.len(), Ordering::AcqRel);
                drop(out);
                if c.closed.load(Ordering::Acquire) {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if c.closed.load(Ordering::Acquire) {
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs a connection on the calling thread until it ends. See the module documentation.
pub fn run(
    b: &Arc<BridgeOf>,
    stream: Stream,
    kind: ConnKind,
    stop: &AtomicBool,
    slot: Option<&connlimit::Slot>,
) {
    let (Ok(rd), Ok(wr)) = (stream.try_clone(), stream.try_clone()) else {
        return;
    };
    let _ = stream.set_read_timeout(Duration::from_millis(100));
    let _ = wr.set_write_timeout(Duration::from_secs(10));
    let cfg = lock(&b.cfg).clone();
    // Bounded by `send_raw`/`send_async` in messages and bytes; a bounded channel would
    // preallocate all its slots (128 KB per connection).
    let (tx, rx) = unbounded::<Vec<u8>>();
    let c = Arc::new(Conn {
        id: b.next_conn.fetch_add(1, Ordering::Relaxed),
        kind,
        peer: stream.peer(),
        version: AtomicU8::new(0),
        tx,
        queued: AtomicUsize::new(0),
        queued_bytes: AtomicUsize::new(0),
        out: Mutex::new(wr),
        bridge: Arc::downgrade(b),
        st: Mutex::new(ConnState {
            role: Role::Equal,
            async_masks: DEFAULT_ASYNC,
            miss_send_len: 0,
            table_id_ext: false,
            flow_format: 0,
            packet_in_format: 0,
            controller_id: 0,
            tokens: f64::from(cfg.burst_limit),
            refill: Instant::now(),
            dirty: false,
            bundles: Default::default(),
            monitors: Vec::new(),
        }),
        closed: AtomicBool::new(false),
        stream,
        rx_msgs: AtomicU64::new(0),
        tx_msgs: AtomicU64::new(0),
        async_drops: AtomicU64::new(0),
        pin_sent: AtomicU64::new(0),
        pin_dropped: AtomicU64::new(0),
        rate: (
            f64::from(cfg.rate_limit.max(1)),
            f64::from(cfg.burst_limit.max(1)),
        ),
    });
    if c.kind.is_controller() {
        // Controllers get table misses by default (128 bytes), management clients none.
        lock(&c.st).miss_send_len = 128;
    }
    let c2 = Arc::clone(&c);
    let w = super::spawn("ofconn-tx", move || writer(c2, rx));
    if w.is_err() {
        return;
    }
    lock(&b.conns).push(Arc::clone(&c));
    reader(b, &c, rd, &cfg, stop, slot);
    c.close();
    lock(&b.conns).retain(|x| x.id != c.id);
    if let Ok(h) = w {
        let _ = h.join();
    }
}

fn reader(
    b: &Arc<BridgeOf>,
    c: &Arc<Conn>,
    mut rd: Stream,
    cfg: &super::OfSettings,
    stop: &AtomicBool,
    slot: Option<&connlimit::Slot>,
) {
    let now_ms = datapath::clock::now_ms;
    let mut s = Session::new(&cfg.versions, cfg.inactivity_probe_ms, now_ms());
    let mut batch = super::packet_out::OutBatch::default();
    let mut chunk = vec![0u8; 65536];
    let mut spin = super::spin::Spin::default();
    let mut last = None;
    // Our hello.
    if !drive(b, c, &mut s, &mut batch, slot, &mut last) {
        return;
    }
    let mut small = false;
    loop {
        if stop.load(Ordering::Acquire)
            || b.stop.load(Ordering::Acquire)
            || c.closed.load(Ordering::Acquire)
        {
            return;
        }
        // A peer streaming a bundle (`ovs-ofctl --bundle` sends every add without waiting)
        // expects nothing back until it asks: let its adds pile up for a moment instead of
        // taking them one read (and one wake-up) each.
        if small && last == Some(BUNDLE_ADD) && c.version() >= wire::OFP14 {
            std::thread::sleep(BUNDLE_BATCH_WAIT);
        }
        match spin.read(&mut rd, &mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                small = n < chunk.len() / 4;
                s.receive(chunk.get(..n).unwrap_or_default())
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
        super::bundle::expire(c, now_ms());
        if !drive(b, c, &mut s, &mut batch, slot, &mut last) {
            return;
        }
    }
}

/// Does what the session says until it has nothing more to say; false to close.
/// Requests are answered as they come, and the packet-outs among them run before anything
/// else is sent and before the reader waits again (see [`super::handle`]). `last` is set to
/// the type of the last message received.
fn drive(
    b: &Arc<BridgeOf>,
    c: &Arc<Conn>,
    s: &mut Session,
    batch: &mut super::packet_out::OutBatch,
    slot: Option<&connlimit::Slot>,
    last: &mut Option<u8>,
) -> bool {
    while let Some(ev) = s.poll(datapath::clock::now_ms()) {
        match ev {
            Event::Transmit(bytes) => {
                batch.flush(b, c);
                c.send_raw(bytes);
            }
            Event::Up(v) => c.version.store(v, Ordering::Release),
            Event::Received {
                header,
                bytes,
                request,
            } => {
                c.rx_msgs.fetch_add(1, Ordering::Relaxed);
                *last = Some(header.type_);
                b.snoop(&bytes);
                if request {
                    super::handle::request(b, c, header, &bytes, batch);
                }
                if let Some(s) = slot {
                    s.idle();
                }
            }
            Event::Close(why) => {
                batch.flush(b, c);
                if let Close::Inactive { partial } = why {
                    let partial = match partial {
                        0 => String::new(),
                        n => format!(" ({n} bytes of an unfinished message)"),
                    };
                    super::log(&format!(
                        "bridge {}: {}: no response to inactivity probe{partial}, disconnecting",
                        b.name, c.peer
                    ));
                }
                return false;
            }
        }
    }
    // Nothing more is buffered: run the packet-outs read so far before waiting.
    batch.flush(b, c);
    true
}

/// Sends the error answering `req`, in version `v` (a version we do not speak falls back to
/// the nearest one we do; see [`session::error_reply`]).
pub fn reply_error(c: &Conn, v: u8, e: OfError, req: &[u8]) {
    let up = c.is_up().then(|| c.version());
    if let Some(bytes) = session::error_reply(e, v, up, req) {
        c.send_raw(bytes);
    }
}

/// A packet-in reason (OVS's numbering) as `version` sends it: `action_set`, `group` and
/// `packet_out` (3-5) are `action` before OpenFlow 1.4; OVS's explicit table miss (6) is
/// `action` in 1.0 and `no_match` after, its implicit one (7) `no_match`.
fn wire_reason(r: u8, version: u8) -> u8 {
    match r {
        3..=5 if version < wire::OFP14 => 1,
        6 if version < wire::OFP13 => 1,
        6 | 7 => 0,
        r => r,
    }
}
