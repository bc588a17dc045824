//! Text forms of matches, actions and megaflows for traces and dumps, in ovs-ofctl's syntax.

use crate::fields;
use crate::tlv::TlvTable;
use crate::tun_md;
use openflow::oxm::{ones, Field};
use openflow::{Action, Match};
use packet::flow::{self, FlowKey};

/// A match as ovs-ofctl prints it (without priority).
pub fn match_text(m: &Match) -> String {
    openflow::text::format_match(m, None)
}

/// One action as ovs-ofctl prints it.
pub fn action_text(a: &Action) -> String {
    openflow::text::format_action(a)
}

/// True if field `f` is meaningful for a packet with this flow's headers (so a megaflow
/// shows `tp_dst` as a TCP port only for TCP).
fn applies(f: Field, k: &FlowKey) -> bool {
    let ip4 = k.dl_type == flow::ETH_TYPE_IPV4;
    let ip6 = k.dl_type == flow::ETH_TYPE_IPV6;
    let ip = ip4 || ip6;
    let arp = k.dl_type == flow::ETH_TYPE_ARP || k.dl_type == flow::ETH_TYPE_RARP;
    let mpls = k.dl_type == flow::ETH_TYPE_MPLS || k.dl_type == flow::ETH_TYPE_MPLS_MCAST;
    let p = k.nw_proto;
    match f {
        Field::InPort | Field::Metadata | Field::EthDst | Field::EthSrc | Field::EthType => true,
        Field::TunnelId | Field::TunSrc | Field::TunDst | Field::PktMark => true,
        Field::TunIpv6Src | Field::TunIpv6Dst => true,
        Field::TunFlags | Field::TunGbpId | Field::TunGbpFlags => true,
        Field::RecircId | Field::DpHash => true,
        Field::CtState | Field::CtZone | Field::CtMark | Field::CtLabel => true,
        Field::CtNwSrc | Field::CtNwDst => ip4,
        Field::CtIpv6Src | Field::CtIpv6Dst => ip6,
        Field::CtNwProto | Field::CtTpSrc | Field::CtTpDst => ip,
        Field::VlanVid | Field::VlanPcp => true,
        Field::InPhyPort => false,
        Field::IpDscp | Field::IpEcn | Field::IpProto | Field::NwTtl | Field::IpFrag => ip,
        Field::Ipv4Src | Field::Ipv4Dst => ip4,
        Field::TcpSrc | Field::TcpDst | Field::TcpFlags => ip && p == flow::IPPROTO_TCP,
        Field::UdpSrc | Field::UdpDst => ip && p == flow::IPPROTO_UDP,
        Field::SctpSrc | Field::SctpDst => ip && p == flow::IPPROTO_SCTP,
        Field::Icmpv4Type | Field::Icmpv4Code => ip4 && p == flow::IPPROTO_ICMP,
        Field::Icmpv6Type | Field::Icmpv6Code => ip6 && p == flow::IPPROTO_ICMPV6,
        Field::ArpOp | Field::ArpSpa | Field::ArpTpa | Field::ArpSha | Field::ArpTha => arp,
        Field::Ipv6Src | Field::Ipv6Dst | Field::Ipv6Flabel | Field::Ipv6Exthdr => ip6,
        Field::Ipv6NdTarget => {
            ip6 && p == flow::IPPROTO_ICMPV6
                && matches!(k.tp_src as u8, flow::ICMPV6_ND_NS | flow::ICMPV6_ND_NA)
        }
        Field::Ipv6NdSll => {
            ip6 && p == flow::IPPROTO_ICMPV6 && k.tp_src as u8 == flow::ICMPV6_ND_NS
        }
        Field::Ipv6NdTll => {
            ip6 && p == flow::IPPROTO_ICMPV6 && k.tp_src as u8 == flow::ICMPV6_ND_NA
        }
        Field::MplsLabel | Field::MplsTc | Field::MplsBos => mpls,
        Field::PbbIsid => k.dl_type == flow::ETH_TYPE_PBB,
        _ => false,
    }
}

/// The megaflow of a flow and its wildcard mask, as a match (`tlv` places the tunnel
/// options: a `tun_metadata` field shows when its present bit is examined, exact when all
/// of its option's bytes are).
pub fn megaflow_match(k: &FlowKey, wc: &FlowKey, tlv: &TlvTable) -> Match {
    let mut m = Match::new();
    for f in Field::ALL {
        if let Some(i) = f.tun_metadata_index() {
            let Some((_, len)) = tlv.slot_of(i) else {
                continue;
            };
            if wc.tun_opts_present & k.tun_opts_present & (1u64 << i) == 0 {
                continue;
            }
            let mask = tun_md::get(wc, tlv, f);
            let v = tun_md::get(k, tlv, f) & mask;
            if mask == ones(8 * len as u32) {
                m.set_exact(f, v);
            } else {
                m.set_masked(f, v, mask);
            }
            continue;
        }
        if !applies(f, k) {
            continue;
        }
        let mask = fields::get(wc, f);
        if mask == 0 {
            continue;
        }
        let v = fields::get(k, f) & mask;
        if mask == f.max() {
            m.set_exact(f, v);
        } else {
            m.set_masked(f, v, mask);
        }
    }
    m
}

/// The megaflow as text.
pub fn megaflow_text(k: &FlowKey, wc: &FlowKey, tlv: &TlvTable) -> String {
    let t = match_text(&megaflow_match(k, wc, tlv));
    if t.is_empty() {
        "(everything)".into()
    } else {
        t
    }
}
