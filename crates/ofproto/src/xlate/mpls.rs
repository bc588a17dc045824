//! MPLS `push_mpls` and `pop_mpls`, as OVS 3.1 translates them.
//!
//! OVS's flow holds at most three labels ([`MAX_LABELS`]); a push onto three, or a pop
//! that needs a fourth, fails the translation (the packet is dropped; a packet-out gets
//! an error). A push onto a packet without labels builds the first entry from the packet:
//! label 0 (IPv4 explicit null) or 2 (IPv6), TC from the DSCP (its low three bits, as OVS
//! computes it), TTL from the IP TTL (64 when that is 0, or for non-IP packets), and the
//! flow forgets its L3 and L4 fields and the select hash. A pop to a non-MPLS EtherType
//! leaves no label in the flow, so the datapath pops every label the packet has (the
//! inner ones with EtherType 0x8847, the last with the one asked for) and the packet is
//! parsed again for what follows (OVS recirculates for that).
//!
//! Threading: runs inside one translation; no shared state.

use super::select::clear_after_l2;
use super::Ctx;
use crate::odp::DpAction;
use openflow::Field;
use packet::flow;

/// The most labels OVS's flow holds (`FLOW_MAX_MPLS_LABELS`).
pub const MAX_LABELS: usize = 3;

const BOS: u32 = 0x100;

fn is_mpls_type(t: u16) -> bool {
    t == flow::ETH_TYPE_MPLS || t == flow::ETH_TYPE_MPLS_MCAST
}

impl Ctx<'_> {
    /// Labels the flow holds, as OVS counts them (up to the bottom of stack, at most
    /// [`MAX_LABELS`]); 0 for a packet that is not MPLS.
    fn mpls_labels(&mut self) -> usize {
        if !self.is_mpls() {
            return 0;
        }
        usize::from(self.flow.mpls_n).min(MAX_LABELS)
    }

    pub(super) fn push_mpls(&mut self, ethertype: u16) {
        let n = self.mpls_labels();
        let lse = if n == 0 {
            let ip = self.is_ip();
            let label: u32 = if self.flow.dl_type == flow::ETH_TYPE_IPV6 {
                2
            } else {
                0
            };
            let (tc, ttl) = if ip {
                self.unwild(Field::NwTtl);
                self.wc.nw_tos |= 0xfc;
                let tc = u32::from((self.flow.nw_tos & 0xfc) >> 2) & 7;
                let ttl = match self.flow.nw_ttl {
                    0 => 64,
                    t => u32::from(t),
                };
                (tc, ttl)
            } else {
                (0, 64)
            };
            clear_after_l2(&mut self.flow);
            self.flow.dp_hash = 0;
            self.dp_hashed = false;
            label << 12 | tc << 9 | BOS | ttl
        } else if n >= MAX_LABELS {
            self.fail(|| format!("push_mpls: the packet would have more than {MAX_LABELS} labels"));
            return;
        } else {
            for m in &mut self.wc.mpls_lse[..n] {
                *m = u32::MAX;
            }
            self.flow.mpls_lse[0] & !BOS
        };
        let l = &mut self.flow.mpls_lse;
        *l = [lse, l[0], l[1], l[2]];
        self.flow.mpls_n = self.flow.mpls_n.saturating_add(1).min(4);
        self.flow.dl_type = ethertype;
        // The label goes after the tags the flow holds: a tag hidden beyond vlan-limit
        // (the EtherType still a VLAN TPID) ends up behind it.
        let tags = self
            .flow
            .vlan_tci
            .iter()
            .take_while(|t| **t & flow::VLAN_PRESENT != 0)
            .count() as u8;
        self.out.push(DpAction::PushMpls {
            ethertype,
            lse,
            tags,
        });
    }

    pub(super) fn pop_mpls(&mut self, ethertype: u16) {
        let n = self.mpls_labels();
        if n == 0 {
            return;
        }
        for m in &mut self.wc.mpls_lse[..n] {
            *m = u32::MAX;
        }
        if n == MAX_LABELS && self.flow.mpls_lse[n - 1] & BOS == 0 {
            self.fail(|| format!("pop_mpls: the packet has more than {MAX_LABELS} labels"));
            return;
        }
        if is_mpls_type(ethertype) {
            let bos = self.flow.mpls_lse[0] & BOS != 0;
            self.out.push(DpAction::PopMpls(ethertype));
            let l = self.flow.mpls_lse;
            self.flow.mpls_lse = [l[1], l[2], l[3], 0];
            self.flow.mpls_n = self.flow.mpls_n.saturating_sub(1);
            self.flow.dl_type = ethertype;
            if bos {
                self.reparse();
            }
            return;
        }
        for _ in 1..n {
            self.out.push(DpAction::PopMpls(flow::ETH_TYPE_MPLS));
        }
        self.out.push(DpAction::PopMpls(ethertype));
        self.flow.mpls_lse = [0; 4];
        self.flow.mpls_n = 0;
        self.flow.dl_type = ethertype;
        self.reparse();
    }
}
