//! Where each OpenFlow field lives in the flow key.
//!
//! OpenFlow names fields by protocol (`tcp_dst`, `arp_spa`, `icmpv6_type`...); the flow key
//! stores them by position (`tp_dst`, `nw_src`...), several OpenFlow fields sharing one slot
//! when no packet can have both (TCP, UDP and SCTP ports and ICMP type/code share
//! `tp_src`/`tp_dst`; ARP addresses share the IPv4 ones). A match's prerequisites (which the
//! `openflow` crate validates) always pin down `dl_type` and `nw_proto`, so a shared slot is
//! never ambiguous inside a rule.
//!
//! [`get`] reads a field's value from a key in OpenFlow's right-aligned `u128` form;
//! [`set`] writes a value under a mask, touching only the field's own bits (a VLAN PCP write
//! leaves the VID alone). Because the mapping is bit-for-bit, the same functions build a
//! rule's mask key: set the mask's value into an all-zero key.
//!
//! The connection-tracking original tuple shares `ct_src`/`ct_dst` between families: an
//! IPv4 `ct_nw_src` is the first four bytes (the flow key's module documentation says
//! why that is never ambiguous).
//!
//! The `tun_metadata` fields are not here: where a bridge keeps them depends on its TLV
//! table (see `crate::tun_md`); [`get`] reads them as zero and [`set`] ignores them.
//!
//! The register views read and write the 32-bit registers they cover: `xreg N` is
//! `regs[2N] << 32 | regs[2N+1]`, `xxreg N` is `regs[4N..4N+4]`, most significant first.

use openflow::oxm::Field;
use packet::flow::{FlowKey, VLAN_PRESENT};

fn be_bytes_u128(b: &[u8]) -> u128 {
    b.iter().fold(0u128, |acc, x| (acc << 8) | u128::from(*x))
}

fn write_be(b: &mut [u8], v: u128, m: u128) {
    let n = b.len();
    for (i, byte) in b.iter_mut().enumerate() {
        let shift = 8 * (n - 1 - i);
        let vb = (v >> shift) as u8;
        let mb = (m >> shift) as u8;
        *byte = (*byte & !mb) | (vb & mb);
    }
}

fn upd<T>(slot: &mut T, v: u128, m: u128)
where
    T: Copy + Into<u128> + TryFrom<u128>,
{
    let old: u128 = (*slot).into();
    let new = (old & !m) | (v & m);
    if let Ok(x) = T::try_from(new) {
        *slot = x;
    }
}

/// The registers a register field covers: (first, count); the first is the most
/// significant.
fn reg_span(f: Field) -> (usize, usize) {
    match (f.reg_view(), f.reg_index()) {
        (Some(span), _) => span,
        (None, Some(i)) => (i, 1),
        (None, None) => (0, 0),
    }
}

/// The value of field `f` in `k`. Fields the key cannot hold read as zero.
pub fn get(k: &FlowKey, f: Field) -> u128 {
    match f {
        Field::InPort | Field::InPhyPort => u128::from(k.in_port),
        Field::Metadata => u128::from(k.metadata),
        Field::EthDst => be_bytes_u128(&k.dl_dst),
        Field::EthSrc => be_bytes_u128(&k.dl_src),
        Field::EthType => u128::from(k.dl_type),
        Field::VlanVid => u128::from(k.vlan_tci[0] & 0x1fff),
        Field::VlanPcp => u128::from(k.vlan_tci[0] >> 13),
        Field::IpDscp => u128::from(k.nw_tos >> 2),
        Field::IpEcn => u128::from(k.nw_tos & 3),
        Field::IpProto | Field::ArpOp => u128::from(k.nw_proto),
        Field::Ipv4Src | Field::ArpSpa => be_bytes_u128(&k.nw_src),
        Field::Ipv4Dst | Field::ArpTpa => be_bytes_u128(&k.nw_dst),
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => u128::from(k.tp_src),
        Field::TcpDst | Field::UdpDst | Field::SctpDst => u128::from(k.tp_dst),
        Field::Icmpv4Type | Field::Icmpv6Type => u128::from(k.tp_src & 0xff),
        Field::Icmpv4Code | Field::Icmpv6Code => u128::from(k.tp_dst & 0xff),
        Field::ArpSha | Field::Ipv6NdSll => be_bytes_u128(&k.arp_sha),
        Field::ArpTha | Field::Ipv6NdTll => be_bytes_u128(&k.arp_tha),
        Field::Ipv6Src => be_bytes_u128(&k.ipv6_src),
        Field::Ipv6Dst => be_bytes_u128(&k.ipv6_dst),
        Field::Ipv6Flabel => u128::from(k.ipv6_label & 0x000f_ffff),
        Field::Ipv6NdTarget => be_bytes_u128(&k.nd_target),
        Field::MplsLabel => u128::from(k.mpls_lse[0] >> 12),
        Field::MplsTc => u128::from((k.mpls_lse[0] >> 9) & 7),
        Field::MplsBos => u128::from((k.mpls_lse[0] >> 8) & 1),
        Field::PbbIsid => u128::from(k.pbb_isid & 0x00ff_ffff),
        Field::TunnelId => u128::from(k.tunnel_id),
        Field::TunSrc => be_bytes_u128(&k.tun_src),
        Field::TunDst => be_bytes_u128(&k.tun_dst),
        Field::TunIpv6Src => be_bytes_u128(&k.tun_ipv6_src),
        Field::TunIpv6Dst => be_bytes_u128(&k.tun_ipv6_dst),
        Field::TunFlags => u128::from(k.tun_flags & packet::flow::TUN_F_OAM),
        Field::TunGbpId => u128::from(k.tun_gbp_id),
        Field::TunGbpFlags => u128::from(k.tun_gbp_flags),
        Field::Ipv6Exthdr => u128::from(k.ipv6_exthdr),
        Field::TcpFlags => u128::from(k.tcp_flags & 0x0fff),
        Field::NwTtl => u128::from(k.nw_ttl),
        Field::IpFrag => u128::from(k.nw_frag & 3),
        Field::PktMark => u128::from(k.pkt_mark),
        Field::RecircId => u128::from(k.recirc_id),
        Field::DpHash => u128::from(k.dp_hash),
        Field::CtState => u128::from(k.ct_state),
        Field::CtZone => u128::from(k.ct_zone),
        Field::CtMark => u128::from(k.ct_mark),
        Field::CtLabel => be_bytes_u128(&k.ct_label),
        Field::CtNwSrc => be_bytes_u128(&k.ct_src[..4]),
        Field::CtNwDst => be_bytes_u128(&k.ct_dst[..4]),
        Field::CtIpv6Src => be_bytes_u128(&k.ct_src),
        Field::CtIpv6Dst => be_bytes_u128(&k.ct_dst),
        Field::CtNwProto => u128::from(k.ct_nw_proto),
        Field::CtTpSrc => u128::from(k.ct_tp_src),
        Field::CtTpDst => u128::from(k.ct_tp_dst),
        // The registers, alone or as 64- and 128-bit views.
        _ if reg_span(f).1 != 0 => {
            let (first, n) = reg_span(f);
            k.regs
                .iter()
                .skip(first)
                .take(n)
                .fold(0u128, |acc, r| (acc << 32) | u128::from(*r))
        }
        // The tunnel options: where they sit depends on the bridge's TLV table, so
        // `crate::tun_md` reads them.
        _ => 0,
    }
}

/// Writes `value` into field `f` of `k` under `mask` (bits outside the field are ignored).
pub fn set(k: &mut FlowKey, f: Field, value: u128, mask: u128) {
    let m = mask & f.max();
    let v = value & m;
    match f {
        Field::InPort | Field::InPhyPort => upd(&mut k.in_port, v, m),
        Field::Metadata => upd(&mut k.metadata, v, m),
        Field::EthDst => write_be(&mut k.dl_dst, v, m),
        Field::EthSrc => write_be(&mut k.dl_src, v, m),
        Field::EthType => upd(&mut k.dl_type, v, m),
        Field::VlanVid => upd(&mut k.vlan_tci[0], v, m & 0x1fff),
        Field::VlanPcp => upd(&mut k.vlan_tci[0], v << 13, (m & 7) << 13),
        Field::IpDscp => upd(&mut k.nw_tos, v << 2, (m & 0x3f) << 2),
        Field::IpEcn => upd(&mut k.nw_tos, v, m & 3),
        Field::IpProto | Field::ArpOp => upd(&mut k.nw_proto, v, m & 0xff),
        Field::Ipv4Src | Field::ArpSpa => write_be(&mut k.nw_src, v, m),
        Field::TunSrc => write_be(&mut k.tun_src, v, m),
        Field::TunDst => write_be(&mut k.tun_dst, v, m),
        Field::TunIpv6Src => write_be(&mut k.tun_ipv6_src, v, m),
        Field::TunIpv6Dst => write_be(&mut k.tun_ipv6_dst, v, m),
        Field::TunFlags => upd(&mut k.tun_flags, v, m & u128::from(packet::flow::TUN_F_OAM)),
        Field::TunGbpId => upd(&mut k.tun_gbp_id, v, m),
        Field::TunGbpFlags => upd(&mut k.tun_gbp_flags, v, m),
        Field::Ipv4Dst | Field::ArpTpa => write_be(&mut k.nw_dst, v, m),
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => upd(&mut k.tp_src, v, m),
        Field::TcpDst | Field::UdpDst | Field::SctpDst => upd(&mut k.tp_dst, v, m),
        Field::Icmpv4Type | Field::Icmpv6Type => upd(&mut k.tp_src, v, m & 0xff),
        Field::Icmpv4Code | Field::Icmpv6Code => upd(&mut k.tp_dst, v, m & 0xff),
        Field::ArpSha | Field::Ipv6NdSll => write_be(&mut k.arp_sha, v, m),
        Field::ArpTha | Field::Ipv6NdTll => write_be(&mut k.arp_tha, v, m),
        Field::Ipv6Src => write_be(&mut k.ipv6_src, v, m),
        Field::Ipv6Dst => write_be(&mut k.ipv6_dst, v, m),
        Field::Ipv6Flabel => upd(&mut k.ipv6_label, v, m & 0x000f_ffff),
        Field::Ipv6NdTarget => write_be(&mut k.nd_target, v, m),
        Field::MplsLabel => upd(&mut k.mpls_lse[0], v << 12, (m & 0xf_ffff) << 12),
        Field::MplsTc => upd(&mut k.mpls_lse[0], v << 9, (m & 7) << 9),
        Field::MplsBos => upd(&mut k.mpls_lse[0], v << 8, (m & 1) << 8),
        Field::PbbIsid => upd(&mut k.pbb_isid, v, m & 0x00ff_ffff),
        Field::TunnelId => upd(&mut k.tunnel_id, v, m),
        Field::Ipv6Exthdr => upd(&mut k.ipv6_exthdr, v, m & 0x1ff),
        Field::TcpFlags => upd(&mut k.tcp_flags, v, m & 0x0fff),
        Field::NwTtl => upd(&mut k.nw_ttl, v, m & 0xff),
        Field::IpFrag => upd(&mut k.nw_frag, v, m & 3),
        Field::PktMark => upd(&mut k.pkt_mark, v, m),
        Field::RecircId => upd(&mut k.recirc_id, v, m),
        Field::DpHash => upd(&mut k.dp_hash, v, m),
        Field::CtState => upd(&mut k.ct_state, v, m & 0xff),
        Field::CtZone => upd(&mut k.ct_zone, v, m),
        Field::CtMark => upd(&mut k.ct_mark, v, m),
        Field::CtLabel => write_be(&mut k.ct_label, v, m),
        Field::CtNwSrc => write_be(&mut k.ct_src[..4], v, m),
        Field::CtNwDst => write_be(&mut k.ct_dst[..4], v, m),
        Field::CtIpv6Src => write_be(&mut k.ct_src, v, m),
        Field::CtIpv6Dst => write_be(&mut k.ct_dst, v, m),
        Field::CtNwProto => upd(&mut k.ct_nw_proto, v, m & 0xff),
        Field::CtTpSrc => upd(&mut k.ct_tp_src, v, m),
        Field::CtTpDst => upd(&mut k.ct_tp_dst, v, m),
        // The registers, alone or as 64- and 128-bit views.
        _ if reg_span(f).1 != 0 => {
            let (first, n) = reg_span(f);
            for (j, r) in k.regs.iter_mut().skip(first).take(n).enumerate() {
                let shift = 32 * (n - 1 - j);
                upd(r, (v >> shift) & 0xffff_ffff, (m >> shift) & 0xffff_ffff);
            }
        }
        // The tunnel options: `crate::tun_md` writes them.
        _ => {}
    }
}

/// Marks every bit of field `f` as examined in the wildcard mask `wc`.
pub fn unwildcard(wc: &mut FlowKey, f: Field) {
    set(wc, f, u128::MAX, u128::MAX);
}

/// The (value, mask) key pair of an OpenFlow match.
pub fn match_to_key(m: &openflow::Match) -> (FlowKey, FlowKey) {
    let mut value = FlowKey::ZERO;
    let mut mask = FlowKey::ZERO;
    for e in m.iter() {
        let bits = e.mask_bits();
        set(&mut value, e.field, e.value & bits, bits);
        set(&mut mask, e.field, bits, bits);
    }
    (value, mask)
}

/// A flow key whose fields hold the values of `m` (masks ignored), for tracing a flow
/// written in match syntax.
pub fn match_to_flow(m: &openflow::Match, in_port_default: u32) -> FlowKey {
    let mut k = FlowKey {
        in_port: in_port_default,
        ..FlowKey::ZERO
    };
    for e in m.iter() {
        set(&mut k, e.field, e.value, u128::MAX);
    }
    // A VLAN written as a VID means a present tag.
    if k.vlan_tci[0] & 0x0fff != 0 {
        k.vlan_tci[0] |= VLAN_PRESENT;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips_alone() {
        for f in Field::ALL.into_iter().filter(|f| !f.is_tun_metadata()) {
            // The key keeps ARP opcodes in 8 bits (opcodes above 255 are unassigned).
            let max = if f == Field::ArpOp { 0xff } else { f.max() };
            let mut k = FlowKey::ZERO;
            set(&mut k, f, max, max);
            assert_eq!(get(&k, f), max, "{f:?}");
            set(&mut k, f, 0, max);
            assert_eq!(
                k.to_words(),
                FlowKey::ZERO.to_words(),
                "{f:?} left bits behind"
            );
        }
    }

    #[test]
    fn shared_slots_do_not_disturb_neighbours() {
        let mut k = FlowKey::ZERO;
        set(&mut k, Field::VlanVid, 0x1000 | 10, u128::MAX);
        set(&mut k, Field::VlanPcp, 5, u128::MAX);
        assert_eq!(get(&k, Field::VlanVid), 0x1000 | 10);
        assert_eq!(get(&k, Field::VlanPcp), 5);
        set(&mut k, Field::IpDscp, 46, u128::MAX);
        set(&mut k, Field::IpEcn, 1, u128::MAX);
        assert_eq!(k.nw_tos, (46 << 2) | 1);
        set(&mut k, Field::MplsTc, 3, u128::MAX);
        set(&mut k, Field::MplsLabel, 0xfffff, u128::MAX);
        assert_eq!(get(&k, Field::MplsTc), 3);
        assert_eq!(k.mpls_lse[0], (0xfffff << 12) | (3 << 9));
    }
}
