//! OpenFlow 1.0's fixed `ofp_match` (wildcard bits, CIDR masks), decode and encode side by side.

use super::*;

pub(super) const FW_IN_PORT: u32 = 1 << 0;
pub(super) const FW_DL_VLAN: u32 = 1 << 1;
pub(super) const FW_DL_SRC: u32 = 1 << 2;
pub(super) const FW_DL_DST: u32 = 1 << 3;
pub(super) const FW_DL_TYPE: u32 = 1 << 4;
pub(super) const FW_NW_PROTO: u32 = 1 << 5;
pub(super) const FW_TP_SRC: u32 = 1 << 6;
pub(super) const FW_TP_DST: u32 = 1 << 7;
pub(super) const FW_NW_SRC_SHIFT: u32 = 8;
pub(super) const FW_NW_DST_SHIFT: u32 = 14;
pub(super) const FW_DL_VLAN_PCP: u32 = 1 << 20;
pub(super) const FW_NW_TOS: u32 = 1 << 21;
/// The canonical "match nothing specific" wildcards (every flag, /0 prefixes as 32).
pub(super) const FW_ALL_CANON: u32 = 0x0038_20ff;
/// `OFP_VLAN_NONE`.
pub(super) const OFP10_VLAN_NONE: u16 = 0xffff;
/// Length of the OpenFlow 1.0 match.
pub const OFP10_MATCH_LEN: usize = 40;

pub(super) fn prefix_mask(wild_bits: u32) -> Option<u128> {
    if wild_bits >= 32 {
        None
    } else {
        Some(u128::from(u32::MAX << wild_bits))
    }
}

/// Decode the 40-byte OpenFlow 1.0 match.
pub(crate) fn decode_of10_match(rd: &mut Rd<'_>) -> Result<Match, DecodeError> {
    let mut r = rd.sub(OFP10_MATCH_LEN, rd.short())?;
    let w = r.u32()?;
    let in_port = r.u16()?;
    let dl_src = r.array::<6>()?;
    let dl_dst = r.array::<6>()?;
    let dl_vlan = r.u16()?;
    let pcp = r.u8()?;
    r.skip(1)?;
    let dl_type = r.u16()?;
    let tos = r.u8()?;
    let proto = r.u8()?;
    r.skip(2)?;
    let nw_src = r.u32()?;
    let nw_dst = r.u32()?;
    let tp_src = r.u16()?;
    let tp_dst = r.u16()?;

    let mut m = Match::new();
    let set = |m: &mut Match, f: Field, v: u128| {
        m.set_exact(f, v);
    };
    if w & FW_IN_PORT == 0 {
        set(&mut m, Field::InPort, u128::from(port_from_of10(in_port)));
    }
    if w & FW_DL_SRC == 0 {
        set(&mut m, Field::EthSrc, crate::oxm::mac_to_u128(dl_src));
    }
    if w & FW_DL_DST == 0 {
        set(&mut m, Field::EthDst, crate::oxm::mac_to_u128(dl_dst));
    }
    let mut untagged = false;
    if w & FW_DL_VLAN == 0 {
        if dl_vlan == OFP10_VLAN_NONE {
            untagged = true;
            set(&mut m, Field::VlanVid, 0);
        } else {
            set(
                &mut m,
                Field::VlanVid,
                u128::from(OFPVID_PRESENT | (dl_vlan & 0x0fff)),
            );
        }
    }
    if w & FW_DL_VLAN_PCP == 0 && !untagged {
        if !m.contains(Field::VlanVid) {
            let p = u128::from(OFPVID_PRESENT);
            m.set_masked(Field::VlanVid, p, p);
        }
        set(&mut m, Field::VlanPcp, u128::from(pcp & 7));
    }
    if w & FW_DL_TYPE != 0 {
        return Ok(m);
    }
    set(&mut m, Field::EthType, u128::from(dl_type));
    let src_mask = prefix_mask((w >> FW_NW_SRC_SHIFT) & 0x3f);
    let dst_mask = prefix_mask((w >> FW_NW_DST_SHIFT) & 0x3f);
    let addr = |m: &mut Match, f: Field, v: u32, mask: Option<u128>| {
        if let Some(mask) = mask {
            m.set_masked(f, u128::from(v), mask);
        }
    };
    match dl_type {
        ethertype::IPV4 => {
            if w & FW_NW_TOS == 0 {
                set(&mut m, Field::IpDscp, u128::from(tos >> 2));
            }
            addr(&mut m, Field::Ipv4Src, nw_src, src_mask);
            addr(&mut m, Field::Ipv4Dst, nw_dst, dst_mask);
            if w & FW_NW_PROTO != 0 {
                return Ok(m);
            }
            set(&mut m, Field::IpProto, u128::from(proto));
            let (fs, fd) = match proto {
                ipproto::TCP => (Field::TcpSrc, Field::TcpDst),
                ipproto::UDP => (Field::UdpSrc, Field::UdpDst),
                ipproto::SCTP => (Field::SctpSrc, Field::SctpDst),
                ipproto::ICMP => (Field::Icmpv4Type, Field::Icmpv4Code),
                _ => return Ok(m),
            };
            if w & FW_TP_SRC == 0 {
                set(&mut m, fs, u128::from(tp_src));
            }
            if w & FW_TP_DST == 0 {
                set(&mut m, fd, u128::from(tp_dst));
            }
        }
        ethertype::ARP | ethertype::RARP => {
            if w & FW_NW_PROTO == 0 {
                set(&mut m, Field::ArpOp, u128::from(proto));
            }
            addr(&mut m, Field::ArpSpa, nw_src, src_mask);
            addr(&mut m, Field::ArpTpa, nw_dst, dst_mask);
        }
        _ => {}
    }
    Ok(m)
}

/// The wildcard bits for an IPv4 mask, if it is a prefix.
pub(super) fn cidr_wild(mask: u128) -> Option<u32> {
    let m = mask as u32;
    let ones = m.leading_ones();
    if m.checked_shl(ones).unwrap_or(0) != 0 {
        return None;
    }
    Some(32 - ones)
}

/// Encode a match as the OpenFlow 1.0 struct, or say which field it cannot hold.
pub(crate) fn encode_of10_match(out: &mut Vec<u8>, m: &Match) -> Result<(), EncodeError> {
    let mut s = Of10Match::default();
    // OpenFlow 1.0 reads its L3/L4 fields only for IPv4 (and ARP for the ARP ones): with any
    // other dl_type they would be lost (e.g. `tcp6` would come back as `ipv6`).
    let (mut ip_fields, mut arp_fields) = (false, false);
    for e in m.iter() {
        ip_fields |= ipv4_only(e.field);
        arp_fields |= matches!(e.field, Field::ArpOp | Field::ArpSpa | Field::ArpTpa);
        s.set(e, m)?;
    }
    s.check_types(ip_fields, arp_fields)?;
    s.write(out);
    Ok(())
}

/// A field OpenFlow 1.0 matches only for IPv4.
fn ipv4_only(f: Field) -> bool {
    matches!(
        f,
        Field::IpDscp
            | Field::IpProto
            | Field::Ipv4Src
            | Field::Ipv4Dst
            | Field::TcpSrc
            | Field::TcpDst
            | Field::UdpSrc
            | Field::UdpDst
            | Field::SctpSrc
            | Field::SctpDst
            | Field::Icmpv4Type
            | Field::Icmpv4Code
    )
}

/// The OpenFlow 1.0 match struct being filled: the wildcards and each field.
struct Of10Match {
    w: u32,
    in_port: u16,
    dl_src: [u8; 6],
    dl_dst: [u8; 6],
    dl_vlan: u16,
    pcp: u8,
    dl_type: u16,
    tos: u8,
    proto: u8,
    nw_src: u32,
    nw_dst: u32,
    tp_src: u16,
    tp_dst: u16,
}

impl Default for Of10Match {
    /// Everything wildcarded.
    fn default() -> Of10Match {
        Of10Match {
            w: FW_ALL_CANON,
            in_port: 0,
            dl_src: [0; 6],
            dl_dst: [0; 6],
            dl_vlan: 0,
            pcp: 0,
            dl_type: 0,
            tos: 0,
            proto: 0,
            nw_src: 0,
            nw_dst: 0,
            tp_src: 0,
            tp_dst: 0,
        }
    }
}

impl Of10Match {
    /// Matches field `e` of `m`, clearing its wildcard, if OpenFlow 1.0 can hold it.
    fn set(&mut self, e: &MatchField, m: &Match) -> Result<(), EncodeError> {
        let un = EncodeError::Unrepresentable;
        let exact = |e: &MatchField, what| {
            if e.mask.is_some() {
                Err(un(what))
            } else {
                Ok(e.value)
            }
        };
        match e.field {
            Field::InPort => {
                self.in_port =
                    port_to_of10(exact(e, "in_port mask")? as u32).ok_or(un("in_port"))?;
                self.w &= !FW_IN_PORT;
            }
            Field::EthSrc => {
                self.dl_src = crate::oxm::u128_to_mac(exact(e, "dl_src mask")?);
                self.w &= !FW_DL_SRC;
            }
            Field::EthDst => {
                self.dl_dst = crate::oxm::u128_to_mac(exact(e, "dl_dst mask")?);
                self.w &= !FW_DL_DST;
            }
            Field::VlanVid => match e.mask {
                None if e.value == 0 => {
                    self.dl_vlan = OFP10_VLAN_NONE;
                    self.w &= !FW_DL_VLAN;
                }
                None => {
                    self.dl_vlan = (e.value & 0x0fff) as u16;
                    self.w &= !FW_DL_VLAN;
                }
                Some(0x1000) if m.contains(Field::VlanPcp) => {}
                Some(_) => return Err(un("vlan_vid mask")),
            },
            Field::VlanPcp => {
                self.pcp = exact(e, "vlan_pcp mask")? as u8;
                self.w &= !FW_DL_VLAN_PCP;
            }
            Field::EthType => {
                self.dl_type = exact(e, "dl_type mask")? as u16;
                self.w &= !FW_DL_TYPE;
            }
            Field::IpDscp => {
                self.tos = (exact(e, "nw_tos mask")? as u8) << 2;
                self.w &= !FW_NW_TOS;
            }
            Field::IpProto | Field::ArpOp => {
                self.proto = u8::try_from(exact(e, "nw_proto mask")?).map_err(|_| un("arp_op"))?;
                self.w &= !FW_NW_PROTO;
            }
            Field::Ipv4Src | Field::ArpSpa => {
                self.nw_src = e.value as u32;
                let wb = cidr_wild(e.mask_bits()).ok_or(un("nw_src mask"))?;
                self.w = (self.w & !(0x3f << FW_NW_SRC_SHIFT)) | (wb << FW_NW_SRC_SHIFT);
            }
            Field::Ipv4Dst | Field::ArpTpa => {
                self.nw_dst = e.value as u32;
                let wb = cidr_wild(e.mask_bits()).ok_or(un("nw_dst mask"))?;
                self.w = (self.w & !(0x3f << FW_NW_DST_SHIFT)) | (wb << FW_NW_DST_SHIFT);
            }
            Field::TcpSrc | Field::UdpSrc | Field::SctpSrc | Field::Icmpv4Type => {
                self.tp_src = exact(e, "tp_src mask")? as u16;
                self.w &= !FW_TP_SRC;
            }
            Field::TcpDst | Field::UdpDst | Field::SctpDst | Field::Icmpv4Code => {
                self.tp_dst = exact(e, "tp_dst mask")? as u16;
                self.w &= !FW_TP_DST;
            }
            _ => return Err(un("a field OpenFlow 1.0's match lacks")),
        }
        Ok(())
    }

    /// L3/L4 fields only with dl_type IPv4, ARP fields only with ARP or RARP.
    fn check_types(&self, ip_fields: bool, arp_fields: bool) -> Result<(), EncodeError> {
        let un = EncodeError::Unrepresentable;
        let typed = self.w & FW_DL_TYPE == 0;
        if ip_fields && !(typed && self.dl_type == ethertype::IPV4) {
            return Err(un("an L3/L4 field OpenFlow 1.0 matches only for IPv4"));
        }
        if arp_fields && !(typed && matches!(self.dl_type, ethertype::ARP | ethertype::RARP)) {
            return Err(un("an ARP field OpenFlow 1.0 matches only for ARP"));
        }
        Ok(())
    }

    /// The 40-byte struct.
    fn write(&self, out: &mut Vec<u8>) {
        out.u32(self.w);
        out.u16(self.in_port);
        out.extend_from_slice(&self.dl_src);
        out.extend_from_slice(&self.dl_dst);
        out.u16(self.dl_vlan);
        out.u8(self.pcp);
        out.u8(0);
        out.u16(self.dl_type);
        out.u8(self.tos);
        out.u8(self.proto);
        out.u16(0);
        out.u32(self.nw_src);
        out.u32(self.nw_dst);
        out.u16(self.tp_src);
        out.u16(self.tp_dst);
    }
}

/// Whether OpenFlow 1.0's fixed match can hold `m` (else NXM is needed).
pub(crate) fn of10_match_fits(m: &Match) -> bool {
    encode_of10_match(&mut Vec::new(), m).is_ok()
}
