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
//! The struct is `#[repr(C)]`, 328 bytes, 8-byte aligned and free of compiler padding (the
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
//! | tunnel options | 38..41 | `tun_opts_present`, `tun_opts` (the `tun_metadata` fields)  |
//!
//! The connection-tracking block comes last on purpose. Only the datapath's `ct` action
//! fills it, and that action ends a pass: the packet continues under a fresh non-zero
//! `recirc_id`. So a key whose `recirc_id` is 0 has an all-zero ct block
//! ([`CT_WORDS_START`]..), and the exact-match cache hashes and compares only the words
//! before it for such keys: pipelines without `ct` pay nothing for it but the extractor's
//! reset of the extra 64 bytes. The original tuple keeps an IPv4 address in the first four
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
//! [`STAGE_END_WORDS`] records these boundaries and a unit test pins every field offset, so a
//! change to the struct that moves a field across a stage or introduces padding fails the
//! build or the tests. [`FlowKey::to_words`] gives the native-endian image of the struct as
//! `[u64; 41]` (what a C programmer would see through a union); it is built field by field
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
//!   grow and bridges without tunnels pay nothing for them.
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
//! with one 328-byte store. A key is `Copy` and `Send + Sync`; extraction is a pure function.

use core::fmt;
use core::mem::{offset_of, size_of};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Size of a [`FlowKey`] in bytes.
pub const FLOW_KEY_SIZE: usize = 328;
/// Size of a [`FlowKey`] in 64-bit words.
pub const FLOW_KEY_WORDS: usize = FLOW_KEY_SIZE / 8;
/// Number of pipeline registers (`reg0`..`reg15`).
pub const N_REGS: usize = 16;
/// Exclusive end, in words, of each lookup stage: metadata, L2, L3, L4.
pub const STAGE_END_WORDS: [usize; 6] = [12, 18, 25, 30, 38, 41];
/// First word of the tunnel-options block; zero for every packet without tunnel options.
pub const TUN_OPTS_WORDS_START: usize = 38;
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
    /// Always zero.
    pub pad_l3: [u8; 6],

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

    // ---- stage 5: tunnel options (words 38..41) ----
    /// Which `tun_metadata<N>` fields the packet has: bit N. Zero for every packet that did
    /// not arrive with (or was not given) a mapped tunnel option.
    pub tun_opts_present: u64,
    /// The values of the present options, each at the place the bridge's TLV table gives
    /// its index (big-endian, right-aligned in its length).
    pub tun_opts: [u8; TUN_OPTS_LEN],
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

// ---------------------------------------------------------------------------------------
// Word image
// ---------------------------------------------------------------------------------------

#[inline(always)]
fn put<const N: usize>(b: &mut [u8; FLOW_KEY_SIZE], at: usize, v: [u8; N]) {
    if let Some(dst) = b.get_mut(at..at + N) {
        dst.copy_from_slice(&v);
    }
}

#[inline(always)]
fn arr<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    match b.get(at..).and_then(|s| s.first_chunk::<N>()) {
        Some(c) => *c,
        None => [0; N],
    }
}

#[inline(always)]
fn pair16(v: [u16; 2]) -> [u8; 4] {
    let (a, b) = (v[0].to_ne_bytes(), v[1].to_ne_bytes());
    [a[0], a[1], b[0], b[1]]
}

#[inline(always)]
fn unpair16(b: [u8; 4]) -> [u16; 2] {
    [
        u16::from_ne_bytes([b[0], b[1]]),
        u16::from_ne_bytes([b[2], b[3]]),
    ]
}

impl FlowKey {
    /// The all-zero key.
    pub const ZERO: FlowKey = FlowKey {
        in_port: 0,
        recirc_id: 0,
        pkt_mark: 0,
        dp_hash: 0,
        metadata: 0,
        tunnel_id: 0,
        regs: [0; N_REGS],
        dl_dst: [0; 6],
        dl_src: [0; 6],
        vlan_tpid: [0; 2],
        vlan_tci: [0; 2],
        dl_type: 0,
        mpls_n: 0,
        pad_l2: 0,
        mpls_lse: [0; 4],
        pbb_isid: 0,
        tun_src: [0; 4],
        nw_src: [0; 4],
        nw_dst: [0; 4],
        ipv6_src: [0; 16],
        ipv6_dst: [0; 16],
        ipv6_label: 0,
        nw_proto: 0,
        nw_tos: 0,
        nw_ttl: 0,
        nw_frag: 0,
        ipv6_exthdr: 0,
        pad_l3: [0; 6],
        tp_src: 0,
        tp_dst: 0,
        tcp_flags: 0,
        pad_l4: 0,
        nd_target: [0; 16],
        arp_sha: [0; 6],
        arp_tha: [0; 6],
        tun_dst: [0; 4],
        ct_state: 0,
        ct_nw_proto: 0,
        ct_zone: 0,
        ct_mark: 0,
        ct_tp_src: 0,
        ct_tp_dst: 0,
        pad_ct: 0,
        ct_label: [0; 16],
        ct_src: [0; 16],
        ct_dst: [0; 16],
        tun_opts_present: 0,
        tun_opts: [0; TUN_OPTS_LEN],
    };

    /// The native-endian byte image of the key, identical to its in-memory representation.
    #[inline]
    pub fn to_bytes(&self) -> [u8; FLOW_KEY_SIZE] {
        // No `..`: adding a field must break this until it is placed here.
        let FlowKey {
            in_port,
            recirc_id,
            pkt_mark,
            dp_hash,
            metadata,
            tunnel_id,
            regs,
            dl_dst,
            dl_src,
            vlan_tpid,
            vlan_tci,
            dl_type,
            mpls_n,
            pad_l2,
            mpls_lse,
            pbb_isid,
            tun_src,
            nw_src,
            nw_dst,
            ipv6_src,
            ipv6_dst,
            ipv6_label,
            nw_proto,
            nw_tos,
            nw_ttl,
            nw_frag,
            ipv6_exthdr,
            pad_l3,
            tp_src,
            tp_dst,
            tcp_flags,
            pad_l4,
            nd_target,
            arp_sha,
            arp_tha,
            tun_dst,
            ct_state,
            ct_nw_proto,
            ct_zone,
            ct_mark,
            ct_tp_src,
            ct_tp_dst,
            pad_ct,
            ct_label,
            ct_src,
            ct_dst,
            tun_opts_present,
            tun_opts,
        } = *self;
        let mut b = [0u8; FLOW_KEY_SIZE];
        macro_rules! o {
            ($f:ident) => {
                offset_of!(FlowKey, $f)
            };
        }
        put(&mut b, o!(in_port), in_port.to_ne_bytes());
        put(&mut b, o!(recirc_id), recirc_id.to_ne_bytes());
        put(&mut b, o!(pkt_mark), pkt_mark.to_ne_bytes());
        put(&mut b, o!(dp_hash), dp_hash.to_ne_bytes());
        put(&mut b, o!(metadata), metadata.to_ne_bytes());
        put(&mut b, o!(tunnel_id), tunnel_id.to_ne_bytes());
        for (i, r) in regs.iter().enumerate() {
            put(&mut b, o!(regs) + 4 * i, r.to_ne_bytes());
        }
        put(&mut b, o!(dl_dst), dl_dst);
        put(&mut b, o!(dl_src), dl_src);
        put(&mut b, o!(vlan_tpid), pair16(vlan_tpid));
        put(&mut b, o!(vlan_tci), pair16(vlan_tci));
        put(&mut b, o!(dl_type), dl_type.to_ne_bytes());
        put(&mut b, o!(mpls_n), [mpls_n]);
        put(&mut b, o!(pad_l2), [pad_l2]);
        for (i, lse) in mpls_lse.iter().enumerate() {
            put(&mut b, o!(mpls_lse) + 4 * i, lse.to_ne_bytes());
        }
        put(&mut b, o!(pbb_isid), pbb_isid.to_ne_bytes());
        put(&mut b, o!(tun_src), tun_src);
        put(&mut b, o!(nw_src), nw_src);
        put(&mut b, o!(nw_dst), nw_dst);
        put(&mut b, o!(ipv6_src), ipv6_src);
        put(&mut b, o!(ipv6_dst), ipv6_dst);
        put(&mut b, o!(ipv6_label), ipv6_label.to_ne_bytes());
        put(&mut b, o!(nw_proto), [nw_proto]);
        put(&mut b, o!(nw_tos), [nw_tos]);
        put(&mut b, o!(nw_ttl), [nw_ttl]);
        put(&mut b, o!(nw_frag), [nw_frag]);
        put(&mut b, o!(ipv6_exthdr), ipv6_exthdr.to_ne_bytes());
        put(&mut b, o!(pad_l3), pad_l3);
        put(&mut b, o!(tp_src), tp_src.to_ne_bytes());
        put(&mut b, o!(tp_dst), tp_dst.to_ne_bytes());
        put(&mut b, o!(tcp_flags), tcp_flags.to_ne_bytes());
        put(&mut b, o!(pad_l4), pad_l4.to_ne_bytes());
        put(&mut b, o!(nd_target), nd_target);
        put(&mut b, o!(arp_sha), arp_sha);
        put(&mut b, o!(arp_tha), arp_tha);
        put(&mut b, o!(tun_dst), tun_dst);
        put(&mut b, o!(ct_state), [ct_state]);
        put(&mut b, o!(ct_nw_proto), [ct_nw_proto]);
        put(&mut b, o!(ct_zone), ct_zone.to_ne_bytes());
        put(&mut b, o!(ct_mark), ct_mark.to_ne_bytes());
        put(&mut b, o!(ct_tp_src), ct_tp_src.to_ne_bytes());
        put(&mut b, o!(ct_tp_dst), ct_tp_dst.to_ne_bytes());
        put(&mut b, o!(pad_ct), pad_ct.to_ne_bytes());
        put(&mut b, o!(ct_label), ct_label);
        put(&mut b, o!(ct_src), ct_src);
        put(&mut b, o!(ct_dst), ct_dst);
        put(&mut b, o!(tun_opts_present), tun_opts_present.to_ne_bytes());
        put(&mut b, o!(tun_opts), tun_opts);
        b
    }

    /// Inverse of [`FlowKey::to_bytes`].
    #[inline]
    pub fn from_bytes(b: &[u8; FLOW_KEY_SIZE]) -> FlowKey {
        macro_rules! g {
            ($f:ident) => {
                arr(b, offset_of!(FlowKey, $f))
            };
        }
        let lse = |i: usize| u32::from_ne_bytes(arr(b, offset_of!(FlowKey, mpls_lse) + 4 * i));
        let reg = |i: usize| u32::from_ne_bytes(arr(b, offset_of!(FlowKey, regs) + 4 * i));
        let [mpls_n] = g!(mpls_n);
        let [pad_l2] = g!(pad_l2);
        let [nw_proto] = g!(nw_proto);
        let [nw_tos] = g!(nw_tos);
        let [nw_ttl] = g!(nw_ttl);
        let [nw_frag] = g!(nw_frag);
        let [ct_state] = g!(ct_state);
        let [ct_nw_proto] = g!(ct_nw_proto);
        FlowKey {
            in_port: u32::from_ne_bytes(g!(in_port)),
            recirc_id: u32::from_ne_bytes(g!(recirc_id)),
            pkt_mark: u32::from_ne_bytes(g!(pkt_mark)),
            dp_hash: u32::from_ne_bytes(g!(dp_hash)),
            metadata: u64::from_ne_bytes(g!(metadata)),
            tunnel_id: u64::from_ne_bytes(g!(tunnel_id)),
            regs: core::array::from_fn(reg),
            dl_dst: g!(dl_dst),
            dl_src: g!(dl_src),
            vlan_tpid: unpair16(g!(vlan_tpid)),
            vlan_tci: unpair16(g!(vlan_tci)),
            dl_type: u16::from_ne_bytes(g!(dl_type)),
            mpls_n,
            pad_l2,
            mpls_lse: [lse(0), lse(1), lse(2), lse(3)],
            pbb_isid: u32::from_ne_bytes(g!(pbb_isid)),
            tun_src: g!(tun_src),
            nw_src: g!(nw_src),
            nw_dst: g!(nw_dst),
            ipv6_src: g!(ipv6_src),
            ipv6_dst: g!(ipv6_dst),
            ipv6_label: u32::from_ne_bytes(g!(ipv6_label)),
            nw_proto,
            nw_tos,
            nw_ttl,
            nw_frag,
            ipv6_exthdr: u16::from_ne_bytes(g!(ipv6_exthdr)),
            pad_l3: g!(pad_l3),
            tp_src: u16::from_ne_bytes(g!(tp_src)),
            tp_dst: u16::from_ne_bytes(g!(tp_dst)),
            tcp_flags: u16::from_ne_bytes(g!(tcp_flags)),
            pad_l4: u16::from_ne_bytes(g!(pad_l4)),
            nd_target: g!(nd_target),
            arp_sha: g!(arp_sha),
            arp_tha: g!(arp_tha),
            tun_dst: g!(tun_dst),
            ct_state,
            ct_nw_proto,
            ct_zone: u16::from_ne_bytes(g!(ct_zone)),
            ct_mark: u32::from_ne_bytes(g!(ct_mark)),
            ct_tp_src: u16::from_ne_bytes(g!(ct_tp_src)),
            ct_tp_dst: u16::from_ne_bytes(g!(ct_tp_dst)),
            pad_ct: u32::from_ne_bytes(g!(pad_ct)),
            ct_label: g!(ct_label),
            ct_src: g!(ct_src),
            ct_dst: g!(ct_dst),
            tun_opts_present: u64::from_ne_bytes(g!(tun_opts_present)),
            tun_opts: g!(tun_opts),
        }
    }

    /// The key as native-endian 64-bit words (its in-memory image).
    #[inline(always)]
    pub fn to_words(&self) -> [u64; FLOW_KEY_WORDS] {
        *self.as_words()
    }

    /// The key's in-memory image viewed as words, without copying. The struct is
    /// `#[repr(C)]`, 8-byte aligned and has no implicit padding (which `bytemuck`'s derive
    /// checks at compile time), so the view is exact.
    #[inline(always)]
    pub fn as_words(&self) -> &[u64; FLOW_KEY_WORDS] {
        bytemuck::cast_ref(self)
    }

    /// A word image viewed as a key, without copying (inverse of [`FlowKey::as_words`]).
    #[inline(always)]
    pub fn from_words_ref(w: &[u64; FLOW_KEY_WORDS]) -> &FlowKey {
        bytemuck::cast_ref(w)
    }

    /// Inverse of [`FlowKey::to_words`].
    #[inline(always)]
    pub fn from_words(w: &[u64; FLOW_KEY_WORDS]) -> FlowKey {
        *bytemuck::cast_ref(w)
    }

    /// This key with every bit that is zero in `mask` cleared.
    #[inline]
    pub fn masked(&self, mask: &FlowKey) -> FlowKey {
        let mut w = self.to_words();
        for (a, m) in w.iter_mut().zip(mask.to_words()) {
            *a &= m;
        }
        FlowKey::from_words(&w)
    }

    /// A fast 32-bit hash of the whole key; equal keys hash equally for the same `basis`.
    #[inline]
    pub fn hash(&self, basis: u32) -> u32 {
        hash_words(&self.to_words(), basis)
    }
}

/// Hashes a run of key words (a whole key, a masked key, or one stage of it).
///
/// Four independent lanes each absorb every fourth word: xor the word in, then a "folded"
/// multiply by an odd constant (the high and low halves of the 128-bit product xored
/// together), so the four multiplies overlap in the pipeline and every input bit, the top
/// ones included, reaches every output bit non-linearly. (A plain wrapping multiply would
/// let a flip of bit 63 pass through linearly and be cancelled by a flip in the next word.)
/// The lanes are then combined and pass a 64-bit avalanche finaliser. Not keyed against
/// adversaries beyond `basis`.
#[inline]
pub fn hash_words(words: &[u64], basis: u32) -> u32 {
    const M: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut lanes: [u64; 4] = [
        u64::from(basis) ^ 0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    ];
    let mut chunks = words.chunks_exact(4);
    #[inline(always)]
    fn absorb(lane: &mut u64, w: u64) {
        let p = u128::from(*lane ^ w) * u128::from(M);
        *lane = (p as u64) ^ ((p >> 64) as u64);
    }
    for c in &mut chunks {
        for (lane, &w) in lanes.iter_mut().zip(c) {
            absorb(lane, w);
        }
    }
    for (lane, &w) in lanes.iter_mut().zip(chunks.remainder()) {
        absorb(lane, w);
    }
    let mut h = lanes[0]
        ^ lanes[1].rotate_left(16)
        ^ lanes[2].rotate_left(32)
        ^ lanes[3].rotate_left(48)
        ^ (words.len() as u64);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    (h ^ (h >> 32)) as u32
}

// ---------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------

/// A fixed-size view of `N` bytes at `at`, or `None` if the buffer is too short.
#[inline(always)]
fn chunk<const N: usize>(b: &[u8], at: usize) -> Option<&[u8; N]> {
    b.get(at..)?.first_chunk::<N>()
}

#[inline(always)]
fn be16(hi: u8, lo: u8) -> u16 {
    u16::from_be_bytes([hi, lo])
}

#[inline(always)]
fn off16(at: usize) -> Option<u16> {
    u16::try_from(at).ok()
}

/// Extracts the flow key of `frame`, received on `in_port`. Never panics.
#[inline]
pub fn extract(frame: &[u8], in_port: u32) -> FlowKey {
    let mut key = FlowKey::ZERO;
    extract_into(&mut key, frame, in_port);
    key
}

/// Overwrites `key` (metadata included) with the flow key of `frame`, received on
/// `in_port`, and returns where its headers start. Never panics.
#[inline]
pub fn extract_into(key: &mut FlowKey, frame: &[u8], in_port: u32) -> Offsets {
    extract_into_with(key, frame, in_port, vlan_limit())
}

/// How many VLAN tags the extractor parses by default (see [`set_vlan_limit`]).
static VLAN_LIMIT: AtomicUsize = AtomicUsize::new(MAX_VLAN_TAGS);

/// The most VLAN tags a flow key holds.
pub const MAX_VLAN_TAGS: usize = 2;

/// Sets how many VLAN tags [`extract_into`] parses, process-wide, as OVS's
/// `other_config:vlan-limit` does: `n` tags (at most [`MAX_VLAN_TAGS`]), `0` for as many as
/// the key holds. Beyond the limit a tag is payload: `dl_type` is its TPID and nothing after
/// it is parsed, so rules matching L3/L4 fields do not match. The library default is
/// [`MAX_VLAN_TAGS`]; the daemon sets OVS's default, 1. Whoever changes it must flush caches
/// keyed by the old parse.
pub fn set_vlan_limit(n: usize) {
    let n = if n == 0 {
        MAX_VLAN_TAGS
    } else {
        n.min(MAX_VLAN_TAGS)
    };
    VLAN_LIMIT.store(n, Ordering::Relaxed);
}

/// The current limit (see [`set_vlan_limit`]).
#[inline(always)]
pub fn vlan_limit() -> usize {
    VLAN_LIMIT.load(Ordering::Relaxed)
}

/// [`extract_into`] with an explicit VLAN tag limit (1 or 2).
pub fn extract_into_with(
    key: &mut FlowKey,
    frame: &[u8],
    in_port: u32,
    max_tags: usize,
) -> Offsets {
    // Clear the key as whole words (a few vector stores), not field by field. The
    // connection-tracking and tunnel-options blocks are cleared apart, and only when they
    // are not already zero (they almost never are): one 328-byte clear compiles to a call
    // to memset, the 240 bytes before them to inline stores.
    let w = bytemuck::cast_mut::<FlowKey, [u64; FLOW_KEY_WORDS]>(key);
    let (head, ct) = w.split_at_mut(CT_WORDS_START);
    head.fill(0);
    if ct.iter().any(|x| *x != 0) {
        ct.fill(0);
    }
    key.in_port = in_port;
    let mut offs = Offsets::default();
    parse_l2(key, frame, &mut offs, max_tags.clamp(1, MAX_VLAN_TAGS));
    offs
}

#[inline(always)]
fn parse_l2(key: &mut FlowKey, frame: &[u8], offs: &mut Offsets, max_tags: usize) {
    let Some(eth) = chunk::<14>(frame, 0) else {
        return;
    };
    key.dl_dst = arr(eth, 0);
    key.dl_src = arr(eth, 6);
    let mut ty = be16(eth[12], eth[13]);
    // `at` is the offset of the type field just read; the payload starts at `at + 2`.
    let mut at = 12usize;
    for i in 0..max_tags {
        if ty != ETH_TYPE_VLAN && ty != ETH_TYPE_VLAN_8021AD {
            break;
        }
        // A tag counts only if its TCI and the following type field are both there.
        let Some(q) = chunk::<4>(frame, at + 2) else {
            break;
        };
        if let (Some(tpid), Some(tci)) = (key.vlan_tpid.get_mut(i), key.vlan_tci.get_mut(i)) {
            *tpid = ty;
            *tci = be16(q[0], q[1]) | VLAN_PRESENT;
        }
        ty = be16(q[2], q[3]);
        at += 4;
    }
    let mut l3 = at + 2;
    if ty < 0x600 {
        ty = DL_TYPE_NONE;
        if let Some(llc) = chunk::<8>(frame, l3) {
            if llc[..6] == [0xaa, 0xaa, 0x03, 0, 0, 0] {
                let snap = be16(llc[6], llc[7]);
                if snap >= 0x600 {
                    ty = snap;
                    l3 += 8;
                }
            }
        }
    }
    key.dl_type = ty;
    offs.l2_5 = off16(l3);
    match ty {
        ETH_TYPE_IPV4 => parse_ipv4(key, frame, l3, offs),
        ETH_TYPE_IPV6 => parse_ipv6(key, frame, l3, offs),
        ETH_TYPE_ARP | ETH_TYPE_RARP => parse_arp(key, frame, l3, offs),
        ETH_TYPE_MPLS | ETH_TYPE_MPLS_MCAST => parse_mpls(key, frame, l3),
        ETH_TYPE_PBB => {
            // 802.1ah I-TAG: PCP/DEI/UCA/reserved, then the 24-bit I-SID. Like MPLS, what
            // the backbone frame carries is not looked at.
            if let Some(t) = chunk::<4>(frame, l3) {
                key.pbb_isid = u32::from_be_bytes(*t) & 0x00ff_ffff;
            }
        }
        _ => {}
    }
}

#[inline(always)]
fn parse_mpls(key: &mut FlowKey, frame: &[u8], mut at: usize) {
    let mut n = 0u8;
    for slot in key.mpls_lse.iter_mut() {
        let Some(l) = chunk::<4>(frame, at) else {
            break;
        };
        let lse = u32::from_be_bytes(*l);
        *slot = lse;
        n += 1;
        at += 4;
        if lse & 0x100 != 0 {
            break;
        }
    }
    key.mpls_n = n;
}

#[inline(always)]
fn parse_arp(key: &mut FlowKey, frame: &[u8], at: usize, offs: &mut Offsets) {
    let Some(a) = chunk::<28>(frame, at) else {
        return;
    };
    // Ethernet hardware addresses and IPv4 protocol addresses only.
    if be16(a[0], a[1]) != 1 || be16(a[2], a[3]) != ETH_TYPE_IPV4 || a[4] != 6 || a[5] != 4 {
        return;
    }
    offs.l3 = off16(at);
    let op = be16(a[6], a[7]);
    key.nw_proto = if op <= 0xff { op as u8 } else { 0 };
    key.arp_sha = arr(a, 8);
    key.nw_src = arr(a, 14);
    key.arp_tha = arr(a, 18);
    key.nw_dst = arr(a, 24);
}

#[inline(always)]
fn parse_ipv4(key: &mut FlowKey, frame: &[u8], at: usize, offs: &mut Offsets) {
    let Some(h) = chunk::<20>(frame, at) else {
        return;
    };
    if h[0] >> 4 != 4 {
        return;
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(be16(h[2], h[3]));
    if ihl < 20 || total < ihl {
        return;
    }
    // The whole datagram must be present; anything after it is link-layer padding.
    let Some(dgram) = frame.get(at..).and_then(|d| d.get(..total)) else {
        return;
    };
    offs.l3 = off16(at);
    key.nw_src = arr(h, 12);
    key.nw_dst = arr(h, 16);
    key.nw_tos = h[1];
    key.nw_ttl = h[8];
    key.nw_proto = h[9];
    let frag = be16(h[6], h[7]);
    if frag & 0x3fff != 0 {
        key.nw_frag = NW_FRAG_ANY;
        if frag & 0x1fff != 0 {
            key.nw_frag |= NW_FRAG_LATER;
            return;
        }
    }
    let Some(l4) = dgram.get(ihl..) else {
        return;
    };
    offs.l4 = off16(at + ihl);
    parse_l4(key, l4, false);
}

/// Rank of an extension header in RFC 8200's recommended order, used for the UNSEQ/UNREP
/// bits: Hop-by-Hop, Destination Options (before Routing), Routing, Fragment, AH, ESP,
/// Destination Options (final).
const RANK_HOP: u8 = 0;
const RANK_DEST1: u8 = 1;
const RANK_ROUTER: u8 = 2;
const RANK_FRAG: u8 = 3;
const RANK_AUTH: u8 = 4;
const RANK_ESP: u8 = 5;
const RANK_DEST2: u8 = 6;

#[inline(always)]
fn parse_ipv6(key: &mut FlowKey, frame: &[u8], at: usize, offs: &mut Offsets) {
    let Some(h) = chunk::<40>(frame, at) else {
        return;
    };
    if h[0] >> 4 != 6 {
        return;
    }
    let plen = usize::from(be16(h[4], h[5]));
    // The whole payload must be present; anything after it is link-layer padding.
    let Some(payload) = frame.get(at + 40..).and_then(|p| p.get(..plen)) else {
        return;
    };
    offs.l3 = off16(at);
    let vtc = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    key.nw_tos = (vtc >> 20) as u8;
    key.ipv6_label = vtc & 0x000f_ffff;
    key.nw_ttl = h[7];
    key.ipv6_src = arr(h, 8);
    key.ipv6_dst = arr(h, 24);

    let mut nh = h[6];
    let mut p = 0usize; // offset into `payload`
    let mut bits = 0u16;
    let mut seen = 0u8; // one bit per rank
    let mut last_rank = 0u8;
    loop {
        let (bit, rank) = match nh {
            IPPROTO_HOPOPTS => (EXTHDR_HOP, RANK_HOP),
            IPPROTO_DSTOPTS => (
                EXTHDR_DEST,
                if last_rank <= RANK_DEST1 {
                    RANK_DEST1
                } else {
                    RANK_DEST2
                },
            ),
            IPPROTO_ROUTING => (EXTHDR_ROUTER, RANK_ROUTER),
            IPPROTO_FRAGMENT => (EXTHDR_FRAG, RANK_FRAG),
            IPPROTO_AH => (EXTHDR_AUTH, RANK_AUTH),
            IPPROTO_ESP => (EXTHDR_ESP, RANK_ESP),
            IPPROTO_NONE => {
                bits |= EXTHDR_NONEXT;
                break;
            }
            _ => break,
        };
        bits |= bit;
        if seen & (1 << rank) != 0 {
            bits |= EXTHDR_UNREP;
        }
        if rank < last_rank {
            bits |= EXTHDR_UNSEQ;
        }
        seen |= 1 << rank;
        last_rank = last_rank.max(rank);
        if nh == IPPROTO_ESP {
            // Everything after the SPI and sequence number is encrypted.
            break;
        }
        let Some(e) = chunk::<8>(payload, p) else {
            return finish_ipv6(key, nh, bits);
        };
        let len = match nh {
            IPPROTO_FRAGMENT => 8,
            IPPROTO_AH => (usize::from(e[1]) + 2) * 4,
            _ => (usize::from(e[1]) + 1) * 8,
        };
        if payload.len() - p < len {
            return finish_ipv6(key, nh, bits);
        }
        if nh == IPPROTO_FRAGMENT {
            key.nw_frag = NW_FRAG_ANY;
            if be16(e[2], e[3]) & 0xfff8 != 0 {
                key.nw_frag |= NW_FRAG_LATER;
                return finish_ipv6(key, e[0], bits);
            }
        }
        nh = e[0];
        p += len;
    }
    finish_ipv6(key, nh, bits);
    if let Some(l4) = payload.get(p..) {
        offs.l4 = off16(at + 40 + p);
        parse_l4(key, l4, true);
    }
}

#[inline(always)]
fn finish_ipv6(key: &mut FlowKey, nw_proto: u8, exthdr: u16) {
    key.nw_proto = nw_proto;
    key.ipv6_exthdr = exthdr;
}

#[inline(always)]
fn parse_l4(key: &mut FlowKey, l4: &[u8], v6: bool) {
    match key.nw_proto {
        IPPROTO_TCP => {
            if let Some(t) = chunk::<20>(l4, 0) {
                let doff = usize::from(t[12] >> 4) * 4;
                if doff >= 20 && doff <= l4.len() {
                    key.tp_src = be16(t[0], t[1]);
                    key.tp_dst = be16(t[2], t[3]);
                    key.tcp_flags = be16(t[12], t[13]) & 0x0fff;
                }
            }
        }
        IPPROTO_UDP => {
            if let Some(u) = chunk::<8>(l4, 0) {
                key.tp_src = be16(u[0], u[1]);
                key.tp_dst = be16(u[2], u[3]);
            }
        }
        IPPROTO_SCTP => {
            if let Some(s) = chunk::<12>(l4, 0) {
                key.tp_src = be16(s[0], s[1]);
                key.tp_dst = be16(s[2], s[3]);
            }
        }
        IPPROTO_ICMP if !v6 => {
            if let Some(i) = chunk::<8>(l4, 0) {
                key.tp_src = u16::from(i[0]);
                key.tp_dst = u16::from(i[1]);
            }
        }
        IPPROTO_ICMPV6 if v6 => {
            if let Some(i) = chunk::<8>(l4, 0) {
                key.tp_src = u16::from(i[0]);
                key.tp_dst = u16::from(i[1]);
                if i[1] == 0 && (i[0] == ICMPV6_ND_NS || i[0] == ICMPV6_ND_NA) {
                    parse_nd(key, l4);
                }
            }
        }
        _ => {}
    }
}

/// Neighbor Solicitation/Advertisement: the target address and the link-layer address
/// options. Any malformation (truncated target, zero-length or overlong option, a repeated
/// SLL or TLL) leaves all three ND fields zero.
#[inline(never)]
fn parse_nd(key: &mut FlowKey, l4: &[u8]) {
    let Some(target) = chunk::<16>(l4, 8) else {
        return;
    };
    let mut sll: Option<[u8; 6]> = None;
    let mut tll: Option<[u8; 6]> = None;
    let mut p = 24usize;
    // Options come in units of 8 bytes; a tail shorter than that is ignored.
    while let Some(o) = chunk::<8>(l4, p) {
        let len = usize::from(o[1]) * 8;
        if len == 0 || len > l4.len() - p {
            return;
        }
        if len == 8 {
            let slot = match o[0] {
                1 => &mut sll,
                2 => &mut tll,
                _ => {
                    p += len;
                    continue;
                }
            };
            if slot.is_some() {
                return;
            }
            *slot = Some(arr(o, 2));
        }
        p += len;
    }
    key.nd_target = *target;
    key.arp_sha = sll.unwrap_or_default();
    key.arp_tha = tll.unwrap_or_default();
}

// ---------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------

struct Mac<'a>(&'a [u8; 6]);

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
        let k = self;
        write!(f, "in_port={}", k.in_port)?;
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
        write!(
            f,
            ",dl_src={},dl_dst={},dl_type={:#06x}",
            Mac(&k.dl_src),
            Mac(&k.dl_dst),
            k.dl_type
        )?;
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
}

impl FlowKey {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_offsets_are_pinned() {
        let expect = [
            (offset_of!(FlowKey, in_port), 0),
            (offset_of!(FlowKey, recirc_id), 4),
            (offset_of!(FlowKey, pkt_mark), 8),
            (offset_of!(FlowKey, dp_hash), 12),
            (offset_of!(FlowKey, metadata), 16),
            (offset_of!(FlowKey, tunnel_id), 24),
            (offset_of!(FlowKey, regs), 32),
            (offset_of!(FlowKey, dl_dst), 96),
            (offset_of!(FlowKey, dl_src), 102),
            (offset_of!(FlowKey, vlan_tpid), 108),
            (offset_of!(FlowKey, vlan_tci), 112),
            (offset_of!(FlowKey, dl_type), 116),
            (offset_of!(FlowKey, mpls_n), 118),
            (offset_of!(FlowKey, pad_l2), 119),
            (offset_of!(FlowKey, mpls_lse), 120),
            (offset_of!(FlowKey, pbb_isid), 136),
            (offset_of!(FlowKey, tun_src), 140),
            (offset_of!(FlowKey, nw_src), 144),
            (offset_of!(FlowKey, nw_dst), 148),
            (offset_of!(FlowKey, ipv6_src), 152),
            (offset_of!(FlowKey, ipv6_dst), 168),
            (offset_of!(FlowKey, ipv6_label), 184),
            (offset_of!(FlowKey, nw_proto), 188),
            (offset_of!(FlowKey, nw_tos), 189),
            (offset_of!(FlowKey, nw_ttl), 190),
            (offset_of!(FlowKey, nw_frag), 191),
            (offset_of!(FlowKey, ipv6_exthdr), 192),
            (offset_of!(FlowKey, pad_l3), 194),
            (offset_of!(FlowKey, tp_src), 200),
            (offset_of!(FlowKey, tp_dst), 202),
            (offset_of!(FlowKey, tcp_flags), 204),
            (offset_of!(FlowKey, pad_l4), 206),
            (offset_of!(FlowKey, nd_target), 208),
            (offset_of!(FlowKey, arp_sha), 224),
            (offset_of!(FlowKey, arp_tha), 230),
            (offset_of!(FlowKey, tun_dst), 236),
            (offset_of!(FlowKey, ct_state), 240),
            (offset_of!(FlowKey, ct_nw_proto), 241),
            (offset_of!(FlowKey, ct_zone), 242),
            (offset_of!(FlowKey, ct_mark), 244),
            (offset_of!(FlowKey, ct_tp_src), 248),
            (offset_of!(FlowKey, ct_tp_dst), 250),
            (offset_of!(FlowKey, pad_ct), 252),
            (offset_of!(FlowKey, ct_label), 256),
            (offset_of!(FlowKey, ct_src), 272),
            (offset_of!(FlowKey, ct_dst), 288),
            (offset_of!(FlowKey, tun_opts_present), 304),
            (offset_of!(FlowKey, tun_opts), 312),
        ];
        for (i, (got, want)) in expect.iter().enumerate() {
            assert_eq!(got, want, "field #{i}");
        }
    }

    fn sample() -> FlowKey {
        FlowKey {
            in_port: 0x0102_0304,
            recirc_id: 5,
            pkt_mark: 6,
            dp_hash: 7,
            metadata: 0x1122_3344_5566_7788,
            tunnel_id: 0x99aa_bbcc_ddee_ff00,
            regs: core::array::from_fn(|i| 0x10 + i as u32),
            dl_dst: [1, 2, 3, 4, 5, 6],
            dl_src: [7, 8, 9, 10, 11, 12],
            vlan_tpid: [0x88a8, 0x8100],
            vlan_tci: [0x1005, 0x3006],
            dl_type: 0x86dd,
            mpls_n: 2,
            pad_l2: 0,
            mpls_lse: [0xaaaa_aaaa, 0xbbbb_bbbb, 0xcccc_cccc, 0xdddd_dddd],
            pbb_isid: 0x00ab_cdef,
            tun_src: [0; 4],
            nw_src: [10, 0, 0, 1],
            nw_dst: [10, 0, 0, 2],
            ipv6_src: [0x20; 16],
            ipv6_dst: [0x30; 16],
            ipv6_label: 0xfffff,
            nw_proto: 6,
            nw_tos: 0xb8,
            nw_ttl: 64,
            nw_frag: 1,
            ipv6_exthdr: 0x1ff,
            pad_l3: [0; 6],
            tp_src: 80,
            tp_dst: 443,
            tcp_flags: 0x12,
            pad_l4: 0,
            nd_target: [0x40; 16],
            arp_sha: [0xa; 6],
            arp_tha: [0xb; 6],
            tun_dst: [0; 4],
            ct_state: 0x22,
            ct_nw_proto: 6,
            ct_zone: 9,
            ct_mark: 0x55,
            ct_tp_src: 1000,
            ct_tp_dst: 80,
            pad_ct: 0,
            ct_label: [0x66; 16],
            ct_src: [0x77; 16],
            ct_dst: [0x88; 16],
            tun_opts_present: 0x99,
            tun_opts: [0xaa; TUN_OPTS_LEN],
        }
    }

    #[test]
    fn words_round_trip_and_match_fields() {
        let k = sample();
        let w = k.to_words();
        assert_eq!(FlowKey::from_words(&w), k);
        assert_eq!(
            w[0],
            u64::from_ne_bytes({
                let mut b = [0; 8];
                b[..4].copy_from_slice(&k.in_port.to_ne_bytes());
                b[4..].copy_from_slice(&k.recirc_id.to_ne_bytes());
                b
            })
        );
        assert_eq!(w[2], k.metadata);
        assert_eq!(w[3], k.tunnel_id);
        assert_eq!(
            w[4],
            u64::from_ne_bytes({
                let mut b = [0; 8];
                b[..4].copy_from_slice(&k.regs[0].to_ne_bytes());
                b[4..].copy_from_slice(&k.regs[1].to_ne_bytes());
                b
            })
        );
        assert_eq!(
            FlowKey::from_words(&FlowKey::ZERO.to_words()),
            FlowKey::ZERO
        );
        assert_eq!(FlowKey::ZERO, FlowKey::default());
    }

    #[test]
    fn extraction_clears_a_previous_connection_tracking_block() {
        let mut k = sample();
        let frame = [0u8; 60];
        extract_into(&mut k, &frame, 3);
        assert_eq!(k.ct_state, 0);
        assert_eq!(k.ct_src, [0; 16]);
        assert_eq!(
            k.as_words()[CT_WORDS_START..],
            [0; FLOW_KEY_WORDS - CT_WORDS_START]
        );
        assert_eq!(k, extract(&frame, 3));
    }

    #[test]
    fn masking_clears_unmasked_bits() {
        let k = sample();
        let mask = FlowKey {
            in_port: u32::MAX,
            tp_dst: 0xff00,
            ..FlowKey::ZERO
        };
        let m = k.masked(&mask);
        assert_eq!(
            m,
            FlowKey {
                in_port: k.in_port,
                tp_dst: 443 & 0xff00,
                ..FlowKey::ZERO
            }
        );
    }

    #[test]
    fn hash_is_deterministic_and_spreads() {
        let k = sample();
        assert_eq!(k.hash(0), k.hash(0));
        assert_ne!(k.hash(0), k.hash(1));
        // Every single-bit flip of the key changes the hash (no collisions expected among
        // 1280 neighbours of one key with a decent 32-bit hash).
        let base = k.to_words();
        let h0 = hash_words(&base, 7);
        let mut seen = std::collections::HashSet::new();
        for w in 0..FLOW_KEY_WORDS {
            for bit in 0..64 {
                let mut x = base;
                x[w] ^= 1 << bit;
                let h = hash_words(&x, 7);
                assert_ne!(h, h0);
                seen.insert(h);
            }
        }
        assert!(seen.len() >= FLOW_KEY_WORDS * 64 - 2, "{}", seen.len());
    }

    #[test]
    fn display_tcp() {
        let mut k = sample();
        k.vlan_tpid = [0; 2];
        k.vlan_tci = [0; 2];
        k.dl_type = ETH_TYPE_IPV4;
        k.recirc_id = 0;
        k.pkt_mark = 0;
        k.dp_hash = 0;
        k.metadata = 0;
        k.tunnel_id = 0;
        k.regs = [0; N_REGS];
        k.regs[2] = 0x2a;
        k.pbb_isid = 0;
        k.in_port = 1;
        k.nw_frag = 0;
        k.ct_state = 0;
        k.tun_opts_present = 0;
        assert_eq!(
            k.to_string(),
            "in_port=1,reg2=0x2a,dl_src=07:08:09:0a:0b:0c,dl_dst=01:02:03:04:05:06,dl_type=0x0800,\
             nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_proto=6,nw_tos=184,nw_ecn=0,nw_ttl=64,\
             nw_frag=no,tp_src=80,tp_dst=443,tcp_flags=0x012"
        );
    }
}
