//! The underlay side of native tunnelling: an `internal` port wrapped so that it
//!
//! * takes the tunnel packets its bridge forwards to the host out of each burst, pops their
//!   outer headers (IPv4 or IPv6) and queues them to the tunnel port they belong to (OVS's
//!   `tnl_pop`, done where OVS does it: at the output to the bridge's own port; translation
//!   asks [`listens`] and [`listening`] and shows such an output as `tnl_pop(N)`), and
//!   learns next-hop MACs from the ARP packets and Neighbor Advertisements in the burst;
//! * receives, besides what the host sends, the outer packets tunnel ports queued for it, so
//!   the underlay bridge forwards them as it would the host's own packets (on receive queue
//!   0, whichever poll thread holds it).
//!
//! While no tunnel port exists both additions cost one relaxed load per burst. Everything
//! else is the wrapped port's (see [`crate::tap`]).

use super::nd;
use super::table::{self, Underlay};
use super::wire::{self, Proto};
use crate::{LinkState, Port, PortStats, RxqState};
use packet::flow::FlowKey;
use packet::{Batch, Pool};
use std::net::IpAddr;
use std::sync::Arc;

/// An internal port that can carry tunnels (see the module documentation).
pub struct UnderlayPort {
    inner: Box<dyn Port>,
    u: Arc<Underlay>,
    /// Packets of a burst that go on to the host (allocated once).
    keep: Batch,
    /// The rest of an injected burst that did not fit the caller's batch.
    inject: table::Drain,
}

impl UnderlayPort {
    /// Wraps `inner`, an internal port, registering it as a possible underlay.
    pub fn wrap(inner: Box<dyn Port>) -> UnderlayPort {
        let u = table::add_underlay(inner.name(), inner.mac().unwrap_or([0; 6]));
        UnderlayPort {
            inner,
            u,
            keep: Batch::new(),
            inject: table::Drain::default(),
        }
    }

    fn drain_inject(&mut self, batch: &mut Batch) -> usize {
        if !table::active() {
            return 0;
        }
        self.inject.fill(&self.u.inject, batch)
    }

    /// Splits tunnel packets (decapsulated and queued) out of a burst for the host, and
    /// snoops ARP and Neighbor Advertisements; what is left stays in `batch`.
    #[cold]
    #[inline(never)]
    fn intercept(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let tunnels = table::decap_snapshot();
        let port_kind = |p: u16| {
            tunnels
                .iter()
                .find(|t| t.cfg.proto != Proto::Gre && t.cfg.dst_port == p)
                .map(|t| t.cfg.proto)
        };
        let any_gre = tunnels.iter().any(|t| t.cfg.proto == Proto::Gre);
        // Decapsulated packets go to their tunnel port a burst at a time: one burst per run
        // of packets for the same tunnel.
        let mut to: Option<(&Arc<table::Tunnel>, Batch)> = None;
        // The previous packet's outer headers where they decide the outcome, and that
        // outcome: a burst from one remote repeats them (see [`Repeat`]).
        let mut last: Option<Repeat<'_, Arc<table::Tunnel>>> = None;
        for mut p in batch.drain() {
            let d = p.data();
            // A repeat's metadata is written from the repeat itself: no copy per packet.
            let t = if let Some((t, meta)) = last.as_ref().and_then(|l| l.check(d)) {
                if !p.pull_front(V4_UDP_HDR) || !p.set_tun(meta) {
                    pool.free(p);
                    continue;
                }
                t
            } else {
                let Some((t, r)) = self.classify(d, &tunnels, port_kind, any_gre) else {
                    if wire::refused_ipv4(d, port_kind, any_gre) {
                        table::count_refused();
                        pool.free(p);
                        continue;
                    }
                    // `keep` holds a whole batch, so this push cannot fail.
                    if let Err(p) = self.keep.push(p) {
                        pool.free(p);
                    }
                    continue;
                };
                let Some(t) = t else {
                    table::count_unmatched();
                    pool.free(p);
                    continue;
                };
                last = Repeat::new(d, t, &r);
                if !wire::pop(&mut p, &r) || !p.set_tun(&r.meta) {
                    pool.free(p);
                    continue;
                }
                t
            };
            if !to.as_ref().is_some_and(|(cur, _)| Arc::ptr_eq(cur, t)) {
                if let Some((cur, b)) = to.replace((t, t.rx.spare())) {
                    let _ = cur.rx.send(b, pool);
                }
            }
            if let Some((_, b)) = to.as_mut() {
                // A burst never holds more than the batch it came from.
                if let Err(p) = b.push(p) {
                    pool.free(p);
                }
            }
        }
        if let Some((cur, b)) = to {
            let _ = cur.rx.send(b, pool);
        }
        std::mem::swap(batch, &mut self.keep);
    }

    /// A frame's fate the long way: `None` if it is no tunnel packet (it goes on to the
    /// host; ARP and Neighbor Advertisements teach the neighbour cache), else the tunnel it
    /// belongs to (`None`: no tunnel takes it) and what its outer headers said.
    #[inline]
    fn classify<'t>(
        &self,
        d: &[u8],
        tunnels: &'t [Arc<table::Tunnel>],
        port_kind: impl Fn(u16) -> Option<Proto>,
        any_gre: bool,
    ) -> Option<(Option<&'t Arc<table::Tunnel>>, wire::Parsed)> {
        if let Some((ip, mac)) = nd::snoop(d) {
            table::snoop(ip, mac, &self.u.name);
        }
        let r = wire::parse(d, port_kind).filter(|r| r.proto != Proto::Gre || any_gre)?;
        let (outer_src, outer_dst) = if r.meta.is_ipv6() {
            (IpAddr::from(r.meta.ipv6_src), IpAddr::from(r.meta.ipv6_dst))
        } else {
            (IpAddr::from(r.meta.src), IpAddr::from(r.meta.dst))
        };
        let best = tunnels
            .iter()
            .filter(|t| {
                t.cfg.proto == r.proto
                    && (r.proto == Proto::Gre || t.cfg.dst_port == r.dst_port)
                    && (!r.gbp || t.cfg.gbp)
                    // An L3 packet only to a `legacy_l3` port, Ethernet only to the others
                    // (OVS's tunnel port map holds the packet type mode too).
                    && t.cfg.l3 == r.l3.is_some()
                    && match t.cfg.local {
                        Some(super::Addr::Fixed(a)) => a == outer_dst,
                        _ => true,
                    }
                    && match t.cfg.remote {
                        super::Addr::Fixed(a) => a == outer_src,
                        super::Addr::Flow => true,
                    }
                    && match t.cfg.in_key {
                        super::Key::Fixed(k) => k == r.meta.id,
                        super::Key::Flow => true,
                    }
            })
            // OVS prefers the most specific port: a fixed remote, then a fixed key.
            .min_by_key(|t| {
                (
                    matches!(t.cfg.remote, super::Addr::Flow),
                    matches!(t.cfg.in_key, super::Key::Flow),
                )
            });
        Some((best, r))
    }
}

/// Bytes of outer headers [`Repeat`] handles: Ethernet, IPv4 without options, UDP and an
/// 8-byte VXLAN or Geneve header (no options).
const V4_UDP_HDR: usize = 50;
/// The bytes of a frame [`Repeat`] compares: from the EtherType to two bytes past the
/// tunnel header, as five words.
const SIG_AT: usize = 12;
const SIG_LEN: usize = 40;

/// Which of those bytes decide how a frame is decapsulated: all but the IPv4 total length,
/// identification and checksum, the UDP source port, length and checksum (whose being zero
/// or not is read per packet), and the two bytes of the inner frame.
const fn sig_mask() -> [u64; SIG_LEN / 8] {
    let mut m = [0xffu8; SIG_LEN];
    let skip = [16, 17, 18, 19, 24, 25, 34, 35, 38, 39, 40, 41, 50, 51];
    let mut i = 0;
    while i < skip.len() {
        m[skip[i] - SIG_AT] = 0;
        i += 1;
    }
    let mut w = [0u64; SIG_LEN / 8];
    let mut j = 0;
    while j < SIG_LEN / 8 {
        let b = [
            m[j * 8],
            m[j * 8 + 1],
            m[j * 8 + 2],
            m[j * 8 + 3],
            m[j * 8 + 4],
            m[j * 8 + 5],
            m[j * 8 + 6],
            m[j * 8 + 7],
        ];
        w[j] = u64::from_le_bytes(b);
        j += 1;
    }
    w
}
const SIG_MASK: [u64; SIG_LEN / 8] = sig_mask();

/// `d`'s outer header bytes [`Repeat`] compares, if `d` is long enough to hold them and
/// an inner Ethernet header.
#[inline(always)]
fn outer_head(d: &[u8]) -> Option<&[u8; SIG_LEN]> {
    if d.len() < V4_UDP_HDR + 14 {
        return None;
    }
    d.get(SIG_AT..SIG_AT + SIG_LEN)?.try_into().ok()
}

/// The masked words of a header from [`outer_head`].
#[inline(always)]
fn outer_words(b: &[u8; SIG_LEN]) -> impl Iterator<Item = u64> + '_ {
    b.chunks_exact(8)
        .zip(SIG_MASK)
        .map(|(c, m)| c.try_into().map_or(0, u64::from_le_bytes) & m)
}

/// The outcome of decapsulating one IPv4 VXLAN or Geneve (no options) frame, for the
/// frames after it with the same outer headers: a burst from one remote differs only in
/// the words [`sig_mask`] leaves out. The tunnel table is the burst's snapshot, so the
/// tunnel found still holds; per packet remain the length checks [`wire::parse`] makes
/// and the UDP checksum flag.
struct Repeat<'t, T> {
    sig: [u64; SIG_LEN / 8],
    t: &'t T,
    /// The metadata of a repeat without and with a UDP checksum.
    meta: packet::TunMeta,
    meta_csum: packet::TunMeta,
}

impl<'t, T> Repeat<'t, T> {
    fn new(d: &[u8], t: &'t T, r: &wire::Parsed) -> Option<Repeat<'t, T>> {
        // GRE (Ethernet or L3 payload) is not repeated: its headers vary in length.
        if r.proto == Proto::Gre || r.hdr_len != V4_UDP_HDR || r.meta.is_ipv6() {
            return None;
        }
        let mut sig = [0u64; SIG_LEN / 8];
        for (s, w) in sig.iter_mut().zip(outer_words(outer_head(d)?)) {
            *s = w;
        }
        let mut meta = r.meta;
        meta.flags &= !wire::F_CSUM;
        let mut meta_csum = meta;
        meta_csum.flags |= wire::F_CSUM;
        Some(Repeat {
            sig,
            t,
            meta,
            meta_csum,
        })
    }

    /// `d`'s tunnel and metadata if its outer headers repeat (then they are
    /// [`V4_UDP_HDR`] bytes long).
    #[inline]
    fn check(&self, d: &[u8]) -> Option<(&'t T, &packet::TunMeta)> {
        // Word by word, without a call to `memcmp`.
        let diff = outer_words(outer_head(d)?)
            .zip(&self.sig)
            .fold(0, |acc, (w, s)| acc | (w ^ s));
        if diff != 0 {
            return None;
        }
        // What `wire::parse` checks per frame: the IPv4 total length within the frame and
        // room for the UDP and tunnel headers and an inner Ethernet header.
        let total = usize::from(u16::from_be_bytes([d[16], d[17]]));
        if total + 14 > d.len() || total < V4_UDP_HDR - 14 + 14 {
            return None;
        }
        // The header checksum covers the identification and length, which differ per
        // packet: each header is checked (a bad one is refused by `parse` too).
        if !d.get(14..34).is_some_and(packet::csum::ipv4_header_ok) {
            return None;
        }
        let meta = if d[40] | d[41] != 0 {
            &self.meta_csum
        } else {
            &self.meta
        };
        Some((self.t, meta))
    }
}

/// The datapath port number OVS's `tnl_pop(N)` names for protocol `proto` listening on
/// `dst_port`: the number `tnl/ports/show` prints (the UDP port; GRE, which has none, its IP
/// protocol number, 47).
pub fn listening_port(proto: Proto, dst_port: u16) -> u32 {
    match proto {
        Proto::Gre => 47,
        _ => u32::from(dst_port),
    }
}

/// Whether a packet to address `dst` with IP protocol `nw_proto` and UDP destination port
/// `tp_dst`, sent to underlay `name`, is for a tunnel that listens on it: the tunnel's own
/// `local_ip` or, without one, the underlay's address. Gives the listening port
/// ([`listening_port`]). What the port wrapper pops on transmit
/// (see [`UnderlayPort`]) is exactly what this accepts, plus the checks of the tunnel
/// header itself.
pub fn listening(name: &str, dst: IpAddr, nw_proto: u8, tp_dst: u16) -> Option<u32> {
    if !table::active() {
        return None;
    }
    let u = table::underlay(name)?;
    let own = match dst {
        IpAddr::V4(a) => {
            u32::from(a) != 0 && u.ip.load(std::sync::atomic::Ordering::Relaxed) == u32::from(a)
        }
        IpAddr::V6(a) => {
            *u.ip6.lock().unwrap_or_else(|e| e.into_inner()) == Some(a)
                || u.ll6.lock().unwrap_or_else(|e| e.into_inner()).contains(&a)
        }
    };
    let tunnels = table::decap_snapshot();
    let t = tunnels.iter().find(|t| {
        let proto_ok = match t.cfg.proto {
            Proto::Gre => nw_proto == 47,
            _ => nw_proto == 17 && t.cfg.dst_port == tp_dst,
        };
        let addr_ok = match t.cfg.local {
            Some(super::Addr::Fixed(a)) => a == dst,
            _ => own,
        };
        proto_ok && addr_ok
    })?;
    Some(listening_port(t.cfg.proto, t.cfg.dst_port))
}

/// The MAC of underlay `name` if a tunnel may listen on it: some tunnel exists and the
/// underlay has an address, or a tunnel's `local_ip` is given (then any underlay may carry
/// it). `None` means no packet sent to it is a tunnel packet to the switch.
pub fn listens(name: &str) -> Option<[u8; 6]> {
    if !table::active() {
        return None;
    }
    let u = table::underlay(name)?;
    let addressed = u.ip.load(std::sync::atomic::Ordering::Relaxed) != 0
        || u.ip6.lock().unwrap_or_else(|e| e.into_inner()).is_some()
        || !u.ll6.lock().unwrap_or_else(|e| e.into_inner()).is_empty();
    let tunnels = table::decap_snapshot();
    let any = tunnels
        .iter()
        .any(|t| addressed || matches!(t.cfg.local, Some(super::Addr::Fixed(_))));
    any.then_some(u.mac)
}

/// What `tnl_push` shows for tunnel port `name` for a packet with `flow` (its `tun_id`
/// when the key comes from the flow, its `tun_gbp_id` and `tun_gbp_flags` on a port with
/// `exts=gbp`, its EtherType as the GRE protocol on a `legacy_l3` port): the listening port,
/// OVS's vport type (3 GRE, 4 VXLAN, 5 Geneve), the outer headers its template pushes, and
/// the underlay they leave through. `None` unless its remote is fixed and resolved and its
/// TOS fixed, or for an 802.3 frame to a `legacy_l3` port (which drops it).
pub fn push_header(name: &str, flow: &FlowKey) -> Option<(u32, u8, Vec<u8>, String)> {
    if !table::active() {
        return None;
    }
    let tunnels = table::decap_snapshot();
    let t = tunnels.iter().find(|t| t.name == name)?;
    if !matches!(t.cfg.remote, super::Addr::Fixed(_)) {
        return None;
    }
    let r = t.out.load_full()?;
    let key = match t.cfg.out_key {
        super::Key::Fixed(k) => k,
        super::Key::Flow => flow.tunnel_id,
    };
    let kind = match t.cfg.proto {
        Proto::Gre => 3,
        Proto::Vxlan => 4,
        Proto::Geneve => 5,
    };
    let h = if t.cfg.l3 {
        if flow.dl_type < 0x0600 {
            return None;
        }
        r.tmpl.header_l3(key, flow.dl_type)?
    } else if t.cfg.gbp {
        r.tmpl
            .header_gbp(key, flow.tun_gbp_id, flow.tun_gbp_flags)?
    } else {
        r.tmpl.header(key)?
    };
    Some((
        listening_port(t.cfg.proto, t.cfg.dst_port),
        kind,
        h,
        r.underlay.name.clone(),
    ))
}

/// `ovs-appctl tnl/ports/show -v`: what a packet must be to be popped, as OVS prints its
/// tunnel port map: one line per listening port and underlay address (IPv4, then the
/// global IPv6 one, then the link-local ones), each the Ethernet destination (the underlay's MAC), EtherType, IP
/// destination and protocol, unfragmented, and the UDP destination port. The number in
/// parentheses is the one `tnl_pop(N)` names ([`listening_port`]).
pub fn ports_show_verbose() -> String {
    let mut ports: Vec<(Proto, u16)> = table::decap_snapshot()
        .iter()
        .map(|t| (t.cfg.proto, t.cfg.dst_port))
        .collect();
    ports.sort();
    ports.dedup();
    let mut s = String::from("Listening ports:\n");
    for u in table::underlays() {
        let v4 = u.ip.load(std::sync::atomic::Ordering::Relaxed);
        let v6 = *u.ip6.lock().unwrap_or_else(|e| e.into_inner());
        let ll6 = u.ll6.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let m = u.mac;
        let mac = format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        );
        let addrs = (v4 != 0)
            .then(|| ("0x0800", "ipv4", IpAddr::from(std::net::Ipv4Addr::from(v4))))
            .into_iter()
            .chain(
                v6.into_iter()
                    .chain(ll6)
                    .map(|a| ("0x86dd", "ipv6", IpAddr::from(a))),
            );
        for (ty, family, ip) in addrs {
            for &(p, port) in &ports {
                let (nw_proto, udp) = match p {
                    Proto::Gre => (47, String::new()),
                    _ => (17, format!(",udp(dst={port})")),
                };
                s.push_str(&format!(
                    "{} ({}) : eth(dst={mac}),eth_type({ty}),{family}(dst={ip},proto={nw_proto},\
                     frag=no){udp}\n",
                    p.sys_name(port),
                    listening_port(p, port)
                ));
            }
        }
    }
    s
}

/// Whether tunnel port `name` sends VXLAN Group Policy (`exts=gbp`): its `tnl_push`
/// header then depends on the flow's `tun_gbp_id` and `tun_gbp_flags`.
pub fn sends_gbp(name: &str) -> bool {
    table::decap_snapshot()
        .iter()
        .any(|t| t.name == name && t.cfg.gbp)
}

/// Whether tunnel port `name` is a `packet_type=legacy_l3` one: it sends without the
/// Ethernet header (`pop_eth` before its `tnl_push`), its GRE protocol the flow's EtherType.
pub fn sends_l3(name: &str) -> bool {
    table::decap_snapshot()
        .iter()
        .any(|t| t.name == name && t.cfg.l3)
}

/// Whether tunnel port `name`'s key comes from the flow (`key=flow` or `out_key=flow`).
pub fn key_from_flow(name: &str) -> bool {
    table::decap_snapshot()
        .iter()
        .any(|t| t.name == name && t.cfg.out_key == super::Key::Flow)
}

impl Port for UnderlayPort {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let n = self.inner.rx_batch(pool, batch);
        n + self.drain_inject(batch)
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        if table::active() {
            self.intercept(pool, batch);
        }
        if !batch.is_empty() {
            self.inner.tx_batch(pool, batch);
        }
    }

    fn stats(&self) -> PortStats {
        self.inner.stats()
    }

    fn link_state(&self) -> LinkState {
        self.inner.link_state()
    }

    fn has_rx(&self) -> bool {
        self.inner.has_rx()
    }

    fn mac(&self) -> Option<[u8; 6]> {
        self.inner.mac()
    }

    fn ifindex(&self) -> Option<u32> {
        self.inner.ifindex()
    }

    fn options(&self) -> Vec<(String, String)> {
        self.inner.options()
    }

    fn n_rxq(&self) -> usize {
        self.inner.n_rxq()
    }

    fn rxq_batch(&mut self, q: usize, pool: &mut Pool, batch: &mut Batch) -> usize {
        let n = self.inner.rxq_batch(q, pool, batch);
        if q == 0 {
            n + self.drain_inject(batch)
        } else {
            n
        }
    }

    fn rxq_fd(&self, q: usize) -> Option<std::os::fd::RawFd> {
        self.inner.rxq_fd(q)
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        let h = self.inner.share()?;
        Some(Box::new(UnderlayPort {
            inner: h,
            u: Arc::clone(&self.u),
            keep: Batch::new(),
            inject: table::Drain::default(),
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        self.inner.take_rxq(q)
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        self.inner.put_rxq(q, s)
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn known(p: u16) -> Option<Proto> {
        match p {
            4789 => Some(Proto::Vxlan),
            6081 => Some(Proto::Geneve),
            _ => None,
        }
    }

    /// An outer frame pushed by a template around an inner frame of `len` bytes.
    fn outer(proto: Proto, len: usize, tos: u8) -> Vec<u8> {
        let t = wire::Template::new(&wire::Outer {
            proto,
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            dst_port: proto.default_port(),
            tos: Some(tos),
            ttl: 64,
            df: true,
            csum: false,
            gre_key: false,
        });
        let mut inner = vec![0x11u8; len];
        inner[12..14].copy_from_slice(&[0x08, 0x00]);
        inner[14] = 0x45;
        inner[23] = 17;
        inner[34..36].copy_from_slice(&(len as u16).to_be_bytes());
        let mut pool = packet::Pool::new(1);
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&inner));
        assert!(t.push(&mut p, 7, &[]));
        p.data().to_vec()
    }

    #[test]
    fn a_repeat_decapsulates_as_parse_does_and_only_what_parse_would() {
        for proto in [Proto::Vxlan, Proto::Geneve] {
            let first = outer(proto, 60, 0);
            let r = wire::parse(&first, known).expect("a tunnel packet");
            let rep = Repeat::new(&first, &(), &r).expect("repeatable");
            let mut frames = vec![outer(proto, 61, 0), outer(proto, 1400, 0)];
            let mut id = first.clone();
            id[18] ^= 0xff;
            id[24..26].copy_from_slice(&[0, 0]);
            let c = packet::csum::checksum(&id[14..34]);
            id[24..26].copy_from_slice(&c.to_be_bytes());
            frames.push(id);
            let mut csum = first.clone();
            csum[40] = 0x12;
            frames.push(csum);
            let mut padded = first.clone();
            padded.extend_from_slice(&[0; 8]);
            frames.push(padded);
            // Each of these must be the same tunnel packet with this metadata.
            for f in &frames {
                let p = wire::parse(f, known).expect("a tunnel packet");
                let (_, meta) = rep.check(f).expect("a repeat");
                assert_eq!((*meta, V4_UDP_HDR), (p.meta, p.hdr_len), "{proto:?}");
            }
            // And these not: other outer headers or lengths that do not hold.
            let mut others = vec![outer(proto, 60, 0x20)];
            for (at, x) in [
                (12, 0x86),
                (20, 0x40),
                (20, 0x20),
                (22, 1),
                (23, 1),
                (29, 1),
            ] {
                let mut f = first.clone();
                f[at] ^= x;
                others.push(f);
            }
            for at in [37, 42, 44, 46, 48] {
                let mut f = first.clone();
                f[at] ^= 1;
                others.push(f);
            }
            // A header checksum that does not verify (per packet: it covers the
            // identification and length the signature leaves out).
            let mut badsum = first.clone();
            badsum[24] ^= 1;
            others.push(badsum);
            let mut long = first.clone();
            long[17] = long[17].wrapping_add(1);
            others.push(long);
            let mut short = first.clone();
            short[16..18].copy_from_slice(&49u16.to_be_bytes());
            others.push(short);
            others.push(first[..first.len() - 1].to_vec());
            for (i, f) in others.iter().enumerate() {
                assert!(rep.check(f).is_none(), "{proto:?} frame {i}");
            }
        }
    }
}
