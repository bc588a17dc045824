//! The switch: every bridge served by one poll thread, with its buffer pool and counters.
//!
//! A [`Switch`] is owned by exactly one thread (the poll-mode thread, see [`crate::pmd`]). The
//! control plane never touches it directly: it sends closures that run between two polls
//! (see [`crate::pmd::PmdHandle::call`]), so every change is applied atomically with respect to
//! forwarding and no lock is ever taken on the fast path.
//!
//! Port names are unique across the whole switch (like kernel interface names); ofports are
//! unique within a bridge.

use crate::bridge::{Bridge, LOCAL_OFPORT, MAX_OFPORT};
use crate::cycles;
use crate::module::{Ctx, SwitchLogic, VlanMode};
use netdev::Port;
use packet::Pool;
use serde_json::{json, Value};

/// Default number of packet buffers in the poll thread's pool.
pub const DEFAULT_POOL: usize = 16_384;

/// Poll-thread counters, in the spirit of `dpif-netdev/pmd-stats-show`.
#[derive(Clone, Copy, Debug, Default)]
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
pub struct Switch {
    bridges: Vec<Bridge>,
    pub pool: Pool,
    last_run_ms: u64,
    last_link_ms: u64,
    pub pmd: PmdStats,
    pub core_id: Option<usize>,
    /// Module cache counters at the last `pmd-stats-clear`.
    cache_base: std::collections::BTreeMap<&'static str, u64>,
    /// New ports' receive queues wait, unpolled, until the control plane places them
    /// ([`Switch::unpark_rxq`]); set for threads run by [`crate::Datapath`].
    pub park_new_rxqs: bool,
    /// Packets received by the last poll.
    last_rx: usize,
    /// Cycle counter at the last measured point (see [`Bridge::poll`]).
    cursor: u64,
}

impl Default for Switch {
    fn default() -> Self {
        Self::new(DEFAULT_POOL)
    }
}

fn ofport_str(n: u32) -> String {
    if n == LOCAL_OFPORT {
        "LOCAL".into()
    } else {
        n.to_string()
    }
}

impl Switch {
    /// An empty switch with a pool of `pool_size` buffers.
    pub fn new(pool_size: usize) -> Switch {
        Switch {
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

    fn bridge_or_err(&self, name: &str) -> Result<&Bridge, String> {
        self.bridge(name)
            .ok_or_else(|| format!("no such bridge '{name}'"))
    }

    /// The bridge holding port `name`, if any.
    pub fn port_owner(&self, name: &str) -> Option<&str> {
        self.bridges
            .iter()
            .find(|b| b.find_port(name).is_some())
            .map(|b| b.name.as_str())
    }

    /// Checks that a bridge named `name` could be created.
    pub fn check_add_bridge(&self, name: &str) -> Result<(), String> {
        if self.bridge(name).is_some() {
            return Err(format!("bridge '{name}' already exists"));
        }
        if let Some(b) = self.port_owner(name) {
            return Err(format!("'{name}' is already a port of bridge '{b}'"));
        }
        Ok(())
    }

    /// Creates a bridge with `module` and, optionally, its internal port as `LOCAL`.
    pub fn add_bridge(
        &mut self,
        name: &str,
        module: Box<dyn SwitchLogic>,
        local: Option<Box<dyn Port>>,
    ) -> Result<(), String> {
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
    pub fn del_bridge(&mut self, name: &str) -> Result<(), String> {
        let i = self
            .bridges
            .iter()
            .position(|b| b.name == name)
            .ok_or_else(|| format!("no such bridge '{name}'"))?;
        let mut br = self.bridges.remove(i);
        let ports = br.detach_all(&mut self.pool);
        drop(ports);
        Ok(())
    }

    /// Checks that port `name` could be added to bridge `br` with `ofport`.
    pub fn check_add_port(&self, br: &str, name: &str, ofport: Option<u32>) -> Result<(), String> {
        let b = self.bridge_or_err(br)?;
        if let Some(owner) = self.port_owner(name) {
            return Err(format!("port '{name}' already exists on bridge '{owner}'"));
        }
        if self.bridge(name).is_some() {
            return Err(format!("'{name}' is the name of a bridge"));
        }
        if let Some(n) = ofport {
            if n == 0 || n > MAX_OFPORT {
                return Err(format!("ofport {n} is outside 1..={MAX_OFPORT}"));
            }
            if let Some(idx) = b.find_ofport(n) {
                let other = b
                    .ports()
                    .find(|(i, _)| *i == idx)
                    .map(|(_, s)| s.port.name().to_string())
                    .unwrap_or_default();
                return Err(format!("ofport {n} is already used by port '{other}'"));
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
    ) -> Result<u32, String> {
        self.check_add_port(br, port.name(), ofport)?;
        let park = self.park_new_rxqs;
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| format!("no such bridge '{br}'"))?;
        let n = ofport.unwrap_or_else(|| b.free_ofport());
        let idx = b.attach(port, n, vlan);
        if park {
            b.park_rxqs(idx);
        }
        Ok(n)
    }

    /// Removes port `name` from bridge `br` (any bridge if `br` is `None`).
    pub fn del_port(&mut self, br: Option<&str>, name: &str) -> Result<(), String> {
        let owner = match br {
            Some(b) => {
                self.bridge_or_err(b)?;
                b.to_string()
            }
            None => self
                .port_owner(name)
                .ok_or_else(|| format!("no port named '{name}'"))?
                .to_string(),
        };
        let pool = &mut self.pool;
        let b = self
            .bridges
            .iter_mut()
            .find(|b| b.name == owner)
            .ok_or_else(|| format!("no such bridge '{owner}'"))?;
        let idx = b
            .find_port(name)
            .ok_or_else(|| format!("bridge '{owner}' has no port '{name}'"))?;
        if b.ports().any(|(i, s)| i == idx && s.ofport == LOCAL_OFPORT) {
            return Err(format!(
                "port '{name}' is the bridge's own internal port; delete the bridge instead"
            ));
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
    ) -> Result<(), String> {
        if self.bridge(name).is_some() {
            return Err(format!(
                "bridge '{name}' already exists on this poll thread"
            ));
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
    ) -> Result<(), String> {
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| format!("no such bridge '{br}'"))?;
        b.attach_shared(idx, port, ofport, vlan);
        Ok(())
    }

    /// Detaches slot `idx` of bridge `br` (a replica's handle; the internal port included).
    pub fn detach_slot(&mut self, br: &str, idx: u16) {
        let Switch { bridges, pool, .. } = self;
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
    pub fn configure_bridge(&mut self, br: &str, key: &str, value: &str) -> Result<(), String> {
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| format!("no such bridge '{br}'"))?;
        b.module.configure(key, value)
    }

    /// Runs a module verb on bridge `br`.
    pub fn module_command(
        &mut self,
        br: &str,
        verb: &str,
        args: &[String],
        json: bool,
    ) -> Result<String, String> {
        let ctx = Ctx {
            now_ms: self.now_ms(),
        };
        let b = self
            .bridges
            .iter_mut()
            .find(|b| b.name == br)
            .ok_or_else(|| format!("no such bridge '{br}'"))?;
        let known = |cs: &[crate::module::ModuleCommand]| cs.iter().any(|c| c.verb == verb);
        if !known(b.module.commands()) && !known(crate::bridge::trace::COMMANDS) {
            return Err(format!(
                "bridge '{br}' runs module '{}', which has no command '{verb}'",
                b.module.name()
            ));
        }
        b.module_command(verb, args, json, &ctx)
    }

    /// One pass over every bridge's receiving ports. Returns the packets handled: received
    /// ones plus those a module had pending (e.g. back from the slow path).
    #[inline]
    pub fn poll_once(&mut self) -> usize {
        let now = self.now_ms();
        let ctx = Ctx { now_ms: now };
        let (mut rx, mut pending) = (0, 0);
        for b in self.bridges.iter_mut() {
            let (r, p) = b.poll(&ctx, &mut self.pool, &mut self.cursor);
            rx += r;
            pending += p;
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
    pub fn inject(&mut self, br: &str, port: &str, frames: &[Vec<u8>]) -> Result<(), String> {
        let ctx = Ctx {
            now_ms: self.now_ms(),
        };
        let Switch { bridges, pool, .. } = self;
        let b = bridges
            .iter_mut()
            .find(|b| b.name == br)
            .ok_or_else(|| format!("no such bridge '{br}'"))?;
        let slot = b
            .find_port(port)
            .ok_or_else(|| format!("bridge '{br}' has no port '{port}'"))?;
        for chunk in frames.chunks(packet::MAX_BATCH) {
            let mut batch = packet::Batch::new();
            for f in chunk {
                let Some(mut p) = pool.alloc() else {
                    return Err("packet pool exhausted".into());
                };
                if !p.set_frame(f) {
                    pool.free(p);
                    continue;
                }
                if let Err(p) = batch.push(p) {
                    pool.free(p);
                }
            }
            b.inject(slot, &mut batch, &ctx, pool);
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
    ) -> Result<(), String> {
        let ctx = Ctx {
            now_ms: self.now_ms(),
        };
        let Switch { bridges, pool, .. } = self;
        let b = bridges
            .iter_mut()
            .find(|b| b.name == br)
            .ok_or_else(|| format!("no such bridge '{br}'"))?;
        b.packet_out(&ctx, in_port, frame, actions, pool)
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

    /// `show`.
    pub fn show(&self, json: bool) -> String {
        if json {
            let brs: Vec<Value> = self
                .bridges
                .iter()
                .map(|b| {
                    let ports: Vec<Value> = b
                        .ports()
                        .map(|(_, s)| {
                            let opts: serde_json::Map<String, Value> = s
                                .port
                                .options()
                                .into_iter()
                                .map(|(k, v)| (k, Value::String(v)))
                                .collect();
                            json!({
                                "name": s.port.name(),
                                "ofport": s.ofport,
                                "type": s.port.kind(),
                                "options": opts,
                                "vlan": s.vlan.to_string(),
                                "link_state": s.port.link_state().to_string(),
                                "mac": s.port.mac().map(fmt_mac),
                                "ifindex": s.port.ifindex(),
                            })
                        })
                        .collect();
                    json!({"name": b.name, "module": b.module.name(), "ports": ports})
                })
                .collect();
            return json!({ "bridges": brs }).to_string();
        }
        let mut s = String::new();
        for b in &self.bridges {
            s.push_str(&format!(
                "    Bridge {}\n        module: {}\n",
                b.name,
                b.module.name()
            ));
            let mut ports: Vec<_> = b.ports().collect();
            ports.sort_by_key(|(_, p)| p.port.name().to_string());
            for (_, p) in ports {
                s.push_str(&format!(
                    "        Port {}\n            ofport: {}\n            type: {}\n",
                    p.port.name(),
                    ofport_str(p.ofport),
                    p.port.kind()
                ));
                if !matches!(p.vlan, VlanMode::Trunk(None)) {
                    s.push_str(&format!("            {}\n", p.vlan));
                }
                let opts = p.port.options();
                if !opts.is_empty() {
                    let o: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    s.push_str(&format!("            options: {{{}}}\n", o.join(", ")));
                }
                if p.port.link_state() == netdev::LinkState::Down {
                    s.push_str("            link_state: down\n");
                }
            }
        }
        s
    }

    /// `dump-ports BR`.
    pub fn dump_ports(&self, br: &str, json: bool) -> Result<String, String> {
        self.dump_ports_with(br, json, &std::collections::BTreeMap::new())
    }

    /// `dump-ports BR`, adding `extra` (by slot: what the port's handles on other poll
    /// threads counted) to each port's counters.
    pub fn dump_ports_with(
        &self,
        br: &str,
        json: bool,
        extra: &std::collections::BTreeMap<u16, netdev::PortStats>,
    ) -> Result<String, String> {
        let stats_of = |i: u16, p: &crate::bridge::PortSlot| {
            let mut st = p.port.stats();
            if let Some(x) = extra.get(&i) {
                st.add(x);
            }
            st
        };
        let b = self.bridge_or_err(br)?;
        let mut ports: Vec<_> = b.ports().collect();
        ports.sort_by_key(|(_, p)| p.ofport);
        if json {
            let v: Vec<Value> = ports
                .iter()
                .map(|(i, p)| {
                    let st = stats_of(*i, p);
                    json!({
                        "port": p.ofport, "name": p.port.name(),
                        "rx_packets": st.rx_packets, "rx_bytes": st.rx_bytes,
                        "rx_dropped": st.rx_dropped, "rx_errors": st.rx_errors,
                        "tx_packets": st.tx_packets, "tx_bytes": st.tx_bytes,
                        "tx_dropped": st.tx_dropped, "tx_errors": st.tx_errors,
                    })
                })
                .collect();
            let counters: serde_json::Map<String, Value> = b
                .module
                .counters()
                .into_iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            return Ok(json!({
                "bridge": b.name, "ports": v, "module": b.module.name(),
                "module_counters": counters,
                "fabric": {
                    "module_drops": b.stats.module_drops, "flood_copies": b.stats.flood_copies,
                    "copy_failures": b.stats.copy_failures, "tx_bursts": b.stats.tx_bursts,
                    "tx_packets": b.stats.tx_packets,
                }
            })
            .to_string());
        }
        let mut s = format!(
            "port statistics of bridge {}: {} ports\n",
            b.name,
            ports.len()
        );
        for (i, p) in ports {
            let st = stats_of(i, p);
            s.push_str(&format!(
                "  port {:>2}: rx pkts={}, bytes={}, drop={}, errs={}, frame=?, over=?, crc=?\n           tx pkts={}, bytes={}, drop={}, errs={}, coll=?\n",
                ofport_str(p.ofport),
                st.rx_packets, st.rx_bytes, st.rx_dropped, st.rx_errors,
                st.tx_packets, st.tx_bytes, st.tx_dropped, st.tx_errors
            ));
        }
        s.push_str(&format!(
            "  fabric: module drops={}, flood copies={}, copy failures={}, output bursts={}\n",
            b.stats.module_drops, b.stats.flood_copies, b.stats.copy_failures, b.stats.tx_bursts
        ));
        Ok(s)
    }

    /// `pmd-stats-show`.
    pub fn pmd_stats(&self, json: bool) -> String {
        let st = &self.pmd;
        let total = st.busy_cycles + st.idle_cycles;
        let pct = |x: u64| {
            if total == 0 {
                0.0
            } else {
                100.0 * x as f64 / total as f64
            }
        };
        let per_pkt = |x: u64| {
            if st.packets == 0 {
                0.0
            } else {
                x as f64 / st.packets as f64
            }
        };
        let tx: u64 = self.bridges.iter().map(|b| b.stats.tx_packets).sum();
        let bursts: u64 = self.bridges.iter().map(|b| b.stats.tx_bursts).sum();
        let drops: u64 = self.bridges.iter().map(|b| b.stats.module_drops).sum();
        let per_burst = if bursts == 0 {
            0.0
        } else {
            tx as f64 / bursts as f64
        };
        // Cache counters of the openflow bridges, summed (OVS reports one datapath).
        let cache = self.cache_counters();
        let c = |k: &str| {
            cache
                .get(k)
                .copied()
                .unwrap_or(0)
                .saturating_sub(self.cache_base.get(k).copied().unwrap_or(0))
        };
        let sub_per_hit = if c("megaflow_hits") == 0 {
            0.0
        } else {
            c("subtable_lookups") as f64 / c("megaflow_hits") as f64
        };
        let core = self
            .core_id
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unpinned".into());
        if json {
            return json!({"pmds": [{
                "numa_id": 0, "core_id": self.core_id,
                "packets_received": st.packets, "packets_sent": tx, "module_drops": drops,
                "emc_hits": c("emc_hits"), "megaflow_hits": c("megaflow_hits"),
                "avg_subtable_lookups_per_megaflow_hit": sub_per_hit,
                "miss_with_success_upcall": c("upcalls").saturating_sub(c("lost_upcalls")),
                "miss_with_failed_upcall": c("lost_upcalls"),
                "iterations": st.iterations, "busy_iterations": st.busy_iterations,
                "idle_cycles": st.idle_cycles, "processing_cycles": st.busy_cycles,
                "avg_cycles_per_packet": per_pkt(total),
                "avg_processing_cycles_per_packet": per_pkt(st.busy_cycles),
                "avg_packets_per_output_batch": per_burst,
                "sleep_us": st.sleep_us, "restarts": st.restarts, "tsc_hz": cycles::hz(),
                "pool_buffers": self.pool.capacity(), "pool_in_use": self.pool.outstanding(),
            }]})
            .to_string();
        }
        let restarts = if st.restarts > 0 {
            format!("  loop restarts after a panic: {}\n", st.restarts)
        } else {
            String::new()
        };
        format!(
            "pmd thread numa_id 0 core_id {core}:\n  packets received: {}\n  packets sent: {tx}\n  module drops: {drops}\n  emc hits: {}\n  megaflow hits: {}\n  avg. subtable lookups per megaflow hit: {sub_per_hit:.2}\n  miss with success upcall: {}\n  miss with failed upcall: {}\n  avg. packets per output batch: {per_burst:.2}\n  iterations: {} (busy {})\n  idle cycles: {} ({:.2}%)\n  processing cycles: {} ({:.2}%)\n  avg cycles per packet: {:.2} ({}/{})\n  avg processing cycles per packet: {:.2} ({}/{})\n  sleep time: {} us\n{restarts}",
            st.packets,
            c("emc_hits"),
            c("megaflow_hits"),
            c("upcalls").saturating_sub(c("lost_upcalls")),
            c("lost_upcalls"),
            st.iterations,
            st.busy_iterations,
            st.idle_cycles,
            pct(st.idle_cycles),
            st.busy_cycles,
            pct(st.busy_cycles),
            per_pkt(total),
            total,
            st.packets,
            per_pkt(st.busy_cycles),
            st.busy_cycles,
            st.packets,
            st.sleep_us
        )
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

/// Formats a MAC address.
pub fn fmt_mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}
