//! Reading and writing [`Field`]s in a `packet::FlowKey`.
//!
//! The flow key is the extractor's one-pass summary of a packet; OpenFlow fields are views
//! of it. [`read()`] gives a field's value in this crate's representation (right-aligned
//! `u128`, see [`crate::oxm`]); [`write()`] stores one (under a mask) back, which is what a
//! `set_field` does to the key during translation. [`Match::matches_key`] tests a match.
//!
//! Several OpenFlow fields share one key slot, as they do on the wire: `tcp_src`,
//! `udp_src`, `sctp_src` and `icmpv4_type`/`icmpv6_type` are all `tp_src`; ARP's addresses
//! live in `nw_src`/`nw_dst` and its opcode in `nw_proto`; ND's link-layer options live in
//! `arp_sha`/`arp_tha`. Reading `tcp_src` from a UDP packet therefore returns the UDP port:
//! a valid match's prerequisites (see [`Match::validate`]) are what make the reading
//! meaningful, exactly as in OpenFlow.
//!
//! Pipeline metadata the key does not carry — `tun_id`, `pbb_isid`, the registers — reads
//! as `None` and cannot be written here; [`Match::matches_key`] treats them as zero (their
//! value for a packet entering the pipeline), and callers that track them use
//! [`Match::matches_with`].

use crate::matches::Match;
use crate::oxm::Field;
use packet::FlowKey;

fn be(bytes: &[u8]) -> u128 {
    crate::oxm::bytes_to_value(bytes)
}

fn to_bytes<const N: usize>(v: u128) -> [u8; N] {
    let b = v.to_be_bytes();
    let mut out = [0u8; N];
    out.copy_from_slice(&b[16 - N..]);
    out
}

/// The value of `f` in `key`, or `None` for fields the key does not hold.
pub fn read(key: &FlowKey, f: Field) -> Option<u128> {
    read_slot(key, f).map(|v| v & f.max())
}

fn read_slot(key: &FlowKey, f: Field) -> Option<u128> {
    Some(match f {
        Field::InPort | Field::InPhyPort => u128::from(key.in_port),
        Field::Metadata => u128::from(key.metadata),
        Field::EthDst => be(&key.dl_dst),
        Field::EthSrc => be(&key.dl_src),
        Field::EthType => u128::from(key.dl_type),
        Field::VlanVid => u128::from(key.vlan_tci[0] & 0x1fff),
        Field::VlanPcp => u128::from(key.vlan_tci[0] >> 13),
        Field::IpDscp => u128::from(key.nw_tos >> 2),
        Field::IpEcn => u128::from(key.nw_tos & 3),
        Field::IpProto | Field::ArpOp => u128::from(key.nw_proto),
        Field::Ipv4Src | Field::ArpSpa => be(&key.nw_src),
        Field::Ipv4Dst | Field::ArpTpa => be(&key.nw_dst),
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc | Field::Icmpv4Type | Field::Icmpv6Type => {
            u128::from(key.tp_src)
        }
        Field::TcpDst | Field::UdpDst | Field::SctpDst | Field::Icmpv4Code | Field::Icmpv6Code => {
            u128::from(key.tp_dst)
        }
        Field::ArpSha | Field::Ipv6NdSll => be(&key.arp_sha),
        Field::ArpTha | Field::Ipv6NdTll => be(&key.arp_tha),
        Field::Ipv6Src => be(&key.ipv6_src),
        Field::Ipv6Dst => be(&key.ipv6_dst),
        Field::Ipv6Flabel => u128::from(key.ipv6_label & 0xf_ffff),
        Field::Ipv6NdTarget => be(&key.nd_target),
        Field::MplsLabel => u128::from(key.mpls_lse[0] >> 12),
        Field::MplsTc => u128::from((key.mpls_lse[0] >> 9) & 7),
        Field::MplsBos => u128::from((key.mpls_lse[0] >> 8) & 1),
        Field::Ipv6Exthdr => u128::from(key.ipv6_exthdr & 0x1ff),
        Field::TcpFlags => u128::from(key.tcp_flags & 0xfff),
        Field::NwTtl => u128::from(key.nw_ttl),
        Field::IpFrag => u128::from(key.nw_frag & 3),
        Field::PbbIsid
        | Field::TunnelId
        | Field::Reg0
        | Field::Reg1
        | Field::Reg2
        | Field::Reg3
        | Field::Reg4
        | Field::Reg5
        | Field::Reg6
        | Field::Reg7 => return None,
    })
}

/// Store `value` into `f` of `key` under `mask` (`None` = all bits); returns `false`, and
/// leaves the key alone, for fields the key does not hold. Values are truncated to the
/// field's width (and to the key slot's: ARP opcodes above 255 do not fit `nw_proto`). Writing `vlan_vid`/`vlan_pcp` edits the outer tag's TCI (the caller
/// pushes a tag first if there is none).
pub fn write(key: &mut FlowKey, f: Field, value: u128, mask: Option<u128>) -> bool {
    let Some(old) = read_slot(key, f) else {
        return false;
    };
    let m = mask.unwrap_or(u128::MAX) & f.max();
    let v = (old & !m) | (value & m);
    match f {
        Field::InPort | Field::InPhyPort => key.in_port = v as u32,
        Field::Metadata => key.metadata = v as u64,
        Field::EthDst => key.dl_dst = to_bytes(v),
        Field::EthSrc => key.dl_src = to_bytes(v),
        Field::EthType => key.dl_type = v as u16,
        Field::VlanVid => key.vlan_tci[0] = (key.vlan_tci[0] & 0xe000) | v as u16,
        Field::VlanPcp => key.vlan_tci[0] = (key.vlan_tci[0] & 0x1fff) | ((v as u16) << 13),
        Field::IpDscp => key.nw_tos = (key.nw_tos & 3) | ((v as u8) << 2),
        Field::IpEcn => key.nw_tos = (key.nw_tos & 0xfc) | v as u8,
        Field::IpProto | Field::ArpOp => key.nw_proto = v as u8,
        Field::Ipv4Src | Field::ArpSpa => key.nw_src = to_bytes(v),
        Field::Ipv4Dst | Field::ArpTpa => key.nw_dst = to_bytes(v),
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc | Field::Icmpv4Type | Field::Icmpv6Type => {
            key.tp_src = v as u16
        }
        Field::TcpDst | Field::UdpDst | Field::SctpDst | Field::Icmpv4Code | Field::Icmpv6Code => {
            key.tp_dst = v as u16
        }
        Field::ArpSha | Field::Ipv6NdSll => key.arp_sha = to_bytes(v),
        Field::ArpTha | Field::Ipv6NdTll => key.arp_tha = to_bytes(v),
        Field::Ipv6Src => key.ipv6_src = to_bytes(v),
        Field::Ipv6Dst => key.ipv6_dst = to_bytes(v),
        Field::Ipv6Flabel => key.ipv6_label = v as u32,
        Field::Ipv6NdTarget => key.nd_target = to_bytes(v),
        Field::MplsLabel => key.mpls_lse[0] = (key.mpls_lse[0] & 0xfff) | ((v as u32) << 12),
        Field::MplsTc => key.mpls_lse[0] = (key.mpls_lse[0] & !0xe00) | ((v as u32) << 9),
        Field::MplsBos => key.mpls_lse[0] = (key.mpls_lse[0] & !0x100) | ((v as u32) << 8),
        Field::Ipv6Exthdr => key.ipv6_exthdr = v as u16,
        Field::TcpFlags => key.tcp_flags = v as u16,
        Field::NwTtl => key.nw_ttl = v as u8,
        Field::IpFrag => key.nw_frag = v as u8,
        Field::PbbIsid
        | Field::TunnelId
        | Field::Reg0
        | Field::Reg1
        | Field::Reg2
        | Field::Reg3
        | Field::Reg4
        | Field::Reg5
        | Field::Reg6
        | Field::Reg7 => return false,
    }
    true
}

impl Match {
    /// Whether the packet summarised by `key` matches, taking fields the key does not
    /// hold (`tun_id`, `pbb_isid`, registers) as zero.
    pub fn matches_key(&self, key: &FlowKey) -> bool {
        self.matches_with(|f| Some(read(key, f).unwrap_or(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp_frame() -> Vec<u8> {
        let mut f = vec![
            0, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x08, 0x00,
        ];
        f.extend_from_slice(&[
            0x45, 0x28, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend_from_slice(&[0x30, 0x39, 0, 80, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x12, 0, 0]);
        f.extend_from_slice(&[0, 0, 0, 0]);
        f
    }

    #[test]
    fn read_match_write() {
        let key = packet::extract(&tcp_frame(), 7);
        assert_eq!(read(&key, Field::InPort), Some(7));
        assert_eq!(read(&key, Field::EthDst), Some(0x0011_2233_4455));
        assert_eq!(read(&key, Field::Ipv4Dst), Some(0x0a00_0002));
        assert_eq!(read(&key, Field::TcpDst), Some(80));
        assert_eq!(read(&key, Field::IpDscp), Some(0x28 >> 2));
        assert_eq!(read(&key, Field::TcpFlags), Some(0x012));
        assert_eq!(read(&key, Field::Reg0), None);
        let m = crate::text::parse_match("tcp,in_port=7,nw_dst=10.0.0.0/8,tp_dst=80").unwrap();
        assert!(m.matches_key(&key));
        let m = crate::text::parse_match("tcp,tp_dst=81").unwrap();
        assert!(!m.matches_key(&key));
        let m = crate::text::parse_match("tcp,reg0=0").unwrap();
        assert!(m.matches_key(&key));

        let mut k = key;
        assert!(write(
            &mut k,
            Field::Ipv4Dst,
            0xc0a8_0000,
            Some(0xffff_0000)
        ));
        assert_eq!(k.nw_dst, [192, 168, 0, 2]);
        assert!(write(&mut k, Field::IpEcn, 3, None));
        assert_eq!(k.nw_tos, 0x2b);
        assert!(!write(&mut k, Field::TunnelId, 1, None));
        // Every readable field writes back what it reads.
        for f in Field::ALL {
            let mut k2 = key;
            if let Some(v) = read(&key, f) {
                assert!(write(&mut k2, f, v, None), "{f}");
                assert_eq!(k2, key, "{f}");
                assert!(write(&mut k2, f, f.max(), None));
                let want = if f == Field::ArpOp { 0xff } else { f.max() };
                assert_eq!(read(&k2, f), Some(want), "{f}");
            }
        }
    }
}
