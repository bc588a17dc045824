//! `ferrovsd`: the ferrovs daemon.
//!
//! Starts the poll-mode threads (one by default, one per core of `pmd-cpu-mask`), the embedded
//! OVSDB server (or a client of an external one), the OpenFlow connections of every bridge,
//! and a control socket at
//! `<rundir>/ferrovsd.ctl` speaking OVS's unixctl protocol, so both `ferrovs` and Debian's
//! `ovs-appctl -t <rundir>/ferrovsd.ctl` drive it. `SIGINT`/`SIGTERM` or the `exit` command
//! close every port (internal TAP devices disappear) and remove the socket and pidfile.

mod commands;
mod config;
mod metrics;
mod ofconn;
mod vswitch;

use datapath::Datapath;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Where sockets live when neither `--rundir` nor `FERROVS_RUNDIR` says otherwise.
pub const DEFAULT_RUNDIR: &str = "/run/ferrovs";

const USAGE: &str =
    "usage: ferrovsd [--rundir DIR] [--pool N] [--db unix:PATH|tcp:IP:PORT] [--remote R]...

  --rundir DIR   where the control socket and pidfile live
                 (default: $FERROVS_RUNDIR, else /run/ferrovs)
  --pool N       packet buffers in the poll thread's pool (default 16384)
  --db TARGET    use an external OVSDB server (e.g. OVS's ovsdb-server) instead of the
                 embedded database DIR/conf.db served on DIR/db.sock
  --remote R     also serve the embedded database on R (ptcp:PORT[:IP] or punix:PATH)
  -V, --version  print the version and exit";

fn log(msg: &str) {
    eprintln!("ferrovsd: {msg}");
}

struct Args {
    rundir: PathBuf,
    pool: usize,
    db: Option<String>,
    remotes: Vec<String>,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut rundir: Option<PathBuf> = std::env::var_os("FERROVS_RUNDIR").map(PathBuf::from);
    let mut pool = datapath::switch::DEFAULT_POOL;
    let mut db = None;
    let mut remotes = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rundir" => {
                rundir = Some(PathBuf::from(
                    it.next().ok_or("--rundir needs a directory")?,
                ))
            }
            "--pool" => {
                pool = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|n| (1024..=1 << 22).contains(n))
                    .ok_or("--pool needs a number of buffers in 1024..=4194304")?
            }
            "--db" => db = Some(it.next().ok_or("--db needs unix:PATH or tcp:IP:PORT")?),
            "--remote" => remotes.push(it.next().ok_or("--remote needs ptcp:PORT or punix:PATH")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            "-V" | "--version" => {
                println!("ferrovsd {}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    Ok(Some(Args {
        rundir: rundir.unwrap_or_else(|| PathBuf::from(DEFAULT_RUNDIR)),
        pool,
        db,
        remotes,
    }))
}

fn bind_ctl(path: &Path) -> Result<UnixListener, String> {
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
    UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            log(&e);
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&args.rundir) {
        log(&format!(
            "cannot create rundir {}: {e} (choose another with --rundir or FERROVS_RUNDIR)",
            args.rundir.display()
        ));
        return ExitCode::FAILURE;
    }
    let ctl = args.rundir.join("ferrovsd.ctl");
    let pidfile = args.rundir.join("ferrovsd.pid");
    let listener = match bind_ctl(&ctl) {
        Ok(l) => l,
        Err(e) => {
            log(&e);
            return ExitCode::FAILURE;
        }
    };
    let _ = std::fs::write(&pidfile, format!("{}\n", std::process::id()));

    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<&'static str>(4);
    let mut signals = match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ]) {
        Ok(s) => s,
        Err(e) => {
            log(&format!("cannot install signal handlers: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let sig_tx = stop_tx.clone();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = sig_tx.send("signal");
        }
    });

    // Warm the cycle-counter calibration before the poll thread needs it for reports.
    let _ = datapath::cycles::hz();
    // One unpinned poll thread until the database's pmd-cpu-mask says otherwise.
    let pmd = match Datapath::new(&[None], args.pool) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            log(&format!("cannot start the poll thread: {e}"));
            return ExitCode::FAILURE;
        }
    };
    // Load measurement and automatic rebalancing of receive queues.
    let weak = Arc::downgrade(&pmd);
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
    let ofconn = ofconn::ConnMgr::new(&args.rundir, Arc::clone(&pmd));
    let mode = match &args.db {
        Some(t) => vswitch::DbMode::External(t.clone()),
        None => {
            let mut remotes = vec![format!("punix:{}", args.rundir.join("db.sock").display())];
            remotes.extend(args.remotes.iter().cloned());
            vswitch::DbMode::Embedded {
                path: args.rundir.join("conf.db"),
                remotes,
            }
        }
    };
    let of_sink = Arc::new(vswitch::ofbridge::ConnMgrSink(Arc::clone(&ofconn)));
    let vs = match vswitch::Vswitch::start(Arc::clone(&pmd), &mode, of_sink) {
        Ok(v) => v,
        Err(e) => {
            log(&e);
            return ExitCode::FAILURE;
        }
    };
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
    let d = Arc::clone(&daemon);
    std::thread::spawn(move || {
        unixctl::serve(listener, move |m, p| d.dispatch(m, p));
    });
    log(&format!(
        "ready: control socket {}, pid {}",
        ctl.display(),
        std::process::id()
    ));

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
    let _ = std::fs::remove_file(&pidfile);
    ExitCode::SUCCESS
}
