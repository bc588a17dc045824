//! Applying the desired configuration to the datapath.
//!
//! What: [`Reconfigurer::apply`] makes the poll thread's [`datapath::PollSet`] match a
//! [`Desired`] read from the database, in two passes as ovs-vswitchd's bridge reconfiguration
//! does: first remove what must go (bridges no longer wanted or whose module changed, ports no
//! longer wanted or whose type, options, VLAN mode or requested ofport changed), then add what
//! is missing (bridges with their module, settings and internal port; ports in an order that
//! lets requested and previously assigned ofports win), then push each bridge's OpenFlow
//! settings to the connection layer when they changed. Removing first frees names and ofports
//! for the additions.
//!
//! Threads: it runs on the reconfiguration thread only. Netdevs are opened here, never on the
//! poll thread, and handed over through [`datapath::Datapath::call`], so the fast path only
//! ever sees finished ports. The CLI verbs may have opened a port already to validate it (so
//! that `ferrovs add-port` fails before committing anything); they leave it in the [`Stash`],
//! and the reconfiguration takes it from there instead of opening the device a second time.
//!
//! Failure: a port that cannot be opened or attached is skipped and its error is returned for
//! the Interface `error` column; everything else is still applied. A failed port is retried on
//! the next reconfiguration (which any database change triggers). Module settings the module
//! rejects are logged once and skipped.
//!
//! Invariant: after `apply`, for every bridge in the datapath `applied` records the module,
//! settings and port signatures it was built from, and nothing else changes datapath bridges
//! or ports (the CLI's structural verbs are database transactions).

use super::model::{BridgeCfg, Desired, IfaceCfg};
use super::ofhooks::{BridgeOfConfig, Controller, OfConfigSink};
use super::vlog;
use datapath::udpif::Udpif;
use datapath::{Datapath, VlanMode, LOCAL_OFPORT};
use netdev::{Options, Port};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a port the CLI opened waits in the stash for the reconfiguration.
const STASH_TTL: Duration = Duration::from_secs(30);

/// Module settings and the value that restores each one when its key is removed.
const SETTING_DEFAULTS: &[(&str, &str)] = &[
    ("mac-aging-time", "300"),
    ("mac-table-size", "2048"),
    ("flow-limit", "200000"),
    ("max-idle", "10000"),
    ("max-groups", "262144"),
];

struct Stashed {
    kind: String,
    options: Options,
    port: Box<dyn Port>,
    at: Instant,
}

/// Ports opened ahead of time by the CLI verbs, by name.
#[derive(Default)]
pub struct Stash(Mutex<HashMap<String, Stashed>>);

impl Stash {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stashed>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leaves an opened port for the reconfiguration.
    pub fn put(&self, kind: &str, options: &Options, port: Box<dyn Port>) {
        let name = port.name().to_string();
        self.map().insert(
            name,
            Stashed {
                kind: kind.to_string(),
                options: options.clone(),
                port,
                at: Instant::now(),
            },
        );
    }

    /// Takes the port named `name` if it was opened with the same type and options.
    fn take(&self, name: &str, kind: &str, options: &Options) -> Option<Box<dyn Port>> {
        let mut m = self.map();
        let ok = m
            .get(name)
            .is_some_and(|s| s.kind == kind && &s.options == options);
        if ok {
            m.remove(name).map(|s| s.port)
        } else {
            None
        }
    }

    /// Closes the port named `name`, if stashed.
    pub fn discard(&self, name: &str) {
        if let Some(mut s) = self.map().remove(name) {
            s.port.close();
        }
    }

    fn expire(&self) {
        let mut m = self.map();
        let old: Vec<String> = m
            .iter()
            .filter(|(_, s)| s.at.elapsed() > STASH_TTL)
            .map(|(n, _)| n.clone())
            .collect();
        for n in old {
            if let Some(mut s) = m.remove(&n) {
                s.port.close();
            }
        }
    }
}

/// What a datapath port was built from; a change means close and reopen.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PortSig {
    kind: String,
    options: BTreeMap<String, String>,
    vlan: VlanMode,
    ofport_request: Option<u32>,
}

#[derive(Debug, Default)]
struct AppliedBridge {
    /// Why the internal port could not be opened, if it could not.
    local_error: Option<String>,
    settings: BTreeMap<String, String>,
    ports: HashMap<String, PortSig>,
    of: Option<BridgeOfConfig>,
    /// The mirrors last set, and whether ports changed since (slots must be re-resolved).
    mirrors: Option<Vec<datapath::mirror::MirrorConfig>>,
}

/// The result of one pass.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Interface UUID → error text.
    pub iface_errors: HashMap<String, String>,
    /// Bridge name → datapath ID in use.
    pub datapath_ids: HashMap<String, u64>,
    /// Whether anything in the datapath changed.
    pub changed: bool,
}

/// See the module documentation.
pub struct Reconfigurer {
    pmd: Arc<Datapath>,
    stash: Arc<Stash>,
    of: Arc<dyn OfConfigSink>,
    applied: HashMap<String, AppliedBridge>,
    /// The OpenFlow state of each bridge running the openflow module, as created.
    openflow: HashMap<String, Arc<Udpif>>,
    warned: HashSet<String>,
    failures: HashMap<String, String>,
}

/// A datapath bridge as read from the poll thread.
struct DpBridge {
    name: String,
    module: &'static str,
    ports: Vec<(String, u32)>,
    local_mac: Option<[u8; 6]>,
}

fn read_datapath(pmd: &Datapath) -> Result<Vec<DpBridge>, String> {
    let bridges = pmd.call(|sw| sw.report())?;
    Ok(bridges
        .into_iter()
        .map(|b| DpBridge {
            local_mac: b
                .ports
                .iter()
                .find(|p| p.ofport == LOCAL_OFPORT)
                .and_then(|p| p.mac),
            ports: b.ports.into_iter().map(|p| (p.name, p.ofport)).collect(),
            name: b.name,
            module: b.module,
        })
        .collect())
}

fn sig_of(port_vlan: &VlanMode, i: &IfaceCfg) -> PortSig {
    PortSig {
        kind: i.kind.clone(),
        options: i.options.clone(),
        vlan: port_vlan.clone(),
        ofport_request: i.ofport_request,
    }
}

/// Formats an open failure as the Interface `error` column shows it.
pub fn open_error(name: &str, e: &netdev::NetdevError) -> String {
    let text = e.to_string();
    if text.contains("no such interface") {
        format!("could not open network device {name} (No such device)")
    } else {
        format!("could not open network device {name} ({text})")
    }
}

impl Reconfigurer {
    /// A reconfigurer for the switch behind `pmd`.
    pub fn new(pmd: Arc<Datapath>, stash: Arc<Stash>, of: Arc<dyn OfConfigSink>) -> Self {
        Reconfigurer {
            pmd,
            stash,
            of,
            applied: HashMap::new(),
            openflow: HashMap::new(),
            warned: HashSet::new(),
            failures: HashMap::new(),
        }
    }

    /// Logs `msg` at warning level the first time it is seen.
    pub fn warn_once(&mut self, msg: &str) {
        if self.warned.insert(msg.to_string()) {
            vlog::warn("bridge", msg);
        }
    }

    /// Applies the poll-thread settings of Open_vSwitch `other_config` (`pmd-cpu-mask`,
    /// `pmd-rxq-assign`, `pmd-auto-lb*`). A bad value is logged and the previous setting kept.
    /// `other_config:vlan-limit` (OVS's default 1; 0 = every tag the flow key holds). A
    /// change flushes every megaflow, since cached keys were parsed under the old limit.
    fn apply_vlan_limit(&mut self, oc: &std::collections::BTreeMap<String, String>) {
        let want = match oc.get("vlan-limit").map(|v| v.parse::<usize>()) {
            None => 1,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                self.warn_once("other_config:vlan-limit is not a number; using 1");
                1
            }
        };
        let before = packet::flow::vlan_limit();
        packet::flow::set_vlan_limit(want);
        if packet::flow::vlan_limit() == before {
            return;
        }
        let flushed = self.openflow.values().map(|u| u.flush()).count();
        vlog::info(
            "bridge",
            &format!(
                "vlan-limit {want}: parsing {} VLAN tag(s); megaflows of {} bridge(s) flushed",
                packet::flow::vlan_limit(),
                flushed
            ),
        );
    }

    fn apply_threads(&mut self, oc: &std::collections::BTreeMap<String, String>) {
        let cores = match oc.get("pmd-cpu-mask") {
            Some(m) => match datapath::threads::parse_cpu_mask(m) {
                Ok(c) => Some(c),
                Err(e) => {
                    self.warn_once(&format!("{e}; keeping the current poll threads"));
                    None
                }
            },
            None => Some(Vec::new()),
        };
        if let Some(c) = cores {
            let want: Vec<Option<usize>> = if c.is_empty() {
                vec![None]
            } else {
                c.iter().map(|&x| Some(x)).collect()
            };
            if self.pmd.cores() != want {
                match self.pmd.set_cores(&c) {
                    Ok(()) => {
                        let cs: Vec<String> = c.iter().map(|x| x.to_string()).collect();
                        vlog::info(
                            "dpif_netdev",
                            &format!(
                                "pmd-cpu-mask: {} poll thread(s), on cores {}",
                                want.len(),
                                if cs.is_empty() {
                                    "any".into()
                                } else {
                                    cs.join(",")
                                }
                            ),
                        )
                    }
                    Err(e) => vlog::err("dpif_netdev", &format!("pmd-cpu-mask: {e}")),
                }
            }
        }
        let assign = oc
            .get("pmd-rxq-assign")
            .map(String::as_str)
            .unwrap_or("cycles");
        match assign.parse::<datapath::threads::Assign>() {
            Ok(a) => {
                if let Err(e) = self.pmd.set_assign(a) {
                    vlog::err("dpif_netdev", &format!("pmd-rxq-assign: {e}"));
                }
            }
            Err(e) => self.warn_once(&e.to_string()),
        }
        let num = |k: &str, d: u64| -> u64 {
            oc.get(k)
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|n| *n <= 100)
                .unwrap_or(d)
        };
        let lb = datapath::threads::AutoLb {
            enabled: oc.get("pmd-auto-lb").is_some_and(|v| v == "true"),
            load_threshold: num("pmd-auto-lb-load-threshold", 95),
            improvement_threshold: num("pmd-auto-lb-improvement-threshold", 25),
        };
        self.pmd.set_auto_lb(lb);
        let every = oc
            .get("pmd-auto-lb-rebal-interval")
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|m| *m <= 20_000)
            .unwrap_or(1);
        self.pmd.set_auto_lb_interval_ms(every.max(1) * 60_000);
    }

    /// Makes the datapath match `d`. See the module documentation.
    pub fn apply(&mut self, d: &Desired) -> Outcome {
        let mut out = Outcome::default();
        for w in &d.warnings {
            self.warn_once(w);
        }
        for (u, e) in &d.rejected {
            out.iface_errors.insert(u.clone(), e.clone());
        }
        self.stash.expire();
        self.apply_threads(&d.other_config);
        self.apply_vlan_limit(&d.other_config);
        let dp = match read_datapath(&self.pmd) {
            Ok(b) => b,
            Err(e) => {
                vlog::err("bridge", &format!("cannot read the datapath: {e}"));
                return out;
            }
        };
        let wanted: HashMap<&str, &BridgeCfg> =
            d.bridges.iter().map(|b| (b.name.as_str(), b)).collect();

        self.remove_stale(&dp, &wanted, &mut out);

        // Pass 2: bridges and their settings.
        for cfg in &d.bridges {
            if !self.applied.contains_key(&cfg.name) {
                if self.create_bridge(cfg, &mut out) {
                    out.changed = true;
                } else {
                    continue;
                }
            }
            self.update_settings(cfg);
        }

        // Pass 3: ports, requested ofports first, then previously assigned ones.
        let dp = read_datapath(&self.pmd).unwrap_or_default();
        self.add_ports(d, &dp, &mut out);
        self.apply_affinity(d, &mut out);
        self.apply_mirrors(d, &mut out);
        // Log each interface error once, and again only if it changes or comes back.
        for (u, e) in &out.iface_errors {
            if self.failures.get(u) != Some(e) {
                vlog::warn("bridge", e);
            }
        }
        self.failures = out.iface_errors.clone();

        self.apply_openflow(d, &dp, &mut out);
        out
    }

    /// Pass 1: bridges that go (or change module) and ports that go or changed.
    fn remove_stale(
        &mut self,
        dp: &[DpBridge],
        wanted: &HashMap<&str, &BridgeCfg>,
        out: &mut Outcome,
    ) {
        for b in dp {
            let keep = wanted
                .get(b.name.as_str())
                .is_some_and(|w| w.module == b.module)
                && self.applied.contains_key(&b.name);
            if !keep {
                let n = b.name.clone();
                match self.pmd.del_bridge(&n).map(Ok) {
                    Ok(Ok(())) => vlog::info("bridge", &format!("deleted bridge {}", b.name)),
                    Ok(Err(e)) | Err(e) => {
                        vlog::err("bridge", &format!("deleting bridge {}: {e}", b.name))
                    }
                }
                self.applied.remove(&b.name);
                self.openflow.remove(&b.name);
                self.of.bridge_removed(&b.name);
                out.changed = true;
                continue;
            }
            let Some(cfg) = wanted.get(b.name.as_str()) else {
                continue;
            };
            let want: HashMap<&str, PortSig> = cfg
                .ports
                .iter()
                .filter_map(|p| {
                    let i = p.ifaces.first()?;
                    (i.error.is_none()).then(|| (i.name.as_str(), sig_of(&p.vlan, i)))
                })
                .collect();
            let Some(ab) = self.applied.get_mut(&b.name) else {
                continue;
            };
            for (pname, ofport) in &b.ports {
                if *ofport == LOCAL_OFPORT {
                    continue;
                }
                let same = want
                    .get(pname.as_str())
                    .is_some_and(|s| ab.ports.get(pname) == Some(s));
                if same {
                    continue;
                }
                let (bn, pn) = (b.name.clone(), pname.clone());
                match self.pmd.del_port(Some(&bn), &pn).map(Ok) {
                    Ok(Ok(())) => vlog::info(
                        "bridge",
                        &format!("bridge {}: deleted port {pname}", b.name),
                    ),
                    Ok(Err(e)) | Err(e) => vlog::err(
                        "bridge",
                        &format!("bridge {}: deleting port {pname}: {e}", b.name),
                    ),
                }
                ab.ports.remove(pname);
                out.changed = true;
            }
        }
    }

    /// Pass 3: the ports not on their bridge yet (`dp` is the datapath after pass 2).
    fn add_ports(&mut self, d: &Desired, dp: &[DpBridge], out: &mut Outcome) {
        let present: HashMap<String, HashSet<String>> = dp
            .iter()
            .map(|b| {
                (
                    b.name.clone(),
                    b.ports.iter().map(|p| p.0.clone()).collect(),
                )
            })
            .collect();
        let mut todo: Vec<(&BridgeCfg, &VlanMode, &IfaceCfg)> = Vec::new();
        for cfg in &d.bridges {
            let Some(have) = present.get(&cfg.name) else {
                continue;
            };
            for p in &cfg.ports {
                for (k, i) in p.ifaces.iter().enumerate() {
                    if let Some(e) = &i.error {
                        out.iface_errors.insert(i.uuid.clone(), e.clone());
                        if k == 0 {
                            continue;
                        }
                    }
                    if i.name == cfg.name {
                        let le = self
                            .applied
                            .get(&cfg.name)
                            .and_then(|a| a.local_error.clone());
                        if let Some(e) = le {
                            out.iface_errors.insert(i.uuid.clone(), e);
                        }
                        continue;
                    }
                    if k > 0 || have.contains(&i.name) {
                        continue;
                    }
                    todo.push((cfg, &p.vlan, i));
                }
            }
        }
        todo.sort_by_key(|(_, _, i)| (i.ofport_request.is_none(), i.prev_ofport.is_none()));
        for (cfg, vlan, i) in todo {
            match self.add_port(cfg, vlan, i) {
                Ok(n) => {
                    vlog::info(
                        "bridge",
                        &format!(
                            "bridge {}: added {} port {} on ofport {n}",
                            cfg.name, i.kind, i.name
                        ),
                    );
                    if let Some(ab) = self.applied.get_mut(&cfg.name) {
                        ab.ports.insert(i.name.clone(), sig_of(vlan, i));
                    }
                    out.changed = true;
                }
                Err(e) => {
                    out.iface_errors.insert(i.uuid.clone(), e);
                }
            }
        }
    }

    /// Receive queue pinning (Interface other_config:pmd-rxq-affinity).
    fn apply_affinity(&mut self, d: &Desired, out: &mut Outcome) {
        for cfg in &d.bridges {
            for p in &cfg.ports {
                let Some(i) = p.ifaces.first() else { continue };
                let spec = i.rxq_affinity.clone().unwrap_or_default();
                if let Err(e) = self.pmd.set_affinity(&i.name, &spec) {
                    out.iface_errors.insert(i.uuid.clone(), e.to_string());
                }
            }
        }
    }

    /// Mirrors: set again when they or the bridge's ports changed.
    fn apply_mirrors(&mut self, d: &Desired, out: &mut Outcome) {
        for cfg in &d.bridges {
            let Some(ab) = self.applied.get_mut(&cfg.name) else {
                continue;
            };
            if !out.changed && ab.mirrors.as_ref() == Some(&cfg.mirrors) {
                continue;
            }
            match self.pmd.set_mirrors(&cfg.name, &cfg.mirrors) {
                Ok(missing) => {
                    ab.mirrors = Some(cfg.mirrors.clone());
                    if !missing.is_empty() {
                        let msg = format!(
                            "bridge {}: mirror ports not on the bridge: {}",
                            cfg.name,
                            missing.join(", ")
                        );
                        self.warn_once(&msg);
                    }
                }
                Err(e) => self.warn_once(&format!("bridge {}: mirrors: {e}", cfg.name)),
            }
        }
    }

    /// Pass 4: each bridge's OpenFlow settings, given to the OpenFlow side when they changed.
    fn apply_openflow(&mut self, d: &Desired, dp: &[DpBridge], out: &mut Outcome) {
        for cfg in &d.bridges {
            let mac = dp
                .iter()
                .find(|b| b.name == cfg.name)
                .and_then(|b| b.local_mac);
            let dpid = cfg.datapath_id.unwrap_or_else(|| {
                mac.map(|m| m.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
                    .unwrap_or(0)
            });
            out.datapath_ids.insert(cfg.name.clone(), dpid);
            let of = BridgeOfConfig {
                controllers: cfg
                    .controllers
                    .iter()
                    .map(|c| Controller {
                        target: c.target.clone(),
                        connection_mode: c.connection_mode.clone(),
                        max_backoff: c.max_backoff,
                        inactivity_probe: c.inactivity_probe,
                    })
                    .collect(),
                fail_mode: cfg.fail_mode.clone(),
                protocols: cfg.protocols.clone(),
                datapath_id: dpid,
            };
            let Some(ab) = self.applied.get_mut(&cfg.name) else {
                continue;
            };
            if ab.of.as_ref() == Some(&of) {
                continue;
            }
            match self.of.apply(&cfg.name, &of) {
                Ok(()) => ab.of = Some(of),
                Err(e) => {
                    let msg = format!("bridge {}: OpenFlow settings: {e}", cfg.name);
                    vlog::err("bridge", &msg);
                    ab.of = Some(of);
                }
            }
        }
    }

    fn create_bridge(&mut self, cfg: &BridgeCfg, out: &mut Outcome) -> bool {
        let module = match ofctl::create(&cfg.module) {
            Ok(m) => m,
            Err(e) => {
                self.warn_once(&format!("bridge {}: {e}; bridge not created", cfg.name));
                for p in &cfg.ports {
                    for i in &p.ifaces {
                        out.iface_errors
                            .insert(i.uuid.clone(), format!("bridge {}: {e}", cfg.name));
                    }
                }
                return false;
            }
        };
        let local_iface = cfg
            .ports
            .iter()
            .flat_map(|p| p.ifaces.iter())
            .find(|i| i.name == cfg.name);
        let opts = local_iface.map(|i| i.options.clone()).unwrap_or_default();
        let local = match self.stash.take(&cfg.name, "internal", &opts) {
            Some(p) => Ok(p),
            None => netdev::open(&cfg.name, "internal", &Options::new()),
        };
        let mut local_error = None;
        let local = match local {
            Ok(p) => Some(p),
            Err(e) => {
                let msg = open_error(&cfg.name, &e);
                if let Some(i) = local_iface {
                    out.iface_errors.insert(i.uuid.clone(), msg.clone());
                }
                local_error = Some(msg);
                None
            }
        };
        let name = cfg.name.clone();
        let ofctl::Created { logic, openflow } = module;
        match self.pmd.add_bridge(&name, logic, local).map(Ok) {
            Ok(Ok(())) => {
                vlog::info(
                    "bridge",
                    &format!("created bridge {} (module {})", cfg.name, cfg.module),
                );
                if let Some(u) = openflow {
                    self.openflow.insert(cfg.name.clone(), Arc::clone(&u));
                    if let Err(e) = self.of.bridge_added(&cfg.name, u) {
                        vlog::err(
                            "bridge",
                            &format!("bridge {}: OpenFlow connections: {e}", cfg.name),
                        );
                    }
                }
                self.applied.insert(
                    cfg.name.clone(),
                    AppliedBridge {
                        local_error,
                        ..AppliedBridge::default()
                    },
                );
                true
            }
            Ok(Err(e)) | Err(e) => {
                self.warn_once(&format!("bridge {}: cannot create it: {e}", cfg.name));
                false
            }
        }
    }

    fn update_settings(&mut self, cfg: &BridgeCfg) {
        let Some(old) = self.applied.get(&cfg.name).map(|ab| ab.settings.clone()) else {
            return;
        };
        let mut changes: Vec<(String, String)> = Vec::new();
        for (k, v) in &cfg.settings {
            if old.get(k) != Some(v) {
                changes.push((k.clone(), v.clone()));
            }
        }
        for k in old.keys() {
            if !cfg.settings.contains_key(k) {
                match SETTING_DEFAULTS.iter().find(|(d, _)| d == k) {
                    Some((_, v)) => changes.push((k.clone(), v.to_string())),
                    None => {
                        let m = format!(
                            "bridge {}: removing setting '{k}' takes effect when the bridge is recreated",
                            cfg.name
                        );
                        self.warn_once(&m);
                    }
                }
            }
        }
        if changes.is_empty() {
            return;
        }
        let results: Vec<_> = changes
            .into_iter()
            .map(|(k, v)| {
                let r = self.pmd.configure_bridge(&cfg.name, &k, &v);
                (k, v, r)
            })
            .collect();
        for (k, v, r) in results {
            match r {
                Ok(()) => vlog::info("bridge", &format!("bridge {}: {k}={v}", cfg.name)),
                Err(e) => self.warn_once(&format!(
                    "bridge {}: other_config:{k}={v} ignored: {e}",
                    cfg.name
                )),
            }
        }
        if let Some(ab) = self.applied.get_mut(&cfg.name) {
            ab.settings = cfg.settings.clone();
        }
    }

    fn add_port(&mut self, cfg: &BridgeCfg, vlan: &VlanMode, i: &IfaceCfg) -> Result<u32, String> {
        let (b, n) = (cfg.name.clone(), i.name.clone());
        let taken: HashSet<u32> = self
            .pmd
            .call(move |sw| {
                sw.bridge(&b)
                    .map(|br| br.ports().map(|(_, s)| s.ofport).collect())
                    .unwrap_or_default()
            })
            .map_err(|e| e.to_string())?;
        let mut ofport = None;
        if let Some(r) = i.ofport_request {
            if taken.contains(&r) {
                self.warn_once(&format!(
                    "bridge {}: port {}: ofport_request {r} is in use; picking another number",
                    cfg.name, i.name
                ));
            } else {
                ofport = Some(r);
            }
        }
        if ofport.is_none() {
            ofport = i.prev_ofport.filter(|p| !taken.contains(p));
        }
        let b = cfg.name.clone();
        self.pmd
            .call(move |sw| sw.check_add_port(&b, &n, ofport))
            .map_err(|e| e.to_string())?
            .map_err(|e| {
                format!(
                    "could not add network device {} to the bridge ({e})",
                    i.name
                )
            })?;
        let port = match self.stash.take(&i.name, &i.kind, &i.options) {
            Some(p) => p,
            None => {
                netdev::open(&i.name, &i.kind, &i.options).map_err(|e| open_error(&i.name, &e))?
            }
        };
        let (b, v) = (cfg.name.clone(), vlan.clone());
        self.pmd.add_port(&b, port, ofport, v).map_err(|e| {
            format!(
                "could not add network device {} to the bridge ({e})",
                i.name
            )
        })
    }
}
