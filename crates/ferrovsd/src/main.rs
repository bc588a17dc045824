//! `ferrovsd`: the ferrovs daemon.
//!
//! Starts the poll-mode threads (one by default, one per core of `pmd-cpu-mask`), the embedded
//! OVSDB server (or a client of an external one), the OpenFlow connections of every bridge,
//! and a control socket at `<rundir>/ferrovsd.ctl` speaking OVS's unixctl protocol, so both
//! `ferrovs` and Debian's `ovs-appctl -t <rundir>/ferrovsd.ctl` drive it. `SIGINT`/`SIGTERM`
//! or the `exit` command close every port (internal TAP devices disappear) and remove the
//! sockets and pidfile.
//!
//! Start-up order matters to scripts: the control socket is bound last, after the database
//! socket listens and the first configuration pass has created every bridge's OpenFlow
//! socket, so a script that waits for `ferrovsd.ctl` (or for `--detach` to return) can use
//! `ovs-vsctl` and `ovs-ofctl` at once. Command-line options: see [`args`]; service
//! conventions (`--detach`, `--monitor`, pidfile, log file): see [`daemonize`].

mod args;
mod collector;
mod commands;
mod config;
mod daemonize;
mod ipfix;
mod metrics;
mod ofconn;
mod policy;
mod privdrop;
mod render;
mod sflow;
mod vswitch;

use datapath::Datapath;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

fn log(msg: &str) {
    vswitch::vlog::info("vswitchd", msg);
}

/// Fails if another daemon answers on the control socket; removes a stale one.
fn check_ctl(path: &Path) -> Result<(), String> {
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(format!(
                "{} is in use: another ferrovsd is running with this rundir",
                path.display()
            ));
        }
        std::fs::remove_file(path)
            .map_err(|e| format!("removing stale {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Binds the control socket so that it appears already listening: bound and listening
/// under a short temporary name beside it, then renamed into place. (Binding at the final
/// path makes the file exist a moment before `listen(2)`, and a client that saw the file
/// could be refused.) If the temporary name cannot be bound, the final one is.
fn bind_ctl(path: &Path) -> Result<UnixListener, String> {
    check_ctl(path)?;
    let tmp = path.with_file_name(format!(".{}.ctl", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if let Ok(l) = UnixListener::bind(&tmp) {
        if std::fs::rename(&tmp, path).is_ok() {
            return Ok(l);
        }
        let _ = std::fs::remove_file(&tmp);
    }
    UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))
}

fn main() -> ExitCode {
    vswitch::vlog::init();
    // Sockets 0770 and files 0660 at most, whatever umask the daemon was started with.
    privdrop::restrict_umask();
    let args = match args::parse(std::env::args()) {
        Ok(Some(a)) => a,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            log(&e);
            return ExitCode::from(2);
        }
    };
    // Ports that own a socket (dpdkvhostuser) put it in the run directory, as OVS does.
    netdev::set_rundir(&args.rundir);
    for (what, dir) in [("rundir", &args.rundir), ("dbdir", &args.dbdir)] {
        if let Err(e) = std::fs::create_dir_all(dir) {
            log(&format!(
                "cannot create {what} {}: {e} (choose another with --{what})",
                dir.display()
            ));
            return ExitCode::FAILURE;
        }
    }
    if let Some(f) = &args.log_file {
        if let Err(e) = daemonize::log_to(f) {
            log(&e);
            return ExitCode::FAILURE;
        }
    }
    // Forks first, while the process has a single thread.
    let mut ready = if args.detach {
        match daemonize::detach() {
            Ok(r) => r,
            Err(e) => {
                log(&e);
                return ExitCode::FAILURE;
            }
        }
    } else {
        daemonize::Ready::none()
    };
    if args.monitor {
        if let Err(e) = daemonize::monitor(args.detach) {
            log(&e);
            return ExitCode::FAILURE;
        }
    }
    match run(&args, &mut ready) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log(&e);
            ExitCode::FAILURE
        }
    }
}

/// Becomes `spec`'s user (keeping the capabilities in `privdrop::KEPT`) after handing it
/// the run and database directories, the database and the log file.
fn drop_privileges(args: &args::Args, spec: &str) -> Result<(), String> {
    let id = privdrop::resolve(spec)?;
    let db = args.dbdir.join("conf.db");
    let mut owned: Vec<&Path> = vec![&args.rundir, &args.dbdir];
    if db.exists() {
        owned.push(&db);
    }
    if let Some(f) = &args.log_file {
        owned.push(f);
    }
    privdrop::become_user(&id, &owned)?;
    let caps: Vec<String> = privdrop::KEPT.iter().map(|c| c.to_string()).collect();
    log(&format!(
        "running as {} (uid {}, gid {}) with {}",
        privdrop::user_name(id.uid).unwrap_or_else(|| id.user.clone()),
        id.uid,
        id.gid,
        caps.join(", ")
    ));
    Ok(())
}

/// SIGINT and SIGTERM send "signal" on `sig_tx`.
fn stop_on_signals(sig_tx: crossbeam_channel::Sender<&'static str>) -> Result<(), String> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = sig_tx.send("signal");
        }
    });
    Ok(())
}

/// Load measurement and automatic rebalancing of receive queues, once a second while the
/// datapath lives.
fn spawn_auto_lb(pmd: &Arc<Datapath>) {
    let weak = Arc::downgrade(pmd);
    std::thread::Builder::new()
        .name("pmd-lb".into())
        .spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let Some(dp) = weak.upgrade() else { return };
            match dp.tick() {
                Ok(true) => log("pmd-auto-lb: receive queues reassigned"),
                Ok(false) => {}
                Err(e) => log(&format!("pmd-auto-lb: {e}")),
            }
        })
        .ok();
}

/// The database: the one named by `--db`, else the embedded server with its socket in the
/// run directory and the `--remote`s.
fn db_mode(args: &args::Args) -> vswitch::DbMode {
    match &args.db {
        Some(t) => vswitch::DbMode::External(t.clone()),
        None => {
            let mut remotes = vec![format!("punix:{}", args.rundir.join("db.sock").display())];
            remotes.extend(args.remotes.iter().cloned());
            vswitch::DbMode::Embedded {
                path: args.dbdir.join("conf.db"),
                remotes,
                ssl: args.ssl.clone(),
            }
        }
    }
}

/// The daemon proper: everything after the forks.
fn run(args: &args::Args, ready: &mut daemonize::Ready) -> Result<(), String> {
    if let Some(spec) = &args.user {
        drop_privileges(args, spec)?;
    }
    policy::init(policy::Policy {
        rundir: args
            .rundir
            .canonicalize()
            .unwrap_or_else(|_| args.rundir.clone()),
        pcap_dir: args.pcap_dir.clone(),
    });
    let _pidfile = match &args.pidfile {
        Some(p) => Some(daemonize::Pidfile::create(p)?),
        None => None,
    };
    let ctl = args.unixctl.clone();
    check_ctl(&ctl)?;
    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<&'static str>(4);
    stop_on_signals(stop_tx.clone())?;

    // Warm the cycle-counter calibration before the poll thread needs it for reports.
    let _ = datapath::cycles::hz();
    // One unpinned poll thread until the database's pmd-cpu-mask says otherwise.
    let pmd = Arc::new(
        Datapath::new(&[None], args.pool)
            .map_err(|e| format!("cannot start the poll thread: {e}"))?,
    );
    spawn_auto_lb(&pmd);
    let ofconn = ofconn::ConnMgr::new(&args.rundir, Arc::clone(&pmd));
    let mode = db_mode(args);
    let of_sink = Arc::new(vswitch::ofbridge::ConnMgrSink(Arc::clone(&ofconn)));
    let vs = vswitch::Vswitch::start(Arc::clone(&pmd), &mode, of_sink)?;
    let daemon = Arc::new(commands::Daemon::new(
        Arc::clone(&pmd),
        stop_tx,
        Arc::clone(&ofconn),
        Arc::clone(&vs),
    ));
    // Weak: the daemon holds the vswitch that holds the exporter.
    let src = Arc::downgrade(&daemon);
    vs.metrics
        .set_source(Box::new(move |m: &str, p: &[String]| {
            src.upgrade()
                .ok_or_else(|| "the daemon is exiting".to_string())?
                .dispatch(m, p)
        }));
    // The control socket comes last: once it exists, the database and every bridge's
    // OpenFlow socket already listen (the first pass has been applied).
    if let Err(e) = vs.wait_applied(i64::MIN, std::time::Duration::from_secs(30)) {
        log(&format!("starting anyway: {e}"));
    }
    let listener = bind_ctl(&ctl)?;
    let _names =
        daemonize::OvsNames::create(&args.rundir, args.pidfile.as_deref(), &ctl, args.ovs_names);
    let d = Arc::clone(&daemon);
    std::thread::spawn(move || {
        unixctl::serve(listener, move |m, p| d.dispatch_reply(m, p));
    });
    log(&format!(
        "ready: control socket {}, pid {}",
        ctl.display(),
        std::process::id()
    ));
    ready.signal();
    if args.detach {
        daemonize::quiet_stderr();
    }

    let why = stop_rx.recv().unwrap_or("channel closed");
    log(&format!("exiting ({why})"));
    vs.stop();
    ofconn.shutdown();
    drop(ofconn);
    drop(daemon);
    match Arc::try_unwrap(pmd) {
        Ok(p) => p.shutdown(),
        Err(p) => {
            // A control connection still holds the handle: stop through calls instead.
            let _ = p.call_all(|sw| sw.shutdown());
        }
    }
    let _ = std::fs::remove_file(&ctl);
    Ok(())
}
