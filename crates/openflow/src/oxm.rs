//! The vocabulary of matchable and settable packet fields.
//!
//! [`Field`] names every field a flow can match on or a `set_field` action can write: all
//! OpenFlow 1.3 OXM basic fields, OpenFlow 1.5's `tcp_flags`, and the few Nicira extension
//! fields ovs-ofctl users reach for every day (`reg0`..`reg15` and their 64- and 128-bit views
//! `xreg0`..`xreg7` and `xxreg0`..`xxreg3`, `nw_ttl`, `ip_frag`, `pkt_mark`), and the
//! connection-tracking and recirculation fields (`ct_state`, `ct_zone`, `ct_mark`,
//! `ct_label`, the original tuple `ct_nw_src`.. `ct_tp_dst`, `recirc_id`, `dp_hash`).
//!
//! Everything static about a field lives in one table, [`Field::info`]: its OXM class and
//! field number (what a codec writes in an OXM/NXM header), its width in bits, whether the
//! OpenFlow 1.3 table lets it be masked, its prerequisite, and its names. Keeping the wire
//! codes next to the names means a codec for OF1.2+ (OXM) or OF1.0 + NXM needs no second
//! table; the field's byte length on the wire is [`Field::wire_len`].
//!
//! ## Values
//! A field value (and mask) is a `u128` holding the field right-aligned, most significant
//! bit first as on the wire: a MAC is the 48-bit big-endian number, an IPv4 address its
//! 32-bit number, an IPv6 address its 128-bit number. The invariant every holder keeps is
//! `value >> bits == 0` and `mask >> bits == 0` ([`Field::max`] gives the all-ones value).
//! The helpers `mac_to_u128`, `ipv4_to_u128`... convert.
//!
//! ## Special values
//! * `vlan_vid` is the OpenFlow 1.3 13-bit field: [`OFPVID_PRESENT`] (0x1000) marks a tag,
//!   so `0` ([`OFPVID_NONE`]) means "no VLAN header", `0x1000|vid` means a tag with that
//!   VID and `0x1000/0x1000` means "any tag". OVS's `dl_vlan` (12-bit VID) is text sugar
//!   handled by the parser.
//! * `ip_dscp` holds the 6-bit DSCP; OVS's `nw_tos` (DSCP << 2) is text sugar.
//! * `ip_frag` holds OVS's two fragment bits: [`FRAG_ANY`] and [`FRAG_LATER`].
//!
//! ## Prerequisites
//! [`Prereq`] is the spec's prerequisite for one field, stated in terms of the single field
//! it depends on (for example `tcp_dst` needs `ip_proto == 6`; `ip_proto` in turn needs
//! `eth_type` IPv4 or IPv6). Checking each field's direct prerequisite, for every field of
//! a match, therefore checks the whole chain. `Match::validate` does that.
//! ARP fields accept RARP (0x8035) as well as ARP, as OVS does.

use std::net::{Ipv4Addr, Ipv6Addr};

/// OXM class of the OpenFlow basic fields.
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
/// OXM class of Nicira's original NXM fields (`NXM_OF_*`).
pub const OFPXMC_NXM_0: u16 = 0x0000;
/// OXM class of Nicira extension fields (`NXM_NX_*`).
pub const OFPXMC_NXM_1: u16 = 0x0001;
/// OXM class of OpenFlow 1.5's packet registers (`OXM_OF_PKT_REG0`..`7`, OVS's `xreg`s).
pub const OFPXMC_PACKET_REGS: u16 = 0x8001;

/// Number of [`Field`]s.
pub const N_FIELDS: usize = 151;

/// `vlan_vid` bit meaning "a VLAN tag is present".
pub const OFPVID_PRESENT: u16 = 0x1000;
/// `vlan_vid` value meaning "no VLAN tag".
pub const OFPVID_NONE: u16 = 0x0000;

/// `ip_frag` bit: the packet is a fragment.
pub const FRAG_ANY: u8 = 0x01;
/// `ip_frag` bit: the packet is a fragment other than the first.
pub const FRAG_LATER: u8 = 0x02;

/// EtherTypes prerequisites refer to.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// RARP.
    pub const RARP: u16 = 0x8035;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// MPLS unicast.
    pub const MPLS: u16 = 0x8847;
    /// MPLS multicast.
    pub const MPLS_MCAST: u16 = 0x8848;
    /// 802.1ah PBB.
    pub const PBB: u16 = 0x88e7;
    /// 802.1Q VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service VLAN tag.
    pub const VLAN_8021AD: u16 = 0x88a8;
}

/// IP protocol numbers prerequisites refer to.
pub mod ipproto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP.
    pub const SCTP: u8 = 132;
}

/// ICMPv6 Neighbor Solicitation type.
pub const ICMPV6_ND_NS: u8 = 135;
/// ICMPv6 Neighbor Advertisement type.
pub const ICMPV6_ND_NA: u8 = 136;

/// A matchable / settable field. The declaration order is the canonical order of fields in
/// a [`crate::Match`] (roughly metadata, L2, L3, L4, as OXM numbers them).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Field {
    /// Datapath hash (Nicira, 32 bits, maskable). First, with `recirc_id`, as OVS encodes
    /// them.
    DpHash,
    /// Recirculation id (Nicira, 32 bits): 0 on a packet's first pass, the datapath's id
    /// of the continuation after a `ct(table=..)`.
    RecircId,
    /// Ingress port (32 bits).
    InPort,
    /// Physical ingress port (32 bits).
    InPhyPort,
    /// Table metadata (64 bits, maskable).
    Metadata,
    /// Ethernet destination (maskable).
    EthDst,
    /// Ethernet source (maskable).
    EthSrc,
    /// EtherType after VLAN tags.
    EthType,
    /// 13-bit VLAN id with [`OFPVID_PRESENT`] (maskable).
    VlanVid,
    /// VLAN priority (3 bits).
    VlanPcp,
    /// IP DSCP (6 bits).
    IpDscp,
    /// IP ECN (2 bits).
    IpEcn,
    /// IP protocol.
    IpProto,
    /// IPv4 source (maskable).
    Ipv4Src,
    /// IPv4 destination (maskable).
    Ipv4Dst,
    /// TCP source port.
    TcpSrc,
    /// TCP destination port.
    TcpDst,
    /// UDP source port.
    UdpSrc,
    /// UDP destination port.
    UdpDst,
    /// SCTP source port.
    SctpSrc,
    /// SCTP destination port.
    SctpDst,
    /// ICMPv4 type.
    Icmpv4Type,
    /// ICMPv4 code.
    Icmpv4Code,
    /// ARP opcode.
    ArpOp,
    /// ARP sender protocol address (maskable).
    ArpSpa,
    /// ARP target protocol address (maskable).
    ArpTpa,
    /// ARP sender hardware address (maskable).
    ArpSha,
    /// ARP target hardware address (maskable).
    ArpTha,
    /// IPv6 source (maskable).
    Ipv6Src,
    /// IPv6 destination (maskable).
    Ipv6Dst,
    /// IPv6 flow label (20 bits, maskable).
    Ipv6Flabel,
    /// ICMPv6 type.
    Icmpv6Type,
    /// ICMPv6 code.
    Icmpv6Code,
    /// ND target address.
    Ipv6NdTarget,
    /// ND source link-layer address.
    Ipv6NdSll,
    /// ND target link-layer address.
    Ipv6NdTll,
    /// MPLS label (20 bits).
    MplsLabel,
    /// MPLS traffic class (3 bits).
    MplsTc,
    /// MPLS bottom-of-stack bit.
    MplsBos,
    /// PBB I-SID (24 bits, maskable).
    PbbIsid,
    /// Tunnel id (64 bits, maskable).
    TunnelId,
    /// IPv6 extension header pseudo-field (9 bits, maskable).
    Ipv6Exthdr,
    /// TCP flags (OpenFlow 1.5; 12 bits used, maskable).
    TcpFlags,
    /// Nicira register 0 (32 bits, maskable).
    Reg0,
    /// Nicira register 1.
    Reg1,
    /// Nicira register 2.
    Reg2,
    /// Nicira register 3.
    Reg3,
    /// Nicira register 4.
    Reg4,
    /// Nicira register 5.
    Reg5,
    /// Nicira register 6.
    Reg6,
    /// Nicira register 7.
    Reg7,
    /// Nicira register 8.
    Reg8,
    /// Nicira register 9.
    Reg9,
    /// Nicira register 10.
    Reg10,
    /// Nicira register 11.
    Reg11,
    /// Nicira register 12.
    Reg12,
    /// Nicira register 13.
    Reg13,
    /// Nicira register 14.
    Reg14,
    /// Nicira register 15.
    Reg15,
    /// IP TTL / hop limit (Nicira).
    NwTtl,
    /// IP fragment bits [`FRAG_ANY`] | [`FRAG_LATER`] (Nicira, maskable).
    IpFrag,
    /// Packet mark (Nicira `pkt_mark`, 32 bits, maskable).
    PktMark,
    /// 64-bit view `xreg0` = `reg0` << 32 | `reg1` (OpenFlow 1.5 packet register 0).
    Xreg0,
    /// 64-bit view `xreg1` = `reg2` << 32 | `reg3` (OpenFlow 1.5 packet register 1).
    Xreg1,
    /// 64-bit view `xreg2` = `reg4` << 32 | `reg5` (OpenFlow 1.5 packet register 2).
    Xreg2,
    /// 64-bit view `xreg3` = `reg6` << 32 | `reg7` (OpenFlow 1.5 packet register 3).
    Xreg3,
    /// 64-bit view `xreg4` = `reg8` << 32 | `reg9` (OpenFlow 1.5 packet register 4).
    Xreg4,
    /// 64-bit view `xreg5` = `reg10` << 32 | `reg11` (OpenFlow 1.5 packet register 5).
    Xreg5,
    /// 64-bit view `xreg6` = `reg12` << 32 | `reg13` (OpenFlow 1.5 packet register 6).
    Xreg6,
    /// 64-bit view `xreg7` = `reg14` << 32 | `reg15` (OpenFlow 1.5 packet register 7).
    Xreg7,
    /// 128-bit view `xxreg0` = `reg0`..`reg3`, most significant first.
    Xxreg0,
    /// 128-bit view `xxreg1` = `reg4`..`reg7`, most significant first.
    Xxreg1,
    /// 128-bit view `xxreg2` = `reg8`..`reg11`, most significant first.
    Xxreg2,
    /// 128-bit view `xxreg3` = `reg12`..`reg15`, most significant first.
    Xxreg3,
    /// Connection tracking state ([`CT_STATE_NAMES`] bits; 8 bits, sent in 32 on the wire).
    CtState,
    /// Conntrack zone (16 bits).
    CtZone,
    /// Connection mark (32 bits, maskable; writable inside `ct(exec(..))`).
    CtMark,
    /// Connection label (128 bits, maskable; writable inside `ct(exec(..))`).
    CtLabel,
    /// Original-direction IPv4 source of the connection (maskable).
    CtNwSrc,
    /// Original-direction IPv4 destination (maskable).
    CtNwDst,
    /// Original-direction IPv6 source (maskable).
    CtIpv6Src,
    /// Original-direction IPv6 destination (maskable).
    CtIpv6Dst,
    /// Original-direction IP protocol.
    CtNwProto,
    /// Original-direction transport source port (maskable).
    CtTpSrc,
    /// Original-direction transport destination port (maskable).
    CtTpDst,
    /// Outer IPv4 source of a tunnelled packet (maskable; `NXM_NX_TUN_IPV4_SRC`).
    TunSrc,
    /// Outer IPv4 destination of a tunnelled packet (maskable; `NXM_NX_TUN_IPV4_DST`).
    TunDst,
    /// Tunnel option mapped to `tun_metadata0` (Nicira, variable length, maskable).
    TunMetadata0,
    /// Tunnel option mapped to `tun_metadata1` (Nicira, variable length, maskable).
    TunMetadata1,
    /// Tunnel option mapped to `tun_metadata2` (Nicira, variable length, maskable).
    TunMetadata2,
    /// Tunnel option mapped to `tun_metadata3` (Nicira, variable length, maskable).
    TunMetadata3,
    /// Tunnel option mapped to `tun_metadata4` (Nicira, variable length, maskable).
    TunMetadata4,
    /// Tunnel option mapped to `tun_metadata5` (Nicira, variable length, maskable).
    TunMetadata5,
    /// Tunnel option mapped to `tun_metadata6` (Nicira, variable length, maskable).
    TunMetadata6,
    /// Tunnel option mapped to `tun_metadata7` (Nicira, variable length, maskable).
    TunMetadata7,
    /// Tunnel option mapped to `tun_metadata8` (Nicira, variable length, maskable).
    TunMetadata8,
    /// Tunnel option mapped to `tun_metadata9` (Nicira, variable length, maskable).
    TunMetadata9,
    /// Tunnel option mapped to `tun_metadata10` (Nicira, variable length, maskable).
    TunMetadata10,
    /// Tunnel option mapped to `tun_metadata11` (Nicira, variable length, maskable).
    TunMetadata11,
    /// Tunnel option mapped to `tun_metadata12` (Nicira, variable length, maskable).
    TunMetadata12,
    /// Tunnel option mapped to `tun_metadata13` (Nicira, variable length, maskable).
    TunMetadata13,
    /// Tunnel option mapped to `tun_metadata14` (Nicira, variable length, maskable).
    TunMetadata14,
    /// Tunnel option mapped to `tun_metadata15` (Nicira, variable length, maskable).
    TunMetadata15,
    /// Tunnel option mapped to `tun_metadata16` (Nicira, variable length, maskable).
    TunMetadata16,
    /// Tunnel option mapped to `tun_metadata17` (Nicira, variable length, maskable).
    TunMetadata17,
    /// Tunnel option mapped to `tun_metadata18` (Nicira, variable length, maskable).
    TunMetadata18,
    /// Tunnel option mapped to `tun_metadata19` (Nicira, variable length, maskable).
    TunMetadata19,
    /// Tunnel option mapped to `tun_metadata20` (Nicira, variable length, maskable).
    TunMetadata20,
    /// Tunnel option mapped to `tun_metadata21` (Nicira, variable length, maskable).
    TunMetadata21,
    /// Tunnel option mapped to `tun_metadata22` (Nicira, variable length, maskable).
    TunMetadata22,
    /// Tunnel option mapped to `tun_metadata23` (Nicira, variable length, maskable).
    TunMetadata23,
    /// Tunnel option mapped to `tun_metadata24` (Nicira, variable length, maskable).
    TunMetadata24,
    /// Tunnel option mapped to `tun_metadata25` (Nicira, variable length, maskable).
    TunMetadata25,
    /// Tunnel option mapped to `tun_metadata26` (Nicira, variable length, maskable).
    TunMetadata26,
    /// Tunnel option mapped to `tun_metadata27` (Nicira, variable length, maskable).
    TunMetadata27,
    /// Tunnel option mapped to `tun_metadata28` (Nicira, variable length, maskable).
    TunMetadata28,
    /// Tunnel option mapped to `tun_metadata29` (Nicira, variable length, maskable).
    TunMetadata29,
    /// Tunnel option mapped to `tun_metadata30` (Nicira, variable length, maskable).
    TunMetadata30,
    /// Tunnel option mapped to `tun_metadata31` (Nicira, variable length, maskable).
    TunMetadata31,
    /// Tunnel option mapped to `tun_metadata32` (Nicira, variable length, maskable).
    TunMetadata32,
    /// Tunnel option mapped to `tun_metadata33` (Nicira, variable length, maskable).
    TunMetadata33,
    /// Tunnel option mapped to `tun_metadata34` (Nicira, variable length, maskable).
    TunMetadata34,
    /// Tunnel option mapped to `tun_metadata35` (Nicira, variable length, maskable).
    TunMetadata35,
    /// Tunnel option mapped to `tun_metadata36` (Nicira, variable length, maskable).
    TunMetadata36,
    /// Tunnel option mapped to `tun_metadata37` (Nicira, variable length, maskable).
    TunMetadata37,
    /// Tunnel option mapped to `tun_metadata38` (Nicira, variable length, maskable).
    TunMetadata38,
    /// Tunnel option mapped to `tun_metadata39` (Nicira, variable length, maskable).
    TunMetadata39,
    /// Tunnel option mapped to `tun_metadata40` (Nicira, variable length, maskable).
    TunMetadata40,
    /// Tunnel option mapped to `tun_metadata41` (Nicira, variable length, maskable).
    TunMetadata41,
    /// Tunnel option mapped to `tun_metadata42` (Nicira, variable length, maskable).
    TunMetadata42,
    /// Tunnel option mapped to `tun_metadata43` (Nicira, variable length, maskable).
    TunMetadata43,
    /// Tunnel option mapped to `tun_metadata44` (Nicira, variable length, maskable).
    TunMetadata44,
    /// Tunnel option mapped to `tun_metadata45` (Nicira, variable length, maskable).
    TunMetadata45,
    /// Tunnel option mapped to `tun_metadata46` (Nicira, variable length, maskable).
    TunMetadata46,
    /// Tunnel option mapped to `tun_metadata47` (Nicira, variable length, maskable).
    TunMetadata47,
    /// Tunnel option mapped to `tun_metadata48` (Nicira, variable length, maskable).
    TunMetadata48,
    /// Tunnel option mapped to `tun_metadata49` (Nicira, variable length, maskable).
    TunMetadata49,
    /// Tunnel option mapped to `tun_metadata50` (Nicira, variable length, maskable).
    TunMetadata50,
    /// Tunnel option mapped to `tun_metadata51` (Nicira, variable length, maskable).
    TunMetadata51,
    /// Tunnel option mapped to `tun_metadata52` (Nicira, variable length, maskable).
    TunMetadata52,
    /// Tunnel option mapped to `tun_metadata53` (Nicira, variable length, maskable).
    TunMetadata53,
    /// Tunnel option mapped to `tun_metadata54` (Nicira, variable length, maskable).
    TunMetadata54,
    /// Tunnel option mapped to `tun_metadata55` (Nicira, variable length, maskable).
    TunMetadata55,
    /// Tunnel option mapped to `tun_metadata56` (Nicira, variable length, maskable).
    TunMetadata56,
    /// Tunnel option mapped to `tun_metadata57` (Nicira, variable length, maskable).
    TunMetadata57,
    /// Tunnel option mapped to `tun_metadata58` (Nicira, variable length, maskable).
    TunMetadata58,
    /// Tunnel option mapped to `tun_metadata59` (Nicira, variable length, maskable).
    TunMetadata59,
    /// Tunnel option mapped to `tun_metadata60` (Nicira, variable length, maskable).
    TunMetadata60,
    /// Tunnel option mapped to `tun_metadata61` (Nicira, variable length, maskable).
    TunMetadata61,
    /// Tunnel option mapped to `tun_metadata62` (Nicira, variable length, maskable).
    TunMetadata62,
    /// Tunnel option mapped to `tun_metadata63` (Nicira, variable length, maskable).
    TunMetadata63,
}

/// `ct_state` bits, lowest first, with their ovs-ofctl names.
pub const CT_STATE_NAMES: [(u8, &str); 8] = [
    (0x01, "new"),
    (0x02, "est"),
    (0x04, "rel"),
    (0x08, "rpl"),
    (0x10, "inv"),
    (0x20, "trk"),
    (0x40, "snat"),
    (0x80, "dnat"),
];
/// `ct_state` bit: a new connection (or one not yet committed).
pub const CS_NEW: u8 = 0x01;
/// `ct_state` bit: part of an established connection.
pub const CS_ESTABLISHED: u8 = 0x02;
/// `ct_state` bit: related to an existing connection (e.g. an ICMP error).
pub const CS_RELATED: u8 = 0x04;
/// `ct_state` bit: in the reply direction.
pub const CS_REPLY_DIR: u8 = 0x08;
/// `ct_state` bit: invalid.
pub const CS_INVALID: u8 = 0x10;
/// `ct_state` bit: tracked (went through `ct`).
pub const CS_TRACKED: u8 = 0x20;
/// `ct_state` bit: source NAT applied.
pub const CS_SRC_NAT: u8 = 0x40;
/// `ct_state` bit: destination NAT applied.
pub const CS_DST_NAT: u8 = 0x80;

/// A field's prerequisite, in terms of the one field it depends on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Prereq {
    /// None.
    None,
    /// `in_port` must be matched (for `in_phy_port`).
    InPort,
    /// `vlan_vid` must match a present tag (`vlan_vid != NONE`).
    VlanPresent,
    /// `eth_type` must be matched exactly to one of these.
    EthType(&'static [u16]),
    /// `ip_proto` must be matched exactly to this (its own prerequisite brings IPv4/IPv6).
    IpProto(u8),
    /// `icmpv6_type` must be matched exactly to one of these.
    Icmpv6Type(&'static [u8]),
    /// The original-tuple fields (OVS's "CT" prerequisite): `ct_state` must say the packet
    /// has a valid connection (one of new, est, rel, rpl, snat, dnat matched set, or `+trk`
    /// with `inv` in the mask), and `eth_type` must be one of these.
    Ct(&'static [u16]),
}

/// How a field's value is written in ovs-ofctl text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ValueFormat {
    /// Decimal integer.
    Decimal,
    /// Hexadecimal integer with `0x`.
    Hex,
    /// `xx:xx:xx:xx:xx:xx`.
    Mac,
    /// Dotted quad.
    Ipv4,
    /// RFC 5952 IPv6.
    Ipv6,
    /// OpenFlow port number or reserved port name.
    Port,
    /// `ip_frag` keywords.
    Frag,
    /// `tcp_flags` `+syn-ack` notation.
    TcpFlags,
    /// `ct_state` flags: `+trk-inv` notation, or `new|trk` when exact.
    CtState,
}

/// Static facts about a [`Field`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FieldInfo {
    /// The field.
    pub field: Field,
    /// Primary ovs-ofctl name (used by `set_field` formatting).
    pub name: &'static str,
    /// Other names ovs-ofctl accepts for exactly this field.
    pub aliases: &'static [&'static str],
    /// OXM class.
    pub oxm_class: u16,
    /// OXM field number within the class.
    pub oxm_field: u8,
    /// Width in bits.
    pub bits: u8,
    /// Whether a mask is allowed (OpenFlow 1.3 table / NXM definition).
    pub maskable: bool,
    /// The field's prerequisite.
    pub prereq: Prereq,
    /// Text format of values.
    pub format: ValueFormat,
}

const IP: &[u16] = &[ethertype::IPV4, ethertype::IPV6];
const IPV4: &[u16] = &[ethertype::IPV4];
const IPV6: &[u16] = &[ethertype::IPV6];
const ARP: &[u16] = &[ethertype::ARP, ethertype::RARP];
const MPLS: &[u16] = &[ethertype::MPLS, ethertype::MPLS_MCAST];
const PBB: &[u16] = &[ethertype::PBB];

macro_rules! fi {
    ($f:ident, $name:expr, [$($a:expr),*], $class:expr, $num:expr, $bits:expr, $mask:expr,
     $pre:expr, $fmt:ident) => {
        FieldInfo {
            field: Field::$f,
            name: $name,
            aliases: &[$($a),*],
            oxm_class: $class,
            oxm_field: $num,
            bits: $bits,
            maskable: $mask,
            prereq: $pre,
            format: ValueFormat::$fmt,
        }
    };
}

const B: u16 = OFPXMC_OPENFLOW_BASIC;
const NX: u16 = OFPXMC_NXM_1;

/// The field table, indexed by `Field as usize`.
#[rustfmt::skip]
static FIELDS: [FieldInfo; N_FIELDS] = [
    fi!(DpHash, "dp_hash", [], NX, 35, 32, true, Prereq::None, Hex),
    fi!(RecircId, "recirc_id", [], NX, 36, 32, false, Prereq::None, Hex),
    fi!(InPort, "in_port", [], B, 0, 32, false, Prereq::None, Port),
    fi!(InPhyPort, "in_phy_port", [], B, 1, 32, false, Prereq::InPort, Port),
    fi!(Metadata, "metadata", [], B, 2, 64, true, Prereq::None, Hex),
    fi!(EthDst, "eth_dst", ["dl_dst"], B, 3, 48, true, Prereq::None, Mac),
    fi!(EthSrc, "eth_src", ["dl_src"], B, 4, 48, true, Prereq::None, Mac),
    fi!(EthType, "eth_type", ["dl_type"], B, 5, 16, false, Prereq::None, Hex),
    fi!(VlanVid, "vlan_vid", [], B, 6, 13, true, Prereq::None, Decimal),
    fi!(VlanPcp, "vlan_pcp", ["dl_vlan_pcp"], B, 7, 3, false, Prereq::VlanPresent, Decimal),
    fi!(IpDscp, "ip_dscp", [], B, 8, 6, false, Prereq::EthType(IP), Decimal),
    fi!(IpEcn, "ip_ecn", ["nw_ecn"], B, 9, 2, false, Prereq::EthType(IP), Decimal),
    fi!(IpProto, "ip_proto", [], B, 10, 8, false, Prereq::EthType(IP), Decimal),
    fi!(Ipv4Src, "ip_src", [], B, 11, 32, true, Prereq::EthType(IPV4), Ipv4),
    fi!(Ipv4Dst, "ip_dst", [], B, 12, 32, true, Prereq::EthType(IPV4), Ipv4),
    fi!(TcpSrc, "tcp_src", [], B, 13, 16, false, Prereq::IpProto(ipproto::TCP), Decimal),
    fi!(TcpDst, "tcp_dst", [], B, 14, 16, false, Prereq::IpProto(ipproto::TCP), Decimal),
    fi!(UdpSrc, "udp_src", [], B, 15, 16, false, Prereq::IpProto(ipproto::UDP), Decimal),
    fi!(UdpDst, "udp_dst", [], B, 16, 16, false, Prereq::IpProto(ipproto::UDP), Decimal),
    fi!(SctpSrc, "sctp_src", [], B, 17, 16, false, Prereq::IpProto(ipproto::SCTP), Decimal),
    fi!(SctpDst, "sctp_dst", [], B, 18, 16, false, Prereq::IpProto(ipproto::SCTP), Decimal),
    fi!(Icmpv4Type, "icmpv4_type", [], B, 19, 8, false, Prereq::IpProto(ipproto::ICMP), Decimal),
    fi!(Icmpv4Code, "icmpv4_code", [], B, 20, 8, false, Prereq::IpProto(ipproto::ICMP), Decimal),
    fi!(ArpOp, "arp_op", [], B, 21, 16, false, Prereq::EthType(ARP), Decimal),
    fi!(ArpSpa, "arp_spa", [], B, 22, 32, true, Prereq::EthType(ARP), Ipv4),
    fi!(ArpTpa, "arp_tpa", [], B, 23, 32, true, Prereq::EthType(ARP), Ipv4),
    fi!(ArpSha, "arp_sha", [], B, 24, 48, true, Prereq::EthType(ARP), Mac),
    fi!(ArpTha, "arp_tha", [], B, 25, 48, true, Prereq::EthType(ARP), Mac),
    fi!(Ipv6Src, "ipv6_src", [], B, 26, 128, true, Prereq::EthType(IPV6), Ipv6),
    fi!(Ipv6Dst, "ipv6_dst", [], B, 27, 128, true, Prereq::EthType(IPV6), Ipv6),
    fi!(Ipv6Flabel, "ipv6_label", ["ipv6_flabel"], B, 28, 20, true, Prereq::EthType(IPV6), Hex),
    fi!(Icmpv6Type, "icmpv6_type", [], B, 29, 8, false, Prereq::IpProto(ipproto::ICMPV6), Decimal),
    fi!(Icmpv6Code, "icmpv6_code", [], B, 30, 8, false, Prereq::IpProto(ipproto::ICMPV6), Decimal),
    fi!(Ipv6NdTarget, "nd_target", ["ipv6_nd_target"], B, 31, 128, false, Prereq::Icmpv6Type(&[ICMPV6_ND_NS, ICMPV6_ND_NA]), Ipv6),
    fi!(Ipv6NdSll, "nd_sll", ["ipv6_nd_sll"], B, 32, 48, false, Prereq::Icmpv6Type(&[ICMPV6_ND_NS]), Mac),
    fi!(Ipv6NdTll, "nd_tll", ["ipv6_nd_tll"], B, 33, 48, false, Prereq::Icmpv6Type(&[ICMPV6_ND_NA]), Mac),
    fi!(MplsLabel, "mpls_label", [], B, 34, 20, false, Prereq::EthType(MPLS), Decimal),
    fi!(MplsTc, "mpls_tc", [], B, 35, 3, false, Prereq::EthType(MPLS), Decimal),
    fi!(MplsBos, "mpls_bos", [], B, 36, 1, false, Prereq::EthType(MPLS), Decimal),
    fi!(PbbIsid, "pbb_isid", [], B, 37, 24, true, Prereq::EthType(PBB), Hex),
    fi!(TunnelId, "tun_id", ["tunnel_id"], B, 38, 64, true, Prereq::None, Hex),
    fi!(Ipv6Exthdr, "ipv6_exthdr", [], B, 39, 9, true, Prereq::EthType(IPV6), Hex),
    fi!(TcpFlags, "tcp_flags", [], B, 42, 12, true, Prereq::IpProto(ipproto::TCP), TcpFlags),
    fi!(Reg0, "reg0", [], NX, 0, 32, true, Prereq::None, Hex),
    fi!(Reg1, "reg1", [], NX, 1, 32, true, Prereq::None, Hex),
    fi!(Reg2, "reg2", [], NX, 2, 32, true, Prereq::None, Hex),
    fi!(Reg3, "reg3", [], NX, 3, 32, true, Prereq::None, Hex),
    fi!(Reg4, "reg4", [], NX, 4, 32, true, Prereq::None, Hex),
    fi!(Reg5, "reg5", [], NX, 5, 32, true, Prereq::None, Hex),
    fi!(Reg6, "reg6", [], NX, 6, 32, true, Prereq::None, Hex),
    fi!(Reg7, "reg7", [], NX, 7, 32, true, Prereq::None, Hex),
    fi!(Reg8, "reg8", [], NX, 8, 32, true, Prereq::None, Hex),
    fi!(Reg9, "reg9", [], NX, 9, 32, true, Prereq::None, Hex),
    fi!(Reg10, "reg10", [], NX, 10, 32, true, Prereq::None, Hex),
    fi!(Reg11, "reg11", [], NX, 11, 32, true, Prereq::None, Hex),
    fi!(Reg12, "reg12", [], NX, 12, 32, true, Prereq::None, Hex),
    fi!(Reg13, "reg13", [], NX, 13, 32, true, Prereq::None, Hex),
    fi!(Reg14, "reg14", [], NX, 14, 32, true, Prereq::None, Hex),
    fi!(Reg15, "reg15", [], NX, 15, 32, true, Prereq::None, Hex),
    fi!(NwTtl, "nw_ttl", [], NX, 29, 8, false, Prereq::EthType(IP), Decimal),
    fi!(IpFrag, "ip_frag", ["nw_frag"], NX, 26, 2, true, Prereq::EthType(IP), Frag),
    fi!(PktMark, "pkt_mark", [], NX, 33, 32, true, Prereq::None, Hex),
    fi!(Xreg0, "xreg0", [], OFPXMC_PACKET_REGS, 0, 64, true, Prereq::None, Hex),
    fi!(Xreg1, "xreg1", [], OFPXMC_PACKET_REGS, 1, 64, true, Prereq::None, Hex),
    fi!(Xreg2, "xreg2", [], OFPXMC_PACKET_REGS, 2, 64, true, Prereq::None, Hex),
    fi!(Xreg3, "xreg3", [], OFPXMC_PACKET_REGS, 3, 64, true, Prereq::None, Hex),
    fi!(Xreg4, "xreg4", [], OFPXMC_PACKET_REGS, 4, 64, true, Prereq::None, Hex),
    fi!(Xreg5, "xreg5", [], OFPXMC_PACKET_REGS, 5, 64, true, Prereq::None, Hex),
    fi!(Xreg6, "xreg6", [], OFPXMC_PACKET_REGS, 6, 64, true, Prereq::None, Hex),
    fi!(Xreg7, "xreg7", [], OFPXMC_PACKET_REGS, 7, 64, true, Prereq::None, Hex),
    fi!(Xxreg0, "xxreg0", [], NX, 111, 128, true, Prereq::None, Hex),
    fi!(Xxreg1, "xxreg1", [], NX, 112, 128, true, Prereq::None, Hex),
    fi!(Xxreg2, "xxreg2", [], NX, 113, 128, true, Prereq::None, Hex),
    fi!(Xxreg3, "xxreg3", [], NX, 114, 128, true, Prereq::None, Hex),
    fi!(CtState, "ct_state", [], NX, 105, 8, true, Prereq::None, CtState),
    fi!(CtZone, "ct_zone", [], NX, 106, 16, false, Prereq::None, Decimal),
    fi!(CtMark, "ct_mark", [], NX, 107, 32, true, Prereq::None, Hex),
    fi!(CtLabel, "ct_label", [], NX, 108, 128, true, Prereq::None, Hex),
    fi!(CtNwSrc, "ct_nw_src", [], NX, 120, 32, true, Prereq::Ct(IPV4), Ipv4),
    fi!(CtNwDst, "ct_nw_dst", [], NX, 121, 32, true, Prereq::Ct(IPV4), Ipv4),
    fi!(CtIpv6Src, "ct_ipv6_src", [], NX, 122, 128, true, Prereq::Ct(IPV6), Ipv6),
    fi!(CtIpv6Dst, "ct_ipv6_dst", [], NX, 123, 128, true, Prereq::Ct(IPV6), Ipv6),
    fi!(CtNwProto, "ct_nw_proto", [], NX, 119, 8, false, Prereq::Ct(IP), Decimal),
    fi!(CtTpSrc, "ct_tp_src", [], NX, 124, 16, true, Prereq::Ct(IP), Decimal),
    fi!(CtTpDst, "ct_tp_dst", [], NX, 125, 16, true, Prereq::Ct(IP), Decimal),
    fi!(TunSrc, "tun_src", [], NX, 31, 32, true, Prereq::None, Ipv4),
    fi!(TunDst, "tun_dst", [], NX, 32, 32, true, Prereq::None, Ipv4),
    fi!(TunMetadata0, "tun_metadata0", [], NX, 40, 128, true, Prereq::None, Hex),
    fi!(TunMetadata1, "tun_metadata1", [], NX, 41, 128, true, Prereq::None, Hex),
    fi!(TunMetadata2, "tun_metadata2", [], NX, 42, 128, true, Prereq::None, Hex),
    fi!(TunMetadata3, "tun_metadata3", [], NX, 43, 128, true, Prereq::None, Hex),
    fi!(TunMetadata4, "tun_metadata4", [], NX, 44, 128, true, Prereq::None, Hex),
    fi!(TunMetadata5, "tun_metadata5", [], NX, 45, 128, true, Prereq::None, Hex),
    fi!(TunMetadata6, "tun_metadata6", [], NX, 46, 128, true, Prereq::None, Hex),
    fi!(TunMetadata7, "tun_metadata7", [], NX, 47, 128, true, Prereq::None, Hex),
    fi!(TunMetadata8, "tun_metadata8", [], NX, 48, 128, true, Prereq::None, Hex),
    fi!(TunMetadata9, "tun_metadata9", [], NX, 49, 128, true, Prereq::None, Hex),
    fi!(TunMetadata10, "tun_metadata10", [], NX, 50, 128, true, Prereq::None, Hex),
    fi!(TunMetadata11, "tun_metadata11", [], NX, 51, 128, true, Prereq::None, Hex),
    fi!(TunMetadata12, "tun_metadata12", [], NX, 52, 128, true, Prereq::None, Hex),
    fi!(TunMetadata13, "tun_metadata13", [], NX, 53, 128, true, Prereq::None, Hex),
    fi!(TunMetadata14, "tun_metadata14", [], NX, 54, 128, true, Prereq::None, Hex),
    fi!(TunMetadata15, "tun_metadata15", [], NX, 55, 128, true, Prereq::None, Hex),
    fi!(TunMetadata16, "tun_metadata16", [], NX, 56, 128, true, Prereq::None, Hex),
    fi!(TunMetadata17, "tun_metadata17", [], NX, 57, 128, true, Prereq::None, Hex),
    fi!(TunMetadata18, "tun_metadata18", [], NX, 58, 128, true, Prereq::None, Hex),
    fi!(TunMetadata19, "tun_metadata19", [], NX, 59, 128, true, Prereq::None, Hex),
    fi!(TunMetadata20, "tun_metadata20", [], NX, 60, 128, true, Prereq::None, Hex),
    fi!(TunMetadata21, "tun_metadata21", [], NX, 61, 128, true, Prereq::None, Hex),
    fi!(TunMetadata22, "tun_metadata22", [], NX, 62, 128, true, Prereq::None, Hex),
    fi!(TunMetadata23, "tun_metadata23", [], NX, 63, 128, true, Prereq::None, Hex),
    fi!(TunMetadata24, "tun_metadata24", [], NX, 64, 128, true, Prereq::None, Hex),
    fi!(TunMetadata25, "tun_metadata25", [], NX, 65, 128, true, Prereq::None, Hex),
    fi!(TunMetadata26, "tun_metadata26", [], NX, 66, 128, true, Prereq::None, Hex),
    fi!(TunMetadata27, "tun_metadata27", [], NX, 67, 128, true, Prereq::None, Hex),
    fi!(TunMetadata28, "tun_metadata28", [], NX, 68, 128, true, Prereq::None, Hex),
    fi!(TunMetadata29, "tun_metadata29", [], NX, 69, 128, true, Prereq::None, Hex),
    fi!(TunMetadata30, "tun_metadata30", [], NX, 70, 128, true, Prereq::None, Hex),
    fi!(TunMetadata31, "tun_metadata31", [], NX, 71, 128, true, Prereq::None, Hex),
    fi!(TunMetadata32, "tun_metadata32", [], NX, 72, 128, true, Prereq::None, Hex),
    fi!(TunMetadata33, "tun_metadata33", [], NX, 73, 128, true, Prereq::None, Hex),
    fi!(TunMetadata34, "tun_metadata34", [], NX, 74, 128, true, Prereq::None, Hex),
    fi!(TunMetadata35, "tun_metadata35", [], NX, 75, 128, true, Prereq::None, Hex),
    fi!(TunMetadata36, "tun_metadata36", [], NX, 76, 128, true, Prereq::None, Hex),
    fi!(TunMetadata37, "tun_metadata37", [], NX, 77, 128, true, Prereq::None, Hex),
    fi!(TunMetadata38, "tun_metadata38", [], NX, 78, 128, true, Prereq::None, Hex),
    fi!(TunMetadata39, "tun_metadata39", [], NX, 79, 128, true, Prereq::None, Hex),
    fi!(TunMetadata40, "tun_metadata40", [], NX, 80, 128, true, Prereq::None, Hex),
    fi!(TunMetadata41, "tun_metadata41", [], NX, 81, 128, true, Prereq::None, Hex),
    fi!(TunMetadata42, "tun_metadata42", [], NX, 82, 128, true, Prereq::None, Hex),
    fi!(TunMetadata43, "tun_metadata43", [], NX, 83, 128, true, Prereq::None, Hex),
    fi!(TunMetadata44, "tun_metadata44", [], NX, 84, 128, true, Prereq::None, Hex),
    fi!(TunMetadata45, "tun_metadata45", [], NX, 85, 128, true, Prereq::None, Hex),
    fi!(TunMetadata46, "tun_metadata46", [], NX, 86, 128, true, Prereq::None, Hex),
    fi!(TunMetadata47, "tun_metadata47", [], NX, 87, 128, true, Prereq::None, Hex),
    fi!(TunMetadata48, "tun_metadata48", [], NX, 88, 128, true, Prereq::None, Hex),
    fi!(TunMetadata49, "tun_metadata49", [], NX, 89, 128, true, Prereq::None, Hex),
    fi!(TunMetadata50, "tun_metadata50", [], NX, 90, 128, true, Prereq::None, Hex),
    fi!(TunMetadata51, "tun_metadata51", [], NX, 91, 128, true, Prereq::None, Hex),
    fi!(TunMetadata52, "tun_metadata52", [], NX, 92, 128, true, Prereq::None, Hex),
    fi!(TunMetadata53, "tun_metadata53", [], NX, 93, 128, true, Prereq::None, Hex),
    fi!(TunMetadata54, "tun_metadata54", [], NX, 94, 128, true, Prereq::None, Hex),
    fi!(TunMetadata55, "tun_metadata55", [], NX, 95, 128, true, Prereq::None, Hex),
    fi!(TunMetadata56, "tun_metadata56", [], NX, 96, 128, true, Prereq::None, Hex),
    fi!(TunMetadata57, "tun_metadata57", [], NX, 97, 128, true, Prereq::None, Hex),
    fi!(TunMetadata58, "tun_metadata58", [], NX, 98, 128, true, Prereq::None, Hex),
    fi!(TunMetadata59, "tun_metadata59", [], NX, 99, 128, true, Prereq::None, Hex),
    fi!(TunMetadata60, "tun_metadata60", [], NX, 100, 128, true, Prereq::None, Hex),
    fi!(TunMetadata61, "tun_metadata61", [], NX, 101, 128, true, Prereq::None, Hex),
    fi!(TunMetadata62, "tun_metadata62", [], NX, 102, 128, true, Prereq::None, Hex),
    fi!(TunMetadata63, "tun_metadata63", [], NX, 103, 128, true, Prereq::None, Hex),
];

impl Field {
    /// Every field, in canonical order.
    pub const ALL: [Field; N_FIELDS] = [
        Field::DpHash,
        Field::RecircId,
        Field::InPort,
        Field::InPhyPort,
        Field::Metadata,
        Field::EthDst,
        Field::EthSrc,
        Field::EthType,
        Field::VlanVid,
        Field::VlanPcp,
        Field::IpDscp,
        Field::IpEcn,
        Field::IpProto,
        Field::Ipv4Src,
        Field::Ipv4Dst,
        Field::TcpSrc,
        Field::TcpDst,
        Field::UdpSrc,
        Field::UdpDst,
        Field::SctpSrc,
        Field::SctpDst,
        Field::Icmpv4Type,
        Field::Icmpv4Code,
        Field::ArpOp,
        Field::ArpSpa,
        Field::ArpTpa,
        Field::ArpSha,
        Field::ArpTha,
        Field::Ipv6Src,
        Field::Ipv6Dst,
        Field::Ipv6Flabel,
        Field::Icmpv6Type,
        Field::Icmpv6Code,
        Field::Ipv6NdTarget,
        Field::Ipv6NdSll,
        Field::Ipv6NdTll,
        Field::MplsLabel,
        Field::MplsTc,
        Field::MplsBos,
        Field::PbbIsid,
        Field::TunnelId,
        Field::Ipv6Exthdr,
        Field::TcpFlags,
        Field::Reg0,
        Field::Reg1,
        Field::Reg2,
        Field::Reg3,
        Field::Reg4,
        Field::Reg5,
        Field::Reg6,
        Field::Reg7,
        Field::Reg8,
        Field::Reg9,
        Field::Reg10,
        Field::Reg11,
        Field::Reg12,
        Field::Reg13,
        Field::Reg14,
        Field::Reg15,
        Field::NwTtl,
        Field::IpFrag,
        Field::PktMark,
        Field::Xreg0,
        Field::Xreg1,
        Field::Xreg2,
        Field::Xreg3,
        Field::Xreg4,
        Field::Xreg5,
        Field::Xreg6,
        Field::Xreg7,
        Field::Xxreg0,
        Field::Xxreg1,
        Field::Xxreg2,
        Field::Xxreg3,
        Field::CtState,
        Field::CtZone,
        Field::CtMark,
        Field::CtLabel,
        Field::CtNwSrc,
        Field::CtNwDst,
        Field::CtIpv6Src,
        Field::CtIpv6Dst,
        Field::CtNwProto,
        Field::CtTpSrc,
        Field::CtTpDst,
        Field::TunSrc,
        Field::TunDst,
        Field::TunMetadata0,
        Field::TunMetadata1,
        Field::TunMetadata2,
        Field::TunMetadata3,
        Field::TunMetadata4,
        Field::TunMetadata5,
        Field::TunMetadata6,
        Field::TunMetadata7,
        Field::TunMetadata8,
        Field::TunMetadata9,
        Field::TunMetadata10,
        Field::TunMetadata11,
        Field::TunMetadata12,
        Field::TunMetadata13,
        Field::TunMetadata14,
        Field::TunMetadata15,
        Field::TunMetadata16,
        Field::TunMetadata17,
        Field::TunMetadata18,
        Field::TunMetadata19,
        Field::TunMetadata20,
        Field::TunMetadata21,
        Field::TunMetadata22,
        Field::TunMetadata23,
        Field::TunMetadata24,
        Field::TunMetadata25,
        Field::TunMetadata26,
        Field::TunMetadata27,
        Field::TunMetadata28,
        Field::TunMetadata29,
        Field::TunMetadata30,
        Field::TunMetadata31,
        Field::TunMetadata32,
        Field::TunMetadata33,
        Field::TunMetadata34,
        Field::TunMetadata35,
        Field::TunMetadata36,
        Field::TunMetadata37,
        Field::TunMetadata38,
        Field::TunMetadata39,
        Field::TunMetadata40,
        Field::TunMetadata41,
        Field::TunMetadata42,
        Field::TunMetadata43,
        Field::TunMetadata44,
        Field::TunMetadata45,
        Field::TunMetadata46,
        Field::TunMetadata47,
        Field::TunMetadata48,
        Field::TunMetadata49,
        Field::TunMetadata50,
        Field::TunMetadata51,
        Field::TunMetadata52,
        Field::TunMetadata53,
        Field::TunMetadata54,
        Field::TunMetadata55,
        Field::TunMetadata56,
        Field::TunMetadata57,
        Field::TunMetadata58,
        Field::TunMetadata59,
        Field::TunMetadata60,
        Field::TunMetadata61,
        Field::TunMetadata62,
        Field::TunMetadata63,
    ];

    /// Static facts about this field.
    pub fn info(self) -> &'static FieldInfo {
        &FIELDS[self as usize]
    }

    /// Primary ovs-ofctl name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Width in bits.
    pub fn bits(self) -> u32 {
        u32::from(self.info().bits)
    }

    /// Length of the value on the wire, in bytes.
    pub fn wire_len(self) -> usize {
        match self {
            // 20-bit fields travel in 32 bits.
            Field::Ipv6Flabel | Field::MplsLabel | Field::CtState => 4,
            _ => (self.bits() as usize).div_ceil(8),
        }
    }

    /// Whether the OpenFlow 1.3 table allows a mask on this field.
    pub fn maskable(self) -> bool {
        self.info().maskable
    }

    /// Whether Open vSwitch accepts a mask on this field: the OpenFlow set plus bitwise
    /// masks on L4 ports and the ND fields (OVS tools rely on port-range masks). This is
    /// what [`crate::Match::validate`] enforces; `Match::validate_strict` uses
    /// [`Field::maskable`].
    pub fn ovs_maskable(self) -> bool {
        self.maskable()
            || matches!(
                self,
                Field::TcpSrc
                    | Field::TcpDst
                    | Field::UdpSrc
                    | Field::UdpDst
                    | Field::SctpSrc
                    | Field::SctpDst
                    | Field::Ipv6NdTarget
                    | Field::Ipv6NdSll
                    | Field::Ipv6NdTll
            )
    }

    /// Whether this is one of the connection-tracking fields (`ct_state`..`ct_tp_dst`).
    pub fn is_ct(self) -> bool {
        (Field::CtState..=Field::CtTpDst).contains(&self)
    }

    /// The field's prerequisite.
    pub fn prereq(self) -> Prereq {
        self.info().prereq
    }

    /// OXM class and field number.
    pub fn oxm(self) -> (u16, u8) {
        let i = self.info();
        (i.oxm_class, i.oxm_field)
    }

    /// The all-ones value of this field's width.
    pub fn max(self) -> u128 {
        ones(self.bits())
    }

    /// The field with this OXM class and field number.
    pub fn from_oxm(class: u16, field: u8) -> Option<Field> {
        FIELDS
            .iter()
            .find(|i| i.oxm_class == class && i.oxm_field == field)
            .map(|i| i.field)
    }

    /// The field with exactly this name (primary name or alias). Names that OVS resolves
    /// from context (`tp_src`, `nw_src`, `icmp_type`, `dl_vlan`, `nw_tos`...) are the text
    /// parser's business; see [`crate::text`].
    pub fn from_name(name: &str) -> Option<Field> {
        FIELDS
            .iter()
            .find(|i| i.name == name || i.aliases.contains(&name))
            .map(|i| i.field)
    }

    /// Whether this is a 32-bit Nicira register.
    pub fn is_reg(self) -> bool {
        (Field::Reg0..=Field::Reg15).contains(&self)
    }

    /// Register `i` (`reg0`..`reg15`).
    pub fn reg(i: usize) -> Option<Field> {
        Field::ALL
            .get(Field::Reg0 as usize + i)
            .copied()
            .filter(|f| f.is_reg())
    }

    /// The index of a 32-bit register (`reg3` -> 3).
    pub fn reg_index(self) -> Option<usize> {
        self.is_reg().then(|| self as usize - Field::Reg0 as usize)
    }

    /// For a register view (`xreg`, `xxreg`), the first 32-bit register it covers (the most
    /// significant one) and how many it covers; `None` for every other field.
    pub fn reg_view(self) -> Option<(usize, usize)> {
        let i = self as usize;
        if (Field::Xreg0..=Field::Xreg7).contains(&self) {
            Some((2 * (i - Field::Xreg0 as usize), 2))
        } else if (Field::Xxreg0..=Field::Xxreg3).contains(&self) {
            Some((4 * (i - Field::Xxreg0 as usize), 4))
        } else {
            None
        }
    }

    /// Splits a value/mask of a register view into the 32-bit registers it covers: one
    /// `(reg, value, mask)` per register whose part of `mask` is not zero, most significant
    /// first. A plain register gives itself; any other field gives nothing.
    pub fn split_reg_view(self, value: u128, mask: u128) -> Vec<(Field, u128, u128)> {
        let (first, n) = match (self.reg_view(), self.reg_index()) {
            (Some(v), _) => v,
            (None, Some(i)) => (i, 1),
            (None, None) => return Vec::new(),
        };
        (0..n)
            .filter_map(|k| {
                let shift = 32 * (n - 1 - k);
                let m = (mask >> shift) & 0xffff_ffff;
                let f = Field::reg(first + k)?;
                (m != 0).then_some((f, (value >> shift) & m, m))
            })
            .collect()
    }
}

impl core::fmt::Display for Field {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A mask of `bits` low ones (saturating at 128).
pub fn ones(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

/// The value of a MAC address.
pub fn mac_to_u128(mac: [u8; 6]) -> u128 {
    mac.iter().fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
}

/// The MAC address of a 48-bit value (higher bits ignored).
pub fn u128_to_mac(v: u128) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[10], b[11], b[12], b[13], b[14], b[15]]
}

/// The value of an IPv4 address.
pub fn ipv4_to_u128(a: Ipv4Addr) -> u128 {
    u128::from(u32::from(a))
}

/// The IPv4 address of a 32-bit value (higher bits ignored).
pub fn u128_to_ipv4(v: u128) -> Ipv4Addr {
    Ipv4Addr::from(v as u32)
}

/// The value of an IPv6 address.
pub fn ipv6_to_u128(a: Ipv6Addr) -> u128 {
    u128::from(a)
}

/// The IPv6 address of a value.
pub fn u128_to_ipv6(v: u128) -> Ipv6Addr {
    Ipv6Addr::from(v)
}

/// The `len` low bytes of `v`, big-endian (for a codec).
pub fn value_to_bytes(v: u128, len: usize) -> Vec<u8> {
    let b = v.to_be_bytes();
    b[16usize.saturating_sub(len)..].to_vec()
}

/// The value of big-endian bytes (at most 16 are read: the last 16).
pub fn bytes_to_value(b: &[u8]) -> u128 {
    let start = b.len().saturating_sub(16);
    b[start..]
        .iter()
        .fold(0u128, |acc, x| (acc << 8) | u128::from(*x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_discriminant() {
        for (i, f) in Field::ALL.iter().enumerate() {
            assert_eq!(*f as usize, i);
            assert_eq!(FIELDS[i].field, *f);
            assert!(f.bits() >= 1 && f.bits() <= 128);
        }
    }

    #[test]
    fn oxm_codes_are_unique() {
        for a in Field::ALL {
            assert_eq!(Field::from_oxm(a.oxm().0, a.oxm().1), Some(a));
            assert_eq!(Field::from_name(a.name()), Some(a));
        }
    }

    #[test]
    fn of13_numbers() {
        assert_eq!(Field::TcpDst.oxm(), (0x8000, 14));
        assert_eq!(Field::Ipv6Exthdr.oxm(), (0x8000, 39));
        assert_eq!(Field::VlanVid.bits(), 13);
        assert_eq!(Field::Ipv6Flabel.wire_len(), 4);
        assert_eq!(Field::PbbIsid.wire_len(), 3);
        assert!(!Field::TcpDst.maskable());
        assert!(Field::Ipv4Src.maskable());
    }

    #[test]
    fn conversions() {
        let m = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55];
        assert_eq!(u128_to_mac(mac_to_u128(m)), m);
        assert_eq!(value_to_bytes(0x1234, 3), vec![0, 0x12, 0x34]);
        assert_eq!(bytes_to_value(&[0, 0x12, 0x34]), 0x1234);
    }
}
