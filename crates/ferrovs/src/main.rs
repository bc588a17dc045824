//! `ferrovs`: the command-line interface to a running `ferrovsd`.
//!
//! Every verb is sent as-is over the daemon's unixctl socket (the protocol `ovs-appctl`
//! speaks), so `ferrovs VERB ARGS...` and `ovs-appctl -t <rundir>/ferrovsd.ctl VERB ARGS...` do
//! the same thing. `ferrovs list-commands` asks the daemon what it knows.
//!
//! Exit status: 0 on success, 1 when the daemon reports an error (printed on stderr, naming
//! what was wrong), 2 when the daemon cannot be reached or the command line is malformed.

mod ofclient;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const DEFAULT_RUNDIR: &str = "/run/ferrovs";

const HELP: &str =
    "usage: ferrovs [--rundir DIR | -t SOCKET] [--timeout SECS] VERB [ARGS...] [--json]

Bridges and ports:
  add-br BR [module=openflow|learning|patch|tuple3] [mac-aging-time=S] [mac-table-size=N]
  del-br BR
  list-br
  set-bridge BR KEY=VALUE...
  add-port BR PORT [type=system|internal|pcap|null] [ofport=N] [tag=VID|trunks=VID,...]
                   [KEY=VALUE...]     (port options, e.g. rx_pcap=FILE infinite_rx=true)
  del-port [BR] PORT
  list-ports BR
  show [--json]
  dump-ports BR [--json]

OpenFlow (module openflow, the default; ovs-ofctl syntax):
  add-flow BR FLOW          add-flows BR FILE|-        mod-flows BR [--strict] FLOW
  del-flows BR [--strict] [FLOW]                       dump-flows BR [FLOW] [--json]
  dump-tables BR            mod-table BR TABLE drop|controller|continue
  add-group BR GROUP        mod-group BR GROUP         del-groups BR [group_id=N]
  dump-groups BR            insert-buckets BR GROUP    remove-buckets BR GROUP
  add-meter BR METER        mod-meter BR METER
  del-meters BR [meter=N]   dump-meters BR             trace BR FLOW [--json]

OpenFlow connections (ovs-ofctl BR opens DIR/BR.mgmt):
  set-controller BR TARGET...   (tcp:IP[:PORT] unix:PATH ptcp:[PORT][:IP] punix:PATH)
  del-controller BR             get-controller BR
  set-fail-mode BR secure|standalone                   get-fail-mode BR
  set-openflow BR KEY=VALUE...  (protocols=OpenFlow10,OpenFlow13,... inactivity_probe=MS
                                 max_backoff=MS controller_rate_limit=N
                                 controller_burst_limit=N datapath_id=HEX|auto)
  get-openflow BR
  snoop BR [--duration SECS]    print the messages on BR's OpenFlow connections
  monitor BR [--duration SECS]  print BR's packet-ins, flow-removed and port-status

Modules:
  fdb-show BR [--json]      fdb-flush BR      fdb-stats BR          (learning, openflow)
  patch-set BR FROM TO      patch-del BR FROM patch-show BR         (patch)
  tuple3-add BR PORT IP PROTO PORTNUM   tuple3-del BR PORT IP PROTO PORTNUM
  tuple3-uplink BR PORT|none            tuple3-show BR [--json]     (tuple3)

Poll threads:
  pmd-stats-show [--json]   pmd-stats-clear

Daemon:
  list-commands   version   exit

The daemon's socket is DIR/ferrovsd.ctl; DIR is --rundir, else $FERROVS_RUNDIR, else /run/ferrovs.";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rundir: Option<PathBuf> = std::env::var_os("FERROVS_RUNDIR").map(PathBuf::from);
    let mut target: Option<PathBuf> = None;
    let mut timeout = Duration::from_secs(30);
    // Global options come before the verb.
    while let Some(a) = args.first().cloned() {
        let take_value = |args: &mut Vec<String>| -> Option<String> {
            if args.len() >= 2 {
                args.remove(0);
                Some(args.remove(0))
            } else {
                None
            }
        };
        match a.as_str() {
            "--rundir" => match take_value(&mut args) {
                Some(v) => rundir = Some(PathBuf::from(v)),
                None => return fail_usage("--rundir needs a directory"),
            },
            "-t" | "--target" => match take_value(&mut args) {
                Some(v) => target = Some(PathBuf::from(v)),
                None => return fail_usage("--target needs a socket path"),
            },
            "--timeout" => match take_value(&mut args).and_then(|v| v.parse::<u64>().ok()) {
                Some(s) if s > 0 => timeout = Duration::from_secs(s),
                _ => return fail_usage("--timeout needs a number of seconds"),
            },
            "-h" | "--help" => {
                println!("{HELP}");
                return ExitCode::SUCCESS;
            }
            "-V" | "--version" => {
                println!("ferrovs {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            _ => break,
        }
    }
    let Some(verb) = args.first().cloned() else {
        return fail_usage("missing command");
    };
    if verb.starts_with('-') {
        return fail_usage(&format!("unknown option '{verb}'"));
    }
    let mut params: Vec<String> = args[1..].to_vec();
    if verb == "snoop" || verb == "monitor" {
        let dir = rundir.unwrap_or_else(|| PathBuf::from(DEFAULT_RUNDIR));
        return ofclient::run(&dir, &verb, &params);
    }
    // Like ovs-ofctl, add-flows reads its file here ("-" for standard input) and sends
    // the lines.
    if verb == "add-flows" {
        if params.len() != 2 {
            return fail_usage("usage: add-flows BR FILE");
        }
        let path = params[1].clone();
        let text = if path == "-" {
            let mut s = String::new();
            match std::io::Read::read_to_string(&mut std::io::stdin(), &mut s) {
                Ok(_) => s,
                Err(e) => return fail_usage(&format!("add-flows: stdin: {e}")),
            }
        } else {
            match std::fs::read_to_string(&path) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("ferrovs: add-flows: {path}: {e}");
                    return ExitCode::from(1);
                }
            }
        };
        params.truncate(1);
        params.extend(text.lines().map(str::to_string));
    }
    let params = &params[..];
    let sock = target.unwrap_or_else(|| {
        rundir
            .unwrap_or_else(|| PathBuf::from(DEFAULT_RUNDIR))
            .join("ferrovsd.ctl")
    });
    match unixctl::call(&sock, &verb, params, timeout) {
        Ok(Ok(text)) => {
            print!("{text}");
            if !text.is_empty() && !text.ends_with('\n') {
                println!();
            }
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("ferrovs: {}", e.trim_end());
            ExitCode::from(1)
        }
        Err(e @ unixctl::CallError::Connect(_)) => {
            eprintln!("ferrovs: {}: {e} (is ferrovsd running?)", sock.display());
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("ferrovs: {}: {e}", sock.display());
            ExitCode::from(2)
        }
    }
}

fn fail_usage(msg: &str) -> ExitCode {
    eprintln!("ferrovs: {msg}\n(try 'ferrovs --help')");
    ExitCode::from(2)
}
