//! Datapath actions in Open vSwitch's notation, for `trace`.
//!
//! The translation emits header rewrites one by one, as the pipeline ran them. OVS's
//! datapath-action text instead collects the rewrites made since the last output and writes
//! them, at the next action that uses the packet, as one `set(...)` per header with only the
//! fields whose value changed, in a fixed order: Ethernet, then IPv4 / IPv6 / ARP, then the
//! TCP / UDP / SCTP ports, then ICMP, ND, and last the VLAN tags (tags that differ are popped,
//! the new ones pushed from the innermost out). A field set back to the value the packet
//! already had produces nothing; rewrites not followed by anything that uses the packet are
//! not shown. Controllers and operators compare `ofproto/trace` output between switches, so
//! ferrovs's `trace` writes its datapath actions this way.

use crate::odp::DpAction;
use packet::flow::{self, FlowKey};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The datapath actions `actions`, which a packet with `flow` gets, in OVS's notation;
/// `drop` when there are none.
pub fn ovs_notation(actions: &[DpAction], flow: &FlowKey) -> String {
    let mut st = Headers::new(flow);
    let mut out = Vec::new();
    render(actions, &mut st, &mut out);
    if out.is_empty() {
        "drop".to_string()
    } else {
        out.join(",")
    }
}

/// The headers as last committed (`base`) and as the pipeline has them now (`cur`), with
/// the bits of TOS and VLAN TCI the pipeline has set since the last commit.
#[derive(Clone)]
struct Headers {
    base: FlowKey,
    cur: FlowKey,
    tos_mask: u8,
}

impl Headers {
    fn new(flow: &FlowKey) -> Headers {
        Headers {
            base: *flow,
            cur: *flow,
            tos_mask: 0,
        }
    }
}

fn mac(m: &[u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// Applies one header rewrite to `k`; false for actions that are not header rewrites this
/// notation collects.
fn rewrite(st: &mut Headers, a: &DpAction) -> bool {
    let k = &mut st.cur;
    match a {
        DpAction::SetEthSrc(m) => k.dl_src = *m,
        DpAction::SetEthDst(m) => k.dl_dst = *m,
        DpAction::SetIpv4Src(a) => k.nw_src = *a,
        DpAction::SetIpv4Dst(a) => k.nw_dst = *a,
        DpAction::SetIpv6Src(a) => k.ipv6_src = *a,
        DpAction::SetIpv6Dst(a) => k.ipv6_dst = *a,
        DpAction::SetIpv6Label(l) => k.ipv6_label = *l & 0xf_ffff,
        DpAction::SetIpTos { tos, mask } => {
            k.nw_tos = (k.nw_tos & !mask) | (tos & mask);
            st.tos_mask |= mask;
        }
        DpAction::SetIpTtl(t) => k.nw_ttl = *t,
        DpAction::SetTpSrc(p) => k.tp_src = *p,
        DpAction::SetTpDst(p) => k.tp_dst = *p,
        DpAction::SetIcmpType(t) => k.tp_src = u16::from(*t),
        DpAction::SetIcmpCode(c) => k.tp_dst = u16::from(*c),
        DpAction::SetArpOp(o) => k.nw_proto = *o as u8,
        DpAction::SetArpSpa(a) => k.nw_src = *a,
        DpAction::SetArpTpa(a) => k.nw_dst = *a,
        DpAction::SetArpSha(m) | DpAction::SetNdSll(m) => k.arp_sha = *m,
        DpAction::SetArpTha(m) | DpAction::SetNdTll(m) => k.arp_tha = *m,
        DpAction::SetNdTarget(a) => k.nd_target = *a,
        DpAction::PushVlan { tpid, tci } => {
            k.vlan_tpid = [*tpid, k.vlan_tpid[0]];
            k.vlan_tci = [*tci | flow::VLAN_PRESENT, k.vlan_tci[0]];
        }
        DpAction::PopVlan => {
            k.vlan_tpid = [k.vlan_tpid[1], 0];
            k.vlan_tci = [k.vlan_tci[1], 0];
        }
        DpAction::SetVlanTci { tci, mask } => {
            if k.vlan_tci[0] & flow::VLAN_PRESENT != 0 {
                k.vlan_tci[0] = (k.vlan_tci[0] & !mask) | (tci & mask) | flow::VLAN_PRESENT;
            }
        }
        _ => return false,
    }
    true
}

fn render(actions: &[DpAction], st: &mut Headers, out: &mut Vec<String>) {
    for a in actions {
        if rewrite(st, a) {
            continue;
        }
        commit(st, out);
        match a {
            // A copy that only leaves through ports needs no clone: OVS writes the outputs.
            DpAction::Clone(inner) if inner.iter().all(|i| matches!(i, DpAction::Output(_))) => {
                out.extend(inner.iter().map(|i| i.to_string()));
            }
            DpAction::Clone(inner) => {
                let mut copy = st.clone();
                let mut v = Vec::new();
                render(inner, &mut copy, &mut v);
                out.push(format!("clone({})", v.join(",")));
            }
            DpAction::PushMpls { ethertype, .. } => {
                out.push(a.to_string());
                set_dl_type(st, *ethertype);
            }
            DpAction::PopMpls(t) => {
                out.push(format!("pop_mpls(eth_type={t:#x})"));
                set_dl_type(st, *t);
            }
            DpAction::SetEthType(t) => {
                out.push(a.to_string());
                set_dl_type(st, *t);
            }
            _ => out.push(a.to_string()),
        }
    }
}

fn set_dl_type(st: &mut Headers, t: u16) {
    st.cur.dl_type = t;
    st.base.dl_type = t;
}

/// Writes the rewrites made since the last commit, in OVS's order, and makes them the base.
fn commit(st: &mut Headers, out: &mut Vec<String>) {
    let (b, c) = (&st.base, &st.cur);
    commit_eth(b, c, out);
    match c.dl_type {
        flow::ETH_TYPE_IPV4 => commit_ipv4(st, out),
        flow::ETH_TYPE_IPV6 => commit_ipv6(st, out),
        flow::ETH_TYPE_ARP | flow::ETH_TYPE_RARP => commit_arp(b, c, out),
        _ => {}
    }
    commit_ports(b, c, out);
    commit_icmp(b, c, out);
    vlans(b, c, out);
    st.base = st.cur;
    st.tos_mask = 0;
}

/// Adds `name=` the field's new value (as `show` writes it) to `f` if it changed from `b`
/// to `c`.
fn changed<T: PartialEq>(f: &mut Vec<String>, name: &str, b: T, c: T, show: impl Fn(T) -> String) {
    if c != b {
        f.push(format!("{name}={}", show(c)));
    }
}

/// `set(eth(src=..,dst=..))`.
fn commit_eth(b: &FlowKey, c: &FlowKey, out: &mut Vec<String>) {
    let mut f = Vec::new();
    changed(&mut f, "src", &b.dl_src, &c.dl_src, mac);
    changed(&mut f, "dst", &b.dl_dst, &c.dl_dst, mac);
    put(out, "eth", &mut f);
}

/// `set(ipv4(src=..,dst=..,tos=..,ttl=..))`.
fn commit_ipv4(st: &Headers, out: &mut Vec<String>) {
    let (b, c) = (&st.base, &st.cur);
    let mut f = Vec::new();
    changed(&mut f, "src", b.nw_src, c.nw_src, |a| {
        Ipv4Addr::from(a).to_string()
    });
    changed(&mut f, "dst", b.nw_dst, c.nw_dst, |a| {
        Ipv4Addr::from(a).to_string()
    });
    tos(st, "tos", &mut f);
    changed(&mut f, "ttl", b.nw_ttl, c.nw_ttl, |t| t.to_string());
    put(out, "ipv4", &mut f);
}

/// `set(ipv6(src=..,dst=..,label=..,tclass=..,hlimit=..))`.
fn commit_ipv6(st: &Headers, out: &mut Vec<String>) {
    let (b, c) = (&st.base, &st.cur);
    let mut f = Vec::new();
    changed(&mut f, "src", b.ipv6_src, c.ipv6_src, |a| {
        Ipv6Addr::from(a).to_string()
    });
    changed(&mut f, "dst", b.ipv6_dst, c.ipv6_dst, |a| {
        Ipv6Addr::from(a).to_string()
    });
    changed(&mut f, "label", b.ipv6_label, c.ipv6_label, |l| {
        format!("{l:#x}")
    });
    tos(st, "tclass", &mut f);
    changed(&mut f, "hlimit", b.nw_ttl, c.nw_ttl, |t| t.to_string());
    put(out, "ipv6", &mut f);
}

/// `set(arp(sip=..,tip=..,op=..,sha=..,tha=..))`.
fn commit_arp(b: &FlowKey, c: &FlowKey, out: &mut Vec<String>) {
    let mut f = Vec::new();
    changed(&mut f, "sip", b.nw_src, c.nw_src, |a| {
        Ipv4Addr::from(a).to_string()
    });
    changed(&mut f, "tip", b.nw_dst, c.nw_dst, |a| {
        Ipv4Addr::from(a).to_string()
    });
    changed(&mut f, "op", b.nw_proto, c.nw_proto, |o| o.to_string());
    changed(&mut f, "sha", &b.arp_sha, &c.arp_sha, mac);
    changed(&mut f, "tha", &b.arp_tha, &c.arp_tha, mac);
    put(out, "arp", &mut f);
}

/// `set(tcp(src=..,dst=..))` (or `udp`, `sctp`) for an IP packet of that protocol.
fn commit_ports(b: &FlowKey, c: &FlowKey, out: &mut Vec<String>) {
    if !matches!(c.dl_type, flow::ETH_TYPE_IPV4 | flow::ETH_TYPE_IPV6) {
        return;
    }
    let name = match c.nw_proto {
        6 => "tcp",
        17 => "udp",
        132 => "sctp",
        _ => return,
    };
    let mut f = Vec::new();
    changed(&mut f, "src", b.tp_src, c.tp_src, |p| p.to_string());
    changed(&mut f, "dst", b.tp_dst, c.tp_dst, |p| p.to_string());
    put(out, name, &mut f);
}

/// `set(icmp(type=..,code=..))` (or `icmpv6`), and for ICMPv6 `set(nd(target=..,sll=..,
/// tll=..))`.
fn commit_icmp(b: &FlowKey, c: &FlowKey, out: &mut Vec<String>) {
    let name = match (c.dl_type, c.nw_proto) {
        (flow::ETH_TYPE_IPV4, 1) => "icmp",
        (flow::ETH_TYPE_IPV6, 58) => "icmpv6",
        _ => return,
    };
    // OVS sets ICMP's type and code together, changed or not.
    if (c.tp_src, c.tp_dst) != (b.tp_src, b.tp_dst) {
        out.push(format!(
            "set({name}(type={},code={}))",
            c.tp_src & 0xff,
            c.tp_dst & 0xff
        ));
    }
    if name == "icmpv6" {
        let mut f = Vec::new();
        changed(&mut f, "target", b.nd_target, c.nd_target, |a| {
            Ipv6Addr::from(a).to_string()
        });
        changed(&mut f, "sll", &b.arp_sha, &c.arp_sha, mac);
        changed(&mut f, "tll", &b.arp_tha, &c.arp_tha, mac);
        put(out, "nd", &mut f);
    }
}

/// The TOS field (IPv6: `tclass`) as OVS writes a masked set: the whole byte, and the bits
/// set when that is not all of them.
fn tos(st: &Headers, name: &str, f: &mut Vec<String>) {
    if st.cur.nw_tos == st.base.nw_tos {
        return;
    }
    match st.tos_mask {
        0 | 0xff => f.push(format!("{name}={:#x}", st.cur.nw_tos)),
        m => f.push(format!("{name}={:#x}/{m:#x}", st.cur.nw_tos)),
    }
}

fn put(out: &mut Vec<String>, header: &str, fields: &mut Vec<String>) {
    if !fields.is_empty() {
        out.push(format!("set({header}({}))", fields.join(",")));
        fields.clear();
    }
}

/// Tags the base has and the flow does not are popped, those the flow has pushed; tags the
/// two share from the innermost out stay.
fn vlans(b: &FlowKey, c: &FlowKey, out: &mut Vec<String>) {
    let count = |k: &FlowKey| {
        k.vlan_tci
            .iter()
            .take_while(|t| **t & flow::VLAN_PRESENT != 0)
            .count()
    };
    let (mut bn, mut cn) = (count(b), count(c));
    while bn > 0 && cn > 0 {
        let (bi, ci) = (bn - 1, cn - 1);
        if (b.vlan_tpid[bi], b.vlan_tci[bi]) != (c.vlan_tpid[ci], c.vlan_tci[ci]) {
            break;
        }
        bn -= 1;
        cn -= 1;
    }
    out.extend((0..bn).map(|_| "pop_vlan".to_string()));
    for i in (0..cn).rev() {
        let tci = c.vlan_tci[i];
        let tpid = match c.vlan_tpid[i] {
            0 | flow::ETH_TYPE_VLAN => String::new(),
            t => format!("tpid={t:#06x},"),
        };
        out.push(format!(
            "push_vlan({tpid}vid={},pcp={})",
            tci & 0xfff,
            tci >> 13
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_flow() -> FlowKey {
        let mut k = FlowKey::ZERO;
        k.in_port = 1;
        k.dl_type = flow::ETH_TYPE_IPV4;
        k.nw_proto = 6;
        k.nw_ttl = 64;
        k.nw_src = [10, 0, 0, 1];
        k.nw_dst = [10, 0, 0, 2];
        k.tp_src = 1000;
        k.tp_dst = 80;
        k
    }

    #[test]
    fn rewrites_are_committed_per_header_before_the_output() {
        let k = ipv4_flow();
        let acts = [
            DpAction::SetTpDst(8080),
            DpAction::SetIpTtl(63),
            DpAction::SetEthSrc([2, 0, 0, 0, 0, 9]),
            DpAction::PushVlan {
                tpid: flow::ETH_TYPE_VLAN,
                tci: 10,
            },
            DpAction::Output(2),
            DpAction::Output(3),
        ];
        assert_eq!(
            ovs_notation(&acts, &k),
            "set(eth(src=02:00:00:00:00:09)),set(ipv4(ttl=63)),set(tcp(dst=8080)),\
             push_vlan(vid=10,pcp=0),2,3"
        );
    }

    #[test]
    fn unchanged_values_and_trailing_rewrites_write_nothing() {
        let k = ipv4_flow();
        let acts = [
            DpAction::SetIpv4Dst([10, 0, 0, 2]),
            DpAction::Output(2),
            DpAction::SetIpTtl(1),
        ];
        assert_eq!(ovs_notation(&acts, &k), "2");
        assert_eq!(ovs_notation(&[], &k), "drop");
    }

    #[test]
    fn a_vid_change_on_a_tagged_frame_pops_and_pushes() {
        let mut k = ipv4_flow();
        k.vlan_tpid = [flow::ETH_TYPE_VLAN, 0];
        k.vlan_tci = [5 | flow::VLAN_PRESENT, 0];
        let set = DpAction::SetVlanTci {
            tci: 20,
            mask: 0x0fff,
        };
        let acts = [set.clone(), DpAction::Output(2)];
        assert_eq!(
            ovs_notation(&acts, &k),
            "pop_vlan,push_vlan(vid=20,pcp=0),2"
        );
        let acts = [set, DpAction::PopVlan, DpAction::Output(2)];
        assert_eq!(ovs_notation(&acts, &k), "pop_vlan,2");
        let acts = [
            DpAction::PushVlan {
                tpid: flow::ETH_TYPE_VLAN_8021AD,
                tci: 7 | 3 << 13,
            },
            DpAction::Output(2),
        ];
        assert_eq!(
            ovs_notation(&acts, &k),
            "push_vlan(tpid=0x88a8,vid=7,pcp=3),2"
        );
    }

    #[test]
    fn ipv6_names_and_clones() {
        let mut k = ipv4_flow();
        k.dl_type = flow::ETH_TYPE_IPV6;
        k.nw_proto = 58;
        (k.tp_src, k.tp_dst) = (128, 0);
        let acts = [
            DpAction::SetIpTtl(9),
            DpAction::SetIpTos {
                tos: 0x20,
                mask: 0xfc,
            },
            DpAction::Clone(vec![DpAction::Output(3)]),
            DpAction::Clone(vec![DpAction::SetIcmpType(129), DpAction::Output(4)]),
            DpAction::Output(2),
        ];
        assert_eq!(
            ovs_notation(&acts, &k),
            "set(ipv6(tclass=0x20/0xfc,hlimit=9)),3,clone(set(icmpv6(type=129,code=0)),4),2"
        );
    }
}
