//! `ferrovs-pktgen`: a traffic generator and sink in the spirit of netmap's `pkt-gen`, on
//! ferrovs's own port providers.
//!
//! ## Why on ferrovs's ports
//! The generator opens its interface with `netdev::open`, exactly as the switch opens its
//! ports, so every port type the switch gains (`system` AF_PACKET rings, `afxdp`, and `memif`
//! shared-memory ports as a client: `-t memif -o socket=PATH -o id=N -o role=client`) is a
//! generator back end for free, and generator and switch pay the same I/O costs. It runs on
//! one thread; pin it with `taskset`. Ports that connect in the background (memif) are given
//! `--link-wait` seconds to come up before the run starts.
//!
//! ## Modes
//! * `tx`: floods valid Ethernet/IPv4/UDP frames ([`frame`]) of `--size` bytes across
//!   `--flows` flows, as fast as the port takes them or at `--rate` packets per second
//!   ([`rate`]), for `--duration` seconds or `--count` frames.
//! * `rx`: counts what arrives, and how much of it carries our probe.
//! * `txrx`: both in one loop, on one interface or on `--rx-iface`, and measures latency from
//!   the transmit time each frame carries ([`latency`]).
//!
//! Every second a line gives packets and bits per second; at the end a summary, or with
//! `--json` one JSON object on stdout (the per-second lines then go to stderr). The loop
//! itself is in [`run`]; this file only turns the command line into its inputs. Exit status:
//! 0 after a run, 1 when a port cannot be opened or the arguments make no sense, 2 for usage
//! errors.

mod frame;
mod latency;
mod rate;
mod run;

use clap::{Parser, ValueEnum};
use frame::{FrameGen, FrameSpec, Vary};
use netdev::Options;
use run::{Mode, Outcome, Ports, RunCfg};
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeArg {
    /// Transmit only.
    Tx,
    /// Receive only.
    Rx,
    /// Transmit and receive in one loop, measuring latency.
    Txrx,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum VaryArg {
    /// UDP source port.
    Sport,
    /// Destination IP.
    Dip,
    /// Both.
    Both,
}

/// Traffic generator and sink on ferrovs port providers (system, afxdp, ...).
#[derive(Parser, Debug)]
#[command(name = "ferrovs-pktgen", version)]
struct Cli {
    /// tx, rx or txrx.
    #[arg(value_enum)]
    mode: ModeArg,

    /// Interface to transmit on (and to receive on, unless --rx-iface).
    #[arg(short = 'i', long)]
    iface: String,

    /// Port type for the interface(s): system (AF_PACKET), afxdp, ...
    #[arg(short = 't', long = "type", default_value = "system")]
    kind: String,

    /// Port option KEY=VALUE (repeatable), e.g. -o xdp-mode=native -o n_rxq=1.
    #[arg(short = 'o', long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,

    /// txrx: receive on this interface instead of --iface (same type and options, except
    /// those given with --rx-option).
    #[arg(long)]
    rx_iface: Option<String>,

    /// Option KEY=VALUE for --rx-iface only, replacing the -o one (repeatable), e.g. a
    /// memif port's -o id=1.
    #[arg(long = "rx-option", value_name = "KEY=VALUE")]
    rx_options: Vec<String>,

    /// Seconds to wait for the ports' links to come up (memif ports connect in the
    /// background) before starting.
    #[arg(long, default_value_t = 10.0)]
    link_wait: f64,

    /// Frame size in bytes including the 4-byte FCS (64..=1518); the port gets size-4 bytes.
    #[arg(short = 's', long, default_value_t = 64,
          value_parser = clap::value_parser!(u16).range(64..=1518))]
    size: u16,

    /// Number of flows (1..=1048576).
    #[arg(short = 'f', long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    flows: u32,

    /// Which fields vary between flows.
    #[arg(long, value_enum, default_value = "both")]
    vary: VaryArg,

    /// Packets per second, 0 = as fast as possible.
    #[arg(short = 'r', long, default_value_t = 0)]
    rate: u64,

    /// Seconds to run (fractions allowed); 0 = until Ctrl-C or --count.
    #[arg(short = 'd', long, default_value_t = 10.0)]
    duration: f64,

    /// Stop after this many frames sent (tx, txrx) or received (rx); 0 = no limit.
    #[arg(short = 'n', long, default_value_t = 0)]
    count: u64,

    /// Frames per transmit batch (1..=256).
    #[arg(short = 'b', long, default_value_t = 32,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    batch: u16,

    /// Source MAC (default: the interface's own).
    #[arg(long)]
    src_mac: Option<String>,

    /// Destination MAC.
    #[arg(long, default_value = "ff:ff:ff:ff:ff:ff")]
    dst_mac: String,

    /// Source IPv4 address.
    #[arg(long, default_value = "10.0.0.1")]
    src_ip: Ipv4Addr,

    /// Destination IPv4 address of flow 0 (flow i: +i when --vary dip|both).
    #[arg(long, default_value = "10.0.0.2")]
    dst_ip: Ipv4Addr,

    /// UDP source port of flow 0 (flow i: +i when --vary sport|both).
    #[arg(long, default_value_t = 1024)]
    sport: u16,

    /// UDP destination port.
    #[arg(long, default_value_t = 5001)]
    dport: u16,

    /// rx: stop after this many seconds without a frame, once one has arrived.
    #[arg(long)]
    idle_timeout: Option<f64>,

    /// txrx: milliseconds to keep receiving after transmission stops.
    #[arg(long, default_value_t = 200)]
    drain_ms: u64,

    /// Print the summary as one JSON object on stdout (per-second lines go to stderr).
    #[arg(long)]
    json: bool,

    /// No per-second lines.
    #[arg(short = 'q', long)]
    quiet: bool,
}

fn parse_options(list: &[String]) -> Result<Options, String> {
    let mut o = Options::new();
    for kv in list {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                o.insert(k.to_string(), v.to_string());
            }
            _ => return Err(format!("option '{kv}' is not KEY=VALUE")),
        }
    }
    Ok(o)
}

fn secs(v: f64, what: &str) -> Result<Option<Duration>, String> {
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err(format!("{what} {v} is not a number of seconds"));
    }
    Ok((v > 0.0).then(|| Duration::from_secs_f64(v)))
}

fn real_main(cli: Cli) -> Result<(), String> {
    let mode = match cli.mode {
        ModeArg::Tx => Mode::Tx,
        ModeArg::Rx => Mode::Rx,
        ModeArg::Txrx => Mode::TxRx,
    };
    if cli.rx_iface.is_some() && mode != Mode::TxRx {
        return Err("--rx-iface only makes sense with txrx".into());
    }
    let opts = parse_options(&cli.options)?;
    let mut rx_opts = opts.clone();
    rx_opts.extend(parse_options(&cli.rx_options)?);
    if !cli.rx_options.is_empty() && cli.rx_iface.is_none() {
        return Err("--rx-option needs --rx-iface".into());
    }
    let cfg = run_cfg(&cli, mode)?;
    // Open the ports first: the default source MAC is the interface's.
    let mut ports = open_ports(&cli, mode, &opts, &rx_opts)?;
    wait_for_links(
        &ports.ports,
        secs(cli.link_wait, "--link-wait")?.unwrap_or_default(),
    );
    let spec = frame_spec(&cli, &ports)?;
    let gen = FrameGen::new(&spec).map_err(|e| e.to_string())?;
    let stop = stop_on_signals()?;
    announce(&cli, mode, ports.rx);

    let outcome = run::run(&cfg, &gen, &mut ports, &stop);
    for p in ports.ports.iter_mut() {
        p.close();
    }
    print_summary(&cli, &cfg, &spec, &gen, &outcome);
    Ok(())
}

/// The loop's parameters from the command line.
fn run_cfg(cli: &Cli, mode: Mode) -> Result<RunCfg, String> {
    let duration = secs(cli.duration, "--duration")?;
    let idle_timeout = match cli.idle_timeout {
        Some(v) => secs(v, "--idle-timeout")?,
        None => None,
    };
    Ok(RunCfg {
        mode,
        batch: usize::from(cli.batch),
        rate: cli.rate,
        duration,
        count: cli.count,
        idle_timeout,
        drain: Duration::from_millis(cli.drain_ms),
        report: !cli.quiet,
        report_to_stderr: cli.json,
        size: usize::from(cli.size),
    })
}

/// Opens `--iface` and, if it is another interface, `--rx-iface`.
fn open_ports(cli: &Cli, mode: Mode, opts: &Options, rx_opts: &Options) -> Result<Ports, String> {
    let mut list = Vec::new();
    let open = |name: &str, opts: &Options| {
        netdev::open(name, &cli.kind, opts).map_err(|e| format!("{name} ({}): {e}", cli.kind))
    };
    list.push(open(&cli.iface, opts)?);
    let rx_idx = match (&cli.rx_iface, mode) {
        (_, Mode::Tx) => None,
        (Some(r), _) if *r != cli.iface => {
            list.push(open(r, rx_opts)?);
            Some(1)
        }
        _ => Some(0),
    };
    Ok(Ports {
        ports: list,
        tx: (mode != Mode::Rx).then_some(0),
        rx: rx_idx,
    })
}

/// Waits up to `limit` for every port's link to come up (memif ports connect in the
/// background); starts anyway after that, with a warning.
fn wait_for_links(ports: &[Box<dyn netdev::Port>], limit: Duration) {
    let t0 = std::time::Instant::now();
    while ports
        .iter()
        .any(|p| p.link_state() == netdev::LinkState::Down)
    {
        if t0.elapsed() >= limit {
            eprintln!("ferrovs-pktgen: link still down after {limit:?}; starting anyway");
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The frames to send; the source MAC defaults to the transmit interface's.
fn frame_spec(cli: &Cli, ports: &Ports) -> Result<FrameSpec, String> {
    let src_mac = match &cli.src_mac {
        Some(m) => frame::parse_mac(m)?,
        None => ports.ports[0].mac().unwrap_or([0x02, 0, 0, 0, 0, 0x01]),
    };
    Ok(FrameSpec {
        size: usize::from(cli.size),
        src_mac,
        dst_mac: frame::parse_mac(&cli.dst_mac)?,
        src_ip: cli.src_ip.octets(),
        dst_ip: cli.dst_ip.octets(),
        sport: cli.sport,
        dport: cli.dport,
        flows: cli.flows as usize,
        vary: match cli.vary {
            VaryArg::Sport => Vary::Sport,
            VaryArg::Dip => Vary::Dip,
            VaryArg::Both => Vary::Both,
        },
    })
}

/// The flag SIGINT and SIGTERM set, which the loop polls.
fn stop_on_signals() -> Result<Arc<AtomicBool>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| format!("cannot install a signal handler: {e}"))?;
    }
    Ok(stop)
}

fn rx_name(cli: &Cli) -> String {
    cli.rx_iface.clone().unwrap_or_else(|| cli.iface.clone())
}

/// The line on stderr that says what the run does.
fn announce(cli: &Cli, mode: Mode, rx_idx: Option<usize>) {
    eprintln!(
        "ferrovs-pktgen: {} on {}{} ({}), {} B frames, {} flow(s), rate {}",
        mode.as_str(),
        cli.iface,
        if rx_idx == Some(1) {
            format!(" -> {}", rx_name(cli))
        } else {
            String::new()
        },
        cli.kind,
        cli.size,
        cli.flows,
        if cli.rate == 0 {
            "unlimited".to_string()
        } else {
            format!("{} pps", cli.rate)
        }
    );
}

/// The summary on stdout: text, or with `--json` one object.
fn print_summary(cli: &Cli, cfg: &RunCfg, spec: &FrameSpec, gen: &FrameGen, outcome: &Outcome) {
    if !cli.json {
        print!("{}", run::summary_text(outcome, cfg));
        return;
    }
    let mode = cfg.mode;
    let head = serde_json::json!({
        "mode": mode.as_str(),
        "iface": cli.iface,
        "rx_iface": if mode == Mode::Tx { serde_json::Value::Null } else { rx_name(cli).into() },
        "type": cli.kind,
        "size": cli.size,
        "frame_len": gen.frame_len(),
        "flows": cli.flows,
        "vary": spec.vary.as_str(),
        "batch": cli.batch,
        "rate_limit_pps": cli.rate,
        "src_mac": frame::fmt_mac(&spec.src_mac),
        "dst_mac": frame::fmt_mac(&spec.dst_mac),
        "src_ip": cli.src_ip.to_string(),
        "dst_ip": cli.dst_ip.to_string(),
    });
    println!("{}", run::summary_json(outcome, cfg, head));
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferrovs-pktgen: {e}");
            ExitCode::from(1)
        }
    }
}
