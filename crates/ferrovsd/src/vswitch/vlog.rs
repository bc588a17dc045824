//! Logging as OVS does it: modules, levels per destination, `vlog/list`, `vlog/set`,
//! `vlog/reopen`, and OVS's timestamped line format.
//!
//! What: every crate logs through the `log` facade (`log::warn!(target: "ovsdb", ...)`); this
//! module is the daemon's logger. A record's *module* is the first `::` segment of its target
//! (the crate name by default), looked up in [`MODULES`]; unknown ones count as `vswitchd`.
//! Each module has one level per destination, OVS's three:
//! * `console` — the daemon's stderr (the terminal, or nothing once `--detach`ed);
//! * `file` — the `--log-file`, reopened by `vlog/reopen` after logrotate moves it;
//! * `syslog` — datagrams to `/dev/log` (facility daemon), skipped when there is none.
//!
//! Lines look like OVS's: `2026-11-24T20:53:12.345Z|00042|bridge|INFO|message` (UTC, a
//! sequence number, module, level, text); syslog gets `ferrovsd[PID]: module|LEVEL|message`.
//!
//! Threads: levels live in atomics, so any thread may log or change levels without a lock and
//! a change is effective for the next message; the file handle is behind a mutex taken only
//! to write one line. Levels are ordered `off < emer < err < warn < info < dbg`; a message goes
//! to each destination whose level for its module is at least the message's.
//!
//! `vlog/set` takes words of the form `module[:destination[:level]]` in any order of the three
//! parts (each part is recognised by its value), with `ANY` for every module or destination,
//! as OVS's specification syntax does.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Log levels, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off = 0,
    Emer = 1,
    Err = 2,
    Warn = 3,
    Info = 4,
    Dbg = 5,
}

const LEVEL_NAMES: [&str; 6] = ["OFF", "EMER", "ERR", "WARN", "INFO", "DBG"];
const DESTS: [&str; 3] = ["console", "syslog", "file"];
const CONSOLE: usize = 0;
const SYSLOG: usize = 1;
const FILE: usize = 2;

/// The modules that log (log targets' first segment).
pub const MODULES: &[&str] = &[
    "bridge",
    "datapath",
    "ipfix",
    "metrics",
    "netdev",
    "ofconn",
    "ovsdb",
    "reconfigure",
    "sflow",
    "unixctl",
    "vswitchd",
];

struct Entry {
    levels: [AtomicU8; 3],
}

#[allow(clippy::declare_interior_mutable_const)]
const ENTRY: Entry = Entry {
    levels: [
        AtomicU8::new(Level::Info as u8),
        AtomicU8::new(Level::Err as u8),
        AtomicU8::new(Level::Info as u8),
    ],
};

// One entry per module, however many `MODULES` lists.
static REGISTRY: [Entry; MODULES.len()] = [ENTRY; MODULES.len()];
static SEQ: AtomicU64 = AtomicU64::new(0);

struct Sinks {
    file: Mutex<Option<(PathBuf, File)>>,
    syslog: Mutex<Option<UnixDatagram>>,
}

fn sinks() -> &'static Sinks {
    static S: OnceLock<Sinks> = OnceLock::new();
    S.get_or_init(|| Sinks {
        file: Mutex::new(None),
        syslog: Mutex::new(None),
    })
}

fn level_from(n: u8) -> Level {
    match n {
        0 => Level::Off,
        1 => Level::Emer,
        2 => Level::Err,
        3 => Level::Warn,
        4 => Level::Info,
        _ => Level::Dbg,
    }
}

fn parse_level(s: &str) -> Option<Level> {
    Some(match s.to_ascii_lowercase().as_str() {
        "off" => Level::Off,
        "emer" => Level::Emer,
        "err" => Level::Err,
        "warn" => Level::Warn,
        "info" => Level::Info,
        "dbg" | "debug" => Level::Dbg,
        _ => return None,
    })
}

fn module_index(m: &str) -> Option<usize> {
    MODULES.iter().position(|x| *x == m)
}

/// The module of a log target: its first `::` segment, `vswitchd` when unknown.
fn module_of(target: &str) -> usize {
    let first = target.split("::").next().unwrap_or_default();
    module_index(first)
        .or_else(|| module_index("vswitchd"))
        .unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a time since the epoch (civil-from-days, proleptic
/// Gregorian calendar).
fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Writes one message to every destination whose level allows it.
pub fn log(module: &str, level: Level, msg: &str) {
    emit(module_of(module), level, msg);
}

fn emit(m: usize, level: Level, msg: &str) {
    if level == Level::Off {
        return;
    }
    let allowed = |d: usize| level_from(REGISTRY[m].levels[d].load(Ordering::Relaxed)) >= level;
    let (con, sys, file) = (allowed(CONSOLE), allowed(SYSLOG), allowed(FILE));
    if !(con || sys || file) {
        return;
    }
    let seq = SEQ.fetch_add(1, Ordering::Relaxed) + 1;
    let name = MODULES[m];
    let lvl = LEVEL_NAMES[level as usize];
    let line = format!(
        "{}|{seq:05}|{name}|{lvl}|{msg}\n",
        timestamp(SystemTime::now())
    );
    if con {
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
    if file {
        let mut f = sinks().file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = f.as_mut() {
            let _ = f.write_all(line.as_bytes());
        }
    }
    if sys {
        let sev = match level {
            Level::Emer => 0,
            Level::Err => 3,
            Level::Warn => 4,
            Level::Info => 6,
            _ => 7,
        };
        let text = format!(
            "<{}>ferrovsd[{}]: {name}|{lvl}|{msg}",
            3 * 8 + sev,
            std::process::id()
        );
        let mut s = sinks().syslog.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            *s = UnixDatagram::unbound()
                .ok()
                .filter(|d| d.connect("/dev/log").is_ok());
        }
        if let Some(d) = s.as_ref() {
            if d.send(text.as_bytes()).is_err() {
                *s = None;
            }
        }
    }
}

/// `info` for `module`.
pub fn info(module: &str, msg: &str) {
    log(module, Level::Info, msg);
}

/// `warn` for `module`.
pub fn warn(module: &str, msg: &str) {
    log(module, Level::Warn, msg);
}

/// `err` for `module`.
pub fn err(module: &str, msg: &str) {
    log(module, Level::Err, msg);
}

struct Logger;

impl log::Log for Logger {
    fn enabled(&self, md: &log::Metadata<'_>) -> bool {
        let m = module_of(md.target());
        let want = match md.level() {
            log::Level::Error => Level::Err,
            log::Level::Warn => Level::Warn,
            log::Level::Info => Level::Info,
            _ => Level::Dbg,
        };
        REGISTRY[m]
            .levels
            .iter()
            .any(|l| level_from(l.load(Ordering::Relaxed)) >= want)
    }

    fn log(&self, r: &log::Record<'_>) {
        let level = match r.level() {
            log::Level::Error => Level::Err,
            log::Level::Warn => Level::Warn,
            log::Level::Info => Level::Info,
            _ => Level::Dbg,
        };
        emit(module_of(r.target()), level, &r.args().to_string());
    }

    fn flush(&self) {}
}

/// Makes this the process's logger (for every crate's `log` macros) and sends panic
/// messages through it too. Call once, first thing.
pub fn init() {
    static LOGGER: Logger = Logger;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Trace);
    }
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        log("vswitchd", Level::Emer, &format!("thread '{name}' {info}"));
        prev(info);
    }));
}

fn open(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o640)
        .open(path)
        .map_err(|e| format!("log file {}: {e}", path.display()))
}

/// `--log-file`: the file destination writes to `path` from now on.
pub fn set_file(path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let f = open(path)?;
    *sinks().file.lock().unwrap_or_else(|e| e.into_inner()) = Some((path.to_path_buf(), f));
    Ok(())
}

/// `vlog/reopen`: reopens the log file (after logrotate moved it).
pub fn reopen() -> Result<String, String> {
    let mut g = sinks().file.lock().unwrap_or_else(|e| e.into_inner());
    let Some((path, f)) = g.as_mut() else {
        return Err("not logging to a file (start ferrovsd with --log-file)".into());
    };
    *f = open(path)?;
    Ok(String::new())
}

/// `vlog/list`.
pub fn list() -> String {
    let mut s = format!(
        "{:<18} {:>7} {:>9} {:>9}\n{:<18} {:>7} {:>9} {:>9}\n",
        "", "console", "syslog", "file", "", "-------", "------", "------"
    );
    for (i, m) in MODULES.iter().enumerate() {
        let l = |d: usize| LEVEL_NAMES[REGISTRY[i].levels[d].load(Ordering::Relaxed) as usize];
        s.push_str(&format!("{m:<18} {:>7} {:>9} {:>9}\n", l(0), l(1), l(2)));
    }
    if let Some((p, _)) = sinks()
        .file
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
    {
        s.push_str(&format!("\nLogging to file {}\n", p.display()));
    }
    s
}

/// One parsed `vlog/set` word: modules, destinations, level.
type Spec = (Vec<usize>, Vec<usize>, Level);

fn parse_word(word: &str) -> Result<Spec, String> {
    let mut mods: Option<Vec<usize>> = None;
    let mut dests: Option<Vec<usize>> = None;
    let mut level: Option<Level> = None;
    for part in word.split(':').filter(|p| !p.is_empty()) {
        let lower = part.to_ascii_lowercase();
        if lower == "any" {
            if mods.is_none() {
                mods = Some((0..MODULES.len()).collect());
            } else {
                dests = Some((0..DESTS.len()).collect());
            }
        } else if let Some(d) = DESTS.iter().position(|d| *d == lower) {
            dests = Some(vec![d]);
        } else if let Some(l) = parse_level(&lower) {
            level = Some(l);
        } else if let Some(m) = module_index(&lower) {
            mods = Some(vec![m]);
        } else if lower.starts_with("pattern") {
            return Err("log patterns are not supported by ferrovsd".into());
        } else {
            return Err(format!(
                "unknown module, destination or level '{part}' (modules: {})",
                MODULES.join(", ")
            ));
        }
    }
    Ok((
        mods.unwrap_or_else(|| (0..MODULES.len()).collect()),
        dests.unwrap_or_else(|| (0..DESTS.len()).collect()),
        level.unwrap_or(Level::Dbg),
    ))
}

/// `vlog/set SPEC...`: applies every specification or none (all are parsed first).
pub fn set(args: &[String]) -> Result<String, String> {
    if args.is_empty() {
        return Err("vlog/set needs a specification such as ANY:console:dbg".into());
    }
    let mut plan = Vec::new();
    for arg in args {
        for word in arg.split_whitespace() {
            plan.push(parse_word(word)?);
        }
    }
    for (mods, dests, level) in plan {
        for &m in &mods {
            for &d in &dests {
                REGISTRY[m].levels[d].store(level as u8, Ordering::Relaxed);
            }
        }
    }
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_list() {
        set(&["bridge:console:dbg".to_string()]).expect("set");
        let line = list()
            .lines()
            .find(|l| l.starts_with("bridge"))
            .map(str::to_string)
            .unwrap_or_default();
        assert!(line.contains("DBG"), "{line}");
        assert!(set(&["nosuch:dbg".to_string()]).is_err());
        set(&["bridge:console:info".to_string()]).expect("set");
    }

    #[test]
    fn timestamps_are_utc_civil_dates() {
        let t = |s: u64, ms: u64| {
            timestamp(UNIX_EPOCH + std::time::Duration::from_millis(s * 1000 + ms))
        };
        assert_eq!(t(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(t(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(t(1_795_554_000, 123), "2026-11-24T21:00:00.123Z");
    }

    #[test]
    fn targets_map_to_modules() {
        assert_eq!(MODULES[module_of("ovsdb::server")], "ovsdb");
        assert_eq!(MODULES[module_of("datapath")], "datapath");
        assert_eq!(MODULES[module_of("somewhere_else")], "vswitchd");
    }

    #[test]
    fn the_file_destination_gets_timestamped_lines_and_reopens() {
        let dir = std::env::temp_dir().join(format!("fvlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("x.log");
        set_file(&p).expect("file");
        info("metrics", "first line");
        std::fs::rename(&p, dir.join("x.log.1")).expect("rotate");
        reopen().expect("reopen");
        warn("metrics", "second line");
        let old = std::fs::read_to_string(dir.join("x.log.1")).expect("old");
        let new = std::fs::read_to_string(&p).expect("new");
        assert!(old.contains("|metrics|INFO|first line"), "{old}");
        assert!(new.contains("|metrics|WARN|second line"), "{new}");
        assert!(new.starts_with("20") && new.contains("Z|"), "{new}");
        *sinks().file.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
