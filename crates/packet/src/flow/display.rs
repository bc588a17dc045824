//! OpenFlow-style text for a flow key (`ovs-ofctl` flow syntax).

use super::*;

pub(super) struct Mac<'a>(&'a [u8; 6]);

impl fmt::Display for Mac<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = *self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// OpenFlow-style text (`ovs-ofctl` flow syntax): `in_port=1,dl_src=..,dl_dst=..,
/// dl_type=0x0800,nw_src=..,...`. Only the fields meaningful for the key's protocols are
/// printed; metadata only when non-zero.
impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in_port={}", self.in_port)?;
        self.fmt_metadata(f)?;
        self.fmt_vlans(f)?;
        self.fmt_l2(f)?;
        self.fmt_l3(f)
    }
}

impl FlowKey {
    /// The pipeline metadata, tunnel and connection tracking fields that are set, and the
    /// registers.
    fn fmt_metadata(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self;
        if k.recirc_id != 0 {
            write!(f, ",recirc_id={:#x}", k.recirc_id)?;
        }
        if k.pkt_mark != 0 {
            write!(f, ",pkt_mark={:#x}", k.pkt_mark)?;
        }
        if k.dp_hash != 0 {
            write!(f, ",dp_hash={:#x}", k.dp_hash)?;
        }
        if k.metadata != 0 {
            write!(f, ",metadata={:#x}", k.metadata)?;
        }
        if k.tunnel_id != 0 {
            write!(f, ",tun_id={:#x}", k.tunnel_id)?;
        }
        if k.tun_src != [0; 4] {
            write!(f, ",tun_src={}", std::net::Ipv4Addr::from(k.tun_src))?;
        }
        if k.tun_dst != [0; 4] {
            write!(f, ",tun_dst={}", std::net::Ipv4Addr::from(k.tun_dst))?;
        }
        if k.tun_ipv6_src != [0; 16] {
            write!(
                f,
                ",tun_ipv6_src={}",
                std::net::Ipv6Addr::from(k.tun_ipv6_src)
            )?;
        }
        if k.tun_ipv6_dst != [0; 16] {
            write!(
                f,
                ",tun_ipv6_dst={}",
                std::net::Ipv6Addr::from(k.tun_ipv6_dst)
            )?;
        }
        if k.tun_gbp_id != 0 {
            write!(f, ",tun_gbp_id={}", k.tun_gbp_id)?;
        }
        if k.tun_gbp_flags != 0 {
            write!(f, ",tun_gbp_flags={:#x}", k.tun_gbp_flags)?;
        }
        if k.tun_flags != 0 {
            write!(f, ",tun_flags={:#x}", k.tun_flags)?;
        }
        if k.tun_opts_present != 0 {
            write!(
                f,
                ",tun_opts={:#x}/{:#x}",
                u128::from_be_bytes(k.tun_opts),
                k.tun_opts_present
            )?;
        }
        if k.ct_state != 0 {
            write!(f, ",ct_state={:#x},ct_zone={}", k.ct_state, k.ct_zone)?;
            if k.ct_mark != 0 {
                write!(f, ",ct_mark={:#x}", k.ct_mark)?;
            }
            let label = u128::from_be_bytes(k.ct_label);
            if label != 0 {
                write!(f, ",ct_label={label:#x}")?;
            }
        }
        for (i, r) in k.regs.iter().enumerate() {
            if *r != 0 {
                write!(f, ",reg{i}={r:#x}")?;
            }
        }
        Ok(())
    }

    /// The PBB I-SID if set, and each VLAN tag present (outer first).
    fn fmt_vlans(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self;
        if k.pbb_isid != 0 {
            write!(f, ",pbb_isid={:#x}", k.pbb_isid)?;
        }
        for (i, (&tpid, &tci)) in k.vlan_tpid.iter().zip(&k.vlan_tci).enumerate() {
            if tci & VLAN_PRESENT == 0 {
                continue;
            }
            let sfx = if i == 0 { "" } else { "1" };
            if tpid != ETH_TYPE_VLAN {
                write!(f, ",vlan_tpid{sfx}={tpid:#06x}")?;
            }
            write!(
                f,
                ",dl_vlan{sfx}={},dl_vlan_pcp{sfx}={}",
                tci & 0x0fff,
                tci >> 13
            )?;
        }
        Ok(())
    }

    /// The Ethernet addresses and type.
    fn fmt_l2(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self;
        write!(
            f,
            ",dl_src={},dl_dst={},dl_type={:#06x}",
            Mac(&k.dl_src),
            Mac(&k.dl_dst),
            k.dl_type
        )
    }

    /// The network header's fields for the key's ethertype (and then its L4 fields).
    fn fmt_l3(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self;
        let frag = match k.nw_frag & 3 {
            0 => "no",
            NW_FRAG_ANY => "first",
            _ => "later",
        };
        match k.dl_type {
            ETH_TYPE_IPV4 => {
                write!(
                    f,
                    ",nw_src={},nw_dst={},nw_proto={},nw_tos={},nw_ecn={},nw_ttl={},nw_frag={frag}",
                    Ipv4Addr::from(k.nw_src),
                    Ipv4Addr::from(k.nw_dst),
                    k.nw_proto,
                    k.nw_tos & 0xfc,
                    k.nw_tos & 3,
                    k.nw_ttl
                )?;
                self.fmt_l4(f, false)?;
            }
            ETH_TYPE_IPV6 => {
                write!(
                    f,
                    ",ipv6_src={},ipv6_dst={},ipv6_label={:#07x},nw_proto={},nw_tos={},nw_ecn={},nw_ttl={},nw_frag={frag}",
                    Ipv6Addr::from(k.ipv6_src),
                    Ipv6Addr::from(k.ipv6_dst),
                    k.ipv6_label,
                    k.nw_proto,
                    k.nw_tos & 0xfc,
                    k.nw_tos & 3,
                    k.nw_ttl
                )?;
                if k.ipv6_exthdr != 0 {
                    write!(f, ",ipv6_exthdr={:#05x}", k.ipv6_exthdr)?;
                }
                self.fmt_l4(f, true)?;
            }
            ETH_TYPE_ARP | ETH_TYPE_RARP => {
                write!(
                    f,
                    ",arp_spa={},arp_tpa={},arp_op={},arp_sha={},arp_tha={}",
                    Ipv4Addr::from(k.nw_src),
                    Ipv4Addr::from(k.nw_dst),
                    k.nw_proto,
                    Mac(&k.arp_sha),
                    Mac(&k.arp_tha)
                )?;
            }
            ETH_TYPE_MPLS | ETH_TYPE_MPLS_MCAST => {
                let n = usize::from(k.mpls_n);
                for (i, &lse) in k.mpls_lse.iter().take(n).enumerate() {
                    if i == 0 {
                        write!(
                            f,
                            ",mpls_label={},mpls_tc={},mpls_ttl={},mpls_bos={}",
                            lse >> 12,
                            (lse >> 9) & 7,
                            lse & 0xff,
                            (lse >> 8) & 1
                        )?;
                    } else {
                        write!(f, ",mpls_lse{i}={lse:#010x}")?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn fmt_l4(&self, f: &mut fmt::Formatter<'_>, v6: bool) -> fmt::Result {
        let k = self;
        if k.nw_frag & NW_FRAG_LATER != 0 {
            return Ok(());
        }
        match k.nw_proto {
            IPPROTO_TCP => write!(
                f,
                ",tp_src={},tp_dst={},tcp_flags={:#05x}",
                k.tp_src, k.tp_dst, k.tcp_flags
            ),
            IPPROTO_UDP | IPPROTO_SCTP => write!(f, ",tp_src={},tp_dst={}", k.tp_src, k.tp_dst),
            IPPROTO_ICMP if !v6 => write!(f, ",icmp_type={},icmp_code={}", k.tp_src, k.tp_dst),
            IPPROTO_ICMPV6 if v6 => {
                write!(f, ",icmp_type={},icmp_code={}", k.tp_src, k.tp_dst)?;
                let ns = k.tp_src == u16::from(ICMPV6_ND_NS);
                if k.tp_dst == 0 && (ns || k.tp_src == u16::from(ICMPV6_ND_NA)) {
                    write!(f, ",nd_target={}", Ipv6Addr::from(k.nd_target))?;
                    if ns {
                        write!(f, ",nd_sll={}", Mac(&k.arp_sha))?;
                    } else {
                        write!(f, ",nd_tll={}", Mac(&k.arp_tha))?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
