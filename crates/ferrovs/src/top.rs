//! `ferrovs top`: a live view of the switch, refreshing in place, and `dump-ports --rate`.
//!
//! Every interval (`--interval SECS`, default 1) it samples the daemon's counters over the
//! control socket (see [`crate::rates`]) and shows, per port, packet and bit rates in each
//! direction, drops and errors per second, and per poll thread, packets per second, busy share,
//! cache hit rates, upcalls per second and cycles per packet. `q`, Esc or Ctrl-C quits. With
//! `--once` (or when standard output is not a terminal) it prints one text snapshot over one
//! interval instead, which is also what `dump-ports BR --rate` prints for one bridge.

use crate::rates::{self, PmdRate, PortRate, Sample};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::Frame;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Options of `top` and `dump-ports --rate`, from the verb's arguments.
struct Opts {
    interval: Duration,
    once: bool,
    bridges: Vec<String>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        interval: rates::INTERVAL,
        once: false,
        bridges: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--once" => o.once = true,
            "--rate" => {}
            "--interval" => {
                let s: f64 = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|s: &f64| (0.1..=3600.0).contains(s))
                    .ok_or("--interval needs seconds between 0.1 and 3600")?;
                o.interval = Duration::from_secs_f64(s);
            }
            x if x.starts_with('-') => return Err(format!("unknown option '{x}'")),
            br => o.bridges.push(br.to_string()),
        }
    }
    Ok(o)
}

fn caller(
    sock: &Path,
    timeout: Duration,
) -> impl FnMut(&str, &[String]) -> Result<String, String> + '_ {
    move |verb, args| match unixctl::call(sock, verb, args, timeout) {
        Ok(r) => r,
        Err(e) => Err(format!("{}: {e}", sock.display())),
    }
}

/// The text snapshot.
pub fn text(ports: &[PortRate], pmds: &[PmdRate], secs: f64) -> String {
    let mut s = format!("rates over {secs:.1} s\n");
    s.push_str(&format!(
        "{:<12} {:<16} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8}\n",
        "bridge", "port", "rx pkt/s", "rx bit/s", "tx pkt/s", "tx bit/s", "drop/s", "err/s"
    ));
    for p in ports {
        s.push_str(&format!(
            "{:<12} {:<16} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8}\n",
            p.bridge,
            p.port,
            rates::si(p.rx_pps),
            rates::si(p.rx_bps),
            rates::si(p.tx_pps),
            rates::si(p.tx_bps),
            rates::si(p.drops_ps),
            rates::si(p.errors_ps)
        ));
    }
    if !pmds.is_empty() {
        s.push_str(&format!(
            "\n{:<16} {:>10} {:>7} {:>7} {:>10} {:>10} {:>10}\n",
            "thread", "pkt/s", "busy%", "emc%", "megaflow%", "upcall/s", "cyc/pkt"
        ));
        for p in pmds {
            s.push_str(&format!(
                "{:<16} {:>10} {:>7.1} {:>7.1} {:>10.1} {:>10} {:>10.0}\n",
                p.name,
                rates::si(p.pps),
                p.busy_pct,
                p.emc_pct,
                p.megaflow_pct,
                rates::si(p.upcalls_ps),
                p.cycles_per_packet
            ));
        }
    }
    s
}

fn snapshot(sock: &Path, timeout: Duration, o: &Opts, with_pmds: bool) -> ExitCode {
    let mut call = caller(sock, timeout);
    let a = match rates::sample(&mut call, &o.bridges) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ferrovs: {e}");
            return ExitCode::from(2);
        }
    };
    std::thread::sleep(o.interval);
    let b = match rates::sample(&mut call, &o.bridges) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ferrovs: {e}");
            return ExitCode::from(2);
        }
    };
    let (ports, pmds) = rates::rates(&a, &b);
    let pmds = if with_pmds { pmds } else { Vec::new() };
    print!("{}", text(&ports, &pmds, o.interval.as_secs_f64()));
    ExitCode::SUCCESS
}

/// `ferrovs dump-ports BR --rate [--interval SECS]`.
pub fn dump_ports_rate(sock: &Path, timeout: Duration, args: &[String]) -> ExitCode {
    match parse(args) {
        Ok(o) if !o.bridges.is_empty() => snapshot(sock, timeout, &o, false),
        Ok(_) => {
            eprintln!("ferrovs: usage: dump-ports BR --rate [--interval SECS]");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("ferrovs: dump-ports: {e}");
            ExitCode::from(2)
        }
    }
}

fn draw(f: &mut Frame, title: &str, ports: &[PortRate], pmds: &[PmdRate], status: &str) {
    let [head, pt, mt, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(4),
        Constraint::Length(pmds.len() as u16 + 3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(Paragraph::new(title.to_string()), head);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let rows = ports.iter().map(|p| {
        Row::new(vec![
            p.bridge.clone(),
            p.port.clone(),
            rates::si(p.rx_pps),
            rates::si(p.rx_bps),
            rates::si(p.tx_pps),
            rates::si(p.tx_bps),
            rates::si(p.drops_ps),
            rates::si(p.errors_ps),
        ])
    });
    let w = [
        Constraint::Length(12),
        Constraint::Length(16),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    let t = Table::new(rows, w)
        .header(
            Row::new(vec![
                "bridge", "port", "rx pkt/s", "rx bit/s", "tx pkt/s", "tx bit/s", "drop/s", "err/s",
            ])
            .style(bold),
        )
        .block(Block::bordered().title(" ports "));
    f.render_widget(t, pt);
    let rows = pmds.iter().map(|p| {
        Row::new(vec![
            p.name.clone(),
            rates::si(p.pps),
            format!("{:.1}", p.busy_pct),
            format!("{:.1}", p.emc_pct),
            format!("{:.1}", p.megaflow_pct),
            rates::si(p.upcalls_ps),
            format!("{:.0}", p.cycles_per_packet),
        ])
    });
    let w = [
        Constraint::Length(16),
        Constraint::Length(10),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(10),
    ];
    let t = Table::new(rows, w)
        .header(
            Row::new(vec![
                "thread",
                "pkt/s",
                "busy%",
                "emc%",
                "megaflow%",
                "upcall/s",
                "cyc/pkt",
            ])
            .style(bold),
        )
        .block(Block::bordered().title(" poll threads "));
    f.render_widget(t, mt);
    f.render_widget(Paragraph::new(status.to_string()), foot);
}

/// `ferrovs top [BR...] [--interval SECS] [--once]`.
pub fn run(sock: &Path, timeout: Duration, args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ferrovs: top: {e}");
            return ExitCode::from(2);
        }
    };
    if o.once || !std::io::stdout().is_terminal() {
        return snapshot(sock, timeout, &o, true);
    }
    let mut call = caller(sock, timeout);
    let mut last: Option<Sample> = None;
    let (mut ports, mut pmds, mut status) = (Vec::new(), Vec::new(), String::new());
    let title = format!(
        "ferrovs top: {} every {:.1} s (q to quit)",
        sock.display(),
        o.interval.as_secs_f64()
    );
    let mut terminal = ratatui::init();
    let mut next = Instant::now();
    let code = loop {
        if Instant::now() >= next {
            next = Instant::now() + o.interval;
            match rates::sample(&mut call, &o.bridges) {
                Ok(s) => {
                    if let Some(l) = &last {
                        (ports, pmds) = rates::rates(l, &s);
                    }
                    status = if last.is_some() {
                        String::new()
                    } else {
                        "sampling...".into()
                    };
                    last = Some(s);
                }
                Err(e) => status = format!("error: {e}"),
            }
        }
        if let Err(e) = terminal.draw(|f| draw(f, &title, &ports, &pmds, &status)) {
            break Err(e.to_string());
        }
        let wait = next.saturating_duration_since(Instant::now());
        match event::poll(wait) {
            Ok(true) => match event::read() {
                Ok(Event::Key(k))
                    if k.code == KeyCode::Char('q')
                        || k.code == KeyCode::Esc
                        || (k.code == KeyCode::Char('c')
                            && k.modifiers.contains(KeyModifiers::CONTROL)) =>
                {
                    break Ok(())
                }
                Ok(_) => {}
                Err(e) => break Err(e.to_string()),
            },
            Ok(false) => {}
            Err(e) => break Err(e.to_string()),
        }
    };
    ratatui::restore();
    match code {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferrovs: top: {e}");
            ExitCode::from(1)
        }
    }
}
