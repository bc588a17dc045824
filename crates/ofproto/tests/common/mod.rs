//! What the ofproto integration tests share: a switch with live ports and a rule set, the
//! IPv4/UDP frames they send, and a run of a frame through translation and the datapath
//! actions. Each test file uses part of it.
#![allow(dead_code)]

use ofproto::odp::{apply_all, DpAction};
use ofproto::switch::OfPort;
use ofproto::{xlate, Ofproto, XlateOut};
use openflow::text::{parse_flow, parse_group};
use openflow::{FlowModCommand, GroupModCommand};
use packet::flow::{self, ETH_TYPE_IPV4, ETH_TYPE_MPLS};
use packet::Pool;

/// A port `ofport` named `p{ofport}`, up and flooding.
pub fn port(ofport: u32) -> OfPort {
    OfPort {
        ofport,
        name: format!("p{ofport}"),
        live: true,
        no_flood: false,
        admin_down: false,
    }
}

/// A switch with live ports `1..=ports`, then `groups` and `rules` (ovs-ofctl text) added in
/// that order. A rule or group that does not parse or install fails the test, naming it.
pub fn switch_with(ports: u32, groups: &[&str], rules: &[&str]) -> Ofproto {
    let mut of = Ofproto::new();
    for p in 1..=ports {
        of.set_port(port(p));
    }
    for g in groups {
        let gm = parse_group(g, GroupModCommand::Add).unwrap_or_else(|e| panic!("{g}: {e}"));
        of.group_mod(&gm, 0)
            .unwrap_or_else(|e| panic!("{g}: {e:?}"));
    }
    for r in rules {
        let fm = parse_flow(r, FlowModCommand::Add).unwrap_or_else(|e| panic!("{r}: {e}"));
        of.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{r}: {e:?}"));
    }
    of
}

/// [`switch_with`] three ports and no groups.
pub fn switch(rules: &[&str]) -> Ofproto {
    switch_with(3, &[], rules)
}

/// An Ethernet (02:..:01 -> 02:..:02) / IPv4 (10.0.0.1 -> 10.0.0.2, TTL 64, 28 bytes) /
/// UDP frame; every field a test varies is here, the rest is fixed.
#[derive(Clone, Debug)]
pub struct Udp4 {
    /// VLAN tags outermost first, as (TPID, TCI).
    pub tags: Vec<(u16, u16)>,
    /// MPLS label stack entries outermost first (EtherType 0x8847 when not empty).
    pub labels: Vec<u32>,
    pub tos: u8,
    pub id: u16,
    /// The flags and fragment offset word.
    pub frag: u16,
    pub sport: u16,
    pub dport: u16,
}

impl Default for Udp4 {
    fn default() -> Udp4 {
        Udp4 {
            tags: Vec::new(),
            labels: Vec::new(),
            tos: 0,
            id: 0,
            frag: 0,
            sport: 5000,
            dport: 5001,
        }
    }
}

impl Udp4 {
    /// The frame's bytes, IPv4 checksum filled in (UDP checksum 0).
    pub fn bytes(&self) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        for (tpid, tci) in &self.tags {
            f.extend_from_slice(&tpid.to_be_bytes());
            f.extend_from_slice(&tci.to_be_bytes());
        }
        let ty = if self.labels.is_empty() {
            ETH_TYPE_IPV4
        } else {
            ETH_TYPE_MPLS
        };
        f.extend_from_slice(&ty.to_be_bytes());
        for l in &self.labels {
            f.extend_from_slice(&l.to_be_bytes());
        }
        let (id, fr) = (self.id.to_be_bytes(), self.frag.to_be_bytes());
        let mut ip = vec![
            0x45, self.tos, 0, 28, id[0], id[1], fr[0], fr[1], 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0,
            2,
        ];
        let c = packet::csum::checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&self.sport.to_be_bytes());
        f.extend_from_slice(&self.dport.to_be_bytes());
        f.extend_from_slice(&[0, 8, 0, 0]);
        f
    }
}

/// Runs `f`, arriving on port 1, through the pipeline and then its datapath actions (in
/// order, on one buffer); returns the frame as it stands at the end, and the translation.
pub fn forward(of: &Ofproto, f: &[u8]) -> (Vec<u8>, XlateOut) {
    let key = flow::extract(f, 1);
    let x = xlate(of, &key, Some(f), None);
    let mut pool = Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    p.set_frame(f);
    apply_all(&mut p, &x.actions);
    let out = p.data().to_vec();
    pool.free(p);
    (out, x)
}

/// The ports of the translation's output actions, in order.
pub fn outputs(acts: &[DpAction]) -> Vec<u32> {
    acts.iter()
        .filter_map(|a| match a {
            DpAction::Output(p) => Some(*p),
            _ => None,
        })
        .collect()
}
