//! Bundles (OpenFlow 1.4 §6.8; the ONF extension of the same shape in 1.3): a controller
//! stages flow_mods, group_mods and port_mods on a connection and then commits them as one
//! change.
//!
//! ## State machine
//! [`Bundles`] is a connection's set of bundles, keyed by the controller's bundle id, and
//! does no I/O: every operation takes `now` and returns the spec's error.
//!
//! * `OPEN`: a new, empty, open bundle with the given flags. An id already in use is
//!   `BAD_ID`, and the existing bundle is discarded (as the spec says).
//! * `ADD`: the message is decoded and checked as far as it can be without switch state
//!   (its xid must be the add's, its version the connection's, its type one we can
//!   bundle: flow_mod, group_mod including 1.5's bucket commands, port_mod; anything else
//!   is `MSG_UNSUP`). A refused message is not added and the bundle stays, as in OVS
//!   (`ovs-ofctl --bundle` then discards it). An unknown id opens a bundle implicitly.
//!   An add flow_mod is also built into its rule now (`ofproto::switch::PreparedAdd`:
//!   the rule, its masked flow key and classifier entry), while the client is still
//!   sending the rest of the bundle, and filed into a classifier subtable per (table,
//!   mask) kept apart with the bundle (`ofproto::switch::BuiltAdds`), so that the commit
//!   can adopt those subtables whole. The first message that cannot be adopted with the
//!   adds (any other flow_mod or group_mod, an add identical to one filed, one that
//!   checks overlap) puts the filed adds back in their places and files no more: the
//!   commit then checks and inserts each. Neither building nor filing can fail, so which
//!   errors come at add time and which at commit is as before.
//!   Of each message's bytes the bundle keeps only what its error reply will carry (the
//!   first 64, see [`REQ_KEPT`]), all in one buffer ([`Reqs`]), not one allocation per
//!   message.
//! * `CLOSE`: no more adds. Closing twice is `BUNDLE_CLOSED`.
//! * `COMMIT`: takes the bundle's messages (open or closed) and removes the bundle, which
//!   then no longer exists whatever the outcome.
//! * `DISCARD`: removes the bundle.
//!
//! Flags other than `ATOMIC | ORDERED` are `BAD_FLAGS`; a close, add or commit whose flags
//! differ from the open's is `BAD_FLAGS` and discards the bundle. Bundles idle for
//! [`IDLE_TIMEOUT_MS`] are discarded with a `TIMEOUT` error answering the request that
//! opened them (OVS's behaviour; the spec leaves the time to the switch). No bundle
//! property is supported (1.5's scheduled commit included): any property is
//! `OFPET_BAD_PROPERTY / BAD_TYPE`. Over OpenFlow 1.3 the bundle errors go out as ONF
//! experimenter errors (see `openflow::wire::error_reply`).
//!
//! ## Commit
//! `commit` applies a bundle: port_mods are checked first, then every flow_mod and
//! group_mod runs in order inside [`ofproto::Ofproto::atomically`] in one write session
//! (the datapath keeps translating against the state before it until the session ends and
//! publishes it, see `ofproto::switch::versions`), then the port_mods are applied. Every
//! commit is both atomic and ordered, whatever the flags say. If a message fails, nothing
//! changes: the failing message gets its own error (with its xid and bytes), and the
//! commit gets `MSG_FAILED`. When the bundle's flow_mods are all filed adds, the commit
//! first offers them to `Ofproto::adopt_adds`, which takes each subtable whole when that
//! gives exactly what applying the adds in order would (no table has the mask, there is
//! room, every add passes its checks; see `ofproto::switch::adopt`) and otherwise hands
//! them back, unchanged, to be put in their places and applied one by one, which gives
//! the errors. Before the first message runs one by one, each run of at least
//! [`RESERVE_RUN`] prepared adds to one table and mask makes room for itself (the
//! classifier's id index and subtable, the table's change record and undo journal), so
//! 100K adds do not grow and rehash those tables on the way.

use super::conn::{reply_error, Conn};
use super::{handle, lock, mods, BridgeOf};
use ofproto::switch::{BuiltAdds, MaskCache, PreparedAdd};
use openflow::messages::err::{bad_request, bundle_failed as bf};
use openflow::messages::OFP_NO_BUFFER;
use openflow::wire::msg::{bct, OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::nicira::NxMessage;
use openflow::wire::{self, BundleAdd, BundleControl, Message};
use openflow::{FlowMod, GroupBucketMod, GroupMod, OfError};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A bundle with no operation for this long is discarded.
pub const IDLE_TIMEOUT_MS: u64 = 10_000;
/// Open bundles per connection.
pub const MAX_BUNDLES: usize = 256;
/// Messages per bundle, and in all of a connection's open bundles together (a million-flow
/// `ovs-ofctl --bundle add-flows` fits).
pub const MAX_MESSAGES: usize = 1 << 20;

/// Runs of at least this many adds to one subtable make room for themselves before the
/// commit applies them.
const RESERVE_RUN: usize = 64;

/// A message staged in a bundle.
#[derive(Debug)]
pub enum Staged {
    Flow(Box<FlowMod>),
    /// An add built ahead of the commit (`ofproto::switch::PreparedAdd`).
    Add(PreparedAdd),
    /// An add filed in its bundle's [`BuiltAdds`] (the next one there in order).
    Built,
    Group(GroupMod),
    GroupBuckets(GroupBucketMod),
    Port(wire::PortMod),
}

/// One staged message and the bytes it came in (for its error reply).
#[derive(Debug)]
pub struct Entry {
    pub op: Staged,
    pub req: Vec<u8>,
}

/// The bytes of a bundled request its error reply carries: the first 64, what the
/// specification asks for (`openflow::wire::error_reply` carries a whole request, as OVS
/// does, but a bundle of 100K adds keeping every message whole would double its memory).
const REQ_KEPT: usize = 64;

/// A message as its bundle keeps it: the bytes its error reply needs are in the bundle's
/// [`Reqs`], so that 100K adds do not keep 100K small allocations.
#[derive(Debug)]
pub struct Kept {
    pub op: Staged,
    /// Where its bytes are in the bundle's [`Reqs`].
    req: (u32, u8),
}

/// The first [`REQ_KEPT`] bytes of each message of a bundle, one after another.
#[derive(Debug, Default)]
pub struct Reqs(Vec<u8>);

impl Reqs {
    /// Keeps the start of `req`; its place for [`Reqs::get`].
    fn keep(&mut self, req: &[u8]) -> (u32, u8) {
        let req = req.get(..REQ_KEPT).unwrap_or(req);
        let at = self.0.len() as u32;
        self.0.extend_from_slice(req);
        (at, req.len() as u8)
    }

    /// The bytes kept at `req` (a [`Kept`]'s).
    fn get(&self, req: (u32, u8)) -> &[u8] {
        let (at, n) = (req.0 as usize, usize::from(req.1));
        self.0.get(at..at + n).unwrap_or_default()
    }
}

struct Bundle {
    flags: u16,
    closed: bool,
    used_ms: u64,
    /// The request that opened the bundle (a timeout error answers it).
    opened_by: Vec<u8>,
    entries: Vec<Kept>,
    reqs: Reqs,
    /// The adds filed while they arrive (see the module documentation), until a message
    /// that cannot be adopted with them arrives: then they go back into `entries`.
    built: BuiltAdds,
    /// A message that cannot be adopted arrived: adds are no longer filed.
    spilled: bool,
}

impl Bundle {
    /// Puts the filed adds back in their places in `entries` and files no more.
    fn spill(&mut self) {
        self.spilled = true;
        put_back(&mut self.entries, std::mem::take(&mut self.built));
    }
}

/// Puts `built`'s adds, in order, in the places `entries` keeps for them.
fn put_back(entries: &mut [Kept], built: BuiltAdds) {
    if built.is_empty() {
        return;
    }
    let mut adds = built.into_adds().into_iter();
    for e in entries.iter_mut().filter(|e| matches!(e.op, Staged::Built)) {
        if let Some(p) = adds.next() {
            e.op = Staged::Add(p);
        }
    }
}

/// A bundle's messages as the commit takes them.
#[derive(Default)]
pub struct Taken {
    pub entries: Vec<Kept>,
    pub reqs: Reqs,
    pub built: BuiltAdds,
}

/// A connection's bundles. See the module documentation.
#[derive(Default)]
pub struct Bundles {
    map: BTreeMap<u32, Bundle>,
    /// Messages in all bundles.
    total: usize,
    /// The mask of the last add prepared (see `ofproto::switch::MaskCache`).
    masks: MaskCache,
}

fn check_flags(flags: u16) -> Result<(), OfError> {
    if flags & !(OFPBF_ATOMIC | OFPBF_ORDERED) != 0 {
        return Err(OfError::bundle_failed(bf::BAD_FLAGS));
    }
    Ok(())
}

impl Bundles {
    /// Number of bundles.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if no bundle exists.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Removes bundle `id`, keeping the message count.
    fn drop_bundle(&mut self, id: u32) -> Option<Bundle> {
        let b = self.map.remove(&id)?;
        self.total -= b.entries.len();
        Some(b)
    }

    fn new_bundle(&mut self, id: u32, flags: u16, req: &[u8], now: u64) -> Result<(), OfError> {
        check_flags(flags)?;
        if self.map.len() >= MAX_BUNDLES {
            return Err(OfError::bundle_failed(bf::OUT_OF_BUNDLES));
        }
        self.map.insert(
            id,
            Bundle {
                flags,
                closed: false,
                used_ms: now,
                opened_by: req.get(..64).unwrap_or(req).to_vec(),
                entries: Vec::new(),
                reqs: Reqs::default(),
                built: BuiltAdds::default(),
                spilled: false,
            },
        );
        Ok(())
    }

    /// `OFPBCT_OPEN_REQUEST`.
    pub fn open(&mut self, id: u32, flags: u16, req: &[u8], now: u64) -> Result<(), OfError> {
        if self.drop_bundle(id).is_some() {
            return Err(OfError::bundle_failed(bf::BAD_ID));
        }
        self.new_bundle(id, flags, req, now)
    }

    /// The bundle `id`, checked for the flags of a close/add/commit; a mismatch discards it.
    fn existing(&mut self, id: u32, flags: u16, now: u64) -> Result<&mut Bundle, OfError> {
        let Some(b) = self.map.get(&id) else {
            return Err(OfError::bundle_failed(bf::BAD_ID));
        };
        if b.flags != flags {
            self.drop_bundle(id);
            return Err(OfError::bundle_failed(bf::BAD_FLAGS));
        }
        let b = self
            .map
            .get_mut(&id)
            .ok_or(OfError::bundle_failed(bf::BAD_ID))?;
        b.used_ms = now;
        Ok(b)
    }

    /// `OFPBCT_CLOSE_REQUEST`.
    pub fn close(&mut self, id: u32, flags: u16, now: u64) -> Result<(), OfError> {
        let b = self.existing(id, flags, now)?;
        if b.closed {
            self.drop_bundle(id);
            return Err(OfError::bundle_failed(bf::BUNDLE_CLOSED));
        }
        b.closed = true;
        Ok(())
    }

    /// `OFPT_BUNDLE_ADD_MESSAGE` with the already decoded and checked `entry`.
    pub fn add(
        &mut self,
        id: u32,
        flags: u16,
        entry: Entry,
        req: &[u8],
        now: u64,
    ) -> Result<(), OfError> {
        if !self.map.contains_key(&id) {
            self.new_bundle(id, flags, req, now)?;
        }
        let b = self.existing(id, flags, now)?;
        if b.closed {
            self.drop_bundle(id);
            return Err(OfError::bundle_failed(bf::BUNDLE_CLOSED));
        }
        if b.entries.len() >= MAX_MESSAGES || self.total >= MAX_MESSAGES {
            return Err(OfError::bundle_failed(bf::MSG_TOO_MANY));
        }
        // An add is built now, while the client is still sending, and filed into its
        // subtable, so that the commit can adopt it (or only check and insert it).
        let op = match entry.op {
            Staged::Flow(fm) => match PreparedAdd::new(*fm, &mut self.masks) {
                Ok(p) => Staged::Add(p),
                Err(fm) => Staged::Flow(Box::new(fm)),
            },
            op => op,
        };
        let Some(b) = self.map.get_mut(&id) else {
            return Err(OfError::bundle_failed(bf::BAD_ID));
        };
        let op = match op {
            Staged::Add(p) if !b.spilled => match b.built.push(p) {
                Ok(()) => Staged::Built,
                Err(p) => {
                    b.spill();
                    Staged::Add(p)
                }
            },
            op @ (Staged::Add(_) | Staged::Port(_)) => op,
            op => {
                if !b.spilled {
                    b.spill();
                }
                op
            }
        };
        let req = b.reqs.keep(&entry.req);
        b.entries.push(Kept { op, req });
        self.total += 1;
        Ok(())
    }

    /// `OFPBCT_COMMIT_REQUEST`: removes the bundle and returns its messages to apply.
    pub fn take(&mut self, id: u32, flags: u16, now: u64) -> Result<Taken, OfError> {
        self.existing(id, flags, now)?;
        Ok(self
            .drop_bundle(id)
            .map(|b| Taken {
                entries: b.entries,
                reqs: b.reqs,
                built: b.built,
            })
            .unwrap_or_default())
    }

    /// `OFPBCT_DISCARD_REQUEST`.
    pub fn discard(&mut self, id: u32) -> Result<(), OfError> {
        self.drop_bundle(id)
            .map(|_| ())
            .ok_or(OfError::bundle_failed(bf::BAD_ID))
    }

    /// Removes bundles idle since before `now - IDLE_TIMEOUT_MS`; returns the requests
    /// that opened them.
    pub fn expire(&mut self, now: u64) -> Vec<Vec<u8>> {
        let old: Vec<u32> = self
            .map
            .iter()
            .filter(|(_, b)| now.saturating_sub(b.used_ms) >= IDLE_TIMEOUT_MS)
            .map(|(id, _)| *id)
            .collect();
        old.into_iter()
            .filter_map(|id| self.drop_bundle(id).map(|b| b.opened_by))
            .collect()
    }
}

/// Decodes and checks the message inside a bundle add (see the module documentation).
pub fn stage(version: u8, outer_xid: u32, add: BundleAdd) -> Result<Entry, OfError> {
    let inner = wire::Header::parse(&add.message).map_err(|e| e.to_of_error())?;
    if inner.xid != outer_xid {
        return Err(OfError::bundle_failed(bf::MSG_BAD_XID));
    }
    if inner.version != version {
        return Err(OfError::bad_request(bad_request::BAD_VERSION));
    }
    let (_, m, _) = wire::decode_frame(&add.message).map_err(|e| e.to_of_error())?;
    let fm_checks = |fm: &FlowMod| {
        fm.validate()?;
        if fm.buffer_id != OFP_NO_BUFFER {
            return Err(OfError::bad_request(bad_request::BUFFER_UNKNOWN));
        }
        Ok(())
    };
    let op = match m {
        Message::FlowMod(fm) | Message::Nx(NxMessage::FlowMod(fm)) => {
            fm_checks(&fm)?;
            Staged::Flow(Box::new(fm))
        }
        Message::GroupMod(gm) => {
            gm.validate()?;
            Staged::Group(gm)
        }
        Message::GroupBucketMod(gm) => Staged::GroupBuckets(gm),
        Message::PortMod(pm) => Staged::Port(pm),
        _ => return Err(OfError::bundle_failed(bf::MSG_UNSUP)),
    };
    Ok(Entry {
        op,
        req: add.message,
    })
}

/// Answers a bundle control request.
pub fn control(
    b: &Arc<BridgeOf>,
    c: &Arc<Conn>,
    xid: u32,
    bc: BundleControl,
    req: &[u8],
) -> Result<(), OfError> {
    let now = datapath::clock::now_ms();
    if !bc.props.is_empty() {
        // No bundle property (1.5's scheduled commit, experimenter ones) is supported.
        return Err(OfError::new(openflow::messages::err::OFPET_BAD_PROPERTY, 0));
    }
    let id = bc.bundle_id;
    let reply_type = match bc.ctrl_type {
        bct::OPEN_REQUEST => {
            lock(&c.st).bundles.open(id, bc.flags, req, now)?;
            bct::OPEN_REPLY
        }
        bct::CLOSE_REQUEST => {
            lock(&c.st).bundles.close(id, bc.flags, now)?;
            bct::CLOSE_REPLY
        }
        bct::COMMIT_REQUEST => {
            let taken = lock(&c.st).bundles.take(id, bc.flags, now)?;
            commit(b, c, taken, now)?;
            bct::COMMIT_REPLY
        }
        bct::DISCARD_REQUEST => {
            lock(&c.st).bundles.discard(id)?;
            bct::DISCARD_REPLY
        }
        _ => return Err(OfError::bundle_failed(bf::BAD_TYPE)),
    };
    let reply = BundleControl {
        bundle_id: id,
        ctrl_type: reply_type,
        flags: bc.flags,
        props: Vec::new(),
    };
    c.send(&Message::BundleControl(reply), xid);
    Ok(())
}

/// Stages a bundle add.
pub fn add(c: &Conn, xid: u32, add: BundleAdd, req: &[u8]) -> Result<(), OfError> {
    let now = datapath::clock::now_ms();
    if !add.props.is_empty() {
        return Err(OfError::new(openflow::messages::err::OFPET_BAD_PROPERTY, 0));
    }
    let (id, flags) = (add.bundle_id, add.flags);
    let entry = stage(c.version(), xid, add)?;
    lock(&c.st).bundles.add(id, flags, entry, req, now)
}

/// Applies a bundle's messages all or nothing (see the module documentation).
fn commit(b: &Arc<BridgeOf>, c: &Arc<Conn>, taken: Taken, now: u64) -> Result<(), OfError> {
    let fail = |e: OfError, req: &[u8]| {
        reply_error(c, c.version(), e, req);
        OfError::bundle_failed(bf::MSG_FAILED)
    };
    let Taken {
        mut entries,
        reqs,
        mut built,
    } = taken;
    let mut ports = Vec::new();
    for e in &entries {
        if let Staged::Port(pm) = &e.op {
            let cfg = mods::check_port_mod(b, pm).map_err(|x| fail(x, reqs.get(e.req)))?;
            ports.push((pm.clone(), cfg));
        }
    }
    let changed_tables = entries.iter().any(|e| !matches!(e.op, Staged::Port(_)));
    let any = !entries.is_empty();
    if changed_tables {
        let mut of = b.udpif.of();
        of.atomically(|of| {
            // Every message that changes a table is a filed add: adopted whole if it can
            // be, else applied one by one below.
            if !built.is_empty() {
                match of.adopt_adds(std::mem::take(&mut built), now) {
                    Ok(()) => return Ok(()),
                    Err(back) => put_back(&mut entries, back),
                }
            }
            reserve_runs(of, &entries);
            // The entries are consumed: an added flow keeps its flow_mod's match and
            // instructions rather than a copy.
            for e in entries {
                let req = e.req;
                let r = match e.op {
                    Staged::Flow(fm) => of.flow_mod_owned(*fm, now).map(|_| ()),
                    Staged::Add(p) => of.add_prepared(p, now).map(|_| ()),
                    Staged::Group(gm) => of.group_mod(&gm, now),
                    Staged::GroupBuckets(gm) => of.group_bucket_mod(&gm, now),
                    Staged::Port(_) | Staged::Built => Ok(()),
                };
                r.map_err(|x| (x, req))?;
            }
            Ok(())
        })
        .map_err(|(x, req)| fail(x, reqs.get(req)))?;
    }
    for (pm, cfg) in ports {
        mods::apply_port_mod(b, &pm, cfg);
    }
    if any {
        handle::changed(b, c);
    }
    Ok(())
}

/// Makes room, before the first message runs, for each run of at least [`RESERVE_RUN`]
/// prepared adds to one table and mask.
fn reserve_runs(of: &mut ofproto::Ofproto, entries: &[Kept]) {
    // Runs of adds to one table and subtable, as (index of the first, length).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut prev: Option<&PreparedAdd> = None;
    for (i, e) in entries.iter().enumerate() {
        let Staged::Add(p) = &e.op else {
            prev = None;
            continue;
        };
        match (prev, runs.last_mut()) {
            (Some(q), Some((_, n))) if q.same_place(p) => *n += 1,
            _ => runs.push((i, 1)),
        }
        prev = Some(p);
    }
    for &(i, n) in runs.iter().filter(|r| r.1 >= RESERVE_RUN) {
        if let Some(Kept {
            op: Staged::Add(p), ..
        }) = entries.get(i)
        {
            of.reserve_like(p, n);
        }
    }
}

/// Discards the connection's idle bundles, answering each with `TIMEOUT`.
pub fn expire(c: &Conn, now: u64) {
    let gone = {
        let mut st = lock(&c.st);
        if st.bundles.is_empty() {
            return;
        }
        st.bundles.expire(now)
    };
    for req in gone {
        reply_error(c, c.version(), OfError::bundle_failed(bf::TIMEOUT), &req);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::FlowModCommand;

    fn entry() -> Entry {
        Entry {
            op: Staged::Flow(Box::new(FlowMod::new(FlowModCommand::Add))),
            req: vec![0; 8],
        }
    }
    const AO: u16 = OFPBF_ATOMIC | OFPBF_ORDERED;
    fn code(r: Result<impl Sized, OfError>) -> Option<u16> {
        r.err().map(|e| {
            assert_eq!(e.type_, openflow::messages::err::OFPET_BUNDLE_FAILED);
            e.code
        })
    }

    #[test]
    fn open_add_close_commit() {
        let mut b = Bundles::default();
        b.open(1, AO, &[], 0).expect("open");
        b.add(1, AO, entry(), &[], 1).expect("add");
        b.add(1, AO, entry(), &[], 2).expect("add");
        b.close(1, AO, 3).expect("close");
        assert_eq!(code(b.add(1, AO, entry(), &[], 4)), Some(bf::BUNDLE_CLOSED));
        assert!(b.is_empty(), "an add to a closed bundle discards it");
        b.open(2, AO, &[], 0).expect("open");
        b.add(2, AO, entry(), &[], 1).expect("add");
        assert_eq!(b.take(2, AO, 2).expect("commit").entries.len(), 1);
        assert_eq!(
            code(b.take(2, AO, 3)),
            Some(bf::BAD_ID),
            "a commit ends the bundle"
        );
    }

    #[test]
    fn errors_follow_the_spec() {
        let mut b = Bundles::default();
        assert_eq!(code(b.close(9, AO, 0)), Some(bf::BAD_ID));
        assert_eq!(code(b.discard(9)), Some(bf::BAD_ID));
        assert_eq!(code(b.take(9, AO, 0)), Some(bf::BAD_ID));
        assert_eq!(code(b.open(1, 0x8, &[], 0)), Some(bf::BAD_FLAGS));
        b.open(1, AO, &[], 0).expect("open");
        assert_eq!(code(b.open(1, AO, &[], 0)), Some(bf::BAD_ID));
        assert!(b.is_empty(), "reopening discards the existing bundle");
        b.open(1, AO, &[], 0).expect("open");
        assert_eq!(code(b.close(1, OFPBF_ATOMIC, 0)), Some(bf::BAD_FLAGS));
        assert!(b.is_empty(), "a flags mismatch discards the bundle");
        b.open(1, AO, &[], 0).expect("open");
        b.close(1, AO, 0).expect("close");
        assert_eq!(code(b.close(1, AO, 0)), Some(bf::BUNDLE_CLOSED));
        // Implicit open by add.
        b.add(5, OFPBF_ATOMIC, entry(), &[], 0).expect("add");
        b.discard(5).expect("discard");
        assert!(b.is_empty());
    }

    fn add_entry(dst: u32, prio: u16) -> Entry {
        let mut fm = FlowMod::new(FlowModCommand::Add);
        fm.priority = prio;
        fm.match_ = openflow::Match::new()
            .with(openflow::oxm::Field::EthType, 0x0800)
            .with(openflow::oxm::Field::Ipv4Dst, u128::from(dst));
        Entry {
            op: Staged::Flow(Box::new(fm)),
            req: dst.to_be_bytes().to_vec(),
        }
    }

    fn kinds(t: &Taken) -> String {
        t.entries
            .iter()
            .map(|e| match e.op {
                Staged::Built => 'b',
                Staged::Add(_) => 'a',
                Staged::Flow(_) => 'f',
                _ => 'o',
            })
            .collect()
    }

    #[test]
    fn adds_are_filed_until_a_message_that_cannot_be_adopted() {
        let mut b = Bundles::default();
        b.open(1, AO, &[], 0).expect("open");
        for i in 0..3 {
            b.add(1, AO, add_entry(i, 10), &[], 1).expect("add");
        }
        let t = b.take(1, AO, 2).expect("commit");
        assert_eq!(kinds(&t), "bbb");
        assert_eq!(t.built.len(), 3);
        // A delete puts the filed adds back, in order; later adds are not filed.
        b.open(2, AO, &[], 0).expect("open");
        for i in 0..3 {
            b.add(2, AO, add_entry(i, 10), &[], 1).expect("add");
        }
        let mut del = FlowMod::new(FlowModCommand::Delete);
        del.table_id = 0;
        let del = Entry {
            op: Staged::Flow(Box::new(del)),
            req: vec![],
        };
        b.add(2, AO, del, &[], 1).expect("add");
        b.add(2, AO, add_entry(7, 10), &[], 1).expect("add");
        let t = b.take(2, AO, 2).expect("commit");
        assert_eq!(kinds(&t), "aaafa");
        assert!(t.built.is_empty());
        let order: Vec<u32> = t
            .entries
            .iter()
            .filter_map(|e| match &e.op {
                Staged::Add(p) => p
                    .rule()
                    .match_
                    .get(openflow::oxm::Field::Ipv4Dst)
                    .map(|f| f.value),
                _ => None,
            })
            .map(|v| v as u32)
            .collect();
        assert_eq!(order, vec![0, 1, 2, 7]);
        // An add identical to one filed does too; the earlier stays before it.
        b.open(3, AO, &[], 0).expect("open");
        b.add(3, AO, add_entry(1, 10), &[], 1).expect("add");
        b.add(3, AO, add_entry(2, 10), &[], 1).expect("add");
        b.add(3, AO, add_entry(1, 10), &[], 1).expect("add");
        let t = b.take(3, AO, 2).expect("commit");
        assert_eq!(kinds(&t), "aaa");
        // A discarded bundle takes its filed adds with it.
        b.open(4, AO, &[], 0).expect("open");
        b.add(4, AO, add_entry(1, 10), &[], 1).expect("add");
        b.discard(4).expect("discard");
        assert!(b.is_empty());
        assert_eq!(b.total, 0);
    }

    #[test]
    fn a_bundle_keeps_the_first_request_bytes_for_its_error_reply() {
        let mut b = Bundles::default();
        b.open(1, AO, &[], 0).expect("open");
        let long: Vec<u8> = (0..100).collect();
        let mut e = entry();
        e.req = long.clone();
        b.add(1, AO, e, &[], 1).expect("add");
        let mut e = entry();
        e.req = vec![7; 10];
        b.add(1, AO, e, &[], 1).expect("add");
        let t = b.take(1, AO, 2).expect("commit");
        let kept: Vec<&[u8]> = t.entries.iter().map(|e| t.reqs.get(e.req)).collect();
        assert_eq!(kept, vec![&long[..REQ_KEPT], &[7; 10][..]]);
        // The error reply of a bundled message carries what was kept (a message outside a
        // bundle gets its whole request back).
        let part = openflow::wire::error_reply(OfError::bad_request(0), wire::OFP14, kept[0]);
        let openflow::wire::Message::Error(e) = part else {
            panic!("not an error: {part:?}");
        };
        assert_eq!(e.data, &long[..REQ_KEPT]);
    }

    #[test]
    fn idle_bundles_expire() {
        let mut b = Bundles::default();
        b.open(1, AO, &[1, 2, 3], 0).expect("open");
        b.open(2, AO, &[4], 5_000).expect("open");
        assert!(b.expire(IDLE_TIMEOUT_MS - 1).is_empty());
        assert_eq!(b.expire(IDLE_TIMEOUT_MS), vec![vec![1, 2, 3]]);
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn staging_checks_xid_version_and_type() {
        let v = wire::OFP14;
        let fm = FlowMod::new(FlowModCommand::Add);
        let inner = wire::encode(&Message::FlowMod(fm), v, 42).expect("encode");
        let add = |m: Vec<u8>| BundleAdd {
            bundle_id: 1,
            flags: AO,
            message: m,
            props: Vec::new(),
        };
        assert!(matches!(
            stage(v, 42, add(inner.clone())),
            Ok(Entry {
                op: Staged::Flow(_),
                ..
            })
        ));
        assert_eq!(
            code(stage(v, 43, add(inner.clone()))),
            Some(bf::MSG_BAD_XID)
        );
        let e = stage(wire::OFP15, 42, add(inner)).err();
        assert_eq!(e, Some(OfError::bad_request(bad_request::BAD_VERSION)));
        let echo = wire::encode(&Message::EchoRequest(vec![]), v, 42).expect("encode");
        assert_eq!(code(stage(v, 42, add(echo))), Some(bf::MSG_UNSUP));
        let mut bad = FlowMod::new(FlowModCommand::Add);
        bad.table_id = openflow::messages::OFPTT_ALL;
        let bad = wire::encode(&Message::FlowMod(bad), v, 42).expect("encode");
        assert!(stage(v, 42, add(bad)).is_err());
    }
}
