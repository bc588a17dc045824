//! What the datapath's integration tests share: a port that records what it is sent, and
//! OpenFlow verbs run as the poll thread runs them.

#![allow(dead_code)]

use datapath::udpif::Udpif;
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
