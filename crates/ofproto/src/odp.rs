//! Datapath actions: what the OpenFlow pipeline compiles a flow's treatment into, and the
//! code that applies the header-rewriting ones to packet bytes.
//!
//! `xlate` turns OpenFlow instructions into a flat list of [`DpAction`]s in which every value
//! is concrete: `dec_ttl` becomes "set TTL to 63", `copy_ttl_out` becomes "set the MPLS TTL
//! to 64", a VLAN push carries the TCI to push. The list is therefore the same for every
//! packet of a megaflow, and executing it needs no knowledge of OpenFlow. Outputs, NORMAL,
//! CONTROLLER and meters are carried out by the datapath (they need ports and state); this
//! module applies the rest ([`apply`]).
//!
//! ## Checksums
//! Rewrites keep packets valid: the IPv4 header checksum and TCP/UDP/ICMP checksums are
//! updated incrementally (RFC 1624) when an address, port, TTL, TOS or type/code changes, a
//! UDP-over-IPv4 checksum of zero ("none") is left as zero, ND rewrites recompute the ICMPv6
//! checksum, and SCTP rewrites recompute the CRC32c. A rewrite whose header the packet does
//! not have (a set of `tp_dst` on ARP, say) changes nothing: xlate only emits actions whose
//! prerequisites hold, so that happens only for malformed packets.

use packet::csum;
use packet::flow::{self, Offsets};
use packet::Packet;

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
}

impl DpAction {
    /// True for actions this module applies to packet bytes.
    pub fn is_rewrite(&self) -> bool {
        !matches!(
            self,
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
                | DpAction::SetTunnelOpts(_)
                | DpAction::Ct(_)
                | DpAction::Recirc(_)
                | DpAction::Sample(_)
                | DpAction::Learn(_)
        )
    }
}

fn rd16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(at..)?.first_chunk::<2>()?))
}

fn wr16(b: &mut [u8], at: usize, v: u16) -> bool {
    match b.get_mut(at..at + 2) {
        Some(s) => {
            s.copy_from_slice(&v.to_be_bytes());
            true
        }
        None => false,
    }
}

/// Offset of the last EtherType field (after VLAN tags), or None for a runt.
fn ethertype_at(d: &[u8]) -> Option<usize> {
    ethertype_after(d, 2)
}

/// Offset of the EtherType field after at most `tags` VLAN tags, or None for a runt.
fn ethertype_after(d: &[u8], tags: u8) -> Option<usize> {
    let mut at = 12;
    for _ in 0..tags.min(2) {
        match rd16(d, at)? {
            flow::ETH_TYPE_VLAN | flow::ETH_TYPE_VLAN_8021AD => at += 4,
            _ => break,
        }
    }
    rd16(d, at).map(|_| at)
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
    match a {
        DpAction::SetEthSrc(m) => {
            if let Some(s) = pkt.data_mut().get_mut(6..12) {
                s.copy_from_slice(m);
            }
            false
        }
        DpAction::SetEthDst(m) => {
            if let Some(s) = pkt.data_mut().get_mut(0..6) {
                s.copy_from_slice(m);
            }
            false
        }
        DpAction::SetEthType(t) => {
            if let Some(at) = ethertype_at(pkt.data()) {
                wr16(pkt.data_mut(), at, *t);
            }
            true
        }
        DpAction::PushVlan { tpid, tci } => {
            if pkt.len() >= 14 {
                if let Some(tag) = pkt.insert_at(12, 4) {
                    tag[0..2].copy_from_slice(&tpid.to_be_bytes());
                    tag[2..4].copy_from_slice(&tci.to_be_bytes());
                }
            }
            true
        }
        DpAction::PopVlan => {
            if matches!(
                rd16(pkt.data(), 12),
                Some(flow::ETH_TYPE_VLAN | flow::ETH_TYPE_VLAN_8021AD)
            ) && pkt.len() >= 18
            {
                pkt.remove_at(12, 4);
            }
            true
        }
        DpAction::SetVlanTci { tci, mask } => {
            let d = pkt.data_mut();
            if matches!(
                rd16(d, 12),
                Some(flow::ETH_TYPE_VLAN | flow::ETH_TYPE_VLAN_8021AD)
            ) {
                if let Some(old) = rd16(d, 14) {
                    wr16(d, 14, (old & !mask) | (tci & mask));
                }
            }
            false
        }
        DpAction::PushMpls {
            ethertype,
            lse,
            tags,
        } => {
            let Some(et) = ethertype_after(pkt.data(), *tags) else {
                return false;
            };
            if let Some(l) = pkt.insert_at(et + 2, 4) {
                l.copy_from_slice(&lse.to_be_bytes());
                wr16(pkt.data_mut(), et, *ethertype);
            }
            true
        }
        DpAction::PopMpls(ethertype) => {
            let Some(et) = ethertype_at(pkt.data()) else {
                return false;
            };
            if matches!(
                rd16(pkt.data(), et),
                Some(flow::ETH_TYPE_MPLS | flow::ETH_TYPE_MPLS_MCAST)
            ) && pkt.len() >= et + 6
            {
                pkt.remove_at(et + 2, 4);
                // The EtherType field moved forward by 4 with the bytes before it.
                wr16(pkt.data_mut(), et, *ethertype);
            }
            true
        }
        DpAction::SetMplsLse { lse, mask } => {
            let Some(et) = ethertype_at(pkt.data()) else {
                return false;
            };
            let d = pkt.data_mut();
            if matches!(
                rd16(d, et),
                Some(flow::ETH_TYPE_MPLS | flow::ETH_TYPE_MPLS_MCAST)
            ) {
                if let Some(s) = d.get_mut(et + 2..et + 6) {
                    let old = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
                    s.copy_from_slice(&((old & !mask) | (lse & mask)).to_be_bytes());
                }
            }
            false
        }
        DpAction::PushPbb { isid } => {
            if pkt.len() < 12 {
                return false;
            }
            let mut macs = [0u8; 12];
            macs.copy_from_slice(&pkt.data()[0..12]);
            if let Some(h) = pkt.push_front(18) {
                h[0..12].copy_from_slice(&macs);
                h[12..14].copy_from_slice(&flow::ETH_TYPE_PBB.to_be_bytes());
                h[14..18].copy_from_slice(&(isid & 0x00ff_ffff).to_be_bytes());
            }
            true
        }
        DpAction::PopPbb => {
            if rd16(pkt.data(), 12) == Some(flow::ETH_TYPE_PBB) && pkt.len() >= 18 + 14 {
                pkt.pull_front(18);
            }
            true
        }
        DpAction::SetPbbIsid(isid) => {
            // The I-TAG may follow a B-TAG (an S-VLAN tag): its TCI is the 4 bytes after its
            // EtherType, the I-SID their low 24 bits.
            let Some(at) = ethertype_at(pkt.data()) else {
                return false;
            };
            if rd16(pkt.data(), at) == Some(flow::ETH_TYPE_PBB) {
                if let Some(s) = pkt.data_mut().get_mut(at + 3..at + 6) {
                    s.copy_from_slice(&isid.to_be_bytes()[1..4]);
                }
            }
            false
        }
        DpAction::CopyTtlOut | DpAction::CopyTtlIn => {
            copy_ttl(pkt, matches!(a, DpAction::CopyTtlOut));
            false
        }
        DpAction::SetIpv4Src(v) => {
            set_ipv4_addr(pkt, offsets(pkt, offs), 12, *v);
            false
        }
        DpAction::SetIpv4Dst(v) => {
            set_ipv4_addr(pkt, offsets(pkt, offs), 16, *v);
            false
        }
        DpAction::SetArpSpa(v) => {
            set_arp(pkt, offsets(pkt, offs), 14, v);
            false
        }
        DpAction::SetArpTpa(v) => {
            set_arp(pkt, offsets(pkt, offs), 24, v);
            false
        }
        DpAction::SetArpSha(v) => {
            set_arp(pkt, offsets(pkt, offs), 8, v);
            false
        }
        DpAction::SetArpTha(v) => {
            set_arp(pkt, offsets(pkt, offs), 18, v);
            false
        }
        DpAction::SetArpOp(v) => {
            set_arp(pkt, offsets(pkt, offs), 6, &v.to_be_bytes());
            false
        }
        DpAction::SetIpv6Src(v) => {
            set_ipv6_addr(pkt, offsets(pkt, offs), 8, v);
            false
        }
        DpAction::SetIpv6Dst(v) => {
            set_ipv6_addr(pkt, offsets(pkt, offs), 24, v);
            false
        }
        DpAction::SetIpv6Label(v) => {
            let o = offsets(pkt, offs);
            if let (Some(l3), true) = (o.l3, is_ip(pkt, o, 6)) {
                let l3 = usize::from(l3);
                if let Some(h) = pkt.data_mut().get_mut(l3..l3 + 4) {
                    let old = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    let new = (old & 0xfff0_0000) | (v & 0x000f_ffff);
                    h.copy_from_slice(&new.to_be_bytes());
                }
            }
            false
        }
        DpAction::SetIpTos { tos, mask } => {
            let o = offsets(pkt, offs);
            let Some(l3) = o.l3.map(usize::from) else {
                return false;
            };
            if is_ip(pkt, o, 4) {
                let d = pkt.data_mut();
                if let (Some(old_w), Some(&old)) = (rd16(d, l3), d.get(l3 + 1)) {
                    let new = (old & !mask) | (tos & mask);
                    d[l3 + 1] = new;
                    let new_w = (old_w & 0xff00) | u16::from(new);
                    fix_ipv4_hdr(d, l3, old_w, new_w);
                }
            } else if is_ip(pkt, o, 6) {
                let d = pkt.data_mut();
                if let Some(h) = d.get_mut(l3..l3 + 4) {
                    let w = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    let old = ((w >> 20) & 0xff) as u8;
                    let new = (old & !mask) | (tos & mask);
                    let w = (w & !0x0ff0_0000) | (u32::from(new) << 20);
                    h.copy_from_slice(&w.to_be_bytes());
                }
            }
            false
        }
        DpAction::SetIpTtl(ttl) => {
            let o = offsets(pkt, offs);
            let Some(l3) = o.l3.map(usize::from) else {
                return false;
            };
            if is_ip(pkt, o, 4) {
                let d = pkt.data_mut();
                if let Some(old_w) = rd16(d, l3 + 8) {
                    let new_w = (u16::from(*ttl) << 8) | (old_w & 0xff);
                    wr16(d, l3 + 8, new_w);
                    fix_ipv4_hdr(d, l3, old_w, new_w);
                }
            } else if is_ip(pkt, o, 6) {
                if let Some(b) = pkt.data_mut().get_mut(l3 + 7) {
                    *b = *ttl;
                }
            }
            false
        }
        DpAction::SetIpProto(p) => {
            let o = offsets(pkt, offs);
            let Some(l3) = o.l3.map(usize::from) else {
                return false;
            };
            let old_l4 = l4_of(pkt, o);
            let v4 = is_ip(pkt, o, 4);
            let old = if v4 {
                let d = pkt.data_mut();
                let Some(old_w) = rd16(d, l3 + 8) else {
                    return false;
                };
                let new_w = (old_w & 0xff00) | u16::from(*p);
                wr16(d, l3 + 8, new_w);
                fix_ipv4_hdr(d, l3, old_w, new_w);
                (old_w & 0xff) as u8
            } else if is_ip(pkt, o, 6) {
                let Some(b) = pkt.data_mut().get_mut(l3 + 6) else {
                    return false;
                };
                std::mem::replace(b, *p)
            } else {
                return false;
            };
            // The transport checksum covers the protocol number through the pseudo-header;
            // the header itself stays what it was, so its checksum is updated in place. With
            // IPv6 extension headers the rewritten byte is not the one the pseudo-header uses.
            if let Some((proto, _, l4)) = old_l4.filter(|(proto, ..)| *proto == old) {
                fix_l4_for_proto(pkt.data_mut(), v4, proto, l4, *p);
            }
            true
        }
        DpAction::SetTpSrc(v) => {
            set_l4_u16(pkt, offsets(pkt, offs), 0, *v);
            false
        }
        DpAction::SetTpDst(v) => {
            set_l4_u16(pkt, offsets(pkt, offs), 2, *v);
            false
        }
        DpAction::SetIcmpType(t) => {
            set_icmp(pkt, offsets(pkt, offs), 0, *t);
            false
        }
        DpAction::SetIcmpCode(c) => {
            set_icmp(pkt, offsets(pkt, offs), 1, *c);
            false
        }
        DpAction::SetNdTarget(t) => {
            set_nd(pkt, offsets(pkt, offs), NdField::Target(*t));
            false
        }
        DpAction::SetNdSll(m) => {
            set_nd(pkt, offsets(pkt, offs), NdField::Option(1, *m));
            false
        }
        DpAction::SetNdTll(m) => {
            set_nd(pkt, offsets(pkt, offs), NdField::Option(2, *m));
            false
        }
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
        | DpAction::SetTunnelOpts(_)
        | DpAction::Ct(_)
        | DpAction::Recirc(_)
        | DpAction::Sample(_)
        | DpAction::Learn(_) => false,
    }
}

/// Copies TTLs between the outermost MPLS entry and what lies beneath it.
fn copy_ttl(pkt: &mut Packet, outwards: bool) {
    let Some(et) = ethertype_at(pkt.data()) else {
        return;
    };
    if !matches!(
        rd16(pkt.data(), et),
        Some(flow::ETH_TYPE_MPLS | flow::ETH_TYPE_MPLS_MCAST)
    ) {
        return;
    }
    let top = et + 2;
    let d = pkt.data_mut();
    let Some(lse) = d
        .get(top..top + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    else {
        return;
    };
    let below = top + 4;
    if lse & 0x100 == 0 {
        // Another label stack entry beneath: its TTL is the last byte.
        let Some(&inner) = d.get(below + 3) else {
            return;
        };
        if outwards {
            d[top + 3] = inner;
        } else {
            d[below + 3] = (lse & 0xff) as u8;
        }
        return;
    }
    // Bottom of stack: IPv4 or IPv6 beneath, told apart by the version nibble.
    match d.get(below).map(|b| b >> 4) {
        Some(4) => {
            let Some(&ttl) = d.get(below + 8) else { return };
            if outwards {
                d[top + 3] = ttl;
            } else if let Some(old_w) = rd16(d, below + 8) {
                let new_w = (((lse & 0xff) as u16) << 8) | (old_w & 0xff);
                wr16(d, below + 8, new_w);
                fix_ipv4_hdr(d, below, old_w, new_w);
            }
        }
        Some(6) => {
            let Some(&hl) = d.get(below + 7) else { return };
            if outwards {
                d[top + 3] = hl;
            } else {
                d[below + 7] = (lse & 0xff) as u8;
            }
        }
        _ => {}
    }
}

/// IP version of the L3 header, if it is IPv4 or IPv6.
fn is_ip(pkt: &Packet, o: Offsets, version: u8) -> bool {
    o.l3.and_then(|l3| pkt.data().get(usize::from(l3)))
        .is_some_and(|b| b >> 4 == version)
        && ethertype_at(pkt.data())
            .and_then(|at| rd16(pkt.data(), at))
            .is_some_and(|t| {
                (version == 4 && t == flow::ETH_TYPE_IPV4)
                    || (version == 6 && t == flow::ETH_TYPE_IPV6)
            })
}

/// Updates the IPv4 header checksum after the 16-bit word `old` became `new`.
fn fix_ipv4_hdr(d: &mut [u8], l3: usize, old: u16, new: u16) {
    if let Some(c) = rd16(d, l3 + 10) {
        wr16(d, l3 + 10, csum::update16(c, old, new));
    }
}

/// The L4 protocol and header offset of an IP packet, if it has an L4 header.
fn l4_of(pkt: &Packet, o: Offsets) -> Option<(u8, usize, usize)> {
    let l3 = usize::from(o.l3?);
    let l4 = usize::from(o.l4?);
    let d = pkt.data();
    let proto = if is_ip(pkt, o, 4) {
        *d.get(l3 + 9)?
    } else if is_ip(pkt, o, 6) {
        // The last next-header before the L4 header.
        let mut k = flow::FlowKey::ZERO;
        flow::extract_into(&mut k, d, 0);
        k.nw_proto
    } else {
        return None;
    };
    Some((proto, l3, l4))
}

/// Where the transport checksum sits, for protocols whose checksum covers addresses.
fn l4_csum_field(proto: u8) -> Option<usize> {
    match proto {
        flow::IPPROTO_TCP => Some(16),
        flow::IPPROTO_UDP => Some(6),
        flow::IPPROTO_ICMPV6 => Some(2),
        _ => None,
    }
}

fn fix_l4_for_addr<const N: usize>(pkt: &mut Packet, o: Offsets, old: &[u8; N], new: &[u8; N]) {
    let Some((proto, l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if o.l4.is_none() {
        return;
    }
    if proto == flow::IPPROTO_SCTP {
        sctp_recompute(pkt.data_mut(), l4, l3);
        return;
    }
    let Some(f) = l4_csum_field(proto) else {
        return;
    };
    let v4 = is_ip(pkt, o, 4);
    let d = pkt.data_mut();
    if let Some(c) = rd16(d, l4 + f) {
        if proto == flow::IPPROTO_UDP && v4 && c == 0 {
            return;
        }
        let mut n = csum::update_bytes(c, old, new);
        if proto == flow::IPPROTO_UDP && n == 0 {
            n = 0xffff;
        }
        wr16(d, l4 + f, n);
    }
}

/// Updates the checksum of an L4 header of protocol `old` whose pseudo-header protocol
/// became `new` (the checksum stays where the old protocol keeps it).
fn fix_l4_for_proto(d: &mut [u8], v4: bool, old: u8, l4: usize, new: u8) {
    let Some(f) = l4_csum_field(old) else {
        return;
    };
    if let Some(c) = rd16(d, l4 + f) {
        if old == flow::IPPROTO_UDP && v4 && c == 0 {
            return;
        }
        let mut n = csum::update16(c, u16::from(old), u16::from(new));
        if old == flow::IPPROTO_UDP && n == 0 {
            n = 0xffff;
        }
        wr16(d, l4 + f, n);
    }
}

fn set_ipv4_addr(pkt: &mut Packet, o: Offsets, field: usize, v: [u8; 4]) {
    if !is_ip(pkt, o, 4) {
        return;
    }
    let Some(l3) = o.l3.map(usize::from) else {
        return;
    };
    let d = pkt.data_mut();
    let Some(s) = d.get_mut(l3 + field..l3 + field + 4) else {
        return;
    };
    let old = [s[0], s[1], s[2], s[3]];
    s.copy_from_slice(&v);
    if let Some(c) = rd16(d, l3 + 10) {
        wr16(d, l3 + 10, csum::update_bytes(c, &old, &v));
    }
    fix_l4_for_addr(pkt, o, &old, &v);
}

fn set_ipv6_addr(pkt: &mut Packet, o: Offsets, field: usize, v: &[u8; 16]) {
    if !is_ip(pkt, o, 6) {
        return;
    }
    let Some(l3) = o.l3.map(usize::from) else {
        return;
    };
    let Some(s) = pkt.data_mut().get_mut(l3 + field..l3 + field + 16) else {
        return;
    };
    let mut old = [0u8; 16];
    old.copy_from_slice(s);
    s.copy_from_slice(v);
    fix_l4_for_addr(pkt, o, &old, v);
}

fn set_arp<const N: usize>(pkt: &mut Packet, o: Offsets, field: usize, v: &[u8; N]) {
    let Some(l3) = o.l3.map(usize::from) else {
        return;
    };
    let is_arp = ethertype_at(pkt.data())
        .and_then(|at| rd16(pkt.data(), at))
        .is_some_and(|t| t == flow::ETH_TYPE_ARP || t == flow::ETH_TYPE_RARP);
    if !is_arp {
        return;
    }
    if let Some(s) = pkt.data_mut().get_mut(l3 + field..l3 + field + N) {
        s.copy_from_slice(v);
    }
}

fn set_l4_u16(pkt: &mut Packet, o: Offsets, field: usize, v: u16) {
    let Some((proto, l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if !matches!(
        proto,
        flow::IPPROTO_TCP | flow::IPPROTO_UDP | flow::IPPROTO_SCTP
    ) {
        return;
    }
    let v4 = is_ip(pkt, o, 4);
    let d = pkt.data_mut();
    let Some(old) = rd16(d, l4 + field) else {
        return;
    };
    wr16(d, l4 + field, v);
    if proto == flow::IPPROTO_SCTP {
        sctp_recompute(d, l4, l3);
        return;
    }
    if let Some(f) = l4_csum_field(proto) {
        if let Some(c) = rd16(d, l4 + f) {
            if proto == flow::IPPROTO_UDP && v4 && c == 0 {
                return;
            }
            let mut n = csum::update16(c, old, v);
            if proto == flow::IPPROTO_UDP && n == 0 {
                n = 0xffff;
            }
            wr16(d, l4 + f, n);
        }
    }
}

fn set_icmp(pkt: &mut Packet, o: Offsets, field: usize, v: u8) {
    let Some((proto, _l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if proto != flow::IPPROTO_ICMP && proto != flow::IPPROTO_ICMPV6 {
        return;
    }
    let d = pkt.data_mut();
    let Some(old_w) = rd16(d, l4) else {
        return;
    };
    let new_w = if field == 0 {
        (u16::from(v) << 8) | (old_w & 0xff)
    } else {
        (old_w & 0xff00) | u16::from(v)
    };
    wr16(d, l4, new_w);
    if let Some(c) = rd16(d, l4 + 2) {
        wr16(d, l4 + 2, csum::update16(c, old_w, new_w));
    }
}

enum NdField {
    Target([u8; 16]),
    /// Option type (1 = source, 2 = target link-layer address) and the address.
    Option(u8, [u8; 6]),
}

fn set_nd(pkt: &mut Packet, o: Offsets, f: NdField) {
    let Some((proto, l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if proto != flow::IPPROTO_ICMPV6 {
        return;
    }
    let d = pkt.data_mut();
    let Some(&ty) = d.get(l4) else {
        return;
    };
    if ty != flow::ICMPV6_ND_NS && ty != flow::ICMPV6_ND_NA {
        return;
    }
    match f {
        NdField::Target(t) => {
            if let Some(s) = d.get_mut(l4 + 8..l4 + 24) {
                s.copy_from_slice(&t);
            }
        }
        NdField::Option(kind, mac) => {
            let mut at = l4 + 24;
            while let (Some(&t), Some(&len)) = (d.get(at), d.get(at + 1)) {
                if len == 0 {
                    break;
                }
                if t == kind && len == 1 {
                    if let Some(s) = d.get_mut(at + 2..at + 8) {
                        s.copy_from_slice(&mac);
                    }
                    break;
                }
                at += usize::from(len) * 8;
            }
        }
    }
    csum::set_l4_checksum(d, l3, l4, 2, flow::IPPROTO_ICMPV6, true);
}

/// CRC32c (Castagnoli), bitwise: SCTP rewrites are rare enough not to need a table.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc: u32 = !0;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let m = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0x82f6_3b78 & m);
        }
    }
    !crc
}

/// Recomputes an SCTP packet's CRC32c over the SCTP header and chunks (to the IP length).
fn sctp_recompute(d: &mut [u8], l4: usize, l3: usize) {
    let end = match d.get(l3).map(|b| b >> 4) {
        Some(4) => rd16(d, l3 + 2).map(|n| l3 + usize::from(n)),
        Some(6) => rd16(d, l3 + 4).map(|n| l3 + 40 + usize::from(n)),
        _ => None,
    };
    let Some(end) = end.filter(|e| *e <= d.len() && *e >= l4 + 12) else {
        return;
    };
    if let Some(s) = d.get_mut(l4 + 8..l4 + 12) {
        s.copy_from_slice(&[0; 4]);
    }
    let c = crc32c(&d[l4..end]);
    if let Some(s) = d.get_mut(l4 + 8..l4 + 12) {
        // SCTP stores the CRC32c in little-endian byte order on the wire.
        s.copy_from_slice(&c.to_le_bytes());
    }
}

impl std::fmt::Display for DpAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::net::{Ipv4Addr, Ipv6Addr};
        let mac = |m: &[u8; 6]| {
            format!(
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                m[0], m[1], m[2], m[3], m[4], m[5]
            )
        };
        match self {
            DpAction::Output(p) => match *p {
                0xffff_fffe => write!(f, "LOCAL"),
                p => write!(f, "{p}"),
            },
            DpAction::Normal => write!(f, "NORMAL"),
            DpAction::Controller {
                max_len,
                reason,
                extra: None,
                ..
            } => write!(
                f,
                "userspace(controller,reason={reason:?},max_len={max_len})"
            ),
            DpAction::Controller {
                max_len,
                extra: Some(x),
                ..
            } => write!(
                f,
                "userspace(controller,reason={},max_len={max_len},controller_id={}{})",
                x.reason,
                x.controller_id,
                if x.continuation.is_empty() {
                    ""
                } else {
                    ",pause"
                }
            ),
            DpAction::Clone(v) => {
                write!(f, "clone(")?;
                for (i, a) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
            DpAction::CheckPktLen(c) => write!(f, "{c}"),
            DpAction::Meter(m) => write!(f, "meter({m})"),
            DpAction::SetQueue(q) => write!(f, "set_queue({q})"),
            DpAction::SetEthSrc(m) => write!(f, "set(eth(src={}))", mac(m)),
            DpAction::SetEthDst(m) => write!(f, "set(eth(dst={}))", mac(m)),
            DpAction::SetEthType(t) => write!(f, "set(eth_type({t:#06x}))"),
            DpAction::PushVlan { tpid, tci } => {
                write!(
                    f,
                    "push_vlan(tpid={tpid:#06x},vid={},pcp={})",
                    tci & 0xfff,
                    tci >> 13
                )
            }
            DpAction::PopVlan => write!(f, "pop_vlan"),
            DpAction::SetVlanTci { tci, mask } => {
                write!(f, "set(vlan(tci={tci:#06x}/{mask:#06x}))")
            }
            DpAction::PushMpls { ethertype, lse, .. } => write!(
                f,
                "push_mpls(label={},tc={},ttl={},bos={},eth_type={ethertype:#06x})",
                lse >> 12,
                (lse >> 9) & 7,
                lse & 0xff,
                (lse >> 8) & 1
            ),
            DpAction::PopMpls(t) => write!(f, "pop_mpls(eth_type={t:#06x})"),
            DpAction::SetMplsLse { lse, mask } => write!(f, "set(mpls(lse={lse:#x}/{mask:#x}))"),
            DpAction::PushPbb { isid } => write!(f, "push_pbb(isid={isid:#x})"),
            DpAction::PopPbb => write!(f, "pop_pbb"),
            DpAction::SetPbbIsid(i) => write!(f, "set(pbb(isid={i:#x}))"),
            DpAction::CopyTtlOut => write!(f, "copy_ttl_out"),
            DpAction::CopyTtlIn => write!(f, "copy_ttl_in"),
            DpAction::SetIpv4Src(a) => write!(f, "set(ipv4(src={}))", Ipv4Addr::from(*a)),
            DpAction::SetIpv4Dst(a) => write!(f, "set(ipv4(dst={}))", Ipv4Addr::from(*a)),
            DpAction::SetIpv6Src(a) => write!(f, "set(ipv6(src={}))", Ipv6Addr::from(*a)),
            DpAction::SetIpv6Dst(a) => write!(f, "set(ipv6(dst={}))", Ipv6Addr::from(*a)),
            DpAction::SetIpv6Label(l) => write!(f, "set(ipv6(label={l:#x}))"),
            DpAction::SetIpTos { tos, mask } => write!(f, "set(ip(tos={tos:#x}/{mask:#x}))"),
            DpAction::SetIpTtl(t) => write!(f, "set(ip(ttl={t}))"),
            DpAction::SetIpProto(p) => write!(f, "set(ip(proto={p}))"),
            DpAction::SetTpSrc(p) => write!(f, "set(l4(src={p}))"),
            DpAction::SetTpDst(p) => write!(f, "set(l4(dst={p}))"),
            DpAction::SetIcmpType(t) => write!(f, "set(icmp(type={t}))"),
            DpAction::SetIcmpCode(c) => write!(f, "set(icmp(code={c}))"),
            DpAction::SetArpOp(o) => write!(f, "set(arp(op={o}))"),
            DpAction::SetArpSpa(a) => write!(f, "set(arp(sip={}))", Ipv4Addr::from(*a)),
            DpAction::SetArpTpa(a) => write!(f, "set(arp(tip={}))", Ipv4Addr::from(*a)),
            DpAction::SetArpSha(m) => write!(f, "set(arp(sha={}))", mac(m)),
            DpAction::SetArpTha(m) => write!(f, "set(arp(tha={}))", mac(m)),
            DpAction::SetNdTarget(a) => write!(f, "set(nd(target={}))", Ipv6Addr::from(*a)),
            DpAction::SetNdSll(m) => write!(f, "set(nd(sll={}))", mac(m)),
            DpAction::SetNdTll(m) => write!(f, "set(nd(tll={}))", mac(m)),
            DpAction::SetTunnelId(t) => write!(f, "set(tunnel(tun_id={t:#x}))"),
            DpAction::SetTunnelSrc(a) => write!(f, "set(tunnel(src={}))", Ipv4Addr::from(*a)),
            DpAction::SetTunnelDst(a) => write!(f, "set(tunnel(dst={}))", Ipv4Addr::from(*a)),
            DpAction::SetTunnelOpts(o) => {
                write!(f, "set(tunnel({}))", crate::tun_md::format_geneve(o))
            }
            DpAction::Ct(c) => write!(f, "{c}"),
            DpAction::Recirc(id) => write!(f, "recirc({id:#x})"),
            DpAction::Learn(l) => write!(f, "learn(table={},priority={})", l.table_id, l.priority),
            DpAction::Sample(s) => write!(
                f,
                "sample(sample={:.1}%,actions(userspace(flow_sample(probability={},\
                 collector_set_id={},obs_domain_id={},obs_point_id={}))))",
                f64::from(s.probability) * 100.0 / 65535.0,
                s.probability,
                s.collector_set_id,
                s.obs_domain_id,
                s.obs_point_id
            ),
        }
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
