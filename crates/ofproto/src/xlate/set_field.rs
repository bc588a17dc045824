//! `set_field` and its kin: a field written in the flow, with the prerequisites checked.

use super::*;

impl Ctx<'_> {
    /// True if the flow has the headers `f` lives in (the prerequisite chain, checked on
    /// the flow's values).
    pub(super) fn flow_has(&mut self, f: Field) -> bool {
        use openflow::oxm::Prereq;
        match f.prereq() {
            Prereq::None | Prereq::InPort => true,
            Prereq::VlanPresent => {
                self.wc.vlan_tci[0] |= VLAN_PRESENT;
                self.flow.vlan_tci[0] & VLAN_PRESENT != 0
            }
            Prereq::EthType(types) => {
                self.unwild(Field::EthType);
                types.contains(&self.flow.dl_type)
            }
            Prereq::IpProto(p) => {
                self.unwild(Field::IpProto);
                self.is_ip() && self.flow.nw_proto == p
            }
            Prereq::Ct(types) => {
                self.unwild(Field::EthType);
                self.wc.ct_state = 0xff;
                let st = self.flow.ct_state;
                st & CT_VALID != 0 && st & CS_TRACKED != 0 && types.contains(&self.flow.dl_type)
            }
            Prereq::Icmpv6Type(types) => {
                self.unwild(Field::Icmpv6Type);
                self.flow_has(Field::Icmpv6Type)
                    && types.contains(&((self.flow.tp_src & 0xff) as u8))
            }
        }
    }

    pub(super) fn set_field(&mut self, f: Field, value: u128, mask: Option<u128>) {
        if f.is_tun_metadata() {
            return self.set_tun_metadata(f, value, mask);
        }
        // As OVS: a VID set with OFPVID_PRESENT (how `mod_vlan_vid` and OpenFlow 1.0's
        // set_vlan_vid arrive) on an untagged packet pushes an 802.1Q tag first.
        if f == Field::VlanVid
            && value & u128::from(VLAN_PRESENT) != 0
            && mask.is_none_or(|m| m & u128::from(VLAN_PRESENT) != 0)
        {
            self.tag_for_vid();
        }
        if !self.flow_has(f) {
            self.note(|| {
                format!(
                    "set_field:{}: the packet has no such field, skipped",
                    f.name()
                )
            });
            return;
        }
        let mut m = mask.unwrap_or(u128::MAX);
        if f == Field::InPort && m & f.max() <= 0xffff {
            // Bits of the 16-bit OpenFlow 1.0 view (`NXM_OF_IN_PORT`; see `Subfield`).
            self.unwild(f);
            let old = u128::from(port_to_of10(self.flow.in_port).unwrap_or(0));
            let new = (old & !m) | (value & m);
            self.flow.in_port = port_from_of10(new as u16);
            return;
        }
        if m & f.max() != f.max() {
            // A partial write leaves the other bits as they came, and the datapath action
            // writes the whole field: the result depends on those bits.
            self.unwild(f);
        }
        if f == Field::VlanVid {
            // Setting the VID never adds or removes the tag: the present bit stays.
            m &= 0x0fff;
        }
        fields::set(&mut self.flow, f, value, m);
        if let Some(act) = write_action(&self.flow, f) {
            self.out.push(act);
        }
    }

    /// A VID set with `OFPVID_PRESENT`: an untagged packet gets an 802.1Q tag first.
    fn tag_for_vid(&mut self) {
        self.wc.vlan_tci[0] |= VLAN_PRESENT;
        if self.flow.vlan_tci[0] & VLAN_PRESENT == 0 {
            self.wc.vlan_tci = [0xffff, 0xffff];
            self.wc.vlan_tpid = [0xffff, 0xffff];
            self.flow.vlan_tci = [VLAN_PRESENT, self.flow.vlan_tci[0]];
            self.flow.vlan_tpid = [flow::ETH_TYPE_VLAN, self.flow.vlan_tpid[0]];
            self.out.push(DpAction::PushVlan {
                tpid: flow::ETH_TYPE_VLAN,
                tci: 0,
            });
        }
    }
}

/// The datapath action that writes field `f` of the packet as the flow `k` has it, if the
/// field is in the packet (pipeline state is not).
fn write_action(k: &FlowKey, f: Field) -> Option<DpAction> {
    let v = fields::get(k, f);
    Some(match f {
        Field::EthDst => DpAction::SetEthDst(k.dl_dst),
        Field::EthSrc => DpAction::SetEthSrc(k.dl_src),
        Field::EthType => DpAction::SetEthType(k.dl_type),
        Field::VlanVid => DpAction::SetVlanTci {
            tci: (v as u16) & 0x0fff,
            mask: 0x0fff,
        },
        Field::VlanPcp => DpAction::SetVlanTci {
            tci: (v as u16) << 13,
            mask: 0xe000,
        },
        Field::IpDscp => DpAction::SetIpTos {
            tos: (v as u8) << 2,
            mask: 0xfc,
        },
        Field::IpEcn => DpAction::SetIpTos {
            tos: v as u8,
            mask: 0x03,
        },
        Field::IpProto => DpAction::SetIpProto(v as u8),
        Field::NwTtl => DpAction::SetIpTtl(v as u8),
        Field::Ipv4Src => DpAction::SetIpv4Src(k.nw_src),
        Field::Ipv4Dst => DpAction::SetIpv4Dst(k.nw_dst),
        Field::ArpSpa => DpAction::SetArpSpa(k.nw_src),
        Field::ArpTpa => DpAction::SetArpTpa(k.nw_dst),
        Field::ArpSha => DpAction::SetArpSha(k.arp_sha),
        Field::ArpTha => DpAction::SetArpTha(k.arp_tha),
        Field::ArpOp => DpAction::SetArpOp(v as u16),
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => DpAction::SetTpSrc(v as u16),
        Field::TcpDst | Field::UdpDst | Field::SctpDst => DpAction::SetTpDst(v as u16),
        Field::Icmpv4Type | Field::Icmpv6Type => DpAction::SetIcmpType(v as u8),
        Field::Icmpv4Code | Field::Icmpv6Code => DpAction::SetIcmpCode(v as u8),
        Field::Ipv6Src => DpAction::SetIpv6Src(k.ipv6_src),
        Field::Ipv6Dst => DpAction::SetIpv6Dst(k.ipv6_dst),
        Field::Ipv6Flabel => DpAction::SetIpv6Label(v as u32),
        Field::Ipv6NdTarget => DpAction::SetNdTarget(k.nd_target),
        Field::Ipv6NdSll => DpAction::SetNdSll(k.arp_sha),
        Field::Ipv6NdTll => DpAction::SetNdTll(k.arp_tha),
        Field::MplsLabel => DpAction::SetMplsLse {
            lse: (v as u32) << 12,
            mask: 0xffff_f000,
        },
        Field::MplsTc => DpAction::SetMplsLse {
            lse: (v as u32) << 9,
            mask: 0x0e00,
        },
        Field::MplsBos => DpAction::SetMplsLse {
            lse: (v as u32) << 8,
            mask: 0x0100,
        },
        Field::PbbIsid => DpAction::SetPbbIsid(v as u32),
        Field::TunnelId => DpAction::SetTunnelId(v as u64),
        Field::TunSrc => DpAction::SetTunnelSrc(k.tun_src),
        Field::TunDst => DpAction::SetTunnelDst(k.tun_dst),
        Field::TunIpv6Src => DpAction::SetTunnelIpv6Src(k.tun_ipv6_src),
        Field::TunIpv6Dst => DpAction::SetTunnelIpv6Dst(k.tun_ipv6_dst),
        Field::TunFlags => DpAction::SetTunnelFlags(k.tun_flags & packet::flow::TUN_F_OAM),
        Field::TunGbpId | Field::TunGbpFlags => DpAction::SetTunnelGbp {
            id: k.tun_gbp_id,
            flags: k.tun_gbp_flags,
        },
        // Pipeline state only, nothing to write into the packet: the registers, metadata,
        // in_port, pkt_mark, recirc_id, dp_hash, the ct_* fields (ct_mark and ct_label are
        // written by `ct(commit,exec(..))`, never by a set_field here) and the read-only
        // ipv6_exthdr, tcp_flags and ip_frag. The tunnel options went to
        // `set_tun_metadata` above.
        _ => return None,
    })
}
