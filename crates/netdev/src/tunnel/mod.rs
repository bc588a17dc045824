//! # Tunnel ports: `vxlan`, `geneve`, `gre` with native tunnelling
//!
//! ## What
//! A tunnel port sits on a bridge like any port (usually the integration bridge) and is
//! configured as in OVS: `type=vxlan|geneve|gre`, `options:remote_ip=IP|flow`,
//! `local_ip=IP` (IPv4 or IPv6, as in OVS: a `gre` port with IPv6 addresses is OVS's
//! `ip6gre`), `key`/`in_key`/`out_key=N|flow`, `dst_port`, `csum`, `tos`, `ttl`,
//! `df_default`, `packet_type` (`legacy_l2`; `legacy_l3` on `gre`, see below), `exts=gbp`
//! (VXLAN Group Policy: the header's group policy ID and D/A flags travel as the packet's
//! `tun_gbp_id`/`tun_gbp_flags`; one UDP port is all Group Policy or all plain, as in OVS).
//! It owns no socket and no kernel device: its outer
//! packets travel over an *underlay*, the bridge whose internal port owns the local address
//! (OVS's "native tunnelling" in the userspace datapath).
//!
//! ## How
//! * **Receive.** Every `internal` port is wrapped ([`underlay::UnderlayPort`]). When the
//!   underlay bridge forwards a packet to its internal port (the host's address), the wrapper
//!   looks at it before the host does: an IPv4 or IPv6 UDP packet to a tunnel's port (or GRE) for a
//!   tunnel whose remote address, local address and key fit is decapsulated right there (the
//!   outer headers popped; key, outer addresses, TOS, TTL and flags kept as the packet's
//!   [`packet::TunMeta`]) and queued to that tunnel port, which the poll thread then receives
//!   like any port: the tunnel port is the packet's `in_port` and the OpenFlow module puts
//!   the key and outer addresses in the flow key (`tun_id`, `tun_src`, `tun_dst`, or
//!   `tun_ipv6_src`, `tun_ipv6_dst` over IPv6). ARP packets and IPv6 Neighbor
//!   Advertisements seen there teach the neighbour cache.
//! * **Send.** Packets the bridge sends to the tunnel port get the outer headers of the
//!   tunnel's resolved next hop ([`wire::Template`]: MACs from the neighbour cache, addresses,
//!   UDP source port from the inner flow's hash, key from the configuration or, with
//!   `key=flow`, from the packet's metadata as the pipeline set it; with `remote_ip=flow`
//!   the remote is the `tun_dst` the pipeline set, or else its `tun_ipv6_dst`, as OVS
//!   picks them) and go to the underlay's internal port as if the host had sent them, so
//!   the underlay bridge's flows (`NORMAL` by default) carry them out. During a poll they
//!   stay on the poll thread ([`direct`]): the datapath forwards each outer burst through
//!   the underlay bridge right after the pass that produced it (one pass, as OVS's
//!   `tnl_push`); otherwise, or when no copy of the underlay bridge is on that thread,
//!   they are queued to the internal port's receive queue.
//! * **In the megaflows.** Translation asks this module (through `ofproto::native`,
//!   answered by the datapath from [`underlay::listening`] and [`underlay::push_header`])
//!   whether an output to an underlay's internal port carries a tunnel packet to the switch
//!   (the megaflow's action is then OVS's `tnl_pop(N)`, executed by handing the packet to
//!   that port, whose wrapper pops it) and what an output to a tunnel port pushes (then
//!   `tnl_push(tnl_port(N),header(...),out_port(..))`: the template's bytes with the key,
//!   executed by handing the packet to the tunnel port, which pushes that template).
//!   [`table::generation`] moves whenever either answer may have changed, and the
//!   datapath's revalidator then re-checks every megaflow.
//! * **L3 tunnels.** A `gre` port with `packet_type=legacy_l3` carries L3 packets (GRE
//!   protocol = EtherType, as Linux's `ip tunnel ... mode gre`). The bridge still sees
//!   Ethernet frames, as OVS's pipeline does for such a port: on send the port strips the
//!   Ethernet header and VLAN tags ([`wire::Template::push_l3`]; the megaflow shows OVS's
//!   `pop_eth,tnl_push(...)` with the flow's EtherType in the header), and a received L3
//!   packet gets an Ethernet header with zero MACs and its EtherType ([`wire::pop`]). An L3
//!   packet goes only to a `legacy_l3` port, Ethernet-in-GRE only to the others.
//!   `ptap` (and VXLAN's `exts=gpe`) need packet types in the pipeline: refused.
//! * **Resolution** runs off the poll threads ([`table`]): route to the remote address from
//!   the kernel's tables (IPv4 and IPv6) and `ovs/route/add`, the internal port it names,
//!   the next hop's MAC from ARP / Neighbor Advertisement snooping, `tnl/neigh/set`, or the
//!   switch's own ARP request / Neighbor Solicitation.
//!
//! ## Invariants
//! A bridge without tunnel ports pays nothing: the wrapper tests one flag per burst; the
//! OpenFlow module tests one flag per received batch (a batch comes from one port, and a
//! tunnel port sets the metadata on every packet it receives). No allocation per packet
//! anywhere here. Packets cross between a tunnel port and its underlay a burst at a time
//! ([`table::Bursts`]: the batch's storage travels, and comes back empty to be reused);
//! queues are bounded (full: drop and count).
//!
//! ## Threads
//! Port handles belong to one poll thread at a time (the [`crate::Port`] contract); the
//! shared halves ([`table::Tunnel`], [`table::Underlay`]) are `Sync` and read without locks
//! on the fast path.

pub mod direct;
pub mod knobs;
pub mod nd;
pub mod route;
pub mod table;
pub mod underlay;
pub mod wire;

use crate::{check_options, parse_bool, NetdevError, Options, Port, PortStats};
use packet::{Batch, Pool};
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use wire::Proto;

pub use table::{
    neigh_flush, neigh_set, neigh_show, ports_show, resolved, route_add, route_del, route_lookup,
    route_show,
};

/// An address option: a fixed address or `flow` (taken from the packet's metadata).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    Fixed(IpAddr),
    Flow,
}

/// A key option: a fixed key or `flow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Fixed(u64),
    Flow,
}

/// A tunnel port's configuration, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub proto: Proto,
    pub remote: Addr,
    pub local: Option<Addr>,
    pub in_key: Key,
    pub out_key: Key,
    pub dst_port: u16,
    pub csum: bool,
    /// `None`: inherit from the inner packet.
    pub tos: Option<u8>,
    pub ttl: u8,
    pub df_default: bool,
    /// `exts=gbp` (VXLAN only): the Group Policy extension is read from and written into
    /// the VXLAN header (`tun_gbp_id`, `tun_gbp_flags`).
    pub gbp: bool,
    /// `packet_type=legacy_l3` (GRE only): the tunnel carries L3 packets (GRE protocol =
    /// their EtherType), shown to the bridge as Ethernet frames with zero MACs.
    pub l3: bool,
}

const KNOWN: &[&str] = &[
    "remote_ip",
    "local_ip",
    "key",
    "in_key",
    "out_key",
    "dst_port",
    "csum",
    "tos",
    "ttl",
    "df_default",
    "packet_type",
    "exts",
];

fn bad(key: &str, why: String) -> NetdevError {
    NetdevError::BadOption {
        key: key.to_string(),
        why,
    }
}

fn parse_addr(key: &str, v: &str) -> Result<Addr, NetdevError> {
    if v == "flow" {
        return Ok(Addr::Flow);
    }
    match v.parse::<IpAddr>() {
        Ok(a) if !a.is_unspecified() && !a.is_multicast() => Ok(Addr::Fixed(a)),
        Ok(_) => Err(bad(key, format!("'{v}' is not a unicast address"))),
        Err(_) => Err(bad(key, format!("'{v}' is not an IP address or 'flow'"))),
    }
}

fn parse_key(proto: Proto, key: &str, v: &str) -> Result<Key, NetdevError> {
    if v == "flow" {
        return Ok(Key::Flow);
    }
    let n = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        v.parse::<u64>()
    }
    .map_err(|_| bad(key, format!("'{v}' is not a number or 'flow'")))?;
    let max: u64 = if proto == Proto::Gre {
        u64::from(u32::MAX)
    } else {
        0x00ff_ffff
    };
    if n > max {
        return Err(bad(
            key,
            format!(
                "{n} does not fit the {}'s {}-bit key",
                proto.kind(),
                if max == 0x00ff_ffff { 24 } else { 32 }
            ),
        ));
    }
    Ok(Key::Fixed(n))
}

/// Validates a tunnel port's options (every one; the first bad one is named).
pub fn parse_config(proto: Proto, opts: &Options) -> Result<Config, NetdevError> {
    check_options(proto.kind(), opts, KNOWN)?;
    let remote = match opts.get("remote_ip") {
        Some(v) => parse_addr("remote_ip", v)?,
        None => {
            return Err(NetdevError::MissingOption {
                kind: proto.kind(),
                key: "remote_ip",
            })
        }
    };
    let local = opts
        .get("local_ip")
        .map(|v| parse_addr("local_ip", v))
        .transpose()?;
    if local == Some(Addr::Flow) {
        return Err(bad("local_ip", "'flow' is not supported".into()));
    }
    if let (Addr::Fixed(r), Some(Addr::Fixed(l))) = (remote, local) {
        if r.is_ipv4() != l.is_ipv4() {
            return Err(bad(
                "local_ip",
                format!("'{l}' is not of remote_ip's family ({r})"),
            ));
        }
    }
    let key = opts
        .get("key")
        .map(|v| parse_key(proto, "key", v))
        .transpose()?;
    let in_key = match opts.get("in_key") {
        Some(v) => parse_key(proto, "in_key", v)?,
        None => key.unwrap_or(Key::Fixed(0)),
    };
    let out_key = match opts.get("out_key") {
        Some(v) => parse_key(proto, "out_key", v)?,
        None => key.unwrap_or(Key::Fixed(0)),
    };
    let dst_port = match opts.get("dst_port") {
        Some(_) if proto == Proto::Gre => {
            return Err(bad("dst_port", "GRE has no UDP port".into()))
        }
        Some(v) => v
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| bad("dst_port", format!("'{v}' is not a UDP port (1-65535)")))?,
        None => proto.default_port(),
    };
    let csum = match opts.get("csum") {
        Some(v) => parse_bool("csum", v)?,
        None => false,
    };
    let df_default = match opts.get("df_default") {
        Some(v) => parse_bool("df_default", v)?,
        None => true,
    };
    let tos = match opts.get("tos").map(String::as_str) {
        None => Some(0),
        Some("inherit") => None,
        Some(v) => Some(
            v.parse::<u8>()
                .ok()
                .ok_or_else(|| bad("tos", format!("'{v}' is not a TOS (0-255) or 'inherit'")))?,
        ),
    };
    let ttl = match opts.get("ttl").map(String::as_str) {
        None => 64,
        Some("inherit") => {
            return Err(bad("ttl", "'inherit' is not supported".into()));
        }
        Some(v) => v
            .parse::<u8>()
            .ok()
            .filter(|&t| t != 0)
            .ok_or_else(|| bad("ttl", format!("'{v}' is not a TTL (1-255)")))?,
    };
    let gbp = parse_exts(proto, opts.get("exts").map(String::as_str))?;
    let l3 = parse_packet_type(proto, opts.get("packet_type").map(String::as_str))?;
    Ok(Config {
        proto,
        remote,
        local,
        in_key,
        out_key,
        dst_port,
        csum,
        tos,
        ttl,
        df_default,
        gbp,
        l3,
    })
}

/// `packet_type`: whether the port carries L3 packets (`legacy_l3`, GRE only: OVS's rule
/// is that a port type must be able to carry L3 traffic, which VXLAN can only with
/// VXLAN-GPE and Geneve never). `ptap` (OpenFlow 1.5 packet types in the pipeline, which
/// ferrovs's Ethernet-only pipeline does not have) is refused, as is any other value.
fn parse_packet_type(proto: Proto, v: Option<&str>) -> Result<bool, NetdevError> {
    match v {
        None | Some("legacy_l2") => Ok(false),
        Some("legacy_l3") if proto == Proto::Gre => Ok(true),
        Some("legacy_l3") => Err(bad(
            "packet_type",
            format!(
                "legacy_l3 configured on {} tunnel that cannot carry L3 traffic",
                match proto {
                    Proto::Vxlan => "VXLAN (without GPE)",
                    _ => proto.kind(),
                }
            ),
        )),
        Some("ptap") => Err(bad(
            "packet_type",
            "'ptap' is not supported: the pipeline has no packet_type (only legacy_l2, and \
             legacy_l3 on gre)"
                .into(),
        )),
        Some(v) => Err(bad("packet_type", format!("unknown packet_type '{v}'"))),
    }
}

/// `exts`: a comma-separated list of VXLAN extensions; `gbp` is the one supported (OVS's
/// `gpe` is refused, as is any other name or the option on another port type).
fn parse_exts(proto: Proto, v: Option<&str>) -> Result<bool, NetdevError> {
    let Some(v) = v else { return Ok(false) };
    if proto != Proto::Vxlan {
        return Err(bad(
            "exts",
            format!("{} ports have no extensions", proto.kind()),
        ));
    }
    let mut gbp = false;
    for ext in v.split(',').filter(|e| !e.is_empty()) {
        match ext {
            "gbp" => gbp = true,
            _ => return Err(bad("exts", format!("unknown extension '{ext}'"))),
        }
    }
    Ok(gbp)
}

/// The protocol a port type names, if it is a tunnel type.
pub fn proto_of(kind: &str) -> Option<Proto> {
    match kind {
        "vxlan" => Some(Proto::Vxlan),
        "geneve" => Some(Proto::Geneve),
        "gre" => Some(Proto::Gre),
        _ => None,
    }
}

/// A tunnel port (see the module documentation).
pub struct TunnelPort {
    t: Arc<table::Tunnel>,
    opts: Vec<(String, String)>,
    stats: PortStats,
    /// The rest of a received burst that did not fit the caller's batch.
    rx: table::Drain,
}

/// Packets of a transmitted burst on their way to one underlay.
struct Outgoing {
    underlay: Arc<table::Underlay>,
    batch: Batch,
    bytes: u64,
    /// The template of the burst's first packet, and whether every packet so far used it
    /// with a fixed TOS (see [`direct::Handover::uniform`]).
    tmpl: *const table::Resolved,
    uniform: bool,
}

impl TunnelPort {
    /// Opens a tunnel port of protocol `proto`.
    pub fn open(name: &str, proto: Proto, opts: &Options) -> Result<TunnelPort, NetdevError> {
        let cfg = parse_config(proto, opts)?;
        // As OVS: one UDP port is either Group Policy VXLAN or plain VXLAN, since a
        // received packet is read by its port before any tunnel is chosen.
        if proto == Proto::Vxlan
            && table::decap_snapshot().iter().any(|t| {
                t.name != name
                    && t.cfg.proto == Proto::Vxlan
                    && t.cfg.dst_port == cfg.dst_port
                    && t.cfg.gbp != cfg.gbp
            })
        {
            return Err(bad(
                "exts",
                "VXLAN-GBP, and non-VXLAN-GBP tunnels can't be configured on the same \
                 dst_port"
                    .into(),
            ));
        }
        Ok(TunnelPort {
            t: table::add_tunnel(name, cfg),
            opts: opts.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            stats: PortStats::default(),
            rx: table::Drain::default(),
        })
    }

    /// Resolved outer headers for a `remote_ip=flow` packet going to `ip`, asking the
    /// manager for them if they are not known yet.
    fn flow_target(&self, ip: IpAddr) -> Option<Arc<table::Resolved>> {
        let found = self
            .t
            .flow_out
            .load()
            .iter()
            .find(|r| r.remote == ip)
            .cloned();
        if found.is_none() && !ip.is_unspecified() {
            if let Ok(mut w) = self.t.wanted.try_lock() {
                if w.len() < 64 && !w.contains(&ip) {
                    w.push(ip);
                }
            }
        }
        found
    }

    /// [`Port::tx_batch`] when the remote and key are fixed and no packet carries metadata
    /// (so no Geneve options): every packet gets `r`'s template with `key`, in place, and the
    /// batch's storage becomes the outer burst (an empty one takes its place).
    fn tx_resolved(&mut self, pool: &mut Pool, batch: &mut Batch, r: &table::Resolved, key: u64) {
        let mut bytes = 0u64;
        let mut errors = 0u64;
        let l3 = self.t.cfg.l3;
        batch.retain_or_free(pool, |p| {
            let ok = if l3 {
                r.tmpl.push_l3(p, key)
            } else {
                r.tmpl.push(p, key, &[])
            };
            if ok {
                bytes += p.len().saturating_sub(r.tmpl.len()) as u64;
            } else {
                errors += 1;
            }
            ok
        });
        self.stats.tx_errors += errors;
        if batch.is_empty() {
            return;
        }
        let mut burst = r.underlay.inject.spare();
        std::mem::swap(batch, &mut burst);
        let o = Outgoing {
            underlay: Arc::clone(&r.underlay),
            batch: burst,
            bytes,
            tmpl: r,
            uniform: self.t.cfg.tos.is_some(),
        };
        self.flush(o, pool);
    }

    /// Hands a burst of outer packets to its underlay bridge on this poll thread
    /// ([`direct`]) or, outside a poll, queues it to the underlay's internal port.
    fn flush(&mut self, o: Outgoing, pool: &mut Pool) {
        let n = o.batch.len() as u64;
        let h = direct::Handover {
            underlay: o.underlay,
            batch: o.batch,
            uniform: o.uniform,
        };
        let sent = match direct::offer(h) {
            Ok(()) => Ok(()),
            Err(h) => h.underlay.inject.send(h.batch, pool),
        };
        match sent {
            Ok(()) => {
                self.stats.tx_packets += n;
                self.stats.tx_bytes += o.bytes;
            }
            Err(_) => self.stats.tx_dropped += n,
        }
    }
}

/// The remote a `remote_ip=flow` packet asks for: `tun_dst` if the pipeline set it, else
/// `tun_ipv6_dst` (OVS's `flow_tnl_dst`).
fn flow_remote(m: &packet::TunMeta) -> IpAddr {
    if m.dst != [0; 4] || !m.is_ipv6() {
        IpAddr::from(m.dst)
    } else {
        IpAddr::from(m.ipv6_dst)
    }
}

impl Port for TunnelPort {
    fn name(&self) -> &str {
        &self.t.name
    }

    fn kind(&self) -> &'static str {
        self.t.cfg.proto.kind()
    }

    fn rx_batch(&mut self, _pool: &mut Pool, batch: &mut Batch) -> usize {
        let start = batch.len();
        let n = self.rx.fill(&self.t.rx, batch);
        if n > 0 {
            self.stats.rx_packets += n as u64;
            // An L3 port counts its packets without the Ethernet header it shows them with,
            // as OVS counts them.
            let shown = if self.t.cfg.l3 { 14 } else { 0 };
            self.stats.rx_bytes += batch.packets()[start..]
                .iter()
                .map(|p| p.len().saturating_sub(shown) as u64)
                .sum::<u64>();
        }
        n
    }

    /// Encapsulates each packet and hands the outer packets to the underlay's internal port
    /// a burst at a time (one burst per run of packets bound to the same underlay). The
    /// resolved headers are borrowed, never cloned, per packet.
    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let fixed = self.t.out.load_full();
        if let (Addr::Fixed(_), Key::Fixed(key), Some(r)) =
            (self.t.cfg.remote, self.t.cfg.out_key, fixed.as_deref())
        {
            if !batch.packets().iter().any(|p| p.has_tun()) {
                self.tx_resolved(pool, batch, r, key);
                return;
            }
        }
        let mut out: Option<Outgoing> = None;
        for mut p in batch.drain() {
            let meta = p.tun();
            let by_flow;
            let target = match self.t.cfg.remote {
                Addr::Fixed(_) => fixed.as_deref(),
                Addr::Flow => {
                    by_flow = meta.and_then(|m| self.flow_target(flow_remote(&m)));
                    by_flow.as_deref()
                }
            };
            let Some(r) = target else {
                self.stats.tx_dropped += 1;
                pool.free(p);
                continue;
            };
            let key = match self.t.cfg.out_key {
                Key::Fixed(k) => k,
                Key::Flow => meta.map_or(0, |m| m.id),
            };
            p.clear_tun();
            let before = p.len();
            let opts = meta.as_ref().map_or(&[][..], |m| m.opts());
            let oam = meta.as_ref().is_some_and(|m| m.flags & wire::F_OAM != 0);
            let pushed = if self.t.cfg.l3 {
                r.tmpl.push_l3(&mut p, key)
            } else {
                r.tmpl.push_flagged(&mut p, key, opts, oam)
            };
            if !pushed {
                self.stats.tx_errors += 1;
                pool.free(p);
                continue;
            }
            // The inner packet's bytes (an L3 port's without the Ethernet header it lost).
            let len = if self.t.cfg.l3 {
                p.len().saturating_sub(r.tmpl.len())
            } else {
                before
            } as u64;
            if self.t.cfg.gbp {
                if let Some(m) = meta.as_ref() {
                    r.tmpl.set_gbp(&mut p, m.gbp_id, m.gbp_flags);
                }
            }
            if !out
                .as_ref()
                .is_some_and(|o| Arc::ptr_eq(&o.underlay, &r.underlay))
            {
                let next = Outgoing {
                    underlay: Arc::clone(&r.underlay),
                    batch: r.underlay.inject.spare(),
                    bytes: 0,
                    tmpl: r,
                    uniform: self.t.cfg.tos.is_some(),
                };
                if let Some(o) = out.replace(next) {
                    self.flush(o, pool);
                }
            }
            if let Some(o) = out.as_mut() {
                o.uniform &= std::ptr::eq(o.tmpl, r);
                // A burst never holds more than the batch it came from.
                match o.batch.push(p) {
                    Ok(()) => o.bytes += len,
                    Err(p) => {
                        self.stats.tx_dropped += 1;
                        pool.free(p);
                    }
                }
            }
        }
        if let Some(o) = out {
            self.flush(o, pool);
        }
    }

    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        s.rx_dropped += self.t.rx.dropped.load(Ordering::Relaxed);
        s
    }

    fn options(&self) -> Vec<(String, String)> {
        self.opts.clone()
    }

    fn close(&mut self) {
        table::remove_tunnel(&self.t);
        self.rx.clear(&self.t.rx);
    }
}

impl Drop for TunnelPort {
    fn drop(&mut self) {
        table::remove_tunnel(&self.t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_remote_is_tun_dst_else_tun_ipv6_dst() {
        let mut m = packet::TunMeta {
            ipv6_dst: [0xfd; 16],
            ..packet::TunMeta::default()
        };
        assert_eq!(flow_remote(&m), IpAddr::from([0xfd; 16]));
        m.dst = [10, 0, 0, 2];
        assert_eq!(flow_remote(&m), IpAddr::from([10, 0, 0, 2]));
        assert!(flow_remote(&packet::TunMeta::default()).is_unspecified());
    }

    fn o(kv: &[(&str, &str)]) -> Options {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn exts_gbp_is_a_vxlan_extension() {
        let r = ("remote_ip", "10.0.0.1");
        let c = parse_config(Proto::Vxlan, &o(&[r, ("exts", "gbp")])).expect("valid");
        assert!(c.gbp);
        assert!(!parse_config(Proto::Vxlan, &o(&[r])).expect("valid").gbp);
        for (proto, exts, why) in [
            (Proto::Vxlan, "gpe", "unknown extension 'gpe'"),
            (Proto::Vxlan, "gbp,x", "unknown extension 'x'"),
            (Proto::Geneve, "gbp", "no extensions"),
        ] {
            let e = parse_config(proto, &o(&[r, ("exts", exts)])).expect_err("refused");
            assert!(e.to_string().contains(why), "{exts}: {e}");
        }
    }

    #[test]
    fn legacy_l3_is_a_gre_packet_type() {
        let r = ("remote_ip", "10.0.0.1");
        for (v, l3) in [("legacy_l2", false), ("legacy_l3", true)] {
            let c = parse_config(Proto::Gre, &o(&[r, ("packet_type", v)])).expect("valid");
            assert_eq!(c.l3, l3, "{v}");
        }
        assert!(!parse_config(Proto::Gre, &o(&[r])).expect("valid").l3);
        // OVS's words: a port type that cannot carry L3 traffic refuses it.
        for (proto, why) in [
            (
                Proto::Vxlan,
                "legacy_l3 configured on VXLAN (without GPE) tunnel that cannot carry L3 traffic",
            ),
            (
                Proto::Geneve,
                "legacy_l3 configured on geneve tunnel that cannot carry L3 traffic",
            ),
        ] {
            let e = parse_config(proto, &o(&[r, ("packet_type", "legacy_l3")])).expect_err("no");
            assert!(e.to_string().contains(why), "{e}");
        }
        for proto in [Proto::Vxlan, Proto::Geneve, Proto::Gre] {
            let e = parse_config(proto, &o(&[r, ("packet_type", "ptap")])).expect_err("ptap");
            assert!(e.to_string().contains("'ptap' is not supported"), "{e}");
            let e = parse_config(proto, &o(&[r, ("packet_type", "l3")])).expect_err("unknown");
            assert!(e.to_string().contains("unknown packet_type 'l3'"), "{e}");
        }
    }

    #[test]
    fn options_are_validated_and_bad_ones_named() {
        let c = parse_config(
            Proto::Vxlan,
            &o(&[
                ("remote_ip", "10.0.0.1"),
                ("key", "flow"),
                ("dst_port", "8472"),
            ]),
        )
        .expect("valid");
        assert_eq!(c.remote, Addr::Fixed(IpAddr::from([10, 0, 0, 1])));
        assert_eq!(
            (c.in_key, c.out_key, c.dst_port),
            (Key::Flow, Key::Flow, 8472)
        );
        let c = parse_config(
            Proto::Geneve,
            &o(&[("remote_ip", "flow"), ("in_key", "5"), ("out_key", "0x6")]),
        )
        .expect("valid");
        assert_eq!(
            (c.remote, c.in_key, c.out_key),
            (Addr::Flow, Key::Fixed(5), Key::Fixed(6))
        );
        assert_eq!(c.dst_port, 6081);
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[], "remote_ip"),
            (&[("remote_ip", "10.0.0")], "remote_ip"),
            (&[("remote_ip", "ff02::1")], "remote_ip"),
            (&[("remote_ip", "::")], "remote_ip"),
            (
                &[("remote_ip", "fd00::2"), ("local_ip", "10.0.0.1")],
                "local_ip",
            ),
            (&[("remote_ip", "1.1.1.1"), ("key", "16777216")], "key"),
            (&[("remote_ip", "1.1.1.1"), ("in_key", "x")], "in_key"),
            (&[("remote_ip", "1.1.1.1"), ("dst_port", "0")], "dst_port"),
            (
                &[("remote_ip", "1.1.1.1"), ("dst_port", "70000")],
                "dst_port",
            ),
            (&[("remote_ip", "1.1.1.1"), ("csum", "maybe")], "csum"),
            (&[("remote_ip", "1.1.1.1"), ("ttl", "0")], "ttl"),
            (&[("remote_ip", "1.1.1.1"), ("tos", "300")], "tos"),
            (&[("remote_ip", "1.1.1.1"), ("local_ip", "x")], "local_ip"),
            (
                &[("remote_ip", "1.1.1.1"), ("packet_type", "ptap")],
                "packet_type",
            ),
            (&[("remote_ip", "1.1.1.1"), ("colour", "red")], "colour"),
        ];
        for (kv, key) in cases {
            let e = parse_config(Proto::Vxlan, &o(kv)).expect_err("refused");
            assert!(e.to_string().contains(key), "{kv:?}: {e}");
        }
        assert!(parse_config(
            Proto::Gre,
            &o(&[("remote_ip", "1.1.1.1"), ("dst_port", "1")])
        )
        .is_err());
        // IPv6 underlays (OVS's ip6gre for a gre port).
        for proto in [Proto::Vxlan, Proto::Geneve, Proto::Gre] {
            let c = parse_config(
                proto,
                &o(&[("remote_ip", "fd00::2"), ("local_ip", "fd00::1")]),
            )
            .expect("IPv6 addresses");
            assert_eq!(c.remote, Addr::Fixed("fd00::2".parse().expect("v6")));
            assert_eq!(c.local, Some(Addr::Fixed("fd00::1".parse().expect("v6"))));
        }
        assert!(parse_config(
            Proto::Gre,
            &o(&[("remote_ip", "1.1.1.1"), ("key", "4294967295")])
        )
        .is_ok());
    }
}
