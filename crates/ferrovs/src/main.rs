//! `ferrovs`: the command-line interface to a running `ferrovsd`.
//!
//! Every verb is sent as-is over the daemon's unixctl socket (the protocol `ovs-appctl`
//! speaks), so `ferrovs VERB ARGS...` and `ovs-appctl -t <rundir>/ferrovsd.ctl VERB ARGS...` do
//! the same thing. `ferrovs list-commands` asks the daemon what it knows.
//!
//! Exit status: 0 on success, 1 when the daemon reports an error (printed on stderr, naming
//! what was wrong), 2 when the daemon cannot be reached or the command line is malformed.

mod addflows;
mod ofclient;
mod rates;
mod top;
mod verbs;

use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const DEFAULT_RUNDIR: &str = "/run/ferrovs";

const AFTER_HELP: &str =
    "Every verb is also an `ovs-appctl -t SOCKET` command; status verbs take --json. \
The daemon's socket is DIR/ferrovsd.ctl; DIR is --rundir, else $FERROVS_RUNDIR, else /run/ferrovs. \
Exit status: 0 on success, 1 when the daemon refuses the command, 2 when it cannot be reached \
or the command line is malformed. `ferrovs help VERB` shows one verb.";

/// The command line, built from the verb table: what parses arguments and what the help,
/// completions and man page are generated from.
fn cli() -> Command {
    let mut cmd = Command::new("ferrovs")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Command-line interface to a running ferrovsd (the ferrovs software switch)")
        .arg(
            Arg::new("rundir")
                .long("rundir")
                .value_name("DIR")
                .value_parser(value_parser!(PathBuf))
                .help("the daemon's run directory (default: $FERROVS_RUNDIR, else /run/ferrovs)"),
        )
        .arg(
            Arg::new("target")
                .short('t')
                .long("target")
                .value_name("SOCKET")
                .value_parser(value_parser!(PathBuf))
                .help("the daemon's control socket (default: DIR/ferrovsd.ctl)"),
        )
        .arg(
            Arg::new("timeout")
                .long("timeout")
                .value_name("SECS")
                .value_parser(value_parser!(u64).range(1..))
                .default_value("30")
                .help("give up on the daemon after this many seconds"),
        )
        .disable_help_flag(true)
        .arg(
            Arg::new("help")
                .short('h')
                .long("help")
                .action(ArgAction::SetTrue)
                .help("print the verbs by group (also: ferrovs help [VERB])"),
        )
        .allow_external_subcommands(true)
        .disable_help_subcommand(true)
        .after_help(AFTER_HELP);
    for v in verbs::VERBS {
        let mut sub = Command::new(v.name)
            .about(v.about)
            .override_usage(format!("ferrovs [OPTIONS] {} {}", v.name, v.args));
        if !v.args.is_empty() {
            sub = sub.arg(
                Arg::new("args")
                    .value_name("ARGS")
                    .num_args(0..)
                    .trailing_var_arg(true)
                    .allow_hyphen_values(true)
                    .action(ArgAction::Append)
                    .help(v.args),
            );
        }
        cmd = cmd.subcommand(sub);
    }
    cmd
}

/// The socket to talk to, from the parsed global options.
fn socket(m: &ArgMatches) -> PathBuf {
    if let Some(t) = m.get_one::<PathBuf>("target") {
        return t.clone();
    }
    rundir(m).join("ferrovsd.ctl")
}

fn rundir(m: &ArgMatches) -> PathBuf {
    m.get_one::<PathBuf>("rundir")
        .cloned()
        .or_else(|| std::env::var_os("FERROVS_RUNDIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_RUNDIR))
}

/// `ferrovs help`: the verbs by group, plus any the daemon has that the table lacks.
fn help_all(sock: &std::path::Path, timeout: Duration) -> String {
    let mut out = String::from(
        "usage: ferrovs [--rundir DIR | -t SOCKET] [--timeout SECS] VERB [ARGS...] [--json]\n",
    );
    let mut group = "";
    for v in verbs::VERBS {
        if v.group != group {
            group = v.group;
            out.push_str(&format!("\n{group}:\n"));
        }
        let line = format!("  {} {}", v.name, v.args);
        if line.len() < 44 {
            out.push_str(&format!("{line:<44} {}\n", v.about));
        } else {
            out.push_str(&format!("{line}\n{:<44} {}\n", "", v.about));
        }
    }
    // Verbs the daemon knows that this table does not (newer daemon, module verbs).
    if let Ok(Ok(text)) = unixctl::call(sock, "list-commands", &[], timeout) {
        let extra: Vec<&str> = text
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| {
                let name = l.split_whitespace().next().unwrap_or_default();
                !name.is_empty() && verbs::find(name).is_none()
            })
            .collect();
        if !extra.is_empty() {
            out.push_str("\nOther daemon commands:\n");
            for l in extra {
                out.push_str(&format!("  {l}\n"));
            }
        }
    }
    out.push('\n');
    out.push_str(AFTER_HELP);
    out.push('\n');
    out
}

/// `ferrovs help VERB`.
fn help_one(name: &str, sock: &std::path::Path, timeout: Duration) -> Result<String, String> {
    let mut cmd = cli();
    if let Some(sub) = cmd.find_subcommand_mut(name) {
        return Ok(sub.render_help().to_string());
    }
    // Not in the table: the daemon may know it.
    if let Ok(Ok(text)) = unixctl::call(sock, "list-commands", &[], timeout) {
        if let Some(l) = text
            .lines()
            .map(str::trim)
            .find(|l| l.split_whitespace().next() == Some(name))
        {
            return Ok(format!("usage: ferrovs [OPTIONS] {l}\n"));
        }
    }
    Err(format!("no verb '{name}' (try 'ferrovs help')"))
}

fn main() -> ExitCode {
    let m = match cli().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let timeout = Duration::from_secs(m.get_one::<u64>("timeout").copied().unwrap_or(30));
    let sock = socket(&m);
    if m.get_flag("help") {
        print!("{}", help_all(&sock, timeout));
        return ExitCode::SUCCESS;
    }
    let Some((verb, sub)) = m.subcommand() else {
        return fail_usage("missing command");
    };
    let params = verb_params(sub);
    if let Some(code) = local_verb(&m, verb, &params, &sock, timeout) {
        return code;
    }
    call_daemon(&sock, verb, &params, timeout)
}

/// A verb's arguments: a known verb's are "args"; a verb only the daemon knows (an external
/// subcommand) keeps them under the empty id.
fn verb_params(sub: &ArgMatches) -> Vec<String> {
    if let Ok(Some(v)) = sub.try_get_many::<String>("args") {
        v.cloned().collect()
    } else if let Ok(Some(v)) = sub.try_get_many::<std::ffi::OsString>("") {
        v.map(|s| s.to_string_lossy().into_owned()).collect()
    } else {
        Vec::new()
    }
}

/// Runs the verbs handled here rather than by the daemon's unixctl socket; `None` for the
/// others.
fn local_verb(
    m: &ArgMatches,
    verb: &str,
    params: &[String],
    sock: &Path,
    timeout: Duration,
) -> Option<ExitCode> {
    Some(match verb {
        "help" => help(params, sock, timeout),
        "completions" => completions(params),
        "top" => top::run(sock, timeout, params),
        "dump-ports" if params.iter().any(|p| p == "--rate") => {
            top::dump_ports_rate(sock, timeout, params)
        }
        "man" => man(),
        "snoop" | "monitor" => ofclient::run(&rundir(m), verb, params),
        "add-flows" => add_flows(m, params, timeout),
        _ => return None,
    })
}

/// `help [VERB]`.
fn help(params: &[String], sock: &Path, timeout: Duration) -> ExitCode {
    match params.first() {
        None => {
            print!("{}", help_all(sock, timeout));
            ExitCode::SUCCESS
        }
        Some(name) => match help_one(name, sock, timeout) {
            Ok(t) => {
                print!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => fail_usage(&e),
        },
    }
}

/// `completions bash|zsh|fish`.
fn completions(params: &[String]) -> ExitCode {
    let shell = match params.first().map(String::as_str) {
        Some("bash") => clap_complete::Shell::Bash,
        Some("zsh") => clap_complete::Shell::Zsh,
        Some("fish") => clap_complete::Shell::Fish,
        _ => return fail_usage("usage: completions bash|zsh|fish"),
    };
    clap_complete::generate(shell, &mut cli(), "ferrovs", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// `man`: the manual page, from the command table.
fn man() -> ExitCode {
    match clap_mangen::Man::new(cli()).render(&mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferrovs: man: {e}");
            ExitCode::from(1)
        }
    }
}

/// Like `ovs-ofctl --bundle add-flows`: the file is read and parsed here and sent as one
/// OpenFlow bundle over the bridge's management socket, so any size works.
fn add_flows(m: &ArgMatches, params: &[String], timeout: Duration) -> ExitCode {
    let [br, path] = params else {
        return fail_usage("usage: add-flows BR FILE|-");
    };
    let dir = match (
        m.get_one::<PathBuf>("rundir"),
        m.get_one::<PathBuf>("target"),
    ) {
        (None, Some(t)) => t.parent().map(PathBuf::from).unwrap_or_else(|| rundir(m)),
        _ => rundir(m),
    };
    addflows::run(&dir, br, path, timeout)
}

/// Sends the verb to the daemon and prints the reply as it arrives (a dump of a million
/// flows is never held whole).
fn call_daemon(sock: &Path, verb: &str, params: &[String], timeout: Duration) -> ExitCode {
    let mut out = Tail::new(std::io::stdout().lock());
    let r = unixctl::call_to(sock, verb, params, timeout, &mut out);
    let _ = out.finish();
    match r {
        Ok(unixctl::Outcome::Ok) => ExitCode::SUCCESS,
        Ok(unixctl::Outcome::Err(e)) => {
            eprintln!("ferrovs: {}", e.trim_end());
            ExitCode::from(1)
        }
        // A reader that went away (`| head`) ends us as it would any filter: quietly.
        Err(unixctl::CallError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(141)
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

/// Standard output that remembers whether what it wrote ends a line, so the reply can be
/// finished with one.
struct Tail<W: Write> {
    w: std::io::BufWriter<W>,
    open_line: bool,
}

impl<W: Write> Tail<W> {
    fn new(w: W) -> Self {
        Tail {
            w: std::io::BufWriter::with_capacity(1 << 16, w),
            open_line: false,
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.open_line {
            self.w.write_all(b"\n")?;
            self.open_line = false;
        }
        self.w.flush()
    }
}

impl<W: Write> Write for Tail<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(b)?;
        if let Some(last) = b[..n].last() {
            self.open_line = *last != b'\n';
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

fn fail_usage(msg: &str) -> ExitCode {
    eprintln!("ferrovs: {msg}\n(try 'ferrovs help')");
    ExitCode::from(2)
}
