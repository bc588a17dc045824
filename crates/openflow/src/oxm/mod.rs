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
//!
//! ## Files
//! This file holds the field enum, its constants and the value conversions; `table` the static
//! facts of every field, `field` the methods that read them.

use std::net::{Ipv4Addr, Ipv6Addr};

mod field;
mod table;
use self::table::*;

/// OXM class of the OpenFlow basic fields.
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
/// OXM class of Nicira's original NXM fields (`NXM_OF_*`).
pub const OFPXMC_NXM_0: u16 = 0x0000;
/// OXM class of Nicira extension fields (`NXM_NX_*`).
pub const OFPXMC_NXM_1: u16 = 0x0001;
/// OXM class of OpenFlow 1.5's packet registers (`OXM_OF_PKT_REG0`..`7`, OVS's `xreg`s).
pub const OFPXMC_PACKET_REGS: u16 = 0x8001;

/// Number of [`Field`]s.
pub const N_FIELDS: usize = 156;

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
    /// Outer IPv6 source of a packet tunnelled over IPv6 (maskable; `NXM_NX_TUN_IPV6_SRC`).
    TunIpv6Src,
    /// Outer IPv6 destination of a packet tunnelled over IPv6 (maskable;
    /// `NXM_NX_TUN_IPV6_DST`).
    TunIpv6Dst,
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
    /// Tunnel flags (`NXM_NX_TUN_FLAGS`): OpenFlow sees one bit, `oam` (Geneve's O bit);
    /// 16 bits on the wire.
    TunFlags,
    /// VXLAN Group Policy ID (`NXM_NX_TUN_GBP_ID`, 16 bits, maskable).
    TunGbpId,
    /// VXLAN Group Policy flags (`NXM_NX_TUN_GBP_FLAGS`, 8 bits, maskable).
    TunGbpFlags,
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
    /// `tun_flags`: `+oam`/`-oam`, `oam` when exact (set_field), or a number.
    TunFlags,
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
