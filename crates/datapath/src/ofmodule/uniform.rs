//! One decision for a uniform burst: the underlay bridge's half of single-pass
//! encapsulation.
//!
//! A tunnel port's outer packets of one header template differ only in their UDP source
//! port, lengths and checksums (`netdev::tunnel::direct`). The module extracts and looks up
//! the burst's first packet only; if the megaflow it hits is one output and its mask leaves
//! the L4 source port out (the lengths and checksums are in no key), every packet of the
//! burst would hit that megaflow, so the whole burst goes to that port and is counted in it
//! at once. `NORMAL` alone counts as one output when the MAC-learning table names a port
//! for the first packet (the burst's MACs, VLAN and in-port are the same for all). Anything
//! else — a miss (the slow path must see the packets), several actions (rewrites, several
//! outputs, controller, `ct`...), a flood or drop by `NORMAL`, a mask on the source port,
//! a tunnel-metadata packet, the uncached pipeline, a traced pass — falls back to the
//! packet-by-packet pass with the counters of the first lookup undone.
//!
//! Rule, MAC-learning, route and neighbour changes need nothing of their own here: each
//! burst is looked up in the same caches the per-packet pass uses, which the revalidators
//! keep right.

use super::lookup::{Lookup, Tally};
use super::OpenFlow;
use crate::dpcls::{Megaflow, Words, LOOKUP_CHUNK};
use crate::module::{Ctx, Delivery, Dest, SwitchLogic};
use ofproto::odp::DpAction;
use packet::flow::{self, FlowKey};
use packet::{Batch, Pool};
use std::sync::{Arc, OnceLock};

/// The key bits a uniform burst's packets may differ in (the L4 source port).
fn varying() -> &'static Words {
    static V: OnceLock<Words> = OnceLock::new();
    V.get_or_init(|| {
        let k = FlowKey {
            tp_src: u16::MAX,
            ..FlowKey::default()
        };
        k.to_words()
    })
}

/// Bytes of an IPv4 UDP frame (no VLAN tag, no IP options) a flow key is read from:
/// Ethernet, IPv4, the UDP ports, and the UDP length (masked out), as five words.
const UDP4_SIG: usize = 40;

/// Which of those bytes the flow key depends on: all but the IPv4 total length,
/// identification and checksum, the UDP source port (which [`for_burst`] requires the
/// megaflow not to match) and the UDP length.
const fn udp4_mask() -> [u64; UDP4_SIG / 8] {
    let mut m = [0xffu8; UDP4_SIG];
    let skip = [16, 17, 18, 19, 24, 25, 34, 35, 38, 39];
    let mut i = 0;
    while i < skip.len() {
        m[skip[i]] = 0;
        i += 1;
    }
    let mut w = [0u64; UDP4_SIG / 8];
    let mut j = 0;
    while j < UDP4_SIG / 8 {
        let mut x = 0u64;
        let mut k = 0;
        while k < 8 {
            x |= (m[j * 8 + k] as u64) << (8 * k);
            k += 1;
        }
        w[j] = x;
        j += 1;
    }
    w
}
const UDP4_MASK: [u64; UDP4_SIG / 8] = udp4_mask();

/// Word `i` of a header from [`udp4_sig`] (a fixed offset once inlined: no bounds check).
#[inline(always)]
fn word(b: &[u8; UDP4_SIG], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i * 8..i * 8 + 8]);
    u64::from_le_bytes(w)
}

/// The masked words of `d`'s first [`UDP4_SIG`] bytes if it is an IPv4 UDP datagram that
/// flow extraction reads up to its UDP ports: the whole datagram in the frame (its total
/// length from the UDP header to the frame's end).
#[inline(always)]
fn udp4_sig(d: &[u8]) -> Option<[u64; UDP4_SIG / 8]> {
    let b: &[u8; UDP4_SIG] = d.first_chunk()?;
    let total = usize::from(u16::from_be_bytes([b[16], b[17]]));
    if total < 28 || total + 14 > d.len() {
        return None;
    }
    let m = UDP4_MASK;
    Some([
        word(b, 0) & m[0],
        word(b, 1) & m[1],
        word(b, 2) & m[2],
        word(b, 3) & m[3],
        word(b, 4) & m[4],
    ])
}

/// Whether every packet of `batch` (two or more) gets the first one's flow key but for
/// the UDP source port: IPv4 (no options, not a fragment) UDP datagrams whose headers
/// repeat but for the lengths, identification, checksums and source port, as outer tunnel
/// packets from one remote do. Stops at the first packet that differs.
pub(super) fn repeats_udp4(batch: &Batch) -> bool {
    let pkts = batch.packets();
    let Some(d) = pkts.first().map(|p| p.data()) else {
        return false;
    };
    if pkts.len() < 2
        || d.len() < UDP4_SIG
        || d[12..14] != [0x08, 0x00]
        || d[14] != 0x45
        || d[23] != 17
        || u16::from_be_bytes([d[20], d[21]]) & 0x3fff != 0
    {
        return false;
    }
    let Some(f) = udp4_sig(d) else {
        return false;
    };
    // Five XORs ORed together per packet, no loop, no call to `memcmp`.
    pkts[1..].iter().all(|p| {
        udp4_sig(p.data()).is_some_and(|s| {
            (s[0] ^ f[0]) | (s[1] ^ f[1]) | (s[2] ^ f[2]) | (s[3] ^ f[3]) | (s[4] ^ f[4]) == 0
        })
    })
}

/// What a megaflow does with every packet of a uniform burst, if that is one thing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Whole {
    /// One output to this OpenFlow port.
    Output(u32),
    /// `NORMAL` alone: the MAC-learning table's answer for the first packet (same source
    /// and destination MAC, VLAN and in-port for all) holds for every packet.
    Normal,
}

/// `m`'s decision for a whole uniform burst that agrees with the packet it was looked up
/// for, or `None` if it may differ from packet to packet (several actions, or a mask on the
/// L4 source port).
pub(super) fn for_burst(m: &Megaflow) -> Option<Whole> {
    if m.is_dead() || m.mask.iter().zip(varying()).any(|(a, b)| a & b != 0) {
        return None;
    }
    match (m.single_output, m.actions.as_slice()) {
        (Some(p), _) => Some(Whole::Output(p)),
        (None, [DpAction::Normal]) => Some(Whole::Normal),
        _ => None,
    }
}

impl OpenFlow {
    /// See the module documentation.
    pub(super) fn forward_burst(
        &mut self,
        ctx: &Ctx,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        if !self.burst_once(ctx.now_ms, batch, pool, out, false) {
            self.forward(ctx, batch, pool, out);
        }
    }

    /// A received batch forwarded on one megaflow: the previous batch's when that one
    /// reads nothing of a frame (see `frameless`), or else, for outer tunnel packets from one
    /// remote on the underlay bridge or one inner flow bound for a tunnel, its first
    /// packet's when [`repeats_udp4`] holds and that megaflow is `tnl_pop` or `tnl_push`
    /// alone; `false` (nothing done) otherwise. Only while some tunnel exists (one relaxed
    /// load per batch otherwise).
    #[inline]
    pub(super) fn tunnel_burst(
        &mut self,
        now: u64,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) -> bool {
        netdev::tunnel::table::active()
            && (self.frameless_burst(now, batch, pool, out)
                || (repeats_udp4(batch) && self.burst_once(now, batch, pool, out, true)))
    }

    /// Forwards `batch` on its first packet's decision; `false` (nothing done, counters as
    /// they were) if that decision may not hold for the others. `tunnel_only`: only if the
    /// decision is `tnl_pop` to the bridge's internal port or `tnl_push`.
    fn burst_once(
        &mut self,
        now: u64,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
        tunnel_only: bool,
    ) -> bool {
        let Some(first) = batch.packets().first() else {
            return true;
        };
        if self.slow.is_none() || out.tracing() || first.has_tun() || self.keys.is_empty() {
            return false;
        }
        let in_slot = out.in_port();
        let in_port = self.exec.of_port(in_slot);
        self.offs[0] = flow::extract_into(&mut self.keys[0], first.data(), in_port);
        let saved = (self.exec.stats, self.sample);
        let m: Option<Arc<Megaflow>> = {
            let lookup = Lookup {
                emc: &self.emc,
                emc_on: self.emc_active,
                dpcls: &self.dpcls,
            };
            let prev = self.last[0].as_ref().filter(|m| !m.is_dead());
            let mut found = [None; LOOKUP_CHUNK];
            lookup.classify(
                &self.keys[..1],
                0,
                prev,
                &mut found,
                &mut Tally {
                    stats: &mut self.exec.stats,
                    sample: &mut self.sample,
                    offers: &mut self.offers,
                    rng: &mut self.rng,
                },
            );
            found[0].cloned()
        };
        let m = m.filter(|m| {
            !tunnel_only
                || matches!(
                    m.actions.as_slice(),
                    [DpAction::TnlPop { normal: false, .. }] | [DpAction::TnlPush(_)]
                )
        });
        let slot = match m.as_deref().and_then(for_burst) {
            Some(Whole::Output(p)) => self.exec.slot(p),
            Some(Whole::Normal) => self.normal_for_burst(now, in_slot, batch),
            None => None,
        };
        let (Some(m), Some(slot)) = (m, slot) else {
            (self.exec.stats, self.sample) = saved;
            self.offers.clear();
            return false;
        };
        let n = batch.len() as u64;
        let bytes: u64 = batch.packets().iter().map(|p| p.len() as u64).sum();
        // The first packet's hit is counted by the lookup; the others hit the same megaflow.
        self.exec.stats.megaflow_hits += n - 1;
        m.account(n, bytes, now);
        out.emit_run(slot, batch, pool);
        for (i, h, e) in self.offers.drain(..) {
            if let Some(k) = self.keys.get(i) {
                self.emc.insert(h, k.as_words(), &e);
            }
        }
        if !self.last[0].as_ref().is_some_and(|l| Arc::ptr_eq(l, &m)) {
            self.last[0] = Some(m);
        }
        true
    }

    /// `NORMAL` for a uniform burst: the learning table's port for the first packet, with
    /// its VLAN note copied to the others; `None` (flood, drop) leaves the burst to the
    /// packet-by-packet pass, which then asks the table again for the first packet too.
    fn normal_for_burst(&mut self, now: u64, in_slot: u16, batch: &mut Batch) -> Option<u16> {
        let mut pkts = batch.packets_mut().iter_mut();
        let first = pkts.next()?;
        let mut table = super::lock(&self.exec.normal);
        let Dest::Port(slot) = table.lookup_packet(now, in_slot, first) else {
            return None;
        };
        let meta = first.meta;
        let mut rest = 0;
        for p in pkts {
            p.meta = meta;
            rest += 1;
        }
        table.count_forwarded(rest);
        Some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(len: usize, sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[0..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        f[12..15].copy_from_slice(&[0x08, 0x00, 0x45]);
        f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        f[22..24].copy_from_slice(&[64, 17]);
        f[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34..38].copy_from_slice(&[(sport >> 8) as u8, sport as u8, 0x12, 0xb5]);
        f[38..40].copy_from_slice(&((len - 34) as u16).to_be_bytes());
        f
    }

    fn batch(frames: &[Vec<u8>]) -> (Batch, Pool) {
        let mut pool = Pool::new(frames.len());
        let mut b = Batch::new();
        for f in frames {
            let mut p = pool.alloc().expect("buffer");
            assert!(p.set_frame(f));
            assert!(b.push(p).is_ok());
        }
        (b, pool)
    }

    /// Whether the flow keys of `frames` are all the first one's but for `tp_src`.
    fn same_keys(frames: &[Vec<u8>]) -> bool {
        let key = |f: &[u8]| {
            let mut k = FlowKey::ZERO;
            flow::extract_into(&mut k, f, 1);
            k.tp_src = 0;
            k
        };
        frames.iter().all(|f| key(f) == key(&frames[0]))
    }

    #[test]
    fn a_burst_repeats_only_when_every_flow_key_but_the_source_port_does() {
        let base = vec![udp(110, 50000), udp(111, 50001), udp(1400, 61000)];
        let mut id = udp(110, 1);
        id[18..20].copy_from_slice(&[0xab, 0xcd]);
        id[24..26].copy_from_slice(&[0x12, 0x34]);
        let mut padded = udp(110, 2);
        padded.extend_from_slice(&[0; 6]);
        let repeats = [base.clone(), vec![base[0].clone(), id, padded]];
        for frames in &repeats {
            assert!(same_keys(frames));
            assert!(repeats_udp4(&batch(frames).0));
        }
        // A byte the key reads differs, or the datagram is not whole: no repeat.
        let mut differ = Vec::new();
        for (at, x) in [(0, 1), (11, 1), (15, 4), (22, 1), (29, 1), (33, 1), (37, 1)] {
            let mut f = udp(110, 3);
            f[at] ^= x;
            differ.push(f);
        }
        let mut frag = udp(110, 3);
        frag[20] = 0x20;
        differ.push(frag);
        let mut short = udp(110, 3);
        short[16..18].copy_from_slice(&27u16.to_be_bytes());
        differ.push(short);
        differ.push(udp(110, 3)[..100].to_vec());
        for (i, f) in differ.into_iter().enumerate() {
            let frames = [base[0].clone(), f];
            assert!(!repeats_udp4(&batch(&frames).0), "frame {i}");
        }
        // Only UDP over IPv4 without options, two packets or more.
        let mut tcp = base.clone();
        for f in &mut tcp {
            f[23] = 6;
        }
        assert!(!repeats_udp4(&batch(&tcp).0));
        let mut opts = base.clone();
        for f in &mut opts {
            f[14] = 0x46;
        }
        assert!(!repeats_udp4(&batch(&opts).0));
        assert!(!repeats_udp4(&batch(&base[..1]).0));
    }
}
