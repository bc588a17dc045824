//! The daemon's command line, with ovs-vswitchd's conventions where they apply.
//!
//! | option | meaning |
//! |---|---|
//! | `--rundir DIR` | sockets and pidfile (default `$FERROVS_RUNDIR`, else `/run/ferrovs`) |
//! | `--dbdir DIR` | the embedded database `conf.db` (default `/var/lib/ferrovs` when the rundir is `/run/ferrovs`, else the rundir, so a private instance keeps everything in one place) |
//! | `--db TARGET` | an external OVSDB server instead of the embedded one |
//! | `--remote R` | also serve the embedded database on `R` (`ptcp:`, `pssl:`, `punix:`) |
//! | `--private-key K`, `--certificate C`, `--ca-cert A` | the TLS files of `pssl:` remotes: file names, or `db:[DB,]TABLE,COLUMN` as ovsdb-server takes them |
//! | `--pool N` | packet buffers per poll thread |
//! | `--detach` | run in the background; the command returns once every socket listens |
//! | `--monitor` | a monitor process restarts the daemon when it crashes |
//! | `--pidfile[=FILE]` | where the locked pidfile goes (default `RUNDIR/ferrovsd.pid`; always written) |
//! | `--log-file[=FILE]` | log to a file (default `RUNDIR/ferrovsd.log`, or `/var/log/ferrovs/ferrovsd.log` with the default rundir) |
//! | `--unixctl=SOCKET` | the control socket (default `RUNDIR/ferrovsd.ctl`) |
//! | `--pcap-dir DIR` | pcap ports may read and write files in DIR (refused otherwise) |
//! | `--user USER[:GROUP]` | run as USER, keeping only network capabilities (see `privdrop.rs`) |
//! | `--ovs-names` | also answer to ovs-vswitchd's names (on by default in OVS's rundir) |
//!
//! OVS's `--pidfile` and `--log-file` take their value only after `=`; so do these.

use clap::{value_parser, Arg, ArgAction, Command};
use std::path::PathBuf;

/// Where sockets live when neither `--rundir` nor `FERROVS_RUNDIR` says otherwise.
pub const DEFAULT_RUNDIR: &str = "/run/ferrovs";
/// Where the database lives by default when the rundir is the default one.
pub const DEFAULT_DBDIR: &str = "/var/lib/ferrovs";
/// Where the log file goes by default when the rundir is the default one.
pub const DEFAULT_LOGDIR: &str = "/var/log/ferrovs";
/// OVS's run directories: with either, the daemon also answers to ovs-vswitchd's names.
pub const OVS_RUNDIRS: &[&str] = &["/var/run/openvswitch", "/run/openvswitch"];

/// What `--pidfile` or `--log-file` without `=FILE` stands for.
const DEFAULT_MARK: &str = "\u{1}default";

/// The parsed command line.
#[derive(Clone, Debug)]
pub struct Args {
    pub rundir: PathBuf,
    pub dbdir: PathBuf,
    pub pool: usize,
    pub db: Option<String>,
    pub remotes: Vec<String>,
    /// `--private-key`, `--certificate`, `--ca-cert`.
    pub ssl: crate::vswitch::ssl::SslOptions,
    pub detach: bool,
    pub monitor: bool,
    pub pidfile: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub unixctl: PathBuf,
    pub ovs_names: bool,
    pub pcap_dir: Option<PathBuf>,
    pub user: Option<String>,
}

fn command() -> Command {
    Command::new("ferrovsd")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The ferrovs switch daemon")
        .arg(Arg::new("rundir").long("rundir").value_name("DIR").value_parser(value_parser!(PathBuf))
            .help("where the sockets and pidfile live (default: $FERROVS_RUNDIR, else /run/ferrovs)"))
        .arg(Arg::new("dbdir").long("dbdir").value_name("DIR").value_parser(value_parser!(PathBuf))
            .help("where the embedded database conf.db lives (default: /var/lib/ferrovs with the default rundir, else the rundir)"))
        .arg(Arg::new("pool").long("pool").value_name("N")
            .value_parser(value_parser!(u64).range(1024..=(1 << 22)))
            .help("packet buffers in each poll thread's pool (default 16384)"))
        .arg(Arg::new("db").long("db").value_name("TARGET")
            .help("use an external OVSDB server (unix:PATH or tcp:IP:PORT) instead of the embedded database"))
        .arg(Arg::new("remote").long("remote").value_name("R").action(ArgAction::Append)
            .help("also serve the embedded database on R (ptcp:PORT[:IP], pssl:PORT[:IP] or punix:PATH)"))
        .arg(Arg::new("private-key").long("private-key").value_name("FILE")
            .help("the private key for pssl: remotes (a file, or db:[DB,]TABLE,COLUMN)"))
        .arg(Arg::new("certificate").long("certificate").value_name("FILE")
            .help("the certificate for pssl: remotes (a file, or db:[DB,]TABLE,COLUMN)"))
        .arg(Arg::new("ca-cert").long("ca-cert").value_name("FILE")
            .help("the CA certificate clients must chain to (a file, or db:[DB,]TABLE,COLUMN)"))
        .arg(Arg::new("detach").long("detach").action(ArgAction::SetTrue)
            .help("run in the background; return once every socket listens"))
        .arg(Arg::new("monitor").long("monitor").action(ArgAction::SetTrue)
            .help("restart the daemon if it crashes"))
        .arg(Arg::new("pidfile").long("pidfile").value_name("FILE").num_args(0..=1)
            .require_equals(true).default_missing_value(DEFAULT_MARK).value_parser(value_parser!(PathBuf))
            .help("where the locked pidfile goes (default RUNDIR/ferrovsd.pid)"))
        .arg(Arg::new("log-file").long("log-file").value_name("FILE").num_args(0..=1)
            .require_equals(true).default_missing_value(DEFAULT_MARK).value_parser(value_parser!(PathBuf))
            .help("log to FILE (default RUNDIR/ferrovsd.log, or /var/log/ferrovs/ferrovsd.log)"))
        .arg(Arg::new("unixctl").long("unixctl").value_name("SOCKET").value_parser(value_parser!(PathBuf))
            .help("the control socket (default RUNDIR/ferrovsd.ctl)"))
        .arg(Arg::new("pcap-dir").long("pcap-dir").value_name("DIR").value_parser(value_parser!(PathBuf))
            .help("allow pcap ports to read and write files in DIR (pcap ports are refused otherwise)"))
        .arg(Arg::new("user").long("user").value_name("USER[:GROUP]")
            .help("run as USER (and GROUP, else USER's group), keeping only the network capabilities a switch needs; the rundir and dbdir are handed to USER"))
        .arg(Arg::new("ovs-names").long("ovs-names").action(ArgAction::SetTrue)
            .help("also answer to ovs-vswitchd's pidfile and control socket names"))
}

/// Parses `argv`: `Ok(None)` when `--help` or `--version` was printed.
pub fn parse(argv: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let argv: Vec<String> = argv.into_iter().collect();
    // `ferrovsd --man`: the manual page (roff), generated from the options below, for
    // packaging. Not a daemon option, so not in `--help`.
    if argv.get(1).map(String::as_str) == Some("--man") && argv.len() == 2 {
        let mut out = Vec::new();
        clap_mangen::Man::new(command())
            .section("8")
            .render(&mut out)
            .map_err(|e| format!("--man: {e}"))?;
        print!("{}", String::from_utf8_lossy(&out));
        return Ok(None);
    }
    let m = match command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ok(None);
        }
        Err(e) => return Err(e.to_string().trim_end().to_string()),
    };
    let rundir = m
        .get_one::<PathBuf>("rundir")
        .cloned()
        .or_else(|| std::env::var_os("FERROVS_RUNDIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_RUNDIR));
    // The system instance keeps its database and log where they survive a reboot; any other
    // instance keeps everything in its own rundir.
    let default_dirs = rundir == std::path::Path::new(DEFAULT_RUNDIR);
    let dbdir = m.get_one::<PathBuf>("dbdir").cloned().unwrap_or_else(|| {
        if default_dirs {
            PathBuf::from(DEFAULT_DBDIR)
        } else {
            rundir.clone()
        }
    });
    let or_default = |key: &str, dflt: PathBuf| {
        m.get_one::<PathBuf>(key).map(|p| {
            if p.as_os_str() == DEFAULT_MARK {
                dflt
            } else {
                p.clone()
            }
        })
    };
    // Unlike ovs-vswitchd, the pidfile is on by default: `ovs-appctl -t ferrovsd` needs it.
    let pidfile = Some(
        or_default("pidfile", rundir.join("ferrovsd.pid"))
            .unwrap_or_else(|| rundir.join("ferrovsd.pid")),
    );
    let logdir = if default_dirs {
        PathBuf::from(DEFAULT_LOGDIR)
    } else {
        rundir.clone()
    };
    let log_file = or_default("log-file", logdir.join("ferrovsd.log"));
    let unixctl = m
        .get_one::<PathBuf>("unixctl")
        .cloned()
        .unwrap_or_else(|| rundir.join("ferrovsd.ctl"));
    let ovs_names = m.get_flag("ovs-names")
        || OVS_RUNDIRS
            .iter()
            .any(|d| rundir == std::path::Path::new(d));
    Ok(Some(Args {
        pool: m
            .get_one::<u64>("pool")
            .map(|n| *n as usize)
            .unwrap_or(datapath::pollset::DEFAULT_POOL),
        db: m.get_one::<String>("db").cloned(),
        remotes: m
            .get_many::<String>("remote")
            .map(|v| v.cloned().collect())
            .unwrap_or_default(),
        ssl: crate::vswitch::ssl::SslOptions {
            private_key: m.get_one::<String>("private-key").cloned(),
            certificate: m.get_one::<String>("certificate").cloned(),
            ca_cert: m.get_one::<String>("ca-cert").cloned(),
        },
        detach: m.get_flag("detach"),
        monitor: m.get_flag("monitor"),
        pidfile,
        log_file,
        unixctl,
        ovs_names,
        pcap_dir: m.get_one::<PathBuf>("pcap-dir").cloned(),
        user: m.get_one::<String>("user").cloned(),
        rundir,
        dbdir,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Args {
        parse(
            std::iter::once("ferrovsd")
                .chain(a.iter().copied())
                .map(String::from),
        )
        .expect("parses")
        .expect("not help")
    }

    #[test]
    fn defaults_follow_the_rundir() {
        let a = p(&["--rundir", "/tmp/x"]);
        assert_eq!(a.dbdir, PathBuf::from("/tmp/x"));
        assert_eq!(a.unixctl, PathBuf::from("/tmp/x/ferrovsd.ctl"));
        assert_eq!(a.pidfile, Some(PathBuf::from("/tmp/x/ferrovsd.pid")));
        assert!(a.log_file.is_none() && !a.detach);
        let a = p(&["--rundir", "/tmp/x", "--pidfile", "--log-file", "--detach"]);
        assert_eq!(a.pidfile, Some(PathBuf::from("/tmp/x/ferrovsd.pid")));
        assert_eq!(a.log_file, Some(PathBuf::from("/tmp/x/ferrovsd.log")));
        assert!(a.detach);
        let a = p(&[
            "--rundir",
            "/tmp/x",
            "--pidfile=/tmp/p.pid",
            "--dbdir",
            "/tmp/db",
        ]);
        assert_eq!(a.pidfile, Some(PathBuf::from("/tmp/p.pid")));
        assert_eq!(a.dbdir, PathBuf::from("/tmp/db"));
        assert!(p(&["--rundir", "/var/run/openvswitch"]).ovs_names);
        assert!(!p(&["--rundir", "/tmp/x"]).ovs_names);
        let sys = p(&["--rundir", "/run/ferrovs"]);
        assert_eq!(sys.dbdir, PathBuf::from("/var/lib/ferrovs"));
        assert_eq!(
            p(&["--rundir", "/run/ferrovs", "--log-file"]).log_file,
            Some(PathBuf::from("/var/log/ferrovs/ferrovsd.log"))
        );
    }

    #[test]
    fn bad_values_are_errors_naming_them() {
        let e = parse(["ferrovsd", "--pool", "5"].map(String::from)).expect_err("too small");
        assert!(e.contains("--pool"), "{e}");
        let e = parse(["ferrovsd", "--bogus"].map(String::from)).expect_err("unknown");
        assert!(e.contains("--bogus"), "{e}");
    }
}
