//! Datapath actions: what the OpenFlow pipeline compiles a flow's treatment into, and the
//! code that applies the header-rewriting ones to packet bytes.
//!
//! `xlate` turns OpenFlow instructions into a flat list of [`DpAction`]s in which every value
//! is concrete: `dec_ttl` becomes "set TTL to 63", `copy_ttl_out` becomes "set the MPLS TTL
//! to 64", a VLAN push carries the TCI to push. The list is therefore the same for every
//! packet of a megaflow, and executing it needs no knowledge of OpenFlow. Outputs, NORMAL,
//! CONTROLLER, meters and the tunnel actions (`tnl_push`, `tnl_pop`, see [`crate::native`])
//! are carried out by the datapath (they need ports and state); this module applies the
//! rest ([`apply`]).
//!
//! ## Checksums
//! Rewrites keep packets valid: the IPv4 header checksum and TCP/UDP/ICMP checksums are
//! updated incrementally (RFC 1624) when an address, port, TTL, TOS or type/code changes, a
//! UDP-over-IPv4 checksum of zero ("none") is left as zero, ND rewrites recompute the ICMPv6
//! checksum, and SCTP rewrites recompute the CRC32c. A rewrite whose header the packet does
//! not have (a set of `tp_dst` on ARP, say) changes nothing: xlate only emits actions whose
//! prerequisites hold, so that happens only for malformed packets.

//!
//! ## Files
//! This file holds the actions and the dispatch of a rewrite to its layer: `l2` (Ethernet,
//! VLAN, MPLS, PBB, TTL copies), `l3` (IPv4, IPv6, ARP), `l4` (ports, ICMP, ND, SCTP);
//! `display` the text form.

use packet::csum;
use packet::flow::{self, Offsets};
use packet::Packet;

mod display;
pub use display::list_text;
mod l2;
mod l3;
mod l4;

// The layers' helpers, for one another (each file does `use super::*`).
use self::l2::*;
use self::l3::*;
use self::l4::*;

/// Why a packet goes to the controller, in OVS's numbering: OpenFlow 1.4's
/// `ofp_packet_in_reason` (0-5) and OVS's explicit table miss (6), a controller output in a
/// table-miss flow (priority 0, matching everything). Connections get them in their
/// version's terms (see the daemon's packet-in encoding): 3-5 are `action` before 1.4, an
/// explicit miss is `action` in 1.0-1.2 and `no_match` after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketInReason {
    NoMatch = 0,
    Action = 1,
    InvalidTtl = 2,
    ActionSet = 3,
    Group = 4,
    PacketOut = 5,
    ExplicitMiss = 6,
}

/// The pipeline fields a packet-in reports besides the packet (OVS's packet-in
/// metadata): the registers, `metadata` and the tunnel fields as they were when the packet
/// was sent to the controller. The registers and `metadata` follow from the flow the
/// translation matched; the tunnel fields may also come from the packet, and translation
/// pins them in the megaflow; so all of them may be part of a cached action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PipelineMeta {
    /// `reg0`..`reg15`.
    pub regs: [u32; packet::flow::N_REGS],
    /// The OpenFlow `metadata` field.
    pub metadata: u64,
    /// `tun_id`.
    pub tunnel_id: u64,
    /// `tun_src`, `tun_dst`.
    pub tun_src: [u8; 4],
    pub tun_dst: [u8; 4],
    /// `tun_ipv6_src`, `tun_ipv6_dst`.
    pub tun_ipv6_src: [u8; 16],
    pub tun_ipv6_dst: [u8; 16],
    /// The `tun_metadata<N>` options: which are present (bit N), and their bytes where the
    /// bridge's TLV table places them (as in the flow key).
    pub tun_opts_present: u64,
    pub tun_opts: [u8; packet::flow::TUN_OPTS_LEN],
}

/// What a Nicira `controller(...)` action adds to a packet-in: its reason (any `OFPR_*`,
/// OVS's numbering, mapped to the connection's version when sent), the controller id of
/// the connections that get it, the user data and, for `pause`, the continuation (see
/// [`crate::continuation`]; empty otherwise).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PinExtra {
    pub reason: u8,
    pub controller_id: u16,
    pub userdata: Vec<u8>,
    pub continuation: Vec<u8>,
}

/// One datapath action. Port numbers are OpenFlow port numbers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DpAction {
    Output(u32),
    /// Forward as a MAC-learning switch would.
    Normal,
    Controller {
        max_len: u16,
        reason: PacketInReason,
        table_id: u8,
        cookie: u64,
        /// The pipeline fields when the packet was sent (boxed: rare, and large).
        meta: Box<PipelineMeta>,
        /// A `controller(...)` action's additions (`None` for an output to CONTROLLER).
        extra: Option<Box<PinExtra>>,
    },
    /// Run the nested actions on a copy of the packet as it is now.
    Clone(Vec<DpAction>),
    /// Run one of two action lists, chosen by the packet's length (see
    /// [`crate::odp_pktlen`]; boxed: rare, and large).
    CheckPktLen(Box<crate::odp_pktlen::PktLenCheck>),
    Meter(u32),
    SetQueue(u32),
    SetEthSrc([u8; 6]),
    SetEthDst([u8; 6]),
    SetEthType(u16),
    PushVlan {
        tpid: u16,
        tci: u16,
    },
    PopVlan,
    /// Sets the outer tag's TCI bits under `mask` (VID 0x0fff, PCP 0xe000).
    SetVlanTci {
        tci: u16,
        mask: u16,
    },
    /// Inserts a label stack entry after at most `tags` VLAN tags (the ones the flow
    /// parsed: behind a tag beyond `vlan-limit` the label goes in front of it, its TPID
    /// becoming the MPLS EtherType, as OVS's datapath does).
    PushMpls {
        ethertype: u16,
        lse: u32,
        tags: u8,
    },
    PopMpls(u16),
    /// Sets the top label stack entry's bits under `mask`.
    SetMplsLse {
        lse: u32,
        mask: u32,
    },
    PushPbb {
        isid: u32,
    },
    PopPbb,
    SetPbbIsid(u32),
    /// Copy the TTL from the next-to-outermost header (MPLS entry or IP) to the outermost
    /// MPLS entry; evaluated on the packet itself.
    CopyTtlOut,
    /// Copy the outermost MPLS TTL to the next-to-outermost header (MPLS entry or IP).
    CopyTtlIn,
    SetIpv4Src([u8; 4]),
    SetIpv4Dst([u8; 4]),
    SetIpv6Src([u8; 16]),
    SetIpv6Dst([u8; 16]),
    SetIpv6Label(u32),
    /// Sets the TOS / traffic class bits under `mask` (DSCP 0xfc, ECN 0x03).
    SetIpTos {
        tos: u8,
        mask: u8,
    },
    SetIpTtl(u8),
    SetIpProto(u8),
    SetTpSrc(u16),
    SetTpDst(u16),
    SetIcmpType(u8),
    SetIcmpCode(u8),
    SetArpOp(u16),
    SetArpSpa([u8; 4]),
    SetArpTpa([u8; 4]),
    SetArpSha([u8; 6]),
    SetArpTha([u8; 6]),
    SetNdTarget([u8; 16]),
    SetNdSll([u8; 6]),
    SetNdTll([u8; 6]),
    SetTunnelId(u64),
    /// Sets the outer IPv4 source / destination a tunnel port with `remote_ip=flow` (or
    /// `local_ip=flow`) sends with.
    SetTunnelSrc([u8; 4]),
    SetTunnelDst([u8; 4]),
    /// Sets the IPv6 outer source / destination a tunnel port uses.
    SetTunnelIpv6Src([u8; 16]),
    SetTunnelIpv6Dst([u8; 16]),
    /// Sets the tunnel flags a tunnel port sends with, in the key's layout: only OAM
    /// (`tun_flags`' one public bit; Geneve's O bit) is ever set.
    SetTunnelFlags(u16),
    /// Sets the VXLAN Group Policy ID and flags (`tun_gbp_id`, `tun_gbp_flags`) a VXLAN
    /// port with `exts=gbp` sends with (other ports ignore them).
    SetTunnelGbp {
        id: u16,
        flags: u8,
    },
    /// Sets the Geneve options a Geneve port sends with (whole options in wire format,
    /// built from the `tun_metadata` fields by the TLV table; see `crate::tun_md`).
    SetTunnelOpts(Box<[u8]>),
    /// Send the packet through the connection tracker (boxed: rare, and large).
    Ct(Box<crate::odp_ct::CtAction>),
    /// Re-inject the packet into the pipeline under this recirculation id, with the
    /// connection-tracking fields the last `Ct` gave it (a copy unless it is the last
    /// action).
    Recirc(u32),
    /// The `sample` action: with probability `probability / 65535`, a copy of the packet's
    /// headers to the bridge's flow-sample exporter; the packet goes on unchanged.
    Sample(openflow::sample::Sample),
    /// Hand a learned flow to the bridge's learn queue (see [`crate::learn`]).
    Learn(std::sync::Arc<crate::learn::LearnedFlow>),
    /// OVS's `tnl_pop(port)`: the packet is a tunnel packet to one of the bridge's own
    /// tunnel endpoints (see [`crate::native`]); its outer headers are popped and the inner
    /// packet goes to the tunnel port it belongs to, which receives it with the tunnel's
    /// metadata. `port` is the listening datapath port (`tnl/ports/show`: the UDP port,
    /// 47 for GRE). `normal`: the NORMAL action chose it, so the packet also teaches the
    /// MAC table its source, as NORMAL does.
    TnlPop {
        port: u32,
        normal: bool,
    },
    /// OVS's `tnl_push(...)`: the packet goes to tunnel port `port`, which sends it with
    /// these outer headers (see [`crate::native::TnlPush`]; boxed: rare, and large).
    TnlPush(Box<crate::native::TnlPush>),
}

impl DpAction {
    /// Whether the action sets tunnel metadata for a later `output` to a tunnel port (the
    /// packet's bytes stay as they are).
    pub fn sets_tunnel(&self) -> bool {
        matches!(
            self,
            DpAction::SetTunnelId(_)
                | DpAction::SetTunnelSrc(_)
                | DpAction::SetTunnelDst(_)
                | DpAction::SetTunnelIpv6Src(_)
                | DpAction::SetTunnelIpv6Dst(_)
                | DpAction::SetTunnelFlags(_)
                | DpAction::SetTunnelGbp { .. }
                | DpAction::SetTunnelOpts(_)
        )
    }

    /// True for actions this module applies to packet bytes.
    pub fn is_rewrite(&self) -> bool {
        !self.sets_tunnel()
            && !matches!(
                self,
                DpAction::Output(_)
                    | DpAction::Normal
                    | DpAction::Controller { .. }
                    | DpAction::Clone(_)
                    | DpAction::CheckPktLen(_)
                    | DpAction::Meter(_)
                    | DpAction::SetQueue(_)
                    | DpAction::Ct(_)
                    | DpAction::Recirc(_)
                    | DpAction::Sample(_)
                    | DpAction::Learn(_)
                    | DpAction::TnlPop { .. }
                    | DpAction::TnlPush(_)
            )
    }
}

/// Applies one rewrite to `pkt`. `offs` caches header offsets; it is recomputed after
/// actions that move headers. Non-rewrite actions are ignored here.
pub fn apply(pkt: &mut Packet, a: &DpAction, offs: &mut Option<Offsets>) {
    // A pop may leave a frame shorter than Ethernet's 60-byte minimum: it stays so, as in
    // OVS; whatever transmits it on a wire pads it (the kernel and NICs do).
    if apply_inner(pkt, a, offs) {
        *offs = None;
    }
}

fn offsets(pkt: &Packet, offs: &mut Option<Offsets>) -> Offsets {
    match offs {
        Some(o) => *o,
        None => {
            // Rewrites find their headers behind as many tags as a flow can hold, whatever
            // `vlan-limit` says about matching: after a push the IP header is behind one
            // more tag than the packet arrived with (OVS sets the IP fields first).
            let mut k = flow::FlowKey::ZERO;
            let o = flow::extract_into_with(&mut k, pkt.data(), 0, flow::MAX_VLAN_TAGS);
            *offs = Some(o);
            o
        }
    }
}

/// Returns true when header positions changed.
fn apply_inner(pkt: &mut Packet, a: &DpAction, offs: &mut Option<Offsets>) -> bool {
    use DpAction as A;
    match a {
        A::SetEthSrc(_)
        | A::SetEthDst(_)
        | A::SetEthType(_)
        | A::PushVlan { .. }
        | A::PopVlan
        | A::SetVlanTci { .. } => apply_eth_vlan(pkt, a),
        A::PushMpls { .. }
        | A::PopMpls(_)
        | A::SetMplsLse { .. }
        | A::PushPbb { .. }
        | A::PopPbb
        | A::SetPbbIsid(_) => apply_mpls_pbb(pkt, a),
        A::CopyTtlOut | A::CopyTtlIn => {
            copy_ttl(pkt, matches!(a, A::CopyTtlOut));
            false
        }
        A::SetIpv4Src(_)
        | A::SetIpv4Dst(_)
        | A::SetArpSpa(_)
        | A::SetArpTpa(_)
        | A::SetArpSha(_)
        | A::SetArpTha(_)
        | A::SetArpOp(_)
        | A::SetIpv6Src(_)
        | A::SetIpv6Dst(_)
        | A::SetIpv6Label(_) => apply_ip_addr(pkt, a, offs),
        A::SetIpTos { .. } | A::SetIpTtl(_) | A::SetIpProto(_) => apply_ip_hdr(pkt, a, offs),
        A::SetTpSrc(_)
        | A::SetTpDst(_)
        | A::SetIcmpType(_)
        | A::SetIcmpCode(_)
        | A::SetNdTarget(_)
        | A::SetNdSll(_)
        | A::SetNdTll(_) => apply_l4(pkt, a, offs),
        DpAction::Output(_)
        | DpAction::Normal
        | DpAction::Controller { .. }
        | DpAction::Clone(_)
        | DpAction::CheckPktLen(_)
        | DpAction::Meter(_)
        | DpAction::SetQueue(_)
        | DpAction::SetTunnelId(_)
        | DpAction::SetTunnelSrc(_)
        | DpAction::SetTunnelDst(_)
        | DpAction::SetTunnelIpv6Src(_)
        | DpAction::SetTunnelIpv6Dst(_)
        | DpAction::SetTunnelFlags(_)
        | DpAction::SetTunnelGbp { .. }
        | DpAction::SetTunnelOpts(_)
        | DpAction::Ct(_)
        | DpAction::Recirc(_)
        | DpAction::Sample(_)
        | DpAction::Learn(_)
        | DpAction::TnlPop { .. }
        | DpAction::TnlPush(_) => false,
    }
}

/// Applies every rewrite in `actions` (ignoring the others) to `pkt`.
pub fn apply_all(pkt: &mut Packet, actions: &[DpAction]) {
    let mut offs = None;
    for a in actions {
        if a.is_rewrite() {
            apply(pkt, a, &mut offs);
        }
    }
}
