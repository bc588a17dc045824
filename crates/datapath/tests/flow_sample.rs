//! The `sample` action in the datapath: with probability 65535 every packet the flow sees
//! reaches the bridge's flow-sample tap, tagged with the action's collector set, observation
//! domain and point and the OpenFlow input port, while the packet itself is forwarded
//! unchanged; with probability 32768 about half do; without a tap nothing is exported and the
//! chosen packets are counted as such. The same through the megaflow cache and without it.

use datapath::sample::{FlowTag, SampleSink};
use datapath::PollSet;
use std::time::Duration;

mod common;

use common::of;

fn frame(i: u16) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.extend_from_slice(&i.to_be_bytes());
    f.resize(60, 0xab);
    f
}

fn send(sw: &mut PollSet, n: u16) {
    for i in 0..n {
        sw.inject("br", "p1", &[frame(i)]).expect("inject");
        if i % 64 == 63 {
            assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
        }
    }
    assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
}

#[test]
fn every_packet_at_full_probability_and_none_without_a_tap() {
    for cache in [false, true] {
        let (mut sw, logs, u) = common::switch(cache, 1024, 2);
        of(
            &u,
            "add-flow",
            Some(
                "in_port=1,actions=sample(probability=65535,collector_set_id=7,\
                 obs_domain_id=77,obs_point_id=5),output:2",
            ),
        )
        .expect("flow");
        let sink = SampleSink::new(4096);
        u.flow_samples.set(Some((0x8000_0001, sink.clone())));
        send(&mut sw, 200);
        let got: Vec<_> = sink.receiver().try_iter().collect();
        assert_eq!(got.len(), 200, "cache={cache}");
        assert_eq!(logs[1].lock().map(|l| l.len()).unwrap_or(0), 200);
        for (i, s) in got.iter().enumerate() {
            assert_eq!(s.sampler, 0x8000_0001);
            assert_eq!(
                s.flow,
                Some(FlowTag {
                    collector_set_id: 7,
                    obs_domain_id: 77,
                    obs_point_id: 5
                })
            );
            assert_eq!((s.input, s.rate, s.frame_len), (1, 1, 60));
            assert_eq!(s.header, frame(i as u16), "cache={cache}: sample {i}");
        }

        // No tap: nothing exported, the packets still forwarded.
        u.flow_samples.set(None);
        send(&mut sw, 50);
        assert_eq!(sink.receiver().try_iter().count(), 0);
        assert_eq!(logs[1].lock().map(|l| l.len()).unwrap_or(0), 250);
    }
}

#[test]
fn half_probability_takes_about_half() {
    let (mut sw, _logs, u) = common::switch(true, 4096, 2);
    of(
        &u,
        "add-flow",
        Some("in_port=1,actions=sample(probability=32768,collector_set_id=1),output:2"),
    )
    .expect("flow");
    let sink = SampleSink::new(8192);
    u.flow_samples.set(Some((0x8000_0001, sink.clone())));
    send(&mut sw, 4000);
    let n = sink.receiver().try_iter().count();
    // Binomial(4000, 0.5): standard deviation ~32; 6 of them either side.
    assert!((1800..=2200).contains(&n), "{n} of 4000 sampled");
}
