//! Connection tracking in the datapath: the process's tracker, running a `ct` action on a
//! packet, and the key a tracked packet is re-injected with.
//!
//! What: one [`conntrack::Conntrack`] for the whole process, as OVS's userspace datapath has
//! one for all its bridges (zones separate what must be separate). Poll threads call
//! [`track`] concurrently: the tracker is sharded and takes no global lock per packet. The
//! revalidator threads expire connections ([`sweep`], bounded work per call), and the
//! daemon's `dpctl/*` commands reach it through [`tracker`].
//!
//! How: [`track`] hands the frame to the tracker (which rewrites it in place for NAT) with
//! where its layers are, and returns the verdict. [`recirc_key`] builds the flow key of the
//! packet as it is after tracking, with the recirculation id, the ingress metadata of the
//! packet's first pass and the connection-tracking fields of the verdict.
//!
//! Parsing once: a packet is parsed by the flow extractor when it arrives, and as long as
//! nothing has changed its bytes since, that key and the extractor's [`Offsets`] describe
//! it (a [`Layers`]). The datapath keeps them with the packet through the pass and through
//! the recirculation queue, so [`track`] takes the tracker's layer offsets from them and
//! [`recirc_key`] builds the next pass's key from the pass's key by writing the fields a
//! recirculation changes, instead of extracting the frame again (a `ct` with `nat` counts as
//! a change only when it translated the packet: [`left_bytes`]). (OVS's userspace datapath
//! does extract a recirculated packet again, and its tracker reads the addresses and ports
//! from the frame at the extractor's offsets, as this one does.) A packet that an action
//! rewrote (a `set_field`, a VLAN push, a translating `ct`) has no `Layers` and is extracted again
//! ([`recirc_key_fresh`], the reference the incremental build is tested against).
//!
//! Invariant: a key with `recirc_id != 0` is the only kind with connection-tracking fields
//! (see `packet::flow`); [`recirc_key`] never writes id 0 for a tracked packet because
//! recirculation ids start at 1.

use crate::dpcls::Words;
use conntrack::{Config, ConnCache, Conntrack, CtResult};
use ofproto::odp_ct::CtAction;
use packet::flow::{self, FlowKey, Offsets};
use packet::Packet;
use std::sync::OnceLock;

static TRACKER: OnceLock<Conntrack> = OnceLock::new();

/// The process's connection tracker (created on first use).
pub fn tracker() -> &'static Conntrack {
    TRACKER.get_or_init(|| Conntrack::new(Config::default()))
}

/// The process's connection tracker if anything has made it yet (a flush or a look that
/// finds nothing to do without one need not make it).
pub fn tracker_if_made() -> Option<&'static Conntrack> {
    TRACKER.get()
}

/// Expires connections if the tracker was ever used; at most about `budget` looked at.
pub fn sweep(now_ms: u64, budget: usize) -> usize {
    TRACKER.get().map_or(0, |t| t.sweep(now_ms, budget))
}

/// A packet's flow key and the extractor's offsets for it, valid while the packet's bytes
/// are those they were extracted from (see the module documentation).
#[derive(Clone, Copy)]
pub struct Layers<'a> {
    /// The key of the pass (its L2-L4 fields are the extractor's for the packet).
    pub key: &'a FlowKey,
    /// Where the packet's layers start.
    pub offs: Offsets,
}

/// Runs `ct` on `pkt` (rewriting it for NAT) at `now_ms`, the verdict into `out` (the
/// caller's, so that it is not copied on its way); `layers` describe `pkt` if known;
/// `cache` is the calling poll thread's (see `conntrack::cache`).
pub fn track(
    ct: &CtAction,
    pkt: &mut Packet,
    layers: Option<Layers<'_>>,
    now_ms: u64,
    cache: &mut ConnCache,
    out: &mut CtResult,
) {
    let req = ct.request();
    match layers {
        Some(l) => {
            tracker().execute_flow_cached(cache, pkt.data_mut(), l.key, &l.offs, &req, now_ms, out)
        }
        None => {
            let mut k = FlowKey::ZERO;
            let offs = flow::extract_into(&mut k, pkt.data(), 0);
            tracker().execute_flow_cached(cache, pkt.data_mut(), &k, &offs, &req, now_ms, out)
        }
    }
    if out.resize != 0 {
        resize(pkt, out.resize);
    }
}

/// Gives the frame the length the tracker's rewrite of an FTP message under NAT gave it
/// (see `conntrack::alg::ftp_nat`): the bytes past the old end appended, or the end cut.
#[cold]
#[inline(never)]
pub(crate) fn resize(pkt: &mut Packet, by: i8) {
    if by < 0 {
        pkt.truncate(pkt.len().saturating_sub(usize::from(by.unsigned_abs())));
        return;
    }
    conntrack::alg::ftp_nat::take_grown_tail(|tail| {
        if let Some(room) = pkt.push_back(tail.len()) {
            room.copy_from_slice(tail);
        }
    });
}

/// [`resize`] taking and giving back the packet (the `ct` loop's packet stays out of
/// memory on its path).
#[cold]
#[inline(never)]
pub(crate) fn resized(mut pkt: Packet, by: i8) -> Packet {
    resize(&mut pkt, by);
    pkt
}

/// [`resize`] for a frame held in a `Vec` (a reassembled datagram): the per-thread bytes
/// of a grown frame are consumed either way.
#[cold]
pub(crate) fn resize_vec(frame: &mut Vec<u8>, by: i8) {
    conntrack::alg::ftp_nat::apply_resize(frame, by);
}

/// Whether the `ct` action `ct`, whose verdict was `res`, left the packet's bytes as they
/// were: always without `nat`; with it, when nothing was translated (the tracker rewrites a
/// packet only where it reports `+snat` or `+dnat`: an untranslated connection, a new
/// packet not committed, an invalid one), so that the pass's layers still describe it and
/// the next pass is not extracted again.
#[inline]
pub fn left_bytes(ct: &CtAction, res: &CtResult) -> bool {
    use conntrack::ct_state::{DNAT, SNAT};
    ct.nat.is_none() || res.state & (SNAT | DNAT) == 0
}

/// Writes into `k` the key `pkt` is re-injected with under `recirc_id`, after the `ct`
/// verdict `res` (`None`: no `ct` ran in this pass, the fields stay zero), and returns the
/// packet's offsets. `first` is the key of the pass that recirculates; with `offs` (the
/// packet unchanged since `first` was extracted, see [`Layers`]) the key is built from it,
/// else the packet is extracted again. In place: the caller's slot in the recirculation
/// queue, so the 328-byte key is not copied on its way there.
pub fn recirc_key(
    k: &mut FlowKey,
    pkt: &Packet,
    first: &FlowKey,
    offs: Option<Offsets>,
    recirc_id: u32,
    res: Option<&CtResult>,
) -> Offsets {
    match offs {
        Some(o) => {
            *k = *first;
            recirculate_in_place(k, recirc_id, res);
            o
        }
        None => recirc_key_fresh(k, pkt, first, recirc_id, res),
    }
}

/// [`recirc_key`] for a key that already is the pass's key (a copy of it in the
/// recirculation queue) of a packet unchanged since it was extracted.
#[inline]
pub fn recirculate_in_place(k: &mut FlowKey, recirc_id: u32, res: Option<&CtResult>) {
    // What a recirculation resets: the pipeline's registers (the frozen state restores
    // them) and whatever an earlier `ct` left.
    k.metadata = 0;
    k.regs = [0; flow::N_REGS];
    set_ct_fields(k, recirc_id, res);
}

/// The words of the key [`recirculate_in_place`] would make from `first`, without making
/// it: what a megaflow's compact compare reads (see `Megaflow::covers_words`), computed from
/// the pass's key and the verdict in registers. The recirculation shortcut
/// (`ofmodule::skip`) checks the next pass's megaflow against it instead of writing the
/// 360-byte key. Equal word for word to the built key (a proptest in
/// `tests/ct_pipeline.rs`).
pub struct RecircWords<'a> {
    first: &'a [u64; flow::FLOW_KEY_WORDS],
    /// Word 0: `in_port` as in `first`, `recirc_id` the new one.
    w0: u64,
    /// The first word of the connection-tracking stage (`ct_state`, `ct_nw_proto`,
    /// `ct_zone`, `ct_mark`), the one every megaflow of tracked packets reads: made once,
    /// not per candidate megaflow.
    ct0: u64,
    res: Option<&'a CtResult>,
}

/// Words of the key's connection-tracking stage.
const CT_WORDS: usize = flow::TUN_OPTS_WORDS_START - flow::CT_WORDS_START;
/// The word of `metadata`, and the words of the registers: zero after a recirculation.
const METADATA_WORD: usize = std::mem::offset_of!(FlowKey, metadata) / 8;
const REGS_WORDS: std::ops::Range<usize> = {
    let s = std::mem::offset_of!(FlowKey, regs) / 8;
    s..s + flow::N_REGS / 2
};
const _: () = assert!(std::mem::offset_of!(FlowKey, in_port) == 0);
const _: () = assert!(std::mem::offset_of!(FlowKey, recirc_id) == 4);
const _: () = assert!(std::mem::offset_of!(FlowKey, metadata) % 8 == 0);
const _: () = assert!(std::mem::offset_of!(FlowKey, regs) % 8 == 0);
const _: () = assert!(std::mem::offset_of!(FlowKey, ct_state) == flow::CT_WORDS_START * 8);
const _: () = assert!(std::mem::offset_of!(FlowKey, ct_tp_src) == flow::CT_WORDS_START * 8 + 8);
const _: () = assert!(std::mem::offset_of!(FlowKey, ct_label) == flow::CT_WORDS_START * 8 + 16);
const _: () = assert!(std::mem::offset_of!(FlowKey, ct_src) == flow::CT_WORDS_START * 8 + 32);
const _: () = assert!(std::mem::offset_of!(FlowKey, ct_dst) == flow::CT_WORDS_START * 8 + 48);
const _: () = assert!(CT_WORDS == 8);

impl<'a> RecircWords<'a> {
    /// The view of the key `first` recirculates with under `recirc_id` after the verdict
    /// `res` (as [`recirculate_in_place`]).
    #[inline(always)]
    pub fn new(first: &'a FlowKey, recirc_id: u32, res: Option<&'a CtResult>) -> RecircWords<'a> {
        let mut id = [0u8; 8];
        id[..4].copy_from_slice(&first.in_port.to_ne_bytes());
        id[4..].copy_from_slice(&recirc_id.to_ne_bytes());
        RecircWords {
            first: first.as_words(),
            w0: u64::from_ne_bytes(id),
            ct0: match res {
                Some(r) => ct_word(r, 0),
                None => 0,
            },
            res,
        }
    }

    /// Word `j` of the recirculated key's connection-tracking stage.
    #[inline(always)]
    pub fn ct(&self, j: usize) -> u64 {
        if j == 0 {
            self.ct0
        } else {
            self.res.map_or(0, |r| ct_word(r, j))
        }
    }

    /// Word `i` of the recirculated key (computed when asked: a megaflow reads a few).
    #[inline(always)]
    pub fn word(&self, i: usize) -> u64 {
        if i == 0 {
            self.w0
        } else if i == flow::CT_WORDS_START {
            self.ct0
        } else if i == METADATA_WORD || REGS_WORDS.contains(&i) {
            0
        } else if (flow::CT_WORDS_START..flow::CT_WORDS_START + CT_WORDS).contains(&i) {
            self.res.map_or(0, |r| ct_word(r, i - flow::CT_WORDS_START))
        } else {
            self.first.get(i).copied().unwrap_or(0)
        }
    }
}

/// A megaflow's compact compare (`Megaflow::compact_words`) made ready, for one
/// recirculation id, to be checked against [`RecircWords`] of that id: which of its words
/// come from the pass's key, which from the verdict, with the word of `recirc_id` and the
/// words a recirculation zeroes settled when it is made. The recirculation shortcut keeps
/// one per candidate megaflow, so a packet's check is a few loads and compares (equal to
/// `Megaflow::covers_words` over [`RecircWords::word`]: a proptest in `tests/ct_skip.rs`).
#[derive(Clone, Copy)]
pub struct RecircCheck {
    /// Words read from the pass's key: index, mask, masked value (word 0 masked to
    /// `in_port`, the `recirc_id` half settled).
    n_first: u8,
    first_idx: [u8; INLINE_WORDS],
    first_mask: [u64; INLINE_WORDS],
    first_val: [u64; INLINE_WORDS],
    /// Words of the connection-tracking stage: word within the stage, mask, masked value.
    n_ct: u8,
    ct_idx: [u8; INLINE_WORDS],
    ct_mask: [u64; INLINE_WORDS],
    ct_val: [u64; INLINE_WORDS],
}

const INLINE_WORDS: usize = crate::dpcls::INLINE_WORDS;

impl RecircCheck {
    /// The check for the compact compare `words` (`(key word, mask, masked value)`) on keys
    /// recirculated under `recirc_id`; `None` when no such key can match it (the mask reads
    /// a zeroed word or `recirc_id` with other values than the key would have) or there are
    /// no words (no compact compare).
    pub fn new(
        words: impl Iterator<Item = (usize, u64, u64)>,
        recirc_id: u32,
    ) -> Option<RecircCheck> {
        let mut c = RecircCheck {
            n_first: 0,
            first_idx: [0; INLINE_WORDS],
            first_mask: [0; INLINE_WORDS],
            first_val: [0; INLINE_WORDS],
            n_ct: 0,
            ct_idx: [0; INLINE_WORDS],
            ct_mask: [0; INLINE_WORDS],
            ct_val: [0; INLINE_WORDS],
        };
        let mut id = [0u8; 8];
        id[4..].copy_from_slice(&recirc_id.to_ne_bytes());
        let id_word = u64::from_ne_bytes(id);
        let port_bits = u64::from_ne_bytes([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        let mut any = false;
        for (i, mask, val) in words {
            any = true;
            let (i, mask, val) = if i == 0 {
                if id_word & mask & !port_bits != val & !port_bits {
                    return None;
                }
                (0, mask & port_bits, val & port_bits)
            } else {
                (i, mask, val)
            };
            if i == METADATA_WORD || REGS_WORDS.contains(&i) {
                if val != 0 {
                    return None;
                }
            } else if (flow::CT_WORDS_START..flow::CT_WORDS_START + CT_WORDS).contains(&i) {
                let n = usize::from(c.n_ct);
                *c.ct_idx.get_mut(n)? = (i - flow::CT_WORDS_START) as u8;
                c.ct_mask[n] = mask;
                c.ct_val[n] = val;
                c.n_ct += 1;
            } else if i < flow::FLOW_KEY_WORDS {
                let n = usize::from(c.n_first);
                *c.first_idx.get_mut(n)? = i as u8;
                c.first_mask[n] = mask;
                c.first_val[n] = val;
                c.n_first += 1;
            } else if val != 0 {
                return None;
            }
        }
        any.then_some(c)
    }

    /// Whether the megaflow covers the key `k` would build (`k` of this check's
    /// recirculation id).
    #[inline(always)]
    pub fn covers(&self, k: &RecircWords<'_>) -> bool {
        let mut same = true;
        for j in 0..usize::from(self.n_first).min(INLINE_WORDS) {
            let w = k
                .first
                .get(usize::from(self.first_idx[j]))
                .copied()
                .unwrap_or(0);
            same &= w & self.first_mask[j] == self.first_val[j];
        }
        for j in 0..usize::from(self.n_ct).min(INLINE_WORDS) {
            same &= k.ct(usize::from(self.ct_idx[j])) & self.ct_mask[j] == self.ct_val[j];
        }
        same
    }

    /// The check on the words of the pass's key, made once for all the packets of a
    /// megaflow whose mask is `mask` and masked key `key` (all of them have those bits of
    /// their keys): `Some(outcome)` when the mask reads every bit this check reads of those
    /// words, the outcome then being the same for each of them; `None` otherwise.
    pub fn first_on(&self, mask: &Words, key: &Words) -> Option<bool> {
        let mut same = true;
        for j in 0..usize::from(self.n_first).min(INLINE_WORDS) {
            let i = usize::from(self.first_idx[j]);
            let (m, k) = (*mask.get(i)?, *key.get(i)?);
            if self.first_mask[j] & !m != 0 {
                return None;
            }
            same &= k & self.first_mask[j] == self.first_val[j];
        }
        Some(same)
    }

    /// The check on the verdict's words as one mask and value of the stage's first word
    /// ([`RecircWords::ct`] of 0), when it reads no other word of the stage.
    pub fn ct0_only(&self) -> Option<(u64, u64)> {
        match usize::from(self.n_ct) {
            0 => Some((0, 0)),
            1 if self.ct_idx[0] == 0 => Some((self.ct_mask[0], self.ct_val[0])),
            _ => None,
        }
    }
}

/// Word `j` of the connection-tracking stage of a key after the verdict `r` (as
/// `set_ct_fields` writes it).
#[inline(always)]
fn ct_word(r: &CtResult, j: usize) -> u64 {
    let o = r.orig.as_ref();
    let half = |b: &[u8; 16], hi: bool| {
        let (h, l) = b.split_at(8);
        u64::from_ne_bytes((if hi { h } else { l }).try_into().unwrap_or_default())
    };
    match j {
        0 => {
            let mut b = [0u8; 8];
            b[0] = r.state as u8;
            b[1] = o.map_or(0, |o| o.proto);
            b[2..4].copy_from_slice(&r.zone.to_ne_bytes());
            b[4..].copy_from_slice(&r.mark.to_ne_bytes());
            u64::from_ne_bytes(b)
        }
        1 => {
            let (s, d) = o.map_or((0, 0), |o| {
                if matches!(o.proto, flow::IPPROTO_ICMP | flow::IPPROTO_ICMPV6) {
                    (u16::from(o.icmp_type), u16::from(o.icmp_code))
                } else {
                    (o.sport, o.dport)
                }
            });
            let mut b = [0u8; 8];
            b[..2].copy_from_slice(&s.to_ne_bytes());
            b[2..4].copy_from_slice(&d.to_ne_bytes());
            u64::from_ne_bytes(b)
        }
        2 | 3 => half(&r.label.to_be_bytes(), j == 2),
        4 | 5 => o.map_or(0, |o| half(&o.src, j == 4)),
        _ => o.map_or(0, |o| half(&o.dst, j == 6)),
    }
}

/// [`recirc_key`] by extracting `pkt` again: the only way after the packet changed, and the
/// reference for the incremental build.
pub fn recirc_key_fresh(
    k: &mut FlowKey,
    pkt: &Packet,
    first: &FlowKey,
    recirc_id: u32,
    res: Option<&CtResult>,
) -> Offsets {
    *k = FlowKey::ZERO;
    let offs = flow::extract_into(k, pkt.data(), first.in_port);
    k.pkt_mark = first.pkt_mark;
    k.dp_hash = first.dp_hash;
    k.tunnel_id = first.tunnel_id;
    k.tun_src = first.tun_src;
    k.tun_dst = first.tun_dst;
    k.tun_ipv6_src = first.tun_ipv6_src;
    k.tun_ipv6_dst = first.tun_ipv6_dst;
    k.tun_flags = first.tun_flags;
    k.tun_gbp_id = first.tun_gbp_id;
    k.tun_gbp_flags = first.tun_gbp_flags;
    k.tun_opts_present = first.tun_opts_present;
    k.tun_opts = first.tun_opts;
    set_ct_fields(k, recirc_id, res);
    offs
}

/// `recirc_id` and the connection-tracking block from the verdict `res` (all zero without
/// one).
fn set_ct_fields(k: &mut FlowKey, recirc_id: u32, res: Option<&CtResult>) {
    k.recirc_id = recirc_id;
    k.ct_state = 0;
    k.ct_zone = 0;
    k.ct_mark = 0;
    k.ct_label = [0; 16];
    k.ct_nw_proto = 0;
    k.ct_src = [0; 16];
    k.ct_dst = [0; 16];
    k.ct_tp_src = 0;
    k.ct_tp_dst = 0;
    k.pad_ct = 0;
    let Some(r) = res else {
        return;
    };
    k.ct_state = r.state as u8;
    k.ct_zone = r.zone;
    k.ct_mark = r.mark;
    k.ct_label = r.label.to_be_bytes();
    if let Some(o) = &r.orig {
        k.ct_nw_proto = o.proto;
        k.ct_src = o.src;
        k.ct_dst = o.dst;
        let icmp = matches!(o.proto, flow::IPPROTO_ICMP | flow::IPPROTO_ICMPV6);
        (k.ct_tp_src, k.ct_tp_dst) = if icmp {
            (u16::from(o.icmp_type), u16::from(o.icmp_code))
        } else {
            (o.sport, o.dport)
        };
    }
}

/// Before a chunk's actions run one packet at a time: for the packets whose actions start
/// with a `ct`, prefetches in two steps the tracker's table bucket their connection is under
/// (see `conntrack::table`), from their flow keys, then the connection records in those
/// buckets, so that the chunk's cache misses overlap instead of each packet's `ct` waiting
/// for its own. Skipped while the poll thread's connection cache serves (its connections are
/// found without the table). Hints: nothing changes.
pub fn prefetch(
    keys: &[FlowKey],
    found: &[Option<&std::sync::Arc<crate::dpcls::Megaflow>>],
    cache: &ConnCache,
) {
    // Before any `ct` ran there is no table to warm (and no tracker is made here): traffic
    // without connection tracking pays one load per chunk, not a look at every packet.
    let Some(t) = TRACKER.get() else {
        return;
    };
    if cache.serving() {
        return;
    }
    let mut hashes = [None; crate::dpcls::LOOKUP_CHUNK];
    for ((k, m), h) in keys.iter().zip(found).zip(hashes.iter_mut()) {
        if let Some(ofproto::odp::DpAction::Ct(c)) = m.and_then(|m| m.actions.first()) {
            *h = t.prefetch_flow(k, &c.request());
        }
    }
    for h in hashes.iter().take(keys.len()).flatten() {
        t.prefetch_conn(*h);
    }
}
