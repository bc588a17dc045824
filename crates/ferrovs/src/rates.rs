//! Rates from counters: what `ferrovs top` and `dump-ports --rate` show.
//!
//! The daemon keeps only cumulative counters (as OVS does); a rate is the difference of two
//! samples over the time between them. A [`Sample`] is one reading of every bridge's ports
//! (`dump-ports BR --json`) and of every poll thread (`pmd-stats-show --json`); [`rates`]
//! turns two samples into per-port and per-thread rates. A counter that went backwards (a port
//! re-created, `pmd-stats-clear`) gives no rate for that interval rather than a huge one.
//! Everything here is pure: the sampling is a closure, so tests feed it canned replies.

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One port's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PortCounters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
    pub errors: u64,
}

/// One poll thread's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PmdCounters {
    pub packets: u64,
    pub emc_hits: u64,
    pub megaflow_hits: u64,
    pub upcalls: u64,
    pub processing_cycles: u64,
    pub tsc_hz: u64,
}

/// Every counter at one moment.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub at: Option<Instant>,
    /// (bridge, port) -> counters.
    pub ports: BTreeMap<(String, String), PortCounters>,
    /// Poll thread name -> counters.
    pub pmds: BTreeMap<String, PmdCounters>,
}

fn u(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

impl Sample {
    /// Adds a bridge's `dump-ports --json` reply.
    pub fn add_ports(&mut self, reply: &Value) {
        let br = reply
            .get("bridge")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        for p in reply
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = p
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            self.ports.insert(
                (br.clone(), name),
                PortCounters {
                    rx_packets: u(p, "rx_packets"),
                    rx_bytes: u(p, "rx_bytes"),
                    rx_dropped: u(p, "rx_dropped"),
                    tx_packets: u(p, "tx_packets"),
                    tx_bytes: u(p, "tx_bytes"),
                    tx_dropped: u(p, "tx_dropped"),
                    errors: u(p, "rx_errors") + u(p, "tx_errors"),
                },
            );
        }
    }

    /// Adds the `pmd-stats-show --json` reply.
    pub fn add_pmds(&mut self, reply: &Value) {
        for (i, p) in reply
            .get("pmds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let name = match p.get("core_id").and_then(Value::as_u64) {
                Some(c) => format!("pmd core {c}"),
                None => format!("pmd {i}"),
            };
            self.pmds.insert(
                name,
                PmdCounters {
                    packets: u(p, "packets_received"),
                    emc_hits: u(p, "emc_hits"),
                    megaflow_hits: u(p, "megaflow_hits"),
                    upcalls: u(p, "miss_with_success_upcall") + u(p, "miss_with_failed_upcall"),
                    processing_cycles: u(p, "processing_cycles"),
                    tsc_hz: u(p, "tsc_hz"),
                },
            );
        }
    }
}

/// One port's rates over an interval (per second).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PortRate {
    pub bridge: String,
    pub port: String,
    pub rx_pps: f64,
    pub rx_bps: f64,
    pub tx_pps: f64,
    pub tx_bps: f64,
    pub drops_ps: f64,
    pub errors_ps: f64,
}

/// One poll thread's rates over an interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PmdRate {
    pub name: String,
    pub pps: f64,
    /// Share of the interval spent processing packets, in percent.
    pub busy_pct: f64,
    /// Exact-match and megaflow cache hits as a share of packets, in percent.
    pub emc_pct: f64,
    pub megaflow_pct: f64,
    pub upcalls_ps: f64,
    pub cycles_per_packet: f64,
}

fn d(a: u64, b: u64) -> Option<f64> {
    b.checked_sub(a).map(|x| x as f64)
}

/// Rates between `old` and `new`; entries present in only one of them, or whose counters
/// went backwards, are left out.
pub fn rates(old: &Sample, new: &Sample) -> (Vec<PortRate>, Vec<PmdRate>) {
    let secs = match (old.at, new.at) {
        (Some(a), Some(b)) if b > a => (b - a).as_secs_f64(),
        _ => return (Vec::new(), Vec::new()),
    };
    let mut ports = Vec::new();
    for ((br, name), n) in &new.ports {
        let Some(o) = old.ports.get(&(br.clone(), name.clone())) else {
            continue;
        };
        let (Some(rp), Some(rb), Some(tp), Some(tb), Some(rd), Some(td), Some(e)) = (
            d(o.rx_packets, n.rx_packets),
            d(o.rx_bytes, n.rx_bytes),
            d(o.tx_packets, n.tx_packets),
            d(o.tx_bytes, n.tx_bytes),
            d(o.rx_dropped, n.rx_dropped),
            d(o.tx_dropped, n.tx_dropped),
            d(o.errors, n.errors),
        ) else {
            continue;
        };
        ports.push(PortRate {
            bridge: br.clone(),
            port: name.clone(),
            rx_pps: rp / secs,
            rx_bps: rb * 8.0 / secs,
            tx_pps: tp / secs,
            tx_bps: tb * 8.0 / secs,
            drops_ps: (rd + td) / secs,
            errors_ps: e / secs,
        });
    }
    let mut pmds = Vec::new();
    for (name, n) in &new.pmds {
        let Some(o) = old.pmds.get(name) else {
            continue;
        };
        let (Some(p), Some(emc), Some(mf), Some(up), Some(cyc)) = (
            d(o.packets, n.packets),
            d(o.emc_hits, n.emc_hits),
            d(o.megaflow_hits, n.megaflow_hits),
            d(o.upcalls, n.upcalls),
            d(o.processing_cycles, n.processing_cycles),
        ) else {
            continue;
        };
        let pct = |x: f64| if p > 0.0 { 100.0 * x / p } else { 0.0 };
        let busy = if n.tsc_hz > 0 {
            (100.0 * cyc / (n.tsc_hz as f64 * secs)).min(100.0)
        } else {
            0.0
        };
        pmds.push(PmdRate {
            name: name.clone(),
            pps: p / secs,
            busy_pct: busy,
            emc_pct: pct(emc),
            megaflow_pct: pct(mf),
            upcalls_ps: up / secs,
            cycles_per_packet: if p > 0.0 { cyc / p } else { 0.0 },
        });
    }
    (ports, pmds)
}

/// A unixctl call: verb and arguments in, the reply text (or the error) out.
pub type Call<'a> = dyn FnMut(&str, &[String]) -> Result<String, String> + 'a;

/// Reads one sample through `call`: every bridge of `show --json` (or only `only`, if not
/// empty) and the poll threads.
pub fn sample(call: &mut Call<'_>, only: &[String]) -> Result<Sample, String> {
    let mut s = Sample {
        at: Some(Instant::now()),
        ..Default::default()
    };
    let show: Value = serde_json::from_str(&call("show", &["--json".into()])?)
        .map_err(|e| format!("show --json: {e}"))?;
    let bridges: Vec<String> = show
        .get("bridges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("name").and_then(Value::as_str).map(str::to_string))
        .filter(|b| only.is_empty() || only.contains(b))
        .collect();
    for b in &bridges {
        let r: Value = serde_json::from_str(&call("dump-ports", &[b.clone(), "--json".into()])?)
            .map_err(|e| format!("dump-ports {b} --json: {e}"))?;
        s.add_ports(&r);
    }
    let p: Value = serde_json::from_str(&call("pmd-stats-show", &["--json".into()])?)
        .map_err(|e| format!("pmd-stats-show --json: {e}"))?;
    s.add_pmds(&p);
    Ok(s)
}

/// A rate with an SI suffix (`12.3M`).
pub fn si(x: f64) -> String {
    let (v, unit) = if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    format!("{v:.1}{unit}")
}

/// Default interval between samples.
pub const INTERVAL: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &mut Sample, t0: Instant, ms: u64) {
        s.at = Some(t0 + Duration::from_millis(ms));
    }

    #[test]
    fn rates_are_differences_over_time_and_skip_counters_that_went_back() {
        let t0 = Instant::now();
        let mut a = Sample::default();
        at(&mut a, t0, 0);
        a.add_ports(&json!({"bridge": "br0", "ports": [
            {"name": "p1", "rx_packets": 100, "rx_bytes": 6400, "tx_packets": 0, "tx_bytes": 0},
            {"name": "p2", "rx_packets": 500, "rx_bytes": 1000},
        ]}));
        a.add_pmds(
            &json!({"pmds": [{"core_id": 1, "packets_received": 100, "emc_hits": 50,
            "megaflow_hits": 40, "miss_with_success_upcall": 10, "processing_cycles": 0,
            "tsc_hz": 1000000}]}),
        );
        let mut b = Sample::default();
        at(&mut b, t0, 500);
        b.add_ports(&json!({"bridge": "br0", "ports": [
            {"name": "p1", "rx_packets": 1100, "rx_bytes": 70400, "tx_packets": 10, "tx_bytes": 640,
             "rx_dropped": 5},
            {"name": "p2", "rx_packets": 3, "rx_bytes": 100},
            {"name": "p3", "rx_packets": 9},
        ]}));
        b.add_pmds(
            &json!({"pmds": [{"core_id": 1, "packets_received": 1100, "emc_hits": 850,
            "megaflow_hits": 240, "miss_with_success_upcall": 10, "processing_cycles": 250000,
            "tsc_hz": 1000000}]}),
        );
        let (ports, pmds) = rates(&a, &b);
        assert_eq!(ports.len(), 1, "p2 went back, p3 is new: {ports:?}");
        let p = &ports[0];
        assert_eq!(p.port, "p1");
        assert!((p.rx_pps - 2000.0).abs() < 1e-6);
        assert!((p.rx_bps - 1_024_000.0).abs() < 1e-6);
        assert!((p.tx_pps - 20.0).abs() < 1e-6);
        assert!((p.drops_ps - 10.0).abs() < 1e-6);
        let m = &pmds[0];
        assert_eq!(m.name, "pmd core 1");
        assert!((m.pps - 2000.0).abs() < 1e-6);
        assert!((m.emc_pct - 80.0).abs() < 1e-6);
        assert!((m.megaflow_pct - 20.0).abs() < 1e-6);
        assert!((m.busy_pct - 50.0).abs() < 1e-6);
        assert!((m.cycles_per_packet - 250.0).abs() < 1e-6);
        assert_eq!(
            rates(&b, &a),
            (Vec::new(), Vec::new()),
            "time went backwards"
        );
    }

    #[test]
    fn sample_reads_every_bridge_through_the_call() {
        let mut asked = Vec::new();
        let mut call = |verb: &str, args: &[String]| -> Result<String, String> {
            asked.push(format!("{verb} {}", args.join(" ")));
            Ok(match verb {
                "show" => json!({"bridges": [{"name": "a"}, {"name": "b"}]}),
                "dump-ports" => {
                    json!({"bridge": args[0], "ports": [{"name": "x", "rx_packets": 1}]})
                }
                _ => json!({"pmds": []}),
            }
            .to_string())
        };
        let s = sample(&mut call, &[]).expect("sample");
        assert_eq!(s.ports.len(), 2);
        assert_eq!(
            asked,
            [
                "show --json",
                "dump-ports a --json",
                "dump-ports b --json",
                "pmd-stats-show --json"
            ]
        );
        assert_eq!(si(1_234_567.0), "1.2M");
        assert_eq!(si(999.0), "999.0");
    }
}
