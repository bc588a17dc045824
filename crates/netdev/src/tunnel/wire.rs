//! Tunnel headers on the wire: building the outer headers a tunnel port pushes, and reading
//! the ones it pops.
//!
//! ## What
//! * VXLAN (RFC 7348): outer Ethernet / IP / UDP (port 4789 by default) and an 8-byte header
//!   whose flags word must be exactly "VNI present" (0x08000000), then the 24-bit VNI. With
//!   the Group Policy extension (draft-smith-vxlan-group-policy, a port's `exts=gbp`) the
//!   first byte may also have the G bit (0x88), and then the second holds the D ("don't
//!   learn", 0x40) and A ("policy applied", 0x08) bits and the last two the 16-bit group
//!   policy ID: OVS's `tun_gbp_flags` is that second byte (those two bits), `tun_gbp_id`
//!   the ID, as OVS's kernel datapath and Linux's `vxlan ... gbp` device map them.
//! * Geneve (RFC 8926): outer Ethernet / IP / UDP (6081) and an 8-byte header (version 0,
//!   option length in 4-byte words, the O bit, protocol 0x6558 = Ethernet) with options after it.
//! * GRE (RFC 2784/2890): outer Ethernet / IP (protocol 47) and a 4-byte header, then the
//!   optional checksum, key and sequence words; protocol 0x6558 (Ethernet in GRE). Over
//!   IPv6 this is OVS's `ip6gre`. A `packet_type=legacy_l3` port carries L3 packets
//!   instead (as Linux's `ip tunnel ... mode gre` device does): the GRE protocol is the
//!   packet's EtherType (any from 0x0600, as OVS reads it), the Ethernet header and VLAN
//!   tags of what the bridge sends are stripped ([`Template::push_l3`]), and a received one
//!   is shown behind a zero-MAC Ethernet header of that EtherType ([`pop`]).
//!
//! The outer IP header is IPv4 or IPv6, as the tunnel's addresses are. IPv6 as OVS 3.1's
//! userspace datapath builds it: hop limit from `ttl`, traffic class from `tos` (or the
//! inner packet's), flow label 0, no extension headers; the UDP checksum is always filled,
//! `csum=true` or not (OVS 3.1 does the same; RFC 6935's zero-checksum UDP would need
//! `udp6zerocsumrx` on a Linux peer). Over IPv4 it is filled only with `csum=true`.
//!
//! ## How
//! The outer headers of a tunnel port depend on its configuration and its resolved next hop
//! only, so they are built once into a [`Template`] (by the control side, when the next hop
//! changes). Encapsulating a packet copies the template in front of the frame and patches the
//! per-packet words: IP total length and checksum, UDP length and source port (from the inner
//! flow's hash, in OVS's 32768-61000 range), the key when it comes from the flow, and the
//! optional checksums. No allocation, no lookups.
//!
//! [`parse`] (in `wire_rx.rs`) reads an outer frame without trusting it: every length is checked against the
//! bytes present, fragments and unknown versions are refused (the frame then goes on to the
//! host stack untouched), and the result names how many bytes to pop.

use packet::csum;
use packet::TunMeta;
use std::net::IpAddr;

/// The tunnel protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Proto {
    Vxlan,
    Geneve,
    Gre,
}

impl Proto {
    /// The port type name (`vxlan`, `geneve`, `gre`).
    pub fn kind(self) -> &'static str {
        match self {
            Proto::Vxlan => "vxlan",
            Proto::Geneve => "geneve",
            Proto::Gre => "gre",
        }
    }

    /// The UDP destination port used when `dst_port` is not set (none for GRE).
    pub fn default_port(self) -> u16 {
        match self {
            Proto::Vxlan => 4789,
            Proto::Geneve => 6081,
            Proto::Gre => 0,
        }
    }

    /// The name OVS gives the datapath port listening for this protocol
    /// (`tnl/ports/show`).
    pub fn sys_name(self, port: u16) -> String {
        match self {
            Proto::Vxlan => format!("vxlan_sys_{port}"),
            Proto::Geneve => format!("genev_sys_{port}"),
            Proto::Gre => "gre_sys".to_string(),
        }
    }
}

const ETH_LEN: usize = 14;
const IP_LEN: usize = 20;
const IP6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_TEB: u16 = 0x6558;
/// The lowest EtherType (below: an 802.3 length).
const ETH_TYPE_MIN: u16 = 0x0600;
const ETH_P_VLAN: u16 = 0x8100;
const ETH_P_QINQ: u16 = 0x88a8;
const IPPROTO_UDP: u8 = 17;
const IPPROTO_GRE: u8 = 47;
const VXLAN_FLAGS: u32 = 0x0800_0000;
/// The first byte of a VXLAN header with the Group Policy extension: G and I bits.
const VXLAN_GBP_BYTE: u8 = 0x88;
/// The Group Policy flags a VXLAN header carries (`tun_gbp_flags`): D (don't learn, 0x40)
/// and A (policy applied, 0x08); the other bits of that byte are reserved.
pub const GBP_FLAGS: u8 = 0x48;
const GRE_CSUM: u16 = 0x8000;
const GRE_KEY: u16 = 0x2000;
const GRE_SEQ: u16 = 0x1000;
/// The range of UDP source ports for tunnel packets, the lowest in the high 32 bits and the
/// highest in the low ones (OVS's default 32768-61000; `tnl/egress_port_range` sets it).
pub(super) static SRC_PORTS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new((32768 << 32) | 61000);
/// `TunMeta::flags` bits: the flow key's `tun_flags` layout (OVS's `FLOW_TNL_F_*`), so
/// the metadata goes into the key as it is.
pub const F_DONT_FRAGMENT: u16 = packet::flow::TUN_F_DF;
pub const F_CSUM: u16 = packet::flow::TUN_F_CSUM;
pub const F_OAM: u16 = packet::flow::TUN_F_OAM;
pub const F_KEY: u16 = packet::flow::TUN_F_KEY;

/// The most bytes outer headers take without Geneve options (Ethernet, IPv6, UDP and
/// Geneve: 70).
pub const MAX_HDR: usize = 72;

/// Writes `key` into outer headers `h` whose L4 header starts at `l4`: the VNI of VXLAN and
/// Geneve, or GRE's key when its flags carry one (after the checksum word if there is one).
#[inline]
fn write_key(proto: Proto, h: &mut [u8], l4: usize, key: u64) {
    match proto {
        Proto::Vxlan | Proto::Geneve => {
            let vni = ((key as u32) & 0x00ff_ffff) << 8;
            h[l4 + UDP_LEN + 4..l4 + UDP_LEN + 8].copy_from_slice(&vni.to_be_bytes());
        }
        Proto::Gre => {
            let flags = u16::from_be_bytes([h[l4], h[l4 + 1]]);
            if flags & GRE_KEY != 0 {
                let at = if flags & GRE_CSUM != 0 {
                    l4 + 8
                } else {
                    l4 + 4
                };
                h[at..at + 4].copy_from_slice(&(key as u32).to_be_bytes());
            }
        }
    }
}

/// Outer headers of one tunnel port towards one next hop, ready to be copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub proto: Proto,
    hdr: [u8; MAX_HDR],
    len: usize,
    /// Bytes of the outer IP header: 20 (IPv4) or 40 (IPv6).
    ip_len: usize,
    /// Whether to fill the UDP checksum (or add a GRE checksum).
    csum: bool,
    /// Whether the TOS is copied from the inner IPv4/IPv6 header.
    tos_inherit: bool,
    /// One's-complement sum of the template's IPv4 header (total length, checksum and an
    /// inherited TOS zero): a packet's checksum adds its length (and TOS) to it instead of
    /// re-reading the header it just wrote.
    ip_sum: u32,
    /// Outer IPv4 and UDP (VXLAN, or Geneve without options) and no checksum to fill: the
    /// common case, pushed by [`Template::push_v4_udp`] at fixed offsets.
    v4_udp: bool,
}

/// Bytes of outer headers over IPv4 with UDP and an 8-byte tunnel header (VXLAN, Geneve
/// without options).
const V4_UDP_HDR: usize = ETH_LEN + IP_LEN + UDP_LEN + 8;

/// What a template is made of.
#[derive(Clone, Copy, Debug)]
pub struct Outer {
    pub proto: Proto,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// The outer addresses, both of one family.
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dst_port: u16,
    pub tos: Option<u8>,
    pub ttl: u8,
    pub df: bool,
    pub csum: bool,
    /// GRE: whether the header carries a key word.
    pub gre_key: bool,
}

impl Template {
    /// Builds the outer headers for `o` (the key, lengths and checksums are per packet).
    pub fn new(o: &Outer) -> Template {
        let mut h = [0u8; MAX_HDR];
        h[0..6].copy_from_slice(&o.dst_mac);
        h[6..12].copy_from_slice(&o.src_mac);
        let next = if o.proto == Proto::Gre {
            IPPROTO_GRE
        } else {
            IPPROTO_UDP
        };
        let ip_len = match (o.src, o.dst) {
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                h[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
                let ip = &mut h[ETH_LEN..ETH_LEN + IP6_LEN];
                let tc = o.tos.unwrap_or(0);
                ip[0] = 0x60 | (tc >> 4);
                ip[1] = tc << 4;
                ip[6] = next;
                ip[7] = o.ttl;
                ip[8..24].copy_from_slice(&src.octets());
                ip[24..40].copy_from_slice(&dst.octets());
                IP6_LEN
            }
            (src, dst) => {
                h[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
                let ip = &mut h[ETH_LEN..ETH_LEN + IP_LEN];
                ip[0] = 0x45;
                ip[1] = o.tos.unwrap_or(0);
                if o.df {
                    ip[6] = 0x40;
                }
                ip[8] = o.ttl;
                ip[9] = next;
                let v4 = |a: IpAddr| match a {
                    IpAddr::V4(a) => a.octets(),
                    IpAddr::V6(_) => [0; 4],
                };
                ip[12..16].copy_from_slice(&v4(src));
                ip[16..20].copy_from_slice(&v4(dst));
                IP_LEN
            }
        };
        let l4 = ETH_LEN + ip_len;
        let len = match o.proto {
            Proto::Vxlan => {
                h[l4 + 2..l4 + 4].copy_from_slice(&o.dst_port.to_be_bytes());
                h[l4 + UDP_LEN..l4 + UDP_LEN + 4].copy_from_slice(&VXLAN_FLAGS.to_be_bytes());
                l4 + UDP_LEN + 8
            }
            Proto::Geneve => {
                h[l4 + 2..l4 + 4].copy_from_slice(&o.dst_port.to_be_bytes());
                let g = l4 + UDP_LEN;
                h[g + 2..g + 4].copy_from_slice(&ETH_P_TEB.to_be_bytes());
                g + 8
            }
            Proto::Gre => {
                let mut flags = 0u16;
                let mut n = 4;
                if o.csum {
                    flags |= GRE_CSUM;
                    n += 4;
                }
                if o.gre_key {
                    flags |= GRE_KEY;
                    n += 4;
                }
                h[l4..l4 + 2].copy_from_slice(&flags.to_be_bytes());
                h[l4 + 2..l4 + 4].copy_from_slice(&ETH_P_TEB.to_be_bytes());
                l4 + n
            }
        };
        Template {
            proto: o.proto,
            hdr: h,
            len,
            ip_len,
            // Over IPv6 a UDP tunnel always carries its checksum, as OVS 3.1 sends it
            // whatever `csum` says (RFC 8200; zero sums are only an exception there).
            csum: o.csum || (ip_len == IP6_LEN && o.proto != Proto::Gre),
            tos_inherit: o.tos.is_none(),
            ip_sum: csum::add(0, &h[ETH_LEN..ETH_LEN + IP_LEN]),
            v4_udp: o.proto != Proto::Gre && ip_len == IP_LEN && !o.csum && len == V4_UDP_HDR,
        }
    }

    /// Bytes of outer headers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the outer header is IPv6.
    pub fn is_ipv6(&self) -> bool {
        self.ip_len == IP6_LEN
    }

    /// Never true: a template holds at least Ethernet and IPv4.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The outer headers [`Template::push`] writes for `key` with no Geneve options, the
    /// per-packet words (lengths, checksums, UDP source port) zero, except that a UDP
    /// tunnel with `csum=true` shows 0xffff in its checksum field, the mark OVS 3.1's
    /// templates carry for "filled per packet": what OVS's `tnl_push(header(...))` shows.
    /// `None` for an inherited TOS (then they differ by packet).
    pub fn header(&self, key: u64) -> Option<Vec<u8>> {
        if self.tos_inherit {
            return None;
        }
        let mut h = self.hdr[..self.len].to_vec();
        let l4 = ETH_LEN + self.ip_len;
        write_key(self.proto, &mut h, l4, key);
        if self.csum && matches!(self.proto, Proto::Vxlan | Proto::Geneve) {
            h[l4 + 6..l4 + 8].copy_from_slice(&[0xff, 0xff]);
        }
        Some(h)
    }

    /// [`Template::header`] of a `packet_type=legacy_l3` GRE template for an L3 packet of
    /// EtherType `et` (the GRE protocol it is sent with).
    pub fn header_l3(&self, key: u64, et: u16) -> Option<Vec<u8>> {
        let mut h = self.header(key)?;
        if self.proto == Proto::Gre {
            let at = ETH_LEN + self.ip_len + 2;
            h[at..at + 2].copy_from_slice(&et.to_be_bytes());
        }
        Some(h)
    }

    /// [`Template::header`] with VXLAN Group Policy `id` and `flags` written in (see
    /// [`Template::set_gbp`]): what `tnl_push` shows for a port with `exts=gbp`.
    pub fn header_gbp(&self, key: u64, id: u16, flags: u8) -> Option<Vec<u8>> {
        let mut h = self.header(key)?;
        if let Some(w) = self.gbp_word(id, flags) {
            let at = ETH_LEN + self.ip_len + UDP_LEN;
            h[at..at + 4].copy_from_slice(&w);
        }
        Some(h)
    }

    /// The first word of the VXLAN header for Group Policy `id` and `flags` (only the D and
    /// A bits), `None` when there is nothing to send (both zero, as Linux sends no G bit
    /// then) or this is no VXLAN template.
    #[inline]
    fn gbp_word(&self, id: u16, flags: u8) -> Option<[u8; 4]> {
        let flags = flags & GBP_FLAGS;
        if self.proto != Proto::Vxlan || (id == 0 && flags == 0) {
            return None;
        }
        let [hi, lo] = id.to_be_bytes();
        Some([VXLAN_GBP_BYTE, flags, hi, lo])
    }

    /// Writes VXLAN Group Policy `id` and `flags` into `pkt`, which [`Template::push`] just
    /// encapsulated with this template (nothing for zero ones, or another protocol): the G
    /// bit, the D and A bits, the ID; a filled UDP checksum is updated for them.
    pub fn set_gbp(&self, pkt: &mut packet::Packet, id: u16, flags: u8) {
        let Some(w) = self.gbp_word(id, flags) else {
            return;
        };
        let l4 = ETH_LEN + self.ip_len;
        let Some(h) = pkt.data_mut().get_mut(l4..l4 + UDP_LEN + 4) else {
            return;
        };
        let old = [h[UDP_LEN], h[UDP_LEN + 1], h[UDP_LEN + 2], h[UDP_LEN + 3]];
        h[UDP_LEN..UDP_LEN + 4].copy_from_slice(&w);
        let c = u16::from_be_bytes([h[6], h[7]]);
        if c != 0 {
            // RFC 1624: HC' = ~(~HC + ~m + m'), a 16-bit word at a time.
            let word = |b: &[u8; 4], i: usize| u32::from(u16::from_be_bytes([b[i], b[i + 1]]));
            let mut sum = u32::from(!c);
            for i in [0, 2] {
                sum += u32::from(!(word(&old, i) as u16)) + word(&w, i);
            }
            let c = !csum::fold(sum);
            let c = if c == 0 { 0xffff } else { c };
            h[6..8].copy_from_slice(&c.to_be_bytes());
        }
    }

    /// The outer headers as built (per-packet words zero).
    pub fn bytes(&self) -> &[u8] {
        &self.hdr[..self.len]
    }

    /// Encapsulates `pkt` with key `key` and, for Geneve, the options `opts` (whole
    /// options in wire format; other protocols ignore them); `false` if the headroom is
    /// short (nothing changed).
    #[inline]
    pub fn push(&self, pkt: &mut packet::Packet, key: u64, opts: &[u8]) -> bool {
        self.push_flagged(pkt, key, opts, false)
    }

    /// [`Template::push`] with Geneve's O bit (OAM) set when `oam` (the pipeline set
    /// `tun_flags=+oam`); other protocols have no such bit and ignore it.
    #[inline]
    pub fn push_flagged(&self, pkt: &mut packet::Packet, key: u64, opts: &[u8], oam: bool) -> bool {
        let oam = oam && self.proto == Proto::Geneve;
        if self.v4_udp && !oam && (opts.is_empty() || self.proto != Proto::Geneve) {
            return self.push_v4_udp(pkt, key);
        }
        let opts = if self.proto == Proto::Geneve && opts.len() <= 252 {
            opts
        } else {
            &[]
        };
        let tos = inner_tos(pkt.data());
        self.push_slow(pkt, key, opts, oam, tos, None)
    }

    /// Encapsulates, for a `packet_type=legacy_l3` GRE port, the L3 packet Ethernet frame
    /// `pkt` holds: its Ethernet header and VLAN tags are stripped (OVS's `pop_eth`) and
    /// the EtherType after them is the GRE protocol. `false` (then `pkt` is to be dropped)
    /// for a template that is no GRE one, an 802.3 frame (no EtherType) or short headroom.
    pub fn push_l3(&self, pkt: &mut packet::Packet, key: u64) -> bool {
        if self.proto != Proto::Gre {
            return false;
        }
        let Some((at, et)) = l3_start(pkt.data()) else {
            return false;
        };
        let tos = pkt.data().get(at..).map_or(0, |ip| ip_tos(et, ip));
        pkt.pull_front(at) && self.push_slow(pkt, key, &[], false, tos, Some(et))
    }

    /// [`Template::push_flagged`] past its fast path: `inner_tos` for `tos=inherit`, and
    /// for GRE the protocol of an L3 payload (`None`: Ethernet, the template's own).
    fn push_slow(
        &self,
        pkt: &mut packet::Packet,
        key: u64,
        opts: &[u8],
        oam: bool,
        inner_tos: u8,
        gre_proto: Option<u16>,
    ) -> bool {
        let inner_len = pkt.len();
        let hash = if self.proto == Proto::Gre {
            0
        } else {
            inner_hash(pkt.data())
        };
        let hdr_len = self.len + opts.len();
        let total = inner_len + hdr_len;
        if total - ETH_LEN > usize::from(u16::MAX) {
            return false;
        }
        let Some(h) = pkt.push_front(hdr_len) else {
            return false;
        };
        h[..self.len].copy_from_slice(&self.hdr[..self.len]);
        let l4 = ETH_LEN + self.ip_len;
        if oam {
            h[l4 + UDP_LEN + 1] |= 0x80;
        }
        if !opts.is_empty() {
            h[self.len..].copy_from_slice(opts);
            let g = l4 + UDP_LEN;
            h[g] |= (opts.len() / 4) as u8;
            if has_critical(opts) {
                h[g + 1] |= 0x40;
            }
        }
        let ip6 = self.ip_len == IP6_LEN;
        if ip6 {
            let plen = (total - l4) as u16;
            h[ETH_LEN + 4..ETH_LEN + 6].copy_from_slice(&plen.to_be_bytes());
            if self.tos_inherit {
                h[ETH_LEN] = 0x60 | (inner_tos >> 4);
                h[ETH_LEN + 1] = (inner_tos << 4) | (h[ETH_LEN + 1] & 0x0f);
            }
        } else {
            let ip_total = (total - ETH_LEN) as u16;
            h[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&ip_total.to_be_bytes());
            if self.tos_inherit {
                h[ETH_LEN + 1] = inner_tos;
            }
            let mut sum = self.ip_sum + u32::from(ip_total);
            if self.tos_inherit {
                sum += u32::from(inner_tos);
            }
            let ipc = !csum::fold(sum);
            h[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&ipc.to_be_bytes());
        }
        match self.proto {
            Proto::Vxlan | Proto::Geneve => {
                let range = SRC_PORTS.load(std::sync::atomic::Ordering::Relaxed);
                let (lo, hi) = ((range >> 32) as u32, range as u32);
                let sport = lo + ((u64::from(hash) * u64::from(hi - lo)) >> 32) as u32;
                h[l4..l4 + 2].copy_from_slice(&(sport as u16).to_be_bytes());
                let udp_len = (total - l4) as u16;
                h[l4 + 4..l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
            }
            Proto::Gre => {
                if let Some(p) = gre_proto {
                    h[l4 + 2..l4 + 4].copy_from_slice(&p.to_be_bytes());
                }
            }
        }
        write_key(self.proto, h, l4, key);
        if self.csum {
            let d = pkt.data_mut();
            match self.proto {
                Proto::Vxlan | Proto::Geneve => {
                    // The pseudo-header's addresses: IPv4 bytes 12..20, IPv6 bytes 8..40.
                    let addrs = if ip6 {
                        &d[ETH_LEN + 8..ETH_LEN + 40]
                    } else {
                        &d[ETH_LEN + 12..ETH_LEN + 20]
                    };
                    let s = csum::add(u32::from(IPPROTO_UDP) + (total - l4) as u32, addrs);
                    let c = !csum::fold(csum::add(s, &d[l4..]));
                    let c = if c == 0 { 0xffff } else { c };
                    d[l4 + 6..l4 + 8].copy_from_slice(&c.to_be_bytes());
                }
                Proto::Gre => {
                    let c = csum::checksum(&d[l4..]);
                    d[l4 + 4..l4 + 6].copy_from_slice(&c.to_be_bytes());
                }
            }
        }
        true
    }
}

impl Template {
    /// [`Template::push`] for an IPv4 UDP template without options or checksum: the same
    /// bytes, written at offsets known at compile time (the template copied as one
    /// fixed-size block, no bounds checks per field).
    #[inline]
    fn push_v4_udp(&self, pkt: &mut packet::Packet, key: u64) -> bool {
        let f = pkt.data();
        let hash = inner_hash(f);
        let tos = if self.tos_inherit { inner_tos(f) } else { 0 };
        let total = f.len() + V4_UDP_HDR;
        let Ok(ip_total) = u16::try_from(total - ETH_LEN) else {
            return false;
        };
        let Some(h) = pkt.push_front(V4_UDP_HDR) else {
            return false;
        };
        let Ok(h) = <&mut [u8; V4_UDP_HDR]>::try_from(h) else {
            return false;
        };
        let t: &[u8; V4_UDP_HDR] = match self.hdr[..V4_UDP_HDR].try_into() {
            Ok(t) => t,
            Err(_) => return false,
        };
        *h = *t;
        const IP: usize = ETH_LEN;
        const L4: usize = ETH_LEN + IP_LEN;
        h[IP + 2..IP + 4].copy_from_slice(&ip_total.to_be_bytes());
        let mut sum = self.ip_sum + u32::from(ip_total);
        if self.tos_inherit {
            h[IP + 1] = tos;
            sum += u32::from(tos);
        }
        h[IP + 10..IP + 12].copy_from_slice(&(!csum::fold(sum)).to_be_bytes());
        let range = SRC_PORTS.load(std::sync::atomic::Ordering::Relaxed);
        let (lo, hi) = ((range >> 32) as u32, range as u32);
        let sport = lo + ((u64::from(hash) * u64::from(hi - lo)) >> 32) as u32;
        h[L4..L4 + 2].copy_from_slice(&(sport as u16).to_be_bytes());
        h[L4 + 4..L4 + 6].copy_from_slice(&(ip_total - IP_LEN as u16).to_be_bytes());
        let vni = ((key as u32) & 0x00ff_ffff) << 8;
        h[L4 + UDP_LEN + 4..L4 + UDP_LEN + 8].copy_from_slice(&vni.to_be_bytes());
        true
    }
}

/// Whether any option has the critical bit (0x80 of its type) set: the Geneve header's C
/// bit then says so.
fn has_critical(opts: &[u8]) -> bool {
    let mut at = 0;
    while let Some(h) = opts.get(at..at + 4) {
        if h[2] & 0x80 != 0 {
            return true;
        }
        at += 4 + usize::from(h[3] & 0x1f) * 4;
    }
    false
}

/// A hash of the inner flow (addresses, protocol, ports) for the UDP source port, so one
/// flow keeps one outer port and the receiver's RSS keeps it in order. Whole words, each
/// multiplied independently (no chain of dependent multiplies per byte), then mixed.
#[inline]
fn inner_hash(f: &[u8]) -> u32 {
    let w = |at: usize| {
        f.get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (a, b, c, d) = if f.len() >= 34 && f[12..14] == [0x08, 0x00] && f[14] >> 4 == 4 {
        let l4 = 14 + usize::from(f[14] & 0x0f) * 4;
        let ports = if matches!(f[23], 6 | 17 | 132) {
            w(l4)
        } else {
            0
        };
        (w(26), w(30), ports, u32::from(f[23]))
    } else {
        (w(0), w(4), w(8), 0)
    };
    let h = a.wrapping_mul(0x9e37_79b1)
        ^ b.wrapping_mul(0x85eb_ca77)
        ^ c.wrapping_mul(0xc2b2_ae3d)
        ^ d.wrapping_mul(0x27d4_eb2f);
    let h = (h ^ (h >> 15)).wrapping_mul(0x2c1b_3c6d);
    h ^ (h >> 12)
}

/// The inner IPv4 TOS or IPv6 traffic class, for `tos=inherit`.
fn inner_tos(f: &[u8]) -> u8 {
    match (f.get(12..14), f.get(14..)) {
        (Some(e), Some(ip)) => ip_tos(u16::from_be_bytes([e[0], e[1]]), ip),
        _ => 0,
    }
}

/// The TOS (IPv4) or traffic class (IPv6) of L3 packet `ip` of EtherType `et`; 0 for others.
fn ip_tos(et: u16, ip: &[u8]) -> u8 {
    match (et, ip) {
        (ETH_P_IP, [_, tos, ..]) => *tos,
        (ETH_P_IPV6, [a, b, ..]) => (a << 4) | (b >> 4),
        _ => 0,
    }
}

/// Where the L3 packet of Ethernet frame `f` starts (past the Ethernet header and up to two
/// VLAN tags, as OVS's flow extraction reads them) and its EtherType; `None` for an 802.3
/// frame (a length where the EtherType goes) or a frame too short to hold its tags.
pub fn l3_start(f: &[u8]) -> Option<(usize, u16)> {
    let mut at = 12;
    for _ in 0..3 {
        let e = f.get(at..at + 2)?;
        let et = u16::from_be_bytes([e[0], e[1]]);
        if at < 20 && matches!(et, ETH_P_VLAN | ETH_P_QINQ) {
            at += 4;
            continue;
        }
        return (et >= ETH_TYPE_MIN).then_some((at + 2, et));
    }
    None
}

#[path = "wire_rx.rs"]
mod rx;
pub use rx::{parse, pop, refused_ipv4, Parsed};

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "wire_l3_tests.rs"]
mod l3_tests;
