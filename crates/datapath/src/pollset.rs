//! The poll set: every bridge served by one poll thread, with its buffer pool and counters.
//!
//! A [`PollSet`] is owned by exactly one thread (the poll-mode thread, see [`crate::pmd`]). The
//! control plane never touches it directly: it sends closures that run between two polls
//! (see [`crate::pmd::PmdHandle::call`]), so every change is applied atomically with respect to
//! forwarding and no lock is ever taken on the fast path.
//!
//! Port names are unique across the whole datapath (like kernel interface names); ofports are
//! unique within a bridge. Status leaves as plain structs ([`crate::report`]); the layout of
//! `show`, `dump-ports` and `pmd-stats-show` is the daemon's.

use crate::bridge::{Bridge, LOCAL_OFPORT, MAX_OFPORT};
use crate::cycles;
use crate::error::Error;
use crate::module::{Ctx, SwitchLogic, VlanMode};
use crate::report::{
    BridgeReport, CacheCounters, PmdReport, PortCounters, PortCountersReport, PortReport,
};
use netdev::Port;
use packet::Pool;

/// Outer bursts one call of [`PollSet::forward_encapsulated`] forwards on the thread.
const MAX_HANDOVERS: usize = 64;

/// Default number of packet buffers in the poll thread's pool.
pub const DEFAULT_POOL: usize = 16_384;

/// Poll-thread counters, in the spirit of `dpif-netdev/pmd-stats-show`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmdStats {
    pub packets: u64,
    pub iterations: u64,
    pub busy_iterations: u64,
    pub busy_cycles: u64,
    pub idle_cycles: u64,
    pub sleep_us: u64,
    /// Times the poll loop was restarted after a panic.
    pub restarts: u64,
}

impl PmdStats {
    /// Records one iteration that handled `n` packets, `rx` of them received, in `cycles`.
    #[inline(always)]
    pub fn account(&mut self, n: usize, rx: usize, cycles: u64) {
        self.iterations += 1;
        if n > 0 {
            self.packets += rx as u64;
            self.busy_iterations += 1;
            self.busy_cycles += cycles;
        } else {
            self.idle_cycles += cycles;
        }
    }
}

/// See the module documentation.
pub struct PollSet {
    bridges: Vec<Bridge>,
    pub pool: Pool,
    last_run_ms: u64,
    last_link_ms: u64,
    pub pmd: PmdStats,
    pub core_id: Option<usize>,
    /// Module cache counters at the last `pmd-stats-clear`.
    cache_base: std::collections::BTreeMap<&'static str, u64>,
    /// New ports' receive queues wait, unpolled, until the control plane places them
    /// ([`PollSet::unpark_rxq`]); set for threads run by [`crate::Datapath`].
    pub park_new_rxqs: bool,
    /// Packets received by the last poll.
    last_rx: usize,
    /// Cycle counter at the last measured point (see [`Bridge::poll`]).
    cursor: u64,
}

impl Default for PollSet {
    fn default() -> Self {
        Self::new(DEFAULT_POOL)
    }
}

impl PollSet {
    /// An empty switch with a pool of `pool_size` buffers.
    pub fn new(pool_size: usize) -> PollSet {
        PollSet {
            bridges: Vec::new(),
            pool: Pool::new(pool_size),
            last_run_ms: 0,
            last_link_ms: 0,
            pmd: PmdStats::default(),
            core_id: None,
            cache_base: std::collections::BTreeMap::new(),
            park_new_rxqs: false,
            last_rx: 0,
            cursor: cycles::now(),
        }
    }

    /// Milliseconds on the datapath clock ([`crate::clock`]).
    #[inline(always)]
    pub fn now_ms(&self) -> u64 {
        crate::clock::now_ms()
    }

    /// The bridges.
    pub fn bridges(&self) -> &[Bridge] {
        &self.bridges
    }

    /// A bridge by name.
    pub fn bridge(&self, name: &str) -> Option<&Bridge> {
        self.bridges.iter().find(|b| b.name == name)
    }

    /// A bridge by name, writable.
    pub fn bridge_mut(&mut self, name: &str) -> Option<&mut Bridge> {
        self.bridges.iter_mut().find(|b| b.name == name)
    }

    fn bridge_or_err(&self, name: &str) -> Result<&Bridge, Error> {
        self.bridge(name)
            .ok_or_else(|| Error::NoSuchBridge(name.to_string()))
    }

    /// The bridge holding port `name`, if any.
    pub fn port_owner(&self, name: &str) -> Option<&str> {
        self.bridges
            .iter()
            .find(|b| b.find_port(name).is_some())
            .map(|b| b.name.as_str())
    }

    /// Checks that a bridge named `name` could be created.
    pub fn check_add_bridge(&self, name: &str) -> Result<(), Error> {
        if self.bridge(name).is_some() {
            return Err(Error::BridgeExists(name.to_string()));
        }
        if let Some(b) = self.port_owner(name) {
            return Err(Error::NameIsPort {
                name: name.to_string(),
                bridge: b.to_string(),
            });
        }
        Ok(())
    }

    /// Creates a bridge with `module` and, optionally, its internal port as `LOCAL`.
    pub fn add_bridge(
        &mut self,
        name: &str,
        module: Box<dyn SwitchLogic>,
        local: Option<Box<dyn Port>>,
    ) -> Result<(), Error> {
        self.check_add_bridge(name)?;
        let mut br = Bridge::new(name, module);
        if let Some(p) = local {
            let idx = br.attach(p, LOCAL_OFPORT, VlanMode::Trunk(None));
            if self.park_new_rxqs {
                br.park_rxqs(idx);
            }
        }
        self.bridges.push(br);
        Ok(())
    }

    /// Removes a bridge and all its ports.
    pub fn del_bridge(&mut self, name: &str) -> Result<(), Error> {
        let i = self
            .bridges
            .iter()
            .position(|b| b.name == name)
            .ok_or_else(|| Error::NoSuchBridge(name.to_string()))?;
        let mut br = self.bridges.remove(i);
        let ports = br.detach_all(&mut self.pool);
        drop(ports);
        Ok(())
    }

    /// Checks that port `name` could be added to bridge `br` with `ofport`.
    pub fn check_add_port(&self, br: &str, name: &str, ofport: Option<u32>) -> Result<(), Error> {
        let b = self.bridge_or_err(br)?;
        if let Some(owner) = self.port_owner(name) {
            return Err(Error::PortExists {
                port: name.to_string(),
                bridge: owner.to_string(),
            });
        }
        if self.bridge(name).is_some() {
            return Err(Error::NameIsBridge(name.to_string()));
        }
        if let Some(n) = ofport {
            if n == 0 || n > MAX_OFPORT {
                return Err(Error::OfportRange {
                    ofport: n,
                    max: MAX_OFPORT,
                });
            }
            if let Some(idx) = b.find_ofport(n) {
                let other = b
                    .ports()
                    .find(|(i, _)| *i == idx)
                    .map(|(_, s)| s.port.name().to_string())
                    .unwrap_or_default();
                return Err(Error::OfportInUse {
                    ofport: n,
                    port: other,
                });
            }
        }
        Ok(())
    }

    /// Adds an opened port to bridge `br`. Returns its ofport.
    pub fn add_port(
        &mut self,
        br: &str,
        port: Box<dyn Port>,
        ofport: Option<u32>,
        vlan: VlanMode,
    ) -> Result<u32, Error> {
        self.check_add_port(br, port.name(), ofport)?;
        let park = self.park_new_rxqs;
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        let n = ofport.unwrap_or_else(|| b.free_ofport());
        let idx = b.attach(port, n, vlan);
        if park {
            b.park_rxqs(idx);
        }
        Ok(n)
    }

    /// Removes port `name` from bridge `br` (any bridge if `br` is `None`).
    pub fn del_port(&mut self, br: Option<&str>, name: &str) -> Result<(), Error> {
        let owner = match br {
            Some(b) => {
                self.bridge_or_err(b)?;
                b.to_string()
            }
            None => self
                .port_owner(name)
                .ok_or_else(|| Error::NoSuchPort(name.to_string()))?
                .to_string(),
        };
        let pool = &mut self.pool;
        let b = self
            .bridges
            .iter_mut()
            .find(|b| b.name == owner)
            .ok_or_else(|| Error::NoSuchBridge(owner.clone()))?;
        let idx = b.find_port(name).ok_or_else(|| Error::NoPortOnBridge {
            bridge: owner.clone(),
            port: name.to_string(),
        })?;
        if b.ports().any(|(i, s)| i == idx && s.ofport == LOCAL_OFPORT) {
            return Err(Error::LocalPort(name.to_string()));
        }
        b.detach(idx, pool);
        Ok(())
    }

    /// A replica of bridge `br` for another poll thread: a fork of its module and a shared
    /// handle on every port, with the slot, ofport and VLAN mode each has here. `None` if the
    /// module cannot be forked or a port cannot be shared.
    #[allow(clippy::type_complexity)]
    pub fn share_bridge(
        &mut self,
        br: &str,
    ) -> Option<(
        Box<dyn SwitchLogic>,
        Vec<(u16, u32, VlanMode, Box<dyn Port>)>,
    )> {
        let b = self.bridge_mut(br)?;
        let m = b.module.fork()?;
        let mut ports = Vec::new();
        for idx in b.ports().map(|(i, _)| i).collect::<Vec<_>>() {
            ports.push(b.share_port(idx)?);
        }
        Some((m, ports))
    }

    /// A shared handle on the port in slot `idx` of bridge `br` (see [`Port::share`]).
    pub fn share_port(
        &mut self,
        br: &str,
        idx: u16,
    ) -> Option<(u16, u32, VlanMode, Box<dyn Port>)> {
        self.bridge_mut(br)?.share_port(idx)
    }

    /// Adds a replica of a bridge whose first instance lives on another poll thread.
    pub fn add_replica(
        &mut self,
        name: &str,
        module: Box<dyn SwitchLogic>,
        ports: Vec<(u16, u32, VlanMode, Box<dyn Port>)>,
    ) -> Result<(), Error> {
        if self.bridge(name).is_some() {
            return Err(Error::ReplicaExists(name.to_string()));
        }
        let mut br = Bridge::new(name, module);
        for (idx, ofport, vlan, p) in ports {
            br.attach_shared(idx, p, ofport, vlan);
        }
        self.bridges.push(br);
        Ok(())
    }

    /// Attaches a shared port handle to the replica of bridge `br`, in slot `idx`.
    pub fn attach_shared(
        &mut self,
        br: &str,
        idx: u16,
        ofport: u32,
        vlan: VlanMode,
        port: Box<dyn Port>,
    ) -> Result<(), Error> {
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        b.attach_shared(idx, port, ofport, vlan);
        Ok(())
    }

    /// Detaches slot `idx` of bridge `br` (a replica's handle; the internal port included).
    pub fn detach_slot(&mut self, br: &str, idx: u16) {
        let PollSet { bridges, pool, .. } = self;
        if let Some(b) = bridges.iter_mut().find(|b| b.name == br) {
            b.detach(idx, pool);
        }
    }

    /// Takes receive queue `q` of slot `idx` of bridge `br` off this poll thread.
    pub fn take_rxq(
        &mut self,
        br: &str,
        idx: u16,
        q: u16,
    ) -> Option<(netdev::RxqState, crate::bridge::RxEntry)> {
        self.bridge_mut(br)?.take_rxq(idx, q)
    }

    /// Starts polling receive queue `q` of slot `idx` of bridge `br` on this poll thread.
    pub fn put_rxq(
        &mut self,
        br: &str,
        idx: u16,
        q: u16,
        st: netdev::RxqState,
        load: crate::bridge::RxEntry,
    ) -> Result<(), netdev::RxqState> {
        match self.bridge_mut(br) {
            Some(b) => b.put_rxq(idx, q, st, load),
            None => Err(st),
        }
    }

    /// Starts polling a parked receive queue on this thread.
    pub fn unpark_rxq(&mut self, br: &str, idx: u16, q: u16) {
        if let Some(b) = self.bridge_mut(br) {
            b.unpark_rxq(idx, q);
        }
    }

    /// Every receive queue this thread polls or holds parked: (bridge, slot, port, queue,
    /// cycles, packets).
    pub fn rxq_loads(&self) -> Vec<(String, u16, String, u16, u64, u64)> {
        let mut v = Vec::new();
        for b in &self.bridges {
            for e in b.rxqs().iter().chain(b.parked_rxqs()) {
                v.push((
                    b.name.clone(),
                    e.slot,
                    b.port_name(e.slot).unwrap_or("").to_string(),
                    e.q,
                    e.cycles,
                    e.packets,
                ));
            }
        }
        v
    }

    /// Counters of every port handle on this thread: (bridge, slot, counters).
    pub fn port_counters(&self) -> Vec<(String, u16, netdev::PortStats)> {
        let mut v = Vec::new();
        for b in &self.bridges {
            for (i, s) in b.ports() {
                v.push((b.name.clone(), i, s.port.stats()));
            }
        }
        v
    }

    /// Applies a module setting to bridge `br`.
    pub fn configure_bridge(&mut self, br: &str, key: &str, value: &str) -> Result<(), Error> {
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        Ok(b.module.configure(key, value)?)
    }

    /// The fast-path trace of bridge `br` on this thread (`pmd-trace-show`).
    pub fn trace_report(&self, br: &str) -> Result<crate::report::ThreadTrace, Error> {
        self.bridge(br)
            .map(Bridge::trace_report)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))
    }

    /// Runs a module verb on bridge `br`.
    pub fn module_command(
        &mut self,
        br: &str,
        verb: &str,
        args: &[String],
        json: bool,
    ) -> Result<String, Error> {
        let ctx = Ctx {
            now_ms: self.now_ms(),
        };
        let b = self
            .bridges
            .iter_mut()
            .find(|b| b.name == br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        let known = |cs: &[crate::module::ModuleCommand]| cs.iter().any(|c| c.verb == verb);
        if !known(b.module.commands()) && !known(crate::bridge::trace::COMMANDS) {
            return Err(Error::NoSuchCommand {
                bridge: br.to_string(),
                module: b.module.name(),
                verb: verb.to_string(),
            });
        }
        Ok(b.module_command(verb, args, json, &ctx)?)
    }

    /// One pass over every bridge's receiving ports. Returns the packets handled: received
    /// ones plus those a module had pending (e.g. back from the slow path).
    #[inline]
    pub fn poll_once(&mut self) -> usize {
        let now = self.now_ms();
        let ctx = Ctx { now_ms: now };
        let (mut rx, mut pending) = (0, 0);
        // Tunnel ports transmitting during the polls hand their outer bursts over on this
        // thread: each bridge's pass is followed by its tunnels' underlay pass.
        let _direct = netdev::tunnel::direct::Scope::enter();
        for i in 0..self.bridges.len() {
            let (r, p) = self.bridges[i].poll(&ctx, &mut self.pool, &mut self.cursor);
            rx += r;
            pending += p;
            if netdev::tunnel::direct::pending() {
                self.forward_encapsulated(&ctx);
            }
        }
        self.last_rx = rx;
        let n = rx + pending;
        if now.saturating_sub(self.last_link_ms) >= 100 {
            self.last_link_ms = now;
            for b in self.bridges.iter_mut() {
                b.check_links();
            }
        }
        if now.saturating_sub(self.last_run_ms) >= 1000 {
            self.last_run_ms = now;
            for b in self.bridges.iter_mut() {
                b.module.run(&ctx);
            }
        }
        n
    }

    /// Forwards the outer bursts tunnel ports left on this thread
    /// (`netdev::tunnel::direct`) through the bridge holding their underlay port, the
    /// second half of single-pass encapsulation. A burst whose underlay is on no bridge of
    /// this thread goes to the underlay port's queue instead (the two-pass way), and so do
    /// bursts beyond [`MAX_HANDOVERS`] per call (a tunnel whose outer packets come back to
    /// a tunnel port cannot keep the thread here).
    fn forward_encapsulated(&mut self, ctx: &Ctx) {
        let mut n = 0;
        while let Some(mut h) = netdev::tunnel::direct::take() {
            n += 1;
            let at = if n > MAX_HANDOVERS {
                None
            } else {
                self.bridges
                    .iter()
                    .enumerate()
                    .find_map(|(i, b)| b.find_port(&h.underlay.name).map(|s| (i, s)))
            };
            let Some((i, slot)) = at else {
                netdev::tunnel::direct::queue(h, &mut self.pool);
                continue;
            };
            self.bridges[i].forward_encapsulated(
                slot,
                &mut h.batch,
                h.uniform,
                ctx,
                &mut self.pool,
            );
            netdev::tunnel::direct::recycle(&h.underlay, h.batch, &mut self.pool);
        }
    }

    /// One poll with cycle accounting.
    #[inline]
    ///
    /// The iterations form one continuous timeline: an iteration runs from the end of the
    /// previous one to its last non-empty batch (no extra clock read when busy) or, when it
    /// found nothing, to a clock read at its end.
    pub fn poll_accounted(&mut self) -> usize {
        let t0 = self.cursor;
        let n = self.poll_once();
        if self.last_rx == 0 {
            self.cursor = cycles::now();
        }
        self.pmd
            .account(n, self.last_rx, self.cursor.wrapping_sub(t0));
        n
    }

    /// The descriptors to wait on for traffic while idle: one per polled queue. `None` when
    /// some queue has no descriptor or a module has packets in flight elsewhere (the thread
    /// must then nap and look again).
    pub fn wake_fds(&self) -> Option<Vec<std::os::fd::RawFd>> {
        let mut fds = Vec::new();
        for b in &self.bridges {
            if b.module.busy() || !b.rx_fds(&mut fds) {
                return None;
            }
        }
        Some(fds)
    }

    /// Tells every module that this thread goes to sleep (`true`) or woke up (`false`).
    pub fn park(&mut self, parked: bool) {
        for b in self.bridges.iter_mut() {
            b.module.park(parked);
        }
    }

    /// Restarts the cycle timeline (after the thread slept, so the sleep is not counted).
    pub fn resync_cycles(&mut self) {
        self.cursor = cycles::now();
    }

    /// Injects frames into bridge `br` as if received on port `port` (tests, benchmarks).
    pub fn inject(&mut self, br: &str, port: &str, frames: &[Vec<u8>]) -> Result<(), Error> {
        self.inject_as(br, port, frames, None)
    }

    /// Injects frames into bridge `br` as an outer burst a tunnel port handed over for
    /// underlay port `port` ([`Bridge::forward_encapsulated`]; tests).
    pub fn inject_encapsulated(
        &mut self,
        br: &str,
        port: &str,
        frames: &[Vec<u8>],
        uniform: bool,
    ) -> Result<(), Error> {
        self.inject_as(br, port, frames, Some(uniform))
    }

    fn inject_as(
        &mut self,
        br: &str,
        port: &str,
        frames: &[Vec<u8>],
        encapsulated: Option<bool>,
    ) -> Result<(), Error> {
        let ctx = Ctx {
            now_ms: self.now_ms(),
        };
        let PollSet { bridges, pool, .. } = self;
        let b = bridges
            .iter_mut()
            .find(|b| b.name == br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        let slot = b.find_port(port).ok_or_else(|| Error::NoPortOnBridge {
            bridge: br.to_string(),
            port: port.to_string(),
        })?;
        for chunk in frames.chunks(packet::MAX_BATCH) {
            let mut batch = packet::Batch::new();
            for f in chunk {
                let Some(mut p) = pool.alloc() else {
                    return Err(Error::PoolExhausted);
                };
                if !p.set_frame(f) {
                    pool.free(p);
                    continue;
                }
                if let Err(p) = batch.push(p) {
                    pool.free(p);
                }
            }
            match encapsulated {
                None => b.inject(slot, &mut batch, &ctx, pool),
                Some(u) => b.forward_encapsulated(slot, &mut batch, u, &ctx, pool),
            }
        }
        Ok(())
    }

    /// Runs an OpenFlow packet-out on bridge `br` (see [`Bridge::packet_out`]).
    pub fn packet_out(
        &mut self,
        br: &str,
        in_port: u32,
        frame: &[u8],
        actions: &[ofproto::DpAction],
    ) -> Result<(), Error> {
        let ctx = Ctx {
            now_ms: self.now_ms(),
        };
        let PollSet { bridges, pool, .. } = self;
        let b = bridges
            .iter_mut()
            .find(|b| b.name == br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        Ok(b.packet_out(&ctx, in_port, frame, actions, pool)?)
    }

    /// Polls until no module has packets in flight elsewhere (or `timeout` passes).
    /// Returns false on timeout.
    pub fn settle(&mut self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            self.poll_once();
            if !self.bridges.iter().any(|b| b.module.busy()) {
                // One more pass to pick up anything answered meanwhile.
                self.poll_once();
                if !self.bridges.iter().any(|b| b.module.busy()) {
                    return true;
                }
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::yield_now();
        }
    }

    /// Closes every port of every bridge.
    pub fn shutdown(&mut self) {
        let names: Vec<String> = self.bridges.iter().map(|b| b.name.clone()).collect();
        for n in names {
            let _ = self.del_bridge(&n);
        }
    }

    /// What `show` presents: every bridge with its ports.
    pub fn report(&self) -> Vec<BridgeReport> {
        self.bridges
            .iter()
            .map(|b| BridgeReport {
                name: b.name.clone(),
                module: b.module.name(),
                ports: b
                    .ports()
                    .map(|(slot, s)| PortReport {
                        slot,
                        name: s.port.name().to_string(),
                        ofport: s.ofport,
                        kind: s.port.kind(),
                        options: s.port.options(),
                        vlan: s.vlan.clone(),
                        link_state: s.port.link_state(),
                        mac: s.port.mac(),
                        ifindex: s.port.ifindex(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// What `dump-ports BR` presents, adding `extra` (by slot: what the port's handles on
    /// other poll threads counted) to each port's counters.
    pub fn port_counters_report(
        &self,
        br: &str,
        extra: &std::collections::BTreeMap<u16, netdev::PortStats>,
    ) -> Result<PortCountersReport, Error> {
        let b = self.bridge_or_err(br)?;
        let ports = b
            .ports()
            .map(|(slot, p)| {
                let mut stats = p.port.stats();
                if let Some(x) = extra.get(&slot) {
                    stats.add(x);
                }
                PortCounters {
                    slot,
                    ofport: p.ofport,
                    name: p.port.name().to_string(),
                    stats,
                    custom: p.port.custom_stats(),
                }
            })
            .collect();
        Ok(PortCountersReport {
            bridge: b.name.clone(),
            module: b.module.name(),
            module_counters: b.module.counters(),
            fabric: b.stats,
            ports,
        })
    }

    /// What `pmd-stats-show` presents for this thread.
    pub fn pmd_report(&self) -> PmdReport {
        let cache = self.cache_counters();
        let c = |k: &str| {
            cache
                .get(k)
                .copied()
                .unwrap_or(0)
                .saturating_sub(self.cache_base.get(k).copied().unwrap_or(0))
        };
        PmdReport {
            core_id: self.core_id,
            stats: self.pmd,
            tx_packets: self.bridges.iter().map(|b| b.stats.tx_packets).sum(),
            tx_bursts: self.bridges.iter().map(|b| b.stats.tx_bursts).sum(),
            module_drops: self.bridges.iter().map(|b| b.stats.module_drops).sum(),
            cache: CacheCounters {
                emc_hits: c("emc_hits"),
                megaflow_hits: c("megaflow_hits"),
                subtable_lookups: c("subtable_lookups"),
                upcalls: c("upcalls"),
                lost_upcalls: c("lost_upcalls"),
            },
            tsc_hz: cycles::hz(),
            pool_buffers: self.pool.capacity(),
            pool_in_use: self.pool.outstanding(),
        }
    }

    fn cache_counters(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let mut cache = std::collections::BTreeMap::<&'static str, u64>::new();
        for b in &self.bridges {
            for (k, v) in b.module.counters() {
                if matches!(
                    k,
                    "emc_hits" | "megaflow_hits" | "subtable_lookups" | "upcalls" | "lost_upcalls"
                ) {
                    *cache.entry(k).or_default() += v;
                }
            }
        }
        cache
    }

    /// `pmd-stats-clear`.
    pub fn pmd_stats_clear(&mut self) {
        self.pmd = PmdStats::default();
        self.cache_base = self.cache_counters();
        for b in self.bridges.iter_mut() {
            b.stats.tx_bursts = 0;
            b.stats.tx_packets = 0;
            b.stats.module_drops = 0;
        }
    }
}
