//! The process-wide tunnel state: which tunnel ports exist, which internal ports can carry
//! their outer packets (underlays), the neighbour (ARP and IPv6 ND) cache, the routes added
//! by hand, and the manager thread that resolves each tunnel's next hop.
//!
//! ## Who touches what
//! * Poll threads read [`decap_snapshot`] (an `arc-swap` snapshot of the receiving tunnels,
//!   no lock) on each burst an underlay port sends towards the host, and a tunnel's
//!   resolved outer headers ([`Tunnel::out`], also `arc-swap`) on each burst a tunnel port
//!   sends. They snoop ARP and Neighbor Advertisements into the neighbour cache with
//!   `try_lock` only: a busy cache loses one snoop, never stalls a poll thread.
//! * The manager thread (started with the first tunnel) wakes every 100 ms: it re-reads the
//!   routes (IPv4 and IPv6), resolves every tunnel's remote address to (underlay, source,
//!   next hop, MAC), publishes the outer header template, and sends an ARP request or a
//!   Neighbor Solicitation (at most one a second per next hop) for next hops whose MAC is
//!   unknown, through the underlay as if the host had sent it. Until the MAC is known the
//!   tunnel drops what it is given (and counts it), as OVS does.
//! * The control plane reads and flushes the tables for `ovs-appctl`.

use super::nd;
use super::route::{self, Route};
use super::wire::{Outer, Proto, Template};
use super::{Addr, Config};
use arc_swap::{ArcSwap, ArcSwapOption};
use crossbeam_channel::{bounded, Receiver, Sender};
use packet::{Batch, Pool};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Bursts a tunnel or underlay queue holds between two polls (a burst is what one transmit
/// call gave, at most `packet::MAX_BATCH` packets).
const QUEUE: usize = 16;
const TICK: Duration = Duration::from_millis(100);
const PROBE_EVERY: Duration = Duration::from_secs(1);

/// A bounded queue of bursts from poll threads (or the manager) to the poll thread that
/// receives them: whole batches travel, and the emptied batches travel back to be filled
/// again, so a burst costs two channel operations whatever its size and, once warm, no
/// allocation.
pub struct Bursts {
    full_tx: Sender<Batch>,
    full_rx: Receiver<Batch>,
    empty_tx: Sender<Batch>,
    empty_rx: Receiver<Batch>,
    /// Packets dropped because the queue was full.
    pub dropped: AtomicU64,
}

impl Bursts {
    fn new(n: usize) -> Bursts {
        let (full_tx, full_rx) = bounded(n);
        let (empty_tx, empty_rx) = bounded(n);
        Bursts {
            full_tx,
            full_rx,
            empty_tx,
            empty_rx,
            dropped: AtomicU64::new(0),
        }
    }

    /// An empty batch to fill: a recycled one, or a new one while the queue warms up.
    #[inline]
    pub fn spare(&self) -> Batch {
        self.empty_rx.try_recv().unwrap_or_default()
    }

    /// Queues `b`; when the queue is full, frees its packets into `pool`, counts them as
    /// dropped and returns how many.
    #[inline]
    pub fn send(&self, b: Batch, pool: &mut Pool) -> Result<(), usize> {
        match self.full_tx.try_send(b) {
            Ok(()) => Ok(()),
            Err(e) => {
                let mut b = e.into_inner();
                let n = b.len();
                for p in b.drain() {
                    pool.free(p);
                }
                self.recycle(b);
                self.dropped.fetch_add(n as u64, Ordering::Relaxed);
                Err(n)
            }
        }
    }

    /// The oldest queued burst.
    #[inline]
    pub fn recv(&self) -> Option<Batch> {
        self.full_rx.try_recv().ok()
    }

    /// Gives an emptied batch back for reuse (dropped if enough are waiting).
    #[inline]
    pub fn recycle(&self, b: Batch) {
        debug_assert!(b.is_empty());
        let _ = self.empty_tx.try_send(b);
    }
}

/// The receiving end's state: the rest of a burst that did not fit the caller's batch.
#[derive(Default)]
pub struct Drain {
    cur: Batch,
}

impl Drain {
    /// Moves queued packets into `out` while it has room; returns how many. An empty `out`
    /// takes a whole burst (or what a burst left) by trading storage with it: no packet is
    /// moved. A burst that does not fit the room left waits, whole, for the next call, which
    /// then trades storage too (filling every batch to the brim instead would split each
    /// later burst in two and move every packet of it, one by one, as long as the traffic
    /// lasts).
    #[inline]
    pub fn fill(&mut self, q: &Bursts, out: &mut Batch) -> usize {
        let mut n = 0;
        while out.room() > 0 {
            if self.cur.is_empty() {
                let Some(mut b) = q.recv() else { break };
                std::mem::swap(&mut self.cur, &mut b);
                q.recycle(b);
            }
            if out.is_empty() {
                std::mem::swap(out, &mut self.cur);
                n += out.len();
                continue;
            }
            if self.cur.len() > out.room() {
                break;
            }
            for p in self.cur.drain() {
                // `out` has room for each of these.
                if out.push(p).is_ok() {
                    n += 1;
                }
            }
        }
        n
    }

    /// Drops everything still held (the port is closing).
    pub fn clear(&mut self, q: &Bursts) {
        self.cur.drain().for_each(drop);
        while let Some(mut b) = q.recv() {
            b.drain().for_each(drop);
        }
    }
}

/// Outer headers of a tunnel towards one remote address.
pub struct Resolved {
    pub underlay: Arc<Underlay>,
    pub tmpl: Template,
    pub remote: IpAddr,
}

/// A tunnel port's shared half.
pub struct Tunnel {
    pub name: String,
    pub cfg: Config,
    /// Bursts of decapsulated packets waiting for the tunnel port's receive poll (their
    /// drops: packets dropped because the queue was full).
    pub rx: Bursts,
    /// Fixed remote: its resolution, once known.
    pub out: ArcSwapOption<Resolved>,
    /// `remote_ip=flow`: resolutions by remote address.
    pub flow_out: ArcSwap<Vec<Arc<Resolved>>>,
    /// `remote_ip=flow`: remote addresses packets asked for that are not resolved yet.
    pub wanted: Mutex<Vec<IpAddr>>,
}

/// An internal port that carries tunnel traffic: its outer packets leave through it as if
/// the host had sent them, and packets it would hand to the host are checked for tunnels.
pub struct Underlay {
    pub name: String,
    pub mac: [u8; 6],
    /// Its IPv4 address (0 if none), refreshed by the manager.
    pub ip: AtomicU32,
    /// Its global IPv6 address, refreshed by the manager.
    pub ip6: Mutex<Option<Ipv6Addr>>,
    /// Its link-local IPv6 addresses, refreshed by the manager: tunnel packets to them are
    /// the switch's too, as in OVS's tunnel port map (never a source or a route here).
    pub ll6: Mutex<Vec<Ipv6Addr>>,
    /// Bursts of outer packets (and ARP probes) waiting to be received "from the host".
    pub inject: Bursts,
}

struct Neigh {
    mac: [u8; 6],
    bridge: String,
    seen: Instant,
}

#[derive(Default)]
struct State {
    tunnels: Vec<Weak<Tunnel>>,
    underlays: Vec<Weak<Underlay>>,
    routes: Vec<Route>,
    /// Routes added with `ovs/route/add`.
    user_routes: Vec<Route>,
    probed: BTreeMap<IpAddr, Instant>,
}

struct Table {
    state: Mutex<State>,
    neigh: Mutex<BTreeMap<IpAddr, Neigh>>,
    decap: ArcSwap<Vec<Arc<Tunnel>>>,
    any: AtomicBool,
    /// Decapsulated packets no tunnel port accepted (dropped, as OVS does).
    unmatched: AtomicU64,
    refused: AtomicU64,
    /// Bumped whenever what translation asks of tunnels may have changed (see
    /// [`generation`]).
    gen: AtomicU64,
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table {
        state: Mutex::new(State::default()),
        neigh: Mutex::new(BTreeMap::new()),
        decap: ArcSwap::from_pointee(Vec::new()),
        any: AtomicBool::new(false),
        unmatched: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        gen: AtomicU64::new(0),
    })
}

/// A number that changes whenever a tunnel port, an underlay's address, a route or a
/// neighbour changed: megaflows that decapsulate or encapsulate (`tnl_pop`, `tnl_push`)
/// depend on them, and the datapath revalidates its megaflows when this moves (as OVS
/// does on a route or neighbour change).
pub fn generation() -> u64 {
    table().gen.load(Ordering::Relaxed)
}

fn changed() {
    table().gen.fetch_add(1, Ordering::Relaxed);
}

/// The underlay (internal port) called `name`, if it is one.
pub fn underlay(name: &str) -> Option<Arc<Underlay>> {
    let st = lock(&table().state);
    st.underlays
        .iter()
        .filter_map(Weak::upgrade)
        .find(|u| u.name == name)
}

/// Every underlay (internal port), by name.
pub fn underlays() -> Vec<Arc<Underlay>> {
    let st = lock(&table().state);
    let mut v: Vec<_> = st.underlays.iter().filter_map(Weak::upgrade).collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// True once any tunnel port exists: underlay ports check for tunnel packets only then.
#[inline(always)]
pub fn active() -> bool {
    table().any.load(Ordering::Relaxed)
}

/// The receiving tunnels, for decapsulation.
#[inline]
pub fn decap_snapshot() -> arc_swap::Guard<Arc<Vec<Arc<Tunnel>>>> {
    table().decap.load()
}

/// Counts a decapsulated packet that no tunnel port accepted.
pub fn count_unmatched() {
    table().unmatched.fetch_add(1, Ordering::Relaxed);
}

/// Counts a packet to a tunnel's port that decapsulation refused (IP options, a bad
/// header checksum: see `wire::refused_ipv4`).
pub fn count_refused() {
    table().refused.fetch_add(1, Ordering::Relaxed);
}

/// Packets to a tunnel's port refused by decapsulation so far (see [`count_refused`]).
pub fn refused() -> u64 {
    table().refused.load(Ordering::Relaxed)
}

fn publish(st: &mut State) {
    st.tunnels.retain(|w| w.strong_count() > 0);
    let live: Vec<Arc<Tunnel>> = st.tunnels.iter().filter_map(Weak::upgrade).collect();
    let t = table();
    t.any.store(!live.is_empty(), Ordering::Relaxed);
    t.decap.store(Arc::new(live));
    changed();
}

/// Registers a new tunnel port's shared half and starts the manager if needed.
pub fn add_tunnel(name: &str, cfg: Config) -> Arc<Tunnel> {
    let t = Arc::new(Tunnel {
        name: name.to_string(),
        cfg,
        rx: Bursts::new(QUEUE),
        out: ArcSwapOption::empty(),
        flow_out: ArcSwap::from_pointee(Vec::new()),
        wanted: Mutex::new(Vec::new()),
    });
    let mut st = lock(&table().state);
    st.tunnels.push(Arc::downgrade(&t));
    publish(&mut st);
    drop(st);
    start_manager();
    t
}

/// Forgets a tunnel port (called when its port is closed).
pub fn remove_tunnel(t: &Arc<Tunnel>) {
    let mut st = lock(&table().state);
    st.tunnels
        .retain(|w| !std::ptr::eq(w.as_ptr(), Arc::as_ptr(t)));
    publish(&mut st);
}

/// Registers an internal port as a possible underlay.
pub fn add_underlay(name: &str, mac: [u8; 6]) -> Arc<Underlay> {
    let u = Arc::new(Underlay {
        name: name.to_string(),
        mac,
        ip: AtomicU32::new(crate::interface_ipv4(name).map_or(0, u32::from)),
        ip6: Mutex::new(route::interface_ipv6(name)),
        ll6: Mutex::new(route::interface_ipv6_link_local(name)),
        inject: Bursts::new(QUEUE),
    });
    let mut st = lock(&table().state);
    st.underlays.retain(|w| w.strong_count() > 0);
    st.underlays.push(Arc::downgrade(&u));
    u
}

/// Learns `ip` -> `mac` from an ARP packet or Neighbor Advertisement seen on underlay
/// `bridge` (skipped if the cache is busy).
pub fn snoop(ip: IpAddr, mac: [u8; 6], bridge: &str) {
    if ip.is_unspecified() || mac == [0; 6] || mac[0] & 1 != 0 {
        return;
    }
    if let Ok(mut n) = table().neigh.try_lock() {
        match n.get_mut(&ip) {
            Some(e) if e.mac == mac => e.seen = Instant::now(),
            _ => {
                n.insert(
                    ip,
                    Neigh {
                        mac,
                        bridge: bridge.to_string(),
                        seen: Instant::now(),
                    },
                );
            }
        }
    }
}

fn start_manager() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let r = std::thread::Builder::new()
            .name("tnl-manager".into())
            .spawn(|| loop {
                std::thread::sleep(TICK);
                manage();
            });
        if let Err(e) = r {
            eprintln!("tunnel: cannot start the manager thread: {e}");
        }
    });
}

/// One round of the manager (see the module documentation).
fn manage() {
    let t = table();
    let (tunnels, underlays, routes) = {
        let mut st = lock(&t.state);
        st.underlays.retain(|w| w.strong_count() > 0);
        let u: Vec<Arc<Underlay>> = st.underlays.iter().filter_map(Weak::upgrade).collect();
        for x in &u {
            let ip = crate::interface_ipv4(&x.name).map_or(0, u32::from);
            let ip6 = route::interface_ipv6(&x.name);
            if x.ip.swap(ip, Ordering::Relaxed) != ip {
                changed();
            }
            let mut cur = lock(&x.ip6);
            if *cur != ip6 {
                *cur = ip6;
                changed();
            }
            drop(cur);
            let ll6 = route::interface_ipv6_link_local(&x.name);
            let mut cur = lock(&x.ll6);
            if *cur != ll6 {
                *cur = ll6;
                changed();
            }
        }
        let mut routes = st.user_routes.clone();
        routes.extend(route::kernel_routes());
        for x in &u {
            let ip = Ipv4Addr::from(x.ip.load(Ordering::Relaxed));
            let ip = (!ip.is_unspecified()).then_some(IpAddr::V4(ip));
            let ip6 = lock(&x.ip6).map(IpAddr::V6);
            for ip in [ip, ip6].into_iter().flatten() {
                routes.push(Route {
                    dst: ip,
                    plen: if ip.is_ipv4() { 32 } else { 128 },
                    dev: x.name.clone(),
                    gw: None,
                    metric: 0,
                    local: true,
                    user: false,
                    src: Some(ip),
                    mark: 0,
                });
            }
        }
        st.routes = routes.clone();
        let tun: Vec<Arc<Tunnel>> = st.tunnels.iter().filter_map(Weak::upgrade).collect();
        (tun, u, routes)
    };
    let aging = super::knobs::neigh_aging();
    lock(&t.neigh).retain(|_, n| n.seen.elapsed() < aging);
    for tun in &tunnels {
        match tun.cfg.remote {
            Addr::Fixed(ip) => {
                let r = resolve(&tun.cfg, ip, &underlays, &routes).map(Arc::new);
                let same = match (tun.out.load().as_deref(), r.as_deref()) {
                    (Some(a), Some(b)) => a.tmpl == b.tmpl && Arc::ptr_eq(&a.underlay, &b.underlay),
                    (None, None) => true,
                    _ => false,
                };
                if !same {
                    tun.out.store(r);
                    changed();
                }
            }
            Addr::Flow => {
                let mut want: Vec<IpAddr> = std::mem::take(&mut *lock(&tun.wanted));
                want.extend(tun.flow_out.load().iter().map(|r| r.remote));
                want.sort_unstable();
                want.dedup();
                want.truncate(256);
                let v: Vec<Arc<Resolved>> = want
                    .into_iter()
                    .filter_map(|ip| resolve(&tun.cfg, ip, &underlays, &routes).map(Arc::new))
                    .collect();
                let old = tun.flow_out.load();
                let same = old.len() == v.len()
                    && old.iter().zip(&v).all(|(a, b)| {
                        a.remote == b.remote
                            && a.tmpl == b.tmpl
                            && Arc::ptr_eq(&a.underlay, &b.underlay)
                    });
                if !same {
                    tun.flow_out.store(Arc::new(v));
                    changed();
                }
            }
        }
    }
}

/// The underlay's own address of `remote`'s family, if it has one.
fn underlay_addr(u: &Underlay, remote: IpAddr) -> Option<IpAddr> {
    match remote {
        IpAddr::V4(_) => {
            let ip = Ipv4Addr::from(u.ip.load(Ordering::Relaxed));
            (!ip.is_unspecified()).then_some(IpAddr::V4(ip))
        }
        IpAddr::V6(_) => lock(&u.ip6).map(IpAddr::V6),
    }
}

/// Outer headers for `cfg` towards `remote`, or `None` (with an ARP request or Neighbor
/// Solicitation sent) if the next hop's MAC is not known yet, or no underlay carries the
/// route.
fn resolve(
    cfg: &Config,
    remote: IpAddr,
    underlays: &[Arc<Underlay>],
    routes: &[Route],
) -> Option<Resolved> {
    let r = route::lookup(routes, remote)?;
    let u = underlays.iter().find(|u| u.name == r.dev)?;
    let uip = underlay_addr(u, remote);
    let src = match cfg.local {
        Some(Addr::Fixed(ip)) if ip.is_ipv4() == remote.is_ipv4() => ip,
        Some(Addr::Fixed(_)) => return None,
        _ => r.src.filter(|_| r.user).or(uip)?,
    };
    let nexthop = r.gw.unwrap_or(remote);
    let mac = lock(&table().neigh).get(&nexthop).map(|n| n.mac);
    let Some(dst_mac) = mac else {
        probe(u, uip.unwrap_or(src), nexthop);
        return None;
    };
    let tmpl = Template::new(&Outer {
        proto: cfg.proto,
        src_mac: u.mac,
        dst_mac,
        src,
        dst: remote,
        dst_port: cfg.dst_port,
        tos: cfg.tos,
        ttl: cfg.ttl,
        df: cfg.df_default,
        csum: cfg.csum,
        gre_key: cfg.proto == Proto::Gre && cfg.out_key != super::Key::Fixed(0),
    });
    Some(Resolved {
        underlay: Arc::clone(u),
        tmpl,
        remote,
    })
}

/// Sends an ARP request or a Neighbor Solicitation for `target` out of underlay `u` (at
/// most once a second per target).
fn probe(u: &Underlay, src: IpAddr, target: IpAddr) {
    let f = match (src, target) {
        (IpAddr::V4(s), IpAddr::V4(t)) => nd::arp_request(u.mac, s, t),
        (IpAddr::V6(s), IpAddr::V6(t)) => nd::neighbor_solicitation(u.mac, s, t),
        _ => return,
    };
    {
        let mut st = lock(&table().state);
        if st
            .probed
            .get(&target)
            .is_some_and(|t| t.elapsed() < PROBE_EVERY)
        {
            return;
        }
        st.probed.insert(target, Instant::now());
    }
    let mut pool = Pool::new(1);
    if let Some(mut p) = pool.alloc() {
        let mut b = u.inject.spare();
        if p.set_frame(&f) && b.push(p).is_ok() {
            let _ = u.inject.send(b, &mut pool);
        }
    }
}

/// `ovs-appctl ovs/route/show`.
pub fn route_show() -> String {
    let routes = lock(&table().state).routes.clone();
    let routes = if routes.is_empty() {
        route::kernel_routes()
    } else {
        routes
    };
    route::show(&routes)
}

/// `ovs-appctl ovs/route/lookup IP [pkt_mark=N]` (IPv4 or IPv6; `IP/32` and `IP/128` are
/// taken too, as OVS takes them): the best route among those with that mark (0: unmarked).
pub fn route_lookup(args: &[String]) -> Result<String, String> {
    let ip = args
        .first()
        .and_then(|a| match a.split_once('/') {
            None => a.parse::<IpAddr>().ok(),
            Some((ip, plen)) => {
                let ip = ip.parse::<IpAddr>().ok()?;
                let full = if ip.is_ipv4() { "32" } else { "128" };
                (plen == full).then_some(ip)
            }
        })
        .ok_or("Invalid parameters")?;
    let mark = match args.get(1) {
        None => 0,
        Some(a) => route::parse_mark_arg(a).ok_or("Invalid pkt_mark")?,
    };
    let routes = {
        let st = lock(&table().state);
        if st.routes.is_empty() {
            let mut r = st.user_routes.clone();
            r.extend(route::kernel_routes());
            r
        } else {
            st.routes.clone()
        }
    };
    match route::lookup_marked(&routes, ip, mark) {
        // OVS prints a missing gateway (of either family) as IPv6's "::".
        Some(r) => Ok(format!(
            "src {}\ngateway {}\ndev {}\n",
            r.src.map_or("::".to_string(), |a| a.to_string()),
            r.gw.map_or("::".to_string(), |a| a.to_string()),
            r.dev
        )),
        None => Err("Not found".into()),
    }
}

/// `ovs-appctl ovs/route/add IP/PLEN BRIDGE [GW] [pkt_mark=N] [src=IP]`: a route the
/// manager uses (before the kernel's on a tie) until the process ends.
pub fn route_add(args: &[String]) -> Result<String, String> {
    let mut r = route::parse_add(args)?;
    let addrs = crate::sys::if_addresses(&r.dev);
    // The source is looked for with the address as typed, host bits and all, as OVS does.
    let typed = args
        .first()
        .and_then(|a| a.split('/').next())
        .and_then(|a| a.parse::<IpAddr>().ok())
        .unwrap_or(r.dst);
    r.src = Some(
        route::source_address(&addrs, typed, r.gw, r.src).ok_or("Error while inserting route.")?,
    );
    let mut st = lock(&table().state);
    st.user_routes
        .retain(|u| (u.dst, u.plen, u.mark) != (r.dst, r.plen, r.mark));
    st.user_routes.push(r);
    let mut routes = st.user_routes.clone();
    routes.extend(st.routes.iter().filter(|x| !x.user).cloned());
    st.routes = routes;
    changed();
    Ok("OK\n".into())
}

/// `ovs-appctl ovs/route/del IP/PLEN [pkt_mark=N]`: removes a route added with
/// `ovs/route/add` (the kernel's and the bridges' own routes are not ours to remove, as in
/// OVS); "Not found" when there is none with that prefix and mark.
pub fn route_del(args: &[String]) -> Result<String, String> {
    let (dst, plen, mark) = route::parse_del(args)?;
    let mut st = lock(&table().state);
    let before = st.user_routes.len();
    st.user_routes
        .retain(|u| (u.dst, u.plen, u.mark) != (dst, plen, mark));
    if st.user_routes.len() == before {
        return Err("Not found".into());
    }
    st.routes
        .retain(|u| !(u.user && (u.dst, u.plen, u.mark) == (dst, plen, mark)));
    changed();
    Ok("OK\n".into())
}

/// `ovs-appctl tnl/neigh/set BRIDGE IP MAC` (IPv4 or IPv6).
pub fn neigh_set(args: &[String]) -> Result<String, String> {
    let [bridge, ip, mac] = args else {
        return Err("usage: tnl/neigh/set BRIDGE IP MAC".into());
    };
    let ip: IpAddr = ip.parse().map_err(|_| "bad IP address")?;
    let m: Vec<u8> = mac
        .split(':')
        .filter_map(|x| {
            (x.len() <= 2)
                .then(|| u8::from_str_radix(x, 16).ok())
                .flatten()
        })
        .collect();
    let mac: [u8; 6] = m.try_into().map_err(|_| "bad MAC address")?;
    lock(&table().neigh).insert(
        ip,
        Neigh {
            mac,
            bridge: bridge.clone(),
            seen: Instant::now(),
        },
    );
    changed();
    Ok("OK\n".into())
}

/// `ovs-appctl tnl/neigh/show`.
pub fn neigh_show() -> String {
    let mut s = format!("{:<46}{:<20}Bridge\n", "IP", "MAC");
    s.push_str(&"=".repeat(74));
    s.push('\n');
    for (ip, n) in lock(&table().neigh).iter() {
        let m = n.mac;
        s.push_str(&format!(
            "{:<46}{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}   {}\n",
            ip.to_string(),
            m[0],
            m[1],
            m[2],
            m[3],
            m[4],
            m[5],
            n.bridge
        ));
    }
    s
}

/// `ovs-appctl tnl/neigh/flush`.
pub fn neigh_flush() -> String {
    lock(&table().neigh).clear();
    changed();
    "OK\n".into()
}

/// `ovs-appctl tnl/ports/show`: the UDP ports (and GRE) tunnels listen on, with how many
/// tunnel ports use each (`-v`: [`super::underlay::ports_show_verbose`]).
pub fn ports_show() -> String {
    let mut by: BTreeMap<(Proto, u16), usize> = BTreeMap::new();
    for t in decap_snapshot().iter() {
        *by.entry((t.cfg.proto, t.cfg.dst_port)).or_default() += 1;
    }
    let mut s = String::from("Listening ports:\n");
    for ((p, port), n) in by {
        if p == Proto::Gre {
            s.push_str(&format!("{} ref_cnt={n}\n", p.sys_name(port)));
        } else {
            s.push_str(&format!("{} ({port}) ref_cnt={n}\n", p.sys_name(port)));
        }
    }
    s
}

/// Whether tunnel port `name` (a fixed remote) has its outer headers, i.e. would send now.
pub fn resolved(name: &str) -> bool {
    decap_snapshot()
        .iter()
        .any(|t| t.name == name && t.out.load().is_some())
}

/// Decapsulated packets no tunnel port accepted.
pub fn unmatched() -> u64 {
    table().unmatched.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::MAX_BATCH;

    fn burst(pool: &mut Pool, q: &Bursts, tags: std::ops::Range<usize>) -> Batch {
        let mut b = q.spare();
        for t in tags {
            let mut p = pool.alloc().expect("buffer");
            let mut f = [0u8; 60];
            f[..8].copy_from_slice(&t.to_be_bytes());
            assert!(p.set_frame(&f));
            assert!(b.push(p).is_ok());
        }
        b
    }

    fn tags(b: &Batch) -> Vec<usize> {
        b.packets()
            .iter()
            .map(|p| usize::from_be_bytes(p.data()[..8].try_into().expect("8 bytes")))
            .collect()
    }

    #[test]
    fn bursts_arrive_in_order_whatever_room_the_receiver_has() {
        let mut pool = Pool::new(4 * MAX_BATCH);
        let q = Bursts::new(2);
        let mut d = Drain::default();
        let first = MAX_BATCH - 12;
        // An empty receiver takes a whole burst; its own storage goes back for reuse.
        let b = burst(&mut pool, &q, 0..first);
        assert!(q.send(b, &mut pool).is_ok());
        let mut out = Batch::new();
        assert_eq!(d.fill(&q, &mut out), first);
        assert_eq!(tags(&out), (0..first).collect::<Vec<_>>());
        // A receiver with 12 slots left takes a burst of 10, which fits; the burst of 20
        // after it does not, and waits whole for the next call (which takes it without
        // moving a packet).
        assert!(q.send(burst(&mut pool, &q, 1000..1010), &mut pool).is_ok());
        assert!(q.send(burst(&mut pool, &q, 2000..2020), &mut pool).is_ok());
        // The queue holds two bursts: a third is dropped and counted.
        assert_eq!(q.send(burst(&mut pool, &q, 9000..9003), &mut pool), Err(3));
        assert_eq!(q.dropped.load(Ordering::Relaxed), 3);
        assert_eq!(d.fill(&q, &mut out), 10);
        assert_eq!(tags(&out)[first..], (1000..1010).collect::<Vec<_>>()[..]);
        // Later bursts queue behind the waiting one, and come in order.
        assert!(q.send(burst(&mut pool, &q, 3000..3005), &mut pool).is_ok());
        let mut out2 = Batch::new();
        assert_eq!(d.fill(&q, &mut out2), 25);
        assert_eq!(
            tags(&out2),
            (2000..2020).chain(3000..3005).collect::<Vec<_>>()
        );
        assert_eq!(d.fill(&q, &mut Batch::new()), 0);
        for p in out.drain().chain(out2.drain()) {
            pool.free(p);
        }
        assert_eq!(pool.outstanding(), 0);
    }
}
