//! Fragments at a `ct` action: the process's reassembly lists (OVS's `ipf`), what a held
//! fragment keeps, and the datagram's translation carried over to its fragments.
//!
//! What: a packet whose flow key says it is a fragment (`nw_frag`) and that reaches a `ct`
//! goes to [`ipf`] (a [`conntrack::Ipf`] for the whole process, beside the tracker) when
//! reassembly is on for its family, instead of to the tracker, which would call it
//! `+inv`. The glue with the action loop is `ofmodule::frag`: a held fragment leaves the
//! batch; when its datagram is complete the reassembled datagram is tracked once and every
//! fragment goes on, by offset (OVS sorts them so), with the datagram's verdict and the
//! actions that follow the `ct` in the pass of the fragment that completed it, as OVS's
//! userspace datapath does.
//!
//! Buffers: a held fragment is a copy of its frame and metadata ([`Held`]); its pool buffer
//! goes back to the poll thread's pool at once. A datagram's fragments may arrive on
//! different poll threads, and expired lists are dropped by the revalidator's sweep, which
//! has no pool: held buffers would drain one thread's pool into another's or into the
//! allocator. Released fragments are rebuilt in buffers of the releasing thread's pool.
//!
//! NAT: the reassembled datagram is tracked with the action's `nat`. When it was
//! translated, [`translate`] gives every fragment the datagram's new addresses (IPv4: the
//! header checksum made again) and the first fragment the translated bytes of its L4 part
//! (ports or ICMP id and the L4 checksum, which the tracker's rewrite computed over the
//! whole datagram, so it is right for the datagram the receiver reassembles), which is
//! what OVS 3.1 does. A fragment whose bytes do not fit is dropped, never sent with a
//! wrong checksum.

use conntrack::{Ipf, IpfConfig, PacketMeta};
use packet::flow::{FlowKey, Offsets, NW_FRAG_LATER};
use packet::{csum, Packet, Pool, TunMeta};
use std::sync::OnceLock;

/// A fragment held until its datagram is complete.
pub struct Held {
    /// The frame as it reached the `ct`.
    pub frame: Vec<u8>,
    tun: Option<TunMeta>,
    in_port: u16,
    meta: u16,
    hash: u32,
    /// The ingress port slot of its pass.
    pub in_slot: u16,
    /// Its pass's key (describing `frame`) and the extractor's offsets for `frame`.
    pub key: FlowKey,
    pub offs: Offsets,
}

impl Held {
    /// A copy of `pkt`, whose key is `key` and layers `offs`, from port slot `in_slot`.
    pub fn of(pkt: &Packet, key: &FlowKey, offs: Offsets, in_slot: u16) -> Held {
        Held {
            frame: pkt.data().to_vec(),
            tun: pkt.tun(),
            in_port: pkt.in_port,
            meta: pkt.meta,
            hash: pkt.hash,
            in_slot,
            key: *key,
            offs,
        }
    }

    /// The fragment in a buffer of `pool`, as it was held; `None` if the pool is empty.
    pub fn rebuild(&self, pool: &mut Pool) -> Option<Packet> {
        let mut p = pool.alloc()?;
        if !p.set_frame(&self.frame) {
            pool.free(p);
            return None;
        }
        if let Some(t) = &self.tun {
            let _ = p.set_tun(t);
        }
        p.in_port = self.in_port;
        p.meta = self.meta;
        p.hash = self.hash;
        Some(p)
    }

    /// Whether this is the datagram's first fragment (offset 0).
    pub fn is_first(&self) -> bool {
        self.key.nw_frag & NW_FRAG_LATER == 0
    }
}

static IPF: OnceLock<Ipf<Held>> = OnceLock::new();

/// The process's fragment lists (made on first use, OVS's defaults).
pub fn ipf() -> &'static Ipf<Held> {
    IPF.get_or_init(|| Ipf::new(IpfConfig::default()))
}

/// Drops the lists that did not complete in time, if reassembly was ever used; returns
/// how many fragments went.
pub fn sweep(now_ms: u64) -> usize {
    IPF.get().map_or(0, |i| i.sweep(now_ms).len())
}

/// Writes the translation of the datagram `whole` (as the tracker left it, layers `wmeta`)
/// into its fragment `frag` (held as `h`): addresses always, the L4 bytes in the first
/// fragment. `false` when the layers do not line up (the fragment is then dropped).
pub fn translate(frag: &mut Packet, h: &Held, whole: &[u8], wmeta: &PacketMeta) -> bool {
    let (Some(fl3), wl3) = (h.offs.l3, usize::from(wmeta.l3)) else {
        return false;
    };
    let fl3 = usize::from(fl3);
    let data = frag.data_mut();
    if wmeta.v6 {
        let (Some(src), Some(dst)) = (
            whole.get(wl3 + 8..wl3 + 40),
            data.get_mut(fl3 + 8..fl3 + 40),
        ) else {
            return false;
        };
        dst.copy_from_slice(src);
    } else {
        let Some(ihl) = data.get(fl3).map(|b| usize::from(b & 0x0f) * 4) else {
            return false;
        };
        if ihl < 20 {
            return false;
        }
        let (Some(src), Some(dst)) = (
            whole.get(wl3 + 12..wl3 + 20),
            data.get_mut(fl3 + 12..fl3 + 20),
        ) else {
            return false;
        };
        dst.copy_from_slice(src);
        let Some(hdr) = data.get_mut(fl3..fl3 + ihl) else {
            return false;
        };
        hdr[10] = 0;
        hdr[11] = 0;
        let c = csum::checksum(hdr);
        hdr[10..12].copy_from_slice(&c.to_be_bytes());
    }
    if h.is_first() {
        let (Some(fl4), Some(wl4)) = (h.offs.l4, wmeta.l4) else {
            return false;
        };
        let (fl4, wl4) = (usize::from(fl4), usize::from(wl4));
        let n = data.len().saturating_sub(fl4);
        let (Some(src), Some(dst)) = (whole.get(wl4..wl4 + n), data.get_mut(fl4..fl4 + n)) else {
            return false;
        };
        dst.copy_from_slice(src);
    }
    true
}
