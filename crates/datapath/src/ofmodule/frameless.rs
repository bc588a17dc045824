//! A received batch forwarded without extracting its packets, when the megaflow its
//! predecessor ended on reads nothing of a frame.
//!
//! Many tunnel megaflows decide from the ingress port and the tunnel metadata alone: the
//! integration bridge's `in_port=1 -> tnl_push(...)` towards a tunnel (its mask: the in-port,
//! the pass, the tunnel options' presence, and whether the packet is a fragment), and
//! `in_port=<tunnel> -> output:N` for what a tunnel port received (the in-port, the tunnel
//! key and outer addresses, and the fragment bits). Every packet of a batch (which comes
//! from one port) whose metadata is the first packet's gets the same key under such a
//! mask, so if the megaflow the previous batch ended on covers that key, the
//! packet-by-packet pass would hit it for each packet (that megaflow is its first
//! candidate) and run its one output: the whole batch goes to that port at once, counted in
//! the megaflow, with no flow extraction, no lookup per packet.
//!
//! Per packet remain: the fragment bits when the mask holds them (read from the frame's
//! IPv4 header or IPv6 next header: [`not_fragment`], conservative: a frame it cannot vouch
//! for sends the batch the usual way), and, for a batch a tunnel port received, its tunnel
//! metadata compared with the first packet's, as stored (`Packet::same_tun`; options
//! refused: their TLV mapping is per packet).
//!
//! When it applies: only while a tunnel exists (see `uniform::tunnel_burst`), for a
//! megaflow that is one output, and, for a batch without tunnel metadata, only when that
//! output is `tnl_push`: other traffic keeps the packet-by-packet pass. A dead megaflow, a
//! mask that reads any other frame field, a key the megaflow does not cover, or a packet
//! that differs: nothing is done and the usual pass runs. Rule and port changes need
//! nothing of their own: the revalidators kill a megaflow whose decision changed, and the
//! check is made on each batch.

use super::OpenFlow;
use crate::dpcls::{Megaflow, Words};
use crate::module::Delivery;
use ofproto::odp::DpAction;
use packet::flow::{FlowKey, N_REGS, TUN_OPTS_LEN};
use packet::{Batch, Pool};
use std::sync::OnceLock;

/// The key fields flow extraction reads from a frame's bytes, but for the fragment bits
/// (`nw_frag`), as a mask; every other field comes from the in-port and the packet's
/// metadata. Every field is named, so a new one must be placed here.
fn frame_fields() -> &'static Words {
    static F: OnceLock<Words> = OnceLock::new();
    F.get_or_init(|| {
        let (b4, b6, b16) = ([0xff; 4], [0xff; 6], [0xff; 16]);
        FlowKey {
            in_port: 0,
            recirc_id: 0,
            pkt_mark: 0,
            dp_hash: 0,
            metadata: 0,
            tunnel_id: 0,
            regs: [0; N_REGS],
            dl_dst: b6,
            dl_src: b6,
            vlan_tpid: [u16::MAX; 2],
            vlan_tci: [u16::MAX; 2],
            dl_type: u16::MAX,
            mpls_n: u8::MAX,
            pad_l2: 0,
            mpls_lse: [u32::MAX; 4],
            pbb_isid: u32::MAX,
            tun_src: [0; 4],
            nw_src: b4,
            nw_dst: b4,
            ipv6_src: b16,
            ipv6_dst: b16,
            ipv6_label: u32::MAX,
            nw_proto: u8::MAX,
            nw_tos: u8::MAX,
            nw_ttl: u8::MAX,
            nw_frag: 0,
            ipv6_exthdr: u16::MAX,
            tun_flags: 0,
            tun_gbp_id: 0,
            tun_gbp_flags: 0,
            pad_l3: 0,
            tp_src: u16::MAX,
            tp_dst: u16::MAX,
            tcp_flags: u16::MAX,
            pad_l4: 0,
            nd_target: b16,
            arp_sha: b6,
            arp_tha: b6,
            tun_dst: [0; 4],
            ct_state: 0,
            ct_nw_proto: 0,
            ct_zone: 0,
            ct_mark: 0,
            ct_tp_src: 0,
            ct_tp_dst: 0,
            pad_ct: 0,
            ct_label: [0; 16],
            ct_src: [0; 16],
            ct_dst: [0; 16],
            tun_opts_present: 0,
            tun_opts: [0; TUN_OPTS_LEN],
            tun_ipv6_src: [0; 16],
            tun_ipv6_dst: [0; 16],
        }
        .to_words()
    })
}

/// The fragment bits' place in the key, as a mask.
fn frag_field() -> &'static Words {
    static F: OnceLock<Words> = OnceLock::new();
    F.get_or_init(|| {
        FlowKey {
            nw_frag: u8::MAX,
            ..FlowKey::ZERO
        }
        .to_words()
    })
}

/// Whether `m`'s mask reads no frame field but the fragment bits (the first answer), and
/// whether it reads those (the second).
fn reads_frame(m: &Megaflow) -> (bool, bool) {
    let (mut other, mut frag) = (0, 0);
    for ((w, f), g) in m.mask.iter().zip(frame_fields()).zip(frag_field()) {
        other |= w & f;
        frag |= w & g;
    }
    (other != 0, frag != 0)
}

/// Whether flow extraction surely gives frame `d` no fragment bits: an untagged IPv4
/// header that says "not a fragment", an untagged IPv6 header followed directly by TCP,
/// UDP, ICMPv6 or SCTP, or a frame of another EtherType that is neither a VLAN tag nor an
/// 802.3 length. `false` where it cannot tell cheaply (the batch then goes the usual way).
#[inline(always)]
pub(super) fn not_fragment(d: &[u8]) -> bool {
    let Some(h) = d.first_chunk::<22>() else {
        return false;
    };
    match u16::from_be_bytes([h[12], h[13]]) {
        0x0800 => h[20] & 0x3f == 0 && h[21] == 0,
        0x86dd => matches!(h[20], 6 | 17 | 58 | 132),
        0x8100 | 0x88a8 => false,
        t => t >= 0x600,
    }
}

impl OpenFlow {
    /// See the module documentation: `true` when the whole batch went to the megaflow the
    /// previous batch ended on, `false` (nothing done) otherwise.
    pub(super) fn frameless_burst(
        &mut self,
        now: u64,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) -> bool {
        let Some(m) = self.last[0].as_ref() else {
            return false;
        };
        let Some(first) = batch.packets().first() else {
            return false;
        };
        let Some(port) = m.single_output else {
            return false;
        };
        if m.is_dead() || self.slow.is_none() {
            return false;
        }
        let tun = first.tun();
        if tun.is_none() && !matches!(m.actions.as_slice(), [DpAction::TnlPush(_)]) {
            return false;
        }
        let (other, frag) = reads_frame(m);
        if other {
            return false;
        }
        let mut key = FlowKey::ZERO;
        key.in_port = self.exec.of_port(out.in_port());
        if let Some(t) = &tun {
            if t.opts_len != 0 {
                return false;
            }
            super::tunnel::tun_fields(&mut key, t);
        }
        if !m.covers(key.as_words()) {
            return false;
        }
        let Some(slot) = self.exec.slot(port) else {
            return false;
        };
        // One plain pass per check, without an exit per packet: a batch that gets here
        // almost always goes through whole.
        let pkts = batch.packets();
        let mut ok = true;
        if frag {
            for p in pkts {
                ok &= not_fragment(p.data());
            }
        }
        if tun.is_some() {
            for p in pkts {
                ok &= p.same_tun(first);
            }
        }
        if !ok {
            return false;
        }
        let n = batch.len() as u64;
        let bytes: u64 = batch.packets().iter().map(|p| p.len() as u64).sum();
        self.exec.stats.megaflow_hits += n;
        m.account(n, bytes, now);
        out.emit_run(slot, batch, pool);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::flow;

    fn eth(ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ty.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn ipv4(proto: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
        let mut h = vec![
            0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        h[6..8].copy_from_slice(&frag.to_be_bytes());
        h.extend_from_slice(l4);
        eth(0x0800, &h)
    }

    fn ipv6(nh: u8, l4: &[u8]) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0, 0, 0, nh, 64];
        h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
        h.extend_from_slice(&[0xfd; 16]);
        h.extend_from_slice(&[0xfe; 16]);
        h.extend_from_slice(l4);
        eth(0x86dd, &h)
    }

    const UDP: [u8; 8] = [0x12, 0x34, 0x00, 0x35, 0, 8, 0, 0];
    const TCP: [u8; 20] = [
        0, 80, 0, 81, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x12, 0, 0, 0, 0, 0, 0,
    ];

    fn frames() -> Vec<Vec<u8>> {
        let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1];
        arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2]);
        let mut tagged = ipv4(17, 0, &UDP);
        tagged.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
        vec![
            ipv4(17, 0, &UDP),
            ipv4(6, 0, &TCP),
            ipv4(6, 0x2000, &TCP),
            ipv4(6, 0x0010, &TCP),
            ipv4(1, 0, &[8, 0, 0, 0, 0, 1, 0, 1]),
            ipv6(17, &UDP),
            ipv6(6, &TCP),
            ipv6(
                44,
                &[17, 0, 0, 1, 0, 0, 0, 1, 0x12, 0x34, 0, 0x35, 0, 8, 0, 0],
            ),
            ipv6(
                58,
                &[
                    135, 0, 0, 0, 0, 0, 0, 0, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9,
                ],
            ),
            eth(0x0806, &arp),
            tagged,
            eth(0x8847, &[0, 1, 0x41, 0xff, 0x45, 0]),
            eth(0x88e7, &[0, 0x12, 0x34, 0x56]),
            eth(0x0030, &[0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00]),
            vec![1, 2, 3],
        ]
    }

    /// Every key field extraction writes from a frame is in [`frame_fields`] or is the
    /// fragment bits: keys of frames of every kind, and of those frames with bytes
    /// changed, differ from the in-port-only key nowhere else.
    #[test]
    fn frame_fields_hold_everything_extraction_reads_from_a_frame() {
        let base = FlowKey {
            in_port: 7,
            ..FlowKey::ZERO
        }
        .to_words();
        let mut rng = 0x2545_f491_u32;
        let mut all = Vec::new();
        for f in frames() {
            for _ in 0..50 {
                let mut g = f.clone();
                rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let at = (rng >> 8) as usize % g.len().max(1);
                if let Some(b) = g.get_mut(at) {
                    *b ^= (rng >> 24) as u8 | 1;
                }
                all.push(g);
            }
            all.push(f);
        }
        for f in &all {
            let mut k = FlowKey::ZERO;
            flow::extract_into(&mut k, f, 7);
            for (i, ((w, b), (m, g))) in k
                .to_words()
                .iter()
                .zip(&base)
                .zip(frame_fields().iter().zip(frag_field()))
                .enumerate()
            {
                assert_eq!((w ^ b) & !(m | g), 0, "word {i} of {f:02x?}");
            }
        }
    }

    /// [`not_fragment`] vouches only for frames whose key has no fragment bits, and does
    /// for plain IPv4 and IPv6 datagrams.
    #[test]
    fn not_fragment_agrees_with_extraction() {
        let mut rng = 0x1234_5679_u32;
        for f in frames() {
            for k in 0..60 {
                let mut g = f.clone();
                if k > 0 {
                    rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    let at = 12 + (rng >> 8) as usize % 12;
                    if let Some(b) = g.get_mut(at) {
                        *b ^= (rng >> 24) as u8 | 1;
                    }
                }
                let mut key = FlowKey::ZERO;
                flow::extract_into(&mut key, &g, 1);
                if not_fragment(&g) {
                    assert_eq!(key.nw_frag, 0, "{g:02x?}");
                }
            }
        }
        assert!(not_fragment(&ipv4(17, 0x4000, &UDP)));
        assert!(not_fragment(&ipv6(17, &UDP)));
        assert!(!not_fragment(&ipv4(17, 0x2000, &UDP)));
        assert!(!not_fragment(&ipv6(44, &UDP)));
    }
}
