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
//!
//! ## Files
//! This file holds the field headers and names (OXM, NXM, experimenter); `tlv` the TLV lists and
//! OpenFlow 1.1+'s `ofp_match`, `of10` OpenFlow 1.0's fixed match.

use super::buf::{Rd, W};
use super::error::{DecodeError, EncodeError};
use crate::actions::{port_from_of10, port_to_of10, Subfield};
use crate::matches::{Match, MatchField};
use crate::oxm::{
    bytes_to_value, ethertype, ipproto, value_to_bytes, Field, OFPVID_PRESENT, OFPXMC_NXM_0,
    OFPXMC_NXM_1, OFPXMC_OPENFLOW_BASIC, OFPXMC_PACKET_REGS,
};
use crate::tun_metadata;

mod of10;
mod tlv;
pub use self::of10::*;
pub use self::tlv::*;

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
    const NXM1_NAMES: [(u8, &str); 33] = [
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
        (109, "TUN_IPV6_SRC"),
        (110, "TUN_IPV6_DST"),
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

// ---- OpenFlow 1.0 ofp_match ----
