//! Native tunnelling as translation sees it: which packets an output decapsulates.
//!
//! ## What
//! In OVS's userspace datapath a tunnel packet addressed to one of the switch's own tunnel
//! endpoints is decapsulated by the megaflow that sends it to the underlay bridge's own port:
//! translation of an output to `LOCAL` (or of NORMAL choosing it) asks the tunnel port map
//! whether the packet's outer headers (IP destination, protocol, UDP destination port) name
//! a listening tunnel, and if so emits `tnl_pop(port)` instead of the output, with those
//! fields made exact in the megaflow. This module is that question; the answer comes from
//! the tunnel ports, which live in the `netdev` crate (this crate does not depend on it), so
//! the datapath installs the answering [`NativeTunnels`] once at start ([`install`]).
//!
//! ## Invariants
//! Without an installed map (tools, tests of this crate) nothing is decapsulated by
//! translation. The answer depends on the tunnel ports and the underlay's addresses, which
//! change outside OpenFlow: whoever installs the map also revalidates megaflows when they
//! change (see the datapath's revalidator).
//!
//! ## Threads
//! The map is read by every translation (handler threads, the uncached pipeline): `Sync`,
//! and it must answer without waiting on the poll threads.

use packet::flow::FlowKey;
use std::sync::OnceLock;

/// The switch's listening tunnels (see the module documentation).
pub trait NativeTunnels: Send + Sync {
    /// The listening datapath port (`tnl/ports/show`'s number) if a packet with `flow`,
    /// sent to internal port `port` (by name), is a tunnel packet to one of its tunnel
    /// endpoints. With `mac`, the packet must also be untagged and addressed to that
    /// port's MAC (NORMAL sends it there). Every field the answer looked at is made exact
    /// in `wc`, in stages (as OVS's classifier does): nothing for a port no tunnel listens
    /// on, then the MAC and tag, the EtherType, addresses and ports.
    fn pop_port(&self, port: &str, flow: &FlowKey, mac: bool, wc: &mut FlowKey) -> Option<u32>;

    /// `tnl_push`: the outer headers tunnel port `port` (by name, OpenFlow port `ofport`)
    /// sends a packet with `flow` with, if they are the same for every such packet (a fixed
    /// remote whose next hop is resolved, a fixed TOS, no Geneve options) and known now.
    /// Fields the key came from are made exact in `wc`.
    fn push(&self, port: &str, ofport: u32, flow: &FlowKey, wc: &mut FlowKey) -> Option<TnlPush>;
}

static MAP: OnceLock<&'static dyn NativeTunnels> = OnceLock::new();

/// Installs the process's tunnel port map (the first call wins).
pub fn install(map: &'static dyn NativeTunnels) {
    let _ = MAP.set(map);
}

/// The installed map, if any.
pub fn map() -> Option<&'static dyn NativeTunnels> {
    MAP.get().copied()
}

/// OVS's `tnl_push(tnl_port(N),header(...),out_port(M))`: the outer headers a tunnel port
/// sends a packet with, as built for its resolved next hop (the tunnel's template with its
/// key), where it listens (`tnl_port`, as in [`DpAction::TnlPop`](crate::DpAction)) and the
/// underlay's internal port they leave through (`out_port`, by name). The per-packet words
/// (lengths, checksums, UDP source port) are zero here, as in OVS. A GRE port with
/// `packet_type=legacy_l3` sends the packet without its Ethernet header: OVS's action list
/// then has `pop_eth` before the `tnl_push`, and the header's GRE protocol is the packet's
/// EtherType; both are shown as part of this one action (the port strips the header).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TnlPush {
    /// The OpenFlow port of the tunnel, which sends it.
    pub port: u32,
    pub tnl_port: u32,
    /// OVS's vport type: 3 GRE, 4 VXLAN, 5 Geneve.
    pub kind: u8,
    pub header: Box<[u8]>,
    pub out_port: String,
    /// `pop_eth` first (a `legacy_l3` port).
    pub pop_eth: bool,
}

impl std::fmt::Display for TnlPush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::net::{Ipv4Addr, Ipv6Addr};
        let h = &self.header[..];
        if self.pop_eth {
            write!(f, "pop_eth,")?;
        }
        write!(
            f,
            "tnl_push(tnl_port({}),header(size={},type={},",
            self.tnl_port,
            h.len(),
            self.kind
        )?;
        if h.len() < 14 {
            return write!(f, "),out_port({}))", self.out_port);
        }
        let mac = |m: &[u8]| {
            m.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        };
        let be16 = |i: usize| {
            h.get(i..i + 2)
                .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
        };
        let be32 = |i: usize| {
            h.get(i..i + 4)
                .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let dl_type = be16(12);
        write!(
            f,
            "eth(dst={},src={},dl_type={dl_type:#06x}),",
            mac(&h[0..6]),
            mac(&h[6..12])
        )?;
        let (l4, proto) = if dl_type == 0x86dd && h.len() >= 54 {
            let ip = &h[14..54];
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s.copy_from_slice(&ip[8..24]);
            d.copy_from_slice(&ip[24..40]);
            write!(
                f,
                "ipv6(src={},dst={},label={},proto={},tclass={:#x},hlimit={}),",
                Ipv6Addr::from(s),
                Ipv6Addr::from(d),
                be32(14) & 0x000f_ffff,
                ip[6],
                (be16(14) >> 4) as u8,
                ip[7]
            )?;
            (54, ip[6])
        } else if h.len() >= 34 {
            let ip = &h[14..34];
            let a = |i: usize| Ipv4Addr::new(ip[i], ip[i + 1], ip[i + 2], ip[i + 3]);
            write!(
                f,
                "ipv4(src={},dst={},proto={},tos={},ttl={},frag={:#x}),",
                a(12),
                a(16),
                ip[9],
                // C's `%#x`, as OVS prints it: a bare 0.
                if ip[1] == 0 {
                    "0".to_string()
                } else {
                    format!("{:#x}", ip[1])
                },
                ip[8],
                be16(20)
            )?;
            (34, ip[9])
        } else {
            return write!(f, "),out_port({}))", self.out_port);
        };
        if proto == 17 && h.len() >= l4 + 16 {
            write!(
                f,
                "udp(src={},dst={},csum={:#x}),",
                be16(l4),
                be16(l4 + 2),
                be16(l4 + 6)
            )?;
            let g = l4 + 8;
            if self.kind == 4 {
                write!(f, "vxlan(flags={:#x},vni={:#x})", be32(g), be32(g + 4) >> 8)?;
            } else {
                write!(f, "geneve(vni={:#x})", be32(g + 4) >> 8)?;
            }
        } else if proto == 47 && h.len() >= l4 + 4 {
            let flags = be16(l4);
            write!(f, "gre((flags={flags:#x},proto={:#x})", be16(l4 + 2))?;
            if flags & 0x2000 != 0 {
                let at = if flags & 0x8000 != 0 { l4 + 8 } else { l4 + 4 };
                write!(f, ",key={:#x}", be32(at))?;
            }
            write!(f, ")")?;
        }
        write!(f, "),out_port({}))", self.out_port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DpAction;

    fn vxlan_header() -> Vec<u8> {
        let mut h = vec![0u8; 50];
        h[0..6].copy_from_slice(&[0x0a, 0x13, 0x21, 0x63, 0x84, 0x0b]);
        h[6..12].copy_from_slice(&[0x6a, 0x19, 0xca, 0x0c, 0x2b, 0x40]);
        h[12..14].copy_from_slice(&[0x08, 0x00]);
        h[14] = 0x45;
        h[20] = 0x40;
        h[22] = 64;
        h[23] = 17;
        h[26..30].copy_from_slice(&[172, 30, 140, 1]);
        h[30..34].copy_from_slice(&[172, 30, 140, 2]);
        h[36..38].copy_from_slice(&4789u16.to_be_bytes());
        h[42] = 0x08;
        h[46..49].copy_from_slice(&[0, 0x10, 0x92]);
        h
    }

    #[test]
    fn tnl_push_and_pop_print_as_ovs_does() {
        // OVS 3.1's `ovs-appctl dpctl/dump-flows` for the same header (ports by number).
        let t = TnlPush {
            port: 1,
            tnl_port: 3,
            kind: 4,
            header: vxlan_header().into_boxed_slice(),
            out_port: "2".into(),
            pop_eth: false,
        };
        assert_eq!(
            DpAction::TnlPush(Box::new(t.clone())).to_string(),
            "tnl_push(tnl_port(3),header(size=50,type=4,eth(dst=0a:13:21:63:84:0b,\
             src=6a:19:ca:0c:2b:40,dl_type=0x0800),ipv4(src=172.30.140.1,dst=172.30.140.2,\
             proto=17,tos=0,ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0),\
             vxlan(flags=0x8000000,vni=0x1092)),out_port(2))"
        );
        let pop = DpAction::TnlPop {
            port: 4789,
            normal: true,
        };
        assert_eq!(pop.to_string(), "tnl_pop(4789)");
        assert!(!pop.is_rewrite());
        // GRE with a key, and a TOS printed as C's `%#x`.
        let mut g = vxlan_header();
        g.truncate(42);
        g[15] = 0x28;
        g[23] = 47;
        g[34..38].copy_from_slice(&[0x20, 0x00, 0x65, 0x58]);
        g[38..42].copy_from_slice(&[0, 0, 0x10, 0x92]);
        let t = TnlPush {
            kind: 3,
            header: g.into_boxed_slice(),
            ..t
        };
        assert_eq!(
            t.to_string(),
            "tnl_push(tnl_port(3),header(size=42,type=3,eth(dst=0a:13:21:63:84:0b,\
             src=6a:19:ca:0c:2b:40,dl_type=0x0800),ipv4(src=172.30.140.1,dst=172.30.140.2,\
             proto=47,tos=0x28,ttl=64,frag=0x4000),gre((flags=0x2000,proto=0x6558),\
             key=0x1092)),out_port(2))"
        );
        // A legacy_l3 GRE port: OVS 3.1's tunnel-push-pop test ("L3GRE tunnel push").
        let mut g = t.header.to_vec();
        g[15] = 0;
        g[36..38].copy_from_slice(&[0x08, 0x00]);
        g[38..42].copy_from_slice(&0x1c8u32.to_be_bytes());
        let t = TnlPush {
            header: g.into_boxed_slice(),
            pop_eth: true,
            ..t
        };
        assert_eq!(
            t.to_string(),
            "pop_eth,tnl_push(tnl_port(3),header(size=42,type=3,eth(dst=0a:13:21:63:84:0b,\
             src=6a:19:ca:0c:2b:40,dl_type=0x0800),ipv4(src=172.30.140.1,dst=172.30.140.2,\
             proto=47,tos=0,ttl=64,frag=0x4000),gre((flags=0x2000,proto=0x800),\
             key=0x1c8)),out_port(2))"
        );
    }
}
