//! What the datapath's integration tests share: a port that records what it is sent, and
//! OpenFlow verbs run as the poll thread runs them.

#![allow(dead_code)]

use datapath::module::VlanMode;
use datapath::ofmodule::OpenFlow;
use datapath::udpif::Udpif;
use datapath::PollSet;
use netdev::{Port, PortStats};
use packet::{Batch, Pool};
use std::sync::{Arc, Mutex};

/// The frames a [`Sink`] was sent, in order.
pub type Log = Arc<Mutex<Vec<Vec<u8>>>>;

/// A port that receives nothing and records every frame it is given.
pub struct Sink {
    pub name: String,
    pub log: Log,
    pub stats: PortStats,
}

impl Sink {
    /// A sink named `name` and its log.
    pub fn new(name: &str) -> (Sink, Log) {
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        (
            Sink {
                name: name.to_string(),
                log: Arc::clone(&log),
                stats: PortStats::default(),
            },
            log,
        )
    }
}

impl Port for Sink {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "test"
    }
    fn rx_batch(&mut self, _pool: &mut Pool, _batch: &mut Batch) -> usize {
        0
    }
    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        if let Ok(mut l) = self.log.lock() {
            for p in batch.packets() {
                l.push(p.data().to_vec());
            }
        }
        self.stats.tx_packets += batch.len() as u64;
        pool.free_batch(batch);
    }
    fn stats(&self) -> PortStats {
        self.stats
    }
}

/// An OpenFlow verb, from the thread that runs the switch's loop.
pub fn of(u: &Udpif, verb: &str, arg: Option<&str>) -> Result<String, String> {
    let a: Vec<String> = arg.iter().map(|s| s.to_string()).collect();
    ofctl::run_as(
        u,
        verb,
        &a,
        false,
        datapath::clock::now_ms(),
        ofctl::Caller::PollThread,
    )
}

/// A switch with one OpenFlow bridge `br` (the megaflow cache on or off), `ports` recording
/// ports `p1..` as ofports 1.., and no flows; with the logs and the bridge's OpenFlow state.
pub fn switch(cache: bool, pool: usize, ports: u32) -> (PollSet, Vec<Log>, Arc<Udpif>) {
    let mut sw = PollSet::new(pool);
    let m = OpenFlow::new(true).expect("module");
    let u = Arc::clone(m.udpif());
    sw.add_bridge("br", Box::new(m), None).expect("bridge");
    sw.configure_bridge("br", "cache", if cache { "true" } else { "false" })
        .expect("cache");
    let mut logs = Vec::new();
    for p in 1..=ports {
        let (port, log) = Sink::new(&format!("p{p}"));
        sw.add_port("br", Box::new(port), Some(p), VlanMode::Trunk(None))
            .expect("port");
        logs.push(log);
    }
    of(&u, "del-flows", None).expect("del-flows");
    (sw, logs, u)
}
