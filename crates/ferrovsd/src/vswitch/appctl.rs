//! OVS's unixctl names for what ferrovs has, so `ovs-appctl -t <rundir>/ferrovsd.ctl` works
//! as it does against ovs-vswitchd: `vlog/list`, `vlog/set`, `dpif/show`,
//! `dpif-netdev/pmd-rxq-show`, `coverage/show`, `memory/show` (the other OVS names —
//! `dpctl/dump-flows`, `ofproto/trace`, `fdb/*`, `dpif-netdev/pmd-stats-*`, `list-commands`,
//! `version`, `exit` — are served by the daemon's command table).
//!
//! Coverage counters: a process-wide registry of named event counters ([`inc`]) the daemon's
//! control plane bumps (reconfiguration passes, database transactions, ports opened,
//! failures, unixctl commands), shown by `coverage/show` together with the datapath's counters
//! read from the poll thread (packets, fabric counters, and each module's own counters).
//! Counters are atomics behind a registration mutex taken only when a name is first seen.
//!
//! Every command reads the switch through one [`datapath::Datapath::call`]; none changes
//! forwarding state. `netdev-dummy/receive PORT HEX...` (OVS's name for the same) hands frames
//! to the fabric as if PORT had received them: the wire path (caches, upcalls) without a
//! network, for tests that compare it with ovs-vswitchd's dummy ports.

use super::vlog;
use datapath::udpif::Udpif;
use datapath::Datapath;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The commands this module serves: (name, usage).
pub const COMMANDS: &[(&str, &str)] = &[
    ("vlog/list", ""),
    ("vlog/set", "[SPEC...]"),
    ("dpif/show", ""),
    ("dpif-netdev/pmd-rxq-show", "[--json]"),
    ("dpif-netdev/pmd-rxq-rebalance", ""),
    ("coverage/show", ""),
    ("memory/show", ""),
    ("netdev-dummy/receive", "PORT HEX-FRAME..."),
];

/// Frames one `netdev-dummy/receive` may carry.
const RECEIVE_MAX_FRAMES: usize = 256;

type Registry = Mutex<BTreeMap<&'static str, Arc<AtomicU64>>>;

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Adds one to the coverage counter `name`.
pub fn inc(name: &'static str) {
    add(name, 1);
}

/// Adds `n` to the coverage counter `name`.
pub fn add(name: &'static str, n: u64) {
    let c = {
        let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
        r.entry(name).or_default().clone()
    };
    c.fetch_add(n, Ordering::Relaxed);
}

/// Whether `method` is one of ours.
pub fn has(method: &str) -> bool {
    COMMANDS.iter().any(|c| c.0 == method)
}

/// Runs one of [`COMMANDS`].
/// `ofs` is the OpenFlow state of each bridge running the openflow module, by name.
pub fn run(
    pmd: &Datapath,
    ofs: &BTreeMap<String, Arc<Udpif>>,
    method: &str,
    args: &[String],
    json: bool,
) -> Result<String, String> {
    match method {
        "vlog/list" => Ok(vlog::list()),
        "vlog/set" => vlog::set(args),
        "dpif/show" => dpif_show(pmd, ofs),
        "dpif-netdev/pmd-rxq-show" => Ok(crate::render::rxq_show(&pmd.rxq_report()?, json)),
        "dpif-netdev/pmd-rxq-rebalance" => rxq_rebalance(pmd),
        "coverage/show" => coverage_show(pmd, ofs),
        "memory/show" => memory_show(pmd, ofs),
        "netdev-dummy/receive" => receive(pmd, args),
        _ => Err(format!("\"{method}\" is not a valid command")),
    }
}

fn ofport_text(n: u32) -> String {
    if n == datapath::LOCAL_OFPORT {
        "65534".into()
    } else {
        n.to_string()
    }
}

fn dpif_show(pmd: &Datapath, ofs: &BTreeMap<String, Arc<Udpif>>) -> Result<String, String> {
    let received: u64 = pmd.call_all(|sw| sw.pmd.packets)?.into_iter().sum();
    let missed: u64 = ofs
        .values()
        .map(|u| u.stats.upcalls.load(Ordering::Relaxed))
        .sum();
    let mut bridges = pmd.call(|sw| sw.report())?;
    let hit = received.saturating_sub(missed);
    let mut s = format!("netdev@ferrovs: hit:{hit} missed:{missed}\n");
    bridges.sort_by(|a, b| a.name.cmp(&b.name));
    for b in &mut bridges {
        s.push_str(&format!("  {}:\n", b.name));
        b.ports.sort_by_key(|p| p.ofport);
        for p in &b.ports {
            s.push_str(&format!(
                "    {} {}/{}: ({})\n",
                p.name,
                ofport_text(p.ofport),
                p.slot,
                p.kind
            ));
        }
    }
    Ok(s)
}

/// Decodes one frame in hex (as `trace` takes it), at most a frame's worth.
fn hex_frame(h: &str) -> Result<Vec<u8>, String> {
    ofctl::verbs::hex_packet(h)
        .filter(|f| f.len() <= packet::MAX_FRAME)
        .ok_or_else(|| {
            format!(
                "'{}' is not a frame in hex",
                h.chars().take(32).collect::<String>()
            )
        })
}

fn receive(pmd: &Datapath, args: &[String]) -> Result<String, String> {
    let usage = || "usage: netdev-dummy/receive PORT HEX-FRAME...".to_string();
    let (port, hex) = args.split_first().ok_or_else(usage)?;
    if hex.is_empty() {
        return Err(usage());
    }
    if hex.len() > RECEIVE_MAX_FRAMES {
        return Err(format!("at most {RECEIVE_MAX_FRAMES} frames at a time"));
    }
    let frames = hex
        .iter()
        .map(|h| hex_frame(h))
        .collect::<Result<Vec<_>, _>>()?;
    let port = port.clone();
    pmd.call(move |sw| {
        let br = sw
            .port_owner(&port)
            .map(str::to_string)
            .ok_or_else(|| datapath::ModuleError::NoSuchPort(port.clone()))?;
        sw.inject(&br, &port, &frames)
    })??;
    Ok(String::new())
}

fn rxq_rebalance(pmd: &Datapath) -> Result<String, String> {
    pmd.rebalance()?;
    Ok("pmd rxq rebalance requested.\n".into())
}

fn coverage_show(pmd: &Datapath, ofs: &BTreeMap<String, Arc<Udpif>>) -> Result<String, String> {
    let mut rows: BTreeMap<String, u64> = registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(k, v)| (k.to_string(), v.load(Ordering::Relaxed)))
        .collect();
    let dp = pmd.call(|sw| {
        let mut m: BTreeMap<String, u64> = BTreeMap::new();
        m.insert("pmd_packets".into(), sw.pmd.packets);
        m.insert("pmd_iterations".into(), sw.pmd.iterations);
        m.insert("pmd_busy_iterations".into(), sw.pmd.busy_iterations);
        for b in sw.bridges() {
            let st = b.stats;
            for (k, v) in [
                ("fabric_module_drops", st.module_drops),
                ("fabric_flood_copies", st.flood_copies),
                ("fabric_copy_failures", st.copy_failures),
                ("fabric_stale_dest", st.stale_dest),
                ("fabric_tx_bursts", st.tx_bursts),
                ("fabric_tx_packets", st.tx_packets),
            ] {
                *m.entry(k.into()).or_default() += v;
            }
            for (k, v) in b.module.counters() {
                *m.entry(format!("{}_{k}", b.module.name())).or_default() += v;
            }
        }
        m
    })?;
    rows.extend(dp);
    for u in ofs.values() {
        let us = &u.stats;
        for (k, v) in [
            ("upcall_upcalls", &us.upcalls),
            ("upcall_xlates", &us.xlates),
            ("upcall_flows_installed", &us.installed),
            ("upcall_flow_limit_hits", &us.flow_limit_hits),
            ("revalidator_rounds", &us.rounds),
            ("revalidator_killed_idle", &us.killed_idle),
        ] {
            *rows.entry(k.into()).or_default() += v.load(Ordering::Relaxed);
        }
    }
    let mut s = String::from("Event coverage (totals since the daemon started):\n");
    let mut zero = 0;
    for (k, v) in &rows {
        if *v == 0 {
            zero += 1;
            continue;
        }
        s.push_str(&format!("{k:<32} total: {v}\n"));
    }
    s.push_str(&format!("{zero} events never hit\n"));
    Ok(s)
}

fn memory_show(pmd: &Datapath, ofs: &BTreeMap<String, Arc<Udpif>>) -> Result<String, String> {
    // The OpenFlow state is read here, on the caller's thread: the poll thread never waits
    // for its lock.
    let (mut rules, mut megaflows, mut queue) = (0usize, 0usize, 0usize);
    for u in ofs.values() {
        rules += u.of().tables().iter().map(|t| t.len()).sum::<usize>();
        megaflows += u.idx().len();
        queue += u.handling.load(Ordering::Relaxed);
    }
    Ok(pmd.call(move |sw| {
        let bridges = sw.bridges().len();
        let ports: usize = sw.bridges().iter().map(|b| b.port_count()).sum();
        format!(
            "bridges:{bridges} handler queue:{queue} megaflows:{megaflows} ports:{ports} \
             rules:{rules} pool free buffers:{}\n",
            sw.pool.available()
        )
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_in_hex_are_checked() {
        let f = "ffffffffffff0200000000010800";
        assert_eq!(hex_frame(f).map(|v| v.len()), Ok(14));
        let long = "00".repeat(10_000);
        for bad in [
            "",
            "abc",
            "zz",
            "ffffffffffff020000000001080",
            long.as_str(),
        ] {
            assert!(hex_frame(bad).is_err(), "{bad:.20}");
        }
        assert!(hex_frame("gg".repeat(14).as_str()).is_err());
    }
}
