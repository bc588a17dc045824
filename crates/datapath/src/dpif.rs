//! Several poll-mode threads, and which one polls which receive queue.
//!
//! ## Threads and replicas
//! [`Datapath`] runs one poll thread per configured core (`pmd-cpu-mask`). The first one,
//! the *home* thread, holds every bridge with its module and the ports as they were opened;
//! it is where control-plane calls ([`Datapath::call`]) run. A bridge whose module can be
//! forked ([`crate::SwitchLogic::fork`]) and whose ports can all be shared
//! ([`netdev::Port::share`]) also has a *replica* on every other thread: a fork of the module
//! (its own caches and counters over the shared tables) and a handle on each port that
//! transmits through its own path. A packet is forwarded entirely on the thread that
//! received it, so no packet, counter or cache line crosses threads on the fast path.
//! Bridges that cannot be replicated stay on the home thread.
//!
//! ## Receive queues
//! Every receive queue of every port is polled by exactly one thread. Queues move between
//! threads as objects ([`netdev::Port::take_rxq`]) when they are (re)assigned:
//! * `pmd-rxq-affinity` pins a queue to a core; a thread with a pinned queue gets no other
//!   queues (OVS's `pmd-rxq-isolate=true`). A queue pinned to a core outside the mask is
//!   assigned like an unpinned one (and the show output says so) rather than left unpolled.
//! * `pmd-rxq-assign=cycles` (default): queues sorted by the cycles they used in the last
//!   measured interval, each given to the thread with the least load so far (ties: fewer
//!   queues). `roundrobin`: queues in port order, threads in turn.
//! * Rebalancing: [`Datapath::rebalance`] on demand (`dpif-netdev/pmd-rxq-rebalance`), and
//!   [`Datapath::auto_rebalance`], which the daemon calls periodically: it measures each
//!   thread's load over the interval and reassigns when the busiest thread is above
//!   `pmd-auto-lb-load-threshold` percent and the new assignment would cut the spread
//!   between threads by at least `pmd-auto-lb-improvement-threshold` percent (OVS's rule);
//!   threads whose loads are within 5% of the busiest one's are left alone.

use crate::module::{SwitchLogic, VlanMode};
use crate::pmd::PmdHandle;
use crate::switch::Switch;
use netdev::{Port, PortStats};
use serde_json::json;
use std::collections::BTreeMap;

/// The length of a load-measurement interval (see [`Datapath::tick`]).
pub const MEASURE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How unpinned receive queues are spread over poll threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assign {
    Cycles,
    RoundRobin,
}

impl std::str::FromStr for Assign {
    type Err = String;
    fn from_str(s: &str) -> Result<Assign, String> {
        match s {
            "cycles" | "group" => Ok(Assign::Cycles),
            "roundrobin" => Ok(Assign::RoundRobin),
            _ => Err(format!(
                "pmd-rxq-assign: '{s}' is not one of cycles, group, roundrobin"
            )),
        }
    }
}

/// Automatic load balancing settings (OVS's `pmd-auto-lb*` keys).
#[derive(Clone, Copy, Debug)]
pub struct AutoLb {
    pub enabled: bool,
    /// Busiest thread's busy percentage above which a rebalance is considered.
    pub load_threshold: u64,
    /// Required cut in the busy-percentage spread between threads, in percent.
    pub improvement_threshold: u64,
}

impl Default for AutoLb {
    fn default() -> Self {
        AutoLb {
            enabled: false,
            load_threshold: 95,
            improvement_threshold: 25,
        }
    }
}

/// One receive queue and where it is polled.
#[derive(Clone, Debug)]
pub struct RxqRec {
    pub bridge: String,
    pub port: String,
    pub slot: u16,
    pub q: u16,
    /// Index of the poll thread that polls it.
    pub pmd: usize,
    /// The core `pmd-rxq-affinity` asked for, if any.
    pub pinned: Option<usize>,
    /// Cycles it used in the last measured interval, and its cycle counter then.
    pub load: u64,
    mark: u64,
}

struct Pmd {
    core: Option<usize>,
    handle: PmdHandle,
    /// Busy and total cycles at the last measurement, and the busy share since.
    mark: (u64, u64),
    busy_pct: u64,
}

/// What [`Datapath`] guards.
pub struct State {
    pmds: Vec<Pmd>,
    /// Bridges, and whether each has replicas on the other threads.
    bridges: BTreeMap<String, bool>,
    rxqs: Vec<RxqRec>,
    /// `pmd-rxq-affinity` per port: queue -> core.
    affinity: BTreeMap<String, BTreeMap<u16, usize>>,
    pub assign: Assign,
    pub auto_lb: AutoLb,
    pool_size: usize,
    /// How often [`Datapath::tick`] considers an automatic rebalance, and when it last did.
    lb_every: std::time::Duration,
    lb_last: std::time::Instant,
    measured: std::time::Instant,
}

fn pmd_name(i: usize, core: Option<usize>) -> String {
    match core {
        Some(c) => format!("pmd-c{c:02}"),
        None => format!("pmd{i}"),
    }
}

/// Parses `pmd-cpu-mask` (hex, optional 0x) into core numbers.
pub fn parse_cpu_mask(s: &str) -> Result<Vec<usize>, String> {
    let h = s.trim().trim_start_matches("0x").trim_start_matches("0X");
    if h.is_empty() || h.len() > 64 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("pmd-cpu-mask: '{s}' is not a hexadecimal CPU mask"));
    }
    let mut cores = Vec::new();
    for (i, c) in h.chars().rev().enumerate() {
        let v = c.to_digit(16).unwrap_or(0) as usize;
        for bit in 0..4 {
            if v & (1 << bit) != 0 {
                cores.push(i * 4 + bit);
            }
        }
    }
    if cores.is_empty() {
        return Err(format!("pmd-cpu-mask: '{s}' selects no core"));
    }
    Ok(cores)
}

/// Parses `pmd-rxq-affinity` (`QUEUE:CORE[,QUEUE:CORE...]`).
pub fn parse_affinity(s: &str) -> Result<BTreeMap<u16, usize>, String> {
    let mut m = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (q, c) = part
            .split_once(':')
            .ok_or_else(|| format!("pmd-rxq-affinity: '{part}' is not QUEUE:CORE"))?;
        let q: u16 = q
            .trim()
            .parse()
            .map_err(|_| format!("pmd-rxq-affinity: bad queue '{q}'"))?;
        let c: usize = c
            .trim()
            .parse()
            .map_err(|_| format!("pmd-rxq-affinity: bad core '{c}'"))?;
        m.insert(q, c);
    }
    Ok(m)
}

impl State {
    /// Starts one poll thread per entry of `cores` (`None`: unpinned), each with a pool of
    /// `pool_size` buffers. An empty list starts one unpinned thread.
    pub fn new(cores: &[Option<usize>], pool_size: usize) -> std::io::Result<State> {
        let mut dp = State {
            pmds: Vec::new(),
            bridges: BTreeMap::new(),
            rxqs: Vec::new(),
            affinity: BTreeMap::new(),
            assign: Assign::Cycles,
            auto_lb: AutoLb::default(),
            pool_size,
            lb_every: std::time::Duration::from_secs(60),
            lb_last: std::time::Instant::now(),
            measured: std::time::Instant::now(),
        };
        let cores: Vec<Option<usize>> = if cores.is_empty() {
            vec![None]
        } else {
            cores.to_vec()
        };
        for (i, c) in cores.iter().enumerate() {
            dp.spawn_pmd(i, *c)?;
        }
        Ok(dp)
    }

    /// Starts poll thread number `i` on `core` with an empty switch.
    fn spawn_pmd(&mut self, i: usize, core: Option<usize>) -> std::io::Result<()> {
        let mut sw = Switch::new(self.pool_size);
        sw.park_new_rxqs = true;
        let handle = PmdHandle::spawn_on(sw, &pmd_name(i, core), core)?;
        self.pmds.push(Pmd {
            core,
            handle,
            mark: (0, 0),
            busy_pct: 0,
        });
        Ok(())
    }

    /// Number of poll threads.
    pub fn n_pmds(&self) -> usize {
        self.pmds.len()
    }

    /// The cores of the poll threads (`None`: unpinned).
    pub fn cores(&self) -> Vec<Option<usize>> {
        self.pmds.iter().map(|p| p.core).collect()
    }

    /// Runs `f` on the home thread (where bridges and ports live) between two polls.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Switch) -> R + Send + 'static,
    ) -> Result<R, String> {
        self.pmds[0].handle.call(f)
    }

    /// Runs `f` on poll thread `i`.
    pub fn call_on<R: Send + 'static>(
        &self,
        i: usize,
        f: impl FnOnce(&mut Switch) -> R + Send + 'static,
    ) -> Result<R, String> {
        match self.pmds.get(i) {
            Some(p) => p.handle.call(f),
            None => Err(format!("no poll thread {i}")),
        }
    }

    /// Runs `f` on every poll thread, in order; returns the results.
    pub fn call_all<R: Send + 'static>(
        &self,
        f: impl Fn(&mut Switch) -> R + Send + Sync + Clone + 'static,
    ) -> Result<Vec<R>, String> {
        let mut v = Vec::with_capacity(self.pmds.len());
        for p in &self.pmds {
            let f = f.clone();
            v.push(p.handle.call(f)?);
        }
        Ok(v)
    }

    /// Whether bridge `br` has replicas on the other threads.
    pub fn is_replicated(&self, br: &str) -> bool {
        self.bridges.get(br).copied().unwrap_or(false)
    }

    /// Creates a bridge (see [`Switch::add_bridge`]) and replicates it where possible.
    pub fn add_bridge(
        &mut self,
        name: &str,
        module: Box<dyn SwitchLogic>,
        local: Option<Box<dyn Port>>,
    ) -> Result<(), String> {
        let n = name.to_string();
        self.call(move |sw| sw.add_bridge(&n, module, local))??;
        self.bridges.insert(name.to_string(), false);
        self.replicate(name);
        self.add_rxqs_of(name)?;
        Ok(())
    }

    /// Puts a replica of `br` on every other thread, if its module and ports allow it.
    fn replicate(&mut self, br: &str) {
        if self.pmds.len() < 2 || self.is_replicated(br) {
            return;
        }
        let mut done = Vec::new();
        for k in 1..self.pmds.len() {
            let b = br.to_string();
            let shared = self.call(move |sw| sw.share_bridge(&b)).ok().flatten();
            let Some((m, ports)) = shared else {
                break;
            };
            let b = br.to_string();
            if self
                .call_on(k, move |sw| sw.add_replica(&b, m, ports))
                .ok()
                .and_then(|r| r.ok())
                .is_none()
            {
                break;
            }
            done.push(k);
        }
        if done.len() + 1 == self.pmds.len() {
            self.bridges.insert(br.to_string(), true);
        } else {
            for k in done {
                let b = br.to_string();
                let _ = self.call_on(k, move |sw| sw.del_bridge(&b));
            }
        }
    }

    /// Moves every queue of `br` home and removes its replicas (a port that cannot be shared
    /// joined it).
    fn unreplicate(&mut self, br: &str) {
        if !self.is_replicated(br) {
            return;
        }
        let idx: Vec<usize> = (0..self.rxqs.len())
            .filter(|&i| self.rxqs[i].bridge == br && self.rxqs[i].pmd != 0)
            .collect();
        for i in idx {
            self.move_rxq(i, 0);
        }
        for k in 1..self.pmds.len() {
            let b = br.to_string();
            let _ = self.call_on(k, move |sw| sw.del_bridge(&b));
        }
        self.bridges.insert(br.to_string(), false);
    }

    /// Removes a bridge from every thread.
    pub fn del_bridge(&mut self, name: &str) -> Result<(), String> {
        if self.is_replicated(name) {
            for k in 1..self.pmds.len() {
                let b = name.to_string();
                let _ = self.call_on(k, move |sw| sw.del_bridge(&b));
            }
        }
        let n = name.to_string();
        self.call(move |sw| sw.del_bridge(&n))??;
        self.bridges.remove(name);
        self.rxqs.retain(|r| r.bridge != name);
        Ok(())
    }

    /// Adds a port (see [`Switch::add_port`]), shares it with the bridge's replicas and
    /// assigns its receive queues. Returns its ofport.
    pub fn add_port(
        &mut self,
        br: &str,
        port: Box<dyn Port>,
        ofport: Option<u32>,
        vlan: VlanMode,
    ) -> Result<u32, String> {
        let name = port.name().to_string();
        let b = br.to_string();
        let n = self.call(move |sw| sw.add_port(&b, port, ofport, vlan))??;
        if self.is_replicated(br) {
            let (b, pn) = (br.to_string(), name.clone());
            let slot = self
                .call(move |sw| sw.bridge(&b).and_then(|x| x.find_port(&pn)))?
                .ok_or_else(|| format!("port '{name}' vanished"))?;
            for k in 1..self.pmds.len() {
                let b = br.to_string();
                let h = self.call(move |sw| sw.share_port(&b, slot))?;
                let Some((idx, ofp, v, h)) = h else {
                    self.unreplicate(br);
                    break;
                };
                let b = br.to_string();
                self.call_on(k, move |sw| sw.attach_shared(&b, idx, ofp, v, h))??;
            }
        } else {
            // A bridge that could not be replicated before might be now.
            self.replicate(br);
        }
        self.add_rxqs_of(br)?;
        Ok(n)
    }

    /// Removes a port from every thread.
    pub fn del_port(&mut self, br: Option<&str>, name: &str) -> Result<(), String> {
        let owner = match br {
            Some(b) => b.to_string(),
            None => {
                let n = name.to_string();
                self.call(move |sw| sw.port_owner(&n).map(str::to_string))?
                    .ok_or_else(|| format!("no port named '{name}'"))?
            }
        };
        if self.is_replicated(&owner) {
            let (b, n) = (owner.clone(), name.to_string());
            if let Some(slot) = self.call(move |sw| sw.bridge(&b).and_then(|x| x.find_port(&n)))? {
                for k in 1..self.pmds.len() {
                    let b = owner.clone();
                    let _ = self.call_on(k, move |sw| sw.detach_slot(&b, slot));
                }
            }
        }
        let (b, n) = (owner.clone(), name.to_string());
        self.call(move |sw| sw.del_port(Some(&b), &n))??;
        self.rxqs.retain(|r| !(r.bridge == owner && r.port == name));
        Ok(())
    }

    /// Applies a module setting on every thread that serves the bridge.
    pub fn configure_bridge(&self, br: &str, key: &str, value: &str) -> Result<(), String> {
        let (b, k, v) = (br.to_string(), key.to_string(), value.to_string());
        self.call(move |sw| sw.configure_bridge(&b, &k, &v))??;
        if self.is_replicated(br) {
            for i in 1..self.pmds.len() {
                let (b, k, v) = (br.to_string(), key.to_string(), value.to_string());
                self.call_on(i, move |sw| sw.configure_bridge(&b, &k, &v))??;
            }
        }
        Ok(())
    }

    /// Runs a module verb on the home thread, then on the replicas (so per-thread module
    /// state, such as a patch map, stays the same everywhere). Returns the home output.
    pub fn module_command(
        &self,
        br: &str,
        verb: &str,
        args: &[String],
        json: bool,
    ) -> Result<String, String> {
        let (b, v, a) = (br.to_string(), verb.to_string(), args.to_vec());
        let mut out = self.call(move |sw| sw.module_command(&b, &v, &a, json))??;
        if self.is_replicated(br) {
            for i in 1..self.pmds.len() {
                let (b, v, a) = (br.to_string(), verb.to_string(), args.to_vec());
                let more = self.call_on(i, move |sw| sw.module_command(&b, &v, &a, json))??;
                // Each thread traces the packets it receives: the records of all of them.
                if verb == "pmd-trace-show" {
                    out = crate::bridge::trace::merge(out, &more, json);
                }
            }
        }
        Ok(out)
    }

    /// Sets `pmd-rxq-affinity` for port `port` (empty: none) and reassigns.
    pub fn set_affinity(&mut self, port: &str, spec: &str) -> Result<(), String> {
        let m = parse_affinity(spec)?;
        let changed = if m.is_empty() {
            self.affinity.remove(port).is_some()
        } else {
            self.affinity.insert(port.to_string(), m.clone()) != Some(m)
        };
        if changed {
            for r in self.rxqs.iter_mut().filter(|r| r.port == port) {
                r.pinned = self.affinity.get(port).and_then(|a| a.get(&r.q)).copied();
            }
            self.rebalance()?;
        }
        Ok(())
    }

    /// Records the queues of `br`'s ports that are not known yet and places them.
    fn add_rxqs_of(&mut self, br: &str) -> Result<(), String> {
        let b = br.to_string();
        let found = self.call(move |sw| {
            sw.rxq_loads()
                .into_iter()
                .filter(|r| r.0 == b)
                .collect::<Vec<_>>()
        })?;
        let mut new = false;
        for (bridge, slot, port, q, cycles, _) in found {
            if self
                .rxqs
                .iter()
                .any(|r| r.bridge == bridge && r.slot == slot && r.q == q)
            {
                continue;
            }
            let pinned = self.affinity.get(&port).and_then(|a| a.get(&q)).copied();
            self.rxqs.push(RxqRec {
                bridge,
                port,
                slot,
                q,
                pmd: 0,
                pinned,
                load: 0,
                mark: cycles,
            });
            new = true;
        }
        if new {
            self.rebalance()?;
        }
        Ok(())
    }

    /// Moves queue record `i` to thread `to`. Returns false (and leaves it) if its port
    /// cannot give the queue up.
    fn move_rxq(&mut self, i: usize, to: usize) -> bool {
        let r = self.rxqs[i].clone();
        if r.pmd == to {
            return true;
        }
        let b = r.bridge.clone();
        let taken = self
            .call_on(r.pmd, move |sw| sw.take_rxq(&b, r.slot, r.q))
            .ok()
            .flatten();
        let Some((st, load)) = taken else {
            return false;
        };
        let b = r.bridge.clone();
        let back = self
            .call_on(to, move |sw| sw.put_rxq(&b, r.slot, r.q, st, load))
            .ok();
        match back {
            Some(Ok(())) => {
                self.rxqs[i].pmd = to;
                true
            }
            Some(Err(st)) => {
                // Put it back where it was.
                let b = r.bridge.clone();
                let _ = self.call_on(r.pmd, move |sw| sw.put_rxq(&b, r.slot, r.q, st, load));
                false
            }
            None => false,
        }
    }

    /// The assignment the current loads and settings call for: a thread index per queue.
    fn plan(&self) -> Vec<usize> {
        let n = self.pmds.len();
        let mut target: Vec<Option<usize>> = vec![None; self.rxqs.len()];
        let mut isolated = vec![false; n];
        let eligible = |r: &RxqRec| -> Vec<usize> {
            if self.is_replicated(&r.bridge) {
                (0..n).collect()
            } else {
                vec![0]
            }
        };
        for (i, r) in self.rxqs.iter().enumerate() {
            let Some(core) = r.pinned else { continue };
            if let Some(k) = eligible(r)
                .into_iter()
                .find(|&k| self.pmds[k].core == Some(core))
            {
                target[i] = Some(k);
                isolated[k] = true;
            }
        }
        let mut order: Vec<usize> = (0..self.rxqs.len())
            .filter(|&i| target[i].is_none())
            .collect();
        let mut load = vec![0u64; n];
        let mut count = vec![0usize; n];
        match self.assign {
            Assign::RoundRobin => {
                order.sort_by(|&a, &b| {
                    let (x, y) = (&self.rxqs[a], &self.rxqs[b]);
                    (&x.bridge, &x.port, x.q).cmp(&(&y.bridge, &y.port, y.q))
                });
                let mut next = 0usize;
                for i in order {
                    let el: Vec<usize> = eligible(&self.rxqs[i])
                        .into_iter()
                        .filter(|&k| !isolated[k])
                        .collect();
                    let k = if el.is_empty() {
                        0
                    } else {
                        let k = el[next % el.len()];
                        next += 1;
                        k
                    };
                    target[i] = Some(k);
                }
            }
            Assign::Cycles => {
                order.sort_by(|&a, &b| {
                    let (x, y) = (&self.rxqs[a], &self.rxqs[b]);
                    y.load
                        .cmp(&x.load)
                        .then((&x.bridge, &x.port, x.q).cmp(&(&y.bridge, &y.port, y.q)))
                });
                for i in order {
                    let el: Vec<usize> = eligible(&self.rxqs[i])
                        .into_iter()
                        .filter(|&k| !isolated[k])
                        .collect();
                    let k = el
                        .into_iter()
                        .min_by_key(|&k| (load[k], count[k], k))
                        .unwrap_or(0);
                    load[k] += self.rxqs[i].load;
                    count[k] += 1;
                    target[i] = Some(k);
                }
            }
        }
        target.into_iter().map(|t| t.unwrap_or(0)).collect()
    }

    /// Reassigns every queue by the current settings and the last measured loads.
    pub fn rebalance(&mut self) -> Result<(), String> {
        let plan = self.plan();
        self.apply(plan)
    }

    /// Moves queues to the threads of `plan`, then starts polling every queue still parked
    /// where it is.
    fn apply(&mut self, plan: Vec<usize>) -> Result<(), String> {
        for (i, to) in plan.into_iter().enumerate() {
            self.move_rxq(i, to);
        }
        for r in self.rxqs.clone() {
            let b = r.bridge.clone();
            self.call_on(r.pmd, move |sw| sw.unpark_rxq(&b, r.slot, r.q))?;
        }
        Ok(())
    }

    /// Measures each queue's and each thread's load since the last measurement.
    pub fn measure(&mut self) -> Result<(), String> {
        let per = self.call_all(|sw| {
            let st = sw.pmd;
            (
                sw.rxq_loads(),
                st.busy_cycles,
                st.busy_cycles + st.idle_cycles,
            )
        })?;
        for (k, (loads, busy, total)) in per.into_iter().enumerate() {
            for (bridge, slot, _, q, cycles, _) in loads {
                if let Some(r) = self
                    .rxqs
                    .iter_mut()
                    .find(|r| r.bridge == bridge && r.slot == slot && r.q == q)
                {
                    r.load = cycles.saturating_sub(r.mark);
                    r.mark = cycles;
                }
            }
            let p = &mut self.pmds[k];
            let (db, dt) = (
                busy.saturating_sub(p.mark.0),
                total.saturating_sub(p.mark.1),
            );
            p.busy_pct = (db * 100).checked_div(dt).unwrap_or(0);
            p.mark = (busy, total);
        }
        self.measured = std::time::Instant::now();
        Ok(())
    }

    /// Measures, and rebalances if the busiest thread is over the load threshold and the new
    /// assignment cuts the spread of thread loads by the improvement threshold. Returns
    /// true if it moved queues.
    pub fn auto_rebalance(&mut self) -> Result<bool, String> {
        self.measure()?;
        if !self.auto_lb.enabled || self.pmds.len() < 2 {
            return Ok(false);
        }
        let busiest = self.pmds.iter().map(|p| p.busy_pct).max().unwrap_or(0);
        if busiest < self.auto_lb.load_threshold {
            return Ok(false);
        }
        // (spread between the most and least loaded thread, load of the most loaded)
        let spread = |assign: &[usize]| -> (u64, u64) {
            let mut l = vec![0u64; self.pmds.len()];
            for (r, &k) in self.rxqs.iter().zip(assign) {
                l[k] += r.load;
            }
            let hi = l.iter().max().copied().unwrap_or(0);
            (hi - l.iter().min().copied().unwrap_or(0), hi)
        };
        let now: Vec<usize> = self.rxqs.iter().map(|r| r.pmd).collect();
        let plan = self.plan();
        let ((a, hi), (b, _)) = (spread(&now), spread(&plan));
        // Threads within 5% of each other are balanced: moving queues then only churns.
        if a == 0 || a * 100 < hi * 5 {
            return Ok(false);
        }
        if b * 100 > a * (100 - self.auto_lb.improvement_threshold.min(100)) {
            return Ok(false);
        }
        self.apply(plan)?;
        Ok(true)
    }

    /// The queues and where they are.
    pub fn rxqs(&self) -> &[RxqRec] {
        &self.rxqs
    }

    /// `dpif-netdev/pmd-rxq-show`: each thread's queues and their share of its cycles in the
    /// last measured interval.
    pub fn rxq_show(&mut self, json: bool) -> Result<String, String> {
        if self.measured.elapsed() >= MEASURE_EVERY {
            self.measure()?;
        }
        let mut out = String::new();
        let mut jp = Vec::new();
        for (k, p) in self.pmds.iter().enumerate() {
            let mine: Vec<&RxqRec> = self.rxqs.iter().filter(|r| r.pmd == k).collect();
            let interval_total: u64 = mine.iter().map(|r| r.load).sum::<u64>().max(1);
            let isolated = mine
                .iter()
                .any(|r| r.pinned.is_some() && r.pinned == p.core);
            let core = p
                .core
                .map(|c| c.to_string())
                .unwrap_or_else(|| "unpinned".into());
            out.push_str(&format!(
                "pmd thread numa_id 0 core_id {core}:\n  isolated : {isolated}\n"
            ));
            let mut jq = Vec::new();
            let mut ports: Vec<&&RxqRec> = mine.iter().collect();
            ports.sort_by(|a, b| (&a.port, a.q).cmp(&(&b.port, b.q)));
            for r in ports {
                // Share of the thread's busy time over the interval, scaled to its busy %.
                let usage = r.load * p.busy_pct / interval_total;
                let pin_note = match r.pinned {
                    Some(c) if Some(c) != p.core => format!(" (pinned to core {c}, not in mask)"),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "  port: {:<16} queue-id: {:>2} (enabled)   pmd usage: {:>2} %{pin_note}\n",
                    r.port, r.q, usage
                ));
                jq.push(json!({"port": r.port, "bridge": r.bridge, "queue": r.q,
                    "usage_pct": usage, "cycles": r.load, "pinned": r.pinned}));
            }
            out.push_str(&format!("  overhead:  0 %\n  busy: {:>3} %\n", p.busy_pct));
            jp.push(
                json!({"core_id": p.core, "numa_id": 0, "isolated": isolated,
                "busy_pct": p.busy_pct, "rxqs": jq}),
            );
        }
        if json {
            return Ok(json!({ "pmds": jp }).to_string());
        }
        Ok(out)
    }

    /// `pmd-stats-show` over every thread.
    pub fn pmd_stats(&self, json: bool) -> Result<String, String> {
        let per = self.call_all(move |sw| sw.pmd_stats(json))?;
        if json {
            let mut all = Vec::new();
            for s in per {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&s) {
                    if let Some(a) = v.get("pmds").and_then(|a| a.as_array()) {
                        all.extend(a.iter().cloned());
                    }
                }
            }
            return Ok(json!({ "pmds": all }).to_string());
        }
        Ok(per.concat())
    }

    /// `pmd-stats-clear` on every thread.
    pub fn pmd_stats_clear(&self) -> Result<(), String> {
        self.call_all(|sw| sw.pmd_stats_clear())?;
        Ok(())
    }

    /// What the handles on the other threads counted, per bridge and slot (to add to the
    /// home thread's figures).
    pub fn remote_port_counters(&self) -> Result<BTreeMap<(String, u16), PortStats>, String> {
        let mut m: BTreeMap<(String, u16), PortStats> = BTreeMap::new();
        for k in 1..self.pmds.len() {
            for (b, slot, st) in self.call_on(k, |sw| sw.port_counters())? {
                m.entry((b, slot)).or_default().add(&st);
            }
        }
        Ok(m)
    }

    /// `dump-ports BR`, with every thread's counters.
    pub fn dump_ports(&self, br: &str, json: bool) -> Result<String, String> {
        let extra: BTreeMap<u16, PortStats> = self
            .remote_port_counters()?
            .into_iter()
            .filter(|((b, _), _)| b == br)
            .map(|((_, s), st)| (s, st))
            .collect();
        let b = br.to_string();
        self.call(move |sw| sw.dump_ports_with(&b, json, &extra))?
    }

    /// Closes every port on every thread and stops them.
    pub fn shutdown(self) {
        for p in self.pmds.iter().skip(1) {
            let _ = p.handle.call(|sw| sw.shutdown());
        }
        if let Some(p) = self.pmds.first() {
            let _ = p.handle.call(|sw| sw.shutdown());
        }
        for p in self.pmds.into_iter().rev() {
            p.handle.stop();
        }
    }

    /// Replaces the set of poll threads (a new `pmd-cpu-mask`): bridges are rebuilt on the
    /// new threads from the home thread's, which keeps running (re-pinned to the first
    /// core). Queues are reassigned afterwards.
    pub fn set_cores(&mut self, cores: &[usize]) -> Result<(), String> {
        let want: Vec<Option<usize>> = if cores.is_empty() {
            vec![None]
        } else {
            cores.iter().map(|&c| Some(c)).collect()
        };
        if want == self.cores() {
            return Ok(());
        }
        // Every queue goes home, and the replicas go away with their threads.
        for i in 0..self.rxqs.len() {
            self.move_rxq(i, 0);
        }
        let names: Vec<String> = self.bridges.keys().cloned().collect();
        for p in self.pmds.drain(1..) {
            p.handle.stop();
        }
        for n in &names {
            self.bridges.insert(n.clone(), false);
        }
        let first = want[0];
        self.call(move |sw| {
            sw.core_id = first;
            if let Some(c) = first {
                if let Err(e) = crate::pmd::pin_to(c) {
                    log::warn!(target: "datapath", "cannot pin the poll thread to core {c}: {e}");
                }
            }
        })?;
        self.pmds[0].core = first;
        for (i, c) in want.iter().enumerate().skip(1) {
            self.spawn_pmd(i, *c)
                .map_err(|e| format!("cannot start a poll thread: {e}"))?;
        }
        for n in &names {
            self.replicate(n);
        }
        self.rebalance()
    }
}

/// See the module documentation. Every method may be called from any control thread;
/// they are serialised (control-plane changes are applied one at a time).
pub struct Datapath {
    st: std::sync::Mutex<State>,
}

impl Datapath {
    /// Starts one poll thread per entry of `cores` (`None`: unpinned), each with a pool of
    /// `pool_size` buffers. An empty list starts one unpinned thread.
    pub fn new(cores: &[Option<usize>], pool_size: usize) -> std::io::Result<Datapath> {
        Ok(Datapath {
            st: std::sync::Mutex::new(State::new(cores, pool_size)?),
        })
    }

    /// The state, for several changes in a row.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the home thread (where bridges and ports live) between two polls.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Switch) -> R + Send + 'static,
    ) -> Result<R, String> {
        self.lock().call(f)
    }

    /// Runs `f` on every poll thread, in order; returns the results.
    pub fn call_all<R: Send + 'static>(
        &self,
        f: impl Fn(&mut Switch) -> R + Send + Sync + Clone + 'static,
    ) -> Result<Vec<R>, String> {
        self.lock().call_all(f)
    }

    /// See [`State::add_bridge`].
    pub fn add_bridge(
        &self,
        name: &str,
        module: Box<dyn SwitchLogic>,
        local: Option<Box<dyn Port>>,
    ) -> Result<(), String> {
        self.lock().add_bridge(name, module, local)
    }

    /// See [`State::del_bridge`].
    pub fn del_bridge(&self, name: &str) -> Result<(), String> {
        self.lock().del_bridge(name)
    }

    /// See [`State::add_port`].
    pub fn add_port(
        &self,
        br: &str,
        port: Box<dyn Port>,
        ofport: Option<u32>,
        vlan: VlanMode,
    ) -> Result<u32, String> {
        self.lock().add_port(br, port, ofport, vlan)
    }

    /// See [`State::del_port`].
    pub fn del_port(&self, br: Option<&str>, name: &str) -> Result<(), String> {
        self.lock().del_port(br, name)
    }

    /// See [`State::configure_bridge`].
    pub fn configure_bridge(&self, br: &str, key: &str, value: &str) -> Result<(), String> {
        self.lock().configure_bridge(br, key, value)
    }

    /// See [`State::module_command`].
    pub fn module_command(
        &self,
        br: &str,
        verb: &str,
        args: &[String],
        json: bool,
    ) -> Result<String, String> {
        self.lock().module_command(br, verb, args, json)
    }

    /// See [`State::is_replicated`].
    pub fn is_replicated(&self, br: &str) -> bool {
        self.lock().is_replicated(br)
    }

    /// See [`State::set_affinity`].
    pub fn set_affinity(&self, port: &str, spec: &str) -> Result<(), String> {
        self.lock().set_affinity(port, spec)
    }

    /// See [`State::rebalance`].
    pub fn rebalance(&self) -> Result<(), String> {
        self.lock().rebalance()
    }

    /// See [`State::auto_rebalance`].
    pub fn auto_rebalance(&self) -> Result<bool, String> {
        self.lock().auto_rebalance()
    }

    /// The receive queues and where they are.
    pub fn rxqs(&self) -> Vec<RxqRec> {
        self.lock().rxqs().to_vec()
    }

    /// See [`State::rxq_show`].
    pub fn rxq_show(&self, json: bool) -> Result<String, String> {
        self.lock().rxq_show(json)
    }

    /// See [`State::pmd_stats`].
    pub fn pmd_stats(&self, json: bool) -> Result<String, String> {
        self.lock().pmd_stats(json)
    }

    /// See [`State::pmd_stats_clear`].
    pub fn pmd_stats_clear(&self) -> Result<(), String> {
        self.lock().pmd_stats_clear()
    }

    /// See [`State::remote_port_counters`].
    pub fn remote_port_counters(&self) -> Result<BTreeMap<(String, u16), PortStats>, String> {
        self.lock().remote_port_counters()
    }

    /// See [`State::dump_ports`].
    pub fn dump_ports(&self, br: &str, json: bool) -> Result<String, String> {
        self.lock().dump_ports(br, json)
    }

    /// See [`State::set_cores`].
    pub fn set_cores(&self, cores: &[usize]) -> Result<(), String> {
        self.lock().set_cores(cores)
    }

    /// The cores of the poll threads (`None`: unpinned).
    pub fn cores(&self) -> Vec<Option<usize>> {
        self.lock().cores()
    }

    /// Sets the assignment algorithm and reassigns if it changed.
    pub fn set_assign(&self, a: Assign) -> Result<(), String> {
        let mut st = self.lock();
        if st.assign != a {
            st.assign = a;
            st.rebalance()?;
        }
        Ok(())
    }

    /// Sets the automatic load balancing settings.
    pub fn set_auto_lb(&self, a: AutoLb) {
        self.lock().auto_lb = a;
    }

    /// Sets how often an automatic rebalance is considered.
    pub fn set_auto_lb_interval_ms(&self, ms: u64) {
        self.lock().lb_every = std::time::Duration::from_millis(ms.max(1));
    }

    /// Housekeeping the daemon calls about once a second: closes a load-measurement
    /// interval every [`MEASURE_EVERY`], and with `pmd-auto-lb` on, considers a rebalance
    /// once per interval. Returns true if queues moved.
    pub fn tick(&self) -> Result<bool, String> {
        let mut st = self.lock();
        if st.lb_last.elapsed() >= st.lb_every && st.auto_lb.enabled {
            st.lb_last = std::time::Instant::now();
            return st.auto_rebalance();
        }
        if st.measured.elapsed() >= MEASURE_EVERY {
            st.measure()?;
        }
        Ok(false)
    }

    /// Closes every port on every thread and stops them.
    pub fn shutdown(self) {
        self.st
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_affinity_parse() {
        assert_eq!(parse_cpu_mask("0x6"), Ok(vec![1, 2]));
        assert_eq!(parse_cpu_mask("11"), Ok(vec![0, 4]));
        assert!(parse_cpu_mask("0").is_err());
        assert!(parse_cpu_mask("xyz").unwrap_err().contains("pmd-cpu-mask"));
        let a = parse_affinity("0:3, 1:7").expect("parse");
        assert_eq!(a.get(&0), Some(&3));
        assert_eq!(a.get(&1), Some(&7));
        assert!(parse_affinity("0-3").unwrap_err().contains("QUEUE:CORE"));
        assert!(parse_affinity("").expect("empty").is_empty());
    }
}
