//! The `tuple3` module: mSwitch's 3-tuple filter for user-space network stacks.
//!
//! Each port (typically one application with its own stack) registers the (IPv4 destination,
//! protocol, destination port) tuples it serves: `tuple3-add BR PORT IP PROTO PORTNUM`. A tuple
//! belongs to one port; registering a tuple another port owns is refused.
//!
//! ## Forwarding rules
//! 1. Only untagged IPv4 with a valid header (version 4, IHL >= 5, total length within the
//!    frame) and a correct header checksum is forwarded; anything else is dropped and counted
//!    (`not_ipv4`, `bad_header`, `bad_checksum`). Non-first fragments carry no ports and are
//!    dropped (`fragment`).
//! 2. A port that registered tuples may only send packets whose *source* (IP, protocol, port)
//!    is one of its own tuples; others are dropped as `spoofed`. So one application cannot
//!    impersonate another.
//! 3. A packet whose destination tuple is registered goes to the owning port.
//! 4. Otherwise, a packet from a registered port goes to the uplink port (`tuple3-uplink BR
//!    PORT`) if one is set — the way out to the network — and any other packet is dropped as
//!    `unregistered`.
//!
//! Protocols other than TCP, UDP and SCTP have no ports; their tuples use port 0.

use crate::fasthash::{FastMap, FastState};
use crate::module::{Ctx, Delivery, Dest, ModuleCommand, ModuleError, PortLookup, SwitchLogic};
use packet::wire::{EthernetFrame, Ipv4Packet, L4Ports, ETH_TYPE_IPV4};
use packet::{Batch, Pool};
use std::fmt;
use std::net::Ipv4Addr;

/// This module in the registry ([`crate::registry`]).
pub const REGISTRATION: crate::registry::Registration = crate::registry::Registration {
    name: "tuple3",
    create: || Ok(Box::new(Tuple3::new())),
};

#[inline(always)]
fn tkey(ip: u32, proto: u8, port: u16) -> u64 {
    (u64::from(ip) << 24) | (u64::from(proto) << 16) | u64::from(port)
}

fn key_parts(k: u64) -> (Ipv4Addr, u8, u16) {
    (Ipv4Addr::from((k >> 24) as u32), (k >> 16) as u8, k as u16)
}

/// Drop counters of the module.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tuple3Stats {
    pub forwarded: u64,
    pub to_uplink: u64,
    pub not_ipv4: u64,
    pub bad_header: u64,
    pub bad_checksum: u64,
    pub fragment: u64,
    pub spoofed: u64,
    pub unregistered: u64,
}

/// See the module documentation.
pub struct Tuple3 {
    owners: FastMap<u64, u16>,
    regs: Vec<u32>,
    uplink: Option<u16>,
    stats: Tuple3Stats,
}

impl Default for Tuple3 {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a `tuple3-add`/`tuple3-del` tuple (`IP PROTO PORTNUM`) does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadTuple {
    /// Not three words.
    Arity,
    /// The first word is not an IPv4 address.
    Ip(String),
    /// The second word is not a protocol.
    Proto(String),
    /// The third word is not a port number.
    Port(String),
}

impl fmt::Display for BadTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadTuple::Arity => f.write_str("expected IP PROTO PORTNUM"),
            BadTuple::Ip(s) => write!(f, "'{s}' is not an IPv4 address"),
            BadTuple::Proto(s) => {
                write!(f, "'{s}' is not a protocol (tcp, udp, sctp, icmp or 0-255)")
            }
            BadTuple::Port(s) => write!(f, "'{s}' is not a port number (0-65535)"),
        }
    }
}

fn proto_num(s: &str) -> Result<u8, BadTuple> {
    match s.to_ascii_lowercase().as_str() {
        "tcp" => Ok(6),
        "udp" => Ok(17),
        "sctp" => Ok(132),
        "icmp" => Ok(1),
        other => other
            .parse::<u8>()
            .map_err(|_| BadTuple::Proto(s.to_string())),
    }
}

fn proto_name(p: u8) -> String {
    match p {
        6 => "tcp".into(),
        17 => "udp".into(),
        132 => "sctp".into(),
        1 => "icmp".into(),
        n => n.to_string(),
    }
}

fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 132)
}

impl Tuple3 {
    /// An empty filter.
    pub fn new() -> Tuple3 {
        Tuple3 {
            owners: FastMap::with_hasher(FastState::random()),
            regs: Vec::new(),
            uplink: None,
            stats: Tuple3Stats::default(),
        }
    }

    /// Module counters.
    pub fn stats(&self) -> Tuple3Stats {
        self.stats
    }

    fn registered(&self, port: u16) -> bool {
        self.regs.get(port as usize).is_some_and(|&n| n > 0)
    }

    /// Registers a tuple for `port`; refused if another port owns it.
    pub fn add(&mut self, port: u16, ip: u32, proto: u8, dport: u16) -> Result<(), u16> {
        let dport = if has_ports(proto) { dport } else { 0 };
        let k = tkey(ip, proto, dport);
        match self.owners.get(&k) {
            Some(&o) if o != port => Err(o),
            Some(_) => Ok(()),
            None => {
                self.owners.insert(k, port);
                let i = port as usize;
                if self.regs.len() <= i {
                    self.regs.resize(i + 1, 0);
                }
                self.regs[i] += 1;
                Ok(())
            }
        }
    }

    fn del(&mut self, port: u16, ip: u32, proto: u8, dport: u16) -> bool {
        let dport = if has_ports(proto) { dport } else { 0 };
        let k = tkey(ip, proto, dport);
        if self.owners.get(&k) == Some(&port) {
            self.owners.remove(&k);
            if let Some(n) = self.regs.get_mut(port as usize) {
                *n = n.saturating_sub(1);
            }
            true
        } else {
            false
        }
    }

    #[inline(always)]
    fn lookup_one(&mut self, in_port: u16, d: &[u8]) -> Dest {
        let eth = match EthernetFrame::new_checked(d) {
            Ok(e) if !e.is_tagged() && e.ethertype() == ETH_TYPE_IPV4 => e,
            _ => {
                self.stats.not_ipv4 += 1;
                return Dest::Drop;
            }
        };
        let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else {
            self.stats.bad_header += 1;
            return Dest::Drop;
        };
        if !ip.checksum_ok() {
            self.stats.bad_checksum += 1;
            return Dest::Drop;
        }
        if ip.frag_offset() != 0 {
            self.stats.fragment += 1;
            return Dest::Drop;
        }
        let proto = ip.protocol();
        let src = u32::from_be_bytes(ip.src());
        let dst = u32::from_be_bytes(ip.dst());
        let (sport, dport) = if has_ports(proto) {
            match L4Ports::new_checked(ip.payload()) {
                Ok(p) => (p.src_port(), p.dst_port()),
                Err(_) => {
                    self.stats.bad_header += 1;
                    return Dest::Drop;
                }
            }
        } else {
            (0, 0)
        };
        let from_registered = self.registered(in_port);
        if from_registered && self.owners.get(&tkey(src, proto, sport)) != Some(&in_port) {
            self.stats.spoofed += 1;
            return Dest::Drop;
        }
        match self.owners.get(&tkey(dst, proto, dport)) {
            Some(&o) if o != in_port => {
                self.stats.forwarded += 1;
                Dest::Port(o)
            }
            Some(_) => {
                self.stats.unregistered += 1;
                Dest::Drop
            }
            None => match self.uplink {
                Some(u) if from_registered && u != in_port => {
                    self.stats.to_uplink += 1;
                    Dest::Port(u)
                }
                _ => {
                    self.stats.unregistered += 1;
                    Dest::Drop
                }
            },
        }
    }
}

const COMMANDS: &[ModuleCommand] = &[
    ModuleCommand {
        verb: "tuple3-add",
        usage: "BR PORT IP PROTO PORTNUM",
    },
    ModuleCommand {
        verb: "tuple3-del",
        usage: "BR PORT IP PROTO PORTNUM",
    },
    ModuleCommand {
        verb: "tuple3-uplink",
        usage: "BR PORT|none",
    },
    ModuleCommand {
        verb: "tuple3-show",
        usage: "BR",
    },
];

fn parse_tuple(args: &[String]) -> Result<(u32, u8, u16), BadTuple> {
    let [ip, proto, port] = args else {
        return Err(BadTuple::Arity);
    };
    let ip: Ipv4Addr = ip.parse().map_err(|_| BadTuple::Ip(ip.clone()))?;
    let proto = proto_num(proto)?;
    let port: u16 = port.parse().map_err(|_| BadTuple::Port(port.clone()))?;
    Ok((u32::from(ip), proto, port))
}

/// The port named `s` (a name or an OpenFlow port number).
fn port_named(ports: &dyn PortLookup, s: &str) -> Result<crate::module::PortInfo, ModuleError> {
    ports
        .resolve(s)
        .ok_or_else(|| ModuleError::NoSuchPort(s.to_string()))
}

/// A tuple as users write it: `IP/PROTO/PORT`.
fn tuple_text(ip: u32, proto: u8, dport: u16) -> String {
    format!("{}/{}/{dport}", Ipv4Addr::from(ip), proto_name(proto))
}

impl Tuple3 {
    /// `tuple3-add`/`tuple3-del BR PORT IP PROTO PORTNUM`: registers or withdraws the
    /// tuple for the port.
    fn add_or_del(
        &mut self,
        verb: &str,
        port: &str,
        tuple: &[String],
        ports: &dyn PortLookup,
    ) -> Result<(), ModuleError> {
        let p = port_named(ports, port)?;
        let (ip, proto, dport) = parse_tuple(tuple).map_err(|why| ModuleError::BadTuple {
            verb: verb.to_string(),
            why,
        })?;
        if verb == "tuple3-add" {
            self.add(p.idx, ip, proto, dport)
                .map_err(|o| ModuleError::TupleTaken {
                    tuple: tuple_text(ip, proto, dport),
                    owner: ports.info(o).map(|i| i.name).unwrap_or_else(|| "?".into()),
                })
        } else if self.del(p.idx, ip, proto, dport) {
            Ok(())
        } else {
            Err(ModuleError::NoTuple {
                port: p.name,
                tuple: tuple_text(ip, proto, dport),
            })
        }
    }

    /// `tuple3-show`: the registered tuples (sorted), the uplink and the counters.
    fn show(&self, json: bool, ports: &dyn PortLookup) -> String {
        let mut rows: Vec<(String, Ipv4Addr, u8, u16)> = self
            .owners
            .iter()
            .map(|(k, o)| {
                let (ip, pr, pt) = key_parts(*k);
                let n = ports.info(*o).map(|i| i.name).unwrap_or_else(|| "?".into());
                (n, ip, pr, pt)
            })
            .collect();
        rows.sort();
        let up = self.uplink.and_then(|u| ports.info(u)).map(|i| i.name);
        let s = &self.stats;
        if json {
            let t: Vec<_> = rows
                .iter()
                .map(|(n, ip, pr, pt)| {
                    serde_json::json!({"port": n, "ip": ip.to_string(), "proto": proto_name(*pr), "port_num": pt})
                })
                .collect();
            return serde_json::json!({
                "tuples": t, "uplink": up,
                "stats": {"forwarded": s.forwarded, "to_uplink": s.to_uplink,
                    "not_ipv4": s.not_ipv4, "bad_header": s.bad_header,
                    "bad_checksum": s.bad_checksum, "fragment": s.fragment,
                    "spoofed": s.spoofed, "unregistered": s.unregistered}
            })
            .to_string();
        }
        let mut out = String::new();
        for (n, ip, pr, pt) in &rows {
            out.push_str(&format!("{n}: {ip} {} {pt}\n", proto_name(*pr)));
        }
        out.push_str(&format!(
            "uplink: {}\nforwarded={} to_uplink={} not_ipv4={} bad_header={} bad_checksum={} fragment={} spoofed={} unregistered={}\n",
            up.unwrap_or_else(|| "none".into()),
            s.forwarded, s.to_uplink, s.not_ipv4, s.bad_header, s.bad_checksum,
            s.fragment, s.spoofed, s.unregistered
        ));
        out
    }
}

impl SwitchLogic for Tuple3 {
    fn name(&self) -> &'static str {
        "tuple3"
    }

    fn forward(&mut self, _ctx: &Ctx, batch: &mut Batch, pool: &mut Pool, out: &mut Delivery<'_>) {
        out.by_dest(batch, pool, |batch, dests| {
            for (pkt, d) in batch.packets().iter().zip(dests.iter_mut()) {
                *d = self.lookup_one(pkt.in_port, pkt.data());
            }
        });
    }

    fn port_removed(&mut self, idx: u16) {
        self.owners.retain(|_, o| *o != idx);
        if let Some(n) = self.regs.get_mut(idx as usize) {
            *n = 0;
        }
        if self.uplink == Some(idx) {
            self.uplink = None;
        }
    }

    fn commands(&self) -> &'static [ModuleCommand] {
        COMMANDS
    }

    fn command(
        &mut self,
        verb: &str,
        args: &[String],
        json: bool,
        _ctx: &Ctx,
        ports: &dyn PortLookup,
    ) -> Result<String, ModuleError> {
        let usage = |usage| ModuleError::Usage {
            verb: verb.to_string(),
            usage,
        };
        match (verb, args) {
            ("tuple3-add" | "tuple3-del", [p, rest @ ..]) => {
                self.add_or_del(verb, p, rest, ports)?;
                Ok(String::new())
            }
            ("tuple3-add" | "tuple3-del", []) => Err(usage("BR PORT IP PROTO PORTNUM")),
            ("tuple3-uplink", [a]) if a == "none" => {
                self.uplink = None;
                Ok(String::new())
            }
            ("tuple3-uplink", [a]) => {
                self.uplink = Some(port_named(ports, a)?.idx);
                Ok(String::new())
            }
            ("tuple3-uplink", _) => Err(usage("BR PORT|none")),
            ("tuple3-show", []) => Ok(self.show(json, ports)),
            ("tuple3-show", _) => Err(usage("BR")),
            _ => Err(ModuleError::NoSuchVerb {
                module: "tuple3",
                verb: verb.to_string(),
            }),
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("forwarded", s.forwarded),
            ("to_uplink", s.to_uplink),
            ("not_ipv4", s.not_ipv4),
            ("bad_header", s.bad_header),
            ("bad_checksum", s.bad_checksum),
            ("fragment", s.fragment),
            ("spoofed", s.spoofed),
            ("unregistered", s.unregistered),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12] = 0x08;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&dst);
        let c = packet::csum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    const APP: [u8; 4] = [10, 0, 0, 2];
    const PEER: [u8; 4] = [10, 0, 0, 1];

    #[test]
    fn forwards_only_registered_valid_packets() {
        let mut t = Tuple3::new();
        // Port 1 is the application, port 0 the uplink.
        t.add(1, u32::from_be_bytes(APP), 17, 7000).expect("add");
        assert_eq!(t.add(2, u32::from_be_bytes(APP), 17, 7000), Err(1));
        assert!(t.add(1, u32::from_be_bytes(APP), 17, 7000).is_ok());
        t.uplink = Some(0);
        let good = udp(PEER, 5555, APP, 7000);
        assert_eq!(t.lookup_one(0, &good), Dest::Port(1));
        let mut bad = good.clone();
        bad[24] ^= 0xff;
        assert_eq!(t.lookup_one(0, &bad), Dest::Drop);
        assert_eq!(t.stats().bad_checksum, 1);
        assert_eq!(t.lookup_one(0, &udp(PEER, 5555, APP, 7001)), Dest::Drop);
        assert_eq!(t.stats().unregistered, 1);
        // The application answers from its tuple: goes to the uplink.
        assert_eq!(t.lookup_one(1, &udp(APP, 7000, PEER, 5555)), Dest::Port(0));
        // ...but cannot send from a tuple it does not own.
        assert_eq!(t.lookup_one(1, &udp(APP, 7001, PEER, 5555)), Dest::Drop);
        assert_eq!(
            t.lookup_one(1, &udp([10, 0, 0, 9], 7000, PEER, 5555)),
            Dest::Drop
        );
        assert_eq!(t.stats().spoofed, 2);
        // A truncated IPv4 header, and a non-IP frame.
        assert_eq!(t.lookup_one(0, &good[..30]), Dest::Drop);
        assert_eq!(t.stats().bad_header, 1);
        let mut arp = good.clone();
        arp[13] = 0x06;
        assert_eq!(t.lookup_one(0, &arp), Dest::Drop);
        assert_eq!(t.stats().not_ipv4, 1);
    }

    #[test]
    fn never_panics_on_short_or_odd_headers() {
        let mut t = Tuple3::new();
        t.add(1, u32::from_be_bytes(APP), 17, 7000).expect("add");
        let good = udp(PEER, 5555, APP, 7000);
        for n in 0..good.len() {
            let _ = t.lookup_one(0, &good[..n]);
        }
        for ihl in 0..16u8 {
            let mut f = good.clone();
            f[14] = 0x40 | ihl;
            let _ = t.lookup_one(0, &f);
        }
    }
}
