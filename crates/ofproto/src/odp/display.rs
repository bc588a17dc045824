//! The text form of datapath actions (`ovs-appctl dpctl/dump-flows` style).

use super::*;

/// A list of datapath actions as `dpctl/dump-flows` writes it: comma-separated, `drop` for
/// none.
pub fn list_text(actions: &[DpAction]) -> String {
    if actions.is_empty() {
        return "drop".to_string();
    }
    let text: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
    text.join(",")
}

impl std::fmt::Display for DpAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::net::{Ipv4Addr, Ipv6Addr};
        let mac = |m: &[u8; 6]| {
            format!(
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                m[0], m[1], m[2], m[3], m[4], m[5]
            )
        };
        match self {
            DpAction::Output(p) => match *p {
                0xffff_fffe => write!(f, "LOCAL"),
                p => write!(f, "{p}"),
            },
            DpAction::Normal => write!(f, "NORMAL"),
            DpAction::Controller {
                max_len,
                reason,
                extra: None,
                ..
            } => write!(
                f,
                "userspace(controller,reason={reason:?},max_len={max_len})"
            ),
            DpAction::Controller {
                max_len,
                extra: Some(x),
                ..
            } => write!(
                f,
                "userspace(controller,reason={},max_len={max_len},controller_id={}{})",
                x.reason,
                x.controller_id,
                if x.continuation.is_empty() {
                    ""
                } else {
                    ",pause"
                }
            ),
            DpAction::Clone(v) => {
                write!(f, "clone(")?;
                for (i, a) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
            DpAction::CheckPktLen(c) => write!(f, "{c}"),
            DpAction::Meter(m) => write!(f, "meter({m})"),
            DpAction::SetQueue(q) => write!(f, "set_queue({q})"),
            DpAction::SetEthSrc(m) => write!(f, "set(eth(src={}))", mac(m)),
            DpAction::SetEthDst(m) => write!(f, "set(eth(dst={}))", mac(m)),
            DpAction::SetEthType(t) => write!(f, "set(eth_type({t:#06x}))"),
            DpAction::PushVlan { tpid, tci } => {
                write!(
                    f,
                    "push_vlan(tpid={tpid:#06x},vid={},pcp={})",
                    tci & 0xfff,
                    tci >> 13
                )
            }
            DpAction::PopVlan => write!(f, "pop_vlan"),
            DpAction::SetVlanTci { tci, mask } => {
                write!(f, "set(vlan(tci={tci:#06x}/{mask:#06x}))")
            }
            DpAction::PushMpls { ethertype, lse, .. } => write!(
                f,
                "push_mpls(label={},tc={},ttl={},bos={},eth_type={ethertype:#06x})",
                lse >> 12,
                (lse >> 9) & 7,
                lse & 0xff,
                (lse >> 8) & 1
            ),
            DpAction::PopMpls(t) => write!(f, "pop_mpls(eth_type={t:#06x})"),
            DpAction::SetMplsLse { lse, mask } => write!(f, "set(mpls(lse={lse:#x}/{mask:#x}))"),
            DpAction::PushPbb { isid } => write!(f, "push_pbb(isid={isid:#x})"),
            DpAction::PopPbb => write!(f, "pop_pbb"),
            DpAction::SetPbbIsid(i) => write!(f, "set(pbb(isid={i:#x}))"),
            DpAction::CopyTtlOut => write!(f, "copy_ttl_out"),
            DpAction::CopyTtlIn => write!(f, "copy_ttl_in"),
            DpAction::SetIpv4Src(a) => write!(f, "set(ipv4(src={}))", Ipv4Addr::from(*a)),
            DpAction::SetIpv4Dst(a) => write!(f, "set(ipv4(dst={}))", Ipv4Addr::from(*a)),
            DpAction::SetIpv6Src(a) => write!(f, "set(ipv6(src={}))", Ipv6Addr::from(*a)),
            DpAction::SetIpv6Dst(a) => write!(f, "set(ipv6(dst={}))", Ipv6Addr::from(*a)),
            DpAction::SetIpv6Label(l) => write!(f, "set(ipv6(label={l:#x}))"),
            DpAction::SetIpTos { tos, mask } => write!(f, "set(ip(tos={tos:#x}/{mask:#x}))"),
            DpAction::SetIpTtl(t) => write!(f, "set(ip(ttl={t}))"),
            DpAction::SetIpProto(p) => write!(f, "set(ip(proto={p}))"),
            DpAction::SetTpSrc(p) => write!(f, "set(l4(src={p}))"),
            DpAction::SetTpDst(p) => write!(f, "set(l4(dst={p}))"),
            DpAction::SetIcmpType(t) => write!(f, "set(icmp(type={t}))"),
            DpAction::SetIcmpCode(c) => write!(f, "set(icmp(code={c}))"),
            DpAction::SetArpOp(o) => write!(f, "set(arp(op={o}))"),
            DpAction::SetArpSpa(a) => write!(f, "set(arp(sip={}))", Ipv4Addr::from(*a)),
            DpAction::SetArpTpa(a) => write!(f, "set(arp(tip={}))", Ipv4Addr::from(*a)),
            DpAction::SetArpSha(m) => write!(f, "set(arp(sha={}))", mac(m)),
            DpAction::SetArpTha(m) => write!(f, "set(arp(tha={}))", mac(m)),
            DpAction::SetNdTarget(a) => write!(f, "set(nd(target={}))", Ipv6Addr::from(*a)),
            DpAction::SetNdSll(m) => write!(f, "set(nd(sll={}))", mac(m)),
            DpAction::SetNdTll(m) => write!(f, "set(nd(tll={}))", mac(m)),
            DpAction::SetTunnelId(t) => write!(f, "set(tunnel(tun_id={t:#x}))"),
            DpAction::SetTunnelSrc(a) => write!(f, "set(tunnel(src={}))", Ipv4Addr::from(*a)),
            DpAction::SetTunnelDst(a) => write!(f, "set(tunnel(dst={}))", Ipv4Addr::from(*a)),
            DpAction::SetTunnelIpv6Src(a) => {
                write!(f, "set(tunnel(ipv6_src={}))", Ipv6Addr::from(*a))
            }
            DpAction::SetTunnelIpv6Dst(a) => {
                write!(f, "set(tunnel(ipv6_dst={}))", Ipv6Addr::from(*a))
            }
            DpAction::SetTunnelFlags(t) => {
                let oam = if t & packet::flow::TUN_F_OAM != 0 {
                    '+'
                } else {
                    '-'
                };
                write!(f, "set(tunnel(flags({oam}oam)))")
            }
            // OVS's text for the VXLAN extension inside `set(tunnel(..))`.
            DpAction::SetTunnelGbp { id, flags } => {
                // C's `%#x`: a bare 0.
                let flags = if *flags == 0 {
                    "0".to_string()
                } else {
                    format!("{flags:#x}")
                };
                write!(f, "set(tunnel(vxlan(gbp(id={id},flags={flags}))))")
            }
            DpAction::SetTunnelOpts(o) => {
                write!(f, "set(tunnel({}))", crate::tun_md::format_geneve(o))
            }
            DpAction::Ct(c) => write!(f, "{c}"),
            DpAction::Recirc(id) => write!(f, "recirc({id:#x})"),
            DpAction::TnlPop { port, .. } => write!(f, "tnl_pop({port})"),
            DpAction::TnlPush(t) => write!(f, "{t}"),
            DpAction::Learn(l) => write!(f, "learn(table={},priority={})", l.table_id, l.priority),
            DpAction::Sample(s) => write!(
                f,
                "sample(sample={:.1}%,actions(userspace(flow_sample(probability={},\
                 collector_set_id={},obs_domain_id={},obs_point_id={}))))",
                f64::from(s.probability) * 100.0 / 65535.0,
                s.probability,
                s.collector_set_id,
                s.obs_domain_id,
                s.obs_point_id
            ),
        }
    }
}
