//! Connection tracking in the datapath: the process's tracker, running a `ct` action on a
//! packet, and the key a tracked packet is re-injected with.
//!
//! What: one [`conntrack::Conntrack`] for the whole process, as OVS's userspace datapath has
//! one for all its bridges (zones separate what must be separate). Poll threads call
//! [`track`] concurrently: the tracker is sharded and takes no global lock per packet. The
//! revalidator threads expire connections ([`sweep`], bounded work per call), and the
//! daemon's `dpctl/*` commands reach it through [`tracker`].
//!
//! How: [`track`] finds the packet's layers with the flow extractor, hands the frame to the
//! tracker (which rewrites it in place for NAT) and returns the verdict. [`recirc_key`]
//! builds the flow key of the packet as it is after tracking: re-extracted (NAT may have
//! changed addresses and ports), with the recirculation id, the ingress metadata of the
//! packet's first pass and the connection-tracking fields of the verdict.
//!
//! Invariant: a key with `recirc_id != 0` is the only kind with connection-tracking fields
//! (see `packet::flow`); [`recirc_key`] never writes id 0 for a tracked packet because
//! recirculation ids start at 1.

use conntrack::{Config, Conntrack, CtInput, CtResult, PacketMeta};
use ofproto::odp_ct::CtAction;
use packet::flow::{self, FlowKey};
use packet::Packet;
use std::sync::OnceLock;

static TRACKER: OnceLock<Conntrack> = OnceLock::new();

/// The process's connection tracker (created on first use).
pub fn tracker() -> &'static Conntrack {
    TRACKER.get_or_init(|| Conntrack::new(Config::default()))
}

/// Expires connections if the tracker was ever used; at most about `budget` looked at.
pub fn sweep(now_ms: u64, budget: usize) -> usize {
    TRACKER.get().map_or(0, |t| t.sweep(now_ms, budget))
}

/// Runs `ct` on `pkt` (rewriting it for NAT) at `now_ms`.
pub fn track(ct: &CtAction, pkt: &mut Packet, now_ms: u64) -> CtResult {
    let mut k = FlowKey::ZERO;
    let offs = flow::extract_into(&mut k, pkt.data(), 0);
    let meta = PacketMeta::from_flow(&k, &offs);
    let mut out = [CtResult::default()];
    let mut input = [CtInput {
        frame: pkt.data_mut(),
        meta,
    }];
    tracker().execute(&mut input, &ct.request(), now_ms, &mut out);
    out[0]
}

/// Writes into `k` the key `pkt` is re-injected with under `recirc_id`, after the `ct`
/// verdict `res` (`None`: no `ct` ran in this pass, the fields stay zero). `first` is the
/// key of the pass that recirculates. In place: the caller's slot in the recirculation
/// queue, so the 328-byte key is not copied on its way there.
pub fn recirc_key(
    k: &mut FlowKey,
    pkt: &Packet,
    first: &FlowKey,
    recirc_id: u32,
    res: Option<&CtResult>,
) {
    *k = FlowKey::ZERO;
    flow::extract_into(k, pkt.data(), first.in_port);
    k.recirc_id = recirc_id;
    k.pkt_mark = first.pkt_mark;
    k.dp_hash = first.dp_hash;
    k.tunnel_id = first.tunnel_id;
    k.tun_src = first.tun_src;
    k.tun_dst = first.tun_dst;
    k.tun_opts_present = first.tun_opts_present;
    k.tun_opts = first.tun_opts;
    if let Some(r) = res {
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
}
