//! The metrics endpoint: every counter the CLI shows, in the OpenMetrics text format that
//! Prometheus scrapes, served over HTTP on `Open_vSwitch other_config:metrics-address`
//! (`IP:PORT`; unset: off). `curl http://IP:PORT/metrics` reads it.
//!
//! ## How a scrape works
//! A scrape runs the same status commands the CLI does (`show --json`, `dump-ports BR
//! --json`, `pmd-stats-show --json`) through the daemon's command dispatcher and turns their
//! JSON into metric families with `prometheus-client`, so the endpoint and the CLI can never
//! disagree on a counter. Names follow Prometheus's conventions: `ferrovs_` prefix, base
//! units, counters ending in `_total`, one label set per port (`bridge`, `port`) or poll
//! thread (`pmd`).
//!
//! ## Limits
//! One listener thread serves one connection at a time (a scrape costs a few status
//! commands; concurrency buys nothing), with a 2-second deadline for the request and the
//! reply and an 8 KiB cap on the request head; anything but `GET /metrics` gets a 404.
//! Changing or clearing the address stops the old listener before the next pass binds the
//! new one; a bind failure is logged and retried on the next change only.

use crate::vswitch::vlog;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// Runs a status command: what the daemon's unixctl dispatcher does.
pub type Source = Box<dyn Fn(&str, &[String]) -> Result<String, String> + Send + Sync>;

type Labels = Vec<(String, String)>;

const DEADLINE: Duration = Duration::from_secs(2);
const MAX_REQUEST: usize = 8192;

struct Running {
    addr: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The endpoint. See the module documentation.
#[derive(Default)]
pub struct Exporter {
    source: Arc<OnceLock<Source>>,
    running: Mutex<Option<Running>>,
    /// The last address that failed to bind (not retried until the setting changes).
    failed: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Exporter {
    /// Gives the exporter the daemon's command dispatcher (once, after the daemon exists).
    pub fn set_source(&self, s: Source) {
        let _ = self.source.set(s);
    }

    /// Serves on `addr` (`IP:PORT`), or stops serving for `None`. Called on every
    /// reconfiguration pass; does nothing when the address did not change.
    pub fn configure(&self, addr: Option<&str>) {
        let mut run = lock(&self.running);
        if run.as_ref().map(|r| r.addr.as_str()) == addr {
            return;
        }
        if addr.is_some() && lock(&self.failed).as_deref() == addr {
            return;
        }
        if let Some(mut r) = run.take() {
            r.stop.store(true, Ordering::Release);
            if let Some(t) = r.thread.take() {
                let _ = t.join();
            }
            vlog::info("metrics", &format!("stopped serving on {}", r.addr));
        }
        *lock(&self.failed) = None;
        let Some(addr) = addr else { return };
        match self.start(addr) {
            Ok(r) => {
                vlog::info(
                    "metrics",
                    &format!("serving OpenMetrics on http://{addr}/metrics"),
                );
                *run = Some(r);
            }
            Err(e) => {
                vlog::err("metrics", &format!("other_config:metrics-address: {e}"));
                *lock(&self.failed) = Some(addr.to_string());
            }
        }
    }

    fn start(&self, addr: &str) -> Result<Running, String> {
        let sa: SocketAddr = addr
            .parse()
            .map_err(|_| format!("'{addr}' is not IP:PORT"))?;
        let l = TcpListener::bind(sa).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        l.set_nonblocking(true)
            .map_err(|e| format!("{addr}: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = Arc::clone(&stop);
        let source = Arc::clone(&self.source);
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve(l, &st, &source))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        Ok(Running {
            addr: addr.to_string(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.configure(None);
    }
}

fn serve(l: TcpListener, stop: &AtomicBool, source: &OnceLock<Source>) {
    while !stop.load(Ordering::Acquire) {
        match l.accept() {
            Ok((s, _)) => {
                let _ = answer(s, source);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            // Out of descriptors and the like: back off instead of spinning.
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

fn answer(mut s: TcpStream, source: &OnceLock<Source>) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(DEADLINE))?;
    s.set_write_timeout(Some(DEADLINE))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf)?;
        if n == 0 || head.len() + n > MAX_REQUEST {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let (method, path) = (parts.next(), parts.next());
    let (status, ctype, body) = match (method, path, source.get()) {
        (Some(b"GET"), Some(b"/metrics"), Some(src)) => match render(src) {
            Ok(b) => (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                b,
            ),
            Err(e) => ("503 Service Unavailable", "text/plain", format!("{e}\n")),
        },
        (Some(b"GET"), Some(b"/metrics"), None) => (
            "503 Service Unavailable",
            "text/plain",
            "starting\n".to_string(),
        ),
        _ => ("404 Not Found", "text/plain", "try /metrics\n".to_string()),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(reply.as_bytes())
}

fn json(src: &Source, verb: &str, args: &[&str]) -> Result<Value, String> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let text = src(verb, &args)?;
    serde_json::from_str(&text).map_err(|e| format!("{verb}: {e}"))
}

fn u(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// Per-port counters and per-bridge megaflow counts, from `show` and `dump-ports`.
fn port_metrics(reg: &mut Registry, src: &Source) -> Result<(), String> {
    let port_counters: Vec<(&str, &str, Family<Labels, Counter>)> = [
        (
            "port_rx_packets",
            "rx_packets",
            "packets received on the port",
        ),
        ("port_rx_bytes", "rx_bytes", "bytes received on the port"),
        ("port_rx_dropped", "rx_dropped", "received packets dropped"),
        ("port_rx_errors", "rx_errors", "receive errors"),
        (
            "port_tx_packets",
            "tx_packets",
            "packets transmitted on the port",
        ),
        ("port_tx_bytes", "tx_bytes", "bytes transmitted on the port"),
        (
            "port_tx_dropped",
            "tx_dropped",
            "packets dropped on transmit",
        ),
        ("port_tx_errors", "tx_errors", "transmit errors"),
    ]
    .into_iter()
    .map(|(name, key, help)| {
        let f = Family::<Labels, Counter>::default();
        reg.register(name, help, f.clone());
        (key, name, f)
    })
    .collect();
    let megaflows = Family::<Labels, Gauge>::default();
    reg.register(
        "bridge_megaflows",
        "megaflows cached for the bridge",
        megaflows.clone(),
    );
    let show = json(src, "show", &["--json"])?;
    for b in show
        .get("bridges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(br) = b.get("name").and_then(Value::as_str) else {
            continue;
        };
        let ports = json(src, "dump-ports", &[br, "--json"])?;
        for p in ports
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            let labels = vec![
                ("bridge".to_string(), br.to_string()),
                ("port".to_string(), name.to_string()),
            ];
            for (key, _, fam) in &port_counters {
                fam.get_or_create(&labels).inc_by(u(p, key));
            }
        }
        if let Some(m) = ports
            .get("module_counters")
            .and_then(|m| m.get("megaflows"))
        {
            let n = m.as_i64().unwrap_or(0);
            megaflows
                .get_or_create(&vec![("bridge".to_string(), br.to_string())])
                .set(n);
        }
    }
    Ok(())
}

/// Per-poll-thread counters, from `pmd-stats-show`.
fn pmd_metrics(reg: &mut Registry, src: &Source) -> Result<(), String> {
    let pmd_counters: Vec<(&str, Family<Labels, Counter>)> = [
        (
            "packets_received",
            "pmd_packets_received",
            "packets received by the poll thread",
        ),
        ("emc_hits", "pmd_emc_hits", "exact-match cache hits"),
        ("megaflow_hits", "pmd_megaflow_hits", "megaflow cache hits"),
        (
            "miss_with_success_upcall",
            "pmd_upcalls",
            "misses handed to the slow path",
        ),
        (
            "miss_with_failed_upcall",
            "pmd_lost_upcalls",
            "misses dropped: the upcall queue was full",
        ),
        (
            "processing_cycles",
            "pmd_processing_cycles",
            "TSC cycles spent processing packets",
        ),
        (
            "idle_cycles",
            "pmd_idle_cycles",
            "TSC cycles spent polling without packets",
        ),
    ]
    .into_iter()
    .map(|(key, name, help)| {
        let f = Family::<Labels, Counter>::default();
        reg.register(name, help, f.clone());
        (key, f)
    })
    .collect();
    let pmds = json(src, "pmd-stats-show", &["--json"])?;
    for (i, p) in pmds
        .get("pmds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = match p.get("core_id").and_then(Value::as_u64) {
            Some(c) => format!("core{c}"),
            None => format!("pmd{i}"),
        };
        let labels = vec![("pmd".to_string(), name)];
        for (key, fam) in &pmd_counters {
            fam.get_or_create(&labels).inc_by(u(p, key));
        }
    }
    Ok(())
}

/// One scrape, as OpenMetrics text.
pub fn render(src: &Source) -> Result<String, String> {
    let mut reg = Registry::with_prefix("ferrovs");
    port_metrics(&mut reg, src)?;
    pmd_metrics(&mut reg, src)?;
    let mut out = String::new();
    encode(&mut out, &reg).map_err(|e| format!("encoding: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canned() -> Source {
        Box::new(|verb: &str, args: &[String]| {
            Ok(match verb {
                "show" => json!({"bridges": [{"name": "br0"}]}),
                "dump-ports" => {
                    assert_eq!(args[0], "br0");
                    json!({"bridge": "br0", "module_counters": {"megaflows": 3},
                           "ports": [{"name": "p1", "rx_packets": 10, "rx_bytes": 640,
                                      "tx_packets": 4, "tx_bytes": 256}]})
                }
                _ => json!({"pmds": [{"core_id": 1, "packets_received": 10, "emc_hits": 7}]}),
            }
            .to_string())
        })
    }

    #[test]
    fn a_scrape_names_counters_as_prometheus_expects() {
        let text = render(&canned()).expect("render");
        for want in [
            "ferrovs_port_rx_packets_total{bridge=\"br0\",port=\"p1\"} 10",
            "ferrovs_port_tx_bytes_total{bridge=\"br0\",port=\"p1\"} 256",
            "ferrovs_bridge_megaflows{bridge=\"br0\"} 3",
            "ferrovs_pmd_emc_hits_total{pmd=\"core1\"} 7",
            "# TYPE ferrovs_port_rx_packets counter",
            "# EOF",
        ] {
            assert!(text.contains(want), "missing {want}:\n{text}");
        }
    }

    #[test]
    fn the_endpoint_answers_get_metrics_and_nothing_else() {
        let e = Exporter::default();
        e.set_source(canned());
        let l = TcpListener::bind("127.0.0.1:0").expect("port");
        let addr = l.local_addr().expect("addr").to_string();
        drop(l);
        e.configure(Some(&addr));
        let get = |req: &str| {
            let mut s = TcpStream::connect(&addr).expect("connect");
            s.write_all(req.as_bytes()).expect("write");
            let mut out = String::new();
            s.read_to_string(&mut out).expect("read");
            out
        };
        let ok = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains("ferrovs_port_rx_packets_total"));
        assert!(get("GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        e.configure(None);
        assert!(
            TcpStream::connect(&addr).is_err(),
            "still listening after removal"
        );
        e.configure(Some("not an address"));
        assert!(lock(&e.running).is_none());
    }
}
