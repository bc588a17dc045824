//! The output port of the bridge-wide samples (sFlow's `output`), as OVS 3.1 reports it: the
//! port's interface index for one output (`0x80000001` when the port has none),
//! `0x80000000 | n` for n outputs (floods included), `0x40000100` for a drop, and 0 (unknown)
//! for a packet the `openflow` module sent to its slow path. Through the `openflow` module
//! with and without its caches, a batch mixing flows (each packet's sample its own output,
//! and the packets still leave in order), and through the `learning` module.

use datapath::module::VlanMode;
use datapath::registry;
use datapath::sample::{Sample, SampleSink, SamplerConfig};
use datapath::PollSet;
use netdev::{Port, PortStats};
use packet::{Batch, Pool};
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::{of, Log, Sink};

/// A recording port with a kernel interface index.
struct Indexed(Sink, Option<u32>);

impl Port for Indexed {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn kind(&self) -> &'static str {
        "test"
    }
    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        self.0.rx_batch(pool, batch)
    }
    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        self.0.tx_batch(pool, batch)
    }
    fn stats(&self) -> PortStats {
        self.0.stats()
    }
    fn ifindex(&self) -> Option<u32> {
        self.1
    }
}

/// Ports p1 (ifindex 101), p2 (102) and p3 (none) on bridge `br`; their logs.
fn add_ports(sw: &mut PollSet) -> Vec<Log> {
    let mut logs = Vec::new();
    for (i, ix) in [(1u32, Some(101)), (2, Some(102)), (3, None)] {
        let (s, log) = Sink::new(&format!("p{i}"));
        sw.add_port(
            "br",
            Box::new(Indexed(s, ix)),
            Some(i),
            VlanMode::Trunk(None),
        )
        .expect("port");
        logs.push(log);
    }
    logs
}

fn sample_every_packet(sw: &mut PollSet) -> Arc<SampleSink> {
    let sink = SampleSink::new(4096);
    let cfg = SamplerConfig {
        id: 1,
        rate: 1,
        header_bytes: 64,
        sink: sink.clone(),
    };
    sw.set_sampler("br", "sflow", Some(cfg)).expect("sampler");
    sink
}

fn frame(dst: u8, src: u8, tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
    f[12] = 0x88;
    f[13] = 0xb5;
    f[20] = tag;
    f
}

/// (destination MAC's last byte, output) of every sample so far.
fn outputs(sink: &SampleSink) -> Vec<(u8, u32)> {
    sink.receiver()
        .try_iter()
        .map(|s: Sample| (s.header[5], s.output))
        .collect()
}

#[test]
fn openflow_samples_report_where_the_actions_sent_the_packet() {
    for cache in [true, false] {
        let (mut sw, _, u) = common::switch(cache, 1024, 0);
        let logs = add_ports(&mut sw);
        for f in [
            "dl_dst=02:00:00:00:00:02,actions=output:2",
            "dl_dst=02:00:00:00:00:03,actions=output:3",
            "dl_dst=02:00:00:00:00:04,actions=output:2,output:3",
            "dl_dst=02:00:00:00:00:05,actions=drop",
            "dl_dst=02:00:00:00:00:06,actions=FLOOD",
        ] {
            of(&u, "add-flow", Some(f)).expect("flow");
        }
        let sink = sample_every_packet(&mut sw);
        let want = [
            (2, 102),
            (3, 0x8000_0001),
            (4, 0x8000_0002),
            (5, 0x4000_0100),
            (6, 0x8000_0002),
        ];
        let batch: Vec<Vec<u8>> = want
            .iter()
            .enumerate()
            .map(|(i, (d, _))| frame(*d, 1, i as u8))
            .collect();
        // With the caches, the first packets go to the slow path: unknown.
        sw.inject("br", "p1", &batch).expect("inject");
        assert!(sw.settle(Duration::from_secs(10)));
        let first = outputs(&sink);
        assert_eq!(first.len(), want.len(), "cache={cache}");
        for (got, w) in first.iter().zip(want.iter()) {
            let expect = if cache { (w.0, 0) } else { *w };
            assert_eq!(*got, expect, "cache={cache}");
        }
        // Then the cached actions: twice the mixed batch in one, each sample its own.
        let twice: Vec<Vec<u8>> = batch.iter().chain(batch.iter()).cloned().collect();
        sw.inject("br", "p1", &twice).expect("inject");
        assert!(sw.settle(Duration::from_secs(10)));
        let got = outputs(&sink);
        let w2: Vec<(u8, u32)> = want.iter().chain(want.iter()).copied().collect();
        assert_eq!(got, w2, "cache={cache}");
        // Packets were forwarded, in order: p2 saw frames to 2, 4 and 6, three times.
        let p2 = logs[1].lock().map(|l| l.clone()).unwrap_or_default();
        let tags: Vec<(u8, u8)> = p2.iter().map(|f| (f[5], f[20])).collect();
        assert_eq!(
            tags,
            [(2, 0), (4, 2), (6, 4)].repeat(3),
            "cache={cache}: {tags:?}"
        );
    }
}

#[test]
fn openflow_normal_reports_the_learned_port_or_the_flood() {
    let (mut sw, _, u) = common::switch(true, 1024, 0);
    add_ports(&mut sw);
    of(&u, "add-flow", Some("actions=NORMAL")).expect("flow");
    let sink = sample_every_packet(&mut sw);
    // Each packet twice: the first may go to the slow path (unknown), the second may not.
    let twice = |sw: &mut PollSet, port: &str, f: Vec<u8>, want: u32| {
        for k in 0..2 {
            sw.inject("br", port, std::slice::from_ref(&f))
                .expect("inject");
            assert!(sw.settle(Duration::from_secs(10)));
            let got = outputs(&sink);
            assert_eq!(got.len(), 1);
            let ok = got[0].1 == want || (k == 0 && got[0].1 == 0);
            assert!(ok, "{port} round {k}: {:#x}, want {want:#x}", got[0].1);
        }
    };
    // Unknown destination: flooded to p2 and p3. Then 2 answers, and 1 is known.
    twice(&mut sw, "p1", frame(2, 1, 0), 0x8000_0002);
    twice(&mut sw, "p2", frame(1, 2, 0), 101);
    twice(&mut sw, "p1", frame(2, 1, 0), 102);
    twice(&mut sw, "p1", frame(3, 1, 0), 0x8000_0002);
    twice(&mut sw, "p3", frame(1, 3, 0), 101);
    twice(&mut sw, "p1", frame(3, 1, 0), 0x8000_0001);
}

#[test]
fn learning_samples_report_the_destination() {
    let mut sw = PollSet::new(1024);
    sw.add_bridge("br", registry::create("learning").expect("module"), None)
        .expect("bridge");
    add_ports(&mut sw);
    let sink = sample_every_packet(&mut sw);
    sw.inject("br", "p1", &[frame(2, 1, 0)]).expect("inject");
    sw.inject("br", "p2", &[frame(1, 2, 0), frame(3, 2, 0)])
        .expect("inject");
    sw.inject("br", "p3", &[frame(1, 3, 0)]).expect("inject");
    assert_eq!(
        outputs(&sink),
        vec![(2, 0x8000_0002), (1, 101), (3, 0x8000_0002), (1, 101)]
    );
    sw.inject("br", "p1", &[frame(3, 1, 0)]).expect("inject");
    sw.inject("br", "p1", &[frame(1, 1, 0)]).expect("inject");
    let got = outputs(&sink);
    // To p3 (no ifindex); to its own input port: dropped.
    assert_eq!(got, vec![(3, 0x8000_0001), (1, 0x4000_0100)]);
}
