//! A small log-level registry, so `ovs-appctl vlog/list` and `vlog/set` work as users expect.
//!
//! What: a fixed set of modules (the parts of the daemon that log), each with one level per
//! destination (`console`, `syslog`, `file`, OVS's three). ferrovsd only writes to the console
//! (its stderr); the other two destinations are kept so that `vlog/set` specifications written
//! for ovs-vswitchd are accepted, and their levels are reported by `vlog/list`.
//!
//! Threads: levels live in atomics, so any thread may log or change levels without a lock;
//! a change is effective for the next message. Levels are ordered `off < emer < err < warn <
//! info < dbg`; a message is written when its level is at or below the console level of its
//! module.
//!
//! `vlog/set` takes words of the form `module[:destination[:level]]` in any order of the three
//! parts (each part is recognised by its value), with `ANY` for every module or destination,
//! as OVS's specification syntax does.

use std::sync::atomic::{AtomicU8, Ordering};

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

/// The modules that log.
pub const MODULES: &[&str] = &["bridge", "ovsdb", "reconfigure", "unixctl", "vswitchd"];

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

static REGISTRY: [Entry; 5] = [ENTRY, ENTRY, ENTRY, ENTRY, ENTRY];

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

/// Writes `msg` for `module` at `level` if the console level allows it.
pub fn log(module: &str, level: Level, msg: &str) {
    let Some(i) = module_index(module) else {
        eprintln!("ferrovsd: {msg}");
        return;
    };
    if level == Level::Off || level_from(REGISTRY[i].levels[0].load(Ordering::Relaxed)) < level {
        return;
    }
    eprintln!(
        "ferrovsd|{module}|{}|{msg}",
        LEVEL_NAMES[level as usize].to_ascii_lowercase()
    );
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
    s
}

/// `vlog/set SPEC...`: applies every specification or none (all are parsed first).
pub fn set(args: &[String]) -> Result<String, String> {
    if args.is_empty() {
        return Err("vlog/set needs a specification such as ANY:console:dbg".into());
    }
    let mut plan: Vec<(Vec<usize>, Vec<usize>, Level)> = Vec::new();
    for arg in args {
        for word in arg.split_whitespace() {
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
                } else if lower == "pattern" || lower.starts_with("pattern") {
                    return Err("log patterns are not supported by ferrovsd".into());
                } else {
                    return Err(format!(
                        "unknown module, destination or level '{part}' (modules: {})",
                        MODULES.join(", ")
                    ));
                }
            }
            plan.push((
                mods.unwrap_or_else(|| (0..MODULES.len()).collect()),
                dests.unwrap_or_else(|| (0..DESTS.len()).collect()),
                level.unwrap_or(Level::Dbg),
            ));
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
        assert!(list().contains("bridge"));
        let line = list()
            .lines()
            .find(|l| l.starts_with("bridge"))
            .map(str::to_string)
            .unwrap_or_default();
        assert!(line.contains("DBG"), "{line}");
        assert!(set(&["nosuch:dbg".to_string()]).is_err());
        set(&["bridge:console:info".to_string()]).expect("set");
    }
}
