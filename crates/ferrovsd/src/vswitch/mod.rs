//! Configuration from OVSDB, as ovs-vswitchd does it.
//!
//! The database is the single source of truth for bridges and ports: `ovs-vsctl`, the Python
//! IDL, `ovsdb-client` and ferrovs's own CLI verbs all change it with transactions, and one
//! reconfiguration thread makes the datapath follow.
//!
//! ```text
//!  ovs-vsctl / IDL / ferrovs CLI ──transact──▶ Db (embedded Server | external Client)
//!                                               │ change ticks
//!                                               ▼
//!                 reconfiguration thread: snapshot ─▶ model::Desired ─▶ Reconfigurer::apply
//!                                               │                         │ Datapath::call
//!                                               │                         ▼
//!                                               │                     poll thread (PollSet)
//!                                               ◀── status::ops (ofport, error, stats, cur_cfg)
//! ```
//!
//! Files: [`db`] (embedded or external database behind one API), [`model`] (rows → desired
//! configuration), [`reconfigure`] (desired → datapath), [`status`] (datapath → status
//! columns), [`cli`] (the `ferrovs` structural verbs as transactions), [`appctl`] (OVS's
//! unixctl names), [`vlog`] (log levels), [`ofhooks`] (the seam to the OpenFlow connection
//! layer) and [`ofbridge`] (that seam implemented by [`crate::ofconn::ConnMgr`]).
//!
//! Threads: one `vswitch` thread owns the [`reconfigure::Reconfigurer`] and runs a pass
//! whenever the database changes (or when kicked), and every [`status::STATS_INTERVAL`] to
//! refresh statistics. A pass ends by committing status, including `cur_cfg = next_cfg`, and
//! then publishes the applied `next_cfg` so that CLI verbs blocked in
//! [`Vswitch::wait_applied`] return (the equivalent of `ovs-vsctl` waiting without
//! `--no-wait`).
//!
//! Invariant: only the `vswitch` thread changes datapath bridges and ports. The CLI verbs
//! only validate (possibly opening a port into the [`reconfigure::Stash`]) and transact.

pub mod appctl;
pub mod cli;
pub mod ct_zones;
pub mod db;
pub mod mirrors;
pub mod model;
pub mod ofbridge;
pub mod ofhooks;
pub mod reconfigure;
pub mod ssl;
pub mod status;
pub mod vlog;

use crossbeam_channel::{select, unbounded, Receiver, Sender};
use datapath::Datapath;
use db::Db;
use model::Desired;
use ofhooks::OfConfigSink;
use reconfigure::{Reconfigurer, Stash};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Where the configuration comes from.
#[derive(Debug, Clone)]
pub enum DbMode {
    /// The embedded server: the database file and the remotes to serve.
    Embedded {
        path: std::path::PathBuf,
        remotes: Vec<String>,
        /// The TLS files of `pssl:` remotes.
        ssl: ssl::SslOptions,
    },
    /// An external server (`unix:PATH` or `tcp:IP:PORT`).
    External(String),
}

/// The daemon's configuration layer. See the module documentation.
pub struct Vswitch {
    pub db: Db,
    /// The OpenMetrics endpoint (`other_config:metrics-address`).
    pub metrics: crate::metrics::Exporter,
    /// sFlow export (the `sFlow` table).
    pub sflow: crate::sflow::Sflow,
    /// Per-bridge IPFIX export (the `IPFIX` table).
    pub ipfix: crate::ipfix::Ipfix,
    /// Connection-tracking timeout policies (`Datapath:ct_zones`).
    pub ct_zones: ct_zones::CtZones,
    pub pmd: Arc<Datapath>,
    pub stash: Arc<Stash>,
    applied: Mutex<Option<i64>>,
    applied_cv: Condvar,
    kick: Sender<()>,
    stop: AtomicBool,
}

impl Vswitch {
    /// Opens the database and starts the reconfiguration thread. `of` receives each bridge's
    /// OpenFlow settings.
    pub fn start(
        pmd: Arc<Datapath>,
        mode: &DbMode,
        of: Arc<dyn OfConfigSink>,
    ) -> Result<Arc<Vswitch>, String> {
        let db = match mode {
            DbMode::Embedded { path, remotes, ssl } => Db::embedded(path, remotes, ssl)?,
            DbMode::External(t) => Db::external(t)?,
        };
        let (kick, kick_rx) = unbounded();
        let vs = Arc::new(Vswitch {
            db,
            metrics: crate::metrics::Exporter::default(),
            sflow: crate::sflow::Sflow::default(),
            ipfix: crate::ipfix::Ipfix::default(),
            ct_zones: ct_zones::CtZones::default(),
            pmd: pmd.clone(),
            stash: Arc::new(Stash::default()),
            applied: Mutex::new(None),
            applied_cv: Condvar::new(),
            kick,
            stop: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&vs);
        let rec = Reconfigurer::new(pmd, vs.stash.clone(), of.clone());
        let changes = vs.db.changes().clone();
        std::thread::Builder::new()
            .name("vswitch".into())
            .spawn(move || run(weak, rec, of, changes, kick_rx))
            .map_err(|e| format!("cannot start the reconfiguration thread: {e}"))?;
        let _ = vs.kick.send(());
        Ok(vs)
    }

    /// Asks for a reconfiguration pass.
    pub fn kick(&self) {
        let _ = self.kick.send(());
    }

    /// Stops the reconfiguration thread (at its next wake-up) and the database listeners.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.kick();
        self.db.close_listeners();
    }

    fn publish(&self, cfg: i64) {
        let mut a = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        *a = Some(cfg);
        self.applied_cv.notify_all();
    }

    /// Waits until configuration `cfg` has been applied.
    pub fn wait_applied(&self, cfg: i64, timeout: Duration) -> Result<(), String> {
        self.kick();
        let deadline = Instant::now() + timeout;
        let mut a = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if a.is_some_and(|x| x >= cfg) {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "timed out after {}s waiting for the switch to apply configuration {cfg}",
                    timeout.as_secs()
                ));
            }
            a = match self.applied_cv.wait_timeout(a, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

fn run(
    weak: std::sync::Weak<Vswitch>,
    mut rec: Reconfigurer,
    of: Arc<dyn OfConfigSink>,
    changes: Receiver<()>,
    kicks: Receiver<()>,
) {
    let mut last_stats = Instant::now();
    loop {
        let wait = status::STATS_INTERVAL.saturating_sub(last_stats.elapsed());
        select! {
            recv(changes) -> m => { if m.is_err() { return; } }
            recv(kicks) -> m => { if m.is_err() { return; } }
            default(wait) => {}
        }
        while changes.try_recv().is_ok() || kicks.try_recv().is_ok() {}
        let Some(vs) = weak.upgrade() else { return };
        if vs.stop.load(Ordering::SeqCst) {
            return;
        }
        let stats_due = last_stats.elapsed() >= status::STATS_INTERVAL;
        if stats_due {
            last_stats = Instant::now();
        }
        pass(&vs, &mut rec, of.as_ref(), stats_due);
    }
}

/// One reconfiguration pass: read, apply, write status, publish.
fn pass(vs: &Vswitch, rec: &mut Reconfigurer, of: &dyn OfConfigSink, stats_due: bool) {
    let Some(snap) = vs.db.snapshot() else {
        return;
    };
    if snap.get("Open_vSwitch").is_none_or(|t| t.is_empty()) {
        if let Err(e) = vs.db.ensure_root() {
            vlog::err(
                "reconfigure",
                &format!("cannot create the Open_vSwitch row: {e}"),
            );
        }
        return;
    }
    appctl::inc("bridge_reconfigure_pass");
    let d = Desired::parse(&snap);
    vs.metrics
        .configure(d.other_config.get("metrics-address").map(String::as_str));
    of.set_ssl(ssl::from_tables(&snap));
    let out = rec.apply(&d);
    if out.changed {
        appctl::inc("bridge_reconfigure");
    }
    for w in vs.sflow.configure(&vs.pmd, &snap, out.changed) {
        vlog::warn("sflow", &w);
    }
    for w in vs
        .ipfix
        .configure(&vs.pmd, &snap, out.changed, &of.udpifs(), &of.ipfix_board())
    {
        vlog::warn("ipfix", &w);
    }
    for w in vs
        .ct_zones
        .configure(&snap, || datapath::ct::tracker().policies())
    {
        vlog::warn("conntrack", &w);
    }
    let dp = status::read_datapath(&vs.pmd);
    let mut ops = status::ops(&snap, &d, &out, &dp, stats_due, of);
    if stats_due || out.changed {
        ops.extend(mirrors::status_ops(&snap, &d, &vs.pmd));
    }
    if ops.is_empty() {
        vs.publish(d.next_cfg);
        return;
    }
    appctl::inc("status_txn");
    match vs.db.transact(ops, true) {
        Ok(_) => vs.publish(d.next_cfg),
        Err(e) => {
            appctl::inc("status_txn_error");
            vlog::err("reconfigure", &format!("writing status failed: {e}"));
        }
    }
}
