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

mod rxq;

pub use rxq::{parse_affinity, parse_cpu_mask, Assign, AutoLb, RxqRec, MEASURE_EVERY};

use crate::error::Error;
use crate::module::{SwitchLogic, VlanMode};
use crate::pmd::PmdHandle;
use crate::pollset::PollSet;
use crate::report::{PmdReport, PmdRxqReport, PortCountersReport, TraceReport};
use netdev::{Port, PortStats};
use std::collections::BTreeMap;

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
        let mut sw = PollSet::new(self.pool_size);
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
        f: impl FnOnce(&mut PollSet) -> R + Send + 'static,
    ) -> Result<R, Error> {
        self.pmds[0].handle.call(f)
    }

    /// Runs `f` on poll thread `i`.
    pub fn call_on<R: Send + 'static>(
        &self,
        i: usize,
        f: impl FnOnce(&mut PollSet) -> R + Send + 'static,
    ) -> Result<R, Error> {
        match self.pmds.get(i) {
            Some(p) => p.handle.call(f),
            None => Err(Error::NoPollThread(i)),
        }
    }

    /// Runs `f` on every poll thread, in order; returns the results.
    pub fn call_all<R: Send + 'static>(
        &self,
        f: impl Fn(&mut PollSet) -> R + Send + Sync + Clone + 'static,
    ) -> Result<Vec<R>, Error> {
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

    /// Creates a bridge (see [`PollSet::add_bridge`]) and replicates it where possible.
    pub fn add_bridge(
        &mut self,
        name: &str,
        module: Box<dyn SwitchLogic>,
        local: Option<Box<dyn Port>>,
    ) -> Result<(), Error> {
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
    pub fn del_bridge(&mut self, name: &str) -> Result<(), Error> {
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

    /// Adds a port (see [`PollSet::add_port`]), shares it with the bridge's replicas and
    /// assigns its receive queues. Returns its ofport.
    pub fn add_port(
        &mut self,
        br: &str,
        port: Box<dyn Port>,
        ofport: Option<u32>,
        vlan: VlanMode,
    ) -> Result<u32, Error> {
        let name = port.name().to_string();
        let b = br.to_string();
        let n = self.call(move |sw| sw.add_port(&b, port, ofport, vlan))??;
        if self.is_replicated(br) {
            let (b, pn) = (br.to_string(), name.clone());
            let slot = self
                .call(move |sw| sw.bridge(&b).and_then(|x| x.find_port(&pn)))?
                .ok_or_else(|| Error::PortVanished(name.clone()))?;
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
    pub fn del_port(&mut self, br: Option<&str>, name: &str) -> Result<(), Error> {
        let owner = match br {
            Some(b) => b.to_string(),
            None => {
                let n = name.to_string();
                self.call(move |sw| sw.port_owner(&n).map(str::to_string))?
                    .ok_or_else(|| Error::NoSuchPort(name.to_string()))?
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

    /// Runs `f` on the home thread, then, if bridge `br` is replicated, on every other
    /// thread (so per-thread module state, such as a patch map, stays the same everywhere).
    /// Returns the home thread's result; stops at the first error.
    pub fn on_bridge_threads<R: Send + 'static>(
        &self,
        br: &str,
        f: impl Fn(&mut PollSet, &str) -> Result<R, Error> + Send + Sync + Clone + 'static,
    ) -> Result<R, Error> {
        let mut all = self.on_bridge_threads_all(br, f)?;
        Ok(all.swap_remove(0))
    }

    /// [`State::on_bridge_threads`], returning every thread's result (the home thread's
    /// first).
    pub fn on_bridge_threads_all<R: Send + 'static>(
        &self,
        br: &str,
        f: impl Fn(&mut PollSet, &str) -> Result<R, Error> + Send + Sync + Clone + 'static,
    ) -> Result<Vec<R>, Error> {
        let (b, g) = (br.to_string(), f.clone());
        let mut all = vec![self.call(move |sw| g(sw, &b))??];
        if self.is_replicated(br) {
            for i in 1..self.pmds.len() {
                let (b, g) = (br.to_string(), f.clone());
                all.push(self.call_on(i, move |sw| g(sw, &b))??);
            }
        }
        Ok(all)
    }

    /// Applies a module setting on every thread that serves the bridge.
    pub fn configure_bridge(&self, br: &str, key: &str, value: &str) -> Result<(), Error> {
        let (k, v) = (key.to_string(), value.to_string());
        self.on_bridge_threads(br, move |sw, b| sw.configure_bridge(b, &k, &v))
    }

    /// Runs a module verb on every thread that serves the bridge. Returns the home output.
    pub fn module_command(
        &self,
        br: &str,
        verb: &str,
        args: &[String],
        json: bool,
    ) -> Result<String, Error> {
        let (v, a) = (verb.to_string(), args.to_vec());
        let all =
            self.on_bridge_threads_all(br, move |sw, b| sw.module_command(b, &v, &a, json))?;
        Ok(all.into_iter().next().unwrap_or_default())
    }

    /// What `pmd-trace-show` presents: the fast-path trace of bridge `br` on every thread
    /// that serves it (each thread traces the packets it receives).
    pub fn trace_report(&self, br: &str) -> Result<TraceReport, Error> {
        Ok(TraceReport {
            bridge: br.to_string(),
            threads: self.on_bridge_threads_all(br, |sw, b| sw.trace_report(b))?,
        })
    }

    /// What `pmd-stats-show` presents: one report per poll thread, in order.
    pub fn pmd_reports(&self) -> Result<Vec<PmdReport>, Error> {
        self.call_all(|sw| sw.pmd_report())
    }

    /// `pmd-stats-clear` on every thread.
    pub fn pmd_stats_clear(&self) -> Result<(), Error> {
        self.call_all(|sw| sw.pmd_stats_clear())?;
        Ok(())
    }

    /// What the handles on the other threads counted, per bridge and slot (to add to the
    /// home thread's figures).
    pub fn remote_port_counters(&self) -> Result<BTreeMap<(String, u16), PortStats>, Error> {
        let mut m: BTreeMap<(String, u16), PortStats> = BTreeMap::new();
        for k in 1..self.pmds.len() {
            for (b, slot, st) in self.call_on(k, |sw| sw.port_counters())? {
                m.entry((b, slot)).or_default().add(&st);
            }
        }
        Ok(m)
    }

    /// What `dump-ports BR` presents, with every thread's counters.
    pub fn port_counters_report(&self, br: &str) -> Result<PortCountersReport, Error> {
        let extra: BTreeMap<u16, PortStats> = self
            .remote_port_counters()?
            .into_iter()
            .filter(|((b, _), _)| b == br)
            .map(|((_, s), st)| (s, st))
            .collect();
        let b = br.to_string();
        self.call(move |sw| sw.port_counters_report(&b, &extra))?
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
    pub fn set_cores(&mut self, cores: &[usize]) -> Result<(), Error> {
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
                .map_err(|e| Error::ThreadStart(e.to_string()))?;
        }
        for n in &names {
            self.replicate(n);
        }
        self.rebalance()
    }
}

/// Writes, for each listed [`State`] method, a [`Datapath`] method of the same name that
/// takes the lock for the call.
macro_rules! under_lock {
    ($($(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                self.lock().$name($($arg),*)
            }
        )*
    };
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

    /// The state, for several changes in a row. Hold the guard only for a statement or a
    /// block that calls nothing else on this `Datapath` (the lock is not reentrant).
    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the home thread (where bridges and ports live) between two polls.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PollSet) -> R + Send + 'static,
    ) -> Result<R, Error> {
        self.lock().call(f)
    }

    /// Runs `f` on every poll thread, in order; returns the results.
    pub fn call_all<R: Send + 'static>(
        &self,
        f: impl Fn(&mut PollSet) -> R + Send + Sync + Clone + 'static,
    ) -> Result<Vec<R>, Error> {
        self.lock().call_all(f)
    }

    /// See [`State::on_bridge_threads`].
    pub fn on_bridge_threads<R: Send + 'static>(
        &self,
        br: &str,
        f: impl Fn(&mut PollSet, &str) -> Result<R, Error> + Send + Sync + Clone + 'static,
    ) -> Result<R, Error> {
        self.lock().on_bridge_threads(br, f)
    }

    under_lock! {
        /// See [`State::add_bridge`].
        fn add_bridge(&self, name: &str, module: Box<dyn SwitchLogic>, local: Option<Box<dyn Port>>) -> Result<(), Error>;
        /// See [`State::del_bridge`].
        fn del_bridge(&self, name: &str) -> Result<(), Error>;
        /// See [`State::add_port`].
        fn add_port(&self, br: &str, port: Box<dyn Port>, ofport: Option<u32>, vlan: VlanMode) -> Result<u32, Error>;
        /// See [`State::del_port`].
        fn del_port(&self, br: Option<&str>, name: &str) -> Result<(), Error>;
        /// See [`State::configure_bridge`].
        fn configure_bridge(&self, br: &str, key: &str, value: &str) -> Result<(), Error>;
        /// See [`State::module_command`].
        fn module_command(&self, br: &str, verb: &str, args: &[String], json: bool) -> Result<String, Error>;
        /// See [`State::trace_report`].
        fn trace_report(&self, br: &str) -> Result<TraceReport, Error>;
        /// See [`State::is_replicated`].
        fn is_replicated(&self, br: &str) -> bool;
        /// See [`State::set_affinity`].
        fn set_affinity(&self, port: &str, spec: &str) -> Result<(), Error>;
        /// See [`State::rebalance`].
        fn rebalance(&self) -> Result<(), Error>;
        /// See [`State::auto_rebalance`].
        fn auto_rebalance(&self) -> Result<bool, Error>;
        /// See [`State::rxq_report`].
        fn rxq_report(&self) -> Result<Vec<PmdRxqReport>, Error>;
        /// See [`State::pmd_reports`].
        fn pmd_reports(&self) -> Result<Vec<PmdReport>, Error>;
        /// See [`State::pmd_stats_clear`].
        fn pmd_stats_clear(&self) -> Result<(), Error>;
        /// See [`State::remote_port_counters`].
        fn remote_port_counters(&self) -> Result<BTreeMap<(String, u16), PortStats>, Error>;
        /// See [`State::port_counters_report`].
        fn port_counters_report(&self, br: &str) -> Result<PortCountersReport, Error>;
        /// See [`State::set_cores`].
        fn set_cores(&self, cores: &[usize]) -> Result<(), Error>;
        /// See [`State::cores`].
        fn cores(&self) -> Vec<Option<usize>>;
    }

    /// The receive queues and where they are.
    pub fn rxqs(&self) -> Vec<RxqRec> {
        self.lock().rxqs().to_vec()
    }

    /// Sets the assignment algorithm and reassigns if it changed.
    pub fn set_assign(&self, a: Assign) -> Result<(), Error> {
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
    pub fn tick(&self) -> Result<bool, Error> {
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
