//! The tunnel port map translation asks (`ofproto::native`), answered from the `netdev`
//! crate's tunnel tables, and installed by the first [`Udpif`](super::Udpif).
//!
//! A packet to an underlay's internal port is a tunnel packet to this switch when it is
//! IPv4 or IPv6, not a later fragment, to the underlay's address (or a tunnel's `local_ip`),
//! and UDP to a tunnel's `dst_port` (or GRE): the fields OVS's tunnel port map looks at, made
//! exact in the megaflow. The answer changes with the tunnel ports and the underlay's
//! addresses: the revalidator re-checks every megaflow when `netdev::tunnel::generation`
//! moves.

use packet::flow::{FlowKey, ETH_TYPE_IPV4, ETH_TYPE_IPV6};
use std::net::IpAddr;

/// `ofproto::native::NativeTunnels` over the `netdev` tunnel tables.
pub struct Tunnels;

impl ofproto::native::NativeTunnels for Tunnels {
    fn pop_port(&self, port: &str, flow: &FlowKey, mac: bool, wc: &mut FlowKey) -> Option<u32> {
        let own_mac = netdev::tunnel::underlay::listens(port)?;
        if mac {
            wc.dl_dst = [0xff; 6];
            wc.vlan_tci = [0xffff; 2];
            if flow.dl_dst != own_mac || flow.vlan_tci[0] != 0 {
                return None;
            }
        }
        wc.dl_type = 0xffff;
        let dst = match flow.dl_type {
            ETH_TYPE_IPV4 => {
                wc.nw_dst = [0xff; 4];
                IpAddr::from(flow.nw_dst)
            }
            ETH_TYPE_IPV6 => {
                wc.ipv6_dst = [0xff; 16];
                IpAddr::from(flow.ipv6_dst)
            }
            _ => return None,
        };
        wc.nw_frag = 0xff;
        if flow.nw_frag != 0 {
            return None;
        }
        wc.nw_proto = 0xff;
        if flow.nw_proto == 17 {
            wc.tp_dst = 0xffff;
        }
        netdev::tunnel::underlay::listening(port, dst, flow.nw_proto, flow.tp_dst)
    }

    fn push(
        &self,
        port: &str,
        ofport: u32,
        flow: &FlowKey,
        wc: &mut FlowKey,
    ) -> Option<ofproto::native::TnlPush> {
        if !netdev::tunnel::table::active() {
            return None;
        }
        if netdev::tunnel::underlay::key_from_flow(port) {
            wc.tunnel_id = u64::MAX;
        }
        // A Group Policy port writes the flow's ID and flags into the header.
        if netdev::tunnel::underlay::sends_gbp(port) {
            wc.tun_gbp_id = u16::MAX;
            wc.tun_gbp_flags = u8::MAX;
        }
        // Geneve options from the flow follow the header: not one header for all.
        wc.tun_opts_present = u64::MAX;
        if flow.tun_opts_present != 0 {
            return None;
        }
        // Likewise the OAM flag (Geneve's O bit), which the port sets per packet. A
        // packet from a local port has it only if the pipeline set it (then the rule
        // doing so is in the megaflow); one a tunnel brought keeps the one it came with.
        let oam = flow.tun_flags & packet::flow::TUN_F_OAM != 0;
        if oam || flow.tun_dst != [0; 4] || flow.tun_ipv6_dst != [0; 16] {
            wc.tun_flags |= packet::flow::TUN_F_OAM;
        }
        if oam {
            return None;
        }
        // A legacy_l3 port sends the flow's EtherType as its GRE protocol.
        let pop_eth = netdev::tunnel::underlay::sends_l3(port);
        if pop_eth {
            wc.dl_type = u16::MAX;
        }
        let (tnl_port, kind, header, out_port) = netdev::tunnel::underlay::push_header(port, flow)?;
        Some(ofproto::native::TnlPush {
            port: ofport,
            tnl_port,
            kind,
            header: header.into_boxed_slice(),
            out_port,
            pop_eth,
        })
    }
}

/// Installs [`Tunnels`] as the process's map (once).
pub fn install() {
    static MAP: Tunnels = Tunnels;
    ofproto::native::install(&MAP);
}
