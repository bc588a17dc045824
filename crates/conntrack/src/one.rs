//! # One packet at a time
//!
//! ## What
//! The datapath's `ct` action runs one packet at a time, with the poll thread's
//! [`ConnCache`]: [`Conntrack::execute_one_cached`] takes the packet's layers as a
//! [`PacketMeta`], [`Conntrack::execute_flow_cached`] as the flow extractor left them (its
//! key and offsets), which is what the datapath holds.
//!
//! ## Why `execute_flow_cached` is the same
//! It is `execute_one_cached` with [`PacketMeta::from_flow`]'s meta: for an IPv4 frame that
//! is not a fragment and has both layers it writes that meta's fields itself, as constants
//! where they are (`v6`, `frag`, `l4_csum_trusted` false), so that the tracker's IPv4
//! paths, inlined here, test none of them again; every other frame takes `from_flow`. A
//! proptest in `crate::tests` checks the two against each other on frames of every kind.
//!
//! ## Threading
//! As the tracker: `&self`, any poll thread, each with its own cache.

use crate::cache::ConnCache;
use crate::key::PacketMeta;
use crate::tracker::{Conntrack, CtRequest, CtResult};
use packet::flow::{FlowKey, Offsets, ETH_TYPE_IPV4, NW_FRAG_ANY};

impl Conntrack {
    /// [`Conntrack::execute_cached`] for one packet: `frame` with its layers `meta`
    /// (`None`: not IP, `+trk+inv`), the verdict written into `out` (all of it, whatever it
    /// held).
    #[inline]
    pub fn execute_one_cached(
        &self,
        cache: &mut ConnCache,
        frame: &mut [u8],
        meta: Option<&PacketMeta>,
        req: &CtRequest<'_>,
        now: u64,
        out: &mut CtResult,
    ) {
        cache.bind(self.id);
        match meta {
            Some(meta) => self.parse_and_track(Some(cache), frame, meta, req, now, out),
            None => *out = self.invalid(req.zone),
        }
    }

    /// [`Conntrack::execute_one_cached`] for a frame whose flow key is `flow` and layers
    /// `offs` (as the flow extractor found them): the meta `PacketMeta::from_flow` gives.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn execute_flow_cached(
        &self,
        cache: &mut ConnCache,
        frame: &mut [u8],
        flow: &FlowKey,
        offs: &Offsets,
        req: &CtRequest<'_>,
        now: u64,
        out: &mut CtResult,
    ) {
        cache.bind(self.id);
        if let (ETH_TYPE_IPV4, 0, Some(l3), Some(l4)) =
            (flow.dl_type, flow.nw_frag & NW_FRAG_ANY, offs.l3, offs.l4)
        {
            let meta = PacketMeta {
                l3,
                l4: Some(l4),
                nw_proto: flow.nw_proto,
                v6: false,
                frag: false,
                l4_csum_trusted: false,
            };
            self.parse_and_track(Some(cache), frame, &meta, req, now, out);
            return;
        }
        match PacketMeta::from_flow(flow, offs) {
            Some(meta) => self.parse_and_track(Some(cache), frame, &meta, req, now, out),
            None => *out = self.invalid(req.zone),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testpkt::*;
    use crate::tracker::{Conntrack, CtRequest, CtResult};
    use crate::{ConnCache, PacketMeta};

    proptest::proptest! {
        /// The same packets through two trackers, one by `execute_one_cached` with
        /// `from_flow`'s meta, one by `execute_flow_cached`: the same verdicts, the same
        /// frames, the same connections. Frames of every kind (UDP, TCP, SCTP, ICMP, IPv6,
        /// fragments), with bytes changed after the flow key was taken, layers misplaced,
        /// the fragment bits flipped, some requests committing.
        #[test]
        fn flow_path_is_the_meta_path(
            pkts in proptest::collection::vec(
                (0u8..8, proptest::collection::vec((0usize..80, proptest::num::u8::ANY), 0..3),
                 -2i32..3, -4i32..5, proptest::num::u8::ANY, proptest::bool::ANY, proptest::bool::ANY),
                1..12,
            ),
        ) {
            let (ta, tb) = (Conntrack::default(), Conntrack::default());
            let (mut ca, mut cb) = (ConnCache::default(), ConnCache::default());
            for (i, (kind, edits, l3_delta, l4_delta, frag, commit, reply)) in pkts.into_iter().enumerate() {
                let (a, b) = if reply { ([10, 0, 0, 2], [10, 0, 0, 1]) } else { ([10, 0, 0, 1], [10, 0, 0, 2]) };
                let (sp, dp) = if reply { (9, 7) } else { (7, 9) };
                let mut f = match kind {
                    0 => udp4(a, b, sp, dp, b"hello"),
                    1 => tcp4(a, b, sp, dp, 1, 0, 0x02, b""),
                    2 => other4(a, b, 132, &[0, 7, 0, 9, 0, 0, 0, 0, 1]),
                    3 => icmp4_echo(a, b, if reply { 0 } else { 8 }, 5, 1),
                    4 => udp6(v6addr(u16::from(reply)), v6addr(u16::from(!reply)), sp, dp, b"x"),
                    5 => fragment4(&udp4(a, b, sp, dp, &[1; 40]), 24).swap_remove(0),
                    6 => other4(a, b, 17, &[0, 7, 0, 9, 0, 13, 0, 0, 1, 2, 3, 4, 5]),
                    _ => vec![0u8; 60],
                };
                let (mut k, mut o) = flow_of(&f);
                for (at, v) in edits {
                    if let Some(x) = f.get_mut(at) {
                        *x = v;
                    }
                }
                o.l3 = o.l3.map(|l3| (i32::from(l3) + l3_delta).max(0) as u16);
                o.l4 = o.l4.map(|l4| (i32::from(l4) + l4_delta).max(0) as u16);
                k.nw_frag ^= frag & 3;
                let req = CtRequest { zone: 3, commit, ..CtRequest::default() };
                let now = i as u64 * 10;
                let (mut fa, mut fb) = (f.clone(), f);
                let (mut ra, mut rb) = (CtResult::default(), CtResult { state: 0xdead, ..CtResult::default() });
                let meta = PacketMeta::from_flow(&k, &o);
                ta.execute_one_cached(&mut ca, &mut fa, meta.as_ref(), &req, now, &mut ra);
                tb.execute_flow_cached(&mut cb, &mut fb, &k, &o, &req, now, &mut rb);
                proptest::prop_assert_eq!(ra, rb);
                proptest::prop_assert_eq!(fa, fb);
                proptest::prop_assert_eq!(ta.n_conns(), tb.n_conns());
            }
        }
    }
}
