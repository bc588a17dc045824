//! Matches on the wire: OXM (OpenFlow 1.2+), NXM (Nicira, over OpenFlow 1.0) and the
//! fixed 40-byte OpenFlow 1.0 `ofp_match`.
//!
//! ## OXM and NXM
//! Both are the same TLV format: a 32-bit header (16-bit class, 7-bit field, 1 has-mask
//! bit, 8-bit payload length) followed by the value and, if has-mask, a mask of the same
//! length. OXM's basic class (0x8000) numbers fields as the OpenFlow spec does and is
//! what [`crate::oxm::Field::oxm`] records; NXM's classes 0 (`NXM_OF_*`) and 1
//! (`NXM_NX_*`) number the legacy fields differently, and three of them are not plain
//! copies of a model field:
//!
//! * `NXM_OF_IN_PORT` is a 16-bit OpenFlow 1.0 port (mapped with `port_from_of10`).
//! * `NXM_OF_IP_TOS` is the whole ToS byte with the ECN bits zero; it maps to `ip_dscp`
//!   (`tos >> 2`).
//! * `NXM_OF_VLAN_TCI` is the 802.1Q TCI whose CFI bit (0x1000) means "a tag is
//!   present". Its low 13 bits are exactly OpenFlow 1.3's `vlan_vid` (VID plus
//!   `OFPVID_PRESENT`), and its top 3 bits are the PCP. So one TCI entry decodes to a
//!   `vlan_vid` entry (value/mask `& 0x1fff`, if any of those mask bits are set) and a
//!   `vlan_pcp` entry (if any PCP mask bit is set and the TCI does not ask for "no tag"),
//!   and the encoder folds the two back into one TCI. `vlan_tci=0` thus means "no tag"
//!   (`vlan_vid=NONE`), and `vlan_tci=0x1000/0x1000` "any tag". A `vlan_pcp` next to
//!   `vlan_vid=NONE` (which can match no packet) does not survive an NXM round trip.
//!
//! Registers: `NXM_NX_REG0`..`15` (class 1, fields 0-15) carry one 32-bit register,
//! `NXM_NX_XXREG0`..`3` (class 1, fields 111-114) four, and OpenFlow 1.5's packet
//! registers `OXM_OF_PKT_REG0`..`7` (class 0x8001) two: `xreg i` = `reg 2i` << 32 |
//! `reg 2i+1`. All decode into the match's 32-bit registers ([`Match`] splits the views).
//! Over OpenFlow 1.5 ([`Mode::Oxm15`]) the encoder writes a match's registers back as
//! packet registers, as Open vSwitch does; before 1.5 as `NXM_NX_REG*`.
//!
//! Decoding accepts every class in either context (OVS does the same: NXM fields inside
//! OpenFlow 1.3 OXM matches, OXM basic fields inside NXM matches). Encoding picks per
//! field: in OXM mode the basic class where the field has one, the Nicira class
//! otherwise; in NXM mode the Nicira code where one exists, the basic class otherwise.
//! Unknown classes, unknown fields, experimenter fields and payload lengths that do not
//! fit the field are typed errors; duplicate fields and values wider than the field are
//! left to [`Match::from_entries`], whose error is passed through.
//!
//! ## OpenFlow 1.0 `ofp_match`
//! A fixed struct with a wildcard bit per field (and 6-bit prefix lengths for the IPv4
//! addresses). Fields whose prerequisite the match does not establish (L3 fields without
//! `dl_type` IPv4/ARP, L4 fields without a known `nw_proto`) are ignored on decode, as
//! OpenFlow 1.0 switches do, and the L3/L4 slots are reinterpreted by `dl_type` and
//! `nw_proto` (ARP opcode and addresses, ICMP type/code). The encoder rejects what the
//! struct cannot express (other fields, non-CIDR address masks, Ethernet masks).

use super::buf::{Rd, W};
use super::error::{DecodeError, EncodeError};
use crate::actions::{port_from_of10, port_to_of10, Subfield};
use crate::matches::{Match, MatchField};
use crate::oxm::{
    bytes_to_value, ethertype, ipproto, value_to_bytes, Field, OFPVID_PRESENT, OFPXMC_NXM_0,
    OFPXMC_NXM_1, OFPXMC_OPENFLOW_BASIC, OFPXMC_PACKET_REGS,
};
use crate::tun_metadata;

/// Experimenter OXM class.
pub const OFPXMC_EXPERIMENTER: u16 = 0xffff;

/// How a field's value is transformed between the wire and the model.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Xf {
    /// Same bits.
    Plain,
    /// 16-bit OpenFlow 1.0 port.
    Port16,
    /// `NXM_OF_IP_TOS`: the ToS byte (DSCP << 2).
    Tos,
    /// `NXM_OF_VLAN_TCI`.
    Tci,
}

/// Nicira class-0 fields: (field number, model field, transform, wire length).
const NXM0: [(u8, Field, Xf, usize); 18] = [
    (0, Field::InPort, Xf::Port16, 2),
    (1, Field::EthDst, Xf::Plain, 6),
    (2, Field::EthSrc, Xf::Plain, 6),
    (3, Field::EthType, Xf::Plain, 2),
    (4, Field::VlanVid, Xf::Tci, 2),
    (5, Field::IpDscp, Xf::Tos, 1),
    (6, Field::IpProto, Xf::Plain, 1),
    (7, Field::Ipv4Src, Xf::Plain, 4),
    (8, Field::Ipv4Dst, Xf::Plain, 4),
    (9, Field::TcpSrc, Xf::Plain, 2),
    (10, Field::TcpDst, Xf::Plain, 2),
    (11, Field::UdpSrc, Xf::Plain, 2),
    (12, Field::UdpDst, Xf::Plain, 2),
    (13, Field::Icmpv4Type, Xf::Plain, 1),
    (14, Field::Icmpv4Code, Xf::Plain, 1),
    (15, Field::ArpOp, Xf::Plain, 2),
    (16, Field::ArpSpa, Xf::Plain, 4),
    (17, Field::ArpTpa, Xf::Plain, 4),
];

/// Nicira class-1 fields beyond what the model's table records (registers, `nw_ttl`,
/// `ip_frag` are found through [`Field::from_oxm`]).
const NXM1: [(u8, Field); 13] = [
    (16, Field::TunnelId),
    (17, Field::ArpSha),
    (18, Field::ArpTha),
    (19, Field::Ipv6Src),
    (20, Field::Ipv6Dst),
    (21, Field::Icmpv6Type),
    (22, Field::Icmpv6Code),
    (23, Field::Ipv6NdTarget),
    (24, Field::Ipv6NdSll),
    (25, Field::Ipv6NdTll),
    (27, Field::Ipv6Flabel),
    (28, Field::IpEcn),
    (34, Field::TcpFlags),
];

/// The model field, transform and payload length for a wire header's class and field.
fn lookup(class: u16, num: u8) -> Option<(Field, Xf, usize)> {
    match class {
        OFPXMC_NXM_0 => NXM0.iter().find(|e| e.0 == num).map(|e| (e.1, e.2, e.3)),
        OFPXMC_NXM_1 => {
            if let Some(e) = NXM1.iter().find(|e| e.0 == num) {
                let len = if e.1 == Field::TcpFlags {
                    2
                } else {
                    e.1.wire_len()
                };
                return Some((e.1, Xf::Plain, len));
            }
            Field::from_oxm(OFPXMC_NXM_1, num).map(|f| (f, Xf::Plain, f.wire_len()))
        }
        OFPXMC_OPENFLOW_BASIC | OFPXMC_PACKET_REGS => {
            Field::from_oxm(class, num).map(|f| (f, Xf::Plain, f.wire_len()))
        }
        _ => None,
    }
}

/// The model field a bare 32-bit header (no payload, as `move`, `push`, `pop` and
/// `reg_load` name fields) stands for, and how many of its low bits the header addresses:
/// `None` for unknown fields, masked headers, experimenter headers, a length that does not
/// fit the field, and the VLAN TCI and ToS byte, whose NXM bits are not the model's.
/// `NXM_OF_IN_PORT` is the 16-bit OpenFlow 1.0 view of `in_port` (width 16; see
/// [`crate::actions::Subfield`]).
pub(crate) fn field_from_header(hdr: u32) -> Option<(Field, u32)> {
    let class = (hdr >> 16) as u16;
    let num = ((hdr >> 9) & 0x7f) as u8;
    let len = (hdr & 0xff) as usize;
    if hdr & 0x100 != 0 {
        return None;
    }
    match lookup(class, num)? {
        // Variable length: any length names the field (OVS writes 124).
        (f, Xf::Plain, _) if f.is_tun_metadata() && len <= tun_metadata::MAX_LEN => {
            Some((f, f.bits()))
        }
        (f, Xf::Plain, l) if l == len => Some((f, f.bits())),
        (f, Xf::Port16, 2) if len == 2 => Some((f, 16)),
        _ => None,
    }
}

/// The bare header that names `f` in `mode`'s family, avoiding the NXM forms whose
/// bits differ from the model's (see [`field_from_header`]).
pub(crate) fn field_header(f: Field, mode: Mode) -> u32 {
    let (class, num, xf, len) = header_for(f, mode);
    let (class, num, len) = if f.is_tun_metadata() {
        (class, num, tun_metadata::BARE_HEADER_LEN)
    } else if xf == Xf::Plain {
        (class, num, len)
    } else {
        let (c, n) = f.oxm();
        (c, n, f.wire_len())
    };
    (u32::from(class) << 16) | (u32::from(num) << 9) | len as u32
}

/// `NXM_OF_IN_PORT`'s bare header.
const NXM_OF_IN_PORT: u32 = 2;

/// The bare header for a subfield: as [`field_header`], except that bits of `in_port`
/// within its low 16 are named by `NXM_OF_IN_PORT` (the 16-bit view), as OVS names them.
pub(crate) fn subfield_header(sf: &Subfield, mode: Mode) -> u32 {
    if sf.is_port16() {
        NXM_OF_IN_PORT
    } else {
        field_header(sf.field, mode)
    }
}

/// Open vSwitch's name for a header (`NXM_NX_REG0`, `NXM_OF_ETH_DST`, `OXM_OF_METADATA`,
/// `OXM_OF_PKT_REG0`...), as `move`, `push` and `pop` print their fields.
fn header_name(class: u16, num: u8) -> Option<String> {
    const NXM0_NAMES: [&str; 18] = [
        "IN_PORT",
        "ETH_DST",
        "ETH_SRC",
        "ETH_TYPE",
        "VLAN_TCI",
        "IP_TOS",
        "IP_PROTO",
        "IP_SRC",
        "IP_DST",
        "TCP_SRC",
        "TCP_DST",
        "UDP_SRC",
        "UDP_DST",
        "ICMP_TYPE",
        "ICMP_CODE",
        "ARP_OP",
        "ARP_SPA",
        "ARP_TPA",
    ];
    const NXM1_NAMES: [(u8, &str); 31] = [
        (16, "TUN_ID"),
        (17, "ARP_SHA"),
        (18, "ARP_THA"),
        (19, "IPV6_SRC"),
        (20, "IPV6_DST"),
        (21, "ICMPV6_TYPE"),
        (22, "ICMPV6_CODE"),
        (23, "ND_TARGET"),
        (24, "ND_SLL"),
        (25, "ND_TLL"),
        (26, "IP_FRAG"),
        (27, "IPV6_LABEL"),
        (28, "IP_ECN"),
        (29, "IP_TTL"),
        (31, "TUN_IPV4_SRC"),
        (32, "TUN_IPV4_DST"),
        (33, "PKT_MARK"),
        (34, "TCP_FLAGS"),
        (35, "DP_HASH"),
        (36, "RECIRC_ID"),
        (105, "CT_STATE"),
        (106, "CT_ZONE"),
        (107, "CT_MARK"),
        (108, "CT_LABEL"),
        (119, "CT_NW_PROTO"),
        (120, "CT_NW_SRC"),
        (121, "CT_NW_DST"),
        (122, "CT_IPV6_SRC"),
        (123, "CT_IPV6_DST"),
        (124, "CT_TP_SRC"),
        (125, "CT_TP_DST"),
    ];
    const OXM_NAMES: [&str; 43] = [
        "IN_PORT",
        "IN_PHY_PORT",
        "METADATA",
        "ETH_DST",
        "ETH_SRC",
        "ETH_TYPE",
        "VLAN_VID",
        "VLAN_PCP",
        "IP_DSCP",
        "IP_ECN",
        "IP_PROTO",
        "IPV4_SRC",
        "IPV4_DST",
        "TCP_SRC",
        "TCP_DST",
        "UDP_SRC",
        "UDP_DST",
        "SCTP_SRC",
        "SCTP_DST",
        "ICMPV4_TYPE",
        "ICMPV4_CODE",
        "ARP_OP",
        "ARP_SPA",
        "ARP_TPA",
        "ARP_SHA",
        "ARP_THA",
        "IPV6_SRC",
        "IPV6_DST",
        "IPV6_FLABEL",
        "ICMPV6_TYPE",
        "ICMPV6_CODE",
        "IPV6_ND_TARGET",
        "IPV6_ND_SLL",
        "IPV6_ND_TLL",
        "MPLS_LABEL",
        "MPLS_TC",
        "MPLS_BOS",
        "PBB_ISID",
        "TUNNEL_ID",
        "IPV6_EXTHDR",
        "",
        "",
        "TCP_FLAGS",
    ];
    let n = usize::from(num);
    let name = match class {
        OFPXMC_NXM_0 => format!("NXM_OF_{}", NXM0_NAMES.get(n)?),
        OFPXMC_NXM_1 => match num {
            0..=15 => format!("NXM_NX_REG{num}"),
            40..=103 => format!("NXM_NX_TUN_METADATA{}", num - tun_metadata::NXM_FIELD_BASE),
            111..=114 => format!("NXM_NX_XXREG{}", num - 111),
            _ => format!("NXM_NX_{}", NXM1_NAMES.iter().find(|e| e.0 == num)?.1),
        },
        OFPXMC_OPENFLOW_BASIC => match OXM_NAMES.get(n)? {
            &"" => return None,
            s => format!("OXM_OF_{s}"),
        },
        OFPXMC_PACKET_REGS => format!("OXM_OF_PKT_REG{num}"),
        _ => return None,
    };
    Some(name)
}

/// The name Open vSwitch prints for a subfield's field in `move`, `push`, `pop` and `load`
/// (the NXM header's name where the field has one, else the OXM one).
pub fn subfield_name(sf: &Subfield) -> String {
    let hdr = subfield_header(sf, Mode::Nxm);
    header_name((hdr >> 16) as u16, ((hdr >> 9) & 0x7f) as u8)
        .unwrap_or_else(|| sf.field.name().into())
}

/// The field an NXM/OXM header name (`NXM_NX_REG0`, `OXM_OF_PKT_REG3`, `OXM_OF_ETH_DST`,
/// `NXM_OF_IN_PORT`...) stands for, in either family, and how many low bits of it the
/// name addresses.
pub fn field_from_nxm_name(name: &str) -> Option<(Field, u32)> {
    if name == "NXM_OF_IN_PORT" {
        return Some((Field::InPort, 16));
    }
    Field::ALL
        .into_iter()
        .find(|&f| {
            [Mode::Nxm, Mode::Oxm].into_iter().any(|mode| {
                let hdr = field_header(f, mode);
                header_name((hdr >> 16) as u16, ((hdr >> 9) & 0x7f) as u8).as_deref() == Some(name)
            })
        })
        .map(|f| (f, f.bits()))
}

/// Which header family the encoder prefers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// OpenFlow 1.2-1.4 OXM: basic class first.
    Oxm,
    /// OpenFlow 1.5 OXM: as [`Mode::Oxm`], and a match's registers travel in pairs as the
    /// 64-bit packet registers (`OXM_OF_PKT_REG0`..`7`), as Open vSwitch writes them.
    Oxm15,
    /// Nicira NXM: Nicira classes first.
    Nxm,
}

/// The wire (class, field, transform, length) the encoder uses for `f`.
fn header_for(f: Field, mode: Mode) -> (u16, u8, Xf, usize) {
    let (class, num) = f.oxm();
    if mode == Mode::Nxm {
        if let Some(e) = NXM0.iter().find(|e| e.1 == f) {
            return (OFPXMC_NXM_0, e.0, e.2, e.3);
        }
        if let Some(e) = NXM1.iter().find(|e| e.1 == f) {
            let len = if f == Field::TcpFlags {
                2
            } else {
                f.wire_len()
            };
            return (OFPXMC_NXM_1, e.0, Xf::Plain, len);
        }
    }
    (class, num, Xf::Plain, f.wire_len())
}

/// One raw TLV from the wire.
#[derive(Clone, Copy, Debug)]
struct Tlv<'a> {
    class: u16,
    num: u8,
    value: &'a [u8],
    mask: Option<&'a [u8]>,
}

fn read_tlv<'a>(rd: &mut Rd<'a>) -> Result<Tlv<'a>, DecodeError> {
    let class = rd.u16()?;
    let fh = rd.u8()?;
    let len = usize::from(rd.u8()?);
    let num = fh >> 1;
    let has_mask = fh & 1 != 0;
    let mut payload = rd.sub(len, DecodeError::BadFieldLen(class, num))?;
    if class == OFPXMC_EXPERIMENTER {
        // Experimenter id follows; no experimenter field is known here.
        return Err(DecodeError::BadField(class, num));
    }
    if has_mask {
        if !len.is_multiple_of(2) {
            return Err(DecodeError::BadFieldLen(class, num));
        }
        let v = payload.bytes(len / 2)?;
        let m = payload.bytes(len / 2)?;
        Ok(Tlv {
            class,
            num,
            value: v,
            mask: Some(m),
        })
    } else {
        Ok(Tlv {
            class,
            num,
            value: payload.rest(),
            mask: None,
        })
    }
}

/// Decode one TLV into model entries (one, or two for `NXM_OF_VLAN_TCI`).
fn tlv_entries(t: Tlv<'_>, out: &mut Vec<MatchField>) -> Result<(), DecodeError> {
    let (field, xf, len) = lookup(t.class, t.num).ok_or(DecodeError::BadField(t.class, t.num))?;
    if field.is_tun_metadata() {
        return tun_metadata_entry(field, t, out);
    }
    if t.value.len() != len {
        return Err(DecodeError::BadFieldLen(t.class, t.num));
    }
    let v = bytes_to_value(t.value);
    let m = t.mask.map(bytes_to_value);
    match xf {
        Xf::Plain => out.push(MatchField {
            field,
            value: v,
            mask: m,
        }),
        Xf::Port16 => {
            if m.is_some() {
                return Err(DecodeError::Match(crate::OfError::bad_match(
                    crate::messages::err::bad_match::BAD_MASK,
                )));
            }
            out.push(MatchField {
                field,
                value: u128::from(port_from_of10(v as u16)),
                mask: None,
            })
        }
        Xf::Tos => {
            if v & 0x03 != 0 || m.is_some_and(|m| m & 0x03 != 0) {
                return Err(DecodeError::Match(crate::OfError::bad_match(
                    crate::messages::err::bad_match::BAD_VALUE,
                )));
            }
            out.push(MatchField {
                field,
                value: v >> 2,
                mask: m.map(|m| m >> 2),
            })
        }
        Xf::Tci => {
            let mask = m.unwrap_or(0xffff);
            let present = u128::from(OFPVID_PRESENT);
            if mask & 0x1fff != 0 {
                let vm = mask & 0x1fff;
                out.push(MatchField {
                    field: Field::VlanVid,
                    value: v & 0x1fff & vm,
                    mask: if vm == 0x1fff { None } else { Some(vm) },
                });
            }
            let no_tag = mask & present != 0 && v & present == 0;
            let pm = (mask >> 13) & 7;
            if pm != 0 && !no_tag {
                out.push(MatchField {
                    field: Field::VlanPcp,
                    value: (v >> 13) & pm,
                    mask: if pm == 7 { None } else { Some(pm) },
                });
            }
        }
    }
    Ok(())
}

/// A `tun_metadata` TLV: any payload up to 124 bytes whose value fits the model (see
/// [`crate::tun_metadata`]).
fn tun_metadata_entry(
    field: Field,
    t: Tlv<'_>,
    out: &mut Vec<MatchField>,
) -> Result<(), DecodeError> {
    if t.value.len() > tun_metadata::MAX_LEN {
        return Err(DecodeError::BadFieldLen(t.class, t.num));
    }
    let bad = || {
        DecodeError::Match(crate::OfError::bad_match(
            crate::messages::err::bad_match::BAD_VALUE,
        ))
    };
    let value = tun_metadata::payload_value(t.value).ok_or_else(bad)?;
    let mask = match t.mask {
        Some(m) => Some(tun_metadata::payload_value(m).ok_or_else(bad)?),
        None => None,
    };
    out.push(MatchField { field, value, mask });
    Ok(())
}

/// Decode a list of TLVs filling all of `rd` (no padding).
pub(crate) fn decode_tlvs(rd: &mut Rd<'_>) -> Result<Vec<MatchField>, DecodeError> {
    let mut out = Vec::new();
    while !rd.is_empty() {
        let t = read_tlv(rd)?;
        tlv_entries(t, &mut out)?;
    }
    Ok(out)
}

/// Decode a TLV list into a [`Match`].
pub(crate) fn decode_match_tlvs(rd: &mut Rd<'_>) -> Result<Match, DecodeError> {
    let entries = decode_tlvs(rd)?;
    Match::from_entries(entries).map_err(DecodeError::Match)
}

fn put_tlv(out: &mut Vec<u8>, class: u16, num: u8, len: usize, v: u128, m: Option<u128>) {
    out.u16(class);
    out.u8((num << 1) | u8::from(m.is_some()));
    out.u8(if m.is_some() { len * 2 } else { len } as u8);
    out.extend_from_slice(&value_to_bytes(v, len));
    if let Some(m) = m {
        out.extend_from_slice(&value_to_bytes(m, len));
    }
}

/// Encode one field (value, optional mask) as a TLV, in `mode`'s preferred family.
/// `vlan_pcp` / `vlan_vid` in NXM mode go through [`encode_tlvs`], which folds them.
pub(crate) fn encode_field(out: &mut Vec<u8>, f: Field, v: u128, m: Option<u128>, mode: Mode) {
    let (class, num, xf, len) = header_for(f, mode);
    match xf {
        Xf::Port16 => match (port_to_of10(v as u32), m) {
            (Some(p), None) => put_tlv(out, class, num, len, u128::from(p), None),
            // A mask or a port beyond 16 bits needs the 32-bit OXM field.
            _ => encode_field(out, f, v, m, Mode::Oxm),
        },
        Xf::Tos => put_tlv(out, class, num, len, v << 2, m.map(|m| (m << 2) & 0xfc)),
        Xf::Tci => put_tlv(out, class, num, len, v & 0x1fff, m.map(|m| m & 0x1fff)),
        Xf::Plain if f.is_tun_metadata() => {
            put_tlv(out, class, num, tun_metadata::wire_len(v, m), v, m)
        }
        Xf::Plain => put_tlv(out, class, num, len, v, m),
    }
}

/// Encode a match's entries as TLVs (no padding).
pub(crate) fn encode_tlvs(out: &mut Vec<u8>, m: &Match, mode: Mode) {
    let mut tci_done = false;
    let mut xregs_done = false;
    for e in m.iter() {
        if mode == Mode::Oxm15 && e.field.is_reg() {
            if !xregs_done {
                xregs_done = true;
                encode_packet_regs(out, m);
            }
            continue;
        }
        let is_vlan = matches!(e.field, Field::VlanVid | Field::VlanPcp);
        if mode == Mode::Nxm && is_vlan {
            if tci_done {
                continue;
            }
            tci_done = true;
            let (mut v, mut mask) = (0u128, 0u128);
            if let Some(vid) = m.get(Field::VlanVid) {
                v |= vid.value;
                mask |= vid.mask_bits();
            }
            if let Some(pcp) = m.get(Field::VlanPcp) {
                v |= pcp.value << 13;
                mask |= pcp.mask_bits() << 13;
            }
            let mask = if mask == 0xffff { None } else { Some(mask) };
            put_tlv(out, OFPXMC_NXM_0, 4, 2, v, mask);
            continue;
        }
        // A switch sends its options at their mapped lengths (see `crate::tun_metadata`).
        if let Some((len, mask)) = e
            .field
            .tun_metadata_index()
            .and_then(|i| tun_metadata::mapped_form(i, e.mask))
        {
            let (class, num) = e.field.oxm();
            put_tlv(out, class, num, len, e.value, mask);
            continue;
        }
        // OVS sends ct_state masked to its 8 defined bits even when exact.
        let mask = match (e.field, e.mask) {
            (Field::CtState, None) => Some(0xff),
            (_, m) => m,
        };
        encode_field(out, e.field, e.value, mask, mode);
    }
}

/// A match's registers as OpenFlow 1.5 packet registers: `xreg i` carries `reg 2i` (high
/// half) and `reg 2i+1`, with a mask when either half is not matched exactly.
fn encode_packet_regs(out: &mut Vec<u8>, m: &Match) {
    let part = |i: usize| {
        Field::reg(i)
            .and_then(|f| m.get(f))
            .map_or((0, 0), |e| (e.value, e.mask_bits()))
    };
    for x in 0..8 {
        let (hv, hm) = part(2 * x);
        let (lv, lm) = part(2 * x + 1);
        let mask = (hm << 32) | lm;
        if mask == 0 {
            continue;
        }
        let value = (hv << 32) | lv;
        let num = x as u8;
        let mask = (mask != u128::from(u64::MAX)).then_some(mask);
        put_tlv(out, OFPXMC_PACKET_REGS, num, 8, value, mask);
    }
}

/// `OFPMT_OXM`.
pub const OFPMT_OXM: u16 = 1;

/// Decode an OpenFlow 1.2+ `ofp_match` (type, length, OXM TLVs, padding to 8).
pub(crate) fn decode_ofp_match(rd: &mut Rd<'_>) -> Result<Match, DecodeError> {
    let ty = rd.peek_u16(0).ok_or(DecodeError::BadMatchLen)?;
    let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadMatchLen)?);
    if ty != OFPMT_OXM {
        return Err(DecodeError::BadMatchType(ty));
    }
    if len < 4 {
        return Err(DecodeError::BadMatchLen);
    }
    let whole = rd
        .bytes(super::buf::pad8(len))
        .map_err(|_| DecodeError::BadMatchLen)?;
    let mut body = Rd::new(
        whole.get(4..len).unwrap_or_default(),
        DecodeError::BadMatchLen,
    );
    decode_match_tlvs(&mut body)
}

/// Encode an OpenFlow 1.2+ `ofp_match` as `version` writes it.
pub(crate) fn encode_ofp_match(out: &mut Vec<u8>, m: &Match, version: u8) {
    let start = out.len();
    out.u16(OFPMT_OXM);
    out.u16(0);
    let mode = if version >= super::OFP15 {
        Mode::Oxm15
    } else {
        Mode::Oxm
    };
    encode_tlvs(out, m, mode);
    let len = out.len() - start;
    out.patch_u16(start + 2, len);
    out.pad8_from(start);
}

// ---- OpenFlow 1.0 ofp_match ----

const FW_IN_PORT: u32 = 1 << 0;
const FW_DL_VLAN: u32 = 1 << 1;
const FW_DL_SRC: u32 = 1 << 2;
const FW_DL_DST: u32 = 1 << 3;
const FW_DL_TYPE: u32 = 1 << 4;
const FW_NW_PROTO: u32 = 1 << 5;
const FW_TP_SRC: u32 = 1 << 6;
const FW_TP_DST: u32 = 1 << 7;
const FW_NW_SRC_SHIFT: u32 = 8;
const FW_NW_DST_SHIFT: u32 = 14;
const FW_DL_VLAN_PCP: u32 = 1 << 20;
const FW_NW_TOS: u32 = 1 << 21;
/// The canonical "match nothing specific" wildcards (every flag, /0 prefixes as 32).
const FW_ALL_CANON: u32 = 0x0038_20ff;
/// `OFP_VLAN_NONE`.
const OFP10_VLAN_NONE: u16 = 0xffff;
/// Length of the OpenFlow 1.0 match.
pub const OFP10_MATCH_LEN: usize = 40;

fn prefix_mask(wild_bits: u32) -> Option<u128> {
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
fn cidr_wild(mask: u128) -> Option<u32> {
    let m = mask as u32;
    let ones = m.leading_ones();
    if m.checked_shl(ones).unwrap_or(0) != 0 {
        return None;
    }
    Some(32 - ones)
}

/// Encode a match as the OpenFlow 1.0 struct, or say which field it cannot hold.
pub(crate) fn encode_of10_match(out: &mut Vec<u8>, m: &Match) -> Result<(), EncodeError> {
    let un = EncodeError::Unrepresentable;
    let mut w = FW_ALL_CANON;
    let (mut in_port, mut dl_vlan, mut pcp, mut dl_type, mut tos, mut proto) = (0, 0, 0, 0, 0, 0);
    let (mut dl_src, mut dl_dst) = ([0u8; 6], [0u8; 6]);
    let (mut nw_src, mut nw_dst, mut tp_src, mut tp_dst) = (0u32, 0u32, 0u16, 0u16);
    // OpenFlow 1.0 reads its L3/L4 fields only for IPv4 (and ARP for the ARP ones): with any
    // other dl_type they would be lost (e.g. `tcp6` would come back as `ipv6`).
    let (mut ip_fields, mut arp_fields) = (false, false);
    let exact = |e: &MatchField, what| {
        if e.mask.is_some() {
            Err(un(what))
        } else {
            Ok(e.value)
        }
    };
    for e in m.iter() {
        match e.field {
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
            | Field::Icmpv4Code => ip_fields = true,
            Field::ArpOp | Field::ArpSpa | Field::ArpTpa => arp_fields = true,
            _ => {}
        }
        match e.field {
            Field::InPort => {
                in_port = port_to_of10(exact(e, "in_port mask")? as u32).ok_or(un("in_port"))?;
                w &= !FW_IN_PORT;
            }
            Field::EthSrc => {
                dl_src = crate::oxm::u128_to_mac(exact(e, "dl_src mask")?);
                w &= !FW_DL_SRC;
            }
            Field::EthDst => {
                dl_dst = crate::oxm::u128_to_mac(exact(e, "dl_dst mask")?);
                w &= !FW_DL_DST;
            }
            Field::VlanVid => match e.mask {
                None if e.value == 0 => {
                    dl_vlan = OFP10_VLAN_NONE;
                    w &= !FW_DL_VLAN;
                }
                None => {
                    dl_vlan = (e.value & 0x0fff) as u16;
                    w &= !FW_DL_VLAN;
                }
                Some(0x1000) if m.contains(Field::VlanPcp) => {}
                Some(_) => return Err(un("vlan_vid mask")),
            },
            Field::VlanPcp => {
                pcp = exact(e, "vlan_pcp mask")? as u8;
                w &= !FW_DL_VLAN_PCP;
            }
            Field::EthType => {
                dl_type = exact(e, "dl_type mask")? as u16;
                w &= !FW_DL_TYPE;
            }
            Field::IpDscp => {
                tos = (exact(e, "nw_tos mask")? as u8) << 2;
                w &= !FW_NW_TOS;
            }
            Field::IpProto | Field::ArpOp => {
                proto = u8::try_from(exact(e, "nw_proto mask")?).map_err(|_| un("arp_op"))?;
                w &= !FW_NW_PROTO;
            }
            Field::Ipv4Src | Field::ArpSpa => {
                nw_src = e.value as u32;
                let wb = cidr_wild(e.mask_bits()).ok_or(un("nw_src mask"))?;
                w = (w & !(0x3f << FW_NW_SRC_SHIFT)) | (wb << FW_NW_SRC_SHIFT);
            }
            Field::Ipv4Dst | Field::ArpTpa => {
                nw_dst = e.value as u32;
                let wb = cidr_wild(e.mask_bits()).ok_or(un("nw_dst mask"))?;
                w = (w & !(0x3f << FW_NW_DST_SHIFT)) | (wb << FW_NW_DST_SHIFT);
            }
            Field::TcpSrc | Field::UdpSrc | Field::SctpSrc | Field::Icmpv4Type => {
                tp_src = exact(e, "tp_src mask")? as u16;
                w &= !FW_TP_SRC;
            }
            Field::TcpDst | Field::UdpDst | Field::SctpDst | Field::Icmpv4Code => {
                tp_dst = exact(e, "tp_dst mask")? as u16;
                w &= !FW_TP_DST;
            }
            _ => return Err(un("a field OpenFlow 1.0's match lacks")),
        }
    }
    let typed = w & FW_DL_TYPE == 0;
    if ip_fields && !(typed && dl_type == ethertype::IPV4) {
        return Err(un("an L3/L4 field OpenFlow 1.0 matches only for IPv4"));
    }
    if arp_fields && !(typed && matches!(dl_type, ethertype::ARP | ethertype::RARP)) {
        return Err(un("an ARP field OpenFlow 1.0 matches only for ARP"));
    }
    out.u32(w);
    out.u16(in_port);
    out.extend_from_slice(&dl_src);
    out.extend_from_slice(&dl_dst);
    out.u16(dl_vlan);
    out.u8(pcp);
    out.u8(0);
    out.u16(dl_type);
    out.u8(tos);
    out.u8(proto);
    out.u16(0);
    out.u32(nw_src);
    out.u32(nw_dst);
    out.u16(tp_src);
    out.u16(tp_dst);
    Ok(())
}

/// Whether OpenFlow 1.0's fixed match can hold `m` (else NXM is needed).
pub(crate) fn of10_match_fits(m: &Match) -> bool {
    encode_of10_match(&mut Vec::new(), m).is_ok()
}
