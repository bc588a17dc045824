//! # The flow key and its one-pass extractor
//!
//! ## What
//! A [`FlowKey`] is everything the switch can match a packet on, gathered into one plain
//! value: the port it came in on plus a few pipeline registers, the Ethernet addresses and
//! VLAN tags, up to four MPLS label stack entries, the IPv4/IPv6/ARP header fields, and the
//! TCP/UDP/SCTP ports or ICMP type and code (with Neighbor Discovery addresses for ICMPv6).
//! [`extract`] fills one in from a frame's bytes in a single left-to-right pass. The exact
//! match cache compares keys for equality; the megaflow classifier ANDs them with a mask and
//! hashes the result; OpenFlow rules are compiled into (key, mask) pairs of the same shape.
//!
//! ## Layout
//! The struct is `#[repr(C)]`, 360 bytes, 8-byte aligned and free of compiler padding (the
//! explicit `pad_*` fields fill every gap and are always zero). It is split into six
//! *stages*, each a whole number of 64-bit words, in the order a staged lookup consults them:
//!
//! | stage    | words   | fields                                                         |
//! |----------|---------|----------------------------------------------------------------|
//! | metadata | 0..12   | `in_port`, `recirc_id`, `pkt_mark`, `dp_hash`, `metadata`, `tunnel_id`, `regs` |
//! | L2       | 12..18  | MACs, VLAN TPIDs and TCIs, `dl_type`, MPLS LSEs, PBB I-SID, `tun_src` |
//! | L3       | 18..25  | IPv4 and IPv6 addresses, flow label, proto, TOS, TTL, frag, ext |
//! | L4       | 25..30  | ports / ICMP, TCP flags, ND target, ARP/ND hardware addresses, `tun_dst` |
//! | ct       | 30..38  | `ct_state`, `ct_zone`, `ct_mark`, `ct_label`, the original tuple |
//! | tunnel   | 38..45  | `tun_opts_present`, `tun_opts` (the `tun_metadata` fields), `tun_ipv6_src`, `tun_ipv6_dst` |
//!
//! The connection-tracking block comes last on purpose. Only the datapath's `ct` action
//! fills it, and that action ends a pass: the packet continues under a fresh non-zero
//! `recirc_id`. So a key whose `recirc_id` is 0 has an all-zero ct block
//! ([`CT_WORDS_START`]..), and the exact-match cache hashes and compares only the words
//! before it for such keys: pipelines without `ct` pay nothing for it but the extractor's
//! reset of the extra bytes. The original tuple keeps an IPv4 address in the first four
//! bytes of `ct_src`/`ct_dst` (OpenFlow's `ct_nw_src` needs IPv4, `ct_ipv6_src` IPv6, so a
//! packet never has both).
//!
//! The tunnel-options block comes after it for the same reason: only a packet that a tunnel
//! port received with mapped Geneve options, or whose pipeline set a `tun_metadata` field,
//! has a non-zero block ([`TUN_OPTS_WORDS_START`]..), and the exact-match cache leaves it
//! out with the ct block when `tun_opts_present` is zero as well. The block holds
//! [`TUN_OPTS_LEN`] bytes of option values, a bridge's TLV table placing each mapped option
//! in it (OVS keeps up to 256 bytes; here the options must fit in 16, which holds OVN's one
//! 4-byte option with room to spare), and a bit per `tun_metadata` index saying which are
//! present: OVS's "present" map, which a match on any `tun_metadata` field also requires.
//!
//! The IPv6 outer addresses (`tun_ipv6_src`, `tun_ipv6_dst`, words 41..45) close the tunnel
//! block. They are zero for every packet that did not come through (or is not bound for) a
//! tunnel with an IPv6 underlay, so they follow the same rule: the exact-match cache leaves
//! them out when they are zero ([`FlowKey::has_tail`] says whether any of the blocks from
//! [`CT_WORDS_START`] on can be non-zero). Bridges without tunnels pay for them only in the
//! extractor's two more 16-byte stores.
//!
//! [`STAGE_END_WORDS`] records these boundaries and a unit test pins every field offset, so a
//! change to the struct that moves a field across a stage or introduces padding fails the
//! build or the tests. [`FlowKey::to_words`] gives the native-endian image of the struct as
//! `[u64; 45]` (what a C programmer would see through a union); it is built field by field
//! with `offset_of!`, because this crate forbids `unsafe`, and the optimiser turns it into
//! plain moves. [`FlowKey::from_words`] is its inverse, so a masked key can be built by
//! ANDing word arrays.
//!
//! ## Representation rules
//! * Addresses (MAC, IPv4, IPv6, ND target) are byte arrays in wire order, so that prefix
//!   masks and prefix tries work on bytes the same way for every family.
//! * Every other field is a host-order integer holding the value from the wire.
//! * A field that the packet does not have is zero. Nothing is ever "uninitialised".
//! * `vlan_tci[i]` is the tag's TCI with bit 0x1000 ([`VLAN_PRESENT`]) forced on: a present
//!   tag with VID 0 and an absent tag must differ, and OpenFlow matches on "present" rather
//!   than on the DEI bit, which is therefore not kept. `vlan_tpid[i]` is the tag's TPID
//!   (0x8100 or 0x88a8), zero when absent. Index 0 is the outer tag.
//! * ARP (and RARP) reuse the IPv4 fields: sender/target protocol address in
//!   `nw_src`/`nw_dst`, the opcode in `nw_proto` (only opcodes 1..=255 are representable;
//!   larger ones read as 0), sender/target hardware address in `arp_sha`/`arp_tha`.
//! * ICMPv4 and ICMPv6 put the type in `tp_src` and the code in `tp_dst`. Neighbor
//!   Solicitation/Advertisement put the target in `nd_target` and the source/target
//!   link-layer address options in `arp_sha`/`arp_tha` (the fields ARP uses, since a packet
//!   is never both).
//! * `tun_src`/`tun_dst` are the outer IPv4 addresses of a packet a tunnel port received
//!   (the OpenFlow module sets them from the packet's tunnel metadata; the extractor never
//!   does). They sit in what were spare words of the L2 and L4 stages, so the key did not
//!   grow and bridges without tunnels pay nothing for them. An IPv6 underlay's outer
//!   addresses go to `tun_ipv6_src`/`tun_ipv6_dst` instead (OVS's `flow_tnl` has both pairs,
//!   and a packet uses one): `tun_src`/`tun_dst` are then zero.
//! * `nw_tos` is the whole IPv4 TOS / IPv6 traffic class byte: DSCP in the top six bits, ECN
//!   in the bottom two.
//! * `nw_frag` is [`NW_FRAG_ANY`] for any fragment (IPv4 MF or non-zero offset; IPv6 any
//!   Fragment header) plus [`NW_FRAG_LATER`] when the offset is non-zero.
//! * `ipv6_exthdr` holds the OpenFlow IPV6_EXTHDR pseudo-field bits (`EXTHDR_*`).
//!
//! ## What the extractor parses
//! Ethernet II; 802.3 frames (type/length below 0x600) become `dl_type` [`DL_TYPE_NONE`]
//! unless they carry an LLC/SNAP header with a zero OUI, whose EtherType is then used; up to
//! two VLAN tags (0x8100 or 0x88a8, in any combination), or fewer under a VLAN limit
//! ([`set_vlan_limit`], OVS's `vlan-limit`: a tag beyond it is payload); MPLS (0x8847/0x8848) stacks, of
//! which the first four entries are kept and nothing beneath is looked at (a label stack
//! says nothing about what it carries); ARP/RARP for Ethernet/IPv4; IPv4 with or without
//! options; IPv6 with the Hop-by-Hop, Routing, Destination Options, Fragment and
//! Authentication headers (ESP and No Next Header end the chain); TCP, UDP, SCTP, ICMPv4 and
//! ICMPv6 including Neighbor Discovery options. Later fragments get no L4 fields.
//!
//! ## Malformed input
//! Every read is a checked `get` of a fixed-size chunk; nothing indexes a slice by a value
//! derived from the packet, so no byte sequence can make the extractor panic. When a header
//! is truncated or fails a sanity check, parsing stops *at that layer* and the layers
//! already parsed stay filled in: a frame with a short IPv4 header has its MACs and
//! `dl_type` but no L3 fields. IPv4 and IPv6 headers whose length fields claim more bytes
//! than the frame has are rejected as a whole (the frame was cut short); bytes past the IP
//! length (Ethernet padding) are ignored for L4. A truncated IPv6 extension header keeps
//! the fixed IPv6 fields, reports the header's type in `nw_proto` and sets no L4 fields.
//! Malformed ND options clear all three ND fields but keep the ICMPv6 type and code. No
//! checksum is verified: a switch forwards what it is given.
//!
//! ## Cost
//! No allocation, no loops except over VLAN tags (two at most), MPLS entries (four at most),
//! IPv6 extension headers and ND options (bounded by the frame length). The key is reset
//! with two runs of inline vector stores (the words before the ct block, then the ct and
//! tunnel blocks), not a call to memset. The common frame (untagged Ethernet II, IPv4
//! without options, not a fragment) takes a fast path: one length check, then reads at
//! fixed offsets; every other frame takes the general layer-by-layer parse, and a property
//! test and the fuzz target check that both give the same key and offsets on any frame. A
//! key is `Copy` and `Send + Sync`; extraction is a pure function.

use core::fmt;
use core::mem::{offset_of, size_of};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicUsize, Ordering};

mod display;
mod extract;
mod words;
pub use self::extract::*;
pub use self::words::*;

/// Size of a [`FlowKey`] in bytes.
pub const FLOW_KEY_SIZE: usize = 360;
/// Size of a [`FlowKey`] in 64-bit words.
pub const FLOW_KEY_WORDS: usize = FLOW_KEY_SIZE / 8;
/// Number of pipeline registers (`reg0`..`reg15`).
pub const N_REGS: usize = 16;
/// Exclusive end, in words, of each lookup stage: metadata, L2, L3, L4.
pub const STAGE_END_WORDS: [usize; 6] = [12, 18, 25, 30, 38, 45];
/// `tun_flags` bit: the tunnel header's OAM bit (Geneve's O); the one OpenFlow matches and sets.
pub const TUN_F_OAM: u16 = 1;
/// `tun_flags` bit: the outer IPv4 header had Don't Fragment set.
pub const TUN_F_DF: u16 = 2;
/// `tun_flags` bit: the outer header carried a checksum.
pub const TUN_F_CSUM: u16 = 4;
/// `tun_flags` bit: the tunnel header carried a key (VXLAN and Geneve always do).
pub const TUN_F_KEY: u16 = 8;
/// First word of the tunnel-options block; zero for every packet without tunnel options.
pub const TUN_OPTS_WORDS_START: usize = 38;
/// First word of the IPv6 tunnel addresses; zero for every packet without an IPv6 underlay.
pub const TUN_IPV6_WORDS_START: usize = 41;
/// Bytes of tunnel option values the key holds (see the module documentation).
pub const TUN_OPTS_LEN: usize = 16;
/// First word of the connection-tracking block; words from here on are zero for every
/// packet whose `recirc_id` is 0 (see the module documentation).
pub const CT_WORDS_START: usize = 30;

/// `vlan_tci` bit that marks a tag as present (the DEI/CFI position, as OpenFlow does).
pub const VLAN_PRESENT: u16 = 0x1000;
/// `nw_frag`: the packet is a fragment.
pub const NW_FRAG_ANY: u8 = 0x01;
/// `nw_frag`: the packet is a fragment other than the first.
pub const NW_FRAG_LATER: u8 = 0x02;

/// `ipv6_exthdr`: a No Next Header value was met.
pub const EXTHDR_NONEXT: u16 = 1 << 0;
/// `ipv6_exthdr`: an Encapsulating Security Payload header is present.
pub const EXTHDR_ESP: u16 = 1 << 1;
/// `ipv6_exthdr`: an Authentication header is present.
pub const EXTHDR_AUTH: u16 = 1 << 2;
/// `ipv6_exthdr`: one or two Destination Options headers are present.
pub const EXTHDR_DEST: u16 = 1 << 3;
/// `ipv6_exthdr`: a Fragment header is present.
pub const EXTHDR_FRAG: u16 = 1 << 4;
/// `ipv6_exthdr`: a Routing header is present.
pub const EXTHDR_ROUTER: u16 = 1 << 5;
/// `ipv6_exthdr`: a Hop-by-Hop Options header is present.
pub const EXTHDR_HOP: u16 = 1 << 6;
/// `ipv6_exthdr`: some extension header appeared more often than RFC 8200 allows.
pub const EXTHDR_UNREP: u16 = 1 << 7;
/// `ipv6_exthdr`: extension headers appeared out of RFC 8200's recommended order.
pub const EXTHDR_UNSEQ: u16 = 1 << 8;

/// `dl_type` of an 802.3 frame without an Ethernet SNAP header.
pub const DL_TYPE_NONE: u16 = 0x05ff;
/// EtherType IPv4.
pub const ETH_TYPE_IPV4: u16 = 0x0800;
/// EtherType ARP.
pub const ETH_TYPE_ARP: u16 = 0x0806;
/// EtherType RARP.
pub const ETH_TYPE_RARP: u16 = 0x8035;
/// EtherType IPv6.
pub const ETH_TYPE_IPV6: u16 = 0x86dd;
/// EtherType 802.1Q customer VLAN tag.
pub const ETH_TYPE_VLAN: u16 = 0x8100;
/// EtherType 802.1ad service VLAN tag.
pub const ETH_TYPE_VLAN_8021AD: u16 = 0x88a8;
/// EtherType MPLS unicast.
pub const ETH_TYPE_MPLS: u16 = 0x8847;
/// EtherType MPLS multicast.
pub const ETH_TYPE_MPLS_MCAST: u16 = 0x8848;
/// EtherType PBB (802.1ah backbone service instance tag).
pub const ETH_TYPE_PBB: u16 = 0x88e7;

// IP protocol numbers the extractor knows.
/// IPv6 Hop-by-Hop Options.
pub const IPPROTO_HOPOPTS: u8 = 0;
/// ICMP for IPv4.
pub const IPPROTO_ICMP: u8 = 1;
/// TCP.
pub const IPPROTO_TCP: u8 = 6;
/// UDP.
pub const IPPROTO_UDP: u8 = 17;
/// IPv6 Routing header.
pub const IPPROTO_ROUTING: u8 = 43;
/// IPv6 Fragment header.
pub const IPPROTO_FRAGMENT: u8 = 44;
/// Encapsulating Security Payload.
pub const IPPROTO_ESP: u8 = 50;
/// Authentication Header.
pub const IPPROTO_AH: u8 = 51;
/// ICMPv6.
pub const IPPROTO_ICMPV6: u8 = 58;
/// IPv6 No Next Header.
pub const IPPROTO_NONE: u8 = 59;
/// IPv6 Destination Options.
pub const IPPROTO_DSTOPTS: u8 = 60;
/// SCTP.
pub const IPPROTO_SCTP: u8 = 132;

/// ICMPv6 Neighbor Solicitation.
pub const ICMPV6_ND_NS: u8 = 135;
/// ICMPv6 Neighbor Advertisement.
pub const ICMPV6_ND_NA: u8 = 136;

/// Everything a packet can be matched on. See the module documentation for the layout and
/// the representation rules; the `pad_*` fields are always zero.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FlowKey {
    // ---- stage 0: metadata (words 0..12) ----
    /// Ingress port number.
    pub in_port: u32,
    /// Recirculation id (0 for a packet seen for the first time).
    pub recirc_id: u32,
    /// Packet mark (skb mark / OpenFlow pkt_mark).
    pub pkt_mark: u32,
    /// Datapath-computed hash, for select groups after recirculation.
    pub dp_hash: u32,
    /// OpenFlow metadata register.
    pub metadata: u64,
    /// Tunnel ID (VXLAN VNI, Geneve VNI, ...); 0 for packets that did not arrive by tunnel.
    pub tunnel_id: u64,
    /// The OpenFlow pipeline's Nicira registers `reg0`..`reg15` (zero on every received
    /// packet; set and matched within the pipeline). OpenFlow's wider views are pairs and
    /// quads of them: `xreg N` is `regs[2N] << 32 | regs[2N+1]`, `xxreg N` is
    /// `regs[4N..4N+4]`, most significant first.
    pub regs: [u32; N_REGS],

    // ---- stage 1: L2 (words 12..18) ----
    /// Ethernet destination.
    pub dl_dst: [u8; 6],
    /// Ethernet source.
    pub dl_src: [u8; 6],
    /// TPID of the outer \[0] and inner \[1] VLAN tag; 0 when absent.
    pub vlan_tpid: [u16; 2],
    /// TCI of the outer \[0] and inner \[1] VLAN tag with [`VLAN_PRESENT`] set; 0 when absent.
    pub vlan_tci: [u16; 2],
    /// EtherType after any VLAN tags (or [`DL_TYPE_NONE`]); 0 for a frame under 14 bytes.
    pub dl_type: u16,
    /// Number of valid entries in `mpls_lse`.
    pub mpls_n: u8,
    /// Always zero.
    pub pad_l2: u8,
    /// The top MPLS label stack entries, outermost first, as on the wire (label, TC, S, TTL).
    pub mpls_lse: [u32; 4],
    /// PBB I-SID (24 bits) of an 802.1ah frame (`dl_type` 0x88e7).
    pub pbb_isid: u32,
    /// Outer IPv4 source of a tunnelled packet (`tun_src`); zero otherwise. Kept in the L2
    /// stage's spare word so the key keeps its size.
    pub tun_src: [u8; 4],

    // ---- stage 2: L3 (words 18..25) ----
    /// IPv4 source, or ARP sender protocol address.
    pub nw_src: [u8; 4],
    /// IPv4 destination, or ARP target protocol address.
    pub nw_dst: [u8; 4],
    /// IPv6 source.
    pub ipv6_src: [u8; 16],
    /// IPv6 destination.
    pub ipv6_dst: [u8; 16],
    /// IPv6 flow label (20 bits).
    pub ipv6_label: u32,
    /// IP protocol / final IPv6 next header, or the ARP opcode.
    pub nw_proto: u8,
    /// IPv4 TOS or IPv6 traffic class (DSCP << 2 | ECN).
    pub nw_tos: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub nw_ttl: u8,
    /// [`NW_FRAG_ANY`] | [`NW_FRAG_LATER`].
    pub nw_frag: u8,
    /// OpenFlow IPV6_EXTHDR bits (`EXTHDR_*`).
    pub ipv6_exthdr: u16,
    /// Flags of a tunnelled packet (`tun_flags`) in OVS's layout ([`TUN_F_OAM`] the one
    /// OpenFlow sees, then [`TUN_F_DF`], [`TUN_F_CSUM`], [`TUN_F_KEY`]); zero otherwise.
    /// Kept, with the group policy fields, in the L3 stage's spare bytes.
    pub tun_flags: u16,
    /// VXLAN Group Policy ID of a tunnelled packet (`tun_gbp_id`); zero otherwise.
    pub tun_gbp_id: u16,
    /// VXLAN Group Policy flags (`tun_gbp_flags`: 0x40 "don't learn", 0x08 "policy
    /// applied"); zero otherwise.
    pub tun_gbp_flags: u8,
    /// Always zero.
    pub pad_l3: u8,

    // ---- stage 3: L4 (words 25..30) ----
    /// TCP/UDP/SCTP source port, or ICMP type.
    pub tp_src: u16,
    /// TCP/UDP/SCTP destination port, or ICMP code.
    pub tp_dst: u16,
    /// The low 12 bits of the TCP header's offset/flags word.
    pub tcp_flags: u16,
    /// Always zero.
    pub pad_l4: u16,
    /// ICMPv6 ND target address.
    pub nd_target: [u8; 16],
    /// ARP sender hardware address, or ND source link-layer address option.
    pub arp_sha: [u8; 6],
    /// ARP target hardware address, or ND target link-layer address option.
    pub arp_tha: [u8; 6],
    /// Outer IPv4 destination of a tunnelled packet (`tun_dst`); zero otherwise. Kept in the
    /// L4 stage's spare word so the key keeps its size.
    pub tun_dst: [u8; 4],

    // ---- stage 4: connection tracking (words 30..38) ----
    /// Connection tracking state bits (`CS_*`), set by the datapath's `ct` action.
    pub ct_state: u8,
    /// IP protocol of the connection's original direction.
    pub ct_nw_proto: u8,
    /// Conntrack zone the packet was last tracked in.
    pub ct_zone: u16,
    /// The connection's mark.
    pub ct_mark: u32,
    /// Transport source of the connection's original direction (ICMP: type).
    pub ct_tp_src: u16,
    /// Transport destination of the connection's original direction (ICMP: code).
    pub ct_tp_dst: u16,
    /// Always zero.
    pub pad_ct: u32,
    /// The connection's 128-bit label, big-endian (wire order).
    pub ct_label: [u8; 16],
    /// Original-direction source address: an IPv4 address in the first 4 bytes (the rest
    /// zero), or an IPv6 address.
    pub ct_src: [u8; 16],
    /// Original-direction destination address, as `ct_src`.
    pub ct_dst: [u8; 16],

    // ---- stage 5: tunnel options and IPv6 outer addresses (words 38..45) ----
    /// Which `tun_metadata<N>` fields the packet has: bit N. Zero for every packet that did
    /// not arrive with (or was not given) a mapped tunnel option.
    pub tun_opts_present: u64,
    /// The values of the present options, each at the place the bridge's TLV table gives
    /// its index (big-endian, right-aligned in its length).
    pub tun_opts: [u8; TUN_OPTS_LEN],
    /// Outer IPv6 source of a packet tunnelled over IPv6 (`tun_ipv6_src`); zero otherwise.
    pub tun_ipv6_src: [u8; 16],
    /// Outer IPv6 destination of a packet tunnelled over IPv6 (`tun_ipv6_dst`); zero
    /// otherwise.
    pub tun_ipv6_dst: [u8; 16],
}

const _: () = assert!(size_of::<FlowKey>() == FLOW_KEY_SIZE);
const _: () = assert!(FLOW_KEY_WORDS * 8 == FLOW_KEY_SIZE);
const _: () = assert!(core::mem::align_of::<FlowKey>() == 8);
const _: () = assert!(offset_of!(FlowKey, dl_dst) == STAGE_END_WORDS[0] * 8);
const _: () = assert!(offset_of!(FlowKey, nw_src) == STAGE_END_WORDS[1] * 8);
const _: () = assert!(offset_of!(FlowKey, tp_src) == STAGE_END_WORDS[2] * 8);
const _: () = assert!(offset_of!(FlowKey, ct_state) == STAGE_END_WORDS[3] * 8);
const _: () = assert!(STAGE_END_WORDS[3] == CT_WORDS_START);
const _: () = assert!(offset_of!(FlowKey, tun_opts_present) == STAGE_END_WORDS[4] * 8);
const _: () = assert!(STAGE_END_WORDS[4] == TUN_OPTS_WORDS_START);
const _: () = assert!(offset_of!(FlowKey, tun_ipv6_src) == TUN_IPV6_WORDS_START * 8);
const _: () = assert!(STAGE_END_WORDS[5] == FLOW_KEY_WORDS);

/// Where the headers of an extracted frame start (byte offsets into the frame), for actions
/// that rewrite fields and for checksum completion. `None` when the layer was not reached.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Offsets {
    /// First byte after the Ethernet header and VLAN tags (the MPLS stack, if any).
    pub l2_5: Option<u16>,
    /// Start of the IPv4/IPv6/ARP header.
    pub l3: Option<u16>,
    /// Start of whatever follows the IPv4 header or the IPv6 extension-header chain (TCP,
    /// UDP, SCTP, ICMP, ESP, ...); set only when the L3 header was accepted and the packet
    /// is not a later fragment.
    pub l4: Option<u16>,
}

#[cfg(test)]
mod tests;
